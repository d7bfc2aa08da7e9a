//! Parsing one fragment at a given offset: the layer below record assembly.
//!
//! Every offset and length is checked before a slice is taken (STYLE.md #6); the result says
//! where damage starts and where parsing can resume, which is always the next block boundary,
//! because a fragment never spans blocks and so every block starts with a header.

use crate::error::Damage;
use crate::format::{
    BLOCK_SIZE, FragmentType, HEADER_SIZE, LENGTH_AT, LOG_NUMBER_AT, PADDING_BELOW, TYPE_AT,
    block_remaining, fragment_checksum,
};

/// What lies at an offset of the log.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Parsed<'a> {
    /// A fragment whose checksum matches.
    Fragment(Fragment<'a>),
    /// Block-end padding of zeros; the next fragment is at `next`.
    Padding { next: usize },
    /// The input ends exactly here.
    End,
    /// Damage from `start`; parsing may resume at `resume`.
    Damaged {
        start: usize,
        resume: usize,
        reason: Damage,
    },
}

/// A checksummed fragment.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Fragment<'a> {
    pub kind: FragmentType,
    pub log_number: u32,
    pub payload: &'a [u8],
    /// Offset of the header.
    pub start: usize,
    /// Offset just past the payload.
    pub end: usize,
}

/// Parses what lies at `pos`. REQUIRES: `pos <= data.len()`.
pub(crate) fn parse_at(data: &[u8], pos: usize) -> Parsed<'_> {
    debug_assert!(pos <= data.len());
    let Some(rest) = data.get(pos..) else {
        return Parsed::End;
    };
    if rest.is_empty() {
        return Parsed::End;
    }
    let in_block = block_remaining(pos as u64);
    let block_end = pos.saturating_add(in_block).min(data.len());
    let damaged = |reason| Parsed::Damaged {
        start: pos,
        resume: block_end,
        reason,
    };

    // Block-end padding: zeros, when less than a header and a sync marker remains. The input
    // may end inside it.
    let remainder = &rest[..rest.len().min(in_block)];
    if in_block < PADDING_BELOW && remainder.iter().all(|&b| b == 0) {
        return Parsed::Padding { next: block_end };
    }
    if in_block < HEADER_SIZE {
        return damaged(Damage::NonZeroPadding);
    }
    let Some(header) = rest.get(..HEADER_SIZE) else {
        return Parsed::Damaged {
            start: pos,
            resume: data.len(),
            reason: Damage::Truncated,
        };
    };
    if header.iter().all(|&b| b == 0) {
        return damaged(Damage::ZeroFilled);
    }
    let length = usize::from(u16::from_le_bytes([
        header[LENGTH_AT],
        header[LENGTH_AT + 1],
    ]));
    let room = in_block - HEADER_SIZE;
    if length > room {
        return damaged(Damage::LengthPastBlock { length, room });
    }
    let Some(payload) = rest.get(HEADER_SIZE..HEADER_SIZE + length) else {
        return Parsed::Damaged {
            start: pos,
            resume: data.len(),
            reason: Damage::Truncated,
        };
    };
    let stored = u32::from_le_bytes([header[0], header[1], header[2], header[3]]);
    let computed = fragment_checksum(&header[LENGTH_AT..], payload);
    if stored != computed {
        return damaged(Damage::ChecksumMismatch { stored, computed });
    }
    let Some(kind) = FragmentType::from_byte(header[TYPE_AT]) else {
        return damaged(Damage::UnknownType(header[TYPE_AT]));
    };
    let mut log_number = [0u8; 4];
    log_number.copy_from_slice(&header[LOG_NUMBER_AT..HEADER_SIZE]);
    Parsed::Fragment(Fragment {
        kind,
        log_number: u32::from_le_bytes(log_number),
        payload,
        start: pos,
        end: pos + HEADER_SIZE + length,
    })
}

/// The offset of the block boundary after `pos`, capped at `len`.
pub(crate) fn next_block(pos: usize, len: usize) -> usize {
    pos.saturating_add(block_remaining(pos as u64)).min(len)
}

/// The log number of the first intact fragment that starts a block, for tools that are handed
/// a log file without knowing its number. `None` when no block starts with an intact fragment.
pub fn peek_log_number(data: &[u8]) -> Option<u32> {
    (0..data.len())
        .step_by(BLOCK_SIZE)
        .find_map(|pos| match parse_at(data, pos) {
            Parsed::Fragment(fragment) => Some(fragment.log_number),
            _ => None,
        })
}
