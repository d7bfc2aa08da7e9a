//! The values the planner reasons about: literals in predicates, and the values statistics
//! record (most-common values, histogram bounds, min and max).
//!
//! The order is total: `Null` < booleans < numbers < strings < bytes. Integers and floats
//! compare by numeric value (an integer before an equal float, so the order stays total);
//! floats use IEEE total order (`f64::total_cmp`): a negative NaN sorts below -inf, a positive
//! NaN above +inf, -0.0 below every value that is numerically zero (0.0, and the integer 0,
//! which sorts between the two), and a NaN equals only a NaN of the same bits. Keys
//! (`docs/formats/keys.md`), filters and the statistics all use this one order. A stable
//! 64-bit hash feeds the distinct-count sketches, so sketches built on different machines or
//! shards merge.
//!
//! Stored statistics hold values as JSON (`docs/formats/stats.md`): `"Null"`, `{"Bool":b}`,
//! `{"Int":i}`, `{"Float":x}`, `{"Str":s}`, `{"Bytes":[…]}`. JSON has no NaN or infinity, so
//! a float that is not finite is written as the string of its IEEE bits in hex
//! (`{"Float":"0x7ff8000000000000"}`), and every float round-trips bit for bit.

use std::cmp::Ordering;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A field value.
#[derive(Clone, Debug)]
pub enum Value {
    /// No value.
    Null,
    /// A boolean.
    Bool(bool),
    /// A signed integer.
    Int(i64),
    /// A float.
    Float(f64),
    /// A UTF-8 string.
    Str(String),
    /// Bytes.
    Bytes(Vec<u8>),
}

impl Value {
    fn rank(&self) -> u8 {
        match self {
            Value::Null => 0,
            Value::Bool(_) => 1,
            Value::Int(_) | Value::Float(_) => 2,
            Value::Str(_) => 3,
            Value::Bytes(_) => 4,
        }
    }

    /// Whether this is `Null`.
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// Which of the six kinds of value this is.
    pub fn kind(&self) -> ValueKind {
        match self {
            Value::Null => ValueKind::Null,
            Value::Bool(_) => ValueKind::Bool,
            Value::Int(_) => ValueKind::Int,
            Value::Float(_) => ValueKind::Float,
            Value::Str(_) => ValueKind::Str,
            Value::Bytes(_) => ValueKind::Bytes,
        }
    }

    /// The integer, if this is an `Int`.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The number as a float, if this is a `Float` or an `Int` (converted, as comparisons
    /// between the two convert it).
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Value::Float(x) => Some(*x),
            Value::Int(i) => Some(*i as f64),
            _ => None,
        }
    }

    /// The boolean, if this is a `Bool`.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The text, if this is a `Str`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The bytes, if this is `Bytes`.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Value::Bytes(b) => Some(b),
            _ => None,
        }
    }

    /// The value written as a SQL literal: text quoted (`'O''Brien'`), bytes as `x'00ff'`,
    /// `NULL`; what `explain` and error messages show. [`Value`]'s own `Display` prints the
    /// value itself (text unquoted).
    pub fn sql_literal(&self) -> SqlLiteral<'_> {
        SqlLiteral(self)
    }

    /// The value as a number, for interpolation inside a histogram bucket: numbers as
    /// themselves, booleans as 0 or 1, strings and bytes by their first eight bytes read as
    /// a big-endian fraction (PostgreSQL's `convert_string_to_scalar` idea).
    pub(crate) fn as_scalar(&self) -> Option<f64> {
        match self {
            Value::Null => None,
            Value::Bool(b) => Some(f64::from(u8::from(*b))),
            Value::Int(i) => Some(*i as f64),
            Value::Float(f) => f.is_finite().then_some(*f),
            Value::Str(s) => Some(bytes_scalar(s.as_bytes())),
            Value::Bytes(b) => Some(bytes_scalar(b)),
        }
    }

    /// Approximate encoded width in bytes (what a record or an index entry spends on it).
    pub fn width(&self) -> usize {
        match self {
            Value::Null => 1,
            Value::Bool(_) => 2,
            Value::Int(_) | Value::Float(_) => 9,
            Value::Str(s) => s.len() + 2,
            Value::Bytes(b) => b.len() + 2,
        }
    }

    /// A hash of the value that is the same on every machine and in every build: a tag byte
    /// then the payload, through [`hash_bytes`].
    pub fn stable_hash(&self) -> u64 {
        self.stable_hash_with(&mut Vec::with_capacity(16))
    }

    /// [`Self::stable_hash`], encoding into `scratch` (cleared first) instead of a new buffer:
    /// for loops that hash many values.
    pub fn stable_hash_with(&self, scratch: &mut Vec<u8>) -> u64 {
        scratch.clear();
        self.hash_into(scratch);
        hash_bytes(scratch)
    }

    /// Appends the bytes [`Self::stable_hash`] hashes: a tag, then the payload. Composite
    /// keys hash the concatenation of their fields' bytes, each length-prefixed.
    pub(crate) fn hash_into(&self, buf: &mut Vec<u8>) {
        match self {
            Value::Null => buf.push(0),
            Value::Bool(b) => buf.extend([1, u8::from(*b)]),
            Value::Int(i) => {
                buf.push(2);
                buf.extend(i.to_le_bytes());
            }
            Value::Float(f) => {
                buf.push(3);
                buf.extend(f.to_bits().to_le_bytes());
            }
            Value::Str(s) => {
                buf.push(4);
                buf.extend((s.len() as u64).to_le_bytes());
                buf.extend(s.as_bytes());
            }
            Value::Bytes(b) => {
                buf.push(5);
                buf.extend((b.len() as u64).to_le_bytes());
                buf.extend(b);
            }
        }
    }
}

/// The stored (JSON) form of a [`Value`]: the shape serde derives for the enum, except that a
/// float JSON cannot hold as a number goes as the hex string of its bits.
#[derive(Serialize, Deserialize)]
#[serde(rename = "Value")]
enum Stored<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(StoredFloat),
    #[serde(borrow)]
    Str(std::borrow::Cow<'a, str>),
    Bytes(Vec<u8>),
}

/// A float as a JSON number when it is finite, else as `"0x…"`: the 16 hex digits of its bits.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum StoredFloat {
    Number(f64),
    Bits(String),
}

/// The prefix of a float stored by its bits.
const FLOAT_BITS_PREFIX: &str = "0x";

impl StoredFloat {
    fn new(x: f64) -> StoredFloat {
        if x.is_finite() {
            StoredFloat::Number(x)
        } else {
            StoredFloat::Bits(format!("{FLOAT_BITS_PREFIX}{:016x}", x.to_bits()))
        }
    }

    fn value(self) -> Result<f64, String> {
        match self {
            StoredFloat::Number(x) => Ok(x),
            StoredFloat::Bits(text) => text
                .strip_prefix(FLOAT_BITS_PREFIX)
                .filter(|hex| hex.len() == 16)
                .and_then(|hex| u64::from_str_radix(hex, 16).ok())
                .map(f64::from_bits)
                .ok_or_else(|| format!("a float's bits {text:?} are not 0x and 16 hex digits")),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let stored = match self {
            Value::Null => Stored::Null,
            Value::Bool(b) => Stored::Bool(*b),
            Value::Int(i) => Stored::Int(*i),
            Value::Float(x) => Stored::Float(StoredFloat::new(*x)),
            Value::Str(s) => Stored::Str(std::borrow::Cow::Borrowed(s)),
            // A copy, but only where statistics are written, never on a query path.
            Value::Bytes(b) => Stored::Bytes(b.clone()),
        };
        stored.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(match Stored::deserialize(deserializer)? {
            Stored::Null => Value::Null,
            Stored::Bool(b) => Value::Bool(b),
            Stored::Int(i) => Value::Int(i),
            Stored::Float(x) => Value::Float(x.value().map_err(serde::de::Error::custom)?),
            Stored::Str(s) => Value::Str(s.into_owned()),
            Stored::Bytes(b) => Value::Bytes(b),
        })
    }
}

/// The first eight bytes of `bytes` as a fraction in [0, 1).
fn bytes_scalar(bytes: &[u8]) -> f64 {
    let mut word = [0u8; 8];
    let n = bytes.len().min(8);
    word[..n].copy_from_slice(&bytes[..n]);
    u64::from_be_bytes(word) as f64 / 18_446_744_073_709_551_616.0
}

/// Compares an integer with a float by value, exactly: first by the integer rounded to `f64`
/// (rounding keeps order), then, when that equals the float, by what the rounding lost. An
/// integer equal to a float sorts just before it, so the two stay distinct values.
fn int_float_cmp(a: i64, b: f64) -> Ordering {
    let rounded = a as f64;
    rounded.total_cmp(&b).then_with(|| {
        // `rounded` is integral and at most 2^63 in magnitude: it converts exactly.
        match i128::from(a).cmp(&(rounded as i128)) {
            Ordering::Equal => Ordering::Less,
            lost => lost,
        }
    })
}

impl Ord for Value {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Bool(a), Value::Bool(b)) => a.cmp(b),
            (Value::Int(a), Value::Int(b)) => a.cmp(b),
            (Value::Float(a), Value::Float(b)) => a.total_cmp(b),
            (Value::Int(a), Value::Float(b)) => int_float_cmp(*a, *b),
            (Value::Float(a), Value::Int(b)) => int_float_cmp(*b, *a).reverse(),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::Bytes(a), Value::Bytes(b)) => a.cmp(b),
            _ => self.rank().cmp(&other.rank()),
        }
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Equality as [`Ord`] has it, without ordering: values of two variants are never equal (an
/// integer sorts just before the equal float), and two floats are equal when `total_cmp` says
/// so, that is when their bits are. A string compares its length first — most of the
/// planner's comparisons are a value looked up in a list of most common values, which was
/// ~40 % of planning an equality on a text field through `cmp` (callgrind, 2026-11-24).
impl PartialEq for Value {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Str(a), Value::Str(b)) => same_bytes(a.as_bytes(), b.as_bytes()),
            (Value::Bytes(a), Value::Bytes(b)) => same_bytes(a, b),
            _ => false,
        }
    }
}

/// `a == b`, with texts of up to 16 bytes compared as two overlapping words in line: a plan
/// looks a query's value up in a field's most-common list by equality, and a call to
/// `memcmp` for each of a hundred short texts of one length was a third of planning an
/// equality (callgrind: `ColumnStats::frequency_of`, ~15,000 instructions a query).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |k: &[u8], at: usize| {
        k.get(at..at + 8)
            .map(|w| u64::from_ne_bytes(w.try_into().unwrap_or([0; 8])))
    };
    match n {
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

impl Eq for Value {}

/// A tag, then the payload, straight into the hasher (no buffer: maps of values hash millions
/// of them). Values of two variants are never equal (an integer sorts just before the equal
/// float), so the tag keeps them apart as [`Eq`] does.
impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        match self {
            Value::Null => state.write_u8(0),
            Value::Bool(b) => state.write_u8(if *b { 2 } else { 1 }),
            Value::Int(i) => {
                state.write_u8(3);
                state.write_i64(*i);
            }
            Value::Float(f) => {
                // `total_cmp` equality is equality of the bits.
                state.write_u8(4);
                state.write_u64(f.to_bits());
            }
            Value::Str(s) => {
                state.write_u8(5);
                s.hash(state);
            }
            Value::Bytes(b) => {
                state.write_u8(6);
                b.hash(state);
            }
        }
    }
}

impl From<i64> for Value {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<i32> for Value {
    fn from(v: i32) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<f64> for Value {
    fn from(v: f64) -> Self {
        Value::Float(v)
    }
}

impl From<bool> for Value {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl From<&str> for Value {
    fn from(v: &str) -> Self {
        Value::Str(v.to_owned())
    }
}

impl From<String> for Value {
    fn from(v: String) -> Self {
        Value::Str(v)
    }
}

impl From<u32> for Value {
    fn from(v: u32) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<i16> for Value {
    fn from(v: i16) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<u16> for Value {
    fn from(v: u16) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<u8> for Value {
    fn from(v: u8) -> Self {
        Value::Int(i64::from(v))
    }
}

impl From<f32> for Value {
    fn from(v: f32) -> Self {
        Value::Float(f64::from(v))
    }
}

impl From<&String> for Value {
    fn from(v: &String) -> Self {
        Value::Str(v.clone())
    }
}

impl From<Vec<u8>> for Value {
    fn from(v: Vec<u8>) -> Self {
        Value::Bytes(v)
    }
}

impl From<&[u8]> for Value {
    fn from(v: &[u8]) -> Self {
        Value::Bytes(v.to_vec())
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    /// `None` is `Null`.
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

/// The value itself: text as it is, bytes as lowercase hex digits, `NULL` for null. For the
/// SQL literal form (text quoted) use [`Value::sql_literal`].
impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x}"),
            Value::Str(s) => f.write_str(s),
            Value::Bytes(b) => b.iter().try_for_each(|byte| write!(f, "{byte:02x}")),
        }
    }
}

/// A value written as a SQL literal ([`Value::sql_literal`]).
#[derive(Clone, Copy, Debug)]
pub struct SqlLiteral<'a>(&'a Value);

impl std::fmt::Display for SqlLiteral<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Value::Str(s) => write!(f, "'{}'", s.replace('\'', "''")),
            Value::Bytes(b) => {
                f.write_str("x'")?;
                b.iter().try_for_each(|byte| write!(f, "{byte:02x}"))?;
                f.write_str("'")
            }
            other => write!(f, "{other}"),
        }
    }
}

/// The six kinds of [`Value`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ValueKind {
    /// `Value::Null`.
    Null,
    /// `Value::Bool`.
    Bool,
    /// `Value::Int`.
    Int,
    /// `Value::Float`.
    Float,
    /// `Value::Str`.
    Str,
    /// `Value::Bytes`.
    Bytes,
}

/// A [`Value`] was not of the kind a conversion wanted (`i64::try_from(&value)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected a value of kind {expected:?}, found {found:?}")]
pub struct WrongKind {
    /// The kind the conversion takes.
    pub expected: ValueKind,
    /// The kind the value is.
    pub found: ValueKind,
}

macro_rules! try_from_value {
    ($target:ty, $kind:ident, $get:expr) => {
        impl TryFrom<&Value> for $target {
            type Error = WrongKind;

            fn try_from(value: &Value) -> Result<Self, WrongKind> {
                let get: fn(&Value) -> Option<$target> = $get;
                get(value).ok_or(WrongKind {
                    expected: ValueKind::$kind,
                    found: value.kind(),
                })
            }
        }
    };
}

try_from_value!(i64, Int, Value::as_i64);
try_from_value!(f64, Float, Value::as_f64);
try_from_value!(bool, Bool, Value::as_bool);
try_from_value!(String, Str, |v| v.as_str().map(str::to_owned));
try_from_value!(Vec<u8>, Bytes, |v| v.as_bytes().map(<[u8]>::to_vec));

impl<'a> TryFrom<&'a Value> for &'a str {
    type Error = WrongKind;

    fn try_from(value: &'a Value) -> Result<Self, WrongKind> {
        value.as_str().ok_or(WrongKind {
            expected: ValueKind::Str,
            found: value.kind(),
        })
    }
}

impl<'a> TryFrom<&'a Value> for &'a [u8] {
    type Error = WrongKind;

    fn try_from(value: &'a Value) -> Result<Self, WrongKind> {
        value.as_bytes().ok_or(WrongKind {
            expected: ValueKind::Bytes,
            found: value.kind(),
        })
    }
}

/// A 64-bit hash with full avalanche, fixed for all time (statistics persist and merge):
/// eight bytes at a time through a multiply-rotate round, then MurmurHash3's `fmix64`
/// finaliser. Not for adversarial input; good enough for HyperLogLog's uniformity.
pub fn hash_bytes(bytes: &[u8]) -> u64 {
    const K1: u64 = 0x9E37_79B9_7F4A_7C15;
    const K2: u64 = 0xC2B2_AE3D_27D4_EB4F;
    let mut h = (bytes.len() as u64).wrapping_mul(K1) ^ K2;
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let k = u64::from_le_bytes(word).wrapping_mul(K2).rotate_left(31);
        h = (h ^ k)
            .rotate_left(27)
            .wrapping_mul(K1)
            .wrapping_add(0x52DC_E729);
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut word = [0u8; 8];
        word[..rest.len()].copy_from_slice(rest);
        h ^= u64::from_le_bytes(word).wrapping_mul(K1).rotate_left(33);
    }
    fmix64(h)
}

/// MurmurHash3's 64-bit finaliser: every input bit flips each output bit with probability
/// about one half.
fn fmix64(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    h ^= h >> 33;
    h = h.wrapping_mul(0xC4CE_B9FE_1A85_EC53);
    h ^ (h >> 33)
}

#[cfg(test)]
mod tests {
    use super::{Value, ValueKind, WrongKind};

    #[test]
    fn display_prints_the_value_and_sql_literal_the_literal() {
        let cases = [
            (Value::Null, "NULL", "NULL"),
            (Value::Bool(true), "true", "true"),
            (Value::Int(-7), "-7", "-7"),
            (Value::Float(1.5), "1.5", "1.5"),
            (Value::from("O'Brien"), "O'Brien", "'O''Brien'"),
            (Value::Bytes(vec![0, 255]), "00ff", "x'00ff'"),
        ];
        for (value, shown, literal) in cases {
            assert_eq!(value.to_string(), shown);
            assert_eq!(value.sql_literal().to_string(), literal);
        }
    }

    #[test]
    fn accessors_answer_only_for_their_kind() {
        let int = Value::Int(3);
        assert_eq!(int.as_i64(), Some(3));
        assert_eq!(int.as_f64(), Some(3.0), "an integer reads as a float");
        assert_eq!(
            (int.as_str(), int.as_bool(), int.as_bytes()),
            (None, None, None)
        );
        let text = Value::from("ely");
        assert_eq!(
            (text.as_str(), text.as_i64(), text.kind()),
            (Some("ely"), None, ValueKind::Str)
        );
        assert_eq!(
            Value::Float(0.5).as_i64(),
            None,
            "a float is not read as an integer"
        );
        assert_eq!(Value::Bool(false).as_bool(), Some(false));
        assert_eq!(Value::Bytes(vec![1]).as_bytes(), Some(&[1u8][..]));
        assert!(Value::Null.is_null() && Value::Null.as_f64().is_none());
    }

    #[test]
    fn try_from_converts_or_names_both_kinds() {
        assert_eq!(i64::try_from(&Value::Int(9)), Ok(9));
        assert_eq!(f64::try_from(&Value::Int(9)), Ok(9.0));
        assert_eq!(String::try_from(&Value::from("a")), Ok("a".to_owned()));
        assert_eq!(<&str>::try_from(&Value::from("a")), Ok("a"));
        assert_eq!(<&[u8]>::try_from(&Value::Bytes(vec![2])), Ok(&[2u8][..]));
        assert_eq!(Vec::<u8>::try_from(&Value::Bytes(vec![2])), Ok(vec![2]));
        assert_eq!(bool::try_from(&Value::Bool(true)), Ok(true));
        assert_eq!(
            i64::try_from(&Value::from("9")),
            Err(WrongKind {
                expected: ValueKind::Int,
                found: ValueKind::Str
            })
        );
        assert_eq!(
            bool::try_from(&Value::Null),
            Err(WrongKind {
                expected: ValueKind::Bool,
                found: ValueKind::Null
            })
        );
    }

    #[test]
    fn texts_and_bytes_are_equal_exactly_when_their_bytes_are() {
        for n in 0..40usize {
            let a: String = (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
            assert_eq!(
                Value::from(a.as_str()),
                Value::from(a.clone()),
                "length {n}"
            );
            for at in 0..n {
                let mut b = a.clone().into_bytes();
                b[at] = b'Z';
                let b = String::from_utf8(b).expect("ascii");
                assert_ne!(
                    Value::from(a.as_str()),
                    Value::from(b.as_str()),
                    "length {n}, at {at}"
                );
                assert_ne!(
                    Value::Bytes(a.clone().into_bytes()),
                    Value::Bytes(b.into_bytes()),
                    "length {n}, at {at}"
                );
            }
            assert_ne!(
                Value::from(a.as_str()),
                Value::from(format!("{a}x")),
                "length {n}"
            );
        }
    }
    use super::*;

    #[test]
    fn equal_values_hash_alike_and_variants_stay_apart() {
        use std::collections::HashMap;
        use std::hash::{BuildHasher, RandomState};
        let state = RandomState::new();
        let values = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::Int(1),
            Value::Float(1.0),
            Value::Float(-0.0),
            Value::Float(0.0),
            Value::Float(f64::NAN),
            Value::from("1"),
            Value::Bytes(b"1".to_vec()),
        ];
        let mut map = HashMap::new();
        for (i, v) in values.iter().enumerate() {
            assert_eq!(state.hash_one(v), state.hash_one(v.clone()), "{v:?}");
            map.insert(v.clone(), i);
        }
        // Every variant is its own key, as `Eq` has it (an integer is never its float).
        assert_eq!(map.len(), values.len());
        for (i, v) in values.iter().enumerate() {
            assert_eq!(map[v], i, "{v:?}");
        }
    }

    #[test]
    fn equality_is_the_order_saying_equal() {
        let values = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::Int(0),
            Value::Int(1),
            Value::Int(i64::MAX),
            Value::Int(9_007_199_254_740_993),
            Value::Float(0.0),
            Value::Float(-0.0),
            Value::Float(1.0),
            Value::Float(9_007_199_254_740_992.0),
            Value::Float(9_223_372_036_854_775_807.0),
            Value::Float(f64::NAN),
            Value::Float(-f64::NAN),
            Value::Float(f64::INFINITY),
            Value::Str(String::new()),
            Value::Str("a".into()),
            Value::Str("ab".into()),
            Value::Bytes(vec![]),
            Value::Bytes(b"a".to_vec()),
        ];
        for a in &values {
            for b in &values {
                assert_eq!(a == b, a.cmp(b) == Ordering::Equal, "{a:?} == {b:?}");
                assert_eq!(a == &b.clone(), a.cmp(b).is_eq());
            }
        }
    }

    #[test]
    fn the_order_is_total_across_types() {
        let ordered = [
            Value::Null,
            Value::Bool(false),
            Value::Bool(true),
            Value::Int(-5),
            Value::Float(-4.5),
            Value::Int(1),
            Value::Float(1.0),
            Value::Float(1.5),
            Value::Str(String::new()),
            Value::Str("a".into()),
            Value::Bytes(vec![]),
        ];
        for pair in ordered.windows(2) {
            assert!(pair[0] < pair[1], "{:?} < {:?}", pair[0], pair[1]);
        }
    }

    #[test]
    fn integers_beyond_2_pow_53_compare_with_floats_exactly() {
        // 2^53 + 1 rounds to 2^53 as an f64, yet it is the larger number.
        let big = 1i64 << 53;
        assert!(Value::Int(big + 1) > Value::Float(big as f64));
        assert!(Value::Float(big as f64) < Value::Int(big + 1));
        assert!(Value::Int(big) < Value::Float(big as f64));
        // 2^53 + 3 rounds up to 2^53 + 4: it is still below that float.
        assert!(Value::Int(big + 3) < Value::Float((big + 4) as f64));
        assert!(Value::Int(i64::MAX) < Value::Float(i64::MAX as f64));
        assert!(Value::Int(i64::MIN) < Value::Float(i64::MIN as f64));
        assert!(Value::Int(i64::MIN + 1) > Value::Float(i64::MIN as f64));
        assert!(Value::Int(0) > Value::Float(f64::NEG_INFINITY));
        assert!(Value::Int(i64::MAX) < Value::Float(f64::INFINITY));
    }

    #[test]
    fn every_value_round_trips_through_its_stored_form_bit_for_bit() {
        let floats = [
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001), // a signalling NaN with a payload
            f64::INFINITY,
            f64::NEG_INFINITY,
            -0.0,
            0.0,
            f64::MIN_POSITIVE,
            f64::MAX,
            -1.5e-300,
            5e-324,
        ];
        for x in floats {
            let json = serde_json::to_string(&Value::Float(x)).unwrap();
            let back: Value = serde_json::from_str(&json).unwrap();
            match back {
                Value::Float(y) => assert_eq!(y.to_bits(), x.to_bits(), "{x} via {json}"),
                other => panic!("{x} came back as {other:?}"),
            }
        }
        let others = [
            Value::Null,
            Value::Bool(true),
            Value::Int(i64::MIN),
            Value::Str("quote \" and \u{0}".into()),
            Value::Bytes(vec![0, 255]),
        ];
        for v in others {
            let back: Value = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
            assert_eq!(back, v);
        }
    }

    #[test]
    fn the_stored_form_is_what_earlier_builds_wrote() {
        // Statistics written before non-finite floats were stored by their bits must read.
        let old = r#"["Null",{"Bool":false},{"Int":-3},{"Float":2.5},{"Float":-0.0},{"Str":"a"},{"Bytes":[1,2]}]"#;
        let values: Vec<Value> = serde_json::from_str(old).unwrap();
        assert_eq!(serde_json::to_string(&values).unwrap(), old);
        assert!(matches!(values[4], Value::Float(z) if z.is_sign_negative()));
        assert_eq!(
            serde_json::to_string(&Value::Float(f64::NEG_INFINITY)).unwrap(),
            r#"{"Float":"0xfff0000000000000"}"#
        );
        // What the old encoder wrote for a non-finite float, and malformed bits: errors.
        for bad in [
            r#"{"Float":null}"#,
            r#"{"Float":"0x7ff8"}"#,
            r#"{"Float":"nan"}"#,
            r#"{"Float":"0xzzzzzzzzzzzzzzzz"}"#,
        ] {
            assert!(serde_json::from_str::<Value>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn nan_and_signed_zero_order_as_ieee_total_order() {
        let ordered = [
            Value::Float(-f64::NAN),
            Value::Float(f64::NEG_INFINITY),
            Value::Int(i64::MIN),
            Value::Float(-0.0),
            Value::Int(0),
            Value::Float(0.0),
            Value::Float(f64::INFINITY),
            Value::Float(f64::NAN),
            Value::Str(String::new()),
        ];
        for pair in ordered.windows(2) {
            assert!(pair[0] < pair[1], "{:?} < {:?}", pair[0], pair[1]);
        }
        assert_eq!(Value::Float(f64::NAN), Value::Float(f64::NAN));
    }

    #[test]
    fn the_hash_is_fixed() {
        // Sketches are stored and merged across builds: a changed hash would make every
        // stored distinct-count sketch disagree with new ones. These values must not change.
        assert_eq!(hash_bytes(b""), 0x0ff2_e696_99c4_857e);
        assert_eq!(hash_bytes(b"strata planner"), 0x8b8b_c5fa_14ee_3a70);
        assert_eq!(Value::from("Redmond").stable_hash(), 0x5d04_8f8d_3830_25de);
        assert_ne!(Value::Int(1).stable_hash(), Value::Float(1.0).stable_hash());
    }
}
