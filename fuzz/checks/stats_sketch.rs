//! Checks for the `stats_sketch` fuzz target (`docs/formats/stats.md`, "Table-file
//! sketches"): any bytes either decode as a table file's statistics sketch, which then
//! re-encodes to a sketch with the same statistics and merges and finishes without a panic,
//! or are refused with an error.

use strata::table::sketch::FileSketch;
use strata_planner::TableStatsBuilder;

pub fn check(data: &[u8]) {
    let Ok(sketch) = FileSketch::decode(data) else {
        return;
    };
    let again = FileSketch::decode(&sketch.encode().expect("a decoded sketch encodes"))
        .expect("a re-encoded sketch decodes");
    assert_eq!(again.tombstones, sketch.tombstones);
    let stats = sketch.rows.finish();
    assert_eq!(
        again.rows.finish(),
        stats,
        "re-encoding keeps the statistics"
    );
    let mut total = TableStatsBuilder::new(&[], &[]);
    total.merge(&sketch.rows);
    total.merge(&again.rows);
    let merged = total.finish();
    assert_eq!(merged.row_count, 2 * stats.row_count);
    assert_eq!(merged.validate(), Ok(()), "merged statistics are in range");
}
