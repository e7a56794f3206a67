//! Test fixtures: Groth16 parameters from random toxic waste (cuzk's own setup,
//! [`cuzk_groth16::setup`]) and a really sealed small
//! sector's C1 output, made with filecoin-proofs. Cached: a fixture directory that holds a
//! complete, valid fixture is reused as it is.
//!
//! Layout of a fixture directory:
//!
//! ```text
//! params/            parameter files by Filecoin's naming (.params, .vk, .meta)
//! parents/           SDR parent cache
//! c1.json            bare SealCommitPhase1Output
//! c1.envelope.json   the same in lotus-bench's envelope
//! fixture.json       what it is (written last: its presence marks a complete fixture)
//! ```

use std::fs;
use std::io::{Cursor, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context, Result};
use filecoin_proofs::{parameters::public_params, with_shape, DefaultPieceHasher, PoRepConfig};
use filecoin_proofs_api::seal::{self as api, SealCommitPhase1Output};
use filecoin_proofs_api::{RegisteredSealProof, SectorId, UnpaddedBytesAmount};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use serde::{Deserialize, Serialize};
use storage_proofs_core::api_version::ApiFeature;
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use cuzk_groth16::progress::{step, Prefixed, Progress, Silent};
use cuzk_groth16::compiled::CompiledCircuit;
use cuzk_groth16::setup::{setup_circuit, setup_compiled, ToxicWaste};
use storage_proofs_core::compound_proof::CircuitComponent;
use storage_proofs_core::parameter_cache::{CacheEntryMetadata, CacheableParameters, ParameterSetMetadata};
use storage_proofs_core::proof::ProofScheme;

use crate::c1;
use crate::kind_input::KindInput;
use crate::params::{seal_params_path, seal_vk_path, use_proof_dirs, PRODUCTION_PARAM_DIR};
use crate::porep::{prover_id_from_miner, SectorIdentity};

/// The miner (actor) id fixtures are sealed for.
pub const FIXTURE_MINER_ID: u64 = 1000;
/// The sector number fixtures are sealed as.
pub const FIXTURE_SECTOR_ID: u64 = 1;

/// What a fixture directory holds (`fixture.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct FixtureInfo {
    pub registered_proof: RegisteredSealProof,
    pub sector_size: u64,
    pub miner_id: u64,
    pub sector_id: u64,
    pub params_file: String,
    pub c1: String,
    pub c1_envelope: String,
}

/// A fixture on disk.
#[derive(Clone, Debug)]
pub struct Fixture {
    pub dir: PathBuf,
    pub info: FixtureInfo,
    /// True when everything was found valid and nothing was generated.
    pub cached: bool,
    pub param_time: Duration,
    pub seal_time: Duration,
}

impl Fixture {
    pub fn param_dir(&self) -> PathBuf {
        self.dir.join("params")
    }
    pub fn parent_dir(&self) -> PathBuf {
        self.dir.join("parents")
    }
    pub fn c1_path(&self) -> PathBuf {
        self.dir.join(&self.info.c1)
    }
    pub fn envelope_path(&self) -> PathBuf {
        self.dir.join(&self.info.c1_envelope)
    }
    pub fn identity(&self) -> SectorIdentity {
        SectorIdentity {
            prover_id: prover_id_from_miner(self.info.miner_id),
            sector_id: self.info.sector_id,
        }
    }
}

/// Where fixtures are cached when no directory is given: `$CUZK_FIXTURE_DIR/<size>`, else
/// `~/.cache/cuzk/fixtures/<size>` (outside any checkout, so CI and tests share them).
pub fn default_fixture_dir(sector_size: u64) -> PathBuf {
    let base = std::env::var_os("CUZK_FIXTURE_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/cuzk/fixtures")))
        .unwrap_or_else(|| PathBuf::from("/tmp/cuzk-fixtures"));
    base.join(human_size(sector_size))
}

/// 2048 -> "2KiB", 8388608 -> "8MiB".
pub fn human_size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{}GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{}MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{}KiB", b >> 10),
        b => format!("{b}B"),
    }
}

/// Parses "2KiB", "8MiB", "2048" into bytes.
pub fn parse_sector_size(s: &str) -> Result<u64> {
    let t = s.trim();
    let (num, mult) = if let Some(n) = t.strip_suffix("KiB") {
        (n, 1u64 << 10)
    } else if let Some(n) = t.strip_suffix("MiB") {
        (n, 1 << 20)
    } else if let Some(n) = t.strip_suffix("GiB") {
        (n, 1 << 30)
    } else {
        (t, 1)
    };
    let n: u64 = num
        .trim()
        .parse()
        .with_context(|| format!("sector size {s:?}: expected e.g. 2KiB, 8MiB, 32GiB or bytes"))?;
    Ok(n * mult)
}

/// The registered proof fixtures use for a sector size (interactive PoRep, API 1.1).
pub fn fixture_proof(sector_size: u64) -> Result<RegisteredSealProof> {
    use RegisteredSealProof::*;
    Ok(match sector_size {
        2048 => StackedDrg2KiBV1_1,
        0x80_0000 => StackedDrg8MiBV1_1,
        _ => bail!(
            "fixtures are made for 2KiB and 8MiB sectors only (got {sector_size} bytes): larger \
             ones take hours to seal and generate parameters for"
        ),
    })
}

pub(crate) fn refuse_production_dir(dir: &Path) -> Result<()> {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if abs.starts_with(PRODUCTION_PARAM_DIR) {
        bail!(crate::params::ParamDirError::ProductionDir(abs.display().to_string()));
    }
    Ok(())
}

/// Makes (or reuses) the fixture for `sector_size` in `dir` (its [`fixture_proof`]). Points
/// this process's filecoin-proofs at the fixture's parameter and parent directories.
pub fn ensure_fixture(dir: &Path, sector_size: u64) -> Result<Fixture> {
    ensure_fixture_of(dir, fixture_proof(sector_size)?)
}

/// As [`ensure_fixture`], each long step (parameters, sealing) reported to `progress`.
pub fn ensure_fixture_with(dir: &Path, sector_size: u64, progress: &dyn Progress) -> Result<Fixture> {
    ensure_fixture_of_with(dir, fixture_proof(sector_size)?, progress)
}

/// The NI-PoRep 2 KiB proof type: 13 partitions. Its fixture (about 50 s on 2 cores) is
/// made only when asked for: only the ignored NI-PoRep test uses it.
pub const NI_POREP_2KIB: RegisteredSealProof = RegisteredSealProof::StackedDrg2KiBV1_2_Feat_NonInteractivePoRep;

/// Where the fixture of another proof type than its size's default is cached: beside the
/// default one, named by the proof type.
pub fn default_fixture_dir_of(proof: RegisteredSealProof) -> PathBuf {
    let size = u64::from(proof.sector_size());
    let base = default_fixture_dir(size);
    if fixture_proof(size).is_ok_and(|p| p == proof) {
        base
    } else {
        base.with_file_name(format!("{}-{proof:?}", human_size(size)))
    }
}

/// As [`ensure_fixture`] for a given proof type of a fixture size (2 KiB or 8 MiB): for
/// example [`NI_POREP_2KIB`].
pub fn ensure_fixture_of(dir: &Path, proof: RegisteredSealProof) -> Result<Fixture> {
    ensure_fixture_of_with(dir, proof, &Silent)
}

/// As [`ensure_fixture_of`], each long step reported to `progress`.
pub fn ensure_fixture_of_with(dir: &Path, proof: RegisteredSealProof, progress: &dyn Progress) -> Result<Fixture> {
    refuse_production_dir(dir)?;
    let sector_size = u64::from(proof.sector_size());
    fixture_proof(sector_size)?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = fs::canonicalize(dir)?;
    let (params, parents) = (dir.join("params"), dir.join("parents"));
    fs::create_dir_all(&params)?;
    fs::create_dir_all(&parents)?;
    use_proof_dirs(&params, Some(&parents))?;
    if proof.as_v1_config().feature_enabled(ApiFeature::NonInteractivePoRep) {
        // NI-PoRep aggregates its partition proofs: the inner-product SRS too (read when
        // present; a test one written when not).
        with_shape!(sector_size, ensure_aggregation_srs, &proof.as_v1_config())?;
    }

    if let Some(f) = load_valid(&dir, proof)? {
        return Ok(f);
    }
    let mut fixture = Fixture {
        dir: dir.clone(),
        info: FixtureInfo {
            registered_proof: proof,
            sector_size,
            miner_id: FIXTURE_MINER_ID,
            sector_id: FIXTURE_SECTOR_ID,
            params_file: seal_params_path(&params, proof)?
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default(),
            c1: "c1.json".into(),
            c1_envelope: "c1.envelope.json".into(),
        },
        cached: false,
        param_time: Duration::ZERO,
        seal_time: Duration::ZERO,
    };

    let start = Instant::now();
    if !params_valid(&params, proof) {
        fixture_circuits(proof, false, &mut WriteParams::new(&params, progress))?;
    }
    fixture.param_time = start.elapsed();

    let start = Instant::now();
    let c1_json = seal_sector(&dir, proof, fixture.identity(), progress)?;
    write_atomic(&fixture.c1_path(), &c1_json)?;
    write_atomic(
        &fixture.envelope_path(),
        &c1::to_envelope(&c1_json, FIXTURE_SECTOR_ID, sector_size),
    )?;
    fixture.seal_time = start.elapsed();
    write_atomic(&dir.join("fixture.json"), &serde_json::to_vec_pretty(&fixture.info)?)?;
    Ok(fixture)
}

fn params_valid(params: &Path, proof: RegisteredSealProof) -> bool {
    let (Ok(p), Ok(vk)) = (seal_params_path(params, proof), seal_vk_path(params, proof)) else {
        return false;
    };
    params_kept(&p, &vk)
}

/// The fixture in `dir` if it is complete and its files are valid.
fn load_valid(dir: &Path, proof: RegisteredSealProof) -> Result<Option<Fixture>> {
    let Ok(raw) = fs::read(dir.join("fixture.json")) else {
        return Ok(None);
    };
    let Ok(info) = serde_json::from_slice::<FixtureInfo>(&raw) else {
        return Ok(None);
    };
    if info.registered_proof != proof || !params_valid(&dir.join("params"), proof) {
        return Ok(None);
    }
    let f = Fixture {
        dir: dir.to_path_buf(),
        info,
        cached: true,
        param_time: Duration::ZERO,
        seal_time: Duration::ZERO,
    };
    let c1_ok = fs::read(f.c1_path())
        .ok()
        .and_then(|b| c1::parse_c1(&b).ok())
        .is_some_and(|c| c.registered_proof() == proof);
    Ok(c1_ok.then_some(f))
}

pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

/// Proofs a test inner-product SRS serves (filecoin-proofs pads the proofs it aggregates
/// to a power of two; NI-PoRep 2 KiB aggregates 13, so 16).
const TEST_SRS_PROOFS: usize = 64;

/// The inner-product SRS that NI-PoRep's aggregation reads (`v28-fil-inner-product-v1.srs` in
/// the parameter directory): from the directory when it is there, else generated through
/// storage-proofs' own cache with random powers (test use only; production hosts have the
/// trusted setup's file).
fn ensure_aggregation_srs<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<()> {
    let pp = public_params::<Tree>(config)?;
    type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
    <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::srs_key(
        Some(&mut rand::rngs::OsRng),
        &pp,
        TEST_SRS_PROOFS,
    )?;
    Ok(())
}

/// One circuit that fixtures make test parameters for: its label (the registered proof),
/// its identifier in filecoin-proofs' parameter cache (which names its files), the cache's
/// metadata, and its blank circuit (no values), made anew for each use.
pub struct FixtureCircuit<'a, C> {
    pub label: String,
    pub cache_id: String,
    pub meta: CacheEntryMetadata,
    pub blank: &'a dyn Fn() -> C,
}

/// Receives the circuits of [`fixture_circuits`]: the fixtures write their parameters
/// ([`WriteParams`]), cuzk-lab's setup-bench times generators on them.
pub trait CircuitSink {
    fn circuit<C: bellperson::Circuit<blstrs::Scalar>>(&mut self, c: FixtureCircuit<'_, C>) -> Result<()>;
}

/// Hands `sink` one compound proof's circuit for its public parameters `pp`.
fn visit<'a, S, C, Cp>(label: String, pp: &S::PublicParams, sink: &mut impl CircuitSink) -> Result<()>
where
    S: ProofScheme<'a>,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync,
    C: bellperson::Circuit<blstrs::Scalar> + CircuitComponent + Send,
    Cp: CompoundProof<'a, S, C>,
{
    sink.circuit(FixtureCircuit {
        label,
        cache_id: <Cp as CacheableParameters<C, S::PublicParams>>::cache_identifier(pp),
        meta: <Cp as CacheableParameters<C, S::PublicParams>>::cache_meta(pp),
        blank: &|| Cp::blank_circuit(pp),
    })
}

/// The circuits fixtures make parameters for: the PoRep of `proof` (interactive or
/// NI-PoRep), and with `kinds` the WinningPoSt, WindowPoSt (API 1.2; 1.0 shares it) and
/// sector update circuits of its sector size ([`kind_proofs`]).
pub fn fixture_circuits(proof: RegisteredSealProof, kinds: bool, sink: &mut impl CircuitSink) -> Result<()> {
    let size = u64::from(proof.sector_size());
    with_shape!(size, porep_circuit, proof, sink)?;
    if kinds {
        let (winning, window, update) = kind_proofs(size)?;
        with_shape!(size, kind_circuits, winning, window, update, sink)?;
    }
    Ok(())
}

fn porep_circuit<Tree: 'static + MerkleTreeTrait>(proof: RegisteredSealProof, sink: &mut impl CircuitSink) -> Result<()> {
    let pp = public_params::<Tree>(&proof.as_v1_config())?;
    visit::<StackedDrg<'_, Tree, DefaultPieceHasher>, _, StackedCompound<Tree, DefaultPieceHasher>>(format!("{proof:?}"), &pp, sink)
}

fn kind_circuits<Tree: 'static + MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>>(
    winning: filecoin_proofs_api::RegisteredPoStProof,
    window: filecoin_proofs_api::RegisteredPoStProof,
    update: filecoin_proofs_api::RegisteredUpdateProof,
    sink: &mut impl CircuitSink,
) -> Result<()> {
    use storage_proofs_post::fallback::{FallbackPoSt, FallbackPoStCompound};
    use storage_proofs_update::{EmptySectorUpdate, EmptySectorUpdateCompound};
    for post in [winning, window] {
        let config = post.as_v1_config();
        let pp = if post == winning {
            filecoin_proofs::parameters::winning_post_public_params::<Tree>(&config)?
        } else {
            filecoin_proofs::parameters::window_post_public_params::<Tree>(&config)?
        };
        visit::<FallbackPoSt<'_, Tree>, _, FallbackPoStCompound<Tree>>(format!("{post:?}"), &pp, sink)?;
    }
    let pp = storage_proofs_update::PublicParams::from_sector_size(u64::from(update.sector_size()));
    visit::<EmptySectorUpdate<Tree>, _, EmptySectorUpdateCompound<Tree>>(format!("{update:?}"), &pp, sink)
}

/// Writes each circuit's test parameters with cuzk's own setup ([`cuzk_groth16::setup`])
/// from fresh random toxic waste (test use only: anyone who kept the waste could forge
/// proofs), into `dir` as filecoin-proofs' parameter cache names them: `.params`, `.vk`
/// and `.meta`, each whole under its final name or not at all. Files already there and
/// valid are kept.
pub struct WriteParams<'a> {
    pub dir: &'a Path,
    pub progress: &'a dyn Progress,
    /// The circuit's constraints as already recorded (a PoRep partition's compiled circuit,
    /// recorded in parallel: 21 s at 32 GiB on 16 cores against minutes for the blank
    /// circuit on one thread); `None` records the blank circuit.
    pub recorded: Option<&'a CompiledCircuit>,
}

impl<'a> WriteParams<'a> {
    /// Records each circuit's blank circuit.
    pub fn new(dir: &'a Path, progress: &'a dyn Progress) -> WriteParams<'a> {
        WriteParams { dir, progress, recorded: None }
    }
}

/// Whether `params` holds a parameter set whose layout reads and whose verifying key is the
/// `.vk` file beside it: a set made whole by one setup, kept as it is.
pub fn params_kept(params: &Path, vk: &Path) -> bool {
    cuzk_groth16::Srs::shape(params).is_ok() && cuzk_groth16::setup::vk_matches(params, vk)
}

impl CircuitSink for WriteParams<'_> {
    fn circuit<C: bellperson::Circuit<blstrs::Scalar>>(&mut self, c: FixtureCircuit<'_, C>) -> Result<()> {
        use storage_proofs_core::parameter_cache::{metadata_id, parameter_id, verifying_key_id};
        let (params, vk, meta) = (
            self.dir.join(parameter_id(&c.cache_id)),
            self.dir.join(verifying_key_id(&c.cache_id)),
            self.dir.join(metadata_id(&c.cache_id)),
        );
        let valid = || params_kept(&params, &vk) && meta.is_file();
        if valid() {
            return Ok(());
        }
        // One maker at a time per circuit, across threads and processes: the others wait,
        // then find its files.
        let _lock = lock_file(&params.with_extension("lock"))?;
        if valid() {
            return Ok(());
        }
        // A key or metadata left from other parameters must not outlive them: gone first, so
        // that a setup cut short leaves parameters without a key (made again next time),
        // never parameters beside another waste's key.
        for stale in [&vk, &meta] {
            match fs::remove_file(stale) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("removing the stale {}", stale.display()))
                }
                _ => {}
            }
        }
        let waste = ToxicWaste::random(&mut rand::rngs::OsRng);
        let labelled = Prefixed { inner: self.progress, prefix: format!("{} parameters: ", c.label) };
        let summary = match self.recorded {
            Some(compiled) => setup_compiled(compiled, &waste, &params, &vk, &labelled),
            None => setup_circuit((c.blank)(), &waste, &params, &vk, &labelled),
        }
        .with_context(|| format!("making the {} test parameters ({})", c.label, params.display()))?;
        log::info!(
            "{} parameters: {} constraints, {} inputs, {} aux; recorded in {:.1} s, points in {:.1} s -> {}",
            c.label,
            summary.constraints,
            summary.inputs,
            summary.aux,
            summary.record.as_secs_f64(),
            summary.points.as_secs_f64(),
            params.display()
        );
        write_atomic(&meta, &serde_json::to_vec(&c.meta)?)
    }
}

/// An exclusive lock on `path` (created if missing), held until the file is dropped.
fn lock_file(path: &Path) -> Result<fs::File> {
    use std::os::fd::AsRawFd;
    let f = fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening the lock {}", path.display()))?;
    // SAFETY: flock on a descriptor this function owns; released when it is closed.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("locking {}", path.display()));
    }
    Ok(f)
}

/// Seals one sector of random data and returns its C1 output as JSON.
fn seal_sector(dir: &Path, proof: RegisteredSealProof, id: SectorIdentity, progress: &dyn Progress) -> Result<Vec<u8>> {
    let work = dir.join("sector");
    let _ = fs::remove_dir_all(&work);
    let cache = work.join("cache");
    fs::create_dir_all(&cache)?;
    let staged = work.join("staged");
    let sealed = work.join("sealed");

    let mut rng = ChaCha20Rng::from_seed([7; 32]);
    let sector_size = u64::from(proof.sector_size());
    let unpadded = UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount(sector_size));
    let mut data = vec![0u8; u64::from(unpadded) as usize];
    rng.fill_bytes(&mut data);

    let mut staged_file = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&staged)?;
    let (piece, _) = api::add_piece(proof, Cursor::new(&data), &mut staged_file, unpadded, &[])?;
    staged_file.seek(SeekFrom::Start(0))?;
    drop(staged_file);
    fs::File::create(&sealed)?;

    let mut ticket = [0u8; 32];
    let mut seed = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    rng.fill_bytes(&mut seed);
    ticket[31] &= 0x3f;
    seed[31] &= 0x3f;
    let sector = SectorId::from(id.sector_id);
    let pieces = [piece];

    let p1 = step(progress, "sealing: pre-commit phase 1 (labels)", || {
        api::seal_pre_commit_phase1(proof, &cache, &staged, &sealed, id.prover_id, sector, ticket, &pieces)
    })?;
    let p2 = step(progress, "sealing: pre-commit phase 2 (trees)", || api::seal_pre_commit_phase2(p1, &cache, &sealed))?;
    let c1: SealCommitPhase1Output = step(progress, "sealing: commit phase 1", || {
        api::seal_commit_phase1(&cache, &sealed, id.prover_id, sector, ticket, seed, p2, &pieces)
    })?;
    ensure!(c1.registered_proof == proof, "sealed with an unexpected proof type");
    let json = serde_json::to_vec(&c1)?;
    let _ = fs::remove_dir_all(&work);
    Ok(json)
}

/// The 2 KiB PoRep and kind fixtures in their default directory, made (or found) once per
/// process: the tests' shared inputs.
pub fn kind_fixtures_2kib() -> &'static KindFixtures {
    static F: std::sync::OnceLock<KindFixtures> = std::sync::OnceLock::new();
    F.get_or_init(|| {
        let dir = default_fixture_dir(2048);
        ensure_fixture(&dir, 2048).expect("PoRep fixture");
        ensure_kind_fixtures(&dir, 2048).expect("PoSt and SnapDeals fixtures")
    })
}

/// The PoSt and SnapDeals fixtures of one sector size.
#[derive(Clone, Debug)]
pub struct KindFixtures {
    pub dir: PathBuf,
    pub winning: KindInput,
    pub window: KindInput,
    /// WindowPoSt of API 1.0 (its challenges depend on the partition index).
    pub window_v1: KindInput,
    pub snap: KindInput,
    pub cached: bool,
    pub param_time: Duration,
    pub seal_time: Duration,
}

impl KindFixtures {
    pub fn param_dir(&self) -> PathBuf {
        self.dir.join("params")
    }
}

/// The proof types the kind fixtures of a sector size use: WinningPoSt, WindowPoSt (API 1.2,
/// what Curio sends today) and the sector update.
pub fn kind_proofs(
    sector_size: u64,
) -> Result<(filecoin_proofs_api::RegisteredPoStProof, filecoin_proofs_api::RegisteredPoStProof, filecoin_proofs_api::RegisteredUpdateProof)> {
    use filecoin_proofs_api::{RegisteredPoStProof as P, RegisteredUpdateProof as U};
    Ok(match sector_size {
        2048 => (P::StackedDrgWinning2KiBV1, P::StackedDrgWindow2KiBV1_2, U::StackedDrg2KiBV1),
        0x80_0000 => (P::StackedDrgWinning8MiBV1, P::StackedDrgWindow8MiBV1_2, U::StackedDrg8MiBV1),
        _ => bail!("PoSt and SnapDeals fixtures are made for 2KiB and 8MiB sectors only (got {sector_size} bytes)"),
    })
}

/// Makes (or reuses) the WinningPoSt, WindowPoSt and SnapDeals fixtures for `sector_size`
/// in `dir` (the PoRep fixture's directory: they share its `params/` and `parents/`): a
/// sector really sealed, and really updated with new data, whose vanilla proofs are written
/// as Curio sends them, with test parameters for the three circuits. Layout, in `dir`:
/// `kinds/{winning,window,window-v1,snap}.json` ([`KindInput`]), `kinds/fixture.json` last.
/// WindowPoSt API 1.0 shares the parameters of 1.2.
pub fn ensure_kind_fixtures(dir: &Path, sector_size: u64) -> Result<KindFixtures> {
    ensure_kind_fixtures_with(dir, sector_size, &Silent)
}

/// As [`ensure_kind_fixtures`], each long step reported to `progress`.
pub fn ensure_kind_fixtures_with(dir: &Path, sector_size: u64, progress: &dyn Progress) -> Result<KindFixtures> {
    refuse_production_dir(dir)?;
    let seal_proof = fixture_proof(sector_size)?;
    let (winning_proof, window_proof, update_proof) = kind_proofs(sector_size)?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = fs::canonicalize(dir)?;
    let (params, parents) = (dir.join("params"), dir.join("parents"));
    fs::create_dir_all(&params)?;
    fs::create_dir_all(&parents)?;
    use_proof_dirs(&params, Some(&parents))?;
    let kinds = dir.join("kinds");
    let read = |name: &str| -> Option<KindInput> {
        serde_json::from_slice(&fs::read(kinds.join(format!("{name}.json"))).ok()?).ok()
    };
    let params_ok = [
        crate::params::post_params_path(&params, winning_proof),
        crate::params::post_params_path(&params, window_proof),
        crate::params::update_params_path(&params, update_proof),
    ]
    .into_iter()
    .all(|p| p.is_ok_and(|p| params_kept(&p, &p.with_extension("vk"))));
    if kinds.join("fixture.json").is_file() && params_ok {
        if let (Some(winning), Some(window), Some(window_v1), Some(snap)) =
            (read("winning"), read("window"), read("window-v1"), read("snap"))
        {
            return Ok(KindFixtures {
                dir,
                winning,
                window,
                window_v1,
                snap,
                cached: true,
                param_time: Duration::ZERO,
                seal_time: Duration::ZERO,
            });
        }
    }
    let start = Instant::now();
    if !params_ok {
        let mut sink = WriteParams::new(&params, progress);
        with_shape!(sector_size, kind_circuits, winning_proof, window_proof, update_proof, &mut sink)?;
    }
    let param_time = start.elapsed();
    let start = Instant::now();
    fs::create_dir_all(&kinds)?;
    let (winning, window, window_v1, snap) = step(progress, "sealing and updating a sector (PoSt and SnapDeals inputs)", || {
        seal_and_update(&kinds, seal_proof, winning_proof, window_proof, update_proof)
    })?;
    for (name, input) in [("winning", &winning), ("window", &window), ("window-v1", &window_v1), ("snap", &snap)] {
        write_atomic(&kinds.join(format!("{name}.json")), &serde_json::to_vec_pretty(input)?)?;
    }
    write_atomic(&kinds.join("fixture.json"), br#"{"complete": true}"#)?;
    Ok(KindFixtures { dir, winning, window, window_v1, snap, cached: false, param_time, seal_time: start.elapsed() })
}

/// Seals a sector of random data, takes its WinningPoSt and WindowPoSt vanilla proofs, then
/// updates it with new random data and takes the update's partition vanilla proofs.
fn seal_and_update(
    work: &Path,
    seal_proof: RegisteredSealProof,
    winning_proof: filecoin_proofs_api::RegisteredPoStProof,
    window_proof: filecoin_proofs_api::RegisteredPoStProof,
    update_proof: filecoin_proofs_api::RegisteredUpdateProof,
) -> Result<(KindInput, KindInput, KindInput, KindInput)> {
    use filecoin_proofs_api::post;
    use filecoin_proofs_api::update;
    let sector_dir = work.join("sector");
    let _ = fs::remove_dir_all(&sector_dir);
    let cache = sector_dir.join("cache");
    fs::create_dir_all(&cache)?;
    let (staged, sealed) = (sector_dir.join("staged"), sector_dir.join("sealed"));
    let mut rng = ChaCha20Rng::from_seed([11; 32]);
    let sector_size = u64::from(seal_proof.sector_size());
    let unpadded = UnpaddedBytesAmount::from(filecoin_proofs::PaddedBytesAmount(sector_size));
    let stage = |path: &Path, rng: &mut ChaCha20Rng| -> Result<filecoin_proofs_api::PieceInfo> {
        let mut data = vec![0u8; u64::from(unpadded) as usize];
        rng.fill_bytes(&mut data);
        let mut f = fs::OpenOptions::new().read(true).write(true).create(true).truncate(true).open(path)?;
        let (piece, _) = api::add_piece(seal_proof, Cursor::new(&data), &mut f, unpadded, &[])?;
        Ok(piece)
    };
    let piece = stage(&staged, &mut rng)?;
    fs::File::create(&sealed)?;
    let mut ticket = [0u8; 32];
    rng.fill_bytes(&mut ticket);
    ticket[31] &= 0x3f;
    let prover_id = prover_id_from_miner(FIXTURE_MINER_ID);
    let sector = SectorId::from(FIXTURE_SECTOR_ID);
    let p1 = api::seal_pre_commit_phase1(seal_proof, &cache, &staged, &sealed, prover_id, sector, ticket, &[piece.clone()])?;
    let p2 = api::seal_pre_commit_phase2(p1, &cache, &sealed)?;
    let comm_r = p2.comm_r;

    let mut input = |kind: &str, proof: filecoin_proofs_api::RegisteredPoStProof, wire: u64| -> Result<KindInput> {
        let mut randomness = [0u8; 32];
        rng.fill_bytes(&mut randomness);
        randomness[31] &= 0x3f;
        let challenges = post::generate_fallback_sector_challenges(proof, &randomness, &[sector], prover_id)?;
        let replica = filecoin_proofs_api::PrivateReplicaInfo::new(proof, comm_r, cache.clone(), sealed.clone());
        let vanilla = post::generate_single_vanilla_proof(proof, sector, &replica, &challenges[&sector])?;
        Ok(KindInput {
            kind: kind.into(),
            registered_proof: wire,
            sector_size,
            miner_id: FIXTURE_MINER_ID,
            sector_id: FIXTURE_SECTOR_ID,
            randomness: randomness.to_vec(),
            partition_index: 0,
            vanilla_proofs: vec![vanilla],
            comm_r_old: Vec::new(),
            comm_r_new: Vec::new(),
            comm_d_new: Vec::new(),
            comm_r: comm_r.to_vec(),
        })
    };
    let winning = input("winning", winning_proof, crate::post::post_proof_to_wire(winning_proof))?;
    let window = input("window", window_proof, crate::post::post_proof_to_wire(window_proof))?;
    let window_v1_proof = match window_proof.sector_size().0 {
        0x80_0000 => filecoin_proofs_api::RegisteredPoStProof::StackedDrgWindow8MiBV1,
        _ => filecoin_proofs_api::RegisteredPoStProof::StackedDrgWindow2KiBV1,
    };
    let window_v1 = input("window", window_v1_proof, crate::post::post_proof_to_wire(window_v1_proof))?;

    let (new_staged, new_replica, new_cache) =
        (sector_dir.join("new-staged"), sector_dir.join("new-sealed"), sector_dir.join("new-cache"));
    fs::create_dir_all(&new_cache)?;
    let new_piece = stage(&new_staged, &mut rng)?;
    fs::File::create(&new_replica)?.set_len(sector_size)?;
    let encoded = update::empty_sector_update_encode_into(
        update_proof, &new_replica, &new_cache, &sealed, &cache, &new_staged, &[new_piece],
    )?;
    let partitions = update::generate_partition_proofs(
        update_proof, comm_r, encoded.comm_r_new, encoded.comm_d_new, &sealed, &cache, &new_replica, &new_cache,
    )?;
    let snap = KindInput {
        kind: "snap".into(),
        registered_proof: crate::snap::update_proof_to_wire(update_proof),
        sector_size,
        miner_id: FIXTURE_MINER_ID,
        sector_id: FIXTURE_SECTOR_ID,
        randomness: Vec::new(),
        partition_index: 0,
        vanilla_proofs: partitions.into_iter().map(|p| p.0).collect(),
        comm_r_old: comm_r.to_vec(),
        comm_r_new: encoded.comm_r_new.to_vec(),
        comm_d_new: encoded.comm_d_new.to_vec(),
        comm_r: comm_r.to_vec(),
    };
    let _ = fs::remove_dir_all(&sector_dir);
    Ok((winning, window, window_v1, snap))
}
