//! An insert under way: reserved, searched or placed from a hint, then linked. The writer
//! lock of its list is held throughout; only the writer stores links and back links.

use std::sync::atomic::Ordering;

#[cfg(doc)]
use super::Hint;
use super::{
    Cold, Full, INLINE_LINKS, Linked, MAX_HEIGHT, NIL, Position, Search, SkipList, Slot, Writer,
};
use crate::sync::core::AtomicU32;

/// The tallest node a [`Hint::Before`] places without a search: its predecessor at level 1
/// is the nearest node of two levels or more before it, four back links away on average (one
/// in four nodes has them); at level 2 it would be sixteen, more than a search costs.
pub(super) const BEFORE_HEIGHT: usize = 2;

/// Back links a hinted insert follows for its upper predecessors before it searches.
const BACK_WALK: usize = 16;

/// An insert under way: its node's index and tower reserved (under its list's writer lock,
/// which the caller holds until it is linked), its search for the predecessors in progress.
pub(super) struct Pending<'a, K, V> {
    pub(super) list: &'a SkipList<K, V>,
    pub(super) index: u32,
    pub(super) height: usize,
    pub(super) upper_links: u32,
    pub(super) search: Search<'a, K, V>,
    pub(super) preds: [Option<u32>; MAX_HEIGHT],
    pub(super) searched: bool,
    /// How the place is found: by the search, or by [`Pending::place`] from a hint when the
    /// insert is linked (see [`Ready::link`] for what each does to the splice).
    pub(super) placed: Placed,
    pub(super) key: K,
    pub(super) value: V,
}

/// How an insert's place is found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Placed {
    /// By a search under the writer lock, or from the splice.
    Searched,
    /// Right before this node, checked when the insert is linked ([`Hint::Before`], for a
    /// node of at most [`BEFORE_HEIGHT`] levels).
    Before(u32),
    /// From `preds` as [`SkipList::locate`] found them: lower bounds, walked right from when
    /// the insert is linked ([`Hint::Located`]).
    Located,
}

/// An insert whose predecessors are final ([`Pending::place`]), ready to link.
pub(super) struct Ready<'a, K, V>(pub(super) Pending<'a, K, V>);

impl<'a, K: Ord, V> Pending<'a, K, V> {
    /// Makes the predecessors final, right before the insert is linked: a searched insert's
    /// are; a located one's walk right over what went in since; a hinted one's are checked
    /// and found from the hint. REQUIRES: the writer lock, every earlier node linked.
    pub(super) fn place(mut self) -> Ready<'a, K, V> {
        match self.placed {
            Placed::Searched => {}
            Placed::Located => self.walk_right(),
            Placed::Before(hint) => self.check_before(hint),
        }
        Ready(self)
    }

    /// Each level from its located predecessor: a node at that level below this key, then
    /// and now. Only the writer stores links.
    fn walk_right(&mut self) {
        let list = self.list;
        for level in 0..self.height {
            let mut at = self.preds[level];
            loop {
                let next = list.link(at, level).load(Ordering::Relaxed);
                if next == NIL || *list.slot(next).key() >= self.key {
                    break;
                }
                at = Some(next);
            }
            self.preds[level] = at;
        }
    }

    /// The predecessors of an insert that goes right before node `hint`: at level 0 the
    /// hinted node's level-0 predecessor, if its key is below this one and the hinted
    /// node's is above; at each level above, the first node at or before that one, walking
    /// back links, that is tall enough (the last node of the level below this key). A
    /// stale hint (an insert of the same call went in between), or a walk longer than
    /// [`BACK_WALK`] nodes, searches instead.
    fn check_before(&mut self, hint: u32) {
        let list = self.list;
        let before = list.slot(hint);
        let prev = before.cold().prev.load(Ordering::Relaxed);
        let prev = (prev != NIL).then_some(prev);
        let fits =
            self.key < *before.key() && prev.is_none_or(|prev| *list.slot(prev).key() < self.key);
        if fits && self.walk_back(prev) {
            return;
        }
        self.preds = [None; MAX_HEIGHT];
        list.find_less(&self.key, Some(&mut self.preds));
    }

    /// Sets the predecessors from `prev`, the node right before this key at level 0
    /// (`None`: the head): at each level the nearest node at or before the one found for
    /// the level below that reaches it. False, after [`BACK_WALK`] nodes, if it has not
    /// found them all: a search then costs less.
    fn walk_back(&mut self, prev: Option<u32>) -> bool {
        let list = self.list;
        let mut at = prev;
        let mut walked = 0;
        self.preds[0] = at;
        for level in 1..self.height {
            while let Some(node) = at {
                let cold = list.slot(node).cold();
                if usize::from(cold.height) > level {
                    break;
                }
                walked += 1;
                if walked > BACK_WALK {
                    return false;
                }
                let back = cold.prev.load(Ordering::Relaxed);
                at = (back != NIL).then_some(back);
            }
            self.preds[level] = at;
        }
        true
    }

    /// One step of the search for the predecessors.
    #[inline]
    pub(super) fn step<const AHEAD: bool>(&mut self) {
        self.searched = self
            .search
            .step::<AHEAD>(&self.key, Some(&mut self.preds))
            .is_some();
    }

    /// After `linked` (a node of the same list, searched at the same time as this insert)
    /// went in: where it now sits between this insert's predecessor at a level and this key,
    /// it is the predecessor there. (It went in right after its own predecessor; if that is
    /// this insert's too and its key is below this one, it is the last node below this key.)
    pub(super) fn after_linked(&mut self, linked: u32, linked_preds: &[Option<u32>; MAX_HEIGHT]) {
        let slot = self.list.slot(linked);
        if *slot.key() >= self.key {
            return;
        }
        let height = usize::from(slot.cold().height);
        for (pred, linked_pred) in self.preds.iter_mut().zip(linked_preds).take(height) {
            if pred == linked_pred {
                *pred = Some(linked);
            }
        }
    }
}

impl<K: Ord, V> Ready<'_, K, V> {
    /// Writes the node and links it in from level 0 upward. Every node reserved before this
    /// one in the list is linked (or will never be).
    ///
    /// An insert placed through a [`Hint::Before`] at height 1 leaves the writer's splice to
    /// the last searched one: its node went in before a node already linked, so it is
    /// neither the list's last nor any level's, and the splice still holds nodes below every
    /// later key it serves. A taller one may have become the last node of an upper level,
    /// which an append from the splice would link behind: it leaves no splice. One placed
    /// from a [`Hint::Located`] knows its predecessors only at the levels of its own tower,
    /// and may have gone in after a level's last node, so it leaves no splice either: the
    /// next insert searches from the head.
    pub(super) fn link(self, writer: &mut Writer) -> Result<Linked, Full> {
        let Ready(pending) = self;
        let placed = pending.placed;
        let Pending {
            list,
            index,
            height,
            upper_links,
            preds,
            key,
            value,
            ..
        } = pending;
        // Levels above the list's height at the search start at the head: `preds` is already
        // `None` there.
        let list_height = list.height.load(Ordering::Relaxed);
        let slot = list.nodes.get_or_allocate(index, Slot::fresh).ok_or(Full)?;
        let written = slot
            .cold
            .set(Cold {
                value,
                height: height as u8,
                upper_links,
                prev: AtomicU32::new(preds[0].unwrap_or(NIL)),
            })
            .is_ok()
            && slot.key.set(key).is_ok();
        assert!(written, "node index {index} handed out twice");
        let upper = height.saturating_sub(INLINE_LINKS) as u32;
        list.upper_links
            .fetch_add(upper as usize, Ordering::Relaxed);

        let mut successor_at_0 = NIL;
        for (level, pred) in preds.iter().enumerate().take(height) {
            // The writer is the only one to store links, so `pred`'s successor cannot change
            // between this load and the store that replaces it.
            let successor = list.link(*pred, level).load(Ordering::Relaxed);
            list.link(Some(index), level)
                .store(successor, Ordering::Relaxed);
            list.link(*pred, level).store(index, Ordering::Release);
            if level == 0 {
                successor_at_0 = successor;
                if successor != NIL {
                    list.slot(successor)
                        .cold()
                        .prev
                        .store(index, Ordering::Relaxed);
                }
            }
        }
        if height > list_height {
            list.height.store(height, Ordering::Release);
        }
        list.len.fetch_add(1, Ordering::Release);
        if successor_at_0 == NIL {
            list.tail.store(index, Ordering::Release);
        }
        match placed {
            Placed::Searched => {
                writer.last = index;
                writer.splice = preds;
                writer.splice[..height].fill(Some(index));
            }
            Placed::Before(_) if height == 1 => {}
            Placed::Before(_) | Placed::Located => writer.last = NIL,
        }
        Ok(Linked {
            at: Position(index),
            after: preds[0].map(Position),
        })
    }
}
