//! `strata wal dump`: the records and damaged regions of a write-ahead log.

use std::io::Write;
use std::path::Path;

use strata::lsm::wal::{LogEnd, LogReader, RecoveryMode, peek_log_number};

/// Prints one line per record and per skipped region, in log order, then how the log ended.
pub fn dump(
    file: &Path,
    log_number: Option<u32>,
    mode: RecoveryMode,
    out: &mut impl Write,
) -> Result<(), String> {
    let mut println = |line: String| -> Result<(), String> {
        writeln!(out, "{line}").map_err(|e| format!("cannot write the output: {e}"))
    };
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let log_number = match log_number.or_else(|| peek_log_number(&bytes)) {
        Some(number) => number,
        None if bytes.is_empty() => 0,
        None => return Err("no intact fragment found; pass --log-number".to_owned()),
    };
    println(format!(
        "log {} ({} bytes), log number {log_number}",
        file.display(),
        bytes.len()
    ))?;
    let mut reader = LogReader::new(&bytes, log_number, mode);
    let mut reported = 0;
    let mut records = 0u64;
    loop {
        let next = reader.next_record();
        for region in &reader.skipped()[reported..] {
            println(format!(
                "skipped  offset {:>10}  length {:>8}  {}",
                region.offset, region.len, region.reason
            ))?;
        }
        reported = reader.skipped().len();
        match next {
            Ok(Some(record)) => {
                records += 1;
                println(format!(
                    "record   offset {:>10}  length {:>8}  {}",
                    record.offset,
                    record.data.len(),
                    preview(&record.data)
                ))?;
            }
            Ok(None) => break,
            Err(error) => return Err(format!("after {records} records: {error}")),
        }
    }
    let end = match reader.end() {
        Some(LogEnd::TornTail { offset }) => format!("torn tail dropped from offset {offset}"),
        Some(LogEnd::StoppedAtDamage { offset }) => format!("stopped at damage at {offset}"),
        _ => "complete".to_owned(),
    };
    println(format!(
        "{records} records, {} skipped regions; {end}",
        reader.skipped().len()
    ))?;
    Ok(())
}

/// The first bytes of a record in hex.
fn preview(data: &[u8]) -> String {
    const SHOWN: usize = 16;
    let mut hex: String = data
        .iter()
        .take(SHOWN)
        .map(|b| format!("{b:02x}"))
        .collect();
    if data.len() > SHOWN {
        hex.push('…');
    }
    hex
}
