//! Predicates decided on a stored value's bytes (`docs/formats/records.md`), so a filtered
//! scan neither checks nor copies a string it only compares. Stored values are canonical
//! (shortest varints, a string's bytes as they are), so two values of one type are equal
//! exactly when their encodings are, strings order as their bytes after the length, and an
//! integer or float range needs only the number's bytes.
//! Where the bytes do not decide — another type, a `NULL` bound, booleans — the value is
//! decoded and compared as before ([`Predicate::matches`]).
//!
//! A value found equal to a valid encoding is valid; one found different, or ordered by its
//! bytes, is not decoded, and so not checked beyond its place in the row: as for the fields a
//! reader skips, block checksums, `verify` and any full decode cover it (a row that passes is
//! built, and so decoded, next).

use strata_planner::pattern::Pattern;
use strata_planner::{Op, Predicate, Value};

use crate::table::codec::format::{VALUE_BYTES, VALUE_FLOAT, VALUE_INT, VALUE_NULL, VALUE_STR};
use crate::table::codec::record_codec::{Reader, encode_value};

/// How a predicate is tested on a stored value's bytes.
#[derive(Debug)]
pub(crate) enum ByteTest {
    /// `=` or `IN` of values of one type (strings, integers or floats), `tag`: the value
    /// matches if its bytes are one of `encoded`; any other value of that type does not.
    OneOf { tag: u8, encoded: Vec<Vec<u8>> },
    /// A range of strings: the string's bytes against the bounds (each with whether it is
    /// included); a value of another type by its type's place in the order.
    StrRange {
        low: Option<(Box<[u8]>, bool)>,
        high: Option<(Box<[u8]>, bool)>,
    },
    /// A range of integers: an integer's varint read and compared; a value of another type
    /// by its type's place in the order (a float is decoded).
    IntRange {
        low: Option<(i64, bool)>,
        high: Option<(i64, bool)>,
    },
    /// A range of floats: a float's bits read and compared in `f64::total_cmp`'s order (as
    /// `Value` orders floats); a value of another type by its type's place (an integer is
    /// decoded).
    FloatRange {
        low: Option<(f64, bool)>,
        high: Option<(f64, bool)>,
    },
    /// `LIKE` (or, `negated`, `NOT LIKE`): a string's bytes matched in place against the
    /// pattern parsed once; any other type passes neither.
    Like { pattern: Pattern, negated: bool },
    /// Decoded and compared as a value.
    Decode,
}

impl ByteTest {
    /// How `p` is tested.
    pub(crate) fn of(p: &Predicate) -> ByteTest {
        match &p.op {
            Op::Eq(x) => ByteTest::one_of(std::slice::from_ref(x)),
            Op::In(xs) => ByteTest::one_of(xs),
            Op::Lt(Value::Str(x)) => ByteTest::str_range(None, Some((x, false))),
            Op::Le(Value::Str(x)) => ByteTest::str_range(None, Some((x, true))),
            Op::Gt(Value::Str(x)) => ByteTest::str_range(Some((x, false)), None),
            Op::Ge(Value::Str(x)) => ByteTest::str_range(Some((x, true)), None),
            Op::Between(Value::Str(a), Value::Str(b)) => {
                ByteTest::str_range(Some((a, true)), Some((b, true)))
            }
            Op::Lt(Value::Int(x)) => ByteTest::int_range(None, Some((*x, false))),
            Op::Le(Value::Int(x)) => ByteTest::int_range(None, Some((*x, true))),
            Op::Gt(Value::Int(x)) => ByteTest::int_range(Some((*x, false)), None),
            Op::Ge(Value::Int(x)) => ByteTest::int_range(Some((*x, true)), None),
            Op::Between(Value::Int(a), Value::Int(b)) => {
                ByteTest::int_range(Some((*a, true)), Some((*b, true)))
            }
            Op::Lt(Value::Float(x)) => ByteTest::float_range(None, Some((*x, false))),
            Op::Le(Value::Float(x)) => ByteTest::float_range(None, Some((*x, true))),
            Op::Gt(Value::Float(x)) => ByteTest::float_range(Some((*x, false)), None),
            Op::Ge(Value::Float(x)) => ByteTest::float_range(Some((*x, true)), None),
            Op::Between(Value::Float(a), Value::Float(b)) => {
                ByteTest::float_range(Some((*a, true)), Some((*b, true)))
            }
            Op::Like(p) => ByteTest::Like {
                pattern: Pattern::new(p),
                negated: false,
            },
            Op::NotLike(p) => ByteTest::Like {
                pattern: Pattern::new(p),
                negated: true,
            },
            _ => ByteTest::Decode,
        }
    }

    fn float_range(low: Option<(f64, bool)>, high: Option<(f64, bool)>) -> ByteTest {
        ByteTest::FloatRange { low, high }
    }

    fn one_of(values: &[Value]) -> ByteTest {
        let tag_of = |v: &Value| match v {
            Value::Str(_) | Value::Int(_) | Value::Float(_) => {
                let mut out = Vec::new();
                encode_value(v, &mut out);
                Some(out)
            }
            _ => None,
        };
        // `NULL` equals nothing: it adds no encoding.
        let encoded: Option<Vec<Vec<u8>>> =
            values.iter().filter(|v| !v.is_null()).map(tag_of).collect();
        match encoded {
            Some(encoded)
                if !encoded.is_empty() && encoded.iter().all(|e| e[0] == encoded[0][0]) =>
            {
                ByteTest::OneOf {
                    tag: encoded[0][0],
                    encoded,
                }
            }
            _ => ByteTest::Decode,
        }
    }

    fn str_range(low: Option<(&str, bool)>, high: Option<(&str, bool)>) -> ByteTest {
        let bound =
            |b: Option<(&str, bool)>| b.map(|(s, inclusive)| (s.as_bytes().into(), inclusive));
        ByteTest::StrRange {
            low: bound(low),
            high: bound(high),
        }
    }

    fn int_range(low: Option<(i64, bool)>, high: Option<(i64, bool)>) -> ByteTest {
        ByteTest::IntRange { low, high }
    }

    /// Whether a value whose stored bytes are `raw` (tag and payload, exactly its place in
    /// the row) passes, if its bytes decide it; `None`: decode it and compare.
    #[inline]
    pub(crate) fn decide(&self, raw: &[u8]) -> Option<bool> {
        match self {
            ByteTest::OneOf { tag, encoded } => {
                if encoded.iter().any(|e| same_bytes(e, raw)) {
                    Some(true)
                } else if raw.first() == Some(tag) {
                    Some(false)
                } else {
                    None
                }
            }
            ByteTest::StrRange { low, high } => {
                let &tag = raw.first()?;
                if tag != VALUE_STR {
                    return other_type(tag, VALUE_STR, low.is_none(), high.is_none());
                }
                let mut r = Reader { bytes: raw, at: 1 };
                let len = r.varint().ok()?;
                let s = raw.get(r.at..)?;
                if s.len() as u64 != len {
                    return None;
                }
                Some(within(low, high, |b| s.cmp(b)))
            }
            ByteTest::IntRange { low, high } => {
                let &tag = raw.first()?;
                if tag != VALUE_INT {
                    return other_type(tag, VALUE_INT, low.is_none(), high.is_none());
                }
                let mut r = Reader { bytes: raw, at: 1 };
                let zigzag = r.varint().ok()?;
                if r.at != raw.len() {
                    return None;
                }
                let v = ((zigzag >> 1) as i64) ^ -((zigzag & 1) as i64);
                Some(within(low, high, |b| v.cmp(b)))
            }
            ByteTest::FloatRange { low, high } => {
                let &tag = raw.first()?;
                if tag != VALUE_FLOAT {
                    return other_type(tag, VALUE_FLOAT, low.is_none(), high.is_none());
                }
                let bits: [u8; 8] = raw.get(1..)?.try_into().ok()?;
                let v = f64::from_le_bytes(bits);
                Some(within(low, high, |b| v.total_cmp(b)))
            }
            ByteTest::Like { pattern, negated } => {
                let &tag = raw.first()?;
                if tag != VALUE_STR {
                    // Not text: unknown to LIKE and NOT LIKE alike (an unknown tag is decoded,
                    // which reports it).
                    return (tag <= VALUE_BYTES).then_some(false);
                }
                let mut r = Reader { bytes: raw, at: 1 };
                let len = r.varint().ok()?;
                let s = raw.get(r.at..)?;
                if s.len() as u64 != len {
                    return None;
                }
                let text = std::str::from_utf8(s).ok()?;
                Some(pattern.matches(text) != *negated)
            }
            ByteTest::Decode => None,
        }
    }
}

/// Whether a value lies within `low` and `high` (each with whether it is included), `order`
/// giving how the value compares with a bound.
#[inline]
fn within<B>(
    low: &Option<(B, bool)>,
    high: &Option<(B, bool)>,
    order: impl Fn(&B) -> std::cmp::Ordering,
) -> bool {
    let holds = |bound: &Option<(B, bool)>, side: std::cmp::Ordering| {
        bound.as_ref().is_none_or(|(b, inclusive)| {
            let o = order(b);
            o == side || (*inclusive && o.is_eq())
        })
    };
    holds(low, std::cmp::Ordering::Greater) && holds(high, std::cmp::Ordering::Less)
}

/// Whether a value of type `tag`, not the range's type `range_tag`, passes a range with a low
/// bound (`!unbounded_low`) and a high one: by its type's place in `Value`'s order (booleans
/// below numbers below strings below bytes; integers and floats are one numeric type, so the
/// other of the two is decoded, as are `NULL` and unknown tags).
#[inline]
fn other_type(tag: u8, range_tag: u8, unbounded_low: bool, unbounded_high: bool) -> Option<bool> {
    let numeric = |t: u8| t == VALUE_INT || t == VALUE_FLOAT;
    if tag == VALUE_NULL || tag > VALUE_BYTES || (numeric(tag) && numeric(range_tag)) {
        return None;
    }
    // Tags follow the order of types (`docs/formats/records.md`).
    Some(if tag < range_tag {
        unbounded_low
    } else {
        unbounded_high
    })
}

/// `a == b` inline for the short values compared here (a `memcmp` call per row was a
/// twelfth of a filtered scan).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        encode_value(v, &mut out);
        out
    }

    /// Wherever the bytes decide, they decide as `Predicate::matches` on the decoded value.
    #[test]
    fn byte_decisions_agree_with_the_decoded_comparison() {
        let values = [
            Value::Bool(false),
            Value::Bool(true),
            Value::Int(-3),
            Value::Int(0),
            Value::Int(5),
            Value::Int(300),
            Value::Int(i64::MIN),
            Value::Int(i64::MAX),
            Value::Float(5.0),
            Value::Float(-0.0),
            Value::Float(0.0),
            Value::Float(400000.5),
            Value::Float(f64::NAN),
            Value::Float(f64::NEG_INFINITY),
            Value::from(""),
            Value::from("F"),
            Value::from("O"),
            Value::from("VIP"),
            Value::from("VIPs"),
            Value::from("1995-03-15"),
            Value::Bytes(vec![1, 2]),
        ];
        let mut predicates = Vec::new();
        for x in &values {
            predicates.extend([
                Predicate::eq("f", x.clone()),
                Predicate::lt("f", x.clone()),
                Predicate::le("f", x.clone()),
                Predicate::gt("f", x.clone()),
                Predicate::ge("f", x.clone()),
                Predicate::ne("f", x.clone()),
            ]);
            for y in &values {
                predicates.push(Predicate::between("f", x.clone(), y.clone()));
                predicates.push(Predicate::in_list("f", [x.clone(), y.clone()]));
            }
        }
        predicates.push(Predicate::in_list("f", [Value::Null, Value::from("F")]));
        predicates.push(Predicate::eq("f", Value::Null));
        for pattern in ["VIP%", "%s", "_", "1995-__-15", "%", "", "O", "\\%"] {
            predicates.push(Predicate::like("f", pattern));
            predicates.push(Predicate::not_like("f", pattern));
        }
        let mut decided = 0;
        for p in &predicates {
            let test = ByteTest::of(p);
            for v in &values {
                if let Some(result) = test.decide(&stored(v)) {
                    decided += 1;
                    assert_eq!(result, p.matches(v), "{p} on {v:?}");
                }
            }
        }
        assert!(
            decided > predicates.len(),
            "the bytes decided only {decided}"
        );
    }

    #[test]
    fn a_string_equality_is_decided_on_bytes_and_other_types_are_decoded() {
        let test = ByteTest::of(&Predicate::eq("f", "F"));
        assert_eq!(test.decide(&stored(&Value::from("F"))), Some(true));
        assert_eq!(test.decide(&stored(&Value::from("O"))), Some(false));
        assert_eq!(test.decide(&stored(&Value::Int(1))), None);
        // A string whose length does not fill its place is not judged here.
        let range = ByteTest::of(&Predicate::lt("f", "M"));
        assert_eq!(range.decide(&[VALUE_STR, 5, b'A']), None);
        assert_eq!(range.decide(&[]), None);
    }
}
