//! What a query reads of each stored row (`RowReader`): the fields its predicates test,
//! decoded alone first so a row the filter rejects is never built, and the fields it
//! returns. For version-2 rows it remembers a few layouts (names sections) it has seen, with
//! where its tested and returned fields are in each, so a row of a known layout costs one
//! comparison of its names and one read per field used; for version-1 rows, the names of the
//! rows before by position.

use std::sync::Arc;

use strata_planner::{Predicate, Value};

use crate::table::codec::byte_test::ByteTest;
use crate::table::codec::format::{RECORD_LAID_OUT, RECORD_VERSION};
use crate::table::codec::layouts::{Layouts, NONE};
use crate::table::codec::name_list::{NameList, interned};
use crate::table::codec::record::{Name, Record, RecordError};
use crate::table::codec::record_codec::{NameIter, View, laid_out_head, put_varint, walk};

/// Whether `bytes` is a record of version 2 or 3, read through a [`View`] at a layout's
/// places (version 1 is walked).
#[inline(always)]
pub(crate) fn in_place(bytes: &[u8]) -> bool {
    matches!(bytes.first(), Some(&(RECORD_VERSION | RECORD_LAID_OUT)))
}

/// How many version-2 layouts a reader remembers.
/// TUNING: rows whose optional fields are missing in a few combinations each keep their
/// layout; a search of the remembered ones (on a row whose layout is not the last one's) stays
/// a few short comparisons.
const LAYOUTS: usize = 8;

/// What a [`RowReader`] knows of the field at one position of the rows it reads. A table's
/// rows mostly have the same fields in the same order, so a field whose name is the one seen
/// at its position in the row before costs one comparison, not a search of the tested and
/// the kept names, and no allocation.
struct Slot {
    name: Name,
    /// Its place among the tested fields.
    tested: Option<usize>,
    /// Whether it is built.
    kept: bool,
}

/// One layout a [`RowReader`] has seen: a version-2 row's names section, or a version-3 row's
/// layout number, and where the fields the reader tests and returns are in rows of it.
struct Layout {
    /// The head of its rows, byte for byte: version, count and names section (version 2), or
    /// version and layout number (version 3).
    head: Box<[u8]>,
    /// Where the names section starts in the head (its end for version 3).
    names_at: usize,
    /// The names, by position (the table's own list, for a layout the table knows: shared,
    /// not copied name by name).
    names: Arc<[Name]>,
    /// `(position, place among the tested fields)` of every tested field the layout has.
    tested_at: Vec<(usize, usize)>,
    /// The position of each tested field (by its place among them), if the layout has it.
    tested_position: Vec<Option<usize>>,
    /// The positions of the fields built.
    kept_at: Vec<usize>,
    /// Their names, shared by the records built from rows of this layout: counted at first,
    /// interned once the layout has served [`INTERN_AFTER`] rows (then a row copies a
    /// pointer to them).
    kept_names: NameList,
    /// Rows built from this layout, counted up to [`INTERN_AFTER`].
    served: u32,
}

/// How many rows a layout serves before its kept names are interned.
/// TUNING: interning a list (a lock and a hash of its names) costs about as much as the
/// reference counts of a few dozen rows; a query of a handful of rows never pays it.
const INTERN_AFTER: u32 = 32;

impl Layout {
    /// Counts a row built from this layout, interning its kept names at [`INTERN_AFTER`].
    #[inline]
    fn serve(&mut self) {
        if self.served < INTERN_AFTER {
            self.served += 1;
            if self.served == INTERN_AFTER {
                self.kept_names = interned(&self.kept_names);
            }
        }
    }
}

/// A row's kept fields, from [`RowReader::kept`].
pub(crate) enum Kept<'r, 'b> {
    /// A version-2 row: the layout's kept names, their positions and the row's view.
    InPlace {
        names: &'r NameList,
        at: &'r [usize],
        view: View<'b>,
    },
    /// A version-1 row, its kept fields built.
    Built { names: NameList, values: Vec<Value> },
}

impl Kept<'_, '_> {
    /// The kept fields' names, in order.
    pub(crate) fn names(&self) -> &NameList {
        match self {
            Kept::InPlace { names, .. } => names,
            Kept::Built { names, .. } => names,
        }
    }

    /// Puts the value of the `i`-th kept field in `slot` (each is taken once).
    #[inline]
    pub(crate) fn take_into(&mut self, i: usize, slot: &mut Value) -> Result<(), RecordError> {
        match self {
            Kept::InPlace { at, view, .. } => view.value_into(at[i], slot),
            Kept::Built { values, .. } => {
                *slot = std::mem::replace(&mut values[i], Value::Null);
                Ok(())
            }
        }
    }
}

/// What a query needs of each row it reads: the fields its predicates test (decoded alone
/// first, so a row the filter rejects is never built) and the fields it returns.
pub(crate) struct RowReader {
    /// The version-2 layouts seen last, at most [`LAYOUTS`].
    layouts: Vec<Layout>,
    /// The one of `layouts` the last version-2 row had.
    current: usize,
    /// The fields of the version-1 rows read last, by position.
    slots: Vec<Slot>,
    /// The fields the predicates name, sorted, without repeats.
    tested: Vec<String>,
    /// For each predicate, in the query's order, its field's place in `tested`.
    predicate_slots: Vec<usize>,
    /// The tested fields' values in the row being tested.
    values: Vec<Value>,
    /// The fields to build (sorted, without repeats); `None`: every field.
    kept: Option<Vec<String>>,
    /// Every tested field is built: a row can be tested on its built record.
    builds_tested: bool,
    /// The tested field after the one [`RowReader::value_of`] found last.
    next_asked: std::cell::Cell<usize>,
    /// The fields the table's rows were last seen to have ([`RowReader::with_layout`]),
    /// learnt as a layout and slots when the first row is read, not before: a covering read
    /// that builds its rows from index entries never reads one, and learning them was a
    /// twentieth of a 30-row covering query.
    primer: Option<Arc<[Name]>>,
    /// The layouts of the table whose rows it reads (its version-3 rows name one).
    dictionary: Arc<Layouts>,
    /// How each predicate is tested on a value's bytes ([`RowReader::test_passes`]), made
    /// on its first row.
    byte_tests: Vec<ByteTest>,
    /// A record a caller was done with, whose buffers [`RowReader::build_spared`] builds the
    /// next row in ([`RowReader::keep_spare`]).
    spare: Option<Record>,
}

impl RowReader {
    /// A reader for rows tested on the fields of the query's predicates (`tested`, in the
    /// predicates' order), keeping `kept` (`None`: all).
    pub(crate) fn new(tested: &[&str], kept: Option<Vec<String>>) -> RowReader {
        RowReader::testing(tested, &[], kept)
    }

    /// [`RowReader::new`], also reading the fields `also` when a row is tested (a query's
    /// conditions test them: [`RowReader::value_of`] gives their values).
    pub(crate) fn testing(tested: &[&str], also: &[&str], kept: Option<Vec<String>>) -> RowReader {
        let mut sorted: Vec<String> = tested.iter().chain(also).map(|f| f.to_string()).collect();
        sorted.sort();
        sorted.dedup();
        let predicate_slots = tested
            .iter()
            .filter_map(|t| sorted.binary_search_by(|s| s.as_str().cmp(t)).ok())
            .collect();
        let kept = kept.map(|mut k| {
            k.sort();
            k.dedup();
            k
        });
        let builds_tested = kept.as_ref().is_none_or(|kept| {
            sorted
                .iter()
                .all(|t| kept.binary_search_by(|k| k.cmp(t)).is_ok())
        });
        RowReader {
            layouts: Vec::new(),
            current: 0,
            slots: Vec::new(),
            values: vec![Value::Null; sorted.len()],
            tested: sorted,
            predicate_slots,
            kept,
            builds_tested,
            next_asked: std::cell::Cell::new(0),
            primer: None,
            dictionary: Arc::clone(&NONE),
            byte_tests: Vec::new(),
            spare: None,
        }
    }

    /// Whether [`RowReader::testing`] with these arguments makes a reader that reads as this
    /// one does (the same tested fields in the same order, the same kept fields), so that a
    /// query of that shape may take this one up with the layouts it learnt (its table's pool
    /// of readers, `db/reader_pool.rs`).
    pub(crate) fn fits(&self, tested: &[&str], also: &[&str], kept: Option<&[String]>) -> bool {
        let has = |name: &str| self.tested_slot(name).is_some();
        let same_tested = self.predicate_slots.len() == tested.len()
            && (self.predicate_slots.iter().zip(tested)).all(|(&s, t)| self.tested[s] == *t)
            && also.iter().all(|a| has(a))
            && (self.tested.iter())
                .all(|t| tested.contains(&t.as_str()) || also.contains(&t.as_str()));
        let same_kept = match (&self.kept, kept) {
            (None, None) => true,
            (Some(mine), Some(asked)) => {
                asked.iter().all(|a| mine.binary_search(a).is_ok())
                    && mine.iter().all(|m| asked.contains(m))
            }
            _ => false,
        };
        same_tested && same_kept
    }

    /// Forgets what it holds of the query it read last — the tested values of its last row
    /// and the byte tests made of that query's predicates — keeping the layouts it learnt.
    pub(crate) fn reset(&mut self) {
        self.byte_tests.clear();
        self.clear_tested();
        self.next_asked.set(0);
    }

    /// This reader, reading rows of a table whose layouts are `layouts`.
    pub(crate) fn with_layouts(mut self, layouts: &Arc<Layouts>) -> RowReader {
        self.dictionary = Arc::clone(layouts);
        self
    }

    /// This reader, knowing `names` as the fields of the rows it will read, in order (one
    /// row's names, as [`RowReader::layout`] gave them): a row of those fields then costs no
    /// name allocation. Learnt when the first row is read ([`RowReader::prime`]).
    pub(crate) fn with_layout(mut self, names: &Arc<[Name]>) -> RowReader {
        self.primer = Some(Arc::clone(names));
        self
    }

    /// Learns the fields [`RowReader::with_layout`] gave, if not yet learnt: as the slots of
    /// version-1 rows and as the layout of version-2 rows of those fields.
    #[cold]
    fn prime(&mut self) {
        let Some(names) = self.primer.take() else {
            return;
        };
        let (tested, kept) = (&self.tested, &self.kept);
        self.slots = names
            .iter()
            .map(|name| Slot {
                name: Arc::clone(name),
                tested: tested.binary_search_by(|t| t.as_str().cmp(name)).ok(),
                kept: kept
                    .as_ref()
                    .is_none_or(|kept| kept.binary_search_by(|k| k.as_str().cmp(name)).is_ok()),
            })
            .collect();
        let mut section = Vec::new();
        for name in names.iter() {
            put_varint(&mut section, name.len() as u64);
            section.extend(name.as_bytes());
        }
        let mut head = vec![RECORD_VERSION];
        put_varint(&mut head, names.len() as u64);
        put_varint(&mut head, section.len() as u64);
        let names_at = head.len();
        head.extend(section);
        let layout = self.layout_of_names(head.into(), names_at, names);
        self.layouts.insert(0, layout);
        self.layouts.truncate(LAYOUTS);
        self.current = 0;
    }

    /// The field names this reader knows, by position: those of the rows it read last, in
    /// strictly ascending order.
    pub(crate) fn layout(&self) -> Vec<Arc<str>> {
        match (self.layouts.get(self.current), &self.primer) {
            (Some(layout), _) => layout.names.to_vec(),
            (None, Some(names)) => names.to_vec(),
            (None, None) => self.slots.iter().map(|s| Arc::clone(&s.name)).collect(),
        }
    }

    /// The layout of `names` (checked: a names section and its names, in order), with where
    /// this reader's tested and kept fields are in it.
    fn layout_of_names(&self, head: Box<[u8]>, names_at: usize, names: Arc<[Name]>) -> Layout {
        let mut tested_at = Vec::new();
        let mut tested_position = vec![None; self.tested.len()];
        let mut kept_at = Vec::new();
        for (i, name) in names.iter().enumerate() {
            if let Ok(t) = self.tested.binary_search_by(|t| t.as_str().cmp(name)) {
                tested_at.push((i, t));
                tested_position[t] = Some(i);
            }
            if self.keeps(name) {
                kept_at.push(i);
            }
        }
        // A reader that keeps every field (`SELECT *`) shares the layout's list.
        let kept_names = if kept_at.len() == names.len() {
            NameList::from(Arc::clone(&names))
        } else {
            let kept: Vec<Name> = kept_at.iter().map(|&i| Arc::clone(&names[i])).collect();
            NameList::from(kept)
        };
        Layout {
            head,
            names_at,
            names,
            tested_at,
            tested_position,
            kept_at,
            kept_names,
            served: 0,
        }
    }

    /// The place in `layouts` of the layout of `bytes`, a version-2 row, and its view. A row
    /// whose head (version, count, names) is byte for byte one seen before has only its value
    /// ends read; any other is parsed, and its layout learnt (its names checked for UTF-8,
    /// length and order). Names already known are shared, not allocated again.
    #[inline(always)]
    fn view<'a>(&mut self, bytes: &'a [u8]) -> Result<(usize, View<'a>), RecordError> {
        let known = |l: &Layout| starts_with(bytes, &l.head);
        let at = match self.layouts.get(self.current) {
            Some(l) if known(l) => Some(self.current),
            _ => self.layouts.iter().position(known),
        };
        if let Some(at) = at {
            return self.view_known(at, bytes);
        }
        if bytes.first() == Some(&RECORD_LAID_OUT) {
            // The table's layouts hold its names already made: nothing to prime.
            let at = self.learn_laid_out(bytes)?;
            return self.view_known(at, bytes);
        }
        if self.primer.is_some() {
            self.prime();
            if bytes.starts_with(&self.layouts[0].head) {
                return self.view_known(0, bytes);
            }
        }
        let view = View::parse(bytes)?;
        let at = self.learn(bytes, &view)?;
        Ok((at, view))
    }

    /// The view of `bytes`, a row of layout `at` (its head is the layout's).
    #[inline(always)]
    fn view_known<'a>(
        &mut self,
        at: usize,
        bytes: &'a [u8],
    ) -> Result<(usize, View<'a>), RecordError> {
        self.current = at;
        let l = &self.layouts[at];
        let (names_at, head, count) = (l.names_at, l.head.len(), l.names.len());
        match View::checked(bytes, names_at, head, count) {
            Some(view) => Ok((at, view)),
            None => Err(View::head_error(bytes, head, count)),
        }
    }

    /// Learns the layout of `view` (of `bytes`), a version-2 row whose head no known layout
    /// has, and gives its place.
    #[cold]
    fn learn(&mut self, bytes: &[u8], view: &View<'_>) -> Result<usize, RecordError> {
        let names = self.names_of(view.count(), view.names())?;
        let (names_at, head) = view.head();
        let layout = self.layout_of_names(bytes[..head].into(), names_at, names.into());
        Ok(self.place(layout))
    }

    /// Learns the layout of `bytes`, a version-3 row whose layout number no known layout
    /// has, from the table's layouts, and gives its place.
    #[cold]
    fn learn_laid_out(&mut self, bytes: &[u8]) -> Result<usize, RecordError> {
        let (number, head) = laid_out_head(bytes)?;
        let names = self
            .dictionary
            .names(number)
            .ok_or(RecordError::UnknownLayout(number))?;
        let layout = self.layout_of_names(bytes[..head].into(), head, names);
        Ok(self.place(layout))
    }

    /// The `count` names of `iter`, checked; those the current layout has are shared.
    fn names_of(&self, count: usize, mut iter: NameIter<'_>) -> Result<Vec<Name>, RecordError> {
        let mut names = Vec::with_capacity(count);
        for _ in 0..count {
            let name = iter.next().ok_or(RecordError::Truncated)??;
            let known = self
                .layouts
                .get(self.current)
                .and_then(|l| l.names.iter().find(|n| n.as_bytes() == name));
            names.push(match known {
                Some(known) => Arc::clone(known),
                None => Name::from(std::str::from_utf8(name).map_err(|_| RecordError::NotUtf8)?),
            });
        }
        iter.finish()?;
        Ok(names)
    }

    /// Remembers `layout` as the current one, in place of another if all places are taken.
    fn place(&mut self, layout: Layout) -> usize {
        if self.layouts.len() < LAYOUTS {
            self.layouts.push(layout);
            self.current = self.layouts.len() - 1;
        } else {
            // The next after the current one: not the layout in use, and in turn each other.
            self.current = (self.current + 1) % LAYOUTS;
            self.layouts[self.current] = layout;
        }
        self.current
    }

    /// Whether every tested field is among the built ones, so that a row expected to pass can
    /// be built first and tested on its record (one walk over its bytes instead of two).
    pub(crate) fn builds_tested(&self) -> bool {
        self.builds_tested
    }

    /// The fields it builds, sorted (`None`: every field).
    pub(crate) fn kept_list(&self) -> Option<&[String]> {
        self.kept.as_deref()
    }

    /// Whether every field this reader builds is one of `fields`.
    pub(crate) fn keeps_only(&self, fields: &[String]) -> bool {
        self.kept
            .as_ref()
            .is_some_and(|kept| kept.iter().all(|k| fields.contains(k)))
    }

    /// Whether the query returns field `name`.
    pub(crate) fn keeps(&self, name: &str) -> bool {
        self.kept
            .as_ref()
            .is_none_or(|kept| kept.binary_search_by(|k| k.as_str().cmp(name)).is_ok())
    }

    /// The place of field `name` among the tested ones, if a predicate tests it.
    pub(crate) fn tested_slot(&self, name: &str) -> Option<usize> {
        self.tested.binary_search_by(|t| t.as_str().cmp(name)).ok()
    }

    /// The value of tested field `name` in the row [`RowReader::test`] last read (`NULL` for
    /// a field no predicate tests). Asked for the tested fields in name order (as statistics
    /// ask for their columns), each costs one comparison: the one after the last found is
    /// tried before a search.
    pub(crate) fn value_of(&self, name: &str) -> &Value {
        static NULL: Value = Value::Null;
        let next = self.next_asked.get();
        let slot = match self.tested.get(next) {
            Some(t) if t == name => Some(next),
            _ => self.tested_slot(name),
        };
        match slot {
            Some(i) => {
                self.next_asked.set(i + 1);
                &self.values[i]
            }
            None => &NULL,
        }
    }

    /// Sets the tested field at place `slot` (from [`RowReader::tested_slot`]) to `value`: a
    /// value the row holds outside its record, as an index entry's key does.
    pub(crate) fn set_tested(&mut self, slot: usize, value: Value) {
        if let Some(v) = self.values.get_mut(slot) {
            *v = value;
        }
    }

    /// Whether the values [`RowReader::test`] read pass `predicates`, the query's predicates
    /// this reader was made for.
    pub(crate) fn passes(&self, predicates: &[Predicate]) -> bool {
        debug_assert_eq!(predicates.len(), self.predicate_slots.len());
        predicates
            .iter()
            .zip(&self.predicate_slots)
            .all(|(p, &slot)| p.matches(&self.values[slot]))
    }

    /// Whether the stored row `bytes` passes `predicates` (the query's, this reader was made
    /// for): [`RowReader::test`] then [`RowReader::passes`], but a version-2 or 3 row's
    /// predicates are taken one by one in the query's order, each on its value's bytes where
    /// they decide it ([`ByteTest`]: a string or a number compared for equality, a string
    /// range), stopping at the first that fails. The tested values are not kept (a caller
    /// of [`RowReader::value_of`] uses `test`).
    pub(crate) fn test_passes(
        &mut self,
        bytes: &[u8],
        predicates: &[Predicate],
    ) -> Result<bool, RecordError> {
        if !in_place(bytes) {
            self.test(bytes)?;
            return Ok(self.passes(predicates));
        }
        if self.byte_tests.len() != predicates.len() {
            self.byte_tests = predicates.iter().map(ByteTest::of).collect();
        }
        let (at, view) = self.view(bytes)?;
        let (layout, values) = (&self.layouts[at], &mut self.values);
        let tests = predicates
            .iter()
            .zip(&self.byte_tests)
            .zip(&self.predicate_slots);
        for ((p, test), &slot) in tests {
            let passes = match layout.tested_position[slot] {
                None => p.matches(&Value::Null),
                Some(i) => match test.decide(view.raw(i)?) {
                    Some(decided) => decided,
                    None => {
                        view.value_into(i, &mut values[slot])?;
                        p.matches(&values[slot])
                    }
                },
            };
            if !passes {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Sets every tested value to `NULL`: a row without fields.
    pub(crate) fn clear_tested(&mut self) {
        for v in &mut self.values {
            *v = Value::Null;
        }
    }

    /// Reads the tested fields of `bytes` (the others are skipped, their structure checked
    /// but not their text), for [`RowReader::passes`].
    pub(crate) fn test(&mut self, bytes: &[u8]) -> Result<(), RecordError> {
        if in_place(bytes) {
            let (at, view) = self.view(bytes)?;
            let layout = &self.layouts[at];
            if layout.tested_at.len() < self.values.len() {
                // Tested fields the layout lacks read as NULL; the others are overwritten.
                self.clear_tested();
            }
            for &(i, t) in &self.layouts[at].tested_at {
                view.value_into(i, &mut self.values[t])?;
            }
            return Ok(());
        }
        self.clear_tested();
        if self.primer.is_some() {
            self.prime();
        }
        let (slots, tested, kept, values) =
            (&mut self.slots, &self.tested, &self.kept, &mut self.values);
        let mut i = 0;
        let walked = walk(bytes, &self.dictionary, |name, r| {
            let (slot, known) = slot(slots, i, name, tested, kept)?;
            match slot.tested {
                Some(t) => values[t] = r.value()?,
                None => r.skip_value()?,
            }
            i += 1;
            Ok(known)
        });
        if walked.is_err() {
            // A slot learnt from a damaged row may not be in order with its neighbour.
            self.slots.clear();
        }
        walked
    }

    /// Builds the record of `bytes`: every field, or the kept ones. The record of a
    /// version-2 row shares its names with every other row of its layout.
    #[inline(always)]
    pub(crate) fn build(&mut self, bytes: &[u8]) -> Result<Record, RecordError> {
        let (names, values) = self.build_parts(bytes)?;
        Ok(Record::from_names(names, values))
    }

    /// [`RowReader::build`] in the buffers of the record kept with
    /// [`RowReader::keep_spare`], if there is one.
    #[inline(always)]
    pub(crate) fn build_spared(&mut self, bytes: &[u8]) -> Result<Record, RecordError> {
        match self.spare.take() {
            Some(spare) => self.build_reusing(bytes, spare),
            None => self.build(bytes),
        }
    }

    /// Keeps `record`, which its holder is done with, for [`RowReader::build_spared`] to
    /// build a later row in its buffers (a record of text fields is an allocation a field).
    pub(crate) fn keep_spare(&mut self, record: Record) {
        self.spare = Some(record);
    }

    /// Whether it keeps a record's buffers for its next build.
    pub(crate) fn has_spare(&self) -> bool {
        self.spare.is_some()
    }

    /// [`RowReader::build`] in the buffers of `spare`, a record the caller is done with:
    /// its values' vector, and the string of each text value where the row has a text at
    /// the same place (the rows of one layout keep their fields' places, so a run of them
    /// allocates nothing for its texts after the first).
    #[inline(always)]
    pub(crate) fn build_reusing(
        &mut self,
        bytes: &[u8],
        spare: Record,
    ) -> Result<Record, RecordError> {
        if !in_place(bytes) {
            return self.build(bytes);
        }
        let (at, view) = self.view(bytes)?;
        let layout = &mut self.layouts[at];
        layout.serve();
        let mut values = spare.into_values();
        values.resize(layout.kept_at.len(), Value::Null);
        for (slot, &i) in values.iter_mut().zip(&layout.kept_at) {
            view.value_into(i, slot)?;
        }
        Ok(Record::from_names(layout.kept_names.clone(), values))
    }

    /// The kept fields of `bytes`, for a caller that puts them in a record of its own: their
    /// names (shared by the rows of a version-2 layout), and their values, read one by one
    /// from the row where it lies.
    pub(crate) fn kept<'r, 'b>(&'r mut self, bytes: &'b [u8]) -> Result<Kept<'r, 'b>, RecordError> {
        if in_place(bytes) {
            let (names, at, view) = self.kept_in_place(bytes)?;
            return Ok(Kept::InPlace { names, at, view });
        }
        let (names, values) = self.build_parts(bytes)?;
        Ok(Kept::Built { names, values })
    }

    /// [`RowReader::kept`] of `bytes`, a row of a current format ([`in_place`]; a row of
    /// another is refused, as a row of no known version is): the kept fields' names, their
    /// places among the row's fields, and the row's view. In line, for a reader that lends
    /// each row where it lies (a [`Kept`] made and dropped was ~45 instructions a row).
    #[inline(always)]
    pub(crate) fn kept_in_place<'r, 'b>(
        &'r mut self,
        bytes: &'b [u8],
    ) -> Result<(&'r NameList, &'r [usize], View<'b>), RecordError> {
        let (at, view) = self.view(bytes)?;
        let layout = &mut self.layouts[at];
        layout.serve();
        Ok((&layout.kept_names, &layout.kept_at, view))
    }

    /// What [`RowReader::build`] builds, as the names (shared by the rows of a version-2
    /// layout) and the values.
    // In line, as `build` is: returned through memory, the names and values came back as
    // words the caller read again in wider loads, which the processor cannot forward from
    // the narrower writes (a stall that was a third of a fetched row's decoding time, `perf
    // record -e cpu-clock`; one day of `orders` 0.28 -> 0.265 µs a row).
    #[inline(always)]
    pub(crate) fn build_parts(
        &mut self,
        bytes: &[u8],
    ) -> Result<(NameList, Vec<Value>), RecordError> {
        if in_place(bytes) {
            let (at, view) = self.view(bytes)?;
            let layout = &mut self.layouts[at];
            layout.serve();
            let mut values = Vec::with_capacity(layout.kept_at.len());
            for &i in &layout.kept_at {
                values.push(Value::Null);
                if let Some(slot) = values.last_mut() {
                    view.value_into(i, slot)?;
                }
            }
            return Ok((layout.kept_names.clone(), values));
        }
        let (names, values): (Vec<Name>, Vec<Value>) =
            self.build_fields(bytes)?.into_iter().unzip();
        Ok((NameList::from(names), values))
    }

    /// The fields of a version-1 row that [`RowReader::build`] builds, in name order.
    fn build_fields(&mut self, bytes: &[u8]) -> Result<Vec<(Name, Value)>, RecordError> {
        if self.primer.is_some() {
            self.prime();
        }
        let (slots, tested, kept) = (&mut self.slots, &self.tested, &self.kept);
        let mut fields = Vec::with_capacity(slots.len().max(4));
        let mut i = 0;
        let walked = walk(bytes, &self.dictionary, |name, r| {
            let (slot, known) = slot(slots, i, name, tested, kept)?;
            if slot.kept {
                fields.push((Arc::clone(&slot.name), r.value()?));
            } else {
                r.skip_value()?;
            }
            i += 1;
            Ok(known)
        });
        if let Err(e) = walked {
            // A slot learnt from a damaged row may not be in order with its neighbour.
            self.slots.clear();
            return Err(e);
        }
        Ok(fields)
    }
}

/// What `slots` knows of the field named `name` at position `i`, and whether it was known
/// (the name seen there before), or learnt again. Relearning position `i` forgets the
/// positions after it, so that two neighbouring slots were always learnt in one row, their
/// order checked.
fn slot<'s>(
    slots: &'s mut Vec<Slot>,
    i: usize,
    name: &[u8],
    tested: &[String],
    kept: &Option<Vec<String>>,
) -> Result<(&'s Slot, bool), RecordError> {
    if slots
        .get(i)
        .is_some_and(|s| same_bytes(s.name.as_bytes(), name))
    {
        return Ok((&slots[i], true));
    }
    let text = std::str::from_utf8(name).map_err(|_| RecordError::NotUtf8)?;
    let learnt = Slot {
        name: Name::from(text),
        tested: tested.binary_search_by(|t| t.as_str().cmp(text)).ok(),
        kept: kept
            .as_ref()
            .is_none_or(|kept| kept.binary_search_by(|k| k.as_str().cmp(text)).is_ok()),
    };
    // Positions are visited in order, so `i` is at most the length.
    slots.truncate(i);
    slots.push(learnt);
    Ok((&slots[slots.len() - 1], false))
}

/// `bytes.starts_with(head)`, in line: byte by byte for the two or three bytes of a version-3
/// row's head (a `memcmp` call per row was 4 % of a filtered scan), eight bytes at a time for
/// the names section a version-2 payload starts with (a covering entry's: `memcmp` was 1.7 %
/// of a covering read's time, `perf record --call-graph dwarf`).
#[inline(always)]
pub(crate) fn starts_with(bytes: &[u8], head: &[u8]) -> bool {
    let n = head.len();
    if n <= 4 {
        return bytes.len() >= n && head.iter().zip(bytes).all(|(h, b)| h == b);
    }
    let Some(bytes) = bytes.get(..n) else {
        return false;
    };
    let word = |k: &[u8], at: usize| {
        k.get(at..at + 8)
            .map(|w| u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])))
    };
    if n < 8 {
        return bytes == head;
    }
    // Whole words, then the last eight bytes (overlapping the words before).
    let mut at = 0;
    while at + 8 <= n {
        if word(bytes, at) != word(head, at) {
            return false;
        }
        at += 8;
    }
    word(bytes, n - 8) == word(head, n - 8)
}

/// `a == b` for the short strings field names are, inline: a call to the C library's `memcmp`
/// per field was a fifth of a scan's time.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record;

    #[test]
    fn starts_with_is_the_slices_at_every_length_and_place_of_difference() {
        for n in 0..40usize {
            let head: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            let mut bytes = head.clone();
            bytes.extend_from_slice(b"rest");
            assert!(starts_with(&bytes, &head), "length {n}");
            assert!(!starts_with(&head[..n.saturating_sub(1)], &head) || n == 0);
            for at in 0..n {
                let mut other = bytes.clone();
                other[at] ^= 0x41;
                assert!(!starts_with(&other, &head), "length {n}, differing at {at}");
            }
        }
    }

    #[test]
    fn a_reader_of_every_field_builds_rows_on_the_tables_own_list_of_names() {
        let row = record! { "id" => 7, "town" => "Redmond", "zip" => "98052" };
        let layouts = Arc::new(Layouts::from_sections([row.names_section()]).unwrap());
        let stored = layouts.encode_known(&row);
        let table_names = NameList::from(layouts.names(0).unwrap());
        let mut every = RowReader::new(&["town"], None).with_layouts(&layouts);
        let built = every.build(&stored).unwrap();
        assert_eq!(built, row);
        assert!(built.field_names().list().same_list(&table_names));
        // A reader of some fields builds its own list of them.
        let mut some =
            RowReader::new(&[], Some(vec!["id".into(), "zip".into()])).with_layouts(&layouts);
        let built = some.build(&stored).unwrap();
        assert_eq!(built, record! { "id" => 7, "zip" => "98052" });
        assert!(!built.field_names().list().same_list(&table_names));
    }

    #[test]
    fn a_primed_reader_learns_its_layout_from_the_first_row_and_shares_the_primed_names() {
        let primer: Arc<[Name]> = ["id", "town"].map(Name::from).into();
        // Version 2 and version 1 of `{ id: 7, town: "Redmond" }` (docs/formats/records.md).
        let v2 = b"\x02\x02\x08\x02id\x04town\x02\x0b\x03\x0e\x05\x07Redmond";
        let v1 = b"\x01\x02\x02id\x03\x0e\x04town\x05\x07Redmond";
        let expected = record! { "id" => 7, "town" => "Redmond" };
        for bytes in [&v2[..], &v1[..]] {
            let mut reader = RowReader::new(&["town"], None).with_layout(&primer);
            // Nothing is learnt until a row is read (a covering read never reads one).
            assert!(reader.layouts.is_empty() && reader.slots.is_empty());
            assert_eq!(
                reader.layout(),
                primer.to_vec(),
                "the primed fields, before a row"
            );
            reader.test(bytes).unwrap();
            assert_eq!(reader.value_of("town"), &Value::from("Redmond"));
            assert_eq!(reader.build(bytes).unwrap(), expected);
            // The names read are the primed ones, not new allocations.
            let names = reader.layout();
            assert!(
                names
                    .iter()
                    .zip(primer.iter())
                    .all(|(a, b)| Arc::ptr_eq(a, b))
            );
        }
        // A row of other fields is learnt as before, after the primed layout.
        let mut reader = RowReader::new(&[], None).with_layout(&primer);
        let other = record! { "id" => 8, "zip" => "98052" };
        assert_eq!(reader.build(&other.encode()).unwrap(), other);
        assert_eq!(reader.build(v2).unwrap(), expected);
        assert_eq!(reader.layouts.len(), 2);
    }

    #[test]
    fn a_layout_interns_its_names_after_serving_a_few_dozen_rows() {
        let mut reader = RowReader::new(&[], Some(vec!["a".into(), "b".into()]));
        let bytes = record! { "a" => 1, "b" => "x", "c" => 2.5 }.encode();
        for row in 1..=INTERN_AFTER + 3 {
            let record = reader.build(&bytes).unwrap();
            assert_eq!(record, record! { "a" => 1, "b" => "x" });
            // Counted for the rows of a short query, interned from the INTERN_AFTER-th on.
            assert_eq!(
                record.names_are_interned(),
                row >= INTERN_AFTER,
                "row {row}"
            );
        }
        // The covering path's view of the same layout hands out the interned list too.
        match reader.kept(&bytes).unwrap() {
            Kept::InPlace { names, .. } => assert!(matches!(names, NameList::Interned(_))),
            Kept::Built { .. } => panic!("a version-2 row is read in place"),
        }
    }
}
