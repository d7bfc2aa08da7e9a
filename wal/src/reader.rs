//! The log reader: assembles records from fragments and applies a [`RecoveryMode`] to damage.
//!
//! 1. Parse the fragment at the current offset (block-end padding is stepped over).
//! 2. `Full` is a record; `First`, `Middle`…, `Last` are joined into one. `Sync` markers are
//!    checked and passed over; they are not records.
//! 3. At damage, the region runs from the start of the record being assembled (or of the
//!    damaged fragment) to the next block boundary. The mode decides: skip it and resume at
//!    the boundary, stop quietly, or fail. For [`RecoveryMode::TolerateTornTail`] the reader
//!    looks ahead for intact sync markers: if one attests that bytes past the damage's start
//!    were durable, the damage is corruption; otherwise it is a torn tail.
//!
//! The reader works over the whole log in memory (a `Vec` or a memory map) and returns
//! records that fit in one fragment without copying.

use std::borrow::Cow;

use crate::error::{Damage, Error, Result, SkippedRegion};
use crate::format::{
    FragmentType, HEADER_SIZE, LENGTH_AT, LOG_NUMBER_AT, MAX_RECORD_BYTES, SYNC_PAYLOAD_SIZE,
    TYPE_AT,
};
use crate::fragment::{Fragment, Parsed, next_block, parse_at};
use crate::recovery::RecoveryMode;

/// One record read back from a log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record<'a> {
    /// Offset of the record's first fragment header.
    pub offset: u64,
    /// Offset just past its last fragment: the value the writer's `add_record` returned.
    pub end_offset: u64,
    /// The record's bytes; borrowed from the input when the record is one fragment.
    pub data: Cow<'a, [u8]>,
}

/// How reading ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogEnd {
    /// The whole input was read (in [`RecoveryMode::SkipCorrupted`], possibly past skipped
    /// regions).
    Complete,
    /// [`RecoveryMode::TolerateTornTail`]: the bytes from `offset` on are a torn tail.
    TornTail {
        /// Where the torn tail starts.
        offset: u64,
    },
    /// [`RecoveryMode::PointInTime`]: reading stopped at damage at `offset`.
    StoppedAtDamage {
        /// Where the damage starts.
        offset: u64,
    },
    /// An error was returned for damage at `offset`.
    Failed {
        /// Where the damage starts.
        offset: u64,
    },
}

/// Reads the records of one log. See the module documentation.
#[derive(Debug)]
pub struct LogReader<'a> {
    data: &'a [u8],
    log_number: u32,
    mode: RecoveryMode,
    known_durable: u64,
    pos: usize,
    end: Option<LogEnd>,
    skipped: Vec<SkippedRegion>,
}

/// What to do after a damaged region has been handled.
enum Next {
    Resume(usize),
    Stop,
}

/// A record being assembled from `First`, `Middle`… fragments.
struct Partial {
    start: usize,
    data: Vec<u8>,
}

impl<'a> LogReader<'a> {
    /// A reader over a whole log file, written with log number `log_number`.
    pub fn new(data: &'a [u8], log_number: u32, mode: RecoveryMode) -> Self {
        LogReader {
            data,
            log_number,
            mode,
            known_durable: 0,
            pos: 0,
            end: None,
            skipped: Vec::new(),
        }
    }

    /// Tells the reader that the first `offset` bytes were durable, from knowledge outside the
    /// log (for example the length the engine recorded when it last synced or rotated it). The
    /// log's own sync markers attest every sync but the last one; this covers the last.
    pub fn with_known_durable(mut self, offset: u64) -> Self {
        self.known_durable = offset;
        self
    }

    /// The next record, `Ok(None)` at the end, or the damage the mode does not allow. After
    /// `Ok(None)` or an error, every further call returns `Ok(None)`.
    pub fn next_record(&mut self) -> Result<Option<Record<'a>>> {
        let mut partial: Option<Partial> = None;
        while self.end.is_none() {
            let parsed = parse_at(self.data, self.pos);
            let damage = match parsed {
                Parsed::End => match partial.take() {
                    Some(p) => (p.start, self.data.len(), Damage::Truncated),
                    None => {
                        self.finish_at_end()?;
                        continue;
                    }
                },
                Parsed::Padding { next } => {
                    self.pos = next;
                    continue;
                }
                Parsed::Damaged {
                    start,
                    resume,
                    reason,
                } => {
                    let start = partial.take().map_or(start, |p| p.start);
                    (start, resume, reason)
                }
                Parsed::Fragment(fragment) => match self.accept(fragment, &mut partial) {
                    Ok(Some(record)) => return Ok(Some(record)),
                    Ok(None) => continue,
                    Err(damage) => damage,
                },
            };
            let (start, resume, reason) = damage;
            match self.on_damage(start, resume, reason)? {
                Next::Resume(at) => self.pos = at,
                Next::Stop => {}
            }
        }
        Ok(None)
    }

    /// The regions skipped so far, in log order.
    pub fn skipped(&self) -> &[SkippedRegion] {
        &self.skipped
    }

    /// How reading ended; `None` while there may be more records.
    pub fn end(&self) -> Option<LogEnd> {
        self.end
    }

    /// Takes a checksummed fragment. Returns a finished record, nothing (keep reading), or a
    /// damaged region `(start, resume, reason)`.
    fn accept(
        &mut self,
        fragment: Fragment<'a>,
        partial: &mut Option<Partial>,
    ) -> std::result::Result<Option<Record<'a>>, (usize, usize, Damage)> {
        let Fragment {
            kind, start, end, ..
        } = fragment;
        if fragment.log_number != self.log_number {
            // Resume at the end of this fragment's own block: the boundary after its start.
            let resume = next_block(start, self.data.len());
            let start = partial.take().map_or(start, |p| p.start);
            let reason = Damage::OtherLog {
                found: fragment.log_number,
            };
            return Err((start, resume, reason));
        }
        // A record start or a marker while a record is open: the open record lost its tail.
        // Report it, and come back to this fragment afterwards.
        if matches!(
            kind,
            FragmentType::Full | FragmentType::First | FragmentType::Sync
        ) && let Some(open) = partial.take()
        {
            return Err((open.start, start, Damage::IncompleteRecord));
        }
        self.pos = end;
        match kind {
            FragmentType::Full => Ok(Some(Record {
                offset: start as u64,
                end_offset: end as u64,
                data: Cow::Borrowed(fragment.payload),
            })),
            FragmentType::First => {
                *partial = Some(Partial {
                    start,
                    data: fragment.payload.to_vec(),
                });
                Ok(None)
            }
            FragmentType::Middle | FragmentType::Last => {
                let Some(mut open) = partial.take() else {
                    return Err((start, end, Damage::OrphanFragment));
                };
                if open.data.len() + fragment.payload.len() > MAX_RECORD_BYTES {
                    return Err((open.start, end, Damage::RecordTooLarge));
                }
                open.data.extend_from_slice(fragment.payload);
                if kind == FragmentType::Middle {
                    *partial = Some(open);
                    return Ok(None);
                }
                Ok(Some(Record {
                    offset: open.start as u64,
                    end_offset: end as u64,
                    data: Cow::Owned(open.data),
                }))
            }
            FragmentType::Sync => match sync_marker_offset(&fragment) {
                Some(_) => Ok(None),
                None => Err((start, end, Damage::BadSyncMarker)),
            },
        }
    }

    /// The input ended at a fragment boundary. REQUIRES: no record is open.
    fn finish_at_end(&mut self) -> Result<()> {
        let len = self.data.len() as u64;
        if len < self.known_durable {
            let reason = Damage::ShorterThanDurable {
                known_durable: self.known_durable,
            };
            match self.mode {
                RecoveryMode::TolerateTornTail | RecoveryMode::AbsoluteConsistency => {
                    return Err(self.fail(len, reason));
                }
                RecoveryMode::PointInTime | RecoveryMode::SkipCorrupted => {
                    self.skipped.push(SkippedRegion {
                        offset: len,
                        len: self.known_durable - len,
                        reason,
                    });
                }
            }
        }
        self.end = Some(LogEnd::Complete);
        Ok(())
    }

    /// Applies the recovery mode to the damaged region `[start, resume)`.
    fn on_damage(&mut self, start: usize, resume: usize, reason: Damage) -> Result<Next> {
        debug_assert!(start <= resume && resume <= self.data.len());
        let offset = start as u64;
        let rest_of_log = SkippedRegion {
            offset,
            len: (self.data.len() - start) as u64,
            reason: reason.clone(),
        };
        match self.mode {
            RecoveryMode::AbsoluteConsistency => Err(self.fail(offset, reason)),
            RecoveryMode::PointInTime => {
                self.skipped.push(rest_of_log);
                self.end = Some(LogEnd::StoppedAtDamage { offset });
                Ok(Next::Stop)
            }
            RecoveryMode::SkipCorrupted => {
                self.push_skipped(SkippedRegion {
                    offset,
                    len: (resume - start) as u64,
                    reason,
                });
                if resume == self.data.len() && (resume as u64) < self.known_durable {
                    self.skipped.push(SkippedRegion {
                        offset: resume as u64,
                        len: self.known_durable - resume as u64,
                        reason: Damage::ShorterThanDurable {
                            known_durable: self.known_durable,
                        },
                    });
                    self.end = Some(LogEnd::Complete);
                    return Ok(Next::Stop);
                }
                Ok(Next::Resume(resume))
            }
            RecoveryMode::TolerateTornTail => {
                let durable = self.known_durable.max(self.attested_from(start));
                if offset < durable {
                    return Err(self.fail(offset, reason));
                }
                self.skipped.push(rest_of_log);
                self.end = Some(LogEnd::TornTail { offset });
                Ok(Next::Stop)
            }
        }
    }

    /// Records a skipped region, merging it into the previous one when it continues it for
    /// the same reason (a zero-filled tail is one region, not one per block).
    fn push_skipped(&mut self, region: SkippedRegion) {
        if let Some(last) = self.skipped.last_mut()
            && last.offset + last.len == region.offset
            && last.reason == region.reason
        {
            last.len += region.len;
            return;
        }
        self.skipped.push(region);
    }

    fn fail(&mut self, offset: u64, reason: Damage) -> Error {
        self.end = Some(LogEnd::Failed { offset });
        Error::Corruption { offset, reason }
    }

    /// The largest durable offset attested by an intact sync marker of this log that starts
    /// at or after `from`; 0 when there is none.
    ///
    /// Markers are searched at every byte offset, not only where the block structure says
    /// fragments start: the damage may have hidden where the next fragment begins, and an
    /// intact marker later in the same block still proves the damaged bytes were durable.
    /// A false match (a record that embeds a valid marker of this very log) can only turn a
    /// torn tail into an error, never hide corruption.
    fn attested_from(&self, from: usize) -> u64 {
        let mut pattern = [0u8; HEADER_SIZE - LENGTH_AT];
        pattern[..2].copy_from_slice(&(SYNC_PAYLOAD_SIZE as u16).to_le_bytes());
        pattern[TYPE_AT - LENGTH_AT] = FragmentType::Sync as u8;
        pattern[LOG_NUMBER_AT - LENGTH_AT..].copy_from_slice(&self.log_number.to_le_bytes());
        let Some(tail) = self.data.get(from..) else {
            return 0;
        };
        tail.windows(HEADER_SIZE + SYNC_PAYLOAD_SIZE)
            .enumerate()
            .filter(|(_, window)| window[LENGTH_AT..HEADER_SIZE] == pattern)
            .filter_map(|(i, _)| match parse_at(self.data, from + i) {
                Parsed::Fragment(fragment) => sync_marker_offset(&fragment),
                _ => None,
            })
            .max()
            .unwrap_or(0)
    }
}

/// The durable offset a sync marker attests, or `None` if the marker is malformed. A marker
/// can only attest bytes written before it.
fn sync_marker_offset(fragment: &Fragment<'_>) -> Option<u64> {
    let bytes: [u8; SYNC_PAYLOAD_SIZE] = fragment.payload.try_into().ok()?;
    let offset = u64::from_le_bytes(bytes);
    (offset <= fragment.start as u64).then_some(offset)
}

impl<'a> Iterator for LogReader<'a> {
    type Item = Result<Record<'a>>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}
