//! What the engine reports: per job, per queue, per worker and device, memory and
//! parameters, for `GetStatus`, D-Bus properties, metrics and sd_notify STATUS=.

use std::time::Duration;

use tokio::sync::broadcast;

use super::queue::JobEntry;
use super::*;
use crate::residency::ResidentStatus;

/// Whether the engine starts new work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EngineState {
    Running,
    Paused,
    Draining,
    Stopped,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueueStatus {
    pub kind: ProofKind,
    pub pending: u32,
    /// `pending` by priority, in [`Priority::ALL`]'s order.
    pub pending_by_priority: [u32; 4],
    pub in_progress: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerStatus {
    pub device: String,
    pub job_id: Option<String>,
    pub kind: Option<ProofKind>,
    /// The partition of `job_id` it proves now.
    pub partition: Option<usize>,
}

/// Everything `GetStatus`, D-Bus properties and sd_notify STATUS= need.
#[derive(Clone, Debug)]
pub struct EngineStatus {
    pub state: EngineState,
    pub queues: Vec<QueueStatus>,
    pub running: u32,
    pub completed: u64,
    pub failed: u64,
    pub cancelled: u64,
    /// Per kind: jobs ended by outcome, partitions' and completed jobs' stage times.
    pub stats: crate::stats::Stats,
    pub uptime: Duration,
    /// The host budget and what partitions and their jobs have reserved from it; resident
    /// parameters share the budget and are listed, with their sizes, in `srs`.
    pub memory: MemoryStatus,
    pub srs: Vec<ResidentStatus>,
    pub workers: Vec<WorkerStatus>,
    pub devices: Vec<DeviceStatus>,
}

/// One device: its name and, for GPUs, its ordinal, its memory arena's and pinned pool's
/// counters, the jobs its workers prove now, and its health.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceStatus {
    pub name: String,
    pub ordinal: Option<u32>,
    pub memory: Option<MemoryStatus>,
    pub pinned: Option<MemoryStatus>,
    /// Jobs on this device's workers, with their kinds.
    pub jobs: Vec<(String, ProofKind)>,
    /// False from a device failure under a proof (a kernel, allocation or driver error)
    /// until a reload ([`Engine::reconfigure`]) gives it workers: its workers take no
    /// partitions meanwhile.
    pub healthy: bool,
    /// The last device failure (kept once healthy again), and how many there were.
    pub last_error: Option<String>,
    pub failures: u64,
}

impl EngineStatus {
    pub fn queue_depth(&self) -> u32 {
        self.queues.iter().map(|q| q.pending).sum()
    }

    /// No device with workers is healthy: no job starts and synthesized partitions wait,
    /// until a reload marks devices healthy again.
    pub fn no_healthy_device(&self) -> bool {
        !self.devices.iter().any(|d| d.healthy && self.workers.iter().any(|w| w.device == d.name))
    }
}

/// What [`Engine::drain`] achieved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainReport {
    /// All running work finished before the timeout.
    pub finished_in_time: bool,
    /// Jobs left in the spool for the next start.
    pub left_in_spool: usize,
    /// All engine threads have exited (the state directory is free again).
    pub threads_stopped: bool,
}

impl Engine {
    /// State changes of every job, as they happen.
    pub fn subscribe(&self) -> broadcast::Receiver<JobEvent> {
        self.shared.events.subscribe()
    }

    /// One job, while it is known (running, queued, or result not yet expired).
    pub fn job(&self, id: &str) -> Result<JobInfo, EngineError> {
        let s = lock(&self.shared.sched);
        let j = s
            .jobs
            .get(id)
            .ok_or_else(|| EngineError::NotFound(id.to_string()))?;
        Ok(self.info(id, j))
    }

    fn info(&self, id: &str, j: &JobEntry) -> JobInfo {
        JobInfo {
            job_id: id.to_string(),
            kind: j.kind,
            priority: j.priority,
            state: j.state,
            attempts: j.attempts,
            device: self.device_name(j),
            error: j.result.as_ref().and_then(|r| r.error.clone()),
            partitions: j.run.as_ref().map(|r| PartitionProgress {
                total: r.partitions as u32,
                proved: r.proved as u32,
                in_flight: (r.synthesizing + r.proving) as u32,
                waiting: r.ready.len() as u32,
            }),
        }
    }

    /// The device a job was given (while proving, and after).
    pub(super) fn device_name(&self, j: &JobEntry) -> Option<String> {
        j.device.and_then(|d| self.shared.devices.get(d)).map(|d| d.name.clone())
    }

    /// All known jobs, in queue order first, then the rest by id.
    pub fn list_jobs(&self) -> Vec<JobInfo> {
        let s = lock(&self.shared.sched);
        let mut v: Vec<(u8, u64, &String, &JobEntry)> = s
            .jobs
            .iter()
            .map(|(id, j)| (j.state.is_terminal() as u8, j.seq, id, j))
            .collect();
        v.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        v.into_iter()
            .map(|(_, _, id, j)| self.info(id, j))
            .collect()
    }

    pub fn status(&self) -> EngineStatus {
        let shared = &*self.shared;
        let s = lock(&shared.sched);
        let queues = ProofKind::ALL
            .iter()
            .map(|&kind| {
                // One pass over the queued jobs of the kind, by priority; `pending` is their sum.
                let mut pending_by_priority = [0u32; 4];
                for j in s.jobs.values().filter(|j| j.kind == kind && j.state == JobState::Queued) {
                    if let Some(i) = Priority::ALL.iter().position(|&p| p == j.priority) {
                        pending_by_priority[i] += 1;
                    }
                }
                (kind, pending_by_priority)
            })
            .map(|(kind, pending_by_priority)| QueueStatus {
                kind,
                pending: pending_by_priority.iter().sum(),
                pending_by_priority,
                in_progress: s
                    .jobs
                    .values()
                    .filter(|j| j.kind == kind && j.in_flight())
                    .count() as u32,
            })
            .collect();
        let state = if s.stopping {
            EngineState::Stopped
        } else if s.draining {
            EngineState::Draining
        } else if s.paused {
            EngineState::Paused
        } else {
            EngineState::Running
        };
        EngineStatus {
            state,
            queues,
            running: s.jobs.values().filter(|j| j.in_flight()).count() as u32,
            completed: s.completed,
            failed: s.failed,
            cancelled: s.cancelled,
            stats: s.stats.clone(),
            uptime: shared.started.elapsed(),
            memory: MemoryStatus {
                budget_bytes: self.cfg().host_memory_budget_bytes,
                in_use_bytes: s.mem_in_use,
                high_water_bytes: s.mem_high_water,
            },
            srs: shared.srs.status(),
            workers: s
                .worker_jobs
                .iter()
                .enumerate()
                .filter(|(w, id)| !s.worker_retired[*w] || id.is_some())
                .map(|(w, slot)| WorkerStatus {
                    device: shared.devices[s.worker_device[w]].name.clone(),
                    job_id: slot.as_ref().map(|(id, _)| id.clone()),
                    kind: slot.as_ref().and_then(|(id, _)| s.jobs.get(id)).map(|j| j.kind),
                    partition: slot.as_ref().map(|(_, k)| *k),
                })
                .collect(),
            devices: shared
                .devices
                .iter()
                .enumerate()
                .map(|(i, d)| DeviceStatus {
                    healthy: s.device_healthy(i),
                    last_error: s.device_health.get(i).and_then(|h| h.last_error.clone()),
                    failures: s.device_health.get(i).map_or(0, |h| h.failures),
                    name: d.name.clone(),
                    ordinal: d.ordinal,
                    memory: d.memory.as_ref().map(|probe| probe()),
                    pinned: d.pinned.as_ref().map(|probe| probe()),
                    jobs: s
                        .worker_jobs
                        .iter()
                        .enumerate()
                        .filter(|(w, _)| s.worker_device[*w] == i)
                        .filter_map(|(_, slot)| slot.as_ref())
                        .filter_map(|(id, _)| s.jobs.get(id).map(|j| (id.clone(), j.kind)))
                        .fold(Vec::new(), |mut jobs, job| {
                            // Two workers of a device may prove partitions of one job.
                            if !jobs.contains(&job) {
                                jobs.push(job);
                            }
                            jobs
                        }),
                })
                .collect(),
        }
    }

    /// Prometheus text exposition of [`Engine::status`].
    pub fn metrics_text(&self) -> String {
        crate::metrics::render(&self.status())
    }
}
