//! The durable spool: what makes "nothing accepted is lost" true.
//!
//! Why files and not a database: the records are few (one per job in flight or result not
//! yet collected), written once and deleted once, and a directory of small files is easy to
//! inspect and repair by hand on an appliance. Every write goes to `tmp/`, is fsync'd,
//! renamed into place and the directory fsync'd, so a crash leaves either the old file or
//! the new one, never half of one.
//!
//! Layout under `<state_dir>/spool/` (file names are the hex of the job id, so any id is a
//! safe name):
//!
//! ```text
//! jobs/<hex>.req        the accepted request (JSON); present until the job has a result
//! jobs/<hex>.attempts   how many times the job was started (decimal); absent = never
//! results/<hex>.json    the result; present until fetched-and-expired or its TTL passed
//! tmp/                  partial writes; emptied at start
//! ```
//!
//! Invariants: a request file exists before `submit` returns; a result file is written before
//! the request file is removed (a crash in between leaves both, and the result wins at
//! recovery); the attempts file is written before a job starts running.
//!
//! What is not here: partial work. A job's partition proofs live in memory until the job
//! ends; after a crash the job runs again from its request, every partition of it (the
//! choice: keeping partition proofs would tie each to its job's exact input and parameters
//! for at most one job's partitions of work saved).

use std::fs::{self, File};
use std::io::{BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde::{Deserialize, Serialize};

use crate::error::EngineError;
use crate::job::{JobRequest, JobResult, Priority, ProofKind};

/// One accepted job as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SpooledJob {
    pub job_id: String,
    /// Order of acceptance (FIFO within a priority survives a restart).
    pub seq: u64,
    pub priority: Priority,
    pub accepted_unix_ms: u64,
    /// [`JobRequest::content_digest`]; absent in records written before digests existed.
    #[serde(default)]
    pub digest: Option<String>,
    /// [`JobRequest::payload_bytes`], so that recovery need not read the payload.
    #[serde(default)]
    pub payload_bytes: u64,
    pub request: JobRequest,
}

/// The same, borrowed, for writing without copying the payload.
#[derive(Serialize)]
pub struct SpooledJobRef<'a> {
    pub job_id: &'a str,
    pub seq: u64,
    pub priority: Priority,
    pub accepted_unix_ms: u64,
    pub digest: &'a str,
    pub payload_bytes: u64,
    pub request: &'a JobRequest,
}

/// A spooled job as recovery reads it: everything but the payload, which stays on disk
/// until the job is planned (a restart with hundreds of 50 MB PoRep inputs waiting must not
/// read them all into memory). The payload fields are skipped while parsing, never stored.
#[derive(Clone, Debug, Deserialize)]
pub struct SpooledHeader {
    pub job_id: String,
    pub seq: u64,
    pub priority: Priority,
    pub accepted_unix_ms: u64,
    pub digest: Option<String>,
    #[serde(default)]
    pub payload_bytes: u64,
    pub request: RequestKind,
}

/// The one field of a spooled request that recovery needs.
#[derive(Clone, Debug, Deserialize)]
pub struct RequestKind {
    pub kind: ProofKind,
}

/// What [`Spool::recover`] found.
#[derive(Debug, Default)]
pub struct Recovered {
    /// Jobs without a result, with their attempt counts (their payloads stay on disk).
    pub jobs: Vec<(SpooledHeader, u32)>,
    pub results: Vec<JobResult>,
    /// Files that could not be read (named, with the reason); they are moved aside to
    /// `corrupt/` so that they are not lost and do not block the start.
    pub unreadable: Vec<String>,
}

pub struct Spool {
    root: PathBuf,
    tmp_counter: AtomicU64,
}

fn io(path: &Path, action: &'static str) -> impl FnOnce(std::io::Error) -> EngineError {
    let path = path.to_path_buf();
    move |source| EngineError::Spool {
        path,
        action,
        source,
    }
}

fn hex(id: &str) -> String {
    id.bytes().map(|b| format!("{b:02x}")).collect()
}

impl Spool {
    /// Opens (creating) the spool under `state_dir/spool`.
    pub fn open(state_dir: &Path) -> Result<Spool, EngineError> {
        let root = state_dir.join("spool");
        for sub in ["jobs", "results", "tmp", "corrupt"] {
            let d = root.join(sub);
            fs::create_dir_all(&d).map_err(io(&d, "creating directory"))?;
        }
        let tmp = root.join("tmp");
        for entry in fs::read_dir(&tmp).map_err(io(&tmp, "listing"))?.flatten() {
            let _ = fs::remove_file(entry.path());
        }
        Ok(Spool {
            root,
            tmp_counter: AtomicU64::new(0),
        })
    }

    fn req_path(&self, id: &str) -> PathBuf {
        self.root.join("jobs").join(format!("{}.req", hex(id)))
    }
    fn attempts_path(&self, id: &str) -> PathBuf {
        self.root.join("jobs").join(format!("{}.attempts", hex(id)))
    }
    fn result_path(&self, id: &str) -> PathBuf {
        self.root.join("results").join(format!("{}.json", hex(id)))
    }

    /// Write-fsync-rename-fsync(dir).
    fn write_atomic(&self, dest: &Path, bytes: &[u8]) -> Result<(), EngineError> {
        let n = self.tmp_counter.fetch_add(1, Ordering::Relaxed);
        let tmp = self
            .root
            .join("tmp")
            .join(format!("{}.{n}", std::process::id()));
        let mut f = File::create(&tmp).map_err(io(&tmp, "creating"))?;
        f.write_all(bytes).map_err(io(&tmp, "writing"))?;
        f.sync_all().map_err(io(&tmp, "fsync"))?;
        drop(f);
        fs::rename(&tmp, dest).map_err(io(dest, "renaming into place"))?;
        if let Some(dir) = dest.parent() {
            File::open(dir)
                .and_then(|d| d.sync_all())
                .map_err(io(dir, "fsync of the directory"))?;
        }
        Ok(())
    }

    fn remove(&self, path: &Path) -> Result<(), EngineError> {
        match fs::remove_file(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io(path, "removing")(e)),
        }
    }

    pub fn put_job(&self, job: &SpooledJobRef<'_>) -> Result<(), EngineError> {
        let path = self.req_path(job.job_id);
        let bytes = serde_json::to_vec(job).map_err(|e| EngineError::Spool {
            path: path.clone(),
            action: "encoding the request",
            source: std::io::Error::other(e),
        })?;
        self.write_atomic(&path, &bytes)
    }

    /// Reads an accepted request back (the engine keeps large payloads only here).
    pub fn get_job(&self, id: &str) -> Result<SpooledJob, EngineError> {
        let path = self.req_path(id);
        let bytes = fs::read(&path).map_err(io(&path, "reading the request"))?;
        serde_json::from_slice(&bytes).map_err(|e| EngineError::Spool {
            path,
            action: "decoding the request",
            source: std::io::Error::other(e),
        })
    }

    pub fn put_attempts(&self, id: &str, attempts: u32) -> Result<(), EngineError> {
        self.write_atomic(&self.attempts_path(id), attempts.to_string().as_bytes())
    }

    /// Stores the result, then forgets the request (in this order: see the module doc).
    pub fn put_result(&self, result: &JobResult) -> Result<(), EngineError> {
        let path = self.result_path(&result.job_id);
        let bytes = serde_json::to_vec(result).map_err(|e| EngineError::Spool {
            path: path.clone(),
            action: "encoding the result",
            source: std::io::Error::other(e),
        })?;
        self.write_atomic(&path, &bytes)?;
        self.remove(&self.req_path(&result.job_id))?;
        self.remove(&self.attempts_path(&result.job_id))
    }

    pub fn remove_result(&self, id: &str) -> Result<(), EngineError> {
        self.remove(&self.result_path(id))
    }

    /// Forgets a job that never got a result (its spooling failed half-way).
    pub fn remove_job(&self, id: &str) -> Result<(), EngineError> {
        self.remove(&self.req_path(id))?;
        self.remove(&self.attempts_path(id))
    }

    pub fn has_result(&self, id: &str) -> bool {
        self.result_path(id).exists()
    }

    fn quarantine(&self, path: &Path, why: String, out: &mut Recovered) {
        let name = path
            .file_name()
            .map(|n| n.to_os_string())
            .unwrap_or_default();
        let dest = self.root.join("corrupt").join(name);
        let _ = fs::rename(path, &dest);
        out.unreadable.push(format!(
            "{}: {why} (moved to {})",
            path.display(),
            dest.display()
        ));
    }

    /// Reads everything back after a start.
    pub fn recover(&self) -> Result<Recovered, EngineError> {
        let mut out = Recovered::default();
        let results_dir = self.root.join("results");
        for entry in fs::read_dir(&results_dir)
            .map_err(io(&results_dir, "listing"))?
            .flatten()
        {
            let path = entry.path();
            match fs::read(&path)
                .map_err(|e| e.to_string())
                .and_then(|b| serde_json::from_slice::<JobResult>(&b).map_err(|e| e.to_string()))
            {
                Ok(r) => out.results.push(r),
                Err(why) => self.quarantine(&path, why, &mut out),
            }
        }
        let jobs_dir = self.root.join("jobs");
        for entry in fs::read_dir(&jobs_dir)
            .map_err(io(&jobs_dir, "listing"))?
            .flatten()
        {
            let path = entry.path();
            if path.extension().and_then(|e| e.to_str()) != Some("req") {
                continue;
            }
            let header = File::open(&path).map_err(|e| e.to_string()).and_then(|f| {
                serde_json::from_reader::<_, SpooledHeader>(BufReader::new(f)).map_err(|e| e.to_string())
            });
            let job = match header {
                // Written before digests: read it whole, once, to compute them.
                Ok(h) if h.digest.is_none() => fs::read(&path)
                    .map_err(|e| e.to_string())
                    .and_then(|b| serde_json::from_slice::<SpooledJob>(&b).map_err(|e| e.to_string()))
                    .map(|j| SpooledHeader {
                        digest: Some(j.request.content_digest()),
                        payload_bytes: j.request.payload_bytes(),
                        ..h
                    }),
                other => other,
            };
            let job = match job {
                Ok(j) => j,
                Err(why) => {
                    self.quarantine(&path, why, &mut out);
                    continue;
                }
            };
            if self.has_result(&job.job_id) {
                // Crashed between storing the result and removing the request.
                self.remove_job(&job.job_id)?;
                continue;
            }
            let attempts = fs::read_to_string(self.attempts_path(&job.job_id))
                .ok()
                .and_then(|s| s.trim().parse::<u32>().ok())
                .unwrap_or(0);
            out.jobs.push((job, attempts));
        }
        out.jobs.sort_by_key(|(j, _)| j.seq);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::job::{JobStatus, ProofKind, StageTimings};

    fn put(s: &Spool, id: &str, seq: u64) {
        let request = JobRequest::porep(id, b"{}".to_vec(), 1000, 1);
        s.put_job(&SpooledJobRef {
            job_id: id,
            seq,
            priority: Priority::Normal,
            accepted_unix_ms: 1,
            digest: &request.content_digest(),
            payload_bytes: request.payload_bytes(),
            request: &request,
        })
        .unwrap();
    }

    #[test]
    fn jobs_attempts_and_results_come_back_and_result_wins() {
        let dir = tempfile::tempdir().unwrap();
        let s = Spool::open(dir.path()).unwrap();
        put(&s, "b/../weird id", 2);
        put(&s, "a", 1);
        s.put_attempts("a", 2).unwrap();
        put(&s, "done", 3);
        let r = JobResult {
            job_id: "done".into(),
            kind: ProofKind::PoRepSealCommit,
            priority: Priority::Normal,
            status: JobStatus::Completed,
            proof: vec![1; 192],
            error: None,
            timings: StageTimings::default(),
            finished_unix_ms: 5,
            attempts: 1,
            digest: None,
        };
        // Simulate a crash between the result write and the request removal.
        s.write_atomic(&s.result_path("done"), &serde_json::to_vec(&r).unwrap())
            .unwrap();
        fs::write(s.root.join("jobs").join("zz.req"), b"{garbage").unwrap();

        let s = Spool::open(dir.path()).unwrap();
        let rec = s.recover().unwrap();
        let ids: Vec<_> = rec
            .jobs
            .iter()
            .map(|(j, a)| (j.job_id.as_str(), *a))
            .collect();
        assert_eq!(ids, vec![("a", 2), ("b/../weird id", 0)]);
        assert_eq!(rec.results, vec![r]);
        assert_eq!(rec.unreadable.len(), 1, "{:?}", rec.unreadable);
        assert!(!s.req_path("done").exists());
        let digest = JobRequest::porep("a", b"{}".to_vec(), 1000, 1).content_digest();
        assert_eq!(rec.jobs[0].0.digest.as_deref(), Some(digest.as_str()));
        assert_eq!(rec.jobs[0].0.payload_bytes, 2);
    }

    /// A record from before digests gets its digest at recovery; a record whose header is
    /// fine but whose payload is not base64 is still read by the header (and fails when the
    /// job reads its payload); a truncated one is set aside.
    #[test]
    fn old_and_damaged_records() {
        let dir = tempfile::tempdir().unwrap();
        let s = Spool::open(dir.path()).unwrap();
        let request = JobRequest::porep("old", b"c1".to_vec(), 1000, 1);
        let old = serde_json::json!({
            "job_id": "old", "seq": 4, "priority": "Normal", "accepted_unix_ms": 1,
            "request": serde_json::to_value(&request).unwrap(),
        });
        fs::write(s.req_path("old"), serde_json::to_vec(&old).unwrap()).unwrap();
        put(&s, "cut", 5);
        let bytes = fs::read(s.req_path("cut")).unwrap();
        fs::write(s.req_path("cut"), &bytes[..bytes.len() / 2]).unwrap();
        let rec = s.recover().unwrap();
        assert_eq!(rec.jobs.len(), 1, "{:?}", rec.jobs);
        assert_eq!(rec.jobs[0].0.digest.as_deref(), Some(request.content_digest().as_str()));
        assert_eq!(rec.jobs[0].0.payload_bytes, 2);
        assert_eq!(rec.unreadable.len(), 1, "{:?}", rec.unreadable);
        assert!(rec.unreadable[0].contains("corrupt"), "{:?}", rec.unreadable);
    }
}
