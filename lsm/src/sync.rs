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

/// Locks `mutex` as `lock` does (a poisoned mutex is taken all the same), for a `std` mutex
/// held for a microsecond or two at a time by threads that each take it often: tries for as long as [`core::spin_until`] spins before it sleeps. (`std`'s
/// mutex stops spinning as soon as one waiter sleeps, and each unlock then wakes one through
/// the kernel: on the transaction commit path two threads slept there 2,500 times in 200,000
/// transactions.)
pub fn lock_spinning<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    let mut guard = None;
    spin(|| match mutex.try_lock() {
        Ok(locked) => {
            guard = Some(locked);
            true
        }
        Err(std::sync::TryLockError::Poisoned(poisoned)) => {
            guard = Some(poisoned.into_inner());
            true
        }
        Err(std::sync::TryLockError::WouldBlock) => false,
    });
    guard.unwrap_or_else(|| lock(mutex))
}

/// Spins until `changed` returns true, for about 20 µs. Returns whether it did.
fn spin(mut changed: impl FnMut() -> bool) -> bool {
    const LIMIT: std::time::Duration = std::time::Duration::from_micros(20);
    // The clock only once the first turns failed: most waits end in them, and a clock read
    // was 1 % of a two-thread transaction's time (`perf`, its callers the resolver's lock).
    for _ in 0..32 {
        if changed() {
            return true;
        }
        std::hint::spin_loop();
    }
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
            super::spin(&mut changed)
        }
    }

    /// The same as the crate-private `lock`, for these primitives.
    pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
        mutex
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::{Arc, Mutex, mpsc};

    use super::lock_spinning;

    #[test]
    fn a_spinning_lock_waits_out_a_long_holder_and_takes_a_poisoned_mutex() {
        let mutex = Arc::new(Mutex::new(0u32));
        let (held, is_held) = mpsc::channel();
        let holder = {
            let mutex = Arc::clone(&mutex);
            std::thread::spawn(move || {
                let mut value = mutex.lock().expect("not poisoned");
                held.send(()).expect("main waits");
                // Far longer than the spin: the waiter sleeps on the mutex.
                std::thread::sleep(std::time::Duration::from_millis(20));
                *value = 1;
            })
        };
        is_held.recv().expect("held");
        assert_eq!(*lock_spinning(&mutex), 1, "the holder's write");
        holder.join().expect("holder");

        let poisoner = {
            let mutex = Arc::clone(&mutex);
            std::thread::spawn(move || {
                let mut value = mutex.lock().expect("not poisoned yet");
                *value = 2;
                panic!("poisons the mutex");
            })
        };
        assert!(poisoner.join().is_err());
        assert!(mutex.is_poisoned());
        assert_eq!(*lock_spinning(&mutex), 2);
    }
}
