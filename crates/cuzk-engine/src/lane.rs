//! The urgent lane: the synthesis threads that take High and Critical jobs
//! (`EngineConfig::urgent_synthesis_workers`), so that they never wait for the CPU behind bulk
//! synthesis. The engine marks its threads; a runner asks whether it runs on one.

thread_local! {
    static URGENT_LANE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Marks the calling thread as one of the urgent lane's synthesis threads (the engine's
/// `urgent_synthesis_workers`).
pub(crate) fn mark_urgent_lane() {
    URGENT_LANE.with(|u| u.set(true));
}

/// Whether [`crate::runner::PreparedJob::synthesize`] (or another stage) runs on a synthesis thread of the
/// urgent lane: a job of priority High or Critical that should not wait for the CPU behind
/// bulk synthesis. A runner may then synthesize at a higher CPU priority (cuzk-filecoin's
/// runner uses a thread pool of its own at the process's priority).
pub fn on_urgent_lane() -> bool {
    URGENT_LANE.with(|u| u.get())
}
