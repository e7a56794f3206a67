//! The H step through a backend's own operations: h = (a b - c) / Z on a coset, then its MSM
//! against the parameters' H points. What [`Backend::h_msm`] means; backends that keep h on
//! the host run it as it is, the GPU's device-resident path must equal it.

use std::time::{Duration, Instant};

/// The point and scalar types of [`h_msm_on_host!`](crate::h_msm_on_host)'s signature.
pub use blstrs::{G1Affine, G1Projective, Scalar};
use ff::Field;

use crate::backend::{Backend, BackendError, HOutcome, NttDirection, Selection};
use crate::constraints::Constraints;
use crate::domain::domain_size;
use crate::hugepages::grow_zeroed;
use crate::release::drop_in_background;

/// The coefficients of h (n - 1 of them), consuming the witness's a, b, c.
pub fn compute_h<B: Backend + ?Sized>(
    be: &B,
    mut a: Vec<Scalar>,
    mut b: Vec<Scalar>,
    mut c: Vec<Scalar>,
) -> Result<Vec<Scalar>, BackendError> {
    let n = domain_size(a.len());
    for v in [&mut a, &mut b, &mut c] {
        grow_zeroed(v, n, Scalar::ZERO);
        be.ntt(v, NttDirection::Inverse)?;
        be.ntt(v, NttDirection::CosetForward)?;
    }
    be.coset_quotient(&mut a, &b, &c)?;
    drop_in_background((b, c));
    be.ntt(&mut a, NttDirection::CosetInverse)?;
    a.truncate(n - 1);
    Ok(a)
}

/// What [`Backend::h_msm`] means, through the backend's own NTT, quotient and MSM (h on the
/// host between them): the default, and the fallback of backends that keep h elsewhere.
pub fn h_msm_via_host<B: Backend + ?Sized>(
    be: &B,
    a: Vec<Scalar>,
    b: Vec<Scalar>,
    c: Vec<Scalar>,
    h_bases: &[G1Affine],
) -> Result<(G1Projective, Duration), BackendError> {
    let t = Instant::now();
    let h = compute_h(be, a, b, c)?;
    let h_step = t.elapsed();
    let acc = be.msm_g1(h_bases, Selection::All, &h)?;
    drop_in_background(h);
    Ok((acc, h_step))
}

/// What [`Backend::h_msm_compiled`] means: a, b and c evaluated on the host and checked,
/// then the backend's own [`Backend::h_msm`]. The default, and the GPU's fallback where the
/// compiled circuit does not fit its memory.
pub fn h_msm_compiled_via_host<B: Backend + ?Sized>(
    be: &B,
    circuit: &dyn Constraints,
    inputs: &[Scalar],
    aux: &[Scalar],
    h_bases: &[G1Affine],
    check: bool,
) -> Result<HOutcome, BackendError> {
    let t = Instant::now();
    let ([a, b, c], bad) = circuit.evaluate_checked(inputs, aux);
    if let Some(row) = bad.filter(|_| check) {
        drop_in_background((a, b, c));
        return Ok(HOutcome::Unsatisfied(row));
    }
    let evaluation = t.elapsed();
    let (acc, h_step) = be.h_msm(a, b, c, h_bases)?;
    Ok(HOutcome::Done(acc, evaluation + h_step))
}

/// The [`Backend::h_msm`] of a backend that keeps h on the host, [`h_msm_via_host`] through
/// its own operations: `impl Backend for X { cuzk_groth16::h_msm_on_host!(); ... }`, which
/// also says so ([`crate::Backend::h_step_on_host`]). One place for the methods every such
/// backend (the CPU's, test backends) has.
#[macro_export]
macro_rules! h_msm_on_host {
    () => {
        fn h_msm(
            &self,
            a: ::std::vec::Vec<$crate::hstep::Scalar>,
            b: ::std::vec::Vec<$crate::hstep::Scalar>,
            c: ::std::vec::Vec<$crate::hstep::Scalar>,
            h_bases: &[$crate::hstep::G1Affine],
        ) -> ::std::result::Result<($crate::hstep::G1Projective, ::std::time::Duration), $crate::BackendError> {
            $crate::hstep::h_msm_via_host(self, a, b, c, h_bases)
        }
        fn h_msm_compiled(
            &self,
            circuit: &dyn $crate::constraints::Constraints,
            inputs: &[$crate::hstep::Scalar],
            aux: &[$crate::hstep::Scalar],
            h_bases: &[$crate::hstep::G1Affine],
            check: bool,
        ) -> ::std::result::Result<$crate::HOutcome, $crate::BackendError> {
            $crate::hstep::h_msm_compiled_via_host(self, circuit, inputs, aux, h_bases, check)
        }
        fn h_step_on_host(&self) -> bool {
            true
        }
    };
}
