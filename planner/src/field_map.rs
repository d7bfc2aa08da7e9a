//! [`FieldMap`]: what the planner knows of each field a query names, by field name, in name
//! order, with the names borrowed from the query.
//!
//! A query names a handful of fields, and the planner groups its predicates by field several
//! times a query (what to read before planning, the plan, the executor's ranges). A
//! `BTreeMap<String, Constraint>` allocated a node of ~1.7 KiB (eleven slots, whatever the
//! count) beyond the small allocator's sizes and a copy of each name, and a covering query of
//! ~30 rows spent ~10,000 of its ~128,000 instructions building and dropping such maps. A
//! sorted vector of borrowed names is one small allocation.

use std::ops::Index;

/// A map from field names (borrowed, `'k`) to `V`, iterated in name order. Meant for the
/// few fields of one query: lookups search a sorted vector.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldMap<'k, V> {
    entries: Vec<(&'k str, V)>,
}

impl<V> Default for FieldMap<'_, V> {
    fn default() -> Self {
        FieldMap {
            entries: Vec::new(),
        }
    }
}

impl<'k, V> FieldMap<'k, V> {
    /// An empty map (no allocation).
    pub fn new() -> Self {
        Self::default()
    }

    fn find(&self, field: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(f, _)| (*f).cmp(field))
    }

    /// The value of `field`.
    pub fn get(&self, field: &str) -> Option<&V> {
        self.find(field).ok().map(|i| &self.entries[i].1)
    }

    /// The map's own spelling of `field` (borrowed for `'k`), and its value.
    pub fn get_key_value(&self, field: &str) -> Option<(&'k str, &V)> {
        self.find(field).ok().map(|i| {
            let (f, v) = &self.entries[i];
            (*f, v)
        })
    }

    /// Whether `field` has a value.
    pub fn contains_key(&self, field: &str) -> bool {
        self.find(field).is_ok()
    }

    /// Sets `field` to `value`; the value it had, if any.
    pub fn insert(&mut self, field: &'k str, value: V) -> Option<V> {
        match self.find(field) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (field, value));
                None
            }
        }
    }

    /// Removes `field`; the value it had, if any.
    pub fn remove(&mut self, field: &str) -> Option<V> {
        self.find(field).ok().map(|i| self.entries.remove(i).1)
    }

    /// The value of `field`, set to `make()` first if it has none.
    pub fn get_or_insert_with(&mut self, field: &'k str, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.find(field) {
            Ok(i) => i,
            Err(i) => {
                self.entries.insert(i, (field, make()));
                i
            }
        };
        &mut self.entries[i].1
    }

    /// `(field, value)` in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&'k str, &V)> + '_ {
        self.entries.iter().map(|(f, v)| (*f, v))
    }

    /// The fields, in order.
    pub fn keys(&self) -> impl Iterator<Item = &'k str> + '_ {
        self.entries.iter().map(|(f, _)| *f)
    }

    /// The values, in their fields' order.
    pub fn values(&self) -> impl Iterator<Item = &V> + '_ {
        self.entries.iter().map(|(_, v)| v)
    }

    /// How many fields have a value.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether no field has a value.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

impl<V> Index<&str> for FieldMap<'_, V> {
    type Output = V;

    /// The value of `field`. Panics if it has none, as a map's index does: for callers that
    /// looked the field up in this map.
    fn index(&self, field: &str) -> &V {
        match self.get(field) {
            Some(v) => v,
            None => panic!("no field {field:?} in the map"),
        }
    }
}

impl<'k, V> FromIterator<(&'k str, V)> for FieldMap<'k, V> {
    /// Later values of a field replace earlier ones, as a map's collect does.
    fn from_iter<I: IntoIterator<Item = (&'k str, V)>>(iter: I) -> Self {
        let mut map = FieldMap::new();
        for (field, value) in iter {
            map.insert(field, value);
        }
        map
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn it_answers_as_a_btree_map_of_the_same_inserts_and_removals() {
        // A fixed pseudo-random sequence of inserts and removals over a few names.
        let names = ["town", "age", "zip", "id", "a", "", "balance", "Age"];
        let mut ours: FieldMap<'_, u32> = FieldMap::new();
        let mut theirs: BTreeMap<&str, u32> = BTreeMap::new();
        let mut x = 12345u32;
        for step in 0..2_000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            let name = names[(x >> 16) as usize % names.len()];
            match (x >> 8) % 4 {
                0 => assert_eq!(ours.remove(name), theirs.remove(name)),
                1 => {
                    *ours.get_or_insert_with(name, || 0) += step;
                    *theirs.entry(name).or_insert(0) += step;
                }
                _ => assert_eq!(ours.insert(name, step), theirs.insert(name, step)),
            }
            for probe in names {
                assert_eq!(ours.get(probe), theirs.get(probe));
                assert_eq!(ours.contains_key(probe), theirs.contains_key(probe));
                assert_eq!(
                    ours.get_key_value(probe),
                    theirs.get_key_value(probe).map(|(k, v)| (*k, v))
                );
            }
            assert!(ours.iter().eq(theirs.iter().map(|(k, v)| (*k, v))));
            assert_eq!(ours.len(), theirs.len());
        }
        let collected: FieldMap<'_, u32> = [("b", 1), ("a", 2), ("b", 3)].into_iter().collect();
        assert_eq!(collected.iter().collect::<Vec<_>>(), [("a", &2), ("b", &3)]);
        assert_eq!(collected["b"], 3);
    }
}
