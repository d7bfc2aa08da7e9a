//! `calibrate`: measures this machine's cost constants on synthetic tables and stores them,
//! so the planner's microseconds are this machine's.
//!
//! In a scratch database (`<dir>/calibrate.tmp`, removed afterwards), with the database's
//! options, two tables of [`CALIBRATION_ROWS`] rows each (or as many as asked) are loaded, flushed and compacted:
//! a narrow one (about 40-byte rows) with a keys-only index on a field in random order, and
//! a wide one (about 440-byte rows). Then, each the median of [`ROUNDS`]:
//!
//! | constant | measured as |
//! |---|---|
//! | `scan_row_us`, `scan_byte_us` | full scans of both tables whose filter rejects every row: two equations, row cost + width × byte cost (less the predicate) |
//! | `filter_us` | a full scan with four predicates that every row passes, less the plain scan, per row per predicate |
//! | `row_us` | a plain full scan (every row returned) less the rejecting one, per row |
//! | `index_entry_us` | a covering read of the whole index whose test on the carried key rejects every entry, per entry, less its bytes and the test |
//! | `seek_us` | covering lookups of one entry each, per lookup, less the entry and its row |
//! | `fetch_us` | point reads of the narrow table in random key order, less the row's bytes and its decoding |
//! | `sorted_fetch_us` | the same keys, sorted first |
//! | `sort_row_us` | a scan in another order than the key's, less the plain scan, per `n log2 n` |
//!
//! A constant that comes out negative (noise larger than the effect) is kept at the
//! default's value scaled by how the scan compared with its default, so the constants stay
//! in proportion. The result is stored in the catalog and used from then on.

use std::time::Instant;

use strata_planner::{CostModel, Hint, Predicate, Projection, Query};

use crate::error::{Error, Result};
use crate::lsm::{Options as StoreOptions, WriteOptions};
use crate::table::codec::record::Record;
use crate::table::db::Db;
use crate::table::db::options::Options;
use crate::table::write::TableBatch;

/// Rows in each synthetic table.
pub const CALIBRATION_ROWS: u64 = 100_000;

/// Measurements per constant; the median is kept.
pub const ROUNDS: usize = 5;

/// Point reads per round: a tenth of the rows.
const FETCH_FRACTION: usize = 10;

/// The scratch directory, inside the database directory.
const SCRATCH: &str = "calibrate.tmp";

impl Db {
    /// Stores `model` as the cost constants and plans with them from now on. Refused unless
    /// every constant is finite and non-negative.
    pub fn set_cost_model(&self, model: CostModel) -> Result<()> {
        if !model.is_valid() {
            return Err(Error::InvalidArgument(
                "cost constants must be finite and non-negative".into(),
            ));
        }
        self.shared.store_cost_model(model).map(drop)
    }

    /// Measures this machine's cost constants (see the module's table), stores them, and
    /// returns them. Takes a few seconds; queries and writes may run meanwhile, but they
    /// also load the machine and so the measurement.
    pub fn calibrate(&self) -> Result<CostModel> {
        self.calibrate_with(CALIBRATION_ROWS)
    }

    /// [`Db::calibrate`] on tables of `rows` rows (at least 1,000): quicker and noisier with
    /// fewer.
    pub fn calibrate_with(&self, rows: u64) -> Result<CostModel> {
        if rows < 1_000 {
            return Err(Error::InvalidArgument(format!(
                "calibration needs at least 1,000 rows, not {rows}"
            )));
        }
        let dir = self.shared.dir().join(SCRATCH);
        remove_scratch(&self.shared.options.store, &dir);
        let options = Options {
            store: StoreOptions {
                create_if_missing: true,
                ..self.shared.options.store.clone()
            },
            auto_analyze: false,
            shard_dirs: Vec::new(),
            ..self.shared.options.clone()
        };
        let measured = {
            let scratch = Db::open(&dir, options)?;
            let measured = measure(&scratch, rows.min(i64::MAX as u64) as i64);
            scratch.close()?;
            measured
        };
        remove_scratch(&self.shared.options.store, &dir);
        let model = measured?;
        self.shared.store_cost_model(model)
    }
}

/// Removes the scratch database's files (and, on the real file system, its directories).
fn remove_scratch(options: &StoreOptions, dir: &std::path::Path) {
    let fs = &options.fs;
    if let Ok(names) = fs.list(dir) {
        for name in names {
            let _ = fs.remove_file(&dir.join(name));
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Microseconds per run of `f`, the median of [`ROUNDS`].
fn time(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let mut runs = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let start = Instant::now();
        f()?;
        runs.push(start.elapsed().as_secs_f64() * 1e6);
    }
    Ok(median(runs))
}

/// Spreads `i` over `[0, rows)`: `i · 7919 mod rows`, a permutation when 7919 (a prime)
/// does not divide `rows`.
fn scatter(i: i64, rows: i64) -> i64 {
    (i.wrapping_mul(7_919)).rem_euclid(rows)
}

fn load(db: &Db, table: &str, pad: usize, rows: i64) -> Result<()> {
    db.create_table(table, ["id"], crate::TableOptions::default())?;
    let padding = "x".repeat(pad);
    let mut batch = TableBatch::new();
    for id in 0..rows {
        let mut r = Record::new();
        r.set("id", id);
        r.set("k", scatter(id, rows));
        r.set("pad", padding.as_str());
        batch.insert(r);
        if batch.len() == 10_000 {
            db.write(table, std::mem::take(&mut batch), WriteOptions::default())?;
        }
    }
    db.write(table, batch, WriteOptions::default())?;
    Ok(())
}

fn count(db: &Db, table: &str, q: &Query) -> Result<u64> {
    let mut n = 0;
    for row in db.query(table, q)? {
        row?;
        n += 1;
    }
    Ok(n)
}

fn measure(db: &Db, n: i64) -> Result<CostModel> {
    load(db, "narrow", 16, n)?;
    db.create_index("narrow", "by_k", ["k"], Projection::KeysOnly)?;
    load(db, "wide", 416, n)?;
    for t in ["narrow", "wide"] {
        db.flush()?;
        db.compact(t)?;
    }
    let scans = Scans::measure(db, n)?;
    let reads = IndexReads::measure(db, n, &scans)?;
    let ordered = Query::default().hint(Hint::Scan).order_by(["k"], false);
    let rows = n as f64;
    let sorted = time(|| count(db, "narrow", &ordered).map(drop))? / rows;
    let sort_row = (sorted - scans.narrow) / rows.log2();
    scans.model(&reads, sort_row)
}

/// What scans of the two tables measured, a row at a time (µs).
struct Scans {
    /// Average stored row sizes.
    narrow_bytes: f64,
    /// A scan of the narrow table returning every row.
    narrow: f64,
    /// A scan of the narrow table whose filter rejects every row.
    narrow_none: f64,
    scan_byte: f64,
    scan_row: f64,
    filter: f64,
    row: f64,
}

impl Scans {
    fn measure(db: &Db, n: i64) -> Result<Scans> {
        let rows = n as f64;
        let width = |t: &str| -> Result<f64> { Ok(db.planning_statistics(t)?.avg_row_bytes) };
        let (narrow_bytes, wide_bytes) = (width("narrow")?, width("wide")?);
        let scan = Query::default().hint(Hint::Scan);

        // Scans whose filter rejects every row: reading and testing, no decoding.
        let rejects = scan.clone().filter(Predicate::lt("k", 0));
        let narrow_none = time(|| count(db, "narrow", &rejects).map(drop))? / rows;
        let wide_none = time(|| count(db, "wide", &rejects).map(drop))? / rows;
        let scan_byte = ((wide_none - narrow_none) / (wide_bytes - narrow_bytes).max(1.0)).max(0.0);

        let narrow = time(|| count(db, "narrow", &scan).map(drop))? / rows;
        let passes = scan
            .clone()
            .filter(Predicate::ge("k", 0))
            .filter(Predicate::lt("k", n))
            .filter(Predicate::ge("id", 0))
            .filter(Predicate::lt("id", n));
        let filtered = time(|| count(db, "narrow", &passes).map(drop))? / rows;
        let filter = (filtered - narrow) / 4.0;
        Ok(Scans {
            narrow_bytes,
            narrow,
            narrow_none,
            scan_byte,
            scan_row: narrow_none - narrow_bytes * scan_byte - filter.max(0.0),
            filter,
            // Returning every row against returning none, with the one predicate's test
            // added back.
            row: narrow - narrow_none + filter.max(0.0),
        })
    }

    /// The cost model from these and `reads`; a constant that noise made negative keeps its
    /// default, in proportion to this machine's speed.
    fn model(&self, reads: &IndexReads, sort_row: f64) -> Result<CostModel> {
        let defaults = CostModel::default();
        let scale = self.narrow_none
            / (defaults.scan_row_us
                + self.narrow_bytes * defaults.scan_byte_us
                + defaults.filter_us);
        let or_default = |x: f64, default: f64| {
            if x.is_finite() && x > 0.0 {
                x
            } else {
                default * scale
            }
        };
        let model = CostModel {
            seek_us: or_default(reads.seek, defaults.seek_us),
            scan_row_us: or_default(self.scan_row, defaults.scan_row_us),
            scan_byte_us: self.scan_byte,
            row_us: or_default(self.row, defaults.row_us),
            index_entry_us: or_default(reads.index_entry, defaults.index_entry_us),
            fetch_us: or_default(reads.fetch, defaults.fetch_us),
            sorted_fetch_us: or_default(reads.sorted_fetch, defaults.sorted_fetch_us),
            filter_us: or_default(self.filter, defaults.filter_us),
            sort_row_us: or_default(sort_row, defaults.sort_row_us),
            backward_read: defaults.backward_read,
        };
        if model.is_valid() {
            Ok(model)
        } else {
            Err(Error::InvalidArgument(format!(
                "calibration measured unusable constants: {model:?}"
            )))
        }
    }
}

/// What reads through the narrow table's index and by key measured (µs).
struct IndexReads {
    index_entry: f64,
    seek: f64,
    fetch: f64,
    sorted_fetch: f64,
}

impl IndexReads {
    fn measure(db: &Db, n: i64, scans: &Scans) -> Result<IndexReads> {
        let rows = n as f64;
        let fetches = (n as usize / FETCH_FRACTION).max(1);
        // The whole index read covering, every entry rejected by a test on the key it carries.
        let covering = Query::default()
            .filter(Predicate::ge("k", 0))
            .filter(Predicate::lt("id", 0))
            .select(["k", "id"])
            .hint(Hint::Index("by_k".into()));
        // The planner's entry width: the fields' widths (about 9 bytes each) and 8.
        let entry_bytes = 26.0;
        let entry = entry_bytes * scans.scan_byte;
        let entries = time(|| count(db, "narrow", &covering).map(drop))? / rows;
        let index_entry = entries - entry - scans.filter.max(0.0);

        let lookups: Vec<Query> = (0..fetches as i64)
            .map(|i| {
                Query::default()
                    .filter(Predicate::eq("k", scatter(i * 13 + 1, n)))
                    .select(["k", "id"])
                    .hint(Hint::Index("by_k".into()))
            })
            .collect();
        let seek = time(|| {
            for q in &lookups {
                count(db, "narrow", q)?;
            }
            Ok(())
        })? / fetches as f64
            - index_entry.max(0.0)
            - entry
            - scans.row.max(0.0);

        let mut keys: Vec<i64> = (0..fetches as i64)
            .map(|i| scatter(i * 13 + 1, n))
            .collect();
        let fetch_all = |keys: &[i64]| -> Result<()> {
            for &k in keys {
                db.get("narrow", &[k.into()])?;
            }
            Ok(())
        };
        // `Db::get` decodes the record it finds: that part is `row`.
        let read = scans.narrow_bytes * scans.scan_byte + scans.row.max(0.0);
        let fetch = time(|| fetch_all(&keys))? / fetches as f64 - read;
        keys.sort_unstable();
        let sorted_fetch = time(|| fetch_all(&keys))? / fetches as f64 - read;
        Ok(IndexReads {
            index_entry,
            seek,
            fetch,
            sorted_fetch,
        })
    }
}
