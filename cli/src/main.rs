//! The `strata` command.
//!
//! Today it has one tool, `strata wal dump`, which lists the records and damaged regions of a
//! write-ahead log under any recovery mode. The demo, import, query and explain commands arrive
//! with the engine (see the README).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use strata_wal::{LogEnd, LogReader, RecoveryMode, peek_log_number};

/// Strata: an embedded LSM storage engine with index tables and a cost-based planner.
#[derive(Parser)]
#[command(name = "strata", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Write-ahead log tools.
    Wal {
        #[command(subcommand)]
        command: WalCommand,
    },
}

#[derive(Subcommand)]
enum WalCommand {
    /// List a log's records, skipped regions and how it ends.
    Dump {
        /// The log file.
        file: PathBuf,
        /// The log number the file was written with; by default, the number in its first
        /// intact fragment.
        #[arg(long)]
        log_number: Option<u32>,
        /// What to do at damage.
        #[arg(long, value_enum, default_value_t = Mode::TolerateTornTail)]
        mode: Mode,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Mode {
    TolerateTornTail,
    AbsoluteConsistency,
    PointInTime,
    SkipCorrupted,
}

impl From<Mode> for RecoveryMode {
    fn from(mode: Mode) -> Self {
        match mode {
            Mode::TolerateTornTail => RecoveryMode::TolerateTornTail,
            Mode::AbsoluteConsistency => RecoveryMode::AbsoluteConsistency,
            Mode::PointInTime => RecoveryMode::PointInTime,
            Mode::SkipCorrupted => RecoveryMode::SkipCorrupted,
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let outcome = match cli.command {
        Command::Wal {
            command:
                WalCommand::Dump {
                    file,
                    log_number,
                    mode,
                },
        } => dump_wal(&file, log_number, mode.into()),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("strata: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Prints one line per record and per skipped region, in log order, then how the log ended.
fn dump_wal(file: &PathBuf, log_number: Option<u32>, mode: RecoveryMode) -> Result<(), String> {
    let bytes = std::fs::read(file).map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let log_number = match log_number.or_else(|| peek_log_number(&bytes)) {
        Some(number) => number,
        None if bytes.is_empty() => 0,
        None => return Err("no intact fragment found; pass --log-number".to_owned()),
    };
    println!(
        "log {} ({} bytes), log number {log_number}",
        file.display(),
        bytes.len()
    );
    let mut reader = LogReader::new(&bytes, log_number, mode);
    let mut reported = 0;
    let mut records = 0u64;
    loop {
        let next = reader.next_record();
        for region in &reader.skipped()[reported..] {
            println!(
                "skipped  offset {:>10}  length {:>8}  {}",
                region.offset, region.len, region.reason
            );
        }
        reported = reader.skipped().len();
        match next {
            Ok(Some(record)) => {
                records += 1;
                println!(
                    "record   offset {:>10}  length {:>8}  {}",
                    record.offset,
                    record.data.len(),
                    preview(&record.data)
                );
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
    println!(
        "{records} records, {} skipped regions; {end}",
        reader.skipped().len()
    );
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
