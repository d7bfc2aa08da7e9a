//! The operational commands: `checkpoint`, `backup create | list | verify | restore | purge`
//! and `feed create | list | drop | tail`. Each prints to the writer it is given; long copies
//! show a progress bar on standard error when it is a terminal.

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use strata::backup::{self, BackupInfo};
use strata::{Change, Db, FeedOptions, FeedState, OnLag};

use crate::output::{json_value, record_json};

/// A command's failure: one line for standard error.
pub type Outcome = Result<(), String>;

fn write_failed(e: std::io::Error) -> String {
    format!("writing the output: {e}")
}

/// A bar for a copy of `total` bytes, hidden unless standard error is a terminal.
fn bar(message: &'static str) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(0);
    bar.set_style(
        ProgressStyle::with_template("{msg:>9} [{bar:40}] {bytes}/{total_bytes} eta {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    bar.set_message(message);
    bar
}

fn bytes(n: u64) -> String {
    indicatif::HumanBytes(n).to_string()
}

/// `strata --db DIR checkpoint TARGET`.
pub fn checkpoint(db: &Db, target: &Path, out: &mut impl Write) -> Outcome {
    let bar = bar("copying");
    let cp = db
        .checkpoint_with(target, &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })
        .map_err(|e| format!("checkpoint into {}: {e}", target.display()))?;
    bar.finish_and_clear();
    writeln!(
        out,
        "checkpoint of commit {} in {}: {} files linked, {} copied",
        cp.commit,
        target.display(),
        cp.files_linked,
        bytes(cp.bytes_copied)
    )
    .map_err(write_failed)
}

/// `strata --db DIR backup create BACKUP_DIR`.
pub fn backup_create(db: &Db, dir: &Path, out: &mut impl Write) -> Outcome {
    let bar = bar("backing up");
    let info = db
        .backup_with(dir, &mut |done, total| {
            bar.set_length(total);
            bar.set_position(done);
        })
        .map_err(|e| format!("backup into {}: {e}", dir.display()))?;
    bar.finish_and_clear();
    writeln!(
        out,
        "backup {} of commit {}: {} files, {}, {} copied",
        info.id,
        info.commit,
        info.files,
        bytes(info.bytes),
        bytes(info.bytes_copied)
    )
    .map_err(write_failed)
}

/// `strata backup list BACKUP_DIR`.
pub fn backup_list(dir: &Path, json: bool, out: &mut impl Write) -> Outcome {
    let list = backup::list(dir).map_err(|e| e.to_string())?;
    if json {
        for b in &list {
            let line = serde_json::json!({
                "id": b.id, "commit": b.commit, "files": b.files, "bytes": b.bytes,
                "bytes_copied": b.bytes_copied, "created_micros": b.created_micros,
            });
            writeln!(out, "{line}").map_err(write_failed)?;
        }
        return Ok(());
    }
    if list.is_empty() {
        return writeln!(out, "no backups in {}", dir.display()).map_err(write_failed);
    }
    writeln!(
        out,
        "{:>4}  {:>12}  {:>6}  {:>10}  {:>10}  taken",
        "id", "commit", "files", "size", "copied"
    )
    .map_err(write_failed)?;
    for b in &list {
        writeln!(
            out,
            "{:>4}  {:>12}  {:>6}  {:>10}  {:>10}  {}",
            b.id,
            b.commit,
            b.files,
            bytes(b.bytes),
            bytes(b.bytes_copied),
            when(b)
        )
        .map_err(write_failed)?;
    }
    Ok(())
}

/// Seconds since the Unix epoch, as a person reads a log line.
fn when(b: &BackupInfo) -> String {
    let secs = b.created_micros / 1_000_000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// `strata backup verify BACKUP_DIR ID`.
pub fn backup_verify(dir: &Path, id: u64, out: &mut impl Write) -> Outcome {
    let info = backup::verify(dir, id).map_err(|e| e.to_string())?;
    writeln!(
        out,
        "backup {id} is whole: {} files, {} checked",
        info.files,
        bytes(info.bytes)
    )
    .map_err(write_failed)
}

/// `strata backup restore BACKUP_DIR ID TARGET`.
pub fn backup_restore(dir: &Path, id: u64, target: &Path, out: &mut impl Write) -> Outcome {
    let bar = bar("restoring");
    let fs: std::sync::Arc<dyn strata::fs::FileSystem> = std::sync::Arc::new(strata::fs::OsFs);
    let info = backup::restore_with(fs, dir, id, target, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    writeln!(
        out,
        "restored backup {id} (commit {}) into {}: {} files, {}",
        info.commit,
        target.display(),
        info.files,
        bytes(info.bytes)
    )
    .map_err(write_failed)
}

/// `strata backup purge BACKUP_DIR --keep N`.
pub fn backup_purge(dir: &Path, keep: usize, out: &mut impl Write) -> Outcome {
    let purged = backup::purge_old(dir, keep).map_err(|e| e.to_string())?;
    writeln!(
        out,
        "removed {} backup{}, {} files, {}",
        purged.backups.len(),
        if purged.backups.len() == 1 { "" } else { "s" },
        purged.files_removed,
        bytes(purged.bytes_freed)
    )
    .map_err(write_failed)
}

/// `strata --db DIR feed create NAME --tables a,b`.
pub fn feed_create(
    db: &Db,
    name: &str,
    tables: &[String],
    max_retained_bytes: Option<u64>,
    retain: bool,
    out: &mut impl Write,
) -> Outcome {
    let mut options = FeedOptions::default();
    if let Some(limit) = max_retained_bytes {
        options = options.max_retained_bytes(limit);
    }
    if retain {
        options = options.on_lag(OnLag::Retain);
    }
    db.create_feed_with(name, tables, options)
        .map_err(|e| e.to_string())?;
    writeln!(out, "created feed {name} over {}", tables.join(", ")).map_err(write_failed)
}

/// `strata --db DIR feed list`.
pub fn feed_list(db: &Db, json: bool, out: &mut impl Write) -> Outcome {
    let feeds = db.feeds().map_err(|e| e.to_string())?;
    let state = |s: FeedState| match s {
        FeedState::Active => "active",
        FeedState::Lagging => "lagging",
        FeedState::Released => "released",
        _ => "unknown",
    };
    for f in &feeds {
        if json {
            let line = serde_json::json!({
                "name": f.name, "tables": f.tables, "acked_commit": f.acked_commit,
                "retained_bytes": f.retained_bytes, "lag": f.lag, "state": state(f.state),
            });
            writeln!(out, "{line}").map_err(write_failed)?;
        } else {
            writeln!(
                out,
                "{} ({}): acked commit {}, {} retained, {} behind, {}",
                f.name,
                f.tables.join(", "),
                f.acked_commit,
                bytes(f.retained_bytes),
                f.lag,
                state(f.state)
            )
            .map_err(write_failed)?;
        }
    }
    if feeds.is_empty() && !json {
        writeln!(out, "no feeds").map_err(write_failed)?;
    }
    Ok(())
}

/// One change as `feed tail` prints it.
fn change_line(c: &Change, json: bool) -> String {
    let op = match (&c.before, &c.after) {
        (None, Some(_)) => "insert",
        (Some(_), Some(_)) => "update",
        _ => "delete",
    };
    if json {
        let key: Vec<serde_json::Value> = c.key.iter().map(json_value).collect();
        let row = |r: &Option<strata::Record>| {
            r.as_ref()
                .map_or("null".to_string(), |r| record_json(r, None))
        };
        return format!(
            "{{\"commit\":{},\"table\":{},\"op\":\"{op}\",\"key\":{},\"before\":{},\"after\":{}}}",
            c.commit,
            serde_json::Value::from(c.table.as_str()),
            serde_json::Value::from(key),
            row(&c.before),
            row(&c.after)
        );
    }
    let key: Vec<String> = c.key.iter().map(|v| v.sql_literal().to_string()).collect();
    let row =
        |r: &Option<strata::Record>| r.as_ref().map_or("-".to_string(), |r| record_json(r, None));
    format!(
        "{:>10}  {}  ({})  {op:<6}  {} -> {}",
        c.commit,
        c.table,
        key.join(", "),
        row(&c.before),
        row(&c.after)
    )
}

/// `strata --db DIR feed tail NAME [--follow]`: prints the changes after the feed's
/// position and acknowledges each batch once it is written out; with `follow`, waits for more
/// until the output goes away.
pub fn feed_tail(db: &Db, name: &str, follow: bool, json: bool, out: &mut impl Write) -> Outcome {
    let mut feed = db.feed(name).map_err(|e| e.to_string())?;
    let wait = if follow {
        Duration::from_secs(1)
    } else {
        Duration::ZERO
    };
    loop {
        let changes = feed.poll(1024, wait).map_err(|e| e.to_string())?;
        let Some(last) = changes.last() else {
            if follow {
                continue;
            }
            return Ok(());
        };
        let mut text = String::new();
        for c in &changes {
            text.push_str(&change_line(c, json));
            text.push('\n');
        }
        match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            Ok(()) => {}
            // The reader went away: what it did not get is not acknowledged.
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => return Ok(()),
            Err(e) => return Err(write_failed(e)),
        }
        feed.ack(last.position).map_err(|e| e.to_string())?;
    }
}

/// `strata --db DIR feed drop NAME`.
pub fn feed_drop(db: &Db, name: &str, out: &mut impl Write) -> Outcome {
    db.drop_feed(name).map_err(|e| e.to_string())?;
    writeln!(out, "dropped feed {name}").map_err(write_failed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_become_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_784), (2026, 11, 27));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}
