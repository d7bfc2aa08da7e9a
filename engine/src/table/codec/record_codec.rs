//! The stored form of records (`docs/formats/records.md`): the version-2 [`View`] a query
//! reads fields through, the walk over every field of either version, and the value codec.
//! [`Record`](crate::Record)'s `encode` and `decode` are built on these.

use strata_planner::Value;

use crate::table::codec::format::{
    MAX_FIELD_NAME_BYTES, MAX_FIELDS, MAX_LAYOUTS, RECORD_LAID_OUT, RECORD_V1, RECORD_VERSION,
    VALUE_BYTES, VALUE_FALSE, VALUE_FLOAT, VALUE_INT, VALUE_NULL, VALUE_STR, VALUE_TRUE,
};
use crate::table::codec::layouts::Layouts;
use crate::table::codec::record::RecordError;
use crate::table::codec::value_ref::ValueRef;

/// Walks the fields of a stored record of either version, checking its header, name order and
/// end: `each` gets every name and must read or skip its value. For a version-1 record it
/// returns whether the name is one whose order after the name before it is already known (a
/// `RowReader`'s slots: two neighbours matched there were checked in order when the second
/// was learnt), which spares the comparison; a version-2 record's names are always compared.
///
/// A version-3 row's names are those of its layout in `layouts` (its table's); a layout it
/// does not hold is [`RecordError::UnknownLayout`].
pub(crate) fn walk<'a>(
    bytes: &'a [u8],
    layouts: &Layouts,
    mut each: impl FnMut(&[u8], &mut Reader<'a>) -> Result<bool, RecordError>,
) -> Result<(), RecordError> {
    match bytes.first() {
        Some(&RECORD_VERSION) => {
            let view = View::parse(bytes)?;
            return walk_view(view, view.names(), &mut each);
        }
        Some(&RECORD_LAID_OUT) => {
            let (id, head) = laid_out_head(bytes)?;
            let section = layouts.section(id).ok_or(RecordError::UnknownLayout(id))?;
            let (count, names) = section_names(&section)?;
            let view = View::after_head(bytes, head, head, count)?;
            return walk_view(view, names, &mut each);
        }
        _ => {}
    }
    let (mut r, count) = header(bytes, RECORD_V1)?;
    let mut last: Option<&[u8]> = None;
    let mut last_known = false;
    for _ in 0..count {
        let len = r.len(MAX_FIELD_NAME_BYTES)?;
        let name = r.take(len)?;
        let known = each(name, &mut r)?;
        if !(known && last_known) && last.is_some_and(|last| last >= name) {
            return Err(RecordError::FieldOrder);
        }
        (last, last_known) = (Some(name), known);
    }
    if r.at != bytes.len() {
        return Err(RecordError::TrailingBytes);
    }
    Ok(())
}

/// [`walk`] over a record of version 2 or 3, its `names` given apart from its `view`.
fn walk_view<'a>(
    view: View<'a>,
    mut names: NameIter<'_>,
    each: &mut impl FnMut(&[u8], &mut Reader<'a>) -> Result<bool, RecordError>,
) -> Result<(), RecordError> {
    for i in 0..view.count() {
        let name = names.next().ok_or(RecordError::Truncated)??;
        let (mut r, end) = view.value_reader(i)?;
        each(name, &mut r)?;
        if r.at != end {
            return Err(RecordError::Offsets);
        }
    }
    names.finish()
}

/// Reads the first bytes of a record of `version`: the version byte and the field count
/// (checked against the limit); the reader is left after them.
fn header(bytes: &[u8], version: u8) -> Result<(Reader<'_>, usize), RecordError> {
    let mut r = Reader { bytes, at: 0 };
    let found = r.byte()?;
    if found != version {
        return Err(RecordError::Version(found));
    }
    let count = r.varint()?;
    if count > MAX_FIELDS as u64 {
        return Err(RecordError::TooManyFields(count));
    }
    Ok((r, count as usize))
}

/// The layout number of `bytes`, a version-3 record, and where its head (version and
/// number) ends: where its value ends start.
pub(crate) fn laid_out_head(bytes: &[u8]) -> Result<(u64, usize), RecordError> {
    let mut r = Reader { bytes, at: 0 };
    let found = r.byte()?;
    if found != RECORD_LAID_OUT {
        return Err(RecordError::Version(found));
    }
    let id = r.varint()?;
    if id >= MAX_LAYOUTS as u64 {
        return Err(RecordError::UnknownLayout(id));
    }
    Ok((id, r.at))
}

/// The field count of a layout's names section (`count:varint names_len:varint names`, as in
/// a version-2 record's head; `docs/formats/records.md`) and its names, each checked as it
/// is read (a caller that reads them all ends with [`NameIter::finish`]).
pub(crate) fn section_names(section: &[u8]) -> Result<(usize, NameIter<'_>), RecordError> {
    let mut r = Reader {
        bytes: section,
        at: 0,
    };
    let count = r.varint()?;
    if count > MAX_FIELDS as u64 {
        return Err(RecordError::TooManyFields(count));
    }
    let names_len = r.len(section.len())?;
    let names = r.take(names_len)?;
    if r.at != section.len() {
        return Err(RecordError::TrailingBytes);
    }
    if count == 0 && !names.is_empty() {
        return Err(RecordError::TrailingBytes);
    }
    let iter = NameIter {
        r: Reader {
            bytes: names,
            at: 0,
        },
        last: None,
    };
    Ok((count as usize, iter))
}

/// The width of each value end in a version-2 record of `total` bytes: the smallest of 1, 2
/// and 4 bytes whose range holds `total`, and so every end.
pub(crate) fn end_width(total: usize) -> usize {
    if total <= 0xff {
        1
    } else if total <= 0xffff {
        2
    } else {
        4
    }
}

/// A version-2 record with its header read: where its names, value ends and values are.
/// Reading one value checks that value and nothing else. Small (the bytes and four offsets),
/// as a reader makes one per row.
#[derive(Clone, Copy)]
pub(crate) struct View<'a> {
    bytes: &'a [u8],
    /// Where the names section starts.
    names_at: u32,
    /// Where the head (version, count, names) ends and the value ends start.
    head: u32,
    /// Where the values start.
    values_at: u32,
    count: u32,
}

impl<'a> View<'a> {
    /// Reads the header of `bytes`, a version-2 record: its version, count, names section and
    /// value ends, and that the last value ends where the record does (so a record cut short
    /// is found here, whichever fields are read).
    pub(crate) fn parse(bytes: &'a [u8]) -> Result<View<'a>, RecordError> {
        let (mut r, count) = header(bytes, RECORD_VERSION)?;
        let names_len = r.len(bytes.len())?;
        let names_at = r.at;
        r.take(names_len)?;
        if count == 0 && names_len > 0 {
            return Err(RecordError::TrailingBytes);
        }
        View::after_head(bytes, names_at, r.at, count)
    }

    /// The view of `bytes`, whose head — version, count and names section, the names starting
    /// at `names_at` and the head ending at `head` — is known to be that of a valid record of
    /// `count` fields (it is byte for byte the head of a row read before): only the value
    /// ends are checked.
    #[inline]
    pub(crate) fn after_head(
        bytes: &'a [u8],
        names_at: usize,
        head: usize,
        count: usize,
    ) -> Result<View<'a>, RecordError> {
        View::checked(bytes, names_at, head, count)
            .ok_or_else(|| View::head_error(bytes, head, count))
    }

    /// [`View::after_head`], `None` for any error: an `Option` of a view is the view's words
    /// (the error of a `Result` would share them, and every move would copy them piecewise).
    #[inline(always)]
    pub(crate) fn checked(
        bytes: &'a [u8],
        names_at: usize,
        head: usize,
        count: usize,
    ) -> Option<View<'a>> {
        let values_at = count
            .checked_mul(end_width(bytes.len()))?
            .checked_add(head)?;
        if values_at > bytes.len() {
            return None;
        }
        // Offsets fit 32 bits: a record is at most a few MiB.
        let view = View {
            bytes,
            names_at: u32::try_from(names_at).ok()?,
            head: u32::try_from(head).ok()?,
            values_at: u32::try_from(values_at).ok()?,
            count: u32::try_from(count).ok()?,
        };
        let last = if count == 0 { 0 } else { view.end(count - 1) };
        (last == bytes.len() - values_at).then_some(view)
    }

    /// Why [`View::checked`] refused `bytes`.
    #[cold]
    pub(crate) fn head_error(bytes: &[u8], head: usize, count: usize) -> RecordError {
        let values_at = count
            .checked_mul(end_width(bytes.len()))
            .and_then(|ends| ends.checked_add(head));
        let Some(values_at) = values_at.filter(|&at| u32::try_from(at).is_ok()) else {
            return RecordError::TooLong(bytes.len() as u64);
        };
        if values_at > bytes.len() {
            return RecordError::Truncated;
        }
        let ends = &bytes[head..values_at];
        let last = match end_width(bytes.len()) {
            _ if count == 0 => 0,
            1 => usize::from(ends[count - 1]),
            2 => usize::from(u16::from_le_bytes([
                ends[2 * count - 2],
                ends[2 * count - 1],
            ])),
            _ => u32::from_le_bytes([
                ends[4 * count - 4],
                ends[4 * count - 3],
                ends[4 * count - 2],
                ends[4 * count - 1],
            ]) as usize,
        };
        if last < bytes.len() - values_at {
            RecordError::TrailingBytes
        } else {
            RecordError::Truncated
        }
    }

    /// Where the names section starts in the record, and where the head (version, count and
    /// names) ends.
    pub(crate) fn head(&self) -> (usize, usize) {
        (self.names_at as usize, self.head as usize)
    }

    /// The record's bytes.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// How many fields the record has.
    pub(crate) fn count(&self) -> usize {
        self.count as usize
    }

    /// The names, each checked for its length and its order after the one before.
    pub(crate) fn names(&self) -> NameIter<'a> {
        NameIter {
            r: Reader {
                bytes: &self.bytes[self.names_at as usize..self.head as usize],
                at: 0,
            },
            last: None,
        }
    }

    /// Where value `i` (below the count) ends, from the start of the values. A copy of a
    /// variable-width slice would be a `memmove` call per field read.
    #[inline(always)]
    fn end(&self, i: usize) -> usize {
        let e = &self.bytes[self.head as usize..self.values_at as usize];
        match end_width(self.bytes.len()) {
            1 => usize::from(e[i]),
            2 => usize::from(u16::from_le_bytes([e[2 * i], e[2 * i + 1]])),
            _ => u32::from_le_bytes([e[4 * i], e[4 * i + 1], e[4 * i + 2], e[4 * i + 3]]) as usize,
        }
    }

    /// A reader at value `i` (below the count), and where the value must end in the record.
    /// The reader may read on past that end (its bytes are the whole record's, so a number
    /// at the end of its place reads as one word instead of byte by byte): every caller
    /// checks that it stopped exactly there.
    #[inline(always)]
    pub(crate) fn value_reader(&self, i: usize) -> Result<(Reader<'a>, usize), RecordError> {
        // Both ends from one slice of the ends, their width found once (`end` twice was ~25
        // instructions a value more, callgrind).
        let values_at = self.values_at as usize;
        let e = &self.bytes[self.head as usize..values_at];
        let (start, end) = match end_width(self.bytes.len()) {
            1 => (
                if i == 0 { 0 } else { usize::from(e[i - 1]) },
                usize::from(e[i]),
            ),
            2 => {
                let at = |k: usize| usize::from(u16::from_le_bytes([e[2 * k], e[2 * k + 1]]));
                (if i == 0 { 0 } else { at(i - 1) }, at(i))
            }
            _ => {
                let at = |k: usize| {
                    u32::from_le_bytes([e[4 * k], e[4 * k + 1], e[4 * k + 2], e[4 * k + 3]])
                        as usize
                };
                (if i == 0 { 0 } else { at(i - 1) }, at(i))
            }
        };
        if start > end || end > self.bytes.len() - values_at {
            return Err(RecordError::Offsets);
        }
        let reader = Reader {
            bytes: self.bytes,
            at: values_at + start,
        };
        Ok((reader, values_at + end))
    }

    /// The stored bytes of value `i` (below the count): its tag and payload, exactly its
    /// place in the record, not decoded.
    #[inline(always)]
    pub(crate) fn raw(&self, i: usize) -> Result<&'a [u8], RecordError> {
        let (r, end) = self.value_reader(i)?;
        Ok(&self.bytes[r.at..end])
    }

    /// Value `i` (below the count), checked to fill exactly its place, its text or bytes
    /// borrowed from the record.
    #[inline(always)]
    pub(crate) fn value_ref(&self, i: usize) -> Result<ValueRef<'a>, RecordError> {
        let (mut r, end) = self.value_reader(i)?;
        let value = r.value_ref()?;
        if r.at != end {
            return Err(RecordError::Offsets);
        }
        Ok(value)
    }

    /// Puts value `i` (below the count), checked to fill exactly its place, in `slot` (see
    /// [`Reader::value_into`]).
    #[inline(always)]
    pub(crate) fn value_into(&self, i: usize, slot: &mut Value) -> Result<(), RecordError> {
        let (mut r, end) = self.value_reader(i)?;
        r.value_into(slot)?;
        if r.at != end {
            return Err(RecordError::Offsets);
        }
        Ok(())
    }
}

/// The names of a version-2 record's names section, in order, each checked.
pub(crate) struct NameIter<'a> {
    r: Reader<'a>,
    last: Option<&'a [u8]>,
}

impl<'a> NameIter<'a> {
    /// Checks that the names section held nothing after the last name read.
    pub(crate) fn finish(&self) -> Result<(), RecordError> {
        if self.r.at != self.r.bytes.len() {
            return Err(RecordError::TrailingBytes);
        }
        Ok(())
    }
}

impl<'a> Iterator for NameIter<'a> {
    type Item = Result<&'a [u8], RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        let name = self
            .r
            .len(MAX_FIELD_NAME_BYTES)
            .and_then(|len| self.r.take(len));
        Some(match name {
            Ok(name) if self.last.is_some_and(|last| last >= name) => Err(RecordError::FieldOrder),
            Ok(name) => {
                self.last = Some(name);
                Ok(name)
            }
            Err(e) => Err(e),
        })
    }
}

pub(crate) fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// How many bytes `put_varint` writes for `v`.
pub(crate) fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// How many bytes `encode_value` writes for `value`.
pub(crate) fn value_len(value: &Value) -> usize {
    1 + match value {
        Value::Null | Value::Bool(_) => 0,
        Value::Int(i) => varint_len(((i << 1) ^ (i >> 63)) as u64),
        Value::Float(_) => 8,
        Value::Str(s) => varint_len(s.len() as u64) + s.len(),
        Value::Bytes(b) => varint_len(b.len() as u64) + b.len(),
    }
}

pub(crate) fn encode_value(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(VALUE_NULL),
        Value::Bool(false) => out.push(VALUE_FALSE),
        Value::Bool(true) => out.push(VALUE_TRUE),
        Value::Int(i) => {
            out.push(VALUE_INT);
            put_varint(out, ((i << 1) ^ (i >> 63)) as u64);
        }
        Value::Float(x) => {
            out.push(VALUE_FLOAT);
            out.extend(x.to_bits().to_le_bytes());
        }
        Value::Str(s) => {
            out.push(VALUE_STR);
            put_varint(out, s.len() as u64);
            out.extend(s.as_bytes());
        }
        Value::Bytes(b) => {
            out.push(VALUE_BYTES);
            put_varint(out, b.len() as u64);
            out.extend(b);
        }
    }
}

/// A cursor over bytes being decoded.
pub(crate) struct Reader<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) at: usize,
}

impl<'a> Reader<'a> {
    pub(crate) fn byte(&mut self) -> Result<u8, RecordError> {
        let b = *self.bytes.get(self.at).ok_or(RecordError::Truncated)?;
        self.at += 1;
        Ok(b)
    }

    pub(crate) fn take(&mut self, n: usize) -> Result<&'a [u8], RecordError> {
        let end = self.at.checked_add(n).ok_or(RecordError::Truncated)?;
        let slice = self.bytes.get(self.at..end).ok_or(RecordError::Truncated)?;
        self.at = end;
        Ok(slice)
    }

    #[inline]
    pub(crate) fn varint(&mut self) -> Result<u64, RecordError> {
        // One byte (lengths, small numbers), then two to eight read as one word where eight
        // are there: a filtered scan reads one or two numbers a row.
        if let Some(&b) = self.bytes.get(self.at)
            && b < 0x80
        {
            self.at += 1;
            return Ok(u64::from(b));
        }
        if let Some(word) = self.bytes.get(self.at..self.at + 8) {
            let word = u64::from_le_bytes(word.try_into().map_err(|_| RecordError::Truncated)?);
            let stops = !word & 0x8080_8080_8080_8080;
            if stops != 0 {
                let used = (stops.trailing_zeros() / 8 + 1) as usize;
                // Shortest form only: a final zero byte after the first is padding.
                if (word >> (8 * (used - 1))) & 0xff == 0 {
                    return Err(RecordError::Varint);
                }
                self.at += used;
                return Ok(strata_lsm::coding::gather_7bit(word, used));
            }
        }
        self.varint_bytewise()
    }

    /// [`Reader::varint`] a byte at a time: near the end of the bytes, or over eight bytes.
    #[inline(never)]
    fn varint_bytewise(&mut self) -> Result<u64, RecordError> {
        let mut v = 0u64;
        for i in 0..10 {
            let b = self.byte()?;
            let bits = u64::from(b & 0x7f);
            if i == 9 && b > 1 {
                return Err(RecordError::Varint);
            }
            v |= bits << (7 * i);
            if b & 0x80 == 0 {
                // Shortest form only: a final zero byte after the first is padding.
                if i > 0 && b == 0 {
                    return Err(RecordError::Varint);
                }
                return Ok(v);
            }
        }
        Err(RecordError::Varint)
    }

    /// A length, checked against `max` and against the bytes left.
    #[inline]
    pub(crate) fn len(&mut self, max: usize) -> Result<usize, RecordError> {
        let len = self.varint()?;
        if len > max as u64 {
            return Err(RecordError::TooLong(len));
        }
        Ok(len as usize)
    }

    /// Moves past one value without building it.
    pub(crate) fn skip_value(&mut self) -> Result<(), RecordError> {
        match self.byte()? {
            VALUE_NULL | VALUE_FALSE | VALUE_TRUE => {}
            VALUE_INT => {
                self.varint()?;
            }
            VALUE_FLOAT => {
                self.take(8)?;
            }
            VALUE_STR | VALUE_BYTES => {
                let len = self.len(self.bytes.len())?;
                self.take(len)?;
            }
            other => return Err(RecordError::UnknownTag(other)),
        }
        Ok(())
    }

    /// [`Reader::value`] into `slot`: a number is written where it goes, not moved there
    /// through a returned `Result` (whose error shares the value's bytes, so each move copies
    /// them piecewise).
    #[inline(always)]
    pub(crate) fn value_into(&mut self, slot: &mut Value) -> Result<(), RecordError> {
        match self.bytes.get(self.at) {
            Some(&VALUE_INT) => {
                self.at += 1;
                let z = self.varint()?;
                *slot = Value::Int(((z >> 1) as i64) ^ -((z & 1) as i64));
            }
            Some(&VALUE_FLOAT) => {
                let bits = self
                    .bytes
                    .get(self.at + 1..self.at + 9)
                    .ok_or(RecordError::Truncated)?;
                self.at += 9;
                let bits: [u8; 8] = bits.try_into().map_err(|_| RecordError::Truncated)?;
                *slot = Value::Float(f64::from_bits(u64::from_le_bytes(bits)));
            }
            // A text into a slot that holds text already (a tested field, row after row):
            // its buffer is reused, not freed and allocated again (a filtered scan of text
            // spent a tenth of its time in the allocator).
            Some(&VALUE_STR) if matches!(slot, Value::Str(_)) => {
                self.at += 1;
                let len = self.len(self.bytes.len())?;
                let text = text(self.take(len)?)?;
                if let Value::Str(held) = slot {
                    held.clear();
                    held.push_str(text);
                }
            }
            // A text into any other slot is built there. (Returned from `value`, it came back
            // through memory written a word at a time and was read as wider words, which the
            // processor cannot forward from the writes: a stall of a third of a fetched row's
            // decoding time, `perf record -e cpu-clock`.)
            Some(&VALUE_STR) => {
                self.at += 1;
                let len = self.len(self.bytes.len())?;
                let text = text(self.take(len)?)?;
                *slot = Value::Str(text.to_owned());
            }
            _ => *slot = self.value()?,
        }
        Ok(())
    }

    /// [`Reader::value`], its text or bytes borrowed where they lie (checked as `value`
    /// checks them).
    #[inline(always)]
    pub(crate) fn value_ref(&mut self) -> Result<ValueRef<'a>, RecordError> {
        match self.byte()? {
            VALUE_NULL => Ok(ValueRef::Null),
            VALUE_FALSE => Ok(ValueRef::Bool(false)),
            VALUE_TRUE => Ok(ValueRef::Bool(true)),
            VALUE_INT => {
                let z = self.varint()?;
                Ok(ValueRef::Int(((z >> 1) as i64) ^ -((z & 1) as i64)))
            }
            VALUE_FLOAT => {
                let bits: [u8; 8] = self
                    .take(8)?
                    .try_into()
                    .map_err(|_| RecordError::Truncated)?;
                Ok(ValueRef::Float(f64::from_bits(u64::from_le_bytes(bits))))
            }
            VALUE_STR => {
                let len = self.len(self.bytes.len())?;
                Ok(ValueRef::Str(text(self.take(len)?)?))
            }
            VALUE_BYTES => {
                let len = self.len(self.bytes.len())?;
                Ok(ValueRef::Bytes(self.take(len)?))
            }
            other => Err(RecordError::UnknownTag(other)),
        }
    }

    /// The next value, owned ([`Reader::value_ref`], its text or bytes copied).
    #[inline]
    pub(crate) fn value(&mut self) -> Result<Value, RecordError> {
        Ok(self.value_ref()?.to_value())
    }
}

/// `bytes` as text, refused unless UTF-8. Text read back from rows is mostly ASCII, and
/// `<[u8]>::is_ascii` reads a word at a time where `str::from_utf8` steps a byte at a time
/// until its input is aligned: on the tables harness's `orders` rows (five texts of 1 to 79
/// bytes) the check was ~100 of a fetched row's ~6,000 instructions a text.
#[inline]
fn text(bytes: &[u8]) -> Result<&str, RecordError> {
    if ascii(bytes) {
        #[expect(
            unsafe_code,
            reason = "the UTF-8 check `ascii` has just made, done faster"
        )]
        // SAFETY: every byte is below 0x80 (`ascii` checked this very slice just above,
        // whatever the file held; its test covers every length and place to 40 bytes), and a
        // sequence of ASCII bytes is valid UTF-8.
        return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
    }
    std::str::from_utf8(bytes).map_err(|_| RecordError::NotUtf8)
}

/// Whether every byte of `bytes` is below 0x80. Texts of up to 16 bytes (most of a row's: a
/// code, a date, a name) are checked as two overlapping words in line; longer ones by
/// `<[u8]>::is_ascii`, a call that was 7 % of a fetched row's time when every text made it.
#[inline]
fn ascii(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let n = bytes.len();
    let word = |at: usize| {
        bytes.get(at..at + 8).map_or(HIGH, |w| {
            u64::from_ne_bytes(w.try_into().unwrap_or([0x80; 8]))
        })
    };
    let half = |at: usize| {
        bytes.get(at..at + 4).map_or(0x8080_8080, |w| {
            u32::from_ne_bytes(w.try_into().unwrap_or([0x80; 4]))
        })
    };
    match n {
        0..4 => bytes.iter().all(|&b| b < 0x80),
        4..8 => (half(0) | half(n - 4)) & 0x8080_8080 == 0,
        8..=16 => (word(0) | word(n - 8)) & HIGH == 0,
        _ => bytes.is_ascii(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_finds_a_high_byte_at_every_length_and_place() {
        for n in 0..40usize {
            let clean: Vec<u8> = (0..n).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(ascii(&clean), "length {n}");
            for at in 0..n {
                for high in [0x80u8, 0xc3, 0xff] {
                    let mut dirty = clean.clone();
                    dirty[at] = high;
                    assert!(!ascii(&dirty), "length {n}, {high:#x} at {at}");
                }
            }
        }
    }

    #[test]
    fn text_is_checked_on_the_ascii_path_and_off_it() {
        assert_eq!(text(b""), Ok(""));
        assert_eq!(text(b"Clerk#000000951"), Ok("Clerk#000000951"));
        assert_eq!(text("Zürich, 東京".as_bytes()), Ok("Zürich, 東京"));
        for bad in [&[0xff][..], b"ok\x80", &[b'a', 0xc3], &[0xed, 0xa0, 0x80]] {
            assert_eq!(text(bad), Err(RecordError::NotUtf8), "{bad:?}");
        }
    }

    #[test]
    fn text_read_into_a_text_slot_reuses_its_buffer_and_is_checked_the_same() {
        let mut slot = Value::Str(String::with_capacity(64));
        let Value::Str(before) = &slot else {
            unreachable!()
        };
        let buffer = before.as_ptr();
        for text in ["Redmond", "", "a longer town name"] {
            let mut bytes = vec![VALUE_STR, text.len() as u8];
            bytes.extend_from_slice(text.as_bytes());
            let mut r = Reader {
                bytes: &bytes,
                at: 0,
            };
            r.value_into(&mut slot).unwrap();
            assert_eq!(r.at, bytes.len());
            assert_eq!(slot, Value::Str(text.into()));
            let Value::Str(now) = &slot else {
                unreachable!()
            };
            assert_eq!(now.as_ptr(), buffer, "the slot's buffer was replaced");
        }
        for bad in [&[VALUE_STR, 2, 0xff, 0xfe][..], &[VALUE_STR, 5, b'a'][..]] {
            let mut r = Reader { bytes: bad, at: 0 };
            let fresh = Reader { bytes: bad, at: 0 }.value();
            assert_eq!(r.value_into(&mut slot).err(), fresh.err());
        }
    }

    fn read(bytes: &[u8]) -> Result<(u64, usize), RecordError> {
        let mut r = Reader { bytes, at: 0 };
        let v = r.varint()?;
        Ok((v, r.at))
    }

    #[test]
    fn varints_read_alike_with_or_without_eight_bytes_to_read() {
        // The word path (eight bytes there) and the bytewise one (fewer) agree on every
        // width, whatever follows.
        let mut values = vec![0u64, 1, 127, 128, 300, 16_383, 16_384, u64::MAX];
        values.extend((0..64).map(|shift| 1u64 << shift));
        values.extend((1..64).map(|shift| (1u64 << shift) - 1));
        for value in values {
            let mut encoded = Vec::new();
            put_varint(&mut encoded, value);
            for tail in 0..10 {
                for filler in [0x00u8, 0x80, 0xff] {
                    let mut bytes = encoded.clone();
                    bytes.extend(std::iter::repeat_n(filler, tail));
                    assert_eq!(read(&bytes), Ok((value, encoded.len())), "{value} + {tail}");
                }
            }
        }
    }

    #[test]
    fn padded_and_cut_varints_are_refused_on_both_paths() {
        for tail in [0usize, 10] {
            let with_tail = |mut bytes: Vec<u8>| {
                bytes.extend(std::iter::repeat_n(0x01, tail));
                bytes
            };
            // 5 padded to two and to four bytes.
            assert_eq!(read(&with_tail(vec![0x85, 0x00])), Err(RecordError::Varint));
            assert_eq!(
                read(&with_tail(vec![0x85, 0x80, 0x80, 0x00])),
                Err(RecordError::Varint)
            );
        }
        assert!(read(&[0x85, 0x80]).is_err(), "cut short");
        assert!(read(&[0x80; 16]).is_err(), "over ten bytes");
    }
}
