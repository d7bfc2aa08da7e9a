//! The background threads: one flushes sealed memtables, `compaction_threads` compact. Each
//! loops: do one step of work if there is any, else sleep until something changes (the store's
//! background epoch is bumped by every seal, flush, compaction, failure and close).
//!
//! Flushing has its own thread so a long compaction never holds up a flush, which writers may
//! be waiting for.

use std::sync::Arc;
use std::thread::JoinHandle;

use std::path::Path;

use crate::error::{Error, IoOp, Result};
use crate::store::Shared;
use crate::sync::lock;

/// One unit of a thread's work; says whether there was any.
type Step = fn(&Shared) -> bool;

/// Starts the flush thread and the compaction threads.
pub(crate) fn spawn(shared: &Arc<Shared>) -> Result<Vec<JoinHandle<()>>> {
    let mut workers: Vec<(String, Step)> = vec![("strata-flush".into(), crate::flush::step)];
    for i in 0..shared.options.compaction_threads {
        workers.push((format!("strata-compact-{i}"), crate::compact::step));
    }
    let mut handles = Vec::with_capacity(workers.len());
    for (name, step) in workers {
        let worker = Arc::clone(shared);
        let handle = std::thread::Builder::new()
            .name(name)
            .spawn(move || run(&worker, step));
        match handle {
            Ok(handle) => handles.push(handle),
            Err(error) => {
                shared.shut_down_background();
                for handle in handles {
                    let _ = handle.join();
                }
                return Err(Error::io(IoOp::Spawn, Path::new(""), error));
            }
        }
    }
    Ok(handles)
}

fn run(shared: &Shared, step: Step) {
    loop {
        let epoch = {
            let state = lock(&shared.background);
            if state.shutdown {
                return;
            }
            state.epoch
        };
        if shared.check_writable().is_ok() && step(shared) {
            shared.wake_background();
            continue;
        }
        let mut state = lock(&shared.background);
        while !state.shutdown && state.epoch == epoch {
            state = shared
                .background_cv
                .wait(state)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
        }
    }
}
