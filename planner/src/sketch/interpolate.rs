//! Where a value sits inside a histogram bucket, as a fraction of the bucket.
//!
//! A bucket `[lo, hi]` holds a known share of the rows; a range that ends inside it takes the
//! part of that share below its end, which needs the values placed on a line:
//!
//! - **numbers** by value;
//! - **text dates and timestamps** (`YYYY-MM-DD`, optionally followed by a separator and
//!   `HH:MM:SS`, as SQLite and CSV files keep them) by time, when both bounds are dates: placed
//!   as strings, `2024-02-20 .. 2024-03-10` puts `2024-03-01 .. 2024-03-04` at a
//!   millionth of the bucket (the month digit outweighs every day), where it holds a sixth;
//! - **other strings and bytes** as PostgreSQL's `convert_string_to_scalar` does: the bounds'
//!   common prefix taken off, each next byte a digit in the base of the byte range the bounds
//!   use (widened to every digit, lower-case or upper-case letter when one appears), so
//!   `"C0100" .. "C0200"` interpolates in base 10, not 256.
//!
//! Every placement is monotone in the value for fixed bounds (a larger value is never placed
//! lower): a byte outside the expected form saturates the rest of the value to the lowest or
//! the highest placement, as comparing the strings would. That is what keeps a range's
//! estimate monotone in its ends.

use crate::value::Value;

/// Where `value` sits between `lo` and `hi`, in [0, 1]; 0.5 when the values cannot be placed
/// on a line.
pub(crate) fn within(lo: &Value, hi: &Value, value: &Value) -> f64 {
    let fraction = match (text(lo), text(hi), text(value)) {
        (Some(lo), Some(hi), Some(value)) if strict_date(lo) && strict_date(hi) => {
            ratio(date_time(lo), date_time(hi), date_time(value))
        }
        (Some(lo), Some(hi), Some(value)) => strings(lo, hi, value),
        _ => match (lo.as_scalar(), hi.as_scalar(), value.as_scalar()) {
            (Some(l), Some(h), Some(v)) => ratio(l, h, v),
            _ => None,
        },
    };
    fraction.unwrap_or(0.5).clamp(0.0, 1.0)
}

fn text(v: &Value) -> Option<&[u8]> {
    match v {
        Value::Str(s) => Some(s.as_bytes()),
        Value::Bytes(b) => Some(b),
        _ => None,
    }
}

fn ratio(lo: f64, hi: f64, value: f64) -> Option<f64> {
    (hi > lo && value.is_finite()).then(|| (value - lo) / (hi - lo))
}

/// The date form: a digit (`d`) or this byte at each position.
const DATE: &[u8] = b"dddd-dd-dd";
const TIME: &[u8] = b"dd:dd:dd";

/// Whether `s` starts with a well-formed `YYYY-MM-DD` naming a real day.
fn strict_date(s: &[u8]) -> bool {
    s.len() >= DATE.len()
        && DATE.iter().zip(s).all(|(&form, &c)| {
            if form == b'd' {
                c.is_ascii_digit()
            } else {
                c == form
            }
        })
        && {
            let n = |r: std::ops::Range<usize>| {
                s[r].iter()
                    .fold(0i64, |acc, &c| acc * 10 + i64::from(c - b'0'))
            };
            let (month, day) = (n(5..7), n(8..10));
            (1..=12).contains(&month) && day >= 1 && day <= days_in_month(n(0..4), month)
        }
}

/// How a value's bytes compared with a form once they left it: every later digit at its
/// least, or at its most.
#[derive(Clone, Copy, PartialEq)]
enum Saturated {
    No,
    Low,
    High,
}

/// Reads the digits of `form` from `s` at `at`, saturating as strings compare: a byte below
/// what the form expects makes the rest least, one above makes it most. Returns the digit
/// groups read and how it ended.
fn read_form(s: &[u8], at: usize, form: &[u8], groups: &mut [i64], sat: &mut Saturated) {
    let mut group = 0;
    for (i, &f) in form.iter().enumerate() {
        let c = match *sat {
            Saturated::No => s.get(at + i).copied(),
            Saturated::Low => Some(if f == b'd' { b'0' } else { f }),
            Saturated::High => Some(if f == b'd' { b'9' } else { f }),
        };
        if f != b'd' {
            match c {
                Some(c) if c == f => {}
                Some(c) if c > f => *sat = Saturated::High,
                _ => *sat = Saturated::Low,
            }
            group += 1;
            continue;
        }
        let digit = match c {
            Some(c) if c.is_ascii_digit() => c - b'0',
            Some(c) if c > b'9' => {
                *sat = Saturated::High;
                9
            }
            _ => {
                if *sat == Saturated::No {
                    *sat = Saturated::Low;
                }
                0
            }
        };
        groups[group] = groups[group] * 10 + i64::from(digit);
    }
}

/// A text date or timestamp as seconds since 1970, for interpolation between two dates.
/// Monotone in `s` over every string: bytes outside the form saturate (above), a part
/// outside the calendar saturates what follows (month 13 is December's end, month 0
/// January's start), and what follows the date ranks by its separator byte first, then by
/// the time of day.
fn date_time(s: &[u8]) -> f64 {
    let mut sat = Saturated::No;
    let mut date = [0i64; 3];
    read_form(s, 0, DATE, &mut date, &mut sat);
    let [year, mut month, mut day] = date;
    // A part outside the calendar places the date at the edge it passed, and everything
    // after it there too: `2019-98` sorts after every day of 2019 and `2019-00-15` before
    // every one.
    if month > 12 {
        (month, day, sat) = (12, 31, Saturated::High);
    } else if month < 1 {
        (month, day, sat) = (1, 1, Saturated::Low);
    } else if day > days_in_month(year, month) {
        (day, sat) = (days_in_month(year, month), Saturated::High);
    } else if day < 1 {
        (day, sat) = (1, Saturated::Low);
    }
    let days = days_from_civil(year, month, day) as f64;
    // After the date: nothing (least), or a separator and a time of day. The separator's
    // byte ranks first (`' '` before `'T'`, as strings sort), the time within it.
    let after = match sat {
        Saturated::Low => 0.0,
        Saturated::High => 1.0 - f64::EPSILON,
        Saturated::No => match s.get(DATE.len()) {
            None => 0.0,
            Some(&separator) => {
                let mut time = [0i64; 3];
                let mut sat = Saturated::No;
                read_form(s, DATE.len() + 1, TIME, &mut time, &mut sat);
                let [h, m, sec] = time;
                let of_day = (h.min(23) * 3600 + m.min(59) * 60 + sec.min(59)) as f64 / 86_400.0;
                (f64::from(separator) + of_day) / 256.0
            }
        },
    };
    (days + after) * 86_400.0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days from 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Bytes placed after at most this many: a double holds no more of them.
const STRING_BYTES: usize = 12;

/// PostgreSQL's string placement (module docs), with the range taken from the bounds alone
/// and a byte outside it saturating the rest, so the placement is monotone in `value`.
fn strings(lo: &[u8], hi: &[u8], value: &[u8]) -> Option<f64> {
    let common = lo.iter().zip(hi).take_while(|(a, b)| a == b).count();
    let (lo, hi) = (&lo[common..], &hi[common..]);
    // `lo < value <= hi` share the prefix; a value outside the bucket is clamped later.
    let value = value.get(common..).unwrap_or(&[]);
    let mut low = u8::MAX;
    let mut high = u8::MIN;
    for &c in lo.iter().chain(hi).take(2 * STRING_BYTES) {
        low = low.min(c);
        high = high.max(c);
    }
    if low > high {
        return None;
    }
    for (first, last) in [(b'a', b'z'), (b'A', b'Z'), (b'0', b'9')] {
        if (first..=last).contains(&low) || (first..=last).contains(&high) {
            low = low.min(first);
            high = high.max(last);
        }
    }
    let base = f64::from(high - low) + 1.0;
    let place = |s: &[u8]| {
        // Once a byte is above the range, it and every later one count at their most.
        let mut above = false;
        let mut x = 0.0;
        let mut scale = 1.0;
        for k in 0..STRING_BYTES {
            scale /= base;
            let digit = match s.get(k) {
                _ if above => high,
                // Ended, or below the range: this byte and every later one at their least.
                None => break,
                Some(&c) if c < low => break,
                Some(&c) if c > high => {
                    above = true;
                    high
                }
                Some(&c) => c,
            };
            x += f64::from(digit - low) * scale;
        }
        x
    };
    ratio(place(lo), place(hi), place(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(lo: &str, hi: &str, v: &str) -> f64 {
        within(&Value::from(lo), &Value::from(hi), &Value::from(v))
    }

    #[test]
    fn text_dates_interpolate_by_days() {
        // 2024-02-20 .. 2024-03-10 is 19 days; 2024-03-01 is 10 days in.
        let f = at("2024-02-20", "2024-03-10", "2024-03-01");
        assert!((f - 10.0 / 19.0).abs() < 1e-9, "{f}");
        let three_days = at("2024-02-20", "2024-03-10", "2024-03-04") - f;
        assert!((three_days - 3.0 / 19.0).abs() < 1e-9, "{three_days}");
        // Timestamps: noon is half a day on.
        let noon = at("2024-03-01", "2024-03-03", "2024-03-02 12:00:00");
        assert!((0.5..0.76).contains(&noon), "{noon}");
        // A month prefix (`>= '2024-03'`) sits at the month's first day.
        let month = at("2024-02-20", "2024-03-10", "2024-03");
        assert!((month - 10.0 / 19.0).abs() < 1e-9, "{month}");
    }

    #[test]
    fn strings_interpolate_in_the_base_of_their_bytes() {
        // Digits: base 10 after the common prefix, so 150 is half-way from 100 to 200.
        let f = at("C0100", "C0200", "C0150");
        assert!((f - 0.5).abs() < 0.01, "{f}");
        let m = at("town-a", "town-z", "town-m");
        assert!((0.4..0.6).contains(&m), "{m}");
        assert_eq!(at("same", "same", "same"), 0.5, "nothing to place");
    }

    #[test]
    fn numbers_interpolate_by_value() {
        let f = within(&Value::Int(0), &Value::Int(200), &Value::Float(50.0));
        assert!((f - 0.25).abs() < 1e-12);
    }

    /// Every placement is monotone in the value: a larger string is never placed lower.
    #[test]
    fn placements_are_monotone() {
        let bounds = [
            ("2024-02-20", "2024-03-10"),
            ("2024-02-20 10:00:00", "2024-02-21T09:00:00"),
            ("C0100", "C0200"),
            ("apple", "apricot"),
            ("A", "z"),
        ];
        let mut values: Vec<String> = vec![
            "2024-02-2",
            "2024-02-20",
            "2024-02-20 ",
            "2024-02-20 09:59",
            "2024-02-20 23:00",
            "2024-02-20T01:00",
            "2024-02-20Z",
            "2024-02-29",
            "2024-02-3",
            "2024-02-99",
            "2024-02:01",
            "2024-03",
            "2024-03-0x",
            "2024-03-05",
            "2024-03-10",
            "2024-13-01",
            "2024-1",
            "2024-00-15",
            "2024-01-05",
            "2024-98",
            "2024-12-22",
            "2024-02-30",
            "2024-02-00",
            "C01",
            "C0100",
            "C0150",
            "C01z",
            "C02",
            "C0200",
            "C0199~",
            "apple",
            "applf",
            "apq",
            "apr",
            "apri",
            "apricot",
            "apricos",
            "A",
            "M",
            "Z",
            "a",
            "m",
            "z",
            "",
            "~",
            "2024",
            "2024-",
            "2024-0",
            "2024-02-20\u{1}",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        values.sort();
        for (lo, hi) in bounds {
            let (lo, hi) = (Value::from(lo), Value::from(hi));
            let placed: Vec<f64> = values
                .iter()
                .map(|v| Value::from(v.as_str()))
                .filter(|v| *v >= lo && *v <= hi)
                .map(|v| within(&lo, &hi, &v))
                .collect();
            assert!(
                placed.windows(2).all(|w| w[0] <= w[1]),
                "{lo:?}..{hi:?}: {placed:?}"
            );
            assert!(placed.iter().all(|f| (0.0..=1.0).contains(f)));
        }
    }
}
