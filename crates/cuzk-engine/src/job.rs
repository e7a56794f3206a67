//! What a job is: its request (a mirror of `cuzk.v1.SubmitProofRequest`, so the daemon maps
//! the wire message field by field), its kind and priority, the states it goes through, and
//! the result it ends with.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::EngineError;

/// The longest request id accepted. Ids name spool files (hex-encoded), and a file name has
/// at most 255 bytes.
pub const MAX_REQUEST_ID_BYTES: usize = 120;

/// The proof kinds of the wire protocol (`cuzk.v1.ProofKind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ProofKind {
    PoRepSealCommit,
    SnapDealsUpdate,
    WindowPostPartition,
    WinningPost,
}

impl ProofKind {
    pub const ALL: [ProofKind; 4] = [
        ProofKind::PoRepSealCommit,
        ProofKind::SnapDealsUpdate,
        ProofKind::WindowPostPartition,
        ProofKind::WinningPost,
    ];

    /// From the wire enum value (1..=4). 0 (unspecified) and unknown values are refused with
    /// a message naming the field.
    pub fn from_wire(value: i32) -> Result<ProofKind, EngineError> {
        match value {
            1 => Ok(ProofKind::PoRepSealCommit),
            2 => Ok(ProofKind::SnapDealsUpdate),
            3 => Ok(ProofKind::WindowPostPartition),
            4 => Ok(ProofKind::WinningPost),
            0 => Err(EngineError::InvalidRequest(
                "proof_kind is PROOF_KIND_UNSPECIFIED (0); expected 1 POREP_SEAL_COMMIT, \
                 2 SNAP_DEALS_UPDATE, 3 WINDOW_POST_PARTITION or 4 WINNING_POST"
                    .into(),
            )),
            v => Err(EngineError::InvalidRequest(format!(
                "proof_kind {v} is unknown; expected 1 POREP_SEAL_COMMIT, 2 SNAP_DEALS_UPDATE, \
                 3 WINDOW_POST_PARTITION or 4 WINNING_POST"
            ))),
        }
    }

    pub fn wire(self) -> i32 {
        match self {
            ProofKind::PoRepSealCommit => 1,
            ProofKind::SnapDealsUpdate => 2,
            ProofKind::WindowPostPartition => 3,
            ProofKind::WinningPost => 4,
        }
    }

    /// The queue name of `cuzk.v1.QueueStatus.proof_kind` and of the metrics labels.
    pub fn queue_name(self) -> &'static str {
        match self {
            ProofKind::PoRepSealCommit => "porep-c2",
            ProofKind::SnapDealsUpdate => "snap-update",
            ProofKind::WindowPostPartition => "window-post",
            ProofKind::WinningPost => "winning-post",
        }
    }

    /// WinningPoSt has a deadline of seconds, WindowPoSt of minutes, the rest of hours.
    pub fn default_priority(self) -> Priority {
        match self {
            ProofKind::WinningPost => Priority::Critical,
            ProofKind::WindowPostPartition => Priority::High,
            ProofKind::PoRepSealCommit | ProofKind::SnapDealsUpdate => Priority::Normal,
        }
    }
}

/// Job priority; a higher one always starts first, FIFO within one priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Priority {
    Low,
    Normal,
    High,
    Critical,
}

impl Priority {
    /// From the wire enum value: 0 (unspecified) is `None` (the kind's default), 1..=4 a
    /// priority, anything else refused.
    pub fn from_wire(value: i32) -> Result<Option<Priority>, EngineError> {
        match value {
            0 => Ok(None),
            1 => Ok(Some(Priority::Low)),
            2 => Ok(Some(Priority::Normal)),
            3 => Ok(Some(Priority::High)),
            4 => Ok(Some(Priority::Critical)),
            v => Err(EngineError::InvalidRequest(format!(
                "priority {v} is unknown; expected 0 (kind default), 1 LOW, 2 NORMAL, 3 HIGH or \
                 4 CRITICAL"
            ))),
        }
    }

    pub const ALL: [Priority; 4] = [Priority::Low, Priority::Normal, Priority::High, Priority::Critical];

    /// Lower case, as metrics label it.
    pub fn name(self) -> &'static str {
        match self {
            Priority::Low => "low",
            Priority::Normal => "normal",
            Priority::High => "high",
            Priority::Critical => "critical",
        }
    }

    pub fn wire(self) -> i32 {
        match self {
            Priority::Low => 1,
            Priority::Normal => 2,
            Priority::High => 3,
            Priority::Critical => 4,
        }
    }
}

/// A proof request, field for field `cuzk.v1.SubmitProofRequest`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobRequest {
    /// Idempotency key and job id; empty means "generate one".
    pub request_id: String,
    pub kind: ProofKind,
    /// `None`: the kind's default ([`ProofKind::default_priority`]).
    pub priority: Option<Priority>,
    pub sector_size: u64,
    pub registered_proof: u64,
    /// PoRep: the C1 output, bare JSON or lotus-bench envelope.
    #[serde(with = "b64")]
    pub vanilla_proof: Vec<u8>,
    #[serde(with = "b64_vec")]
    pub vanilla_proofs: Vec<Vec<u8>>,
    pub sector_number: u64,
    pub miner_id: u64,
    #[serde(with = "b64")]
    pub randomness: Vec<u8>,
    pub partition_index: u32,
    #[serde(with = "b64")]
    pub comm_r_old: Vec<u8>,
    #[serde(with = "b64")]
    pub comm_r_new: Vec<u8>,
    #[serde(with = "b64")]
    pub comm_d_new: Vec<u8>,
}

impl JobRequest {
    /// A request of `kind` with every other field empty.
    pub fn new(kind: ProofKind) -> JobRequest {
        JobRequest {
            request_id: String::new(),
            kind,
            priority: None,
            sector_size: 0,
            registered_proof: 0,
            vanilla_proof: Vec::new(),
            vanilla_proofs: Vec::new(),
            sector_number: 0,
            miner_id: 0,
            randomness: Vec::new(),
            partition_index: 0,
            comm_r_old: Vec::new(),
            comm_r_new: Vec::new(),
            comm_d_new: Vec::new(),
        }
    }

    /// A PoRep C2 request for a C1 output (bare or envelope).
    pub fn porep(request_id: &str, c1: Vec<u8>, miner_id: u64, sector_number: u64) -> JobRequest {
        JobRequest {
            request_id: request_id.to_string(),
            vanilla_proof: c1,
            miner_id,
            sector_number,
            ..JobRequest::new(ProofKind::PoRepSealCommit)
        }
    }

    pub fn effective_priority(&self) -> Priority {
        self.priority
            .unwrap_or_else(|| self.kind.default_priority())
    }

    /// What binds a request id to its content (hex SHA-256): every field that decides the
    /// proof (kind, sizes, proof type, payloads, sector, miner, randomness, partition,
    /// commitments), each length-prefixed so that no two requests share an encoding. Not
    /// the request id, and not the priority: a retry of the same work may raise it.
    pub fn content_digest(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(b"cuzk-request-v1");
        field(&self.kind.wire().to_le_bytes());
        field(&self.sector_size.to_le_bytes());
        field(&self.registered_proof.to_le_bytes());
        field(&self.vanilla_proof);
        field(&(self.vanilla_proofs.len() as u64).to_le_bytes());
        for v in &self.vanilla_proofs {
            field(v);
        }
        field(&self.sector_number.to_le_bytes());
        field(&self.miner_id.to_le_bytes());
        field(&self.randomness);
        field(&self.partition_index.to_le_bytes());
        field(&self.comm_r_old);
        field(&self.comm_r_new);
        field(&self.comm_d_new);
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Bytes of payload the request carries (what the spool stores).
    pub fn payload_bytes(&self) -> u64 {
        let v: usize = self.vanilla_proofs.iter().map(Vec::len).sum();
        (self.vanilla_proof.len() + v + self.randomness.len()) as u64
    }
}

/// Where a job is. Events carry it; the terminal ones are also [`JobStatus`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JobState {
    /// Spooled, waiting for a synthesis slot and host memory.
    Queued,
    /// Started: its first partition's memory reserved; the CPU prepares the job (parsing)
    /// and synthesizes partitions.
    Synthesizing,
    /// A partition synthesized ahead, waiting for a worker; none proving yet.
    Synthesized,
    /// A partition reached a worker; from here until the job ends (its other partitions
    /// may still be synthesizing, and its last step assembles and verifies). The device
    /// lock is held only around kernels.
    Proving,
    Completed,
    Failed,
    Cancelled,
}

impl JobState {
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            JobState::Completed | JobState::Failed | JobState::Cancelled
        )
    }

    /// Lower-case name for logs, D-Bus and metrics.
    pub fn name(self) -> &'static str {
        match self {
            JobState::Queued => "queued",
            JobState::Synthesizing => "synthesizing",
            JobState::Synthesized => "synthesized",
            JobState::Proving => "proving",
            JobState::Completed => "completed",
            JobState::Failed => "failed",
            JobState::Cancelled => "cancelled",
        }
    }
}

/// How a job ended (`cuzk.v1.AwaitProofResponse.Status` 1..=3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum JobStatus {
    Completed,
    Failed,
    Cancelled,
}

impl JobStatus {
    pub fn state(self) -> JobState {
        match self {
            JobStatus::Completed => JobState::Completed,
            JobStatus::Failed => JobState::Failed,
            JobStatus::Cancelled => JobState::Cancelled,
        }
    }

    /// The wire value of `AwaitProofResponse.Status`.
    pub fn wire(self) -> i32 {
        match self {
            JobStatus::Completed => 1,
            JobStatus::Failed => 2,
            JobStatus::Cancelled => 3,
        }
    }
}

/// Where one job's time went. Stored with its result, in milliseconds on disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageTimings {
    /// From acceptance (or recovery) until synthesis started.
    #[serde(with = "ms")]
    pub queue_wait: Duration,
    /// Loading parameters (zero when they were resident).
    #[serde(with = "ms")]
    pub srs_load: Duration,
    /// CPU preparation: parsing, circuit construction, witness synthesis (the engine's
    /// synthesis stage plus what the runner reports from inside its proving step).
    #[serde(with = "ms")]
    pub synthesis: Duration,
    /// Waiting between synthesis and a free worker (lookahead slack).
    #[serde(with = "ms")]
    pub synthesized_wait: Duration,
    /// The proving step as a whole: wall time on the worker, SRS load excluded, and
    /// including any synthesis the runner does inside it (PoRep today, partition by
    /// partition; that part is also counted in `synthesis`).
    #[serde(with = "ms")]
    pub prove: Duration,
    /// Time inside backend kernels (NTT, MSM): the `gpu_compute_ms` of the wire.
    #[serde(with = "ms")]
    pub gpu_compute: Duration,
    /// Time waiting for the per-device lock.
    #[serde(with = "ms")]
    pub device_wait: Duration,
    /// Self-check of the proof before it is returned.
    #[serde(with = "ms")]
    pub verify: Duration,
    /// Acceptance (or recovery) to result.
    #[serde(with = "ms")]
    pub total: Duration,
}

/// The end of a job. `proof` is empty unless `status` is `Completed`; `error` names the
/// problem when it is `Failed` or `Cancelled`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobResult {
    pub job_id: String,
    pub kind: ProofKind,
    pub priority: Priority,
    pub status: JobStatus,
    #[serde(with = "b64")]
    pub proof: Vec<u8>,
    pub error: Option<String>,
    pub timings: StageTimings,
    /// Unix time in milliseconds.
    pub finished_unix_ms: u64,
    /// How many times the job was started (more than one after a crash).
    pub attempts: u32,
    /// [`JobRequest::content_digest`] of the request it answers; `None` in results stored
    /// before digests existed.
    #[serde(default)]
    pub digest: Option<String>,
}

/// What [`crate::Engine::submit`] answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submitted {
    pub job_id: String,
    /// True when the request id was already known: nothing new was queued.
    pub existing: bool,
    pub state: JobState,
    /// 1-based position among queued jobs (0 when not queued).
    pub queue_position: u32,
    /// The device proving it, when a known id is already on one (`assigned_gpu`).
    pub device: Option<String>,
}

/// What [`crate::Engine::await_job`] answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AwaitOutcome {
    Done(std::sync::Arc<JobResult>),
    /// The timeout passed; the job goes on.
    Timeout {
        state: JobState,
    },
}

/// What [`crate::Engine::cancel`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelOutcome {
    /// The job had not started; it is cancelled now.
    Dequeued,
    /// The job was running; it stops at its next stage boundary.
    Stopping,
    /// The job had already ended.
    AlreadyFinished(JobStatus),
}

impl CancelOutcome {
    /// `cuzk.v1.CancelProofResponse.was_running`.
    pub fn was_running(self) -> bool {
        matches!(self, CancelOutcome::Stopping)
    }
}

/// One state change, for the daemon's D-Bus `JobStateChanged(id, state)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobEvent {
    pub job_id: String,
    pub kind: ProofKind,
    pub state: JobState,
}

/// A short description of a job, for listings.
/// A started job's partitions: how many, proved, on a thread now (synthesizing or
/// proving), and synthesized, waiting for a worker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PartitionProgress {
    pub total: u32,
    pub proved: u32,
    pub in_flight: u32,
    pub waiting: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobInfo {
    pub job_id: String,
    pub kind: ProofKind,
    pub priority: Priority,
    pub state: JobState,
    pub attempts: u32,
    /// The worker's device while proving.
    pub device: Option<String>,
    pub error: Option<String>,
    /// Once started, until it ends.
    pub partitions: Option<PartitionProgress>,
}

mod ms {
    use serde::{Deserialize, Deserializer, Serializer};
    use std::time::Duration;

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis().min(u128::from(u64::MAX)) as u64)
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

mod b64 {
    use base64::Engine as _;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(D::Error::custom)
    }
}

mod b64_vec {
    use base64::Engine as _;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[Vec<u8>], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(
            v.iter()
                .map(|b| base64::engine::general_purpose::STANDARD.encode(b)),
        )
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Vec<u8>>, D::Error> {
        let v = Vec::<String>::deserialize(d)?;
        v.into_iter()
            .map(|s| {
                base64::engine::general_purpose::STANDARD
                    .decode(s)
                    .map_err(D::Error::custom)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_values_round_trip_and_bad_ones_name_the_field() {
        for k in ProofKind::ALL {
            assert_eq!(ProofKind::from_wire(k.wire()).unwrap(), k);
        }
        let e = ProofKind::from_wire(9).unwrap_err().to_string();
        assert!(e.contains("proof_kind 9 is unknown"), "{e}");
        assert!(ProofKind::from_wire(0)
            .unwrap_err()
            .to_string()
            .contains("UNSPECIFIED"));
        assert_eq!(Priority::from_wire(0).unwrap(), None);
        assert_eq!(Priority::from_wire(4).unwrap(), Some(Priority::Critical));
        assert!(Priority::from_wire(5)
            .unwrap_err()
            .to_string()
            .contains("priority 5"));
    }

    #[test]
    fn default_priorities_follow_deadlines() {
        assert_eq!(
            ProofKind::WinningPost.default_priority(),
            Priority::Critical
        );
        assert_eq!(
            ProofKind::WindowPostPartition.default_priority(),
            Priority::High
        );
        assert_eq!(
            ProofKind::PoRepSealCommit.default_priority(),
            Priority::Normal
        );
        assert_eq!(
            ProofKind::SnapDealsUpdate.default_priority(),
            Priority::Normal
        );
        assert!(Priority::Critical > Priority::High && Priority::High > Priority::Normal);
        assert!(Priority::Normal > Priority::Low);
    }

    #[test]
    fn the_digest_covers_the_content_but_not_the_id_or_priority() {
        let a = JobRequest::porep("porep-1000-1", b"c1 of sector 1".to_vec(), 1000, 1);
        let mut same = a.clone();
        same.request_id = "another id".into();
        same.priority = Some(Priority::Critical);
        assert_eq!(a.content_digest(), same.content_digest());
        let variants: Vec<Box<dyn Fn(&mut JobRequest)>> = vec![
            Box::new(|r| r.vanilla_proof.push(0)),
            Box::new(|r| r.sector_number = 2),
            Box::new(|r| r.miner_id = 1001),
            Box::new(|r| r.kind = ProofKind::SnapDealsUpdate),
            Box::new(|r| r.sector_size = 2048),
            Box::new(|r| r.registered_proof = 1),
            Box::new(|r| r.vanilla_proofs = vec![vec![]]),
            Box::new(|r| r.randomness = vec![1]),
            Box::new(|r| r.partition_index = 1),
            Box::new(|r| r.comm_r_old = vec![1]),
            Box::new(|r| r.comm_r_new = vec![1]),
            Box::new(|r| r.comm_d_new = vec![1]),
        ];
        let mut seen = std::collections::BTreeSet::from([a.content_digest()]);
        for (i, change) in variants.iter().enumerate() {
            let mut r = a.clone();
            change(&mut r);
            assert!(seen.insert(r.content_digest()), "variant {i} collides");
        }
        // Length prefixes: moving a byte between two fields changes the digest.
        let mut x = JobRequest::new(ProofKind::SnapDealsUpdate);
        x.comm_r_old = vec![1, 2];
        let mut y = x.clone();
        y.comm_r_old = vec![1];
        y.comm_r_new = vec![2];
        assert_ne!(x.content_digest(), y.content_digest());
    }

    #[test]
    fn request_survives_json_with_binary_payloads() {
        let mut r = JobRequest::porep("porep-1000-1", vec![0, 255, 7], 1000, 1);
        r.vanilla_proofs = vec![vec![1, 2], vec![]];
        let back: JobRequest = serde_json::from_slice(&serde_json::to_vec(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }
}
