//! What the fuzz targets share: a scratch directory per target and process, on tmpfs when the
//! machine has one (the targets write files on every input, and fsync there is free).

use std::path::{Path, PathBuf};

/// `/dev/shm/cuzk-fuzz-<target>-<pid>` (or under the temp dir), created empty. Directories
/// left by earlier runs of the same target whose process is gone are removed first: libFuzzer
/// ends with `exit()`, so no destructor of ours cleans up after it.
pub fn scratch_dir(target: &str) -> PathBuf {
    let base = if Path::new("/dev/shm").is_dir() {
        PathBuf::from("/dev/shm")
    } else {
        std::env::temp_dir()
    };
    let prefix = format!("cuzk-fuzz-{target}-");
    if let Ok(entries) = std::fs::read_dir(&base) {
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let stale = name
                .strip_prefix(&prefix)
                .and_then(|pid| pid.parse::<u32>().ok())
                .is_some_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if stale {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let dir = base.join(format!("{prefix}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("scratch dir {}: {e}", dir.display()));
    dir
}

/// Empties `dir` (keeping it), for the next input.
pub fn clear_dir(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("scratch dir {}: {e}", dir.display()));
}

/// The real PoRep runner over an empty parameter directory under `dir` (every job that gets
/// as far as its parameters fails there, which is what the targets want). Once per process:
/// it fixes filecoin-proofs' parameter directory.
pub fn porep_runner_without_params(dir: &Path) -> cuzk_filecoin::FilecoinRunner {
    let params = dir.join("params");
    std::fs::create_dir_all(&params).unwrap_or_else(|e| panic!("params dir {}: {e}", params.display()));
    cuzk_filecoin::FilecoinRunner::new(&params, None).expect("runner")
}
