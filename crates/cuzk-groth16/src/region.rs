//! A device's kernel region: the one lock per device that work on it runs under, and the
//! cancel flag of the work running inside it.
//!
//! Whoever drives a device takes its [`DeviceLock`]: a backend with device state of its own
//! (the GPU's streams, staging buffers and arena) holds one and offers it through
//! [`crate::Backend::device_lock`], so that a scheduler serializing work on the device (the
//! engine's workers) takes that same lock instead of a second one of its own. The lock is
//! re-entrant on the thread that holds it: the scheduler holds it around a call, and the
//! backend enters it again inside without waiting for itself.
//!
//! Cancellation works the same way from the outside in: [`with_cancel`] makes a job's flag
//! the calling thread's cancel flag for the duration of a call, and a backend that works in
//! steps (MSM chunks, NTT passes) asks [`cancel_requested`] between them. Backends run every
//! step of a call on the calling thread, so the flag reaches all of them.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One device's lock, re-entrant on its holder's thread.
#[derive(Debug, Default)]
pub struct DeviceLock {
    lock: Mutex<()>,
    /// The holding thread's token, 0 when none holds it.
    owner: AtomicU64,
}

/// Holds a [`DeviceLock`] until dropped (an inner, re-entered guard holds nothing).
#[derive(Debug)]
pub struct RegionGuard<'a> {
    held: Option<(&'a DeviceLock, MutexGuard<'a, ()>)>,
}

thread_local! {
    static THREAD_TOKEN: Cell<u64> = const { Cell::new(0) };
    static CANCEL: RefCell<Vec<Arc<AtomicBool>>> = const { RefCell::new(Vec::new()) };
}

/// A non-zero number unique to the calling thread for the life of the process.
fn thread_token() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    THREAD_TOKEN.with(|t| {
        if t.get() == 0 {
            t.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}

impl DeviceLock {
    pub const fn new() -> DeviceLock {
        DeviceLock {
            lock: Mutex::new(()),
            owner: AtomicU64::new(0),
        }
    }

    /// Waits for the lock, unless this thread already holds it (then returns at once).
    pub fn enter(&self) -> RegionGuard<'_> {
        let me = thread_token();
        // Only this thread ever stores its own token, so reading it means this thread holds
        // the lock now.
        if self.owner.load(Ordering::Acquire) == me {
            return RegionGuard { held: None };
        }
        // A panic while the lock was held leaves no state behind that needs repair: the
        // region's owner is cleared by the guard's drop during unwinding.
        let guard = self.lock.lock().unwrap_or_else(|p| p.into_inner());
        self.owner.store(me, Ordering::Release);
        RegionGuard {
            held: Some((self, guard)),
        }
    }

    /// Whether the calling thread holds the lock.
    pub fn held_here(&self) -> bool {
        self.owner.load(Ordering::Acquire) == thread_token()
    }
}

impl Drop for RegionGuard<'_> {
    fn drop(&mut self) {
        if let Some((lock, guard)) = self.held.take() {
            lock.owner.store(0, Ordering::Release);
            drop(guard);
        }
    }
}

/// Runs `f` with `flag` as a cancel flag of the calling thread, removed again when `f`
/// returns or panics. Scopes nest: [`cancel_requested`] sees every flag of the scopes the
/// thread is in.
pub fn with_cancel<R>(flag: &Arc<AtomicBool>, f: impl FnOnce() -> R) -> R {
    struct Pop;
    impl Drop for Pop {
        fn drop(&mut self) {
            CANCEL.with(|c| c.borrow_mut().pop());
        }
    }
    CANCEL.with(|c| c.borrow_mut().push(flag.clone()));
    let _pop = Pop;
    f()
}

/// Whether the work running on this thread has been cancelled: any flag of the
/// [`with_cancel`] scopes it is in is set (false outside them).
pub fn cancel_requested() -> bool {
    CANCEL.with(|c| c.borrow().iter().any(|f| f.load(Ordering::SeqCst)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn the_lock_is_reentrant_on_its_thread_and_exclusive_across_threads() {
        let lock = Arc::new(DeviceLock::new());
        let outer = lock.enter();
        assert!(lock.held_here());
        {
            let _inner = lock.enter(); // would deadlock if not re-entrant
            assert!(lock.held_here());
        }
        assert!(
            lock.held_here(),
            "leaving the inner region keeps the outer one"
        );
        let other = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                let t = std::time::Instant::now();
                let _g = lock.enter();
                t.elapsed()
            })
        };
        std::thread::sleep(Duration::from_millis(100));
        drop(outer);
        assert!(!lock.held_here());
        let waited = other.join().unwrap();
        assert!(
            waited >= Duration::from_millis(90),
            "the other thread entered while held: {waited:?}"
        );
    }

    #[test]
    fn a_panic_inside_the_region_releases_the_lock() {
        let lock = Arc::new(DeviceLock::new());
        let l = lock.clone();
        assert!(std::thread::spawn(move || {
            let _g = l.enter();
            panic!("inside the region");
        })
        .join()
        .is_err());
        let _g = lock.enter();
        assert!(lock.held_here());
    }

    #[test]
    fn the_cancel_flag_is_the_calling_threads_for_the_call_only() {
        let flag = Arc::new(AtomicBool::new(false));
        assert!(!cancel_requested());
        with_cancel(&flag, || {
            assert!(!cancel_requested());
            flag.store(true, Ordering::SeqCst);
            assert!(cancel_requested());
            // Another thread does not see this thread's flag.
            assert!(!std::thread::spawn(cancel_requested).join().unwrap());
            // An inner scope with a clear flag still sees that the outer work is cancelled.
            let inner = Arc::new(AtomicBool::new(false));
            assert!(with_cancel(&inner, cancel_requested));
        });
        assert!(
            !cancel_requested(),
            "the flag is the call's, not the thread's for good"
        );
        let r = std::panic::catch_unwind(|| with_cancel(&flag, || panic!("inside")));
        assert!(r.is_err());
        assert!(!cancel_requested(), "restored after a panic too");
    }
}
