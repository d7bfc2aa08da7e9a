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

    /// The same as the crate-private `lock`, for these primitives.
    pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
