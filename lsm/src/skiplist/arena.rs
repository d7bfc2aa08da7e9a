//! The skip list's arenas: growable arrays of node slots and of upper links, which readers
//! index while the one writer appends, without locks or moves (see the list's module docs).

use std::sync::OnceLock;

use super::NIL;

/// Slots per segment, as a power of two: 4,096 slots, about half a MiB of memtable nodes, is the
/// most an arena holds unused. Smaller under loom, where every atomic is a modelled object.
#[cfg(not(loom))]
const SEGMENT_BITS: u32 = 12;
#[cfg(loom)]
const SEGMENT_BITS: u32 = 1;

/// Segments per directory.
const DIRECTORY_BITS: u32 = 8;

/// Directories per arena.
const DIRECTORIES: usize = 256;

/// The number of slots an arena can hold.
pub const CAPACITY: u32 = {
    let capacity = (DIRECTORIES as u64) << (DIRECTORY_BITS + SEGMENT_BITS);
    if capacity > NIL as u64 {
        NIL
    } else {
        capacity as u32
    }
};

/// Slots per segment.
const SEGMENT_SLOTS: usize = 1 << SEGMENT_BITS;

/// Segments per directory.
const DIRECTORY_SEGMENTS: usize = 1 << DIRECTORY_BITS;

/// A fixed-size run of slots. Fixed sizes let the compiler drop the bounds checks from the
/// search path: every offset is masked to fit.
type Segment<T> = Box<[T; SEGMENT_SLOTS]>;

/// A table of segments, each allocated on first use.
type Directory<T> = Box<[OnceLock<Segment<T>>; DIRECTORY_SEGMENTS]>;

/// A growable array that readers index while one writer appends, without locks: slots live in
/// fixed-size segments that never move, found through two levels of lazily allocated tables.
/// A slot's memory is held until the arena is dropped.
pub struct Arena<T> {
    directories: Box<[OnceLock<Directory<T>>; DIRECTORIES]>,
}

impl<T> Arena<T> {
    pub(super) fn new() -> Self {
        Arena {
            directories: Box::new(std::array::from_fn(|_| OnceLock::new())),
        }
    }

    #[inline]
    fn split(index: u32) -> (usize, usize, usize) {
        let index = index as usize;
        (
            index >> (DIRECTORY_BITS + SEGMENT_BITS),
            (index >> SEGMENT_BITS) & (DIRECTORY_SEGMENTS - 1),
            index & (SEGMENT_SLOTS - 1),
        )
    }

    /// The slot at `index`, if its segment has been allocated.
    #[inline]
    pub(super) fn get(&self, index: u32) -> Option<&T> {
        let (directory, segment, slot) = Self::split(index);
        let segment = self.directories.get(directory)?.get()?[segment].get()?;
        Some(&segment[slot])
    }

    /// The slot at `index`, allocating its segment with `fresh` slots if needed. Only the
    /// writer allocates. `None` only when `index` is at or beyond [`CAPACITY`].
    pub(super) fn get_or_allocate(&self, index: u32, fresh: impl Fn() -> T) -> Option<&T> {
        let (directory, segment, slot) = Self::split(index);
        let segments = self
            .directories
            .get(directory)?
            .get_or_init(|| Box::new(std::array::from_fn(|_| OnceLock::new())));
        let segment = segments[segment].get_or_init(|| {
            // Built on the heap: a segment is too large for the stack.
            let slots: Box<[T]> = (0..SEGMENT_SLOTS).map(|_| fresh()).collect();
            match slots.try_into() {
                Ok(segment) => segment,
                Err(_) => unreachable!("the iterator yields SEGMENT_SLOTS slots"),
            }
        });
        Some(&segment[slot])
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[test]
    fn the_arena_hands_out_slots_across_segments_and_directories() {
        let arena: Arena<AtomicU32> = Arena::new();
        let far = 3 << (DIRECTORY_BITS + SEGMENT_BITS);
        let firsts = [0, 1 << SEGMENT_BITS, far];
        for index in firsts {
            assert!(
                arena.get(index).is_none(),
                "segment of {index} not yet allocated"
            );
            let slot = arena
                .get_or_allocate(index, || AtomicU32::new(NIL))
                .expect("below capacity");
            slot.store(index, Ordering::Relaxed);
        }
        let last_of_first = (1 << SEGMENT_BITS) - 1;
        let slot = arena
            .get(last_of_first)
            .expect("allocated with its segment");
        assert_eq!(slot.load(Ordering::Relaxed), NIL, "a fresh slot");
        for index in firsts {
            let slot = arena.get(index).expect("allocated");
            assert_eq!(slot.load(Ordering::Relaxed), index);
        }
        assert!(
            arena.get(2 << SEGMENT_BITS).is_none(),
            "a segment never touched"
        );
        assert!(
            arena
                .get_or_allocate(CAPACITY, || AtomicU32::new(NIL))
                .is_none()
        );
        assert!(arena.get_or_allocate(NIL, || AtomicU32::new(NIL)).is_none());
    }
}
