//! Circuits for tests and benchmarks of any backend: synthetic, of a chosen size, with the
//! scalar mix of real Filecoin witnesses.

use bellpepper_core::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A circuit of exactly `constraints` constraints (after bellperson's input constraints),
/// whose witness mixes zeros, ones and random values, uses inputs in A, B and C, and has aux
/// variables that occur only in C (so the A and B parameter sections are compacted).
#[derive(Clone, Debug)]
pub struct SyntheticCircuit {
    pub constraints: usize,
    pub inputs: Vec<Fr>,
    pub seed: u64,
}

impl Circuit<Fr> for SyntheticCircuit {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut rng = ChaCha20Rng::seed_from_u64(self.seed);
        let inputs: Vec<_> = self
            .inputs
            .iter()
            .enumerate()
            .map(|(i, v)| Ok((cs.alloc_input(|| format!("in{i}"), || Ok(*v))?, *v)))
            .collect::<Result<_, SynthesisError>>()?;
        // ONE + the inputs each get one constraint appended by the prover.
        let own = self.constraints - (self.inputs.len() + 1);
        for i in 0..own {
            let x_val = match rng.gen_range(0..10) {
                0..=3 => Fr::ZERO,
                4..=6 => Fr::ONE,
                _ => Fr::random(&mut rng),
            };
            let y_val = if rng.gen_bool(0.5) { Fr::ONE } else { Fr::random(&mut rng) };
            let x = cs.alloc(|| format!("x{i}"), || Ok(x_val))?;
            // bellperson's generator refuses a variable in no constraint: y only where used.
            let y = if i % 3 != 1 { cs.alloc(|| format!("y{i}"), || Ok(y_val))? } else { x };
            let (input, input_val) = inputs[i % inputs.len()];
            let k = Fr::from((i % 5) as u64);
            match i % 3 {
                // (x + k*input) * y = z
                0 => {
                    let z_val = (x_val + k * input_val) * y_val;
                    let z = cs.alloc(|| format!("z{i}"), || Ok(z_val))?;
                    cs.enforce(|| format!("c{i}"), |lc| lc + x + (k, input), |lc| lc + y, |lc| lc + z);
                }
                // x * (ONE + input) = w
                1 => {
                    let w_val = x_val * (Fr::ONE + input_val);
                    let w = cs.alloc(|| format!("w{i}"), || Ok(w_val))?;
                    cs.enforce(|| format!("c{i}"), |lc| lc + x, |lc| lc + CS::one() + input, |lc| lc + w);
                }
                // y * x = input * 0 + x*y (C mentions an input with coefficient zero)
                _ => {
                    let v = cs.alloc(|| format!("v{i}"), || Ok(x_val * y_val))?;
                    cs.enforce(|| format!("c{i}"), |lc| lc + y, |lc| lc + x, |lc| lc + v + (Fr::ZERO, input));
                }
            }
        }
        Ok(())
    }
}


/// Any backend, failing on command as a lost GPU does (`BackendError::Unavailable`, whose
/// reason names the injection): every call after the first `fail_after(n)` ones fails,
/// until `recover`. Counts the calls that ran and the ones that failed. For tests and
/// benches of what a scheduler does with a failing device (`cuzk-lab engine-bench
/// --fail-device`); every other method is forwarded, the inner backend's own H step,
/// resident parameters and device lock included.
pub struct FailingBackend {
    inner: std::sync::Arc<dyn crate::Backend>,
    /// Calls left before it fails (`u64::MAX`: it never does).
    calls_left: std::sync::atomic::AtomicU64,
    pub ran: std::sync::atomic::AtomicU64,
    pub failed: std::sync::atomic::AtomicU64,
}

impl FailingBackend {
    pub fn new(inner: std::sync::Arc<dyn crate::Backend>) -> std::sync::Arc<FailingBackend> {
        use std::sync::atomic::AtomicU64;
        std::sync::Arc::new(FailingBackend {
            inner,
            calls_left: AtomicU64::new(u64::MAX),
            ran: AtomicU64::new(0),
            failed: AtomicU64::new(0),
        })
    }

    /// Runs `n` more calls, then fails every call.
    pub fn fail_after(&self, n: u64) {
        self.calls_left.store(n, std::sync::atomic::Ordering::SeqCst);
    }

    pub fn recover(&self) {
        self.calls_left.store(u64::MAX, std::sync::atomic::Ordering::SeqCst);
    }

    fn gate(&self) -> Result<(), crate::BackendError> {
        use std::sync::atomic::Ordering::SeqCst;
        let left = self.calls_left.fetch_update(SeqCst, SeqCst, |n| match n {
            u64::MAX => Some(n),
            0 => None,
            n => Some(n - 1),
        });
        if left.is_err() {
            self.failed.fetch_add(1, SeqCst);
            return Err(crate::BackendError::Unavailable { backend: self.inner.name(), reason: "injected failure".into() });
        }
        self.ran.fetch_add(1, SeqCst);
        Ok(())
    }

    /// A kernel call: the gate, then the inner backend's.
    fn via<R>(&self, f: impl FnOnce(&dyn crate::Backend) -> Result<R, crate::BackendError>) -> Result<R, crate::BackendError> {
        self.gate()?;
        f(&*self.inner)
    }
}

impl crate::Backend for FailingBackend {
    crate::forward_kernels!(via);
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    fn h_msm(
        &self,
        a: Vec<Fr>,
        b: Vec<Fr>,
        c: Vec<Fr>,
        h_bases: &[blstrs::G1Affine],
    ) -> Result<(blstrs::G1Projective, std::time::Duration), crate::BackendError> {
        self.gate()?;
        self.inner.h_msm(a, b, c, h_bases)
    }
    fn h_msm_compiled(
        &self,
        circuit: &dyn crate::constraints::Constraints,
        inputs: &[Fr],
        aux: &[Fr],
        h_bases: &[blstrs::G1Affine],
        check: bool,
    ) -> Result<crate::HOutcome, crate::BackendError> {
        self.gate()?;
        self.inner.h_msm_compiled(circuit, inputs, aux, h_bases, check)
    }
    fn h_step_on_host(&self) -> bool {
        self.inner.h_step_on_host()
    }
    fn holds_params(&self, srs: &crate::Srs) -> bool {
        self.inner.holds_params(srs)
    }
    fn device_lock(&self) -> Option<&crate::region::DeviceLock> {
        self.inner.device_lock()
    }
}
