//! The bloom filter over a table's user keys.
//!
//! 1. Each distinct user key is hashed once with [`hash64`] (specified in
//!    `docs/formats/sstable.md`, because it is part of the format).
//! 2. `k` bit positions come from double hashing: `h1 + i·h2 (mod m)` for `i` in `0..k`, with
//!    `h1` and `h2` the low and high halves of the hash (Kirsch and Mitzenmacher).
//! 3. The block is the bit array followed by one byte holding `k`.
//!
//! With `b` bits per key the false-positive rate is about `(1 − e^(−k/b))^k`. `k = round(b·ln 2)`
//! minimises it: at the default 10 bits per key, `k` = 7 and the rate is about 0.8 %.

use crate::error::Corruption;

/// The most probes a filter may ask for; more only costs time.
const MAX_PROBES: u8 = 30;

/// Smallest filter in bits, so a table of a few keys does not get a uselessly tiny filter.
const MIN_BITS: usize = 64;

/// The format's 64-bit hash of a user key: 8-byte little-endian words mixed by multiply and
/// rotate, the tail zero-padded, then the murmur3 64-bit finaliser.
pub fn hash64(key: &[u8]) -> u64 {
    const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut hash = 0x5bd1_e995_u64 ^ (key.len() as u64).wrapping_mul(MULTIPLIER);
    let mut chunks = key.chunks_exact(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        hash = (hash ^ u64::from_le_bytes(word))
            .wrapping_mul(MULTIPLIER)
            .rotate_left(31);
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut word = [0u8; 8];
        word[..tail.len()].copy_from_slice(tail);
        hash = (hash ^ u64::from_le_bytes(word))
            .wrapping_mul(MULTIPLIER)
            .rotate_left(31);
    }
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xff51_afd7_ed55_8ccd);
    hash ^= hash >> 33;
    hash = hash.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    hash ^ (hash >> 33)
}

/// Probe count for `bits_per_key`: `round(bits_per_key · ln 2)`, clamped to `1..=30`.
fn probes_for(bits_per_key: u32) -> u8 {
    let k = (f64::from(bits_per_key) * std::f64::consts::LN_2).round();
    k.clamp(1.0, f64::from(MAX_PROBES)) as u8
}

fn probe_positions(hash: u64, probes: u8, bits: u64) -> impl Iterator<Item = u64> {
    let h1 = hash & 0xffff_ffff;
    let h2 = (hash >> 32) | 1;
    (0..u64::from(probes)).map(move |i| h1.wrapping_add(i.wrapping_mul(h2)) % bits)
}

/// Builds a filter block from the hashes of the distinct user keys.
pub(crate) fn build(hashes: &[u64], bits_per_key: u32) -> Vec<u8> {
    if bits_per_key == 0 {
        // No filter: the smallest block, every bit set, so every key may be there.
        let mut block = vec![0xff; MIN_BITS / 8];
        block.push(1);
        return block;
    }
    let probes = probes_for(bits_per_key);
    let bits = (hashes.len() * bits_per_key as usize).max(MIN_BITS);
    let bytes = bits.div_ceil(8);
    let bits = (bytes * 8) as u64;
    let mut block = vec![0u8; bytes + 1];
    for &hash in hashes {
        for position in probe_positions(hash, probes, bits) {
            block[(position / 8) as usize] |= 1 << (position % 8);
        }
    }
    block[bytes] = probes;
    block
}

/// A validated filter block.
#[derive(Clone, Debug)]
pub(crate) struct BloomFilter {
    block: bytes::Bytes,
    probes: u8,
}

impl BloomFilter {
    pub(crate) fn new(block: bytes::Bytes) -> Result<BloomFilter, Corruption> {
        let (&probes, bits) = block.split_last().ok_or(Corruption::MalformedFilter)?;
        if bits.is_empty() || probes == 0 || probes > MAX_PROBES {
            return Err(Corruption::MalformedFilter);
        }
        Ok(BloomFilter { block, probes })
    }

    /// `false` means the key is certainly absent; `true` that it may be present.
    pub(crate) fn may_contain(&self, user_key: &[u8]) -> bool {
        self.may_contain_hash(hash64(user_key))
    }

    pub(crate) fn may_contain_hash(&self, hash: u64) -> bool {
        let bits = &self.block[..self.block.len() - 1];
        let bit_count = (bits.len() * 8) as u64;
        probe_positions(hash, self.probes, bit_count)
            .all(|position| bits[(position / 8) as usize] & (1 << (position % 8)) != 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_bits_a_key_is_a_filter_that_finds_everything_in_nine_bytes() {
        let block = build(&[], 0);
        assert_eq!(block.len(), 9);
        let filter = BloomFilter::new(block.into()).expect("a valid filter");
        for i in 0..1000u32 {
            assert!(filter.may_contain(&i.to_be_bytes()));
        }
    }

    #[test]
    fn every_added_key_is_found() {
        let keys: Vec<Vec<u8>> = (0..5000u32).map(|i| i.to_be_bytes().to_vec()).collect();
        let hashes: Vec<u64> = keys.iter().map(|k| hash64(k)).collect();
        let filter = BloomFilter::new(build(&hashes, 10).into()).expect("valid");
        assert!(keys.iter().all(|k| filter.may_contain(k)));
    }

    #[test]
    fn probes_follow_bits_per_key() {
        assert_eq!(probes_for(10), 7);
        assert_eq!(probes_for(1), 1);
        assert_eq!(probes_for(100), 30);
    }

    #[test]
    fn malformed_filters_are_refused() {
        assert!(BloomFilter::new(bytes::Bytes::from_static(&[])).is_err());
        assert!(BloomFilter::new(bytes::Bytes::from_static(&[7])).is_err());
        assert!(BloomFilter::new(bytes::Bytes::from_static(&[0xff, 0])).is_err());
        assert!(BloomFilter::new(bytes::Bytes::from_static(&[0xff, 31])).is_err());
    }

    #[test]
    fn the_hash_is_stable() {
        // Part of the on-disk format: filters written today must probe the same bits forever.
        // These test vectors are also in docs/formats/sstable.md.
        assert_eq!(
            hash64(b"strata"),
            0xe55e_08fd_4238_b02b,
            "{:#x}",
            hash64(b"strata")
        );
        assert_eq!(hash64(b""), 0x733d_8c96_bf98_8b0a, "{:#x}", hash64(b""));
        assert_ne!(hash64(b"a"), hash64(b"b"));
        assert_ne!(hash64(b"abcdefgh"), hash64(b"abcdefgh\0"));
    }
}
