//! Varint (LEB128) coding with checked decoding: every read says how many bytes it used and
//! fails, rather than panics, on a truncated or over-long encoding. Public so the engine's own
//! formats (write batches, manifest edits) use the same coding.

/// Appends `value` as a LEB128 varint (1 to 10 bytes).
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Decodes a varint at the start of `input`: `(value, bytes used)`, or `None` when the input
/// ends first or the encoding is longer than 10 bytes or overflows 64 bits.
#[inline]
pub fn get_varint(input: &[u8]) -> Option<(u64, usize)> {
    // Fast path: most lengths in an entry are under 128 and take one byte.
    if let Some(&byte) = input.first()
        && byte < 0x80
    {
        return Some((u64::from(byte), 1));
    }
    let mut value = 0u64;
    for (i, &byte) in input.iter().enumerate().take(10) {
        let bits = u64::from(byte & 0x7f);
        if i == 9 && byte > 1 {
            return None; // would overflow 64 bits
        }
        value |= bits << (7 * i);
        if byte < 0x80 {
            return Some((value, i + 1));
        }
    }
    None
}

/// The value of a varint of `used` bytes (1 to 8) held in the low bytes of `word` (read
/// little-endian): each byte's low seven bits, in order. For decoders that read a varint's
/// bytes as one word where eight are there to read (the block and record decoders).
#[inline(always)]
pub fn gather_7bit(word: u64, used: usize) -> u64 {
    debug_assert!((1..=8).contains(&used));
    let x = (word & (u64::MAX >> (64 - 8 * used))) & 0x7f7f_7f7f_7f7f_7f7f;
    // Close the gaps in three steps: 7-bit groups into 14-bit ones, 14 into 28, 28 into 56.
    let x = ((x & 0x7f00_7f00_7f00_7f00) >> 1) | (x & 0x007f_007f_007f_007f);
    let x = ((x & 0x3fff_0000_3fff_0000) >> 2) | (x & 0x0000_3fff_0000_3fff);
    ((x & 0x0fff_ffff_0000_0000) >> 4) | (x & 0x0000_0000_0fff_ffff)
}

/// The byte order of two keys, `a.cmp(b)`, with keys of one length from 4 to 16 bytes (a
/// compact number, a short code: most primary keys) compared as two overlapping big-endian
/// words in line instead of through a call to `memcmp`, whose dispatch on the length was 4–5 %
/// of a fetch's time (`perf record -e cpu-clock`). Other keys compare as slices.
#[inline]
pub fn compare_keys(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let n = a.len();
    if n != b.len() || !(4..=16).contains(&n) {
        return a.cmp(b);
    }
    // Once the first word is equal, the overlapping second one decides by the bytes after it.
    if n < 8 {
        let half = |k: &[u8], at: usize| {
            k.get(at..at + 4)
                .map(|w| u32::from_be_bytes(w.try_into().unwrap_or([0; 4])))
        };
        return half(a, 0)
            .cmp(&half(b, 0))
            .then_with(|| half(a, n - 4).cmp(&half(b, n - 4)));
    }
    let word = |k: &[u8], at: usize| {
        k.get(at..at + 8)
            .map(|w| u64::from_be_bytes(w.try_into().unwrap_or([0; 8])))
    };
    word(a, 0)
        .cmp(&word(b, 0))
        .then_with(|| word(a, n - 8).cmp(&word(b, n - 8)))
}

/// A cursor over bytes for decoders: each read advances it or fails without panicking.
pub struct Reader<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `input`.
    pub fn new(input: &'a [u8]) -> Self {
        Reader { input, pos: 0 }
    }

    /// How many bytes have been read.
    pub fn pos(&self) -> usize {
        self.pos
    }

    /// Whether every byte has been read.
    pub fn is_empty(&self) -> bool {
        self.pos >= self.input.len()
    }

    /// The next varint.
    #[inline]
    pub fn varint(&mut self) -> Option<u64> {
        let (value, used) = get_varint(self.input.get(self.pos..)?)?;
        self.pos += used;
        Some(value)
    }

    /// A varint that must fit in `usize`.
    #[inline]
    pub fn len(&mut self) -> Option<usize> {
        usize::try_from(self.varint()?).ok()
    }

    /// The next `n` bytes.
    #[inline]
    pub fn bytes(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.pos.checked_add(n)?;
        let slice = self.input.get(self.pos..end)?;
        self.pos = end;
        Some(slice)
    }

    /// A varint length followed by that many bytes.
    #[inline]
    pub fn len_prefixed(&mut self) -> Option<&'a [u8]> {
        let n = self.len()?;
        self.bytes(n)
    }

    /// The next byte.
    #[inline]
    pub fn byte(&mut self) -> Option<u8> {
        Some(self.bytes(1)?[0])
    }
}

/// Appends `bytes` preceded by its length as a varint.
pub fn put_len_prefixed(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compare_keys_is_byte_order_at_every_length_and_place_of_difference() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n as u8).map(|i| i.wrapping_mul(37)).collect();
            assert_eq!(
                compare_keys(&a, &a),
                std::cmp::Ordering::Equal,
                "length {n}"
            );
            for at in 0..n {
                for delta in [1u8, 0x80, 0xff] {
                    let mut b = a.clone();
                    b[at] = b[at].wrapping_add(delta);
                    assert_eq!(compare_keys(&a, &b), a.cmp(&b), "length {n}, at {at}");
                    assert_eq!(compare_keys(&b, &a), b.cmp(&a), "length {n}, at {at}");
                }
                assert_eq!(compare_keys(&a[..at], &a), std::cmp::Ordering::Less);
            }
        }
    }

    #[test]
    fn varints_round_trip_at_every_width() {
        let mut values = vec![0, 1, 127, 128, 300, u64::MAX, u64::MAX - 1];
        values.extend((0..64).map(|shift| 1u64 << shift));
        for value in values {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(get_varint(&out), Some((value, out.len())));
            assert_eq!(get_varint(&out[..out.len() - 1]), None, "truncated {value}");
        }
    }

    #[test]
    fn over_long_and_overflowing_varints_are_refused() {
        assert_eq!(get_varint(&[0x80; 11]), None);
        assert_eq!(
            get_varint(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02]),
            None
        );
        assert_eq!(get_varint(&[]), None);
    }
}
