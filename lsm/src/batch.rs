//! Write batches: puts and deletes for any number of column families, committed atomically.
//!
//! A batch is kept in its encoded form from the first `put`, so committing it costs no
//! re-encoding: the commit writes the sequence number into the header, appends the bytes to the
//! log as one record, and the memtables take slices of the same buffer.
//!
//! ```text
//! batch := first_seqno: u64 LE, count: u32 LE, entry{count}, [trailer]
//! entry := kind: u8 (1 = put, 2 = delete), cf_id: varint, key: varint len + bytes,
//!          [value: varint len + bytes]   (puts only)
//! trailer := 3: u8, transaction: varint, participants: varint, store: varint{participants}
//! ```
//!
//! The trailer marks the batch as one part of a commit across several stores (the table
//! layer's shard stores): the commit's id and the stores holding its parts.
//!
//! Entry `i` gets sequence number `first_seqno + i`. Specified in `docs/formats/batch.md`.

use bytes::Bytes;
use strata_sstable::ValueKind;
use strata_sstable::coding::{Reader, put_len_prefixed, put_varint};

use crate::error::{BatchFault, Corruption, Error, Result};
use crate::format::{
    BATCH_DELETE, BATCH_HEADER_SIZE, BATCH_PUT, BATCH_TRANSACTION, MAX_PARTICIPANTS,
};
use crate::{ColumnFamily, SeqNo};

/// The largest key, in bytes (the table format's limit).
pub const MAX_KEY_BYTES: usize = strata_sstable::MAX_KEY_BYTES;
/// The largest value, in bytes (the table format's limit).
pub const MAX_VALUE_BYTES: usize = strata_sstable::MAX_VALUE_BYTES;
/// The largest encoded batch, in bytes (the log's record limit).
pub const MAX_BATCH_BYTES: usize = strata_wal::MAX_RECORD_BYTES;

/// Operation bytes a new batch has room for before its buffer grows.
const DEFAULT_BATCH_CAPACITY: usize = 244;

/// Puts and deletes to apply atomically: all of them or none, even across a crash.
///
/// A later operation on the same key in the same batch wins, as if applied one after another.
#[derive(Clone, Debug)]
pub struct WriteBatch {
    rep: Vec<u8>,
    count: u32,
    /// The column families written, each once: the first apart, so a one-family batch
    /// (the common case) needs no allocation to say so.
    first_cf: Option<u32>,
    other_cfs: Vec<u32>,
    /// The transaction this batch is a part of, and the stores holding its parts.
    txn: Option<TransactionTrailer>,
    /// The first seqno, when the caller allocated the batch's range from a shared
    /// [`crate::commit::Sequencer`] itself ([`crate::Store::write_assigned`]).
    pub(crate) assigned: Option<SeqNo>,
    /// Where the entries go in the memtables, found before the batch joined a group
    /// ([`crate::Store::place`]).
    pub(crate) placed: Option<Box<crate::memtable::Placed>>,
}

impl Default for WriteBatch {
    fn default() -> Self {
        WriteBatch::new()
    }
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        // One allocation holds a typical small batch (a put of a 100-byte value takes about
        // 120 bytes) instead of growing through five.
        Self::with_capacity(DEFAULT_BATCH_CAPACITY)
    }

    /// An empty batch whose buffer has room for `bytes` of operations before it grows. An
    /// operation takes its key and value bytes plus at most 16.
    pub fn with_capacity(bytes: usize) -> Self {
        let mut rep = Vec::with_capacity(BATCH_HEADER_SIZE + bytes.min(MAX_BATCH_BYTES));
        rep.resize(BATCH_HEADER_SIZE, 0);
        WriteBatch {
            rep,
            count: 0,
            first_cf: None,
            other_cfs: Vec::new(),
            txn: None,
            assigned: None,
            placed: None,
        }
    }

    /// Sets `key` to `value` in `cf`. Fails, changing nothing, when the key, value or batch
    /// would exceed its limit.
    pub fn put(&mut self, cf: &ColumnFamily, key: &[u8], value: &[u8]) -> Result<()> {
        check_len("key", key.len(), MAX_KEY_BYTES)?;
        check_len("value", value.len(), MAX_VALUE_BYTES)?;
        self.push(BATCH_PUT, cf.id(), key, Some(value))
    }

    /// Deletes `key` from `cf`. Deleting a missing key is allowed and changes nothing visible.
    pub fn delete(&mut self, cf: &ColumnFamily, key: &[u8]) -> Result<()> {
        check_len("key", key.len(), MAX_KEY_BYTES)?;
        self.push(BATCH_DELETE, cf.id(), key, None)
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Size of the encoded batch in bytes: what it adds to the log.
    pub fn encoded_bytes(&self) -> usize {
        self.rep.len()
    }

    /// Marks the batch as one part of transaction `id` (a commit across several stores) whose
    /// parts are in `participants` (store numbers, this one's included): recovery replays it
    /// only if the table layer finds the transaction complete. At most
    /// `MAX_PARTICIPANTS` (4,096) participants.
    pub fn set_transaction(&mut self, id: u64, participants: &[u32]) -> Result<()> {
        if participants.len() > MAX_PARTICIPANTS {
            return Err(Error::InvalidArgument(format!(
                "a transaction names at most {MAX_PARTICIPANTS} participants"
            )));
        }
        self.txn = Some(TransactionTrailer {
            id,
            participants: participants.to_vec(),
        });
        Ok(())
    }

    /// Removes every operation, keeping the buffer.
    pub fn clear(&mut self) {
        self.rep.truncate(BATCH_HEADER_SIZE);
        self.count = 0;
        self.first_cf = None;
        self.other_cfs.clear();
        self.txn = None;
        self.placed = None;
    }

    fn push(&mut self, kind: u8, cf_id: u32, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let before = self.rep.len();
        self.rep.push(kind);
        put_varint(&mut self.rep, u64::from(cf_id));
        put_len_prefixed(&mut self.rep, key);
        if let Some(value) = value {
            put_len_prefixed(&mut self.rep, value);
        }
        let too_many = self.count == u32::MAX;
        if self.rep.len() > MAX_BATCH_BYTES || too_many {
            let len = self.rep.len();
            self.rep.truncate(before);
            return Err(Error::TooLarge {
                what: "batch",
                len,
                max: MAX_BATCH_BYTES,
            });
        }
        self.count += 1;
        match self.first_cf {
            None => self.first_cf = Some(cf_id),
            Some(first) if first == cf_id => {}
            Some(_) => {
                if let Err(at) = self.other_cfs.binary_search(&cf_id) {
                    self.other_cfs.insert(at, cf_id);
                }
            }
        }
        Ok(())
    }

    /// The encoded batch with `first_seqno` in its header, ready for the log.
    pub(crate) fn seal(mut self, first_seqno: SeqNo) -> Bytes {
        self.rep[0..8].copy_from_slice(&first_seqno.to_le_bytes());
        self.rep[8..12].copy_from_slice(&self.count.to_le_bytes());
        if let Some(txn) = &self.txn {
            self.rep.push(BATCH_TRANSACTION);
            put_varint(&mut self.rep, txn.id);
            put_varint(&mut self.rep, txn.participants.len() as u64);
            for &p in &txn.participants {
                put_varint(&mut self.rep, u64::from(p));
            }
        }
        Bytes::from(self.rep)
    }

    /// Each entry's column family and key, in order.
    pub(crate) fn keys(&self) -> impl Iterator<Item = (u32, &[u8])> + '_ {
        let body = &self.rep[BATCH_HEADER_SIZE..];
        // The batch encoded these entries itself: they decode.
        BatchEntries::new(body, self.count)
            .map_while(|entry| entry.ok())
            .filter_map(move |(cf, _, key, _)| Some((cf, body.get(key)?)))
    }

    /// The column families this batch writes to, each once.
    pub(crate) fn column_families(&self) -> impl Iterator<Item = u32> + '_ {
        self.first_cf
            .into_iter()
            .chain(self.other_cfs.iter().copied())
    }
}

fn check_len(what: &'static str, len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::TooLarge { what, len, max });
    }
    Ok(())
}

/// Encodes `entries` as a sealed batch starting at `first_seqno` (the entries' own seqnos are
/// ignored): what a commit would log. For the fuzz checks' round trips.
pub fn encode_batch(
    first_seqno: SeqNo,
    entries: &[BatchEntry],
    txn: Option<&TransactionTrailer>,
) -> Result<Bytes> {
    let mut batch = WriteBatch::new();
    if let Some(txn) = txn {
        batch.set_transaction(txn.id, &txn.participants)?;
    }
    for entry in entries {
        check_len("key", entry.key.len(), MAX_KEY_BYTES)?;
        check_len("value", entry.value.len(), MAX_VALUE_BYTES)?;
        let value = (entry.kind == ValueKind::Put).then_some(&entry.value[..]);
        batch.push(entry.kind as u8, entry.cf_id, &entry.key, value)?;
    }
    Ok(batch.seal(first_seqno))
}

/// One decoded entry of a sealed batch; key and value share the batch's buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchEntry {
    /// The column family id.
    pub cf_id: u32,
    /// Its sequence number.
    pub seqno: SeqNo,
    /// Put or Delete.
    pub kind: ValueKind,
    /// The key.
    pub key: Bytes,
    /// The value (empty for a delete).
    pub value: Bytes,
}

/// A batch's transaction trailer: it is one part of commit `id`, whose parts are in the
/// stores `participants`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransactionTrailer {
    /// The commit's id (the first seqno of its range, the same in every part).
    pub id: u64,
    /// The store numbers holding its parts.
    pub participants: Vec<u32>,
}

/// A sealed batch, decoded: every entry checked before any is returned, so a damaged record
/// is refused whole.
#[derive(Debug)]
pub struct DecodedBatch {
    /// The first entry's sequence number.
    pub first_seqno: SeqNo,
    /// The entries in batch order.
    pub entries: Vec<BatchEntry>,
    /// The transaction trailer, for a part of a commit across several stores.
    pub txn: Option<TransactionTrailer>,
}

impl DecodedBatch {
    /// The last sequence number the batch uses (`first_seqno - 1` for an empty batch).
    pub fn last_seqno(&self) -> SeqNo {
        self.first_seqno + self.entries.len() as u64 - 1
    }
}

/// Decodes a sealed batch, checking every length, kind, limit and the sequence number range.
pub fn decode_batch(record: &Bytes) -> std::result::Result<DecodedBatch, Corruption> {
    let header = record
        .get(..BATCH_HEADER_SIZE)
        .ok_or(Corruption::Batch(BatchFault::ShorterThanHeader))?;
    let first_seqno = u64::from_le_bytes(header[0..8].try_into().unwrap_or_default());
    let count = u32::from_le_bytes(header[8..12].try_into().unwrap_or_default());
    if first_seqno == 0 {
        return Err(Corruption::Batch(BatchFault::SeqnoZero));
    }
    // first_seqno >= 1, so `end - 1` cannot underflow.
    let past_last = first_seqno.checked_add(u64::from(count));
    if past_last.is_none_or(|end| end - 1 > strata_sstable::MAX_SEQNO) {
        return Err(Corruption::Batch(BatchFault::SeqnoOver56Bits));
    }
    let body = &record[BATCH_HEADER_SIZE..];
    let mut entries = Vec::with_capacity((count as usize).min(body.len() / 3 + 1));
    let mut decoder = BatchEntries::new(body, count);
    for i in 0..u64::from(count) {
        let (cf_id, kind, key, value) = decoder
            .next()
            .unwrap_or(Err(Corruption::Batch(BatchFault::FewerEntriesThanCount)))?;
        let slice = |range: std::ops::Range<usize>| {
            record.slice(BATCH_HEADER_SIZE + range.start..BATCH_HEADER_SIZE + range.end)
        };
        entries.push(BatchEntry {
            cf_id,
            seqno: first_seqno + i,
            kind,
            key: slice(key),
            value: slice(value),
        });
    }
    let txn = decoder.trailer()?;
    Ok(DecodedBatch {
        first_seqno,
        entries,
        txn,
    })
}

type RawEntry = (
    u32,
    ValueKind,
    std::ops::Range<usize>,
    std::ops::Range<usize>,
);

/// Walks the entries of a batch body: `(cf_id, kind, key range, value range)` in the body.
struct BatchEntries<'a> {
    reader: Reader<'a>,
    remaining: u32,
}

impl<'a> BatchEntries<'a> {
    fn new(body: &'a [u8], count: u32) -> Self {
        BatchEntries {
            reader: Reader::new(body),
            remaining: count,
        }
    }

    /// The transaction trailer after the last entry, if any; anything else there is damage.
    fn trailer(&mut self) -> std::result::Result<Option<TransactionTrailer>, Corruption> {
        if self.reader.is_empty() {
            return Ok(None);
        }
        if self.reader.byte() != Some(BATCH_TRANSACTION) {
            return Err(Corruption::Batch(BatchFault::BytesAfterLastEntry));
        }
        let truncated = Corruption::Batch(BatchFault::TrailerTruncated);
        let id = self.reader.varint().ok_or(truncated.clone())?;
        let count = self.reader.varint().ok_or(truncated.clone())?;
        if count == 0 || count > MAX_PARTICIPANTS as u64 {
            return Err(Corruption::Batch(BatchFault::TrailerParticipantCount));
        }
        let mut participants = Vec::with_capacity(count as usize);
        for _ in 0..count {
            let p = self.reader.varint().ok_or(truncated.clone())?;
            let p = u32::try_from(p)
                .map_err(|_| Corruption::Batch(BatchFault::ParticipantOver32Bits))?;
            participants.push(p);
        }
        if !self.reader.is_empty() {
            return Err(Corruption::Batch(BatchFault::BytesAfterTrailer));
        }
        Ok(Some(TransactionTrailer { id, participants }))
    }

    fn entry(&mut self) -> std::result::Result<RawEntry, Corruption> {
        let truncated = Corruption::Batch(BatchFault::EntryTruncated);
        let kind = match self.reader.byte().ok_or(truncated.clone())? {
            BATCH_PUT => ValueKind::Put,
            BATCH_DELETE => ValueKind::Delete,
            _ => return Err(Corruption::Batch(BatchFault::UnknownEntryKind)),
        };
        let cf_id = self.reader.varint().ok_or(truncated.clone())?;
        let cf_id =
            u32::try_from(cf_id).map_err(|_| Corruption::Batch(BatchFault::FamilyIdOver32Bits))?;
        let key = self.range(MAX_KEY_BYTES)?;
        let value = match kind {
            ValueKind::Put => self.range(MAX_VALUE_BYTES)?,
            ValueKind::Delete => key.end..key.end,
        };
        Ok((cf_id, kind, key, value))
    }

    fn range(&mut self, max: usize) -> std::result::Result<std::ops::Range<usize>, Corruption> {
        let len = self
            .reader
            .len()
            .ok_or(Corruption::Batch(BatchFault::EntryTruncated))?;
        if len > max {
            return Err(Corruption::Batch(BatchFault::KeyOrValueOverLimit));
        }
        let start = self.reader.pos();
        self.reader
            .bytes(len)
            .ok_or(Corruption::Batch(BatchFault::EntryTruncated))?;
        Ok(start..start + len)
    }
}

impl Iterator for BatchEntries<'_> {
    type Item = std::result::Result<RawEntry, Corruption>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        Some(self.entry())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of `docs/formats/batch.md`.
    #[test]
    fn the_documented_example_encodes_as_written() {
        let entry = |cf_id, kind, key: &'static [u8], value: &'static [u8]| BatchEntry {
            cf_id,
            seqno: 0,
            kind,
            key: Bytes::from_static(key),
            value: Bytes::from_static(value),
        };
        let encoded = encode_batch(
            5,
            &[
                entry(0, ValueKind::Put, b"k", b"v"),
                entry(1, ValueKind::Delete, b"x", b""),
            ],
            None,
        )
        .expect("encodes");
        let expected: &[u8] = &[
            5, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, // header
            1, 0, 1, b'k', 1, b'v', // put
            2, 1, 1, b'x', // delete
        ];
        assert_eq!(&encoded[..], expected);
        let decoded = decode_batch(&encoded).expect("decodes");
        assert_eq!(decoded.last_seqno(), 6);
        assert_eq!(decoded.entries[1].seqno, 6);
    }

    #[test]
    fn damaged_batches_are_refused_whole() {
        let good = encode_batch(
            1,
            &[BatchEntry {
                cf_id: 3,
                seqno: 0,
                kind: ValueKind::Put,
                key: Bytes::from_static(b"key"),
                value: Bytes::from_static(b"value"),
            }],
            None,
        )
        .expect("encodes");
        for cut in 0..good.len() {
            assert!(decode_batch(&good.slice(..cut)).is_err(), "cut at {cut}");
        }
        let mut extra = good.to_vec();
        extra.push(0);
        assert!(decode_batch(&Bytes::from(extra)).is_err(), "trailing bytes");
        let mut zero = good.to_vec();
        zero[0] = 0;
        assert!(decode_batch(&Bytes::from(zero)).is_err(), "seqno 0");
        let mut kind = good.to_vec();
        kind[12] = 9;
        assert!(decode_batch(&Bytes::from(kind)).is_err(), "unknown kind");
    }

    #[test]
    fn a_transaction_trailer_round_trips_and_is_refused_when_damaged() {
        let entry = BatchEntry {
            cf_id: 2,
            seqno: 0,
            kind: ValueKind::Put,
            key: Bytes::from_static(b"k"),
            value: Bytes::from_static(b"v"),
        };
        let txn = TransactionTrailer {
            id: 300,
            participants: vec![0, 3],
        };
        let sealed = encode_batch(300, std::slice::from_ref(&entry), Some(&txn)).expect("encodes");
        // The worked example's trailer: kind 3, id 300 (varint ac 02), 2 participants, 0, 3.
        assert_eq!(&sealed[sealed.len() - 6..], &[3, 0xac, 0x02, 2, 0, 3]);
        let decoded = decode_batch(&sealed).expect("decodes");
        assert_eq!(decoded.txn.as_ref(), Some(&txn));
        assert_eq!(decoded.entries.len(), 1);
        for cut in 19..sealed.len() {
            assert!(decode_batch(&sealed.slice(..cut)).is_err(), "cut at {cut}");
        }
        let mut no_participants = sealed[..sealed.len() - 3].to_vec();
        no_participants.push(0);
        assert!(decode_batch(&Bytes::from(no_participants)).is_err());
        let mut extra = sealed.to_vec();
        extra.push(0);
        assert!(decode_batch(&Bytes::from(extra)).is_err());
    }
}
