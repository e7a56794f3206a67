//! Parameter files by Filecoin's naming, and the process-wide parameter directory that
//! filecoin-proofs reads (verifying keys for `verify_seal`, generation of test parameters).

use std::path::{Path, PathBuf};

use filecoin_proofs_api::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};
use filecoin_proofs::with_shape;
use storage_proofs_core::merkle::MerkleTreeTrait;
use storage_proofs_core::parameter_cache::{parameter_cache_params_path, CacheableParameters};

/// Where production parameters live. Test parameters carry the same file names with other
/// contents, so fixtures must never be written here.
pub const PRODUCTION_PARAM_DIR: &str = "/var/tmp/filecoin-proof-parameters";

#[derive(Debug, thiserror::Error)]
pub enum ParamDirError {
    #[error(
        "the parameter directory is already {current} for this process; cannot switch to {wanted} \
         (filecoin-proofs reads it once per process)"
    )]
    AlreadySet { current: String, wanted: String },
    #[error("refusing to write test parameters into {0}, where production parameters live")]
    ProductionDir(String),
    #[error("cannot name the parameter file of {proof}: {reason}")]
    Naming { proof: String, reason: String },
}

/// Points filecoin-proofs at `params` (FIL_PROOFS_PARAMETER_CACHE) and, when given, at
/// `parents` (FIL_PROOFS_PARENT_CACHE) for this process. filecoin-proofs reads its settings
/// once, so this must come before its first use; calling again with the same directories is
/// fine, with other ones is an error.
pub fn use_proof_dirs(params: &Path, parents: Option<&Path>) -> Result<(), ParamDirError> {
    use storage_proofs_core::settings::SETTINGS;
    std::env::set_var("FIL_PROOFS_PARAMETER_CACHE", params);
    if let Some(parents) = parents {
        std::env::set_var("FIL_PROOFS_PARENT_CACHE", parents);
    }
    let fixed = [
        (SETTINGS.parameter_cache.as_str(), Some(params)),
        (SETTINGS.parent_cache.as_str(), parents),
    ];
    for (current, wanted) in fixed {
        if let Some(wanted) = wanted {
            if Path::new(current) != wanted {
                return Err(ParamDirError::AlreadySet {
                    current: current.to_string(),
                    wanted: wanted.display().to_string(),
                });
            }
        }
    }
    Ok(())
}

/// The `.params` file of a seal proof in `dir`, by Filecoin's naming
/// (`v28-stacked-proof-of-replication-...-<hash>.params`).
pub fn seal_params_path(dir: &Path, proof: RegisteredSealProof) -> Result<PathBuf, ParamDirError> {
    in_dir(dir, format!("{proof:?}"), proof.cache_params_path())
}

/// The `.params` file of a PoSt proof type in `dir` (`v28-proof-of-spacetime-fallback-...`;
/// WindowPoSt API 1.0 and 1.2 share one).
pub fn post_params_path(dir: &Path, proof: RegisteredPoStProof) -> Result<PathBuf, ParamDirError> {
    in_dir(dir, format!("{proof:?}"), proof.cache_params_path())
}

/// The `.params` file of a sector update proof type in `dir` (`v28-empty-sector-update-...`),
/// named as filecoin-proofs' update prover finds it (filecoin-proofs-api's
/// `RegisteredUpdateProof::cache_params_path` names the PoRep file of the sector size).
pub fn update_params_path(dir: &Path, proof: RegisteredUpdateProof) -> Result<PathBuf, ParamDirError> {
    fn named<Tree: 'static + MerkleTreeTrait<Hasher = filecoin_proofs::TreeRHasher>>(bytes: u64) -> anyhow::Result<PathBuf> {
        let pp = storage_proofs_update::PublicParams::from_sector_size(bytes);
        let id = <storage_proofs_update::EmptySectorUpdateCompound<Tree> as CacheableParameters<
            storage_proofs_update::EmptySectorUpdateCircuit<Tree>,
            _,
        >>::cache_identifier(&pp);
        Ok(parameter_cache_params_path(&id))
    }
    let bytes = u64::from(proof.sector_size());
    in_dir(dir, format!("{proof:?}"), with_shape!(bytes, named, bytes))
}

fn in_dir(dir: &Path, proof: String, named: anyhow::Result<PathBuf>) -> Result<PathBuf, ParamDirError> {
    let named = named.map_err(|e| ParamDirError::Naming { proof: proof.clone(), reason: e.to_string() })?;
    let file = named.file_name().ok_or_else(|| ParamDirError::Naming {
        proof,
        reason: format!("{} has no file name", named.display()),
    })?;
    Ok(dir.join(file))
}

/// The `.vk` file next to [`seal_params_path`].
pub fn seal_vk_path(dir: &Path, proof: RegisteredSealProof) -> Result<PathBuf, ParamDirError> {
    Ok(seal_params_path(dir, proof)?.with_extension("vk"))
}
