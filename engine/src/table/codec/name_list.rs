//! `NameList`: the field names a [`Record`](crate::Record) holds, shared with the other
//! records of the same fields.
//!
//! A list is either counted (an `Arc`, as a loader's [`FieldNames`](crate::FieldNames) and a
//! record whose fields were changed hold it) or interned: kept for the life of the process in
//! one registry, so the rows a query reads copy a pointer to their names and never touch a
//! reference count. The count's increment when a row was built and its decrement when the
//! caller dropped it were atomic operations on one shared line: ~10 % of a covering read's time
//! per row (`perf record -e cpu-clock`, 2026-11-24), for two instructions of ~2,000.
//!
//! The registry holds the lists the readers of stored rows ask for — a table's layouts as a
//! query keeps them, once a layout has served a few dozen rows of a query (interning costs a
//! lock and a hash of the names: a query of one row through the primary key paid ~2,000
//! instructions for it, 8 % of the query) — which are few and repeat from query to query.
//! It is bounded
//! ([`MAX_INTERNED_LISTS`], [`MAX_INTERNED_NAMES`]): past the bound a list is counted, as
//! before, so a process that meets ever new lists keeps working and stops growing.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, LazyLock, Mutex};

use crate::table::codec::record::Name;

/// How many lists the registry keeps at most.
/// TUNING: the lists are layouts × the projections queries ask for; thousands cover every
/// table of a large schema, and the registry stays well under a megabyte of pointers.
pub(crate) const MAX_INTERNED_LISTS: usize = 4096;

/// How many names, over all its lists, the registry keeps at most (the bound on its memory
/// for wide rows).
pub(crate) const MAX_INTERNED_NAMES: usize = 1 << 16;

/// A record's field names, in strictly ascending order.
#[derive(Clone)]
pub(crate) enum NameList {
    /// Shared by reference count.
    Counted(Arc<[Name]>),
    /// In the registry for the life of the process: copied, never counted.
    Interned(&'static [Name]),
}

impl NameList {
    /// The empty list (no allocation).
    pub(crate) const EMPTY: NameList = NameList::Interned(&[]);

    /// Whether `self` and `other` are the same list, not only equal ones.
    pub(crate) fn same_list(&self, other: &NameList) -> bool {
        std::ptr::eq(&**self, &**other)
    }

    /// Whether a holder other than this one may share the list: any interned list, or a
    /// counted one with another reference.
    pub(crate) fn is_shared(&self) -> bool {
        match self {
            NameList::Counted(list) => Arc::strong_count(list) > 1,
            NameList::Interned(_) => true,
        }
    }
}

impl Default for NameList {
    fn default() -> NameList {
        NameList::EMPTY
    }
}

impl Deref for NameList {
    type Target = [Name];

    #[inline]
    fn deref(&self) -> &[Name] {
        match self {
            NameList::Counted(list) => list,
            NameList::Interned(list) => list,
        }
    }
}

impl PartialEq for NameList {
    fn eq(&self, other: &NameList) -> bool {
        self.same_list(other) || **self == **other
    }
}

impl Eq for NameList {}

impl std::fmt::Debug for NameList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl From<Vec<Name>> for NameList {
    fn from(names: Vec<Name>) -> NameList {
        NameList::Counted(names.into())
    }
}

impl From<Arc<[Name]>> for NameList {
    fn from(names: Arc<[Name]>) -> NameList {
        NameList::Counted(names)
    }
}

impl FromIterator<Name> for NameList {
    fn from_iter<I: IntoIterator<Item = Name>>(names: I) -> NameList {
        NameList::Counted(names.into_iter().collect())
    }
}

/// Interned lists, and how many names they hold, up to bounds.
struct Registry {
    lists: HashMap<Vec<Name>, &'static [Name]>,
    names: usize,
    max_lists: usize,
    max_names: usize,
}

impl Registry {
    fn new(max_lists: usize, max_names: usize) -> Registry {
        Registry {
            lists: HashMap::new(),
            names: 0,
            max_lists,
            max_names,
        }
    }

    /// The interned list equal to `names` — this registry's, or a new one — or, once the
    /// registry is full, a counted list of them.
    fn intern(&mut self, names: &[Name]) -> NameList {
        if names.is_empty() {
            return NameList::EMPTY;
        }
        if let Some(&list) = self.lists.get(names) {
            return NameList::Interned(list);
        }
        if self.lists.len() >= self.max_lists || self.names + names.len() > self.max_names {
            return NameList::Counted(names.into());
        }
        let list: &'static [Name] = Box::leak(names.to_vec().into_boxed_slice());
        self.names += names.len();
        self.lists.insert(names.to_vec(), list);
        NameList::Interned(list)
    }
}

static REGISTRY: LazyLock<Mutex<Registry>> =
    LazyLock::new(|| Mutex::new(Registry::new(MAX_INTERNED_LISTS, MAX_INTERNED_NAMES)));

/// The process's interned list equal to `names`, or a counted one once the registry is full.
pub(crate) fn interned(names: &[Name]) -> NameList {
    if names.is_empty() {
        return NameList::EMPTY;
    }
    // A panic elsewhere while the lock was held left the map whole: it is still usable.
    REGISTRY
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .intern(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<Name> {
        list.iter().map(|&n| Name::from(n)).collect()
    }

    #[test]
    fn equal_lists_intern_to_one() {
        let mut registry = Registry::new(8, 64);
        let a = registry.intern(&names(&["age", "id"]));
        let b = registry.intern(&names(&["age", "id"]));
        assert!(matches!(a, NameList::Interned(_)));
        assert!(a.same_list(&b), "the second ask gets the first's list");
        let c = registry.intern(&names(&["age", "town"]));
        assert!(!a.same_list(&c));
        assert_ne!(a, c);
        assert_eq!(a, NameList::from(names(&["age", "id"])));
        assert!(a.is_shared());
        assert_eq!((registry.lists.len(), registry.names), (2, 4));
    }

    #[test]
    fn the_empty_list_is_not_registered() {
        let mut registry = Registry::new(8, 64);
        let empty = registry.intern(&[]);
        assert!(empty.is_empty() && empty.same_list(&NameList::EMPTY));
        assert!(registry.lists.is_empty());
        assert!(interned(&[]).same_list(&NameList::EMPTY));
    }

    #[test]
    fn a_full_registry_hands_out_counted_lists() {
        let mut registry = Registry::new(2, 3);
        let first = registry.intern(&names(&["a"]));
        registry.intern(&names(&["b", "c"]));
        // Three names held: a list of one more is past the name bound.
        let past = names(&["d"]);
        let list = registry.intern(&past);
        assert!(matches!(list, NameList::Counted(_)));
        assert_eq!(&*list, &past[..]);
        assert_eq!((registry.lists.len(), registry.names), (2, 3));
        // Past the list bound too, for a list that would fit the names.
        let mut wide = Registry::new(1, 100);
        wide.intern(&names(&["a"]));
        assert!(matches!(wide.intern(&names(&["b"])), NameList::Counted(_)));
        // Lists interned before the bound are still handed out interned.
        assert!(registry.intern(&names(&["a"])).same_list(&first));
        assert!(!registry.intern(&names(&["d"])).same_list(&list));
    }

    #[test]
    fn counted_and_interned_lists_compare_by_their_names() {
        let counted = NameList::from(names(&["x", "y"]));
        let again = counted.clone();
        assert!(counted.same_list(&again) && counted.is_shared());
        assert!(!NameList::from(names(&["x"])).is_shared());
        assert_eq!(format!("{counted:?}"), r#"["x", "y"]"#);
    }
}
