//! The order-preserving tuple code for keys (`docs/formats/keys.md`).
//!
//! A key is the concatenation of its values' encodings. Each encoding is a tag byte, then a
//! payload that sorts as the value does, then — for strings and bytes — a terminator, so:
//!
//! 1. `encode(a) < encode(b)` bytewise exactly when `a < b` in [`Value`]'s order;
//! 2. no encoding is a prefix of another (prefix-free), so a tuple's encoding followed by
//!    anything sorts by the tuple first: `tuple(index values) ‖ tuple(primary key)` orders
//!    index entries by value, then key, and a prefix scan finds every row with a value.
//!
//! Integers and floats form one order (`Int(1) < Float(1.5) < Int(2)`), written one of two
//! ways, the table's [`KeyFormat`]. In key format 1 a number is its value rounded to `f64`
//! (sign-flipped IEEE bits, which sort as `f64::total_cmp`), then a kind byte: an integer
//! below that `f64`, an integer equal to it (every integer up to 2^53 in magnitude), a float,
//! or an integer above it; an integer below or above is followed by 2 bytes of distance (never
//! more than 1,024), which order the integers beyond 2^53 that round alike — 10 bytes for the
//! common integer. Key format 2 (`key_number.rs`) writes a number's binary exponent and
//! significant bits, 3 to 5 bytes for the common integer. Decoding reads both, by tag.

use std::cmp::Ordering;

use crate::table::codec::format::{
    KEY_BYTES, KEY_FALSE, KEY_FLOAT, KEY_INT, KEY_INT_ABOVE, KEY_INT_BELOW, KEY_NULL, KEY_NUMBER,
    KEY_STR, KEY_TRUE, KEY2_POS,
};
use crate::table::codec::key_number;
use strata_planner::Value;

/// Why key bytes do not decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The bytes end inside a value.
    #[error("key ends inside a value")]
    Truncated,
    /// A byte where a value starts is not a tag.
    #[error("unknown value tag {0:#04x}")]
    UnknownTag(u8),
    /// An escape in a string or bytes value is not `00 ff` or the `00 01` terminator.
    #[error("bad escape in a string or bytes value")]
    BadEscape,
    /// A string value is not UTF-8.
    #[error("string value is not UTF-8")]
    NotUtf8,
    /// A number's parts do not describe one value the encoder would write.
    #[error("number is not in canonical form")]
    BadNumber,
    /// The key holds a different number of values than expected.
    #[error("key holds {actual} values, expected {expected}")]
    Arity {
        /// Values expected.
        expected: usize,
        /// Values found.
        actual: usize,
    },
}

/// How a table's keys write numbers (`docs/formats/keys.md`); every other value is written
/// alike. A table keeps the format it was created with (its definition's `keys`), since keys
/// of two formats cannot share a column family; readers decode both, by tag.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum KeyFormat {
    /// Format 1: a number is its value rounded to `f64` (8 bytes) and a kind byte — 10 bytes
    /// for the common integer. Tables created before key format 2 keep it.
    F64,
    /// Format 2: a number is its binary exponent and its significant bits in groups of seven
    /// (`key_number.rs`) — 3 to 5 bytes for the common integer. New tables use it.
    #[default]
    Compact,
}

impl KeyFormat {
    /// The format new tables are created with.
    pub const NEWEST: KeyFormat = KeyFormat::Compact;

    /// Its number in a table definition (`keys`).
    pub fn number(self) -> u32 {
        match self {
            KeyFormat::F64 => 1,
            KeyFormat::Compact => 2,
        }
    }

    /// The format a definition's number names, if this build knows it.
    pub fn from_number(n: u32) -> Option<KeyFormat> {
        match n {
            1 => Some(KeyFormat::F64),
            2 => Some(KeyFormat::Compact),
            _ => None,
        }
    }

    /// Appends the encoding of `value` to `out`.
    #[inline]
    pub fn encode_value(self, value: &Value, out: &mut Vec<u8>) {
        match (self, value) {
            (KeyFormat::Compact, Value::Int(i)) => key_number::encode_int(*i, out),
            (KeyFormat::Compact, Value::Float(x)) => key_number::encode_float(*x, out),
            _ => encode_value_f64(value, out),
        }
    }

    /// The encoding of a tuple.
    pub fn encode_key<'v>(self, values: impl IntoIterator<Item = &'v Value>) -> Vec<u8> {
        let mut out = Vec::new();
        for v in values {
            out.reserve(encoded_len_hint(v));
            self.encode_value(v, &mut out);
        }
        out
    }

    /// [`KeyFormat::encode_key`] of a slice, sized once: growing the vector value by value
    /// reallocated, and `realloc` takes the allocator's arena lock, where two committing
    /// threads slept (`perf record -e sched:sched_switch`: 880 of 2,570 sleeps in 200,000
    /// transactions).
    pub(crate) fn encode_key_of(self, values: &[&Value]) -> Vec<u8> {
        let mut out = Vec::with_capacity(values.iter().map(|v| encoded_len_hint(v)).sum());
        for v in values {
            self.encode_value(v, &mut out);
        }
        out
    }
}

/// `f64` bits that sort bytewise as `f64::total_cmp`.
pub(crate) fn ordered_f64(x: f64) -> [u8; 8] {
    let bits = x.to_bits();
    let flipped = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    flipped.to_be_bytes()
}

pub(crate) fn unordered_f64(bytes: [u8; 8]) -> f64 {
    let flipped = u64::from_be_bytes(bytes);
    let bits = if flipped >> 63 == 1 {
        flipped & !(1 << 63)
    } else {
        !flipped
    };
    f64::from_bits(bits)
}

/// Appends the encoding of `value` in key format 1.
fn encode_value_f64(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(KEY_NULL),
        Value::Bool(false) => out.push(KEY_FALSE),
        Value::Bool(true) => out.push(KEY_TRUE),
        Value::Int(i) => {
            let rounded = *i as f64;
            // `rounded` is integral and at most 2^63 in magnitude, so it converts exactly.
            let distance = i128::from(*i) - rounded as i128;
            debug_assert!(
                distance.abs() <= 1024,
                "an f64 near an i64 is within 1024 of it"
            );
            out.push(KEY_NUMBER);
            out.extend(ordered_f64(rounded));
            match distance.cmp(&0) {
                Ordering::Equal => out.push(KEY_INT),
                Ordering::Less => out.push(KEY_INT_BELOW),
                Ordering::Greater => out.push(KEY_INT_ABOVE),
            }
            if distance != 0 {
                out.extend(((distance + 0x8000) as u16).to_be_bytes());
            }
        }
        Value::Float(x) => {
            out.push(KEY_NUMBER);
            out.extend(ordered_f64(*x));
            out.push(KEY_FLOAT);
        }
        Value::Str(s) => {
            out.push(KEY_STR);
            escape(s.as_bytes(), out);
        }
        Value::Bytes(b) => {
            out.push(KEY_BYTES);
            escape(b, out);
        }
    }
}

/// `00` becomes `00 ff`; the end is `00 01`. A shorter value's terminator sorts before any
/// byte a longer one continues with, and an escaped zero after it.
fn escape(bytes: &[u8], out: &mut Vec<u8>) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend([0x00, 0x01]);
}

/// The encoding of a tuple in the format new tables use ([`KeyFormat::NEWEST`]); a table's
/// own keys are [`KeyFormat::encode_key`] of its definition's [`crate::TableDef::key_format`].
pub fn encode_key<'v>(values: impl IntoIterator<Item = &'v Value>) -> Vec<u8> {
    KeyFormat::NEWEST.encode_key(values)
}

/// The encoded length of `value`, exact but for a string or byte string's escaped zeros.
fn encoded_len_hint(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(_) => 1,
        Value::Int(_) => 12,
        Value::Float(_) => 11,
        Value::Str(s) => s.len() + 3,
        Value::Bytes(b) => b.len() + 3,
    }
}

/// Decodes one value from the front of `bytes`: the value and the bytes it used.
pub fn decode_value(bytes: &[u8]) -> Result<(Value, usize), KeyError> {
    let mut value = Value::Null;
    let used = decode_value_into(bytes, &mut value)?;
    Ok((value, used))
}

/// [`decode_value`] into `slot`, giving the bytes used: a decoder filling a vector writes
/// each value where it goes, not through a returned copy.
#[inline]
pub fn decode_value_into(bytes: &[u8], slot: &mut Value) -> Result<usize, KeyError> {
    // The common key field, an integer equal to its `f64`, without the general path's
    // 128-bit arithmetic; anything else, and every error, takes that path.
    if let [KEY_NUMBER, bits @ .., KEY_INT] = bytes.get(..10).unwrap_or_default() {
        let rounded = unordered_f64(bits.try_into().unwrap_or_default());
        // -2^63 <= rounded < 2^63, so the cast is exact when `rounded` is integral; NaN fails.
        if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&rounded) {
            let value = rounded as i64;
            // Canonical: integral, and not -0.0.
            if (value as f64).to_bits() == rounded.to_bits() {
                *slot = Value::Int(value);
                return Ok(10);
            }
        }
    }
    if bytes.first() == Some(&KEY2_POS)
        && let Some((value, used)) = key_number::positive_int(bytes)
    {
        *slot = Value::Int(value);
        return Ok(used);
    }
    let (value, used) = decode_any(bytes)?;
    *slot = value;
    Ok(used)
}

fn decode_any(bytes: &[u8]) -> Result<(Value, usize), KeyError> {
    let (&tag, rest) = bytes.split_first().ok_or(KeyError::Truncated)?;
    match tag {
        KEY_NULL => Ok((Value::Null, 1)),
        KEY_FALSE => Ok((Value::Bool(false), 1)),
        KEY_TRUE => Ok((Value::Bool(true), 1)),
        KEY_NUMBER => {
            let bits: [u8; 8] = rest
                .get(..8)
                .and_then(|b| b.try_into().ok())
                .ok_or(KeyError::Truncated)?;
            let rounded = unordered_f64(bits);
            let kind = *rest.get(8).ok_or(KeyError::Truncated)?;
            let (distance, used) = match kind {
                KEY_FLOAT => return Ok((Value::Float(rounded), 10)),
                KEY_INT => (0, 10),
                KEY_INT_BELOW | KEY_INT_ABOVE => {
                    let distance: [u8; 2] = rest
                        .get(9..11)
                        .and_then(|b| b.try_into().ok())
                        .ok_or(KeyError::Truncated)?;
                    let distance = i128::from(u16::from_be_bytes(distance)) - 0x8000;
                    // Canonical: the kind byte agrees with the distance's sign.
                    if (kind == KEY_INT_BELOW) != (distance < 0) || distance == 0 {
                        return Err(KeyError::BadNumber);
                    }
                    (distance, 12)
                }
                _ => return Err(KeyError::BadNumber),
            };
            if !rounded.is_finite() || rounded.fract() != 0.0 {
                return Err(KeyError::BadNumber);
            }
            // `as` saturates for huge floats, so the sum is checked too.
            let value = (rounded as i128)
                .checked_add(distance)
                .and_then(|v| i64::try_from(v).ok())
                .ok_or(KeyError::BadNumber)?;
            // Canonical: the encoder would have written exactly these bytes.
            if (value as f64).to_bits() != rounded.to_bits() {
                return Err(KeyError::BadNumber);
            }
            Ok((Value::Int(value), used))
        }
        KEY_STR => {
            let (raw, used) = unescape(rest)?;
            let s = String::from_utf8(raw).map_err(|_| KeyError::NotUtf8)?;
            Ok((Value::Str(s), 1 + used))
        }
        KEY_BYTES => {
            let (raw, used) = unescape(rest)?;
            Ok((Value::Bytes(raw), 1 + used))
        }
        other if key_number::is_tag(other) => key_number::decode(bytes),
        other => Err(KeyError::UnknownTag(other)),
    }
}

fn unescape(bytes: &[u8]) -> Result<(Vec<u8>, usize), KeyError> {
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        // The run up to the next zero byte is copied whole.
        let run = bytes[i..]
            .iter()
            .position(|&b| b == 0)
            .ok_or(KeyError::Truncated)?;
        out.extend_from_slice(&bytes[i..i + run]);
        i += run;
        match bytes.get(i + 1) {
            Some(0xff) => {
                out.push(0);
                i += 2;
            }
            Some(0x01) => return Ok((out, i + 2)),
            Some(_) => return Err(KeyError::BadEscape),
            None => return Err(KeyError::Truncated),
        }
    }
}

/// The length of the escaped string or bytes at the front of `bytes`, terminator included.
fn escaped_len(bytes: &[u8]) -> Result<usize, KeyError> {
    let mut i = 0;
    loop {
        i += bytes[i..]
            .iter()
            .position(|&b| b == 0)
            .ok_or(KeyError::Truncated)?;
        match bytes.get(i + 1) {
            Some(0xff) => i += 2,
            Some(0x01) => return Ok(i + 2),
            Some(_) => return Err(KeyError::BadEscape),
            None => return Err(KeyError::Truncated),
        }
    }
}

/// How many bytes the value at the front of `bytes` takes, found without building it: a
/// reader steps over the fields it does not need. The tag, the length and the escapes are
/// checked; a string's UTF-8 and a number's canonical form are checked only when decoded.
#[inline]
pub fn value_len(bytes: &[u8]) -> Result<usize, KeyError> {
    let (&tag, rest) = bytes.split_first().ok_or(KeyError::Truncated)?;
    let len = match tag {
        KEY_NULL | KEY_FALSE | KEY_TRUE => 1,
        KEY_NUMBER => match rest.get(8) {
            Some(&(KEY_INT | KEY_FLOAT)) => 10,
            Some(&(KEY_INT_BELOW | KEY_INT_ABOVE)) => 12,
            Some(_) => return Err(KeyError::BadNumber),
            None => return Err(KeyError::Truncated),
        },
        KEY_STR | KEY_BYTES => 1 + escaped_len(rest)?,
        other if key_number::is_tag(other) => key_number::len(bytes)?,
        other => return Err(KeyError::UnknownTag(other)),
    };
    if len > bytes.len() {
        return Err(KeyError::Truncated);
    }
    Ok(len)
}

/// Decodes `count` values from the front of `bytes`: the values and the bytes they used.
pub fn decode_prefix(bytes: &[u8], count: usize) -> Result<(Vec<Value>, usize), KeyError> {
    let mut values = Vec::with_capacity(count);
    let mut at = 0;
    for _ in 0..count {
        let rest = bytes.get(at..).ok_or(KeyError::Truncated)?;
        let (v, used) = decode_value(rest)?;
        values.push(v);
        at += used;
    }
    Ok((values, at))
}

/// Decodes a whole key of exactly `count` values.
pub fn decode_key(bytes: &[u8], count: usize) -> Result<Vec<Value>, KeyError> {
    let (values, used) = decode_prefix(bytes, count)?;
    if used != bytes.len() {
        let extra = decode_all(&bytes[used..]).map_or(1, |v| v.len());
        return Err(KeyError::Arity {
            expected: count,
            actual: count + extra,
        });
    }
    Ok(values)
}

/// Decodes every value in `bytes`.
pub fn decode_all(bytes: &[u8]) -> Result<Vec<Value>, KeyError> {
    let mut values = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let (v, used) = decode_value(&bytes[at..])?;
        values.push(v);
        at += used;
    }
    Ok(values)
}

/// Compares two tuples the way their encodings compare: element by element in [`Value`]'s
/// order, a proper prefix first.
pub fn compare_tuples(a: &[Value], b: &[Value]) -> Ordering {
    a.iter().cmp(b.iter())
}

/// The smallest byte string greater than every string starting with `prefix` (the store's
/// own helper, which its prefix bounds use); `None` when there is none.
pub use crate::lsm::prefix_successor;

/// The whole values, at most `max_values` of them, that every key in `[lower, upper)` starts
/// with: how many and the bytes they take. A reader of the range steps over those bytes
/// instead of walking them in each key (they are the range's, checked here once: the values
/// of `lower` that form a prefix `p` with `upper <= successor(p)`).
pub(crate) fn shared_prefix(
    lower: &[u8],
    upper: Option<&[u8]>,
    max_values: usize,
) -> (usize, usize) {
    let Some(upper) = upper else {
        return (0, 0);
    };
    let (mut shared, mut at) = ((0, 0), 0);
    for values in 1..=max_values {
        let Some(len) = lower.get(at..).and_then(|rest| value_len(rest).ok()) else {
            break;
        };
        at += len;
        match prefix_successor(&lower[..at]) {
            Some(after) if upper <= after.as_slice() => shared = (values, at),
            _ => break,
        }
    }
    shared
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_range_shares_the_values_its_bounds_fix() {
        let key = |values: &[Value]| encode_key(values.iter());
        let town = Value::from("Ely");
        let p = key(std::slice::from_ref(&town));
        // `town = 'Ely'`: every key starts with the town.
        let upper = prefix_successor(&p);
        assert_eq!(shared_prefix(&p, upper.as_deref(), 4), (1, p.len()));
        assert_eq!(shared_prefix(&p, upper.as_deref(), 0), (0, 0));
        // `town = 'Ely' AND age BETWEEN 30 AND 40`: the town, not the age.
        let lower = key(&[town.clone(), Value::Int(30)]);
        let upper = prefix_successor(&key(&[town.clone(), Value::Int(40)]));
        assert_eq!(shared_prefix(&lower, upper.as_deref(), 4), (1, p.len()));
        // Both fields fixed.
        let both = key(&[town.clone(), Value::Int(30)]);
        let upper = prefix_successor(&both);
        assert_eq!(shared_prefix(&both, upper.as_deref(), 4), (2, both.len()));
        // No upper bound, or one past the prefix's successor: nothing is shared.
        assert_eq!(shared_prefix(&p, None, 4), (0, 0));
        let wider = prefix_successor(&key(&[Value::from("Elz")]));
        assert_eq!(shared_prefix(&p, wider.as_deref(), 4), (0, 0));
        // A lower bound that is not whole values shares only its whole ones.
        let mut cut = key(&[town.clone(), Value::from("x")]);
        cut.pop();
        let upper = prefix_successor(&p);
        assert_eq!(shared_prefix(&cut, upper.as_deref(), 4), (1, p.len()));
        assert_eq!(shared_prefix(&[0xee], Some(&[0xef]), 4), (0, 0));
        // Every key of the range starts with the shared bytes.
        for k in [
            key(&[town.clone(), Value::Int(-5)]),
            key(&[town, Value::from("zz")]),
        ] {
            assert!(k.starts_with(&p) && k.as_slice() < upper.as_deref().unwrap_or_default());
        }
    }

    use super::*;
    use proptest::prelude::*;

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::Int),
            prop_oneof![
                Just(i64::MAX),
                Just(i64::MIN),
                Just(1 << 53),
                Just((1 << 53) + 1),
                Just(-(1 << 53) - 1),
                -3i64..3
            ]
            .prop_map(Value::Int),
            any::<f64>().prop_map(Value::Float),
            prop_oneof![
                Just(0.0),
                Just(-0.0),
                Just(f64::NAN),
                Just(-f64::NAN),
                Just(f64::INFINITY),
                Just(f64::NEG_INFINITY),
                Just(9_007_199_254_740_992.0),
                Just(9.223_372_036_854_776e18),
                Just(1.5),
                Just(-2.5)
            ]
            .prop_map(Value::Float),
            "[a\\x00\\x01\\xff]{0,4}".prop_map(Value::Str),
            proptest::collection::vec(
                prop_oneof![Just(0u8), Just(1), Just(0xff), any::<u8>()],
                0..5
            )
            .prop_map(Value::Bytes),
        ]
    }

    fn format() -> impl Strategy<Value = KeyFormat> {
        prop_oneof![Just(KeyFormat::F64), Just(KeyFormat::Compact)]
    }

    /// Whether `bytes` is, value by value, what one of the formats writes for the values
    /// they decode to (a key of one table is all one format; the decoder reads both).
    fn canonical(bytes: &[u8]) -> bool {
        let mut at = 0;
        while at < bytes.len() {
            let Ok((v, used)) = decode_value(&bytes[at..]) else {
                return false;
            };
            let own = &bytes[at..at + used];
            if own != KeyFormat::F64.encode_key([&v]) && own != KeyFormat::Compact.encode_key([&v])
            {
                return false;
            }
            at += used;
        }
        true
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn values_sort_as_their_encodings(f in format(), a in value(), b in value()) {
            let (ea, eb) = (f.encode_key([&a]), f.encode_key([&b]));
            prop_assert_eq!(ea.cmp(&eb), a.cmp(&b), "{:?} vs {:?}", a, b);
            let (da, used) = decode_value(&ea).unwrap();
            prop_assert_eq!(used, ea.len());
            prop_assert_eq!(da.cmp(&a), Ordering::Equal);
            prop_assert_eq!(f.encode_key([&da]), ea);
        }

        #[test]
        fn tuples_sort_as_their_encodings(
            f in format(),
            a in proptest::collection::vec(value(), 0..4),
            b in proptest::collection::vec(value(), 0..4),
        ) {
            let (ea, eb) = (f.encode_key(&a), f.encode_key(&b));
            prop_assert_eq!(ea.cmp(&eb), compare_tuples(&a, &b));
            prop_assert_eq!(decode_key(&ea, a.len()).unwrap(), a.clone());
            // Prefix-free: a tuple followed by anything stays on the tuple's side of another.
            if compare_tuples(&a, &b) == Ordering::Less && !b.starts_with(&a) {
                let mut longer = ea.clone();
                longer.extend([0xff; 4]);
                prop_assert!(longer < eb);
            }
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..40)) {
            if decode_all(&bytes).is_ok() {
                prop_assert!(canonical(&bytes), "{:02x?}", bytes);
            }
            // Stepping over a value agrees with decoding it wherever the decode succeeds.
            if let Ok((_, used)) = decode_value(&bytes) {
                prop_assert_eq!(value_len(&bytes), Ok(used));
            }
        }

        #[test]
        fn the_integer_fast_path_agrees_with_the_general_decode(
            bits in any::<u64>(),
            int in any::<i64>(),
            pick in 0usize..9,
        ) {
            // Random bits, any integer's f64, and the edges: ±2^63, -0.0, NaN, infinity, a
            // fraction, an exact integer.
            let ordered = [
                bits.to_be_bytes(),
                ordered_f64(int as f64),
                ordered_f64(9_223_372_036_854_775_808.0),
                ordered_f64(-9_223_372_036_854_775_808.0),
                ordered_f64(-0.0),
                ordered_f64(f64::NAN),
                ordered_f64(f64::INFINITY),
                ordered_f64(5.5),
                ordered_f64(-7.0),
            ];
            let mut bytes = vec![KEY_NUMBER];
            bytes.extend(ordered[pick]);
            bytes.push(KEY_INT);
            prop_assert_eq!(decode_value(&bytes), decode_any(&bytes));
        }

        #[test]
        fn a_value_steps_over_its_encoding(
            f in format(),
            v in value(),
            tail in proptest::collection::vec(any::<u8>(), 0..4),
        ) {
            let mut bytes = f.encode_key([&v]);
            let len = bytes.len();
            bytes.extend(tail);
            prop_assert_eq!(value_len(&bytes), Ok(len));
            prop_assert_eq!(value_len(&bytes[..len - 1]), Err(KeyError::Truncated));
        }
    }

    #[test]
    fn edge_cases_sort_as_documented() {
        let ordered = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::Float(f64::NEG_INFINITY),
            Value::Int(i64::MIN),
            Value::Int(-1),
            Value::Float(-0.5),
            Value::Float(-0.0),
            Value::Int(0),
            Value::Float(0.0),
            Value::Float(0.5),
            Value::Int(1),
            Value::Int(1 << 53),
            Value::Float(9_007_199_254_740_992.0),
            // Rounds to 2^53, so only its distance puts it above the float.
            Value::Int((1 << 53) + 1),
            Value::Int((1 << 53) + 2),
            // Both round to 2^53 + 4: one is below it, one above, the float between.
            Value::Int((1 << 53) + 3),
            Value::Int((1 << 53) + 4),
            Value::Float(9_007_199_254_740_996.0),
            Value::Int((1 << 53) + 5),
            Value::Int(i64::MAX),
            Value::Float(f64::INFINITY),
            Value::Str(String::new()),
            Value::Str("\0".into()),
            Value::Str("\0\0".into()),
            Value::Str("\u{1}".into()),
            Value::Str("a".into()),
            Value::Str("a\0".into()),
            Value::Str("ab".into()),
            Value::Bytes(vec![]),
            Value::Bytes(vec![0]),
            Value::Bytes(vec![0xff]),
        ];
        for pair in ordered.windows(2) {
            assert!(pair[0] < pair[1], "{:?} < {:?}", pair[0], pair[1]);
            for f in [KeyFormat::F64, KeyFormat::Compact] {
                assert!(
                    f.encode_key([&pair[0]]) < f.encode_key([&pair[1]]),
                    "{f:?}: {:?} encodes below {:?}",
                    pair[0],
                    pair[1]
                );
            }
        }
    }

    #[test]
    fn the_worked_examples_of_the_format_page_hold() {
        let encode_key = |values: &[&Value]| KeyFormat::F64.encode_key(values.iter().copied());
        let entry = encode_key(&[&Value::from("Red\0"), &Value::Int(-2)]);
        let mut want = vec![0x30, b'R', b'e', b'd', 0x00, 0xff, 0x00, 0x01, 0x20, 0x3f];
        want.extend([0xff; 7]);
        want.push(0x01);
        assert_eq!(entry, want);
        let max = encode_key(&[&Value::Int(i64::MAX)]);
        assert_eq!(
            max,
            [0x20, 0xc3, 0xe0, 0, 0, 0, 0, 0, 0, 0x00, 0x7f, 0xff],
            "{max:02x?}"
        );
        let float = encode_key(&[&Value::Float(9.223_372_036_854_776e18)]);
        assert_eq!(float, [0x20, 0xc3, 0xe0, 0, 0, 0, 0, 0, 0, 0x02]);
        assert!(max < float);
        // Key format 2: the same entry, and 500,000 (2^18 + 237,856: exponent 18, then the 13
        // bits after the leading one up to its last one, `1110100 001001`, in groups of seven,
        // each shifted left by one with its low bit set when another group follows).
        let entry = KeyFormat::Compact.encode_key([&Value::from("Red\0"), &Value::Int(-2)]);
        let want = [
            0x30, b'R', b'e', b'd', 0x00, 0xff, 0x00, 0x01, 0x15, 0xfe, 0xfe, 0xff,
        ];
        assert_eq!(entry, want, "{entry:02x?}");
        let half_million = KeyFormat::Compact.encode_key([&Value::Int(500_000)]);
        assert_eq!(half_million, [0x1b, 18, 0xe9, 0x24], "{half_million:02x?}");
        let and_a_half = KeyFormat::Compact.encode_key([&Value::Float(500_000.5)]);
        assert_eq!(
            and_a_half,
            [0x1b, 18, 0xe9, 0x25, 0x08],
            "{and_a_half:02x?}"
        );
    }

    #[test]
    fn integers_up_to_2_pow_53_take_ten_bytes_in_format_1() {
        let encode_key = |values: [&Value; 1]| KeyFormat::F64.encode_key(values);
        for i in [0, -1, 7, 1 << 53, -(1 << 53), 123_456_789] {
            assert_eq!(encode_key([&Value::Int(i)]).len(), 10, "{i}");
        }
        for i in [(1 << 53) + 1, i64::MAX, i64::MIN + 1] {
            assert_eq!(encode_key([&Value::Int(i)]).len(), 12, "{i}");
        }
        // i64::MIN is -2^63, an f64 exactly.
        assert_eq!(encode_key([&Value::Int(i64::MIN)]).len(), 10);
        assert_eq!(encode_key([&Value::Float(1.5)]).len(), 10);
    }

    #[test]
    fn damaged_keys_are_errors() {
        assert_eq!(decode_value(&[]), Err(KeyError::Truncated));
        assert_eq!(decode_value(&[0x99]), Err(KeyError::UnknownTag(0x99)));
        assert_eq!(decode_value(&[KEY_STR, b'a', 0]), Err(KeyError::Truncated));
        assert_eq!(decode_value(&[KEY_STR, 0, 7]), Err(KeyError::BadEscape));
        assert_eq!(decode_value(&[KEY_STR, 0xc3, 0, 1]), Err(KeyError::NotUtf8));
        assert_eq!(value_len(&[0x99]), Err(KeyError::UnknownTag(0x99)));
        assert_eq!(value_len(&[KEY_STR, 0, 7]), Err(KeyError::BadEscape));
        // Stepping over a string does not check its UTF-8: a decode does.
        assert_eq!(value_len(&[KEY_STR, 0xc3, 0, 1]), Ok(4));
        // An exact integer written with a distance, and distances whose sign disagrees with
        // the kind byte: bytes the encoder would not write.
        let mut five = vec![KEY_NUMBER];
        five.extend(ordered_f64(5.0));
        for tail in [
            [KEY_INT_BELOW, 0x80, 0x00],
            [KEY_INT_ABOVE, 0x80, 0x00],
            [KEY_INT_BELOW, 0x80, 0x01],
            [KEY_INT_ABOVE, 0x7f, 0xff],
        ] {
            let mut bytes = five.clone();
            bytes.extend(tail);
            assert_eq!(decode_value(&bytes), Err(KeyError::BadNumber), "{tail:?}");
        }
        // 5 is exact, so 5 + 1 does not round to 5.0.
        let mut off = five.clone();
        off.extend([KEY_INT_ABOVE, 0x80, 0x01]);
        assert_eq!(decode_value(&off), Err(KeyError::BadNumber));
        assert_eq!(decode_value(&[KEY_NUMBER, 0xc0]), Err(KeyError::Truncated));
        assert_eq!(
            decode_value(&[&five[..], &[KEY_INT_ABOVE, 0x80]].concat()),
            Err(KeyError::Truncated)
        );
        assert_eq!(
            decode_value(&[&five[..], &[0x04]].concat()),
            Err(KeyError::BadNumber)
        );
        assert_eq!(
            value_len(&[&five[..], &[0x04]].concat()),
            Err(KeyError::BadNumber)
        );
        // The fuzzer's first find: an "integer" near f64::MAX overflowed the decoder.
        let mut huge = vec![KEY_NUMBER];
        huge.extend(ordered_f64(f64::MAX));
        huge.extend([KEY_INT_ABOVE, 0xff, 0xff]);
        assert_eq!(decode_value(&huge), Err(KeyError::BadNumber));
        let mut huge_exact = vec![KEY_NUMBER];
        huge_exact.extend(ordered_f64(f64::MAX));
        huge_exact.push(KEY_INT);
        assert_eq!(decode_value(&huge_exact), Err(KeyError::BadNumber));
        let two = encode_key([&Value::Int(1), &Value::Int(2)]);
        assert_eq!(
            decode_key(&two, 1),
            Err(KeyError::Arity {
                expected: 1,
                actual: 2
            })
        );
    }

    /// `encode_key` takes any iterator of values (one that cannot be cloned included: the
    /// public signature did not always require it), and the sized slice form agrees with it.
    #[test]
    fn every_form_of_a_tuple_encodes_alike() {
        let values = [
            Value::from("a\0b"),
            Value::Int(-7),
            Value::Bytes(vec![0, 255, 0]),
            Value::Bool(true),
            Value::Null,
            Value::Float(2.5),
        ];
        let refs: Vec<&Value> = values.iter().collect();
        let mut rest = values.iter();
        let once = std::iter::from_fn(|| rest.next());
        for f in [KeyFormat::F64, KeyFormat::Compact] {
            let encoded = f.encode_key(values.iter());
            assert_eq!(encoded, f.encode_key_of(&refs));
            assert_eq!(decode_key(&encoded, values.len()), Ok(values.to_vec()));
        }
        let encoded = encode_key(once);
        assert_eq!(encoded, KeyFormat::NEWEST.encode_key_of(&refs));
        assert_eq!(decode_key(&encoded, values.len()), Ok(values.to_vec()));
    }
}
