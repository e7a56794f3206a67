//! Panic containment: a panic inside a runner stage, or in a library it calls, is a bug, but
//! it must cost one job, never a thread of the engine. Each stage runs through [`contained`];
//! a panic becomes that job's [`RunError::Panicked`] (with the panic's message), the stage's
//! caller releases what the job held as on any failure, and the thread goes on to the next
//! job. Without this a panicking synthesis thread dies silently and its job stays
//! "synthesizing" forever, with every later job queued behind it.
//!
//! What stays true: locks are taken poison-tolerant everywhere in the engine (a panic while
//! holding one leaves state that the failure path then cleans up), and the release profile
//! must unwind (`panic = "abort"` would turn every contained panic into a crash).

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::error::RunError;

/// Runs one stage of a job (`stage` names it in the message); a panic becomes
/// [`RunError::Panicked`].
pub fn contained<T>(stage: &'static str, f: impl FnOnce() -> Result<T, RunError>) -> Result<T, RunError> {
    // AssertUnwindSafe: what the closure touches is either the job's own (dropped on the
    // failure path) or engine state behind poison-tolerant locks.
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|payload| {
        let message = panic_message(&*payload);
        log::error!("{stage} stage panicked: {message}");
        Err(RunError::Panicked { stage, message })
    })
}

/// The text of a panic payload (`panic!("...")` gives a `&str` or a `String`).
pub fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_the_stages_error_and_results_pass_through() {
        let e = contained::<()>("synthesize", || panic!("index out of bounds: the len is 3 but the index is 7"))
            .unwrap_err();
        let text = e.to_string();
        assert!(text.contains("synthesize stage panicked") && text.contains("the index is 7"), "{text}");
        let n = 5;
        let e = contained::<()>("prove", || panic!("partition {n} gone")).unwrap_err();
        assert!(e.to_string().contains("partition 5 gone"), "{e}");
        assert_eq!(contained("plan", || Ok::<_, RunError>(7)).unwrap(), 7);
        assert!(matches!(contained::<()>("plan", || Err(RunError::Cancelled)), Err(RunError::Cancelled)));
    }
}
