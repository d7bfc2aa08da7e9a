//! The log writer: frames records into fragments inside 32 KiB blocks.
//!
//! 1. A record that fits in the rest of the current block becomes one `Full` fragment; a longer
//!    one is cut into `First`, `Middle`…, `Last`, each filling its block.
//! 2. When fewer than [`HEADER_SIZE`] bytes remain in a block (or, before a sync marker, fewer
//!    than a whole marker), they are written as zeros and the next fragment starts the next
//!    block, so every block starts with a header.
//! 3. [`LogWriter::sync`] first appends a `Sync` marker carrying the offset the *previous*
//!    sync made durable, then flushes and makes the inner writer durable. A reader that finds
//!    that marker intact knows everything before the offset was on stable storage, so damage
//!    there is corruption, not a torn tail.
//! 4. Any I/O failure poisons the writer: how many bytes reached the file is unknown, so it
//!    refuses further work rather than write records at offsets a reader would not find.
//!
//! The writer does no buffering of its own: give it a `BufWriter` over a file, or a `Vec`.

use std::io::{self, Write};

use crate::error::{Error, Result};
use crate::format::{
    BLOCK_SIZE, FragmentType, HEADER_SIZE, LENGTH_AT, LOG_NUMBER_AT, MAX_RECORD_BYTES,
    PADDING_BELOW, SYNC_PAYLOAD_SIZE, TYPE_AT, block_remaining, fragment_checksum,
};

/// Zeros for block-end padding, which is always shorter than [`PADDING_BELOW`].
const ZEROS: [u8; PADDING_BELOW] = [0; PADDING_BELOW];

/// Writes records to a log. See the module documentation for the framing.
///
/// Not thread-safe by itself: the engine's group commit gives it one writer at a time.
#[derive(Debug)]
pub struct LogWriter<W: Write> {
    inner: W,
    log_number: u32,
    /// Absolute log offset of the next byte to be written.
    offset: u64,
    /// End of the last completed sync: every byte before it is durable.
    durable_offset: u64,
    /// The durable offset carried by the last sync marker written.
    attested_offset: u64,
    /// Set by the first failed write or sync: the offset where that operation began.
    failed_at: Option<u64>,
}

impl<W: Write> LogWriter<W> {
    /// Starts a new, empty log with the given number. The reader must be given the same number;
    /// fragments carrying another are treated as stale bytes, never as records.
    ///
    /// The engine passes the low 32 bits of the log file's number. A recycled file would have
    /// to be 2^32 logs old for its leftovers to be mistaken for this log's.
    pub fn new(inner: W, log_number: u32) -> Self {
        Self::append_to(inner, log_number, 0)
    }

    /// Continues a log whose first `existing_len` bytes are already in the file behind `inner`
    /// and are durable (the caller synced them). The next sync attests them.
    pub fn append_to(inner: W, log_number: u32, existing_len: u64) -> Self {
        LogWriter {
            inner,
            log_number,
            offset: existing_len,
            durable_offset: existing_len,
            attested_offset: 0,
            failed_at: None,
        }
    }

    /// Appends one record and returns the log offset just past its last fragment.
    ///
    /// The record is durable only after a later [`LogWriter::sync`] returns. An empty record
    /// is allowed and reads back as empty. A record over [`MAX_RECORD_BYTES`] is refused with
    /// [`Error::RecordTooLarge`] before anything is written.
    pub fn add_record(&mut self, record: &[u8]) -> Result<u64> {
        self.check_usable()?;
        if record.len() > MAX_RECORD_BYTES {
            return Err(Error::RecordTooLarge {
                len: record.len(),
                max: MAX_RECORD_BYTES,
            });
        }
        let started_at = self.offset;
        let written = self.write_record(record);
        self.poison_on_error(written, started_at)
    }

    /// Makes everything written so far durable: appends a sync marker when there is a newer
    /// durable offset to attest, flushes, then calls `make_durable` on the inner writer (for a
    /// file, `|file| file.sync_data()`; for a buffered file, flush is done, so
    /// `|w| w.get_ref().sync_data()`). Returns the new durable offset.
    ///
    /// If `make_durable` fails the writer is poisoned: after a failed `fsync` the kernel may
    /// have dropped the dirty pages, so nothing written since the last sync can be trusted.
    pub fn sync<F>(&mut self, make_durable: F) -> Result<u64>
    where
        F: FnOnce(&mut W) -> io::Result<()>,
    {
        self.check_usable()?;
        let started_at = self.offset;
        let synced = self.write_sync(make_durable);
        let durable = self.poison_on_error(synced, started_at)?;
        self.durable_offset = durable;
        Ok(durable)
    }

    /// Flushes the inner writer without making anything durable.
    pub fn flush(&mut self) -> Result<()> {
        self.check_usable()?;
        let started_at = self.offset;
        let flushed = self.inner.flush();
        self.poison_on_error(flushed, started_at)
    }

    /// The log offset the next byte will be written at.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// The end of the last completed sync.
    pub fn durable_offset(&self) -> u64 {
        self.durable_offset
    }

    /// The log number this writer stamps on every fragment.
    pub fn log_number(&self) -> u32 {
        self.log_number
    }

    /// The inner writer.
    pub fn get_ref(&self) -> &W {
        &self.inner
    }

    /// The inner writer, for syncing or inspecting it. Writing to it directly corrupts the log.
    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// Gives back the inner writer. Nothing is flushed.
    pub fn into_inner(self) -> W {
        self.inner
    }

    fn check_usable(&self) -> Result<()> {
        match self.failed_at {
            Some(offset) => Err(Error::Poisoned { offset }),
            None => Ok(()),
        }
    }

    fn poison_on_error<T>(&mut self, outcome: io::Result<T>, started_at: u64) -> Result<T> {
        outcome.map_err(|error| {
            self.failed_at = Some(started_at);
            Error::Io(error)
        })
    }

    fn write_record(&mut self, record: &[u8]) -> io::Result<u64> {
        let mut rest = record;
        let mut first = true;
        loop {
            let room = self.start_fragment(0)?;
            let take = room.min(rest.len());
            let last = take == rest.len();
            let kind = match (first, last) {
                (true, true) => FragmentType::Full,
                (true, false) => FragmentType::First,
                (false, false) => FragmentType::Middle,
                (false, true) => FragmentType::Last,
            };
            let (payload, tail) = rest.split_at(take);
            self.write_fragment(kind, payload)?;
            rest = tail;
            first = false;
            if last {
                return Ok(self.offset);
            }
        }
    }

    fn write_sync<F>(&mut self, make_durable: F) -> io::Result<u64>
    where
        F: FnOnce(&mut W) -> io::Result<()>,
    {
        if self.durable_offset > self.attested_offset {
            let attested = self.durable_offset;
            self.start_fragment(SYNC_PAYLOAD_SIZE)?;
            self.write_fragment(FragmentType::Sync, &attested.to_le_bytes())?;
            self.attested_offset = attested;
        }
        self.inner.flush()?;
        make_durable(&mut self.inner)?;
        Ok(self.offset)
    }

    /// Pads the block when a header with `min_payload` bytes no longer fits, and returns the
    /// payload room left in the block. REQUIRES: `min_payload <= SYNC_PAYLOAD_SIZE`.
    fn start_fragment(&mut self, min_payload: usize) -> io::Result<usize> {
        debug_assert!(min_payload <= SYNC_PAYLOAD_SIZE);
        let remaining = block_remaining(self.offset);
        if remaining >= HEADER_SIZE + min_payload {
            return Ok(remaining - HEADER_SIZE);
        }
        self.inner.write_all(&ZEROS[..remaining])?;
        self.offset += remaining as u64;
        Ok(BLOCK_SIZE - HEADER_SIZE)
    }

    /// REQUIRES: `start_fragment` returned room for `payload`.
    fn write_fragment(&mut self, kind: FragmentType, payload: &[u8]) -> io::Result<()> {
        assert!(HEADER_SIZE + payload.len() <= block_remaining(self.offset));
        let length = u16::try_from(payload.len()).expect("a fragment payload fits in a block");
        let mut header = [0u8; HEADER_SIZE];
        header[LENGTH_AT..TYPE_AT].copy_from_slice(&length.to_le_bytes());
        header[TYPE_AT] = kind as u8;
        header[LOG_NUMBER_AT..].copy_from_slice(&self.log_number.to_le_bytes());
        let checksum = fragment_checksum(&header[LENGTH_AT..], payload);
        header[..LENGTH_AT].copy_from_slice(&checksum.to_le_bytes());
        self.inner.write_all(&header)?;
        self.inner.write_all(payload)?;
        self.offset += (HEADER_SIZE + payload.len()) as u64;
        Ok(())
    }
}
