//! The memtable's ordered index: an append-only skip list with one writer at a time and any
//! number of concurrent readers, its nodes in an arena.
//!
//! Why our own, instead of `crossbeam-skiplist`: a memtable never removes an entry and is
//! dropped whole, so it needs no per-node reclamation. Without it there is no epoch to pin per
//! operation, no reference count per returned entry, and no `malloc` per node: nodes are slots
//! in large, fixed-size segments, as in LevelDB's `SkipList` over an `Arena` and RocksDB's
//! `InlineSkipList`. On the comparison benchmark this is most of a put.
//!
//! The structure, in safe Rust:
//! 1. A node is a slot in an arena of slots (`skiplist/arena.rs`), named by a `u32` index.
//!    A slot holds the node's first [`INLINE_LINKS`] forward links (atomics) and its key in
//!    its first cache line, so a search step misses the cache once, then (each in a
//!    `OnceLock`) its value and height. Taller towers keep their upper links in a second
//!    arena of atomics.
//! 2. The writer (serialised by a mutex; the memtable's single writer is the commit leader, so
//!    it is never contended) finds the predecessors at every level, fills a fresh slot, sets
//!    the new node's own links, then links it in from level 0 upward, each with a release
//!    store.
//! 3. A reader follows links with acquire loads. A node reached through a link was fully
//!    written before that link was stored, and from a node reached at level `l` the reader
//!    only follows links at levels `<= l`, which were set before the node was linked at `l`.
//!    So readers need no lock and never see a half-built node.
//! 4. Nothing is freed until the list is dropped; entries are never removed. Equal keys are
//!    allowed; a new entry goes before the entries equal to it.
//! 5. A search of a list too large for the cache is a chain of dependent cache misses, one per
//!    node visited. [`SkipList::insert_each`] inserts into several lists (a table row and its
//!    index entries, each in its own column family) with their searches taking turns a node
//!    at a time, so the processor has one miss in flight per list instead of one in all.
//!
//! Heights are drawn with probability 1/4 per level (LevelDB's branching factor) up to
//! [`MAX_HEIGHT`]: about 1.33 links per node, and a search of `n` entries visits about
//! `4 · log4(n)` nodes.

use std::cmp::Ordering as CmpOrdering;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;

use crate::sync::core::{AtomicU32, AtomicUsize, Mutex, MutexGuard, lock};

/// The tallest tower. 4^12 = 16M entries before searches get longer than logarithmic.
pub const MAX_HEIGHT: usize = 12;

/// Links stored in the node's own slot, next to its key: a search's step at these levels
/// touches one place in memory. Taller nodes (1 in 256) keep the rest in the link arena.
pub const INLINE_LINKS: usize = 4;

/// The index that means "no node".
const NIL: u32 = u32::MAX;

mod arena;
mod insert;

use arena::Arena;
pub use arena::CAPACITY;
use insert::{BEFORE_HEIGHT, Pending, Placed};

/// A node's slot: what a search step reads first, then the rest. With a key of up to 40
/// bytes (the memtable's is 40), a search step touches one cache line: the links and the key.
#[repr(C, align(64))]
struct Slot<K, V> {
    /// Forward links at levels `0..INLINE_LINKS`.
    next: [AtomicU32; INLINE_LINKS],
    key: OnceLock<K>,
    cold: OnceLock<Cold<V>>,
}

impl<K, V> Slot<K, V> {
    fn fresh() -> Self {
        Slot {
            next: std::array::from_fn(|_| AtomicU32::new(NIL)),
            key: OnceLock::new(),
            cold: OnceLock::new(),
        }
    }

    #[inline]
    fn key(&self) -> &K {
        self.key
            .get()
            .expect("a node is written before it is linked")
    }

    fn cold(&self) -> &Cold<V> {
        self.cold
            .get()
            .expect("a node is written before it is linked")
    }
}

/// The bytes of a slot a search step reads (links and key): one cache line when at most 64.
pub const fn search_bytes<K, V>() -> usize {
    std::mem::offset_of!(Slot<K, V>, cold)
}

/// What a search does not need.
struct Cold<V> {
    value: V,
    height: u8,
    /// The link-arena index of this node's link at level `INLINE_LINKS`, if it is that tall.
    upper_links: u32,
    /// The node before this one at level 0 (`NIL`: the head). Only the writer reads or
    /// stores it, under the writer lock: it places an insert given a hint
    /// ([`SkipList::insert_hinted`]) without a search.
    prev: AtomicU32,
}

/// The writer's state.
struct Writer {
    /// The next free node index (reserved by `begin`, so several inserts of one call each
    /// get their own).
    nodes: u32,
    /// The next free link-arena index (reserved likewise).
    links: u32,
    /// xorshift64 state for tower heights.
    rng: u64,
    /// The last node inserted (`NIL`: none yet).
    last: u32,
    /// The last insert's predecessors at every level of the list (`None`: the head), with the
    /// inserted node itself at the levels of its tower: where the search for a larger key
    /// starts (see [`Search::from_splice`]).
    splice: [Option<u32>; MAX_HEIGHT],
}

/// The list is full: [`CAPACITY`] nodes, or as many upper links.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Full;

/// A position in the list: a node index, valid for the list that returned it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Position(u32);

impl Position {
    /// The node index, to keep outside the list (a memtable's point index).
    pub fn index(self) -> u32 {
        self.0
    }

    /// The position of node `index`, as [`Position::index`] returned it for the same list.
    /// Another index panics when used.
    pub fn from_index(index: u32) -> Self {
        Position(index)
    }
}

/// One entry for [`SkipList::insert_each`]: the list, the key, the value.
pub type Insert<'a, K, V> = (&'a SkipList<K, V>, K, V);

/// One entry for [`SkipList::insert_each_hinted`]: an [`Insert`] and what the caller knows
/// of where it goes.
pub type HintedInsert<'a, K, V> = (Insert<'a, K, V>, Hint);

/// What the caller of [`SkipList::insert_each_hinted`] knows of where an entry goes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Hint {
    /// Nothing: the insert searches under the writer lock.
    #[default]
    None,
    /// The entry its key goes right before (see [`SkipList::insert_hinted`]).
    Before(Position),
    /// Its predecessors as a search outside the writer lock found them
    /// ([`SkipList::locate`]).
    Located(Located),
}

/// A key's predecessor at every level, as [`SkipList::locate`] found them: each below the
/// key, and at its level, so a search for the key may resume from it at any later time
/// (nodes are never removed), walking right over what was linked since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Located {
    /// The list searched (its address): a `Located` of another list is ignored.
    list: usize,
    preds: [Option<u32>; MAX_HEIGHT],
}

/// Where an insert linked its node: the node, and the entry before it in the list (`None`:
/// it is first).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Linked {
    pub at: Position,
    pub after: Option<Position>,
}

/// An append-only skip list of `(key, value)` entries ordered by key. See the module docs.
pub struct SkipList<K, V> {
    nodes: Arena<Slot<K, V>>,
    links: Arena<AtomicU32>,
    head: [AtomicU32; MAX_HEIGHT],
    /// The tallest tower in the list (at least 1).
    height: AtomicUsize,
    /// The last node (`NIL`: none), for [`SkipList::is_above_last`].
    tail: AtomicU32,
    len: AtomicUsize,
    /// Upper links handed out.
    upper_links: AtomicUsize,
    writer: Mutex<Writer>,
}

/// A search for the last node below a key, one node visit per [`Search::step`], so that the
/// searches of several lists can take turns ([`SkipList::insert_each`]).
///
/// The search keeps the slot of the node it stands on, so each step looks up one slot (the
/// next node's), and it remembers the last node found not below the key: a lower level often
/// leads to the same node, which then needs no second comparison (RocksDB's
/// `InlineSkipList` does the same).
struct Search<'a, K, V> {
    list: &'a SkipList<K, V>,
    at: Option<(u32, &'a Slot<K, V>)>,
    not_below: u32,
    level: usize,
    /// Where each level's search starts until the search first moves right, for an insert
    /// whose key is above the previous insert's ([`Search::from_splice`]).
    splice: Option<[Option<u32>; MAX_HEIGHT]>,
}

impl<'a, K: Ord, V> Search<'a, K, V> {
    fn new(list: &'a SkipList<K, V>) -> Self {
        Search {
            list,
            at: None,
            not_below: NIL,
            level: list.height.load(Ordering::Acquire) - 1,
            splice: None,
        }
    }

    /// A search for a key above the last inserted one that starts each level at that insert's
    /// predecessor there (its `splice`), instead of at the head, until it first moves right.
    ///
    /// Why that finds the same predecessors: the splice's node at a level is below the last
    /// key, hence below this one, so a search may start there; the level below's splice node
    /// is at or after it, so stepping down to it skips only nodes below the key. Once the
    /// search moves right at some level it stands past the last key, right of every splice
    /// node below, and goes on as any search. Ascending keys (a sequential load, an
    /// auto-increment key) then search only the links at the list's end: RocksDB's
    /// `InlineSkipList` keeps a `Splice` for the same reason.
    fn from_splice(list: &'a SkipList<K, V>, splice: [Option<u32>; MAX_HEIGHT]) -> Self {
        let level = list.height.load(Ordering::Relaxed) - 1;
        Search {
            list,
            at: splice[level].map(|index| (index, list.slot(index))),
            not_below: NIL,
            level,
            splice: Some(splice),
        }
    }

    /// Visits one node, or moves down a level. Once level 0 is done, returns the last node
    /// below `key` (`None`: the head) and the node after it (`NIL`: none); `preds`, if given,
    /// gets the last node below `key` at each level passed.
    #[inline]
    fn step<const AHEAD: bool>(
        &mut self,
        key: &K,
        preds: Option<&mut [Option<u32>; MAX_HEIGHT]>,
    ) -> Option<(Option<u32>, u32)> {
        let list = self.list;
        let next = list
            .slot_link(self.at.map(|(_, slot)| slot), self.level)
            .load(Ordering::Acquire);
        if next != NIL && next != self.not_below {
            let slot = list.slot(next);
            // Touch the node after `next` now: if the search moves right, its line is
            // already on the way, so two cache misses overlap instead of following each
            // other (RocksDB prefetches the same node). A plain load, as a prefetch
            // instruction needs `unsafe`.
            if AHEAD && self.level < INLINE_LINKS {
                // Acquire, as for any link: the node may be linked this instant.
                let ahead = slot.next[self.level].load(Ordering::Acquire);
                if ahead != NIL
                    && let Some(ahead) = list.nodes.get(ahead)
                {
                    std::hint::black_box(ahead.next[0].load(Ordering::Relaxed));
                }
            }
            if slot.key() < key {
                self.at = Some((next, slot));
                self.splice = None;
                return None;
            }
            self.not_below = next;
        }
        if let Some(preds) = preds {
            preds[self.level] = self.at.map(|(index, _)| index);
        }
        if self.level == 0 {
            return Some((self.at.map(|(index, _)| index), next));
        }
        self.level -= 1;
        if let Some(splice) = &self.splice {
            self.at = splice[self.level].map(|index| (index, list.slot(index)));
        }
        None
    }
}

/// Where the last of a run of ascending searches ended: its predecessor at each level. The
/// next, larger key's search climbs from level 0 until a remembered predecessor's successor is
/// not below the key, and descends from there: keys `d` entries apart cost about
/// `2 · log4(d)` node visits, near the last search's (cache-warm) path, instead of a search
/// from the head (a finger search; RocksDB's `InlineSkipList::Splice` serves inserts the same
/// way). Nodes are never removed, so a remembered node stays in the list, at every level it
/// was linked at.
#[derive(Clone, Debug, Default)]
pub struct Finger {
    preds: [Option<u32>; MAX_HEIGHT],
    /// Levels of `preds` filled (0: none yet).
    levels: usize,
}

impl<K: Ord, V> Default for SkipList<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Ord, V> SkipList<K, V> {
    /// An empty list. Allocates only the arenas' top tables (a few KiB).
    pub fn new() -> Self {
        SkipList {
            nodes: Arena::new(),
            links: Arena::new(),
            head: std::array::from_fn(|_| AtomicU32::new(NIL)),
            height: AtomicUsize::new(1),
            tail: AtomicU32::new(NIL),
            len: AtomicUsize::new(0),
            upper_links: AtomicUsize::new(0),
            writer: Mutex::new(Writer {
                nodes: 0,
                links: 0,
                rng: 0x9E37_79B9_7F4A_7C15,
                last: NIL,
                splice: [None; MAX_HEIGHT],
            }),
        }
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }

    /// Whether the list has no entries.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of the slots and links the entries use, not counting what keys and values own
    /// outside their slots. The arenas hold at most one unused segment each beyond this,
    /// plus their tables (a few KiB).
    pub fn used_bytes(&self) -> usize {
        self.len() * size_of::<Slot<K, V>>()
            + self.upper_links.load(Ordering::Relaxed) * size_of::<AtomicU32>()
    }

    #[inline]
    fn slot(&self, index: u32) -> &Slot<K, V> {
        self.nodes
            .get(index)
            .expect("a node index read from a link was allocated before it was linked")
    }

    /// The link of `from` (`None`: the head) at `level`.
    fn link(&self, from: Option<u32>, level: usize) -> &AtomicU32 {
        self.slot_link(from.map(|index| self.slot(index)), level)
    }

    /// The link of the node in `slot` (`None`: the head) at `level`.
    #[inline]
    fn slot_link<'a>(&'a self, slot: Option<&'a Slot<K, V>>, level: usize) -> &'a AtomicU32 {
        let Some(slot) = slot else {
            return &self.head[level];
        };
        if level < INLINE_LINKS {
            return &slot.next[level];
        }
        let cold = slot.cold();
        debug_assert!(level < usize::from(cold.height));
        self.links
            .get(cold.upper_links + (level - INLINE_LINKS) as u32)
            .expect("a tall node's upper links are allocated before it is linked")
    }

    fn next(&self, from: Option<u32>, level: usize) -> Option<u32> {
        let next = self.link(from, level).load(Ordering::Acquire);
        (next != NIL).then_some(next)
    }

    /// The last node (`None`: the head) at each level whose key is below `key`, from the top
    /// level down. Returns the one at level 0 and the node the search found after it (`NIL`:
    /// none), and fills `preds` if given.
    ///
    /// The successor must come from the search itself, not from re-reading the predecessor's
    /// link afterwards: a node linked in between could be below `key` (a loom model caught
    /// exactly that, with a reader's `seek` returning a smaller key than it asked for).
    #[inline]
    fn find_less(
        &self,
        key: &K,
        mut preds: Option<&mut [Option<u32>; MAX_HEIGHT]>,
    ) -> (Option<u32>, u32) {
        let mut search = Search::new(self);
        loop {
            if let Some(found) = search.step::<true>(key, preds.as_deref_mut()) {
                return found;
            }
        }
    }

    /// A tower height: 1, then one more with probability 1/4 each, up to [`MAX_HEIGHT`].
    fn random_height(writer: &mut Writer) -> usize {
        let mut height = 1;
        while height < MAX_HEIGHT {
            writer.rng ^= writer.rng << 13;
            writer.rng ^= writer.rng >> 7;
            writer.rng ^= writer.rng << 17;
            if !writer.rng.is_multiple_of(4) {
                break;
            }
            height += 1;
        }
        height
    }

    /// Inserts an entry. Concurrent readers see it whole or not at all; concurrent inserts are
    /// serialised. Fails, inserting nothing, only when the list holds [`CAPACITY`] nodes.
    /// Returns where the entry went.
    pub fn insert(&self, key: K, value: V) -> Result<Linked, Full> {
        self.insert_hinted(key, value, Hint::None)
    }

    /// [`SkipList::insert`], given what the caller knows of where the key goes.
    ///
    /// - [`Hint::Before`]: the entry the key goes right before (a memtable knows a key's
    ///   newest version, which a newer one precedes). Most inserts (those of one or two
    ///   levels, fifteen in sixteen) then need no search: the new node goes between that
    ///   entry and the node before it, found through a back link only the writer keeps, once
    ///   a comparison with each confirms the place; a node of two levels walks back links to
    ///   the nearest one as tall (four nodes on average). A hint that does not fit costs a
    ///   search.
    /// - [`Hint::Located`]: the key's predecessors as [`SkipList::locate`] found them, before
    ///   the caller took its turn to write (a search needs no lock): under the lock each level
    ///   only walks right over what was linked since, usually nothing.
    pub fn insert_hinted(&self, key: K, value: V, hint: Hint) -> Result<Linked, Full> {
        let mut writer = lock(&self.writer);
        let mut pending = self.begin(&mut writer, key, value, true, hint)?;
        while !pending.searched {
            pending.step::<true>();
        }
        pending.place().link(&mut writer)
    }

    /// Inserts each entry into its list, as [`SkipList::insert`] would one after another,
    /// with the searches taking turns a node at a time: each is a chain of dependent cache
    /// misses, and the chains are independent, so the processor overlaps their misses instead
    /// of waiting for each in turn (group prefetching, as in hash joins, applied to skip
    /// lists). A write to a table and its index tables is an insert into several lists; a
    /// small group of writes, several inserts into one list.
    ///
    /// Several entries of one list search the list as it was before any of them went in;
    /// each, once linked, corrects the predecessors of the entries of its list still to link
    /// ([`Pending::after_linked`]). Writer locks are taken in list address order, so two
    /// callers cannot deadlock. Returns where each entry went, in the order given. On `Full`,
    /// some entries are inserted and the rest are not.
    pub fn insert_each(entries: Vec<Insert<'_, K, V>>) -> Result<Vec<Linked>, Full> {
        Self::insert_each_hinted(
            entries
                .into_iter()
                .map(|entry| (entry, Hint::None))
                .collect(),
        )
    }

    /// [`SkipList::insert_each`] with each entry's hint, as [`SkipList::insert_hinted`] takes
    /// it. A hinted entry is placed when it is linked, after the entries before it in the
    /// call: a `Before` hint an earlier entry made stale is caught by the comparisons, and
    /// searched; a `Located` one walks right over the entries linked since.
    pub fn insert_each_hinted(entries: Vec<HintedInsert<'_, K, V>>) -> Result<Vec<Linked>, Full> {
        let count = entries.len();
        let mut entries: Vec<(usize, HintedInsert<'_, K, V>)> =
            entries.into_iter().enumerate().collect();
        // Stable: a list's entries keep their order.
        entries.sort_by_key(|(_, ((list, _, _), _))| std::ptr::from_ref(*list) as usize);
        let mut writers: Vec<(&SkipList<K, V>, MutexGuard<'_, Writer>)> = Vec::new();
        let mut pending: Vec<(usize, usize, Pending<'_, K, V>)> = Vec::with_capacity(count);
        let mut full = false;
        for (given, ((list, key, value), hint)) in entries {
            let first = writers.last().is_none_or(|(l, _)| !std::ptr::eq(*l, list));
            if first {
                writers.push((list, lock(&list.writer)));
            }
            let w = writers.len() - 1;
            match list.begin(&mut writers[w].1, key, value, first, hint) {
                Ok(p) => pending.push((given, w, p)),
                Err(Full) => {
                    full = true;
                    break;
                }
            }
        }
        let mut searching = pending.len();
        while searching > 0 {
            searching = 0;
            for (_, _, p) in pending.iter_mut().filter(|(_, _, p)| !p.searched) {
                p.step::<false>();
                searching += usize::from(!p.searched);
            }
        }
        // In order, so each list's nodes go in in the order their indexes were reserved.
        let mut linked = vec![None; count];
        let mut pending = std::collections::VecDeque::from(pending);
        while let Some((given, w, p)) = pending.pop_front() {
            let ready = p.place();
            let preds = ready.0.preds;
            let at = ready.link(&mut writers[w].1)?;
            for (_, _, later) in pending.iter_mut().filter(|(_, lw, _)| *lw == w) {
                later.after_linked(at.at.0, &preds);
            }
            linked[given] = Some(at);
        }
        if full {
            return Err(Full);
        }
        // Not full: every entry was begun, so every given position is filled.
        Ok(linked.into_iter().flatten().collect())
    }

    /// Reserves the node and its tower under the list's writer lock (`writer`) and starts
    /// the search: none for an append, for a node of at most [`BEFORE_HEIGHT`] levels with a
    /// `Before` hint, or with
    /// a `Located` one of this list (those are placed at link time); from the last insert's
    /// splice for the `first` insert of a call when its key is above that insert's; from the
    /// head otherwise.
    fn begin(
        &self,
        writer: &mut Writer,
        key: K,
        value: V,
        first: bool,
        hint: Hint,
    ) -> Result<Pending<'_, K, V>, Full> {
        let index = writer.nodes;
        if index >= CAPACITY {
            return Err(Full);
        }
        let height = Self::random_height(writer);
        let upper = height.saturating_sub(INLINE_LINKS) as u32;
        let upper_links = writer.links;
        if upper > 0 {
            let last = upper_links.checked_add(upper - 1).ok_or(Full)?;
            // The run of upper links spans at most two segments: allocate both ends.
            self.links
                .get_or_allocate(upper_links, || AtomicU32::new(NIL))
                .ok_or(Full)?;
            self.links
                .get_or_allocate(last, || AtomicU32::new(NIL))
                .ok_or(Full)?;
        }
        writer.nodes += 1;
        writer.links += upper;
        // The last insert's splice describes the list only for the first insert of a call:
        // the others search from the head (and are corrected as the earlier ones go in).
        let last = (first && writer.last != NIL).then(|| self.slot(writer.last));
        let above_last = last.is_some_and(|last| *last.key() < key);
        // An append: the last insert is the list's last node, so its splice holds the last
        // node of every level, which are this key's predecessors. No search at all.
        let appends =
            above_last && last.is_some_and(|last| last.next[0].load(Ordering::Relaxed) == NIL);
        let search = if above_last {
            Search::from_splice(self, writer.splice)
        } else {
            Search::new(self)
        };
        let mut preds = if appends {
            writer.splice
        } else {
            [None; MAX_HEIGHT]
        };
        let mut placed = Placed::Searched;
        match hint {
            _ if appends => {}
            // A node of at most `BEFORE_HEIGHT` levels is placed by its `Before` hint (its
            // upper predecessors a short walk back); a taller one searches.
            Hint::Before(at) if height <= BEFORE_HEIGHT => placed = Placed::Before(at.0),
            Hint::Located(located) if located.list == self.address() => {
                preds = located.preds;
                placed = Placed::Located;
            }
            _ => {}
        }
        Ok(Pending {
            list: self,
            index,
            height,
            upper_links,
            search,
            preds,
            searched: appends || placed != Placed::Searched,
            placed,
            key,
            value,
        })
    }

    /// This list's address, which names it in a [`Located`].
    fn address(&self) -> usize {
        std::ptr::from_ref(self) as usize
    }

    /// Searches for `key`'s predecessors without the writer lock, as a reader does, for a
    /// later [`Hint::Located`] insert of `key` or of any key above it (the walk right at
    /// link time covers what lies between: a memtable locates a new version of a key from
    /// the key's first possible one). Valid for this list only, and only while it lives.
    pub fn locate(&self, key: &K) -> Located {
        let mut preds = [None; MAX_HEIGHT];
        self.find_less(key, Some(&mut preds));
        Located {
            list: self.address(),
            preds,
        }
    }

    /// [`SkipList::locate`] for each key in its list, the searches taking turns a node at a
    /// time, as [`SkipList::insert_each`]'s do, so their cache misses overlap.
    pub fn locate_each(keys: &[(&Self, &K)]) -> Vec<Located> {
        if let [(list, key)] = keys {
            return vec![list.locate(key)];
        }
        let mut searches: Vec<_> = keys
            .iter()
            .map(|(list, _)| (Search::new(list), [None; MAX_HEIGHT], false))
            .collect();
        let mut searching = searches.len();
        while searching > 0 {
            searching = 0;
            for ((search, preds, done), (_, key)) in searches.iter_mut().zip(keys) {
                if !*done {
                    *done = search.step::<false>(key, Some(preds)).is_some();
                    searching += usize::from(!*done);
                }
            }
        }
        searches
            .into_iter()
            .zip(keys)
            .map(|((_, preds, _), (list, _))| Located {
                list: list.address(),
                preds,
            })
            .collect()
    }

    /// Whether `key` is above every entry (a list with none: true). An insert of such a key
    /// goes in from the last insert's splice with no search when that insert was the last
    /// entry, so it is not worth [`SkipList::locate`]'s search.
    pub fn is_above_last(&self, key: &K) -> bool {
        let tail = self.tail.load(Ordering::Acquire);
        tail == NIL || *self.slot(tail).key() < *key
    }

    /// The entry at `position`.
    pub fn entry(&self, position: Position) -> (&K, &V) {
        let slot = self.slot(position.0);
        (slot.key(), &slot.cold().value)
    }

    /// The first entry.
    pub fn first(&self) -> Option<Position> {
        self.next(None, 0).map(Position)
    }

    /// The last entry.
    pub fn last(&self) -> Option<Position> {
        let mut at = None;
        let mut level = self.height.load(Ordering::Acquire) - 1;
        loop {
            match self.next(at, level) {
                Some(next) => at = Some(next),
                None if level == 0 => return at.map(Position),
                None => level -= 1,
            }
        }
    }

    /// A hint to load the entry at `position` (its links and key, and the line after, where
    /// its value handle usually is) into the cache, without waiting for it.
    pub fn prefetch(&self, position: Position) {
        let slot = self.slot(position.0);
        strata_sstable::prefetch(slot);
        strata_sstable::prefetch(&slot.cold);
    }

    /// The entry after `position`.
    pub fn next_entry(&self, position: Position) -> Option<Position> {
        self.next(Some(position.0), 0).map(Position)
    }

    /// The first entry whose key is at or after `key`.
    pub fn seek(&self, key: &K) -> Option<Position> {
        let (_, after) = self.find_less(key, None);
        (after != NIL).then_some(Position(after))
    }

    /// The first entry whose key is at or after `key`, as [`SkipList::seek`], starting from
    /// where `finger`'s last search ended when `key` is not below that search's key.
    pub fn seek_near(&self, key: &K, finger: &mut Finger) -> Option<Position> {
        let mut search = Search::new(self);
        for level in 0..finger.levels {
            let pred = finger.preds[level];
            let next = self.link(pred, level).load(Ordering::Acquire);
            if next != NIL && self.slot(next).key() < key {
                continue;
            }
            // Start here if the remembered node is still below `key` (the keys ascend as
            // asked); otherwise search from the head.
            let at = pred.map(|index| (index, self.slot(index)));
            if at.is_none_or(|(_, slot)| slot.key() < key) {
                search.at = at;
                search.level = level;
            }
            break;
        }
        let levels = search.level + 1;
        loop {
            if let Some((_, after)) = search.step::<true>(key, Some(&mut finger.preds)) {
                finger.levels = finger.levels.max(levels);
                return (after != NIL).then_some(Position(after));
            }
        }
    }

    /// The first entry whose key is after `key`.
    pub fn seek_after(&self, key: &K) -> Option<Position> {
        let mut at = self.seek(key)?;
        while self.entry(at).0.cmp(key) == CmpOrdering::Equal {
            at = self.next_entry(at)?;
        }
        Some(at)
    }

    /// The last entry whose key is before `key`.
    pub fn seek_before(&self, key: &K) -> Option<Position> {
        self.find_less(key, None).0.map(Position)
    }

    /// The entries in order, from `from` (or the first).
    pub fn iter_from(&self, from: Option<Position>) -> impl Iterator<Item = (&K, &V)> {
        std::iter::successors(from, |at| self.next_entry(*at)).map(|at| self.entry(at))
    }

    /// Every entry in order.
    pub fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.iter_from(self.first())
    }
}

impl<K, V> std::fmt::Debug for SkipList<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SkipList")
            .field("len", &self.len.load(Ordering::Relaxed))
            .field("height", &self.height.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
