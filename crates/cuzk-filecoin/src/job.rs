//! What every proof kind's job is to a prover or a scheduler: partitions, each synthesized
//! into a [`PartitionWitness`] on the CPU and proved through a [`Backend`], then one step that
//! turns the partition proofs into the kind's output bytes and verifies them with
//! filecoin-proofs. [`prove_job`] runs these stages in order; the engine schedules them
//! partition by partition.

use std::time::Duration;

use blstrs::Scalar as Fr;
use cuzk_groth16::{prove, Backend, PartitionWitness, Proof, ProveTimings, Srs};
use rand::rngs::OsRng;

use crate::error::ProofError;
use crate::synthesis::{SynthesisPath, SynthesisRun};

/// Time of one partition's synthesis.
#[derive(Clone, Copy, Debug, Default)]
pub struct SynthesisTimings {
    /// Building the circuit from the vanilla proof.
    pub circuit: Duration,
    /// Synthesis into the witness, and the satisfaction check.
    pub synthesis: Duration,
    /// Which path made the witness (see [`crate::synthesis`]).
    pub run: Option<SynthesisRun>,
    /// The compiled path's stages: gadgets for assignments (parts in parallel), joining the
    /// parts, sparse products (None on the reference path).
    pub compiled: Option<cuzk_groth16::compiled::CompiledTimings>,
}

/// Time of the last step: NI-PoRep aggregation and verification.
#[derive(Clone, Copy, Debug, Default)]
pub struct FinishTimings {
    pub aggregate: Duration,
    pub verify: Duration,
}

/// Where the time of one job went.
#[derive(Clone, Copy, Debug, Default)]
pub struct JobTimings {
    pub partitions: usize,
    pub circuits: Duration,
    pub synthesis: Duration,
    pub prove: ProveTimings,
    pub aggregate: Duration,
    pub verify: Duration,
}

/// The blinding values (r, s) of each partition's proof.
#[derive(Clone, Debug)]
pub enum Blinding {
    /// Fresh random values from the OS: what production proofs must use.
    Random,
    /// Given values, one pair per partition: for comparing backends bit for bit.
    Fixed(Vec<(Fr, Fr)>),
}

/// One proof kind's job, its input checked (see each kind's `new`).
pub trait ProofJob: Send + Sync {
    fn partitions(&self) -> usize;

    /// Partition `k`'s witness on `path`, checked to satisfy its circuit (a tampered input
    /// stops here, before any proving).
    fn synthesize_with(&self, k: usize, path: SynthesisPath) -> Result<(PartitionWitness, SynthesisTimings), ProofError> {
        refuse_unsatisfied(k, self.synthesize_unchecked(k, path)?)
    }

    /// Partition `k`'s witness and its first constraint with a * b != c, **not refused**:
    /// for benches on shape-only inputs only (they cannot verify); every proving path goes
    /// through [`ProofJob::synthesize_with`].
    fn synthesize_unchecked(
        &self,
        k: usize,
        path: SynthesisPath,
    ) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError>;

    /// [`ProofJob::synthesize_with`] on the compiled path.
    fn synthesize(&self, k: usize) -> Result<(PartitionWitness, SynthesisTimings), ProofError> {
        self.synthesize_with(k, SynthesisPath::Compiled)
    }

    /// The output bytes from all partition proofs, in order, exactly as filecoin-proofs
    /// writes them for this kind, verified with filecoin-proofs' verifier.
    fn finish(&self, proofs: &[Proof]) -> Result<(Vec<u8>, FinishTimings), ProofError>;

    /// The key of this job's compiled circuit (see [`crate::synthesis`]).
    fn circuit_key(&self) -> String;
}

/// The refusal of a partition index out of range.
pub(crate) fn check_partition(k: usize, partitions: usize) -> Result<(), ProofError> {
    if k >= partitions {
        return Err(ProofError::BadInput(format!(
            "partition {k} asked of a proof with {partitions} partitions"
        )));
    }
    Ok(())
}

/// The refusal of a partition proof count that is not the job's.
pub(crate) fn check_proof_count(proofs: &[Proof], partitions: usize) -> Result<(), ProofError> {
    if proofs.len() != partitions {
        return Err(ProofError::BadInput(format!(
            "{} partition proofs for {partitions} partitions",
            proofs.len()
        )));
    }
    Ok(())
}

/// Proves `job` one partition at a time (one witness in memory), then finishes it.
pub fn prove_job(
    job: &dyn ProofJob,
    srs: &Srs,
    backend: &dyn Backend,
    blinding: &Blinding,
) -> Result<(Vec<u8>, JobTimings), ProofError> {
    prove_job_on(job, srs, backend, blinding, SynthesisPath::Compiled)
}

/// [`prove_job`] with its partitions synthesized on `path` (`CompiledDeferred`: a, b and c
/// evaluated by `backend`).
pub fn prove_job_on(
    job: &dyn ProofJob,
    srs: &Srs,
    backend: &dyn Backend,
    blinding: &Blinding,
    path: SynthesisPath,
) -> Result<(Vec<u8>, JobTimings), ProofError> {
    if let Blinding::Fixed(pairs) = blinding {
        if pairs.len() != job.partitions() {
            return Err(ProofError::BadInput(format!(
                "{} blinding pairs for {} partitions",
                pairs.len(),
                job.partitions()
            )));
        }
    }
    let mut t = JobTimings::default();
    let mut proofs = Vec::with_capacity(job.partitions());
    for k in 0..job.partitions() {
        let (witness, st) = job.synthesize_with(k, path)?;
        t.circuits += st.circuit;
        t.synthesis += st.synthesis;
        let (r, s) = match blinding {
            Blinding::Random => cuzk_groth16::prover::random_blinding(&mut OsRng),
            Blinding::Fixed(pairs) => pairs[k],
        };
        let (proof, pt) =
            prove(backend, srs, witness, r, s).map_err(|source| ProofError::proving(k, source))?;
        t.prove.accumulate(&pt);
        proofs.push(proof);
    }
    t.partitions = proofs.len();
    let (bytes, ft) = job.finish(&proofs)?;
    t.aggregate = ft.aggregate;
    t.verify = ft.verify;
    Ok((bytes, t))
}

/// Partition `k`'s witness through [`crate::synthesis::synthesize`] on `path`, with its
/// timings (circuit construction apart from synthesis) and its first unsatisfied
/// constraint. `circuit()` builds the partition circuit from the vanilla proof (it may be
/// called twice); `pieces`, when given, are its parts for a parallel compiled witness.
pub(crate) fn synthesize_partition<C: bellpepper_core::Circuit<blstrs::Scalar> + Send>(
    key: &str,
    path: SynthesisPath,
    k: usize,
    circuit: impl Fn() -> anyhow::Result<C> + Sync,
    pieces: Option<crate::synthesis::Pieces<'_, C, ProofError>>,
) -> Result<(PartitionWitness, SynthesisTimings, Option<usize>), ProofError> {
    let circuit_time = std::sync::Mutex::new(Duration::ZERO);
    let make = || {
        let start = std::time::Instant::now();
        let c = circuit().map_err(|e| circuit_error(k, e));
        *circuit_time.lock().unwrap_or_else(|p| p.into_inner()) += start.elapsed();
        c
    };
    let start = std::time::Instant::now();
    let crate::synthesis::Synthesized { witness, run, first_unsatisfied, timings } =
        crate::synthesis::synthesize(key, path, make, pieces, |e| ProofError::Synthesis {
            partition: k,
            reason: e.to_string(),
        })?;
    let circuit = circuit_time.into_inner().unwrap_or_else(|p| p.into_inner());
    let t = SynthesisTimings {
        circuit,
        synthesis: start.elapsed().saturating_sub(circuit),
        run: Some(run),
        compiled: timings,
    };
    Ok((witness, t, first_unsatisfied))
}

/// The refusal of partition `k`'s circuit that storage-proofs could not build.
pub(crate) fn circuit_error(k: usize, e: anyhow::Error) -> ProofError {
    ProofError::Circuit { partition: k, reason: format!("{e:#}") }
}

/// A synthesized partition, refused when it does not satisfy its circuit.
pub(crate) fn refuse_unsatisfied(
    k: usize,
    (witness, t, first_unsatisfied): (PartitionWitness, SynthesisTimings, Option<usize>),
) -> Result<(PartitionWitness, SynthesisTimings), ProofError> {
    match first_unsatisfied {
        Some(constraint) => Err(ProofError::Unsatisfied { partition: k, constraint }),
        None => Ok((witness, t)),
    }
}

/// The last step of every kind: the partition proofs (counted) in order, `assemble`d into
/// the output bytes (as they are, or aggregated), then `verify`d; a proof that does not
/// verify is refused, never returned.
pub(crate) fn finish_verified(
    proofs: &[Proof],
    partitions: usize,
    assemble: impl FnOnce(Vec<u8>) -> Result<Vec<u8>, ProofError>,
    verify: impl FnOnce(&[u8]) -> Result<bool, ProofError>,
) -> Result<(Vec<u8>, FinishTimings), ProofError> {
    check_proof_count(proofs, partitions)?;
    let mut t = FinishTimings::default();
    let start = std::time::Instant::now();
    let bytes = assemble(Proof::concat(proofs))?;
    t.aggregate = start.elapsed();
    let start = std::time::Instant::now();
    let ok = verify(&bytes)?;
    t.verify = start.elapsed();
    if !ok {
        return Err(ProofError::DoesNotVerify);
    }
    Ok((bytes, t))
}
