//! Test fixtures: Groth16 parameters from random toxic waste and a really sealed small
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
use storage_proofs_core::compound_proof::CompoundProof;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_porep::stacked::{StackedCompound, StackedDrg};

use crate::c1;
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

fn refuse_production_dir(dir: &Path) -> Result<()> {
    let abs = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if abs.starts_with(PRODUCTION_PARAM_DIR) {
        bail!(crate::params::ParamDirError::ProductionDir(abs.display().to_string()));
    }
    Ok(())
}

/// Makes (or reuses) the fixture for `sector_size` in `dir`. Points this process's
/// filecoin-proofs at the fixture's parameter and parent directories.
pub fn ensure_fixture(dir: &Path, sector_size: u64) -> Result<Fixture> {
    refuse_production_dir(dir)?;
    let proof = fixture_proof(sector_size)?;
    fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let dir = fs::canonicalize(dir)?;
    let (params, parents) = (dir.join("params"), dir.join("parents"));
    fs::create_dir_all(&params)?;
    fs::create_dir_all(&parents)?;
    use_proof_dirs(&params, Some(&parents))?;

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
        let config = proof.as_v1_config();
        with_shape!(sector_size, generate_params, &config)?;
    }
    fixture.param_time = start.elapsed();

    let start = Instant::now();
    let c1_json = seal_sector(&dir, proof, fixture.identity())?;
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
    cuzk_groth16::Srs::shape(&p).is_ok() && vk.is_file()
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

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    fs::rename(&tmp, path).with_context(|| format!("renaming to {}", path.display()))?;
    Ok(())
}

/// Generates Groth16 parameters and the verifying key with filecoin-proofs' own parameter
/// cache (random toxic waste: test use only).
fn generate_params<Tree: 'static + MerkleTreeTrait>(config: &PoRepConfig) -> Result<()> {
    let pp = public_params::<Tree>(config)?;
    let mut rng = rand::rngs::OsRng;
    type Compound<Tree> = StackedCompound<Tree, DefaultPieceHasher>;
    <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::groth_params(
        Some(&mut rng),
        &pp,
    )?;
    <Compound<Tree> as CompoundProof<StackedDrg<'_, Tree, DefaultPieceHasher>, _>>::verifying_key(
        Some(&mut rng),
        &pp,
    )?;
    Ok(())
}

/// Seals one sector of random data and returns its C1 output as JSON.
fn seal_sector(dir: &Path, proof: RegisteredSealProof, id: SectorIdentity) -> Result<Vec<u8>> {
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

    let p1 = api::seal_pre_commit_phase1(
        proof, &cache, &staged, &sealed, id.prover_id, sector, ticket, &pieces,
    )?;
    let p2 = api::seal_pre_commit_phase2(p1, &cache, &sealed)?;
    let c1: SealCommitPhase1Output =
        api::seal_commit_phase1(&cache, &sealed, id.prover_id, sector, ticket, seed, p2, &pieces)?;
    ensure!(c1.registered_proof == proof, "sealed with an unexpected proof type");
    let json = serde_json::to_vec(&c1)?;
    let _ = fs::remove_dir_all(&work);
    Ok(json)
}
