//! RocksDB through the `rocksdb` crate (the `rocksdb` feature, on by default: its C++ build
//! takes minutes, so CI builds the harness without it).

use std::path::Path;

use crate::{CACHE_BYTES, Engine, MEMTABLE_BYTES};

pub(crate) struct Rocks {
    db: rocksdb::DB,
}

/// The harness's shared settings, for the plain and the transactional database.
pub(crate) fn options() -> rocksdb::Options {
    let mut options = rocksdb::Options::default();
    options.create_if_missing(true);
    options.set_compression_type(rocksdb::DBCompressionType::None);
    options.set_write_buffer_size(MEMTABLE_BYTES);
    let mut table = rocksdb::BlockBasedOptions::default();
    table.set_block_cache(&rocksdb::Cache::new_lru_cache(CACHE_BYTES));
    table.set_bloom_filter(10.0, false);
    options.set_block_based_table_factory(&table);
    options
}

impl Rocks {
    pub(crate) fn open(dir: &Path) -> Rocks {
        Rocks {
            db: rocksdb::DB::open(&options(), dir).expect("rocksdb opens"),
        }
    }
}

impl Engine for Rocks {
    fn put(&self, key: &[u8], value: &[u8], sync: bool) {
        let mut options = rocksdb::WriteOptions::default();
        options.set_sync(sync);
        self.db.put_opt(key, value, &options).expect("put");
    }

    fn get(&self, key: &[u8]) -> bool {
        self.db.get_pinned(key).expect("get").is_some()
    }

    fn scan(&self) -> u64 {
        let mut iter = self.db.raw_iterator();
        iter.seek_to_first();
        let mut n = 0;
        while iter.valid() {
            std::hint::black_box(iter.value());
            n += 1;
            iter.next();
        }
        iter.status().expect("scan");
        n
    }

    fn seek_next(&self, key: &[u8], n: usize) -> usize {
        let mut iter = self.db.raw_iterator();
        iter.seek(key);
        let mut read = 0;
        while iter.valid() && read < n {
            std::hint::black_box(iter.value());
            read += 1;
            iter.next();
        }
        read
    }

    fn compact(&self) {
        self.db.flush().expect("flush");
        self.db.compact_range(None::<&[u8]>, None::<&[u8]>);
    }
}
