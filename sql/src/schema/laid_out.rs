//! A record batch's values laid out in one Arrow buffer ([`LaidOut`]), written through
//! [`Words`]: what [`super::Batcher::finish`] builds its columns' arrays from.

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BinaryArray, BooleanArray, Float64Array, Int64Array, StringArray,
};
use datafusion::arrow::buffer::{
    BooleanBuffer, Buffer, MutableBuffer, NullBuffer, OffsetBuffer, ScalarBuffer,
};
use datafusion::arrow::datatypes::ArrowNativeType;
use datafusion::error::DataFusionError;

use super::ColumnType;

/// A batch's values in one buffer (one allocation and one reference count for the whole
/// batch, not one or two per kind): each kind's columns one after another in its section —
/// integers and floats, text offsets (`rows + 1` a column, from 0 in the column's bytes), the
/// text bytes, the validity bits of the columns with NULLs, the booleans' bits — each section
/// starting on an 8-byte boundary of the buffer, which starts on one.
pub(super) struct LaidOut {
    pub(super) buffer: Buffer,
    /// Where each section starts, in bytes.
    pub(super) ints: usize,
    pub(super) floats: usize,
    pub(super) offsets: usize,
    pub(super) bytes: usize,
    pub(super) validity: usize,
    pub(super) bools: usize,
    /// Where each text column's bytes start in their section (and the last ends).
    pub(super) starts: Vec<usize>,
}

impl LaidOut {
    /// The column of `kind` at `slot` among its kind's, with `nulls`; its texts checked
    /// as Arrow checks them when `check` (else taken as `Batcher::lay_out` made them).
    pub(super) fn column(
        &self,
        kind: ColumnType,
        slot: usize,
        rows: usize,
        nulls: Option<NullBuffer>,
        check: bool,
    ) -> Result<ArrayRef, DataFusionError> {
        let buffer = || self.buffer.clone();
        Ok(match kind {
            ColumnType::Int => Arc::new(Int64Array::new(
                ScalarBuffer::new(buffer(), self.ints / 8 + slot * rows, rows),
                nulls,
            )),
            ColumnType::Float => Arc::new(Float64Array::new(
                ScalarBuffer::new(buffer(), self.floats / 8 + slot * rows, rows),
                nulls,
            )),
            ColumnType::Bool => Arc::new(BooleanArray::new(
                BooleanBuffer::new(buffer(), self.bools * 8 + slot * rows, rows),
                nulls,
            )),
            ColumnType::Text | ColumnType::Bytes => {
                let at = self.offsets / 4 + slot * (rows + 1);
                let offsets = OffsetBuffer::new(ScalarBuffer::new(buffer(), at, rows + 1));
                let (start, end) = (self.starts[slot], self.starts[slot + 1]);
                let values = self
                    .buffer
                    .slice_with_length(self.bytes + start, end - start);
                match kind {
                    ColumnType::Text if check => {
                        Arc::new(StringArray::try_new(offsets, values, nulls)?)
                    }
                    ColumnType::Text => {
                        #[expect(
                            unsafe_code,
                            reason = "a check of UTF-8 that the values' `&str`s were made \
                                      with: ~100 instructions a column of a SQL point query, \
                                      more for long texts"
                        )]
                        // SAFETY: the offsets start at 0 and grow by each value's length to
                        // the end of `values` (`Batcher::lay_out`; `OffsetBuffer::new` has
                        // checked they never fall), and each value between two of them is the
                        // bytes of a `&str` (`Stage::stage` stages only those in a text
                        // column, which has a slot of its own): valid UTF-8, each offset on a
                        // character's boundary; `nulls` has a bit for each of the `rows`
                        // values. Debug builds take the checked path; the tests build batches
                        // both ways and validate these arrays in full.
                        Arc::new(unsafe { StringArray::new_unchecked(offsets, values, nulls) })
                    }
                    _ => Arc::new(BinaryArray::try_new(offsets, values, nulls)?),
                }
            }
        })
    }

    /// The validity of the `k`th column with NULLs, which has `count` of them (counted
    /// again, and compared, when `check`).
    pub(super) fn nulls(
        &self,
        k: usize,
        rows: usize,
        count: usize,
        check: bool,
    ) -> Result<NullBuffer, DataFusionError> {
        let bits = BooleanBuffer::new(self.buffer.clone(), self.validity * 8 + k * rows, rows);
        if check {
            let nulls = NullBuffer::new(bits);
            if nulls.null_count() != count {
                return Err(DataFusionError::Internal(format!(
                    "a batch's column {k} has {} NULLs, counted {count}",
                    nulls.null_count()
                )));
            }
            return Ok(nulls);
        }
        #[expect(
            unsafe_code,
            reason = "a count of the NULLs the column's staging listed, one a NULL row"
        )]
        // SAFETY: `count` is the length of the column's list of NULL rows (`Stage::nulls`),
        // and these bits were written from that list (`Stage::validity`): a zero for each row
        // in it, a one for every other. The list holds each row at most once, in increasing
        // order, every row below `rows` (`Batcher::lay_out` checks the last before laying
        // out), so it names exactly `count` of the bits. Debug builds count the bits again
        // and compare, and so do the tests.
        Ok(unsafe { NullBuffer::new_unchecked(bits, count) })
    }
}

/// Bytes written into one Arrow buffer (whose start is aligned for any column's values: 8
/// bytes), a kind's values copied in whole slices.
pub(super) struct Words {
    buffer: MutableBuffer,
}

impl Words {
    pub(super) fn with_capacity(words: usize) -> Words {
        // A vector's allocation (aligned for `u64`, from the allocator's common path; Arrow's
        // own is aligned for 64 bytes, which costs more to allocate: ~200 instructions of a
        // SQL point query, callgrind).
        Words {
            buffer: MutableBuffer::from(Vec::<u64>::with_capacity(words)),
        }
    }

    /// Bytes written so far.
    pub(super) fn len(&self) -> usize {
        self.buffer.len()
    }

    /// `values`, as they lie in memory.
    pub(super) fn put<T: ArrowNativeType>(&mut self, values: &[T]) {
        self.buffer.extend_from_slice(values);
    }

    /// `bits`, packed as Arrow packs them (bit `i` in byte `i / 8`, least significant first).
    pub(super) fn put_bits(&mut self, bits: impl Iterator<Item = bool>) {
        let mut byte = 0u8;
        let mut count = 0usize;
        for bit in bits {
            byte |= u8::from(bit) << (count % 8);
            count += 1;
            if count.is_multiple_of(8) {
                self.buffer.push(byte);
                byte = 0;
            }
        }
        if !count.is_multiple_of(8) {
            self.buffer.push(byte);
        }
    }

    /// Pads to the next 8-byte boundary.
    pub(super) fn align(&mut self) {
        let len = self.buffer.len();
        self.buffer.resize(len.div_ceil(8) * 8, 0);
    }

    pub(super) fn finish(self) -> Buffer {
        self.buffer.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_hold_bytes_and_bits_where_arrow_reads_them() {
        for len in [0, 1, 7, 8, 9, 20, 64, 65] {
            let bits: Vec<bool> = (0..len).map(|i| i % 3 == 0 || i % 7 == 5).collect();
            // After 3 bytes, aligned: the bits start a word.
            let mut words = Words::with_capacity(1);
            words.put(b"abc".as_slice());
            words.align();
            let at = words.len();
            words.put_bits(bits.iter().copied());
            let buffer = words.finish();
            assert_eq!(&buffer.as_slice()[..3], b"abc");
            let ours = BooleanBuffer::new(buffer, at * 8, len);
            assert_eq!(ours, BooleanBuffer::from(bits.clone()), "{len} bits");
        }
        let mut words = Words::with_capacity(0);
        words.put(b"12345".as_slice());
        words.put(b"6789abcdefghij".as_slice());
        words.put(&[7i64, -1]);
        words.put(&[3i32]);
        assert_eq!(words.len(), 39);
        let mut expected = b"123456789abcdefghij".to_vec();
        expected.extend(7i64.to_ne_bytes());
        expected.extend((-1i64).to_ne_bytes());
        expected.extend(3i32.to_ne_bytes());
        let buffer = words.finish();
        assert_eq!(buffer.as_slice(), &expected[..]);
        assert_eq!(buffer.as_ptr().align_offset(8), 0);
    }
}
