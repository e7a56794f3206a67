//! A deferred witness's a, b and c evaluated on the device from its compiled circuit (issue
//! #41: only the assignment crosses PCIe).
//!
//! The compiled circuit's matrices go up once and stay in the arena's resident cache like the
//! parameters (keyed by the host arrays, group [`CIRCUIT_GROUP`]); each proof then uploads its
//! assignment z = inputs ++ aux (4.2 GB at the 32 GiB PoRep shape, against 12.5 GB of a, b
//! and c), `kernels/eval.cuh` evaluates every row into the H step's three polynomials and
//! finds the first row with a * b != c, and the H step runs from there
//! ([`crate::ntt::h_of_device_polys`]). The plan ([`plan`]) decides per call whether this fits
//! the device's memory, and says why when it does not; the caller then evaluates on the host.

use std::sync::Arc;
use std::time::{Duration, Instant};

use blstrs::Scalar;
use cuzk_groth16::constraints::Constraints;

use crate::arena::{reserved_size, DeviceBuffer};
use crate::device::{arg, Gpu, OpTimings};
use crate::error::GpuError;
use crate::resident::{ResidentKey, CIRCUIT_GROUP};

const FR_BYTES: usize = 32;
/// Alignment of each array in the circuit's device buffer.
const ALIGN: usize = 256;
const BLOCK: u32 = 256;

/// Where each array of a circuit's device copy starts, in bytes from the buffer's start: the
/// coefficient dictionary, then for A, B and C their row starts (u32), columns and
/// coefficient ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    dictionary: usize,
    /// [matrix][starts, cols, coeffs]
    arrays: [[usize; 3]; 3],
    /// The buffer's length in bytes.
    pub(crate) bytes: usize,
}

impl Layout {
    pub(crate) fn of(circuit: &dyn Constraints) -> Layout {
        let (matrices, dictionary) = circuit.parts();
        let mut at = 0usize;
        let mut place = |bytes: usize| {
            let here = at;
            at = (at + bytes).next_multiple_of(ALIGN);
            here
        };
        let dict = place(dictionary.len() * FR_BYTES);
        let arrays = matrices.map(|m| [place(m.start.len() * 4), place(m.cols.len() * 4), place(m.coeffs.len() * 4)]);
        Layout { dictionary: dict, arrays, bytes: at.max(ALIGN) }
    }
}

/// Why a call evaluates on the host rather than on the device, or None when the device can:
/// the device path addresses rows, terms and z with u32.
fn unsupported(circuit: &dyn Constraints) -> Option<&'static str> {
    let (matrices, _) = circuit.parts();
    let z = circuit.num_inputs() + circuit.num_aux();
    if circuit.num_constraints() >= u32::MAX as usize || z >= u32::MAX as usize {
        return Some("the circuit has 2^32 rows or variables or more");
    }
    if matrices.iter().any(|m| m.cols.len() >= u32::MAX as usize) {
        return Some("a matrix has 2^32 terms or more");
    }
    None
}

/// Where a call's a, b and c are evaluated ([`crate::backend::LastReport::eval`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EvalPath {
    /// No deferred witness has been proved yet.
    None,
    /// On the device; `uploaded`: this call put the compiled circuit on the device (the
    /// first of its circuit, or after an eviction); `kernel`: the evaluation kernel's time.
    Device { uploaded: bool, kernel: Duration },
    /// On the host, and why.
    Host(&'static str),
}

/// The plan of one evaluation: on the device (the circuit resident already, or to be
/// uploaded and kept), or on the host with the reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Plan {
    Device { resident: bool },
    Host(&'static str),
}

fn key(circuit: &dyn Constraints) -> ResidentKey {
    // The A matrix's columns name the circuit: the key is their host address, length and a
    // fingerprint of 256 of them (`resident.rs`). A compiled circuit never changes while it
    // is shared, as parameters never do.
    ResidentKey::of(circuit.parts().0[0].cols, CIRCUIT_GROUP)
}

/// Device bytes the evaluation needs beside the circuit at 2^log_n: a, b and c of the domain,
/// z, and the first bad row.
pub(crate) fn working_bytes(circuit: &dyn Constraints, log_n: u32) -> usize {
    let n = 1usize << log_n;
    3 * reserved_size(n * FR_BYTES) + reserved_size((circuit.num_inputs() + circuit.num_aux()) * FR_BYTES) + reserved_size(4)
}

/// Whether `gpu` evaluates `circuit` at 2^log_n now, and if not why. `h_step_bytes` is what
/// the H step after it needs (the evaluation's buffers are freed by then, but for a, b and c).
/// A circuit not resident yet is admitted within the resident half of the budget, as the MSM
/// bases are, but ahead of them: idle base arrays are evicted (least recently used first) to
/// make its room.
pub(crate) fn plan(gpu: &Gpu, circuit: &dyn Constraints, log_n: u32, h_step_bytes: usize) -> Plan {
    if !gpu.tuning().device_eval {
        return Plan::Host("device_eval is off");
    }
    if let Some(why) = unsupported(circuit) {
        return Plan::Host(why);
    }
    let resident = gpu.resident.lock().unwrap().contains(&key(circuit));
    let need = working_bytes(circuit, log_n).max(h_step_bytes);
    if resident {
        // The circuit itself is not evictable while this call holds it; what the call needs
        // must fit beside it.
        return if need <= gpu.available() { Plan::Device { resident } } else { Plan::Host("the H step does not fit beside the resident circuit") };
    }
    let size = reserved_size(Layout::of(circuit).bytes);
    if size + need > gpu.available() {
        return Plan::Host("the compiled circuit and the H step do not fit the budget together");
    }
    // Idle base arrays give way to the circuit in the resident half (`make_room_for_circuit`
    // says why); other circuits do not.
    if !gpu.resident.lock().unwrap().make_room_for_circuit(size, gpu.counters().budget / 2) {
        return Plan::Host("the compiled circuit does not fit in the resident half of the budget, even with every idle base array evicted");
    }
    Plan::Device { resident }
}

/// The circuit's device copy: from the resident cache, or uploaded and kept there. Returns it
/// and whether it was uploaded now.
fn device_circuit(gpu: &Gpu, circuit: &dyn Constraints) -> Result<(Arc<DeviceBuffer>, bool), GpuError> {
    let key = key(circuit);
    if let Some(buf) = gpu.resident.lock().unwrap().get(&key) {
        return Ok((buf, false));
    }
    let layout = Layout::of(circuit);
    let t = Instant::now();
    let buf = gpu.alloc(layout.bytes)?;
    let (matrices, dictionary) = circuit.parts();
    gpu.upload_slice_at(buf.ptr() + layout.dictionary as u64, dictionary, None)?;
    for (m, [starts, cols, coeffs]) in matrices.iter().zip(layout.arrays) {
        // Row starts narrowed to u32 (`unsupported` checked that the terms fit).
        gpu.upload_with(buf.ptr() + starts as u64, m.start.len(), None, |from, out: &mut [u32]| {
            for (o, s) in out.iter_mut().zip(&m.start[from..]) {
                *o = *s as u32;
            }
        })?;
        gpu.upload_slice_at(buf.ptr() + cols as u64, m.cols, None)?;
        gpu.upload_slice_at(buf.ptr() + coeffs as u64, m.coeffs, None)?;
    }
    gpu.sync()?;
    log::info!(
        "compiled circuit on the GPU: {} constraints, {:.2} GiB of matrices uploaded in {:.2} s, kept resident",
        circuit.num_constraints(),
        layout.bytes as f64 / (1u64 << 30) as f64,
        t.elapsed().as_secs_f64()
    );
    let buf = Arc::new(buf);
    gpu.resident.lock().unwrap().insert(key, buf.clone());
    Ok((buf, true))
}

/// What [`evaluate`] found.
pub(crate) struct Evaluated {
    /// a, b and c, each 2^log_n long (zero past the circuit's rows).
    pub(crate) polys: [DeviceBuffer; 3],
    /// The first row with a * b != c.
    pub(crate) first_bad: Option<usize>,
    pub(crate) uploaded: bool,
    pub(crate) timings: OpTimings,
}

/// a, b and c of `circuit` at z = `inputs` ++ `aux` on the device, padded to 2^log_n, and the
/// first unsatisfied row, equal to `CompiledCircuit::evaluate_checked`. The caller holds the
/// device region and has planned the call ([`plan`]). z is freed before this returns.
pub(crate) fn evaluate(gpu: &Gpu, circuit: &dyn Constraints, inputs: &[Scalar], aux: &[Scalar], log_n: u32) -> Result<Evaluated, GpuError> {
    let n = 1usize << log_n;
    let rows = circuit.num_constraints();
    assert!(rows <= n && inputs.len() == circuit.num_inputs() && aux.len() == circuit.num_aux());
    let t0 = Instant::now();
    let (dev, uploaded) = device_circuit(gpu, circuit)?;
    let polys = [gpu.alloc(n * FR_BYTES)?, gpu.alloc(n * FR_BYTES)?, gpu.alloc(n * FR_BYTES)?];
    let z = gpu.alloc((inputs.len() + aux.len()) * FR_BYTES)?;
    let bad = gpu.alloc(4)?;
    for p in &polys {
        gpu.memset_bytes(p.ptr() + (rows * FR_BYTES) as u64, (n - rows) * FR_BYTES, 0)?;
    }
    gpu.memset(&bad, 0xff)?;
    let tu = Instant::now();
    gpu.upload_slice_at(z.ptr(), inputs, None)?;
    gpu.upload_slice_at(z.ptr() + (inputs.len() * FR_BYTES) as u64, aux, None)?;
    let upload = tu.elapsed();
    gpu.check_cancel()?;
    let layout = Layout::of(circuit);
    let base = dev.ptr();
    let at = |off: usize| base + off as u64;
    let [[a0, a1, a2], [b0, b1, b2], [c0, c1, c2]] = layout.arrays.map(|m| m.map(at));
    let (dict, zp, rows32) = (at(layout.dictionary), z.ptr(), rows as u32);
    let (pa, pb, pc, pbad) = (polys[0].ptr(), polys[1].ptr(), polys[2].ptr(), bad.ptr());
    let start = crate::device::Event::new(true)?;
    let end = crate::device::Event::new(true)?;
    start.record(gpu.stream())?;
    gpu.launch(
        gpu.kernels.fr_eval_constraints,
        rows,
        BLOCK,
        0,
        &mut [
            arg(&a0), arg(&a1), arg(&a2), arg(&b0), arg(&b1), arg(&b2), arg(&c0), arg(&c1), arg(&c2),
            arg(&dict), arg(&zp), arg(&rows32), arg(&pa), arg(&pb), arg(&pc), arg(&pbad),
        ],
    )?;
    end.record(gpu.stream())?;
    let mut first = [u32::MAX];
    gpu.download_to(&mut first, bad.ptr())?;
    gpu.sync()?;
    let kernel = end.since(&start)?;
    drop((z, bad));
    Ok(Evaluated {
        polys,
        first_bad: (first[0] != u32::MAX).then_some(first[0] as usize),
        uploaded,
        timings: OpTimings { upload, compute: t0.elapsed().saturating_sub(upload), kernels: kernel, ..Default::default() },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every array of the layout starts aligned, after the one before it, and the buffer
    /// holds the last one.
    #[test]
    fn the_layout_places_every_array_aligned_and_apart() {
        let (_, c) = cuzk_groth16::compiled::compile(cuzk_groth16::testing::SyntheticCircuit {
            constraints: 1037,
            inputs: vec![Scalar::from(3u64)],
            seed: 1,
        })
        .unwrap();
        let l = Layout::of(&c);
        let (m, dict) = Constraints::parts(&c);
        let mut ends = vec![(l.dictionary, dict.len() * FR_BYTES)];
        for (k, arrays) in l.arrays.iter().enumerate() {
            ends.push((arrays[0], m[k].start.len() * 4));
            ends.push((arrays[1], m[k].cols.len() * 4));
            ends.push((arrays[2], m[k].coeffs.len() * 4));
        }
        for w in ends.windows(2) {
            assert_eq!(w[1].0 % ALIGN, 0);
            assert!(w[1].0 >= w[0].0 + w[0].1, "{ends:?}");
        }
        let (last, len) = ends[ends.len() - 1];
        assert!(l.bytes >= last + len);
        assert_eq!(unsupported(&c), None);
    }
}
