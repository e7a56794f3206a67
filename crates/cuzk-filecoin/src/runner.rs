//! Every proof kind with cuzk's prover: the engine's [`ProofRunner`] over cuzk-filecoin's
//! [`ProofJob`]s. A job's partitions are its proof's partitions; `finish` assembles them
//! (NI-PoRep: aggregates) and verifies the result with filecoin-proofs.

use std::path::{Path, PathBuf};

use crate::c1::REGISTERED_SEAL_PROOFS;
use crate::params::{post_params_path, seal_params_path, update_params_path, use_proof_dirs};
use crate::post::post_proof_from_wire;
use crate::snap::{update_partitions, update_proof_from_wire};
use crate::{
    parse_c1, prover_id_from_miner, C1Input, PoRepJob, PoStJob, PoStRequest, ProofError, ProofJob, SealCommit,
    SectorIdentity, SnapJob, SnapRequest,
};
use cuzk_groth16::{Srs, SrsShape};
use storage_proofs_core::api_version::ApiFeature;
use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

use crate::synthesis::SynthesisPath;
use cuzk_engine::{
    on_urgent_lane, CancelToken, Cause, JobPlan, JobRequest, PartitionProof, PartitionWork, PreparedJob, ProofKind,
    ProofOutput, ProofRunner, ProveContext, RunError, SrsRef,
};

/// Host bytes one partition's proof over parameters of `shape` holds at its peak, from its
/// synthesis to its proof: the a, b, c evaluations and h over the domain, plus
/// the assignment of every input and aux variable, 32 bytes per field element. With
/// `deferred` evaluation (a GPU evaluates a, b and c on the device) the assignment and its
/// density bits alone: about a fifth (4.2 GB against 21.3 GB at 32 GiB).
pub fn partition_footprint(shape: &SrsShape, deferred: bool) -> u64 {
    let domain = (shape.h as u64 + 1).next_power_of_two();
    let variables = (shape.ic + shape.l) as u64;
    if deferred {
        variables * 32 + 3 * variables.div_ceil(8)
    } else {
        (4 * domain + variables) * 32
    }
}

/// Short size label of a circuit id: 2048 -> "2k", 32 GiB -> "32g".
fn size_label(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 => format!("{}g", b >> 30),
        b if b >= 1 << 20 => format!("{}m", b >> 20),
        b => format!("{}k", b >> 10),
    }
}

/// Every proof kind with cuzk's prover (cuzk-filecoin): PoRep C2, SnapDeals, a WindowPoSt
/// partition and WinningPoSt, each verified with filecoin-proofs before it is returned.
pub struct FilecoinRunner {
    param_dir: PathBuf,
    /// Partitions are synthesized into their assignment only and a, b and c are evaluated
    /// by the prover's backend ([`FilecoinRunner::defer_evaluation`]).
    deferred: std::sync::atomic::AtomicBool,
}

fn job_error(e: ProofError, cancel: &CancelToken) -> RunError {
    if cancel.is_cancelled() {
        RunError::Cancelled
    } else if e.is_bad_input() {
        RunError::BadRequest(Cause::of(e))
    } else {
        RunError::Prove(Cause::of(e))
    }
}

/// A proving stage's error: a backend's own failure is the device's
/// ([`RunError::from_backend`]: proved again elsewhere), anything else the job's.
fn prove_error(e: ProofError, cancel: &CancelToken) -> RunError {
    match &e {
        ProofError::Prove { source: cuzk_groth16::ProveError::Backend(backend), .. } => {
            RunError::from_backend(backend, e.to_string(), cancel.is_cancelled())
        }
        _ => job_error(e, cancel),
    }
}

/// The proof type a request names, by kind.
#[derive(Clone, Copy, Debug)]
enum Typed {
    /// The seal proof type comes from the C1 output.
    Seal(RegisteredSealProof),
    PoSt(RegisteredPoStProof),
    Update(RegisteredUpdateProof),
}

impl FilecoinRunner {
    /// Parameters (`.params` and `.vk`) in `param_dir` by Filecoin's naming; filecoin-proofs
    /// is pointed at the same directory (and at `parent_dir`, when given) for verification.
    pub fn new(param_dir: &Path, parent_dir: Option<&Path>) -> Result<FilecoinRunner, RunError> {
        use_proof_dirs(param_dir, parent_dir).map_err(|e| RunError::Params(e.to_string().into()))?;
        Ok(FilecoinRunner {
            param_dir: param_dir.to_path_buf(),
            deferred: false.into(),
        })
    }

    /// Synthesis produces only the assignment, and the backend evaluates a, b and c from
    /// the compiled circuit (`SynthesisPath::CompiledDeferred`): for devices that do it on
    /// the GPU (cuzkd turns it on when every device is one), so that a partition waiting
    /// for its GPU holds about a fifth of the host memory and the engine budgets that
    /// ([`partition_footprint`]). Correct on any backend (the CPU evaluates on the host when
    /// it proves), but a CPU backend then holds a, b and c beyond the partition's budget.
    pub fn defer_evaluation(self, on: bool) -> FilecoinRunner {
        self.set_deferred_evaluation(on);
        self
    }

    /// [`FilecoinRunner::defer_evaluation`] on a shared runner, before its first job (cuzkd
    /// knows its devices only once they are open); jobs planned after it follow it.
    pub fn set_deferred_evaluation(&self, on: bool) {
        self.deferred.store(on, std::sync::atomic::Ordering::Relaxed);
    }

    fn deferred(&self) -> bool {
        self.deferred.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Saves the proof types' compiled circuits in `dir` and finds them there after a
    /// restart (see crate::synthesis; process-wide).
    pub fn save_compiled_circuits_in(&self, dir: &Path) {
        crate::synthesis::set_compiled_dir(Some(dir.to_path_buf()));
    }

    /// "porep-2k" for the interactive and synthetic proofs of a 2 KiB sector (they share
    /// parameters), "ni-porep-2k" for non-interactive PoRep.
    pub fn circuit_id(proof: RegisteredSealProof) -> String {
        let size = size_label(u64::from(proof.sector_size()));
        if format!("{proof:?}").contains("NonInteractive") {
            format!("ni-porep-{size}")
        } else {
            format!("porep-{size}")
        }
    }

    /// "winning-2k" or "wpost-2k" (WindowPoSt API 1.0 and 1.2 share parameters).
    pub fn post_circuit_id(proof: RegisteredPoStProof) -> String {
        let size = size_label(u64::from(proof.sector_size()));
        match proof.typ() {
            filecoin_proofs::PoStType::Winning => format!("winning-{size}"),
            filecoin_proofs::PoStType::Window => format!("wpost-{size}"),
        }
    }

    /// "snap-32g".
    pub fn update_circuit_id(proof: RegisteredUpdateProof) -> String {
        format!("snap-{}", size_label(u64::from(proof.sector_size())))
    }

    /// Every circuit id this runner knows ("porep-2k" .. "snap-64g"), the residency's keys.
    pub fn circuit_ids() -> Vec<String> {
        let seal = REGISTERED_SEAL_PROOFS.iter().map(|p| Self::circuit_id(*p));
        let post = (0..15u64).filter_map(|v| post_proof_from_wire(v).ok()).map(Self::post_circuit_id);
        let update = (0..5u64).filter_map(|v| update_proof_from_wire(v).ok()).map(Self::update_circuit_id);
        let mut ids: Vec<String> = seal.chain(post).chain(update).collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Whether `name` is a circuit id or a kind (an id less its size: "winning", "ni-porep"),
    /// as `[srs] pinned` names them: whether it pins any id (the residency's own match).
    pub fn names_circuits(name: &str) -> bool {
        let pin = [name.to_string()];
        Self::circuit_ids().iter().any(|id| cuzk_engine::is_pinned(&pin, id))
    }

    fn srs_ref(&self, typed: Typed) -> Result<SrsRef, RunError> {
        let (path, circuit_id) = match typed {
            Typed::Seal(p) => (seal_params_path(&self.param_dir, p), Self::circuit_id(p)),
            Typed::PoSt(p) => (post_params_path(&self.param_dir, p), Self::post_circuit_id(p)),
            Typed::Update(p) => (update_params_path(&self.param_dir, p), Self::update_circuit_id(p)),
        };
        let path = path.map_err(|e| RunError::Params(e.to_string().into()))?;
        let shape = Srs::shape(&path).map_err(|e| {
            RunError::Params(format!(
                "{e} (parameters for {typed:?} are expected in {}; fetch them or point the \
                 parameter cache there)",
                self.param_dir.display()
            ).into())
        })?;
        Ok(SrsRef {
            circuit_id,
            path,
            bytes: shape.point_bytes() as u64,
        })
    }

    /// NI-PoRep aggregates its partition proofs with the inner-product SRS from the trusted
    /// setup (`v28-fil-inner-product-v1.srs` beside the parameters): refused at plan, in
    /// milliseconds and naming the file, rather than after every partition is proved.
    fn check_aggregation_srs(&self, proof: RegisteredSealProof) -> Result<(), RunError> {
        if !proof.as_v1_config().feature_enabled(ApiFeature::NonInteractivePoRep) {
            return Ok(());
        }
        let path = storage_proofs_core::parameter_cache::parameter_cache_srs_key_path("", 0);
        let name = path.file_name().map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let expected = self.param_dir.join(&name);
        if expected.is_file() {
            Ok(())
        } else {
            Err(RunError::Params(format!(
                "{proof:?} aggregates its partition proofs with the inner-product SRS, and {} is \
                 missing (fetch it with the proof parameters)",
                expected.display()
            ).into()))
        }
    }

    /// A request's sector_size against its proof type's (0: take the type's, as Curio's
    /// proofshare requests do).
    fn check_sector_size(request: &JobRequest, size: u64, typed: Typed) -> Result<(), RunError> {
        if request.sector_size != 0 && request.sector_size != size {
            return Err(RunError::BadRequest(format!(
                "sector_size {} does not match registered_proof {} ({typed:?}, {size} bytes)",
                request.sector_size, request.registered_proof
            ).into()));
        }
        Ok(())
    }

    fn parse_c1(request: &JobRequest) -> Result<C1Input, RunError> {
        let c1 = parse_c1(&request.vanilla_proof)
            .map_err(|e| RunError::BadRequest(Cause::with(format!("vanilla_proof: {e}"), e)))?;
        if c1.shape_only {
            return Err(RunError::BadRequest(Cause::of(ProofError::ShapeOnly {
                what: "vanilla_proof (the C1 output)".into(),
            })));
        }
        if request.sector_size != 0 {
            c1.check_sector_size(request.sector_size)
                .map_err(|e| RunError::BadRequest(Cause::with(format!("sector_size: {e}"), e)))?;
        }
        Ok(c1)
    }

    /// The proof type and its partition count, checked against the kind and sector size.
    fn typed(request: &JobRequest) -> Result<(Typed, usize), RunError> {
        let bad = |e: ProofError| RunError::BadRequest(Cause::of(e));
        match request.kind {
            ProofKind::PoRepSealCommit => {
                let c1 = Self::parse_c1(request)?;
                let p = c1.registered_proof();
                Ok((Typed::Seal(p), usize::from(p.partitions())))
            }
            ProofKind::SnapDealsUpdate => {
                let p = update_proof_from_wire(request.registered_proof).map_err(bad)?;
                Self::check_sector_size(request, u64::from(p.sector_size()), Typed::Update(p))?;
                Ok((Typed::Update(p), update_partitions(p)))
            }
            ProofKind::WindowPostPartition | ProofKind::WinningPost => {
                let p = post_proof_from_wire(request.registered_proof).map_err(bad)?;
                let winning = request.kind == ProofKind::WinningPost;
                if winning != (p.typ() == filecoin_proofs::PoStType::Winning) {
                    return Err(RunError::BadRequest(format!(
                        "registered_proof {} is {p:?}, not a {} proof type; {} takes {}",
                        request.registered_proof,
                        if winning { "WinningPoSt" } else { "WindowPoSt" },
                        request.kind.queue_name(),
                        if winning { "0-4" } else { "5-14" }
                    ).into()));
                }
                Self::check_sector_size(request, u64::from(p.sector_size()), Typed::PoSt(p))?;
                Ok((Typed::PoSt(p), 1))
            }
        }
    }

    fn miner(request: &JobRequest) -> Result<u64, RunError> {
        if request.miner_id == 0 {
            return Err(RunError::BadRequest(
                "miner_id is 0; expected the miner actor id the sector belongs to".into(),
            ));
        }
        Ok(request.miner_id)
    }

    /// The checked job of a request.
    fn job(request: &JobRequest, cancel: &CancelToken) -> Result<Box<dyn ProofJob>, RunError> {
        let (typed, _) = Self::typed(request)?;
        Ok(match typed {
            Typed::Seal(_) => {
                let c1 = Self::parse_c1(request)?;
                let miner = Self::miner(request)?;
                let sector_id = match (request.sector_number, c1.sector_num) {
                    (0, Some(n)) => n,
                    (0, None) => {
                        return Err(RunError::BadRequest(
                            "sector_number is 0 and the C1 input is not an envelope with SectorNum".into(),
                        ))
                    }
                    (n, _) => n,
                };
                let id = SectorIdentity { prover_id: prover_id_from_miner(miner), sector_id };
                let job = PoRepJob::new(&c1).map_err(|e| job_error(e, cancel))?;
                Box::new(SealCommit { job, id })
            }
            Typed::Update(registered_proof) => Box::new(
                SnapJob::new(&SnapRequest {
                    registered_proof,
                    vanilla_proofs: &request.vanilla_proofs,
                    comm_r_old: &request.comm_r_old,
                    comm_r_new: &request.comm_r_new,
                    comm_d_new: &request.comm_d_new,
                })
                .map_err(|e| job_error(e, cancel))?,
            ),
            Typed::PoSt(registered_proof) => Box::new(
                PoStJob::new(&PoStRequest {
                    registered_proof,
                    randomness: &request.randomness,
                    prover_id: prover_id_from_miner(Self::miner(request)?),
                    partition_index: request.partition_index as usize,
                    vanilla_proofs: &request.vanilla_proofs,
                })
                .map_err(|e| job_error(e, cancel))?,
            ),
        })
    }
}

impl ProofRunner for FilecoinRunner {
    fn plan(&self, request: &JobRequest) -> Result<JobPlan, RunError> {
        let (typed, partitions) = Self::typed(request)?;
        let srs = self.srs_ref(typed)?;
        if let Typed::Seal(p) = typed {
            self.check_aggregation_srs(p)?;
        }
        let shape = Srs::shape(&srs.path).map_err(|e| RunError::Params(e.to_string().into()))?;
        Ok(JobPlan {
            partitions,
            partition_bytes: partition_footprint(&shape, self.deferred()),
            // The request and the job parsed from it.
            job_bytes: 2 * request.payload_bytes(),
            srs: Some(srs),
        })
    }

    fn prepare(
        &self,
        request: &JobRequest,
        _plan: &JobPlan,
        cancel: &CancelToken,
    ) -> Result<Box<dyn PreparedJob>, RunError> {
        cancel.check()?;
        let path = if self.deferred() { SynthesisPath::CompiledDeferred } else { SynthesisPath::Compiled };
        Ok(Box::new(FilecoinJob { job: Self::job(request, cancel)?, path }))
    }

    /// The compiled circuits kept in this process (`synthesis::compiled_bytes`): 8.5 GiB for
    /// the 32 GiB PoRep, 11.6 GiB for the 32 GiB WindowPoSt, 175 MiB at 2 KiB.
    fn held_bytes(&self) -> u64 {
        crate::synthesis::compiled_bytes()
    }

    fn srs_for_circuit(&self, circuit_id: &str) -> Result<SrsRef, RunError> {
        // Canonical proof per circuit id: the newest interactive (or NI) seal version, the
        // newest PoSt API.
        let seal = REGISTERED_SEAL_PROOFS
            .iter()
            .rev()
            .copied()
            .filter(|p| !format!("{p:?}").contains("Synthetic"))
            .find(|p| Self::circuit_id(*p) == circuit_id)
            .map(Typed::Seal);
        let post = || {
            (0..15u64)
                .rev()
                .filter_map(|v| post_proof_from_wire(v).ok())
                .find(|p| Self::post_circuit_id(*p) == circuit_id)
                .map(Typed::PoSt)
        };
        let update = || {
            (0..5u64)
                .filter_map(|v| update_proof_from_wire(v).ok())
                .find(|p| Self::update_circuit_id(*p) == circuit_id)
                .map(Typed::Update)
        };
        let typed = seal.or_else(post).or_else(update).ok_or_else(|| {
            RunError::BadRequest(format!(
                "circuit_id {circuit_id:?} is unknown; expected porep-<size>, ni-porep-<size>, \
                 snap-<size>, wpost-<size> or winning-<size> with size 2k, 8m, 512m, 32g or 64g"
            ).into())
        })?;
        self.srs_ref(typed)
    }
}

/// A checked job of any kind (cuzk-filecoin's [`ProofJob`]) as the engine schedules it.
struct FilecoinJob {
    job: Box<dyn ProofJob>,
    path: SynthesisPath,
}

impl PreparedJob for FilecoinJob {
    fn partitions(&self) -> usize {
        self.job.partitions()
    }

    fn synthesize(&self, k: usize, cancel: &CancelToken) -> Result<PartitionWork, RunError> {
        cancel.check()?;
        let synthesize = || self.job.synthesize_with(k, self.path);
        let made = if on_urgent_lane() {
            crate::synthesis::urgent(synthesize)
        } else {
            synthesize()
        };
        let (witness, _) = made.map_err(|e| job_error(e, cancel))?;
        Ok(PartitionWork { witness })
    }

    fn prove(&self, k: usize, work: PartitionWork, ctx: ProveContext<'_>) -> Result<PartitionProof, RunError> {
        ctx.cancel.check()?;
        let srs = ctx
            .srs
            .ok_or_else(|| RunError::Prove("internal: proving needs parameters".into()))?;
        let (r, s) = cuzk_groth16::prover::random_blinding(&mut rand::rngs::OsRng);
        let (proof, _) = cuzk_groth16::prove_with(ctx.backend, srs, work.witness, r, s, ctx.tuning)
            .map_err(|e| prove_error(ProofError::proving(k, e), ctx.cancel))?;
        Ok(PartitionProof(proof))
    }

    fn finish(&self, proofs: Vec<PartitionProof>, cancel: &CancelToken) -> Result<ProofOutput, RunError> {
        cancel.check()?;
        let proofs: Vec<cuzk_groth16::Proof> = proofs.into_iter().map(|p| p.0).collect();
        let (proof, t) = self.job.finish(&proofs).map_err(|e| job_error(e, cancel))?;
        Ok(ProofOutput { proof, verify: t.verify })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use filecoin_proofs_api::RegisteredSealProof as P;

    #[test]
    fn a_backend_failure_in_prove_is_the_devices_and_a_bad_parameter_file_the_jobs() {
        use cuzk_groth16::{BackendError, ProveError};
        let cancel = CancelToken::default();
        let lost = ProveError::Backend(BackendError::Unavailable { backend: "gpu", reason: "device lost".into() });
        let e = prove_error(ProofError::Prove { partition: 2, source: lost }, &cancel);
        assert!(matches!(&e, RunError::Device(m) if m == "proving partition 2: gpu backend unavailable: device lost"), "{e}");
        let mismatch = ProveError::ParamsMismatch { path: "p".into(), section: "h", expected: 2, found: 1 };
        let e = prove_error(ProofError::Prove { partition: 0, source: mismatch }, &cancel);
        assert!(matches!(e, RunError::Prove(_)), "{e}");
        let e = prove_error(ProofError::Unsatisfied { partition: 0, constraint: 7 }, &cancel);
        assert!(matches!(e, RunError::BadRequest(_)), "{e}");
    }

    /// The plan's partition count of a SnapDeals request is the update proof's own, from
    /// storage-proofs-update's public parameters (16 at 32 and 64 GiB), not the PoRep count
    /// `RegisteredUpdateProof::partitions()` gives (10): with that count the engine failed
    /// every SnapDeals job above 2 KiB ("the prepared job has 16 partitions, its plan 10").
    #[test]
    fn a_snapdeals_plan_has_the_update_proofs_partition_count() {
        for wire in 0..5u64 {
            let mut request = JobRequest::new(ProofKind::SnapDealsUpdate);
            request.registered_proof = wire;
            let (typed, partitions) = FilecoinRunner::typed(&request).unwrap();
            let Typed::Update(p) = typed else { panic!("wire {wire}: {typed:?}") };
            let bytes = u64::from(p.sector_size());
            let expected = storage_proofs_update::PublicParams::from_sector_size(bytes).partition_count;
            assert_eq!(partitions, expected, "{p:?}");
        }
        let mut request = JobRequest::new(ProofKind::SnapDealsUpdate);
        request.registered_proof = 3;
        assert_eq!(FilecoinRunner::typed(&request).unwrap().1, 16, "32 GiB");
    }

    /// NI-PoRep without the inner-product SRS is refused at plan, naming the file; with it,
    /// and for interactive PoRep, it passes.
    #[test]
    fn ni_porep_without_the_aggregation_srs_is_refused_naming_the_file() {
        // The SRS's name comes through filecoin-proofs' settings, which it reads once per
        // process: point them at the fixtures the other tests of this process use first, or
        // those tests fail when this one runs before them (seen on 2 cores).
        crate::fixture::kind_fixtures_2kib();
        let dir = std::env::temp_dir().join(format!("cuzk-srs-check-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let runner = FilecoinRunner { param_dir: dir.clone(), deferred: false.into() };
        let ni = P::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep;
        let e = runner.check_aggregation_srs(ni).unwrap_err().to_string();
        let file = dir.join("v28-fil-inner-product-v1.srs");
        assert!(e.contains(&file.display().to_string()) && e.contains("inner-product SRS"), "{e}");
        runner.check_aggregation_srs(P::StackedDrg2KiBV1_1).unwrap();
        std::fs::write(&file, b"").unwrap();
        runner.check_aggregation_srs(ni).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pinned_names_are_kinds_or_circuit_ids() {
        for ok in ["winning", "wpost", "porep", "ni-porep", "snap", "winning-32g", "porep-2k", "snap-64g"] {
            assert!(FilecoinRunner::names_circuits(ok), "{ok}");
        }
        for bad in ["wining", "winning-", "winning-16g", "ni", "post", ""] {
            assert!(!FilecoinRunner::names_circuits(bad), "{bad}");
        }
        assert!(FilecoinRunner::circuit_ids().contains(&"winning-32g".to_string()));
    }

    #[test]
    fn circuit_ids_name_size_and_variant() {
        assert_eq!(FilecoinRunner::circuit_id(P::StackedDrg2KiBV1_1), "porep-2k");
        assert_eq!(
            FilecoinRunner::circuit_id(P::StackedDrg32GiBV1_1_Feat_SyntheticPoRep),
            "porep-32g"
        );
        assert_eq!(
            FilecoinRunner::circuit_id(P::StackedDrg64GiBV1_2_Feat_NonInteractivePoRep),
            "ni-porep-64g"
        );
        assert_eq!(FilecoinRunner::circuit_id(P::StackedDrg512MiBV1), "porep-512m");
    }

    #[test]
    fn footprint_grows_with_the_domain() {
        let small = SrsShape {
            ic: 2,
            h: 1023,
            l: 1000,
            a: 10,
            b_g1: 10,
            b_g2: 10,
        };
        let big = SrsShape {
            h: (1 << 20) - 1,
            ..small
        };
        assert_eq!(partition_footprint(&small, false), (4 * 1024 + 1002) * 32);
        assert!(partition_footprint(&big, false) > 100 * partition_footprint(&small, false));
        // Deferred: the assignment and its density bits, whatever the domain.
        assert_eq!(partition_footprint(&small, true), 1002 * 32 + 3 * 126);
        assert_eq!(partition_footprint(&big, true), partition_footprint(&small, true));
    }

    /// At the 32 GiB PoRep shape a budget that holds k full partitions holds about five
    /// times as many deferred ones, and never more than its bytes allow.
    #[test]
    fn a_budget_holds_more_deferred_partitions() {
        let shape = SrsShape { ic: 328, h: (1 << 27) - 1, l: 130_169_893, a: 0, b_g1: 0, b_g2: 0 };
        let (full, deferred) = (partition_footprint(&shape, false), partition_footprint(&shape, true));
        let budget = 3 * full;
        assert_eq!(budget / full, 3);
        assert!(budget / deferred >= 15, "{} deferred partitions in the budget of 3", budget / deferred);
        assert!((budget / deferred) * deferred <= budget);
        assert!(deferred >= (130_169_893 + 328) * 32, "the assignment itself is counted");
    }
}
