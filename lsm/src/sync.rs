//! Synchronisation helpers.
//!
//! [`core`] holds the primitives of the concurrency core ([`crate::commit`]): `std`'s in
//! normal builds, `loom`'s under `--cfg loom`, so the loom models explore every interleaving.

/// Locks a `std` mutex, taking the data even if a thread panicked while holding it: every
/// critical section in the engine leaves its data consistent at each step, or marks the store
/// failed first.
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The primitives the loom models replace.
pub mod core {
    #[cfg(loom)]
    pub use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};
    #[cfg(loom)]
    pub use loom::sync::{Condvar, Mutex, MutexGuard};

    #[cfg(not(loom))]
    pub use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};
    #[cfg(not(loom))]
    pub use std::sync::{Condvar, Mutex, MutexGuard};

    /// Waits for `changed` to return true by spinning, for a short while (about 20 µs; two
    /// turns under loom, which explores each turn as a yield). Returns whether it did: the
    /// caller blocks on a condition variable when it did not. A thread that expects another
    /// to finish within microseconds saves the two context switches a sleep and a wake cost.
    pub fn spin_until(mut changed: impl FnMut() -> bool) -> bool {
        #[cfg(loom)]
        {
            for _ in 0..2 {
                if changed() {
                    return true;
                }
                loom::hint::spin_loop();
            }
            false
        }
        #[cfg(not(loom))]
        {
            const LIMIT: std::time::Duration = std::time::Duration::from_micros(20);
            let started = std::time::Instant::now();
            loop {
                for _ in 0..32 {
                    if changed() {
                        return true;
                    }
                    std::hint::spin_loop();
                }
                if started.elapsed() > LIMIT {
                    return false;
                }
            }
        }
    }

    /// The same as the crate-private `lock`, for these primitives.
    pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
