//! Numbers in keys of the compact format (key format 2, `docs/formats/keys.md`).
//!
//! A nonzero finite number is `±2^e × 1.f`, exactly, for integers and floats alike (an `i64`
//! has at most 63 significant bits, an `f64` 53): the encoding is a tag for the sign and the
//! band of `e`, then `e` (one byte for `0 <= e < 64`, two otherwise), then the bits of `f`
//! in groups of seven, each byte `bits << 1 | more`, the last group's low bit clear and
//! trailing zero groups left out. Comparing two such encodings bytewise compares `e`, then
//! `f` bit by bit, a shorter `f` (trailing zeros) first: the number order. A negative number
//! is the positive encoding of its magnitude with every byte after the tag inverted.
//!
//! An integer and the equal float are two values (the integer first): the one that sorts
//! second carries a *marker*, a zero group after its last (whose low bit is then set) — the
//! float for a positive value, the integer for a negative one, so inverting keeps the integer
//! first. The common key integer takes 1 + 1 + ⌈bits/7⌉ bytes: 3 below 128, 5 below 2^22,
//! against 10 in key format 1.

use strata_planner::Value;

use crate::table::codec::format::{
    KEY2_NAN_NEG, KEY2_NAN_POS, KEY2_NEG, KEY2_NEG_HUGE, KEY2_NEG_INF, KEY2_NEG_TINY,
    KEY2_NEG_ZERO, KEY2_POS, KEY2_POS_HUGE, KEY2_POS_INF, KEY2_POS_TINY, KEY2_POS_ZERO, KEY2_ZERO,
};
use crate::table::codec::key::{KeyError, ordered_f64, unordered_f64};

/// Most groups a number's bits take (63 bits), before a marker.
const MAX_GROUPS: usize = 9;
/// Added to the exponent of a number below 1 (down to 2^-1074) so it is stored unsigned.
const TINY_BIAS: i32 = 1074;

/// Whether `tag` starts a compact number.
#[inline]
pub(crate) fn is_tag(tag: u8) -> bool {
    (KEY2_NAN_NEG..=KEY2_NAN_POS).contains(&tag)
}

/// A nonzero magnitude as `2^exp × 1.frac`, `frac`'s top bit the first after the point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Parts {
    exp: i32,
    frac: u64,
}

fn int_parts(magnitude: u64) -> Parts {
    let exp = 63 - magnitude.leading_zeros() as i32;
    let rest = magnitude ^ (1u64 << exp);
    let frac = if exp == 0 { 0 } else { rest << (64 - exp) };
    Parts { exp, frac }
}

/// `x` finite and nonzero.
fn float_parts(x: f64) -> Parts {
    let bits = x.abs().to_bits();
    let field = (bits >> 52) as i32;
    let mantissa = bits & ((1u64 << 52) - 1);
    if field != 0 {
        return Parts {
            exp: field - 1023,
            frac: mantissa << 12,
        };
    }
    // Subnormal: the leading one is inside the mantissa.
    let top = 63 - mantissa.leading_zeros() as i32;
    let rest = mantissa ^ (1u64 << top);
    Parts {
        exp: top - TINY_BIAS,
        frac: if top == 0 { 0 } else { rest << (64 - top) },
    }
}

/// The magnitude `p` describes as an `f64`, if one holds it exactly.
fn float_of(p: Parts) -> Option<f64> {
    if !(-TINY_BIAS..=1023).contains(&p.exp) || p.frac & 0xfff != 0 {
        return None;
    }
    let mantissa = p.frac >> 12;
    if p.exp >= -1022 {
        return Some(f64::from_bits(((p.exp + 1023) as u64) << 52 | mantissa));
    }
    let shift = (-1022 - p.exp) as u32;
    let whole = (1u64 << 52) | mantissa;
    (whole & ((1u64 << shift) - 1) == 0).then(|| f64::from_bits(whole >> shift))
}

/// Whether `p` is a whole number.
fn integral(p: Parts) -> bool {
    match p.exp {
        64.. => true,
        ..0 => false,
        0 => p.frac == 0,
        e => p.frac & (u64::MAX >> e) == 0,
    }
}

/// The magnitude `p` describes as an integer below 2^64, if it is one.
fn magnitude_of(p: Parts) -> Option<u64> {
    if !(0..64).contains(&p.exp) || !integral(p) {
        return None;
    }
    let rest = if p.exp == 0 {
        0
    } else {
        p.frac >> (64 - p.exp)
    };
    Some((1u64 << p.exp) | rest)
}

/// Appends an integer.
pub(crate) fn encode_int(i: i64, out: &mut Vec<u8>) {
    if i == 0 {
        out.push(KEY2_ZERO);
        return;
    }
    // A negative integer carries the marker, so it sorts before the equal float.
    put(out, i < 0, int_parts(i.unsigned_abs()), i < 0);
}

/// Appends a float.
pub(crate) fn encode_float(x: f64, out: &mut Vec<u8>) {
    let negative = x.is_sign_negative();
    if x.is_nan() {
        out.push(if negative { KEY2_NAN_NEG } else { KEY2_NAN_POS });
        out.extend(ordered_f64(x));
    } else if x.is_infinite() {
        out.push(if negative { KEY2_NEG_INF } else { KEY2_POS_INF });
    } else if x == 0.0 {
        out.push(if negative {
            KEY2_NEG_ZERO
        } else {
            KEY2_POS_ZERO
        });
    } else {
        let parts = float_parts(x);
        // A positive whole float carries the marker, so it sorts after the equal integer.
        put(out, negative, parts, !negative && integral(parts));
    }
}

fn put(out: &mut Vec<u8>, negative: bool, p: Parts, marker: bool) {
    let start = out.len();
    let (tag, wide) = match p.exp {
        ..0 => (KEY2_POS_TINY, Some((p.exp + TINY_BIAS) as u16)),
        0..64 => (KEY2_POS, None),
        _ => (KEY2_POS_HUGE, Some(p.exp as u16)),
    };
    out.push(if negative { mirror(tag) } else { tag });
    match wide {
        Some(exp) => out.extend_from_slice(&exp.to_be_bytes()),
        None => out.push(p.exp as u8),
    }
    let significant = if p.frac == 0 {
        0
    } else {
        64 - p.frac.trailing_zeros() as usize
    };
    let groups = significant.div_ceil(7).max(1);
    for i in 0..groups {
        let bits = ((p.frac >> (57 - 7 * i)) & 0x7f) as u8;
        out.push(bits << 1 | u8::from(i + 1 < groups));
    }
    if marker {
        if let Some(last) = out.last_mut() {
            *last |= 1;
        }
        out.push(0);
    }
    if negative {
        for b in &mut out[start + 1..] {
            *b = !*b;
        }
    }
}

/// The tag of the negative band that mirrors a positive one.
fn mirror(tag: u8) -> u8 {
    2 * KEY2_ZERO - tag
}

/// The common key field, a positive integer, decoded without the general path's checks for
/// floats and markers: `None` for anything else (the general path then decides, errors
/// included). `bytes` starts with [`KEY2_POS`].
#[inline]
pub(crate) fn positive_int(bytes: &[u8]) -> Option<(i64, usize)> {
    let exp = u32::from(*bytes.get(1)?);
    if exp > 62 {
        return None;
    }
    let mut rest: u64 = 0;
    let mut at = 2;
    loop {
        let b = *bytes.get(at)?;
        let group = at - 2;
        if group >= MAX_GROUPS {
            return None;
        }
        rest |= u64::from(b >> 1) << (57 - 7 * group);
        at += 1;
        if b & 1 == 0 {
            // Canonical: a zero last group only when it is the only one (else a marker).
            if b == 0 && group > 0 {
                return None;
            }
            break;
        }
    }
    // Whole: no bit below the units.
    if exp == 0 {
        return (rest == 0).then_some((1, at));
    }
    if rest & (u64::MAX >> exp) != 0 {
        return None;
    }
    Some((((1u64 << exp) | (rest >> (64 - exp))) as i64, at))
}

/// How many bytes the compact number at the front of `bytes` takes (its first byte a tag
/// [`is_tag`] accepts), checking its length but not its canonical form.
pub(crate) fn len(bytes: &[u8]) -> Result<usize, KeyError> {
    let tag = bytes[0];
    let (at, flip) = match tag {
        KEY2_NAN_NEG | KEY2_NAN_POS => {
            return if bytes.len() >= 9 {
                Ok(9)
            } else {
                Err(KeyError::Truncated)
            };
        }
        KEY2_NEG_INF | KEY2_NEG_ZERO | KEY2_ZERO | KEY2_POS_ZERO | KEY2_POS_INF => return Ok(1),
        KEY2_NEG => (2, 0xff),
        KEY2_POS => (2, 0),
        KEY2_NEG_HUGE | KEY2_NEG_TINY => (3, 0xff),
        _ => (3, 0),
    };
    let groups = bytes.get(at..).ok_or(KeyError::Truncated)?;
    for (i, b) in groups.iter().take(MAX_GROUPS + 1).enumerate() {
        if (b ^ flip) & 1 == 0 {
            return Ok(at + i + 1);
        }
    }
    if groups.len() > MAX_GROUPS {
        Err(KeyError::BadNumber)
    } else {
        Err(KeyError::Truncated)
    }
}

/// Decodes the compact number at the front of `bytes` (its first byte a tag [`is_tag`]
/// accepts): the value and the bytes it used. Only the canonical encoding of a value decodes.
pub(crate) fn decode(bytes: &[u8]) -> Result<(Value, usize), KeyError> {
    let tag = bytes[0];
    let special = |v: f64| Ok((Value::Float(v), 1));
    let negative = tag < KEY2_ZERO;
    let positive_tag = if negative { mirror(tag) } else { tag };
    match tag {
        KEY2_NAN_NEG | KEY2_NAN_POS => {
            let ordered: [u8; 8] = bytes
                .get(1..9)
                .and_then(|b| b.try_into().ok())
                .ok_or(KeyError::Truncated)?;
            let x = unordered_f64(ordered);
            if !x.is_nan() || x.is_sign_negative() != negative {
                return Err(KeyError::BadNumber);
            }
            return Ok((Value::Float(x), 9));
        }
        KEY2_NEG_INF => return special(f64::NEG_INFINITY),
        KEY2_POS_INF => return special(f64::INFINITY),
        KEY2_NEG_ZERO => return special(-0.0),
        KEY2_POS_ZERO => return special(0.0),
        KEY2_ZERO => return Ok((Value::Int(0), 1)),
        _ => {}
    }
    let flip = if negative { 0xff } else { 0 };
    let byte = |i: usize| bytes.get(i).map(|b| b ^ flip).ok_or(KeyError::Truncated);
    let (exp, mut at) = match positive_tag {
        KEY2_POS => (i32::from(byte(1)?), 2),
        band => {
            let raw = i32::from(u16::from_be_bytes([byte(1)?, byte(2)?]));
            let exp = if band == KEY2_POS_TINY {
                raw - TINY_BIAS
            } else {
                raw
            };
            (exp, 3)
        }
    };
    let in_band = match positive_tag {
        KEY2_POS_TINY => (-TINY_BIAS..0).contains(&exp),
        KEY2_POS => (0..64).contains(&exp),
        _ => (64..=1023).contains(&exp),
    };
    if !in_band {
        return Err(KeyError::BadNumber);
    }
    let (mut frac, mut groups, mut seen) = (0u64, 0usize, [0u8; MAX_GROUPS + 1]);
    loop {
        let b = byte(at)?;
        at += 1;
        let bits = b >> 1;
        if groups < MAX_GROUPS {
            frac |= u64::from(bits) << (57 - 7 * groups);
        } else if groups > MAX_GROUPS || bits != 0 {
            return Err(KeyError::BadNumber);
        }
        seen[groups] = bits;
        groups += 1;
        if b & 1 == 0 {
            break;
        }
    }
    let marker = groups >= 2 && seen[groups - 1] == 0;
    // Canonical: the last group of the bits themselves is not zero, unless it is the only one.
    if marker && groups >= 3 && seen[groups - 2] == 0 {
        return Err(KeyError::BadNumber);
    }
    let parts = Parts { exp, frac };
    let int = if negative { marker } else { !marker };
    let value = if int && integral(parts) {
        let magnitude = magnitude_of(parts).ok_or(KeyError::BadNumber)?;
        let value = if negative {
            0i64.checked_sub_unsigned(magnitude)
        } else {
            i64::try_from(magnitude).ok()
        };
        Value::Int(value.ok_or(KeyError::BadNumber)?)
    } else {
        // A whole positive float needs its marker, a fraction must not have one.
        if !negative && marker != integral(parts) {
            return Err(KeyError::BadNumber);
        }
        if negative && marker {
            return Err(KeyError::BadNumber);
        }
        let x = float_of(parts).ok_or(KeyError::BadNumber)?;
        Value::Float(if negative { -x } else { x })
    };
    Ok((value, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(v: &Value) -> Vec<u8> {
        let mut out = Vec::new();
        match v {
            Value::Int(i) => encode_int(*i, &mut out),
            Value::Float(x) => encode_float(*x, &mut out),
            _ => unreachable!("numbers only"),
        }
        out
    }

    fn samples() -> Vec<Value> {
        let mut out = Vec::new();
        for i in [
            0i64,
            1,
            2,
            3,
            7,
            100,
            127,
            128,
            1000,
            500_000,
            (1 << 53) + 1,
            i64::MAX,
            i64::MAX - 1,
            i64::MIN,
            i64::MIN + 1,
            -1,
            -2,
            -100,
            -(1 << 40),
        ] {
            out.push(Value::Int(i));
        }
        for x in [
            0.0,
            -0.0,
            0.5,
            -0.5,
            1.0,
            -1.0,
            1.5,
            2.0,
            100.25,
            1e-300,
            -1e-300,
            f64::MIN_POSITIVE,
            f64::MIN_POSITIVE / 3.0,
            5e-324,
            -5e-324,
            1e300,
            -1e300,
            9_223_372_036_854_775_808.0,
            18_446_744_073_709_551_616.0,
            f64::MAX,
            f64::MIN,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            -f64::NAN,
            f64::from_bits(0x7ff0_0000_0000_0001),
            f64::from_bits(0xfff8_0000_0000_0001),
            1234.56,
        ] {
            out.push(Value::Float(x));
        }
        out
    }

    #[test]
    fn numbers_round_trip_and_sort_as_values() {
        let values = samples();
        for a in &values {
            let ea = enc(a);
            let (back, used) = decode(&ea).unwrap_or_else(|e| panic!("{a:?}: {e}"));
            assert_eq!(used, ea.len(), "{a:?}");
            assert_eq!(len(&ea), Ok(ea.len()), "{a:?}");
            assert_eq!(back.cmp(a), std::cmp::Ordering::Equal, "{a:?} -> {back:?}");
            for b in &values {
                let eb = enc(b);
                assert_eq!(ea.cmp(&eb), a.cmp(b), "{a:?} vs {b:?}: {ea:02x?} {eb:02x?}");
            }
        }
    }

    #[test]
    fn integers_are_short() {
        assert_eq!(enc(&Value::Int(1)), [KEY2_POS, 0, 0]);
        assert_eq!(enc(&Value::Int(100)).len(), 3);
        assert_eq!(enc(&Value::Int(1000)).len(), 3);
        assert_eq!(enc(&Value::Int(1001)).len(), 4);
        assert_eq!(enc(&Value::Int(500_001)).len(), 5);
        assert_eq!(enc(&Value::Int(i64::MAX)).len(), 11);
        // The equal float sorts after, by its marker.
        assert_eq!(enc(&Value::Float(1.0)), [KEY2_POS, 0, 1, 0]);
        assert!(enc(&Value::Int(-1)) < enc(&Value::Float(-1.0)));
    }

    #[test]
    fn the_positive_integer_path_agrees_with_the_general_decode() {
        let mut cases: Vec<Vec<u8>> = samples().iter().map(enc).collect();
        cases.extend((0..2000i64).map(|i| enc(&Value::Int(i * 7919 + (i << 30)))));
        // Damage: every byte of a few encodings set to a few values, and cut short.
        let base = enc(&Value::Int(1_234_567));
        for at in 1..base.len() {
            for b in [0x00, 0x01, 0x02, 0x80, 0xfe, 0xff] {
                let mut bad = base.clone();
                bad[at] = b;
                cases.push(bad);
            }
            cases.push(base[..at].to_vec());
        }
        for bytes in cases.iter().filter(|b| b.first() == Some(&KEY2_POS)) {
            if let Some((i, used)) = positive_int(bytes) {
                assert_eq!(decode(bytes), Ok((Value::Int(i), used)), "{bytes:02x?}");
            } else if let Ok((v, _)) = decode(bytes) {
                assert!(!matches!(v, Value::Int(_)), "{bytes:02x?} decodes to {v:?}");
            }
        }
    }

    #[test]
    fn only_canonical_forms_decode() {
        // A trailing zero group that is not a marker's place, a marker on a fraction, an
        // exponent outside its band, too many groups, and bytes that end early.
        let bad: [&[u8]; 7] = [
            &[KEY2_POS, 3, 0x01, 0x01, 0x00],
            &[KEY2_POS, 0, 0x81, 0x00],
            &[KEY2_POS, 64, 0x00],
            &[KEY2_POS_TINY, 0x04, 0x32, 0x00],
            &[
                KEY2_POS, 62, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x03, 0x02,
            ],
            &[KEY2_POS, 5],
            &[KEY2_NAN_POS, 0xff, 0xf8],
        ];
        for bytes in bad {
            assert!(decode(bytes).is_err(), "{bytes:02x?}");
        }
        // Not a NaN under a NaN tag.
        let mut one = vec![KEY2_NAN_POS];
        one.extend(ordered_f64(1.0));
        assert_eq!(decode(&one), Err(KeyError::BadNumber));
    }
}
