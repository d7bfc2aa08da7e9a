//! Group commit and sequence number publication: the concurrency core of the write path.
//!
//! Group commit (leader/follower, as LevelDB's `DBImpl::Write` and RocksDB's write thread):
//! 1. A writer enqueues its request and waits.
//! 2. The writer at the front of the queue, when no other leader is active, becomes the
//!    leader. It takes a *group*: itself and the requests queued behind it, up to a byte
//!    budget. A leader that need not sync takes no request that must, so a write that did not
//!    ask for `fdatasync` never waits for one; a syncing leader takes both.
//! 3. Without holding the queue lock, the leader does the group's work (one log append and at
//!    most one `fdatasync` for all of it, memtable inserts, publication) and gets one result per
//!    request.
//! 4. It hands each follower its result, steps down, and wakes the waiters: the next front
//!    request leads the next group. A waiter first spins for a few microseconds on a
//!    counter the leader bumps as it steps down, and sleeps only if that takes longer: a
//!    group of small unsynced writes is done in about that time, and a sleep and a wake are
//!    two context switches per write (two writers on two cores ran at 0.7x of RocksDB).
//!
//! Publication ([`Sequencer`]): the leader allocates a contiguous range of sequence numbers for
//! the group, inserts the entries, then publishes the range's end with a release store. A
//! reader takes its snapshot with an acquire load and ignores entries above it, so it sees
//! either every entry of a batch or none, and every entry at or below its snapshot is already
//! inserted.
//!
//! Both are written against `crate::sync::core`, so `tests/loom.rs` checks them under loom.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::Ordering;

use crate::sync::core::{AtomicU64, AtomicUsize, Condvar, Mutex, lock, spin_until};

/// One request handed to the leader.
#[derive(Debug)]
pub struct Request<T> {
    /// What the writer wants done.
    pub item: T,
    /// Whether the writer waits for `fdatasync`.
    pub sync: bool,
}

struct Pending<T> {
    ticket: u64,
    request: Request<T>,
    bytes: usize,
}

struct Queue<T, R> {
    pending: VecDeque<Pending<T>>,
    leader_active: bool,
    /// Whether the active leader's group syncs (it will take an `fdatasync`'s time).
    leader_syncs: bool,
    next_ticket: u64,
    finished: HashMap<u64, R>,
    /// Threads blocked on `wake`: a leader stepping down wakes them only if there are any,
    /// as a futex wake is a system call even with nobody waiting.
    waiting: usize,
}

/// A leader/follower group commit queue. `T` is a request, `R` its result.
pub struct GroupCommit<T, R> {
    queue: Mutex<Queue<T, R>>,
    wake: Condvar,
    /// Bumped by each leader as it steps down: a waiting writer spins on it for a few
    /// microseconds before it sleeps on `wake` (a leader's group of small writes takes about
    /// that long, and a sleep and a wake cost two context switches).
    stepped_down: AtomicU64,
    /// 1 while a leader is at work (`Queue::leader_active`), readable without the queue
    /// lock: see [`GroupCommit::busy`].
    leading: AtomicUsize,
    max_group_bytes: usize,
}

impl<T, R> std::fmt::Debug for GroupCommit<T, R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupCommit")
            .field("max_group_bytes", &self.max_group_bytes)
            .finish_non_exhaustive()
    }
}

impl<T, R> GroupCommit<T, R> {
    /// A queue whose groups hold at most `max_group_bytes` of requests (always at least one).
    pub fn new(max_group_bytes: usize) -> Self {
        GroupCommit {
            queue: Mutex::new(Queue {
                pending: VecDeque::new(),
                leader_active: false,
                leader_syncs: false,
                next_ticket: 0,
                finished: HashMap::new(),
                waiting: 0,
            }),
            wake: Condvar::new(),
            stepped_down: AtomicU64::new(0),
            leading: AtomicUsize::new(0),
            max_group_bytes,
        }
    }

    /// Whether a leader is at work now, so that a request submitted now would wait for it: a
    /// writer may spend that time on work of its own first. A hint: the leader may step
    /// down the next instant.
    pub fn busy(&self) -> bool {
        self.leading.load(Ordering::Relaxed) != 0
    }

    /// Submits `request` (weighing `bytes` against the group budget) and returns its result,
    /// once some leader (possibly this thread, running `lead`) has done the work.
    ///
    /// `lead` receives the group in queue order, this thread's request first, and must return
    /// exactly one result per request, in the same order. It must not panic: followers would
    /// wait for results that never come.
    pub fn commit<F>(&self, request: Request<T>, bytes: usize, lead: F) -> R
    where
        F: FnOnce(Vec<Request<T>>) -> Vec<R>,
    {
        let mut queue = lock(&self.queue);
        let ticket = queue.next_ticket;
        queue.next_ticket += 1;
        queue.pending.push_back(Pending {
            ticket,
            request,
            bytes,
        });
        loop {
            if !queue.finished.is_empty()
                && let Some(result) = queue.finished.remove(&ticket)
            {
                return result;
            }
            let at_front = queue.pending.front().is_some_and(|p| p.ticket == ticket);
            if at_front && !queue.leader_active {
                break;
            }
            // A leader is at work. Unless a sync is involved (its group's or this request's:
            // an `fdatasync` takes ~100 µs, and spinning writers would take the cores from
            // the leader), spin until it steps down, for a while, before sleeping.
            let syncing = queue.leader_syncs
                || queue
                    .pending
                    .iter()
                    .find(|p| p.ticket == ticket)
                    .is_some_and(|p| p.request.sync);
            if !syncing {
                let seen = self.stepped_down.load(Ordering::Acquire);
                drop(queue);
                let stepped_down = spin_until(|| self.stepped_down.load(Ordering::Acquire) != seen);
                queue = lock(&self.queue);
                if stepped_down || self.stepped_down.load(Ordering::Acquire) != seen {
                    continue;
                }
            }
            queue.waiting += 1;
            queue = self
                .wake
                .wait(queue)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            queue.waiting -= 1;
        }

        // This thread leads: take the group.
        queue.leader_active = true;
        self.leading.store(1, Ordering::Relaxed);
        let mut group = Vec::new();
        let mut tickets = Vec::new();
        let mut group_bytes = 0usize;
        let mut leader_syncs = false;
        while let Some(front) = queue.pending.front() {
            if let Some(&first) = tickets.first() {
                debug_assert_eq!(first, ticket);
                let over_budget = group_bytes.saturating_add(front.bytes) > self.max_group_bytes;
                if over_budget || (front.request.sync && !leader_syncs) {
                    break;
                }
            } else {
                leader_syncs = front.request.sync;
            }
            let Some(taken) = queue.pending.pop_front() else {
                break;
            };
            group_bytes = group_bytes.saturating_add(taken.bytes);
            tickets.push(taken.ticket);
            group.push(taken.request);
        }
        queue.leader_syncs = leader_syncs;
        drop(queue);

        let results = lead(group);
        assert_eq!(results.len(), tickets.len(), "one result per request");

        let mut queue = lock(&self.queue);
        let mut mine = None;
        for (t, result) in tickets.into_iter().zip(results) {
            if t == ticket {
                mine = Some(result);
            } else {
                queue.finished.insert(t, result);
            }
        }
        queue.leader_active = false;
        self.leading.store(0, Ordering::Relaxed);
        self.stepped_down.fetch_add(1, Ordering::Release);
        // A thread that waits later takes the lock first and sees this leader gone.
        let anyone_waiting = queue.waiting > 0;
        drop(queue);
        if anyone_waiting {
            self.wake.notify_all();
        }
        mine.expect("the leader's own request is in its group")
    }
}

/// Sequence numbers: allocated by commit leaders, published to readers in order.
///
/// A store alone has a *private* sequencer: its commit leader, one at a time, allocates a
/// group's range and publishes it once inserted, so publication is in order by
/// construction. Several stores may share one ([`Sequencer::shared`]: the table layer's
/// shard stores, so a seqno is one commit timestamp across all of them). Then several
/// leaders allocate concurrently and finish in any order, so each allocated range is
/// *pending* until it is inserted, and `visible` advances only over a prefix of finished
/// ranges: a reader never sees a range while an older one is still being inserted. A range
/// may also be allocated for a transaction whose parts go to several stores
/// ([`Sequencer::allocate`], [`Sequencer::publish_range`]), published once every part is in.
#[derive(Debug)]
pub struct Sequencer {
    /// The last allocated seqno. Only the commit leader changes it (private), or only under
    /// `pending`'s lock (shared).
    allocated: AtomicU64,
    /// The last published seqno: every entry at or below it is in its memtable.
    visible: AtomicU64,
    /// `Some` for a shared sequencer.
    pending: Option<Mutex<Unpublished>>,
    /// Signalled when `visible` advances or the sequencer fails (shared only).
    published: Condvar,
    /// The live snapshots of every store using this sequencer: one registration holds a
    /// snapshot in all of them.
    pub(crate) snapshots: std::sync::Arc<crate::snapshot::SnapshotList>,
}

/// A shared sequencer's allocated ranges not yet published.
#[derive(Debug, Default)]
struct Unpublished {
    /// First seqno → (last seqno, finished).
    ranges: std::collections::BTreeMap<u64, (u64, bool)>,
    /// Threads waiting on `published`.
    waiting: usize,
    /// Set when a range can never be finished (a transaction's part failed): nothing after
    /// it can be published, so every waiter and later writer fails instead of waiting.
    failed: bool,
}

impl Sequencer {
    /// A private sequencer whose last allocated and published seqno is `last`.
    pub fn new(last: u64) -> Self {
        Sequencer {
            allocated: AtomicU64::new(last),
            visible: AtomicU64::new(last),
            pending: None,
            published: Condvar::new(),
            snapshots: std::sync::Arc::default(),
        }
    }

    /// A sequencer several stores share, starting at `last`.
    pub fn shared(last: u64) -> Self {
        Sequencer {
            pending: Some(Mutex::new(Unpublished::default())),
            ..Sequencer::new(last)
        }
    }

    /// Whether several stores may share it.
    pub fn is_shared(&self) -> bool {
        self.pending.is_some()
    }

    /// Allocates `count` (at least 1) seqnos and returns the first. REQUIRES for a private
    /// sequencer: the caller is the commit leader. For a shared one the range is pending
    /// until [`Sequencer::publish_range`] is called with its first seqno, which every
    /// allocation must be. Fails (`None`) once a shared sequencer has failed.
    pub fn allocate(&self, count: u64) -> Option<u64> {
        debug_assert!(count > 0);
        let Some(pending) = &self.pending else {
            let first = self.allocated.load(Ordering::Relaxed) + 1;
            self.allocated.store(first + count - 1, Ordering::Relaxed);
            return Some(first);
        };
        let mut pending = lock(pending);
        if pending.failed {
            return None;
        }
        let first = self.allocated.load(Ordering::Relaxed) + 1;
        let last = first + count - 1;
        self.allocated.store(last, Ordering::Relaxed);
        pending.ranges.insert(first, (last, false));
        Some(first)
    }

    /// The last allocated seqno: every entry of every store sharing it is at or below.
    pub fn allocated(&self) -> u64 {
        self.allocated.load(Ordering::Relaxed)
    }

    /// Marks the range allocated at `first` (ending at `last`) inserted, and publishes every
    /// finished range not preceded by a pending one. REQUIRES: every entry of the range is
    /// inserted; for a private sequencer, the caller is the commit leader.
    pub fn publish_range(&self, first: u64, last: u64) {
        let Some(pending) = &self.pending else {
            debug_assert!(last <= self.allocated.load(Ordering::Relaxed));
            self.visible.store(last, Ordering::Release);
            return;
        };
        let mut pending = lock(pending);
        if let Some(range) = pending.ranges.get_mut(&first) {
            debug_assert_eq!(range.0, last);
            range.1 = true;
        }
        let mut advanced = false;
        while let Some(entry) = pending.ranges.first_entry() {
            let &(last, finished) = entry.get();
            if !finished {
                break;
            }
            entry.remove();
            self.visible.store(last, Ordering::Release);
            advanced = true;
        }
        if advanced && pending.waiting > 0 {
            self.published.notify_all();
        }
    }

    /// Publishes every seqno up to `last`. REQUIRES: a private sequencer, the caller is the
    /// commit leader, and every entry up to `last` is inserted.
    pub fn publish(&self, last: u64) {
        debug_assert!(
            self.pending.is_none(),
            "a shared sequencer publishes ranges"
        );
        debug_assert!(last <= self.allocated.load(Ordering::Relaxed));
        self.visible.store(last, Ordering::Release);
    }

    /// The last published seqno: a consistent snapshot.
    pub fn visible(&self) -> u64 {
        self.visible.load(Ordering::Acquire)
    }

    /// Waits until `seqno` is published; `false` if the sequencer failed first. Immediate
    /// for a private sequencer (its leader publishes before it returns).
    pub fn wait_visible(&self, seqno: u64) -> bool {
        let Some(pending) = &self.pending else {
            return true;
        };
        if self.visible() >= seqno {
            return true;
        }
        // Ranges are usually finished within microseconds of each other.
        if spin_until(|| self.visible() >= seqno) {
            return true;
        }
        let mut guard = lock(pending);
        loop {
            if self.visible() >= seqno {
                return true;
            }
            if guard.failed {
                return false;
            }
            guard.waiting += 1;
            guard = self
                .published
                .wait(guard)
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            guard.waiting -= 1;
        }
    }

    /// Moves a shared sequencer past `last` (a store joining it with data up to `last`): the
    /// seqnos in between count as allocated and published.
    pub fn advance_to(&self, last: u64) {
        let Some(pending) = &self.pending else {
            if last > self.allocated.load(Ordering::Relaxed) {
                self.allocated.store(last, Ordering::Relaxed);
                self.visible.store(last, Ordering::Release);
            }
            return;
        };
        let mut pending = lock(pending);
        let allocated = self.allocated.load(Ordering::Relaxed);
        if last <= allocated {
            return;
        }
        self.allocated.store(last, Ordering::Relaxed);
        pending.ranges.insert(allocated + 1, (last, false));
        drop(pending);
        self.publish_range(allocated + 1, last);
    }

    /// Fails a shared sequencer: a pending range will never be finished (a part of a
    /// transaction could not be written), so nothing after it may become visible. Readers
    /// keep the published state; waiters and later allocations fail.
    pub fn fail(&self) {
        if let Some(pending) = &self.pending {
            lock(pending).failed = true;
            self.published.notify_all();
        }
    }

    /// Whether [`Sequencer::fail`] was called.
    pub fn has_failed(&self) -> bool {
        self.pending.as_ref().is_some_and(|p| lock(p).failed)
    }
}
