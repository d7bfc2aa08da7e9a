//! The `strata` command: the demo, table and index administration, import, queries with
//! `explain`, and file tools. `strata --help` lists the commands; the user guide is
//! `docs/guide.md`.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use clap::{Args, Parser, Subcommand, ValueEnum};
use strata::RecoveryMode;
use strata::{
    Db, Hint, IndexOptions, Maintenance, Options, Projection, Query, Record, Scope, StoreOptions,
    TableDef,
};
use strata_cli::expr::{key_literal, parse_order_by, parse_where};
use strata_cli::import::{self, ImportOptions};
use strata_cli::output;
use strata_cli::{demo, ops, wal};

/// Strata: an embedded LSM storage engine with index tables and a cost-based planner.
///
/// Try `strata demo`. Commands that work on a database take `--db DIR`.
#[derive(Parser)]
#[command(name = "strata", version)]
struct Cli {
    /// The database directory.
    #[arg(long, global = true, value_name = "DIR")]
    db: Option<PathBuf>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Build example tables from generated data and show the planner choosing plans.
    Demo {
        /// Keep the database here (default: a temporary directory, removed at the end).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Customers to generate (movies: a quarter as many).
        #[arg(long, default_value_t = demo::DEFAULT_ROWS)]
        rows: u64,
    },
    /// Create, list or drop tables.
    Table {
        #[command(subcommand)]
        command: TableCommand,
    },
    /// Create, list or drop index tables.
    Index {
        #[command(subcommand)]
        command: IndexCommand,
    },
    /// Load a CSV (with a header line) or JSON-lines file into a table.
    Import {
        /// The table.
        table: String,
        /// The file.
        file: PathBuf,
        /// Its format (default: from the extension, then from its first byte).
        #[arg(long, value_enum)]
        format: Option<InputFormat>,
        /// Replace rows whose key exists instead of stopping at them.
        #[arg(long)]
        replace: bool,
        /// Write rows in atomic batches of this many instead of bulk-loading new keys
        /// straight into table files (batches of 1,000 with --replace).
        #[arg(long, value_parser = clap::value_parser!(u64).range(1..=100_000))]
        batch: Option<u64>,
    },
    /// Query a table through the planner.
    Query(QueryArgs),
    /// Read one row by its primary key (one value per key field).
    Get {
        /// The table.
        table: String,
        /// The key's values: numbers are numbers, anything else text; quote a number to
        /// make it text ('42').
        #[arg(required = true, allow_negative_numbers = true)]
        key: Vec<String>,
        /// How to print the row.
        #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
        format: OutputFormat,
    },
    /// Gather statistics for the planner (every table when none is named).
    Analyze {
        /// The table.
        table: Option<String>,
    },
    /// Show the statistics the planner uses for a table.
    Stats {
        /// The table.
        table: String,
    },
    /// Check that every index entry matches its row (every table when none is named).
    Verify {
        /// The table.
        table: Option<String>,
    },
    /// Rebuild a table's index entries from its rows where `verify` finds them wrong.
    Repair {
        /// The table.
        table: String,
    },
    /// Flush and compact every table (or one).
    Compact {
        /// The table.
        table: Option<String>,
    },
    /// Index advice: indexes that do not pay for themselves.
    ///
    /// The usage counts (chosen, lost, fetches) cover one process, so from the command line
    /// only the findings drawn from statistics show (too few distinct values); an
    /// application gets the rest from `Db::index_advice`.
    Advice,
    /// Write-ahead log tools.
    Wal {
        #[command(subcommand)]
        command: WalCommand,
    },
    /// Write a consistent, openable copy of the whole database into TARGET (a new or empty
    /// directory) while it runs: table files hard-linked, the logs' tails copied.
    Checkpoint {
        /// The directory of the copy.
        target: PathBuf,
    },
    /// Incremental backups: take one (`--db DIR backup create`), or list, verify, restore
    /// and purge the backups in a backup directory.
    Backup {
        #[command(subcommand)]
        command: BackupCommand,
    },
    /// Durable change feeds: the committed row changes of some tables, in commit order.
    Feed {
        #[command(subcommand)]
        command: FeedCommand,
    },
    /// SQL through Apache DataFusion: an interactive shell, or `-c SQL`, `-f FILE`,
    /// `--format table|csv|json` (runs the `strata-sql` binary; `strata sql --help`).
    #[command(disable_help_flag = true)]
    Sql {
        /// The shell's arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
}

#[derive(Subcommand)]
enum BackupCommand {
    /// Take a backup of the database (`--db DIR`) into BACKUP_DIR, copying only the files
    /// earlier backups there do not have.
    Create {
        /// The backup directory (created, or made one, when new or empty).
        backup_dir: PathBuf,
    },
    /// List the backups in BACKUP_DIR.
    List {
        /// The backup directory.
        backup_dir: PathBuf,
        /// How to print them.
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
    /// Re-read every file of backup ID and check its size and checksum.
    Verify {
        /// The backup directory.
        backup_dir: PathBuf,
        /// The backup.
        id: u64,
    },
    /// Write backup ID into TARGET (a new or empty directory) as a database.
    Restore {
        /// The backup directory.
        backup_dir: PathBuf,
        /// The backup.
        id: u64,
        /// Where the restored database goes.
        target: PathBuf,
    },
    /// Remove every backup but the newest KEEP, and the files no kept backup uses.
    Purge {
        /// The backup directory.
        backup_dir: PathBuf,
        /// How many of the newest backups to keep.
        #[arg(long, default_value_t = 1)]
        keep: usize,
    },
}

#[derive(Subcommand)]
enum FeedCommand {
    /// Create a feed: it delivers every change to a row of the tables committed from now on.
    Create {
        /// The feed's name.
        name: String,
        /// The tables it covers.
        #[arg(long, required = true, value_delimiter = ',')]
        tables: Vec<String>,
        /// How many bytes of changes it may fall behind before it is lagging (default 1 GiB).
        #[arg(long)]
        max_retained_bytes: Option<u64>,
        /// Keep every change while it lags, instead of releasing them.
        #[arg(long)]
        retain: bool,
    },
    /// List the feeds with their positions, retained bytes and state.
    List {
        /// How to print them.
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
    /// Drop a feed.
    Drop {
        /// The feed.
        name: String,
    },
    /// Print the changes after the feed's position, acknowledging what was printed.
    Tail {
        /// The feed.
        name: String,
        /// Keep waiting for new changes.
        #[arg(long)]
        follow: bool,
        /// How to print them (one JSON object a line with json).
        #[arg(long, value_enum, default_value_t = ListFormat::Table)]
        format: ListFormat,
    },
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ListFormat {
    Table,
    Json,
}

#[derive(Subcommand)]
enum TableCommand {
    /// Create a table (and the database, when the directory holds none).
    Create {
        /// The table's name: letters, digits and '_'.
        name: String,
        /// The primary-key fields, in order (a composite key when several).
        #[arg(long, required = true, value_delimiter = ',')]
        key: Vec<String>,
        /// Shards: each keeps its rows in its own store (1 to 256).
        #[arg(long, default_value_t = 1)]
        shards: u32,
    },
    /// List the tables and their indexes.
    List,
    /// Drop a table and its indexes.
    Drop {
        /// The table.
        name: String,
    },
    /// Set what `analyze` gathers beyond its defaults (replacing what was set), or show it:
    /// field groups estimated together, and per-field most-common list lengths.
    Statistics {
        /// The table.
        name: String,
        /// A field group whose combinations are counted (`origin,carrier`); repeatable.
        #[arg(long = "group", value_name = "FIELDS")]
        groups: Vec<String>,
        /// A field's statistics target (`tailnum=1000`: a most-common list of up to 1,000
        /// values; 1 to 10,000, default 100); repeatable.
        #[arg(long = "target", value_name = "FIELD=N")]
        targets: Vec<String>,
        /// Remove every group and target.
        #[arg(long, conflicts_with_all = ["groups", "targets"])]
        clear: bool,
    },
}

#[derive(Subcommand)]
enum IndexCommand {
    /// Create an index table (existing rows are backfilled).
    Create {
        /// The table.
        table: String,
        /// The index's name.
        name: String,
        /// The indexed fields, in order.
        #[arg(long, required = true, value_delimiter = ',')]
        on: Vec<String>,
        /// Fields the entries carry besides the keys (a covering index for queries that read
        /// only these).
        #[arg(long, value_delimiter = ',', conflicts_with = "all")]
        include: Vec<String>,
        /// Entries carry the whole record.
        #[arg(long)]
        all: bool,
        /// Partition the index by its leading field across the table's shards (maintained
        /// asynchronously).
        #[arg(long)]
        global: bool,
        /// Maintain it through the outbox instead of in each write's batch.
        #[arg(long = "async")]
        asynchronous: bool,
    },
    /// Drop an index.
    Drop {
        /// The table.
        table: String,
        /// The index.
        name: String,
    },
}

#[derive(Args)]
struct QueryArgs {
    /// The table.
    table: String,
    /// Conditions joined by AND and OR, in parentheses, negated by NOT: `field op literal`
    /// with op one of = != < <= > >=, `field [NOT] IN (…)`, `field [NOT] BETWEEN a AND b`,
    /// `field [NOT] LIKE 'pattern'` (% any run, _ one character), `field IS [NOT] NULL`;
    /// strings in quotes.
    #[arg(long = "where", value_name = "EXPR")]
    condition: Option<String>,
    /// The order of the rows, as SQL writes it: `field`, `field DESC`, or several fields
    /// going one way (`year DESC, title DESC`).
    #[arg(long = "order-by", value_name = "ORDER")]
    order_by: Option<String>,
    /// The fields to return (default: the whole record).
    #[arg(long, value_delimiter = ',')]
    select: Vec<String>,
    /// At most this many rows.
    #[arg(long)]
    limit: Option<u64>,
    /// How to print rows (or, with --explain, the plan).
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    format: OutputFormat,
    /// Show the plan and every candidate with its cost, without running the query.
    #[arg(long, conflicts_with = "analyze")]
    explain: bool,
    /// Run the query and show the plan with what it actually read and how long it took.
    #[arg(long)]
    analyze: bool,
    /// Force this index.
    #[arg(long, value_name = "INDEX", conflicts_with = "scan")]
    use_index: Option<String>,
    /// Force a full scan.
    #[arg(long, conflicts_with = "union")]
    scan: bool,
    /// Force reading each member of an OR by its own key or index path.
    #[arg(long, conflicts_with = "use_index")]
    union: bool,
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
enum InputFormat {
    Csv,
    Jsonl,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Table,
    Json,
    Csv,
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

/// A command's failure: one line for standard error.
type Outcome = Result<(), String>;

fn main() -> ExitCode {
    // A bug must still end in one line, not a backtrace.
    std::panic::set_hook(Box::new(|info| {
        let what = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_default();
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("strata: internal error{at}: {what} (this is a bug; please report it)");
    }));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return usage_error(&e),
    };
    if let Command::Sql { args } = &cli.command {
        let Some(db) = &cli.db else {
            eprintln!("strata: this command needs the database directory: --db DIR");
            return ExitCode::from(2);
        };
        return match strata_cli::sql::run(db, args) {
            Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
            Err(message) => {
                eprintln!("strata: {message}");
                ExitCode::FAILURE
            }
        };
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("strata: {message}");
            ExitCode::FAILURE
        }
    }
}

/// Help and version go to standard output as clap writes them; a usage mistake becomes one
/// line on standard error, like every other error.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    if matches!(
        e.kind(),
        ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
    ) {
        let _ = e.print();
        return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        };
    }
    // The message is the lines before the usage; a list ("required arguments: <TABLE>")
    // joins into the one line.
    let text = e.render().to_string();
    let message: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty() && !l.starts_with("tip:"))
        .collect();
    let message = message.join(" ");
    let message = message.strip_prefix("error: ").unwrap_or(&message);
    eprintln!("strata: {message} (see strata --help)");
    ExitCode::from(2)
}

fn run(cli: Cli) -> Outcome {
    let db_dir = cli.db;
    let needs_db = || -> Result<PathBuf, String> {
        db_dir
            .clone()
            .ok_or_else(|| "this command needs the database directory: --db DIR".to_owned())
    };
    match cli.command {
        Command::Demo { dir, rows } => {
            demo::run(dir.as_deref(), rows, &mut io::stdout().lock()).map_err(|e| e.to_string())
        }
        Command::Wal {
            command:
                WalCommand::Dump {
                    file,
                    log_number,
                    mode,
                },
        } => wal::dump(&file, log_number, mode.into(), &mut io::stdout().lock()),
        // Only `table create` may create the database directory.
        Command::Table { command } => {
            let create = matches!(command, TableCommand::Create { .. });
            with_db(&needs_db()?, create, |db| table_command(db, command))
        }
        Command::Index { command } => with_db(&needs_db()?, false, |db| index_command(db, command)),
        Command::Import {
            table,
            file,
            format,
            replace,
            batch,
        } => with_db(&needs_db()?, false, |db| {
            run_import(db, &table, &file, format, replace, batch)
        }),
        Command::Query(args) => with_db(&needs_db()?, false, |db| run_query(db, &args)),
        Command::Get { table, key, format } => {
            with_db(&needs_db()?, false, |db| get_row(db, &table, &key, format))
        }
        Command::Analyze { table } => with_db(&needs_db()?, false, |db| analyze(db, table)),
        Command::Stats { table } => with_db(&needs_db()?, false, |db| {
            let stats = db.planning_statistics(&table).map_err(|e| e.to_string())?;
            print_stats(&table, &stats)
        }),
        Command::Verify { table } => with_db(&needs_db()?, false, |db| verify(db, table)),
        Command::Repair { table } => with_db(&needs_db()?, false, |db| {
            db.wait_for_indexes().map_err(|e| e.to_string())?;
            let report = db.repair(&table).map_err(|e| e.to_string())?;
            out(format_args!(
                "{table}: {} entries written, {} deleted",
                report.entries_put, report.entries_deleted
            ))
        }),
        Command::Compact { table } => with_db(&needs_db()?, false, |db| compact(db, table)),
        Command::Advice => with_db(&needs_db()?, false, advice),
        Command::Checkpoint { target } => with_db(&needs_db()?, false, |db| {
            ops::checkpoint(db, &target, &mut io::stdout().lock())
        }),
        Command::Backup { command } => backup_command(db_dir.as_deref(), command),
        Command::Feed { command } => with_db(&needs_db()?, false, |db| feed_command(db, command)),
        // Handled in `main`: it has its own exit status.
        Command::Sql { .. } => Err("`strata sql` runs apart".into()),
    }
}

/// `strata backup …`: `create` works on the database, the rest on a backup directory alone.
fn backup_command(db: Option<&Path>, command: BackupCommand) -> Outcome {
    let stdout = &mut io::stdout().lock();
    match command {
        BackupCommand::Create { backup_dir } => {
            let db = db.ok_or("backup create needs the database directory: --db DIR")?;
            with_db(db, false, |db| ops::backup_create(db, &backup_dir, stdout))
        }
        BackupCommand::List { backup_dir, format } => {
            ops::backup_list(&backup_dir, format == ListFormat::Json, stdout)
        }
        BackupCommand::Verify { backup_dir, id } => ops::backup_verify(&backup_dir, id, stdout),
        BackupCommand::Restore {
            backup_dir,
            id,
            target,
        } => ops::backup_restore(&backup_dir, id, &target, stdout),
        BackupCommand::Purge { backup_dir, keep } => ops::backup_purge(&backup_dir, keep, stdout),
    }
}

/// `strata --db DIR feed …`.
fn feed_command(db: &Db, command: FeedCommand) -> Outcome {
    let stdout = &mut io::stdout().lock();
    match command {
        FeedCommand::Create {
            name,
            tables,
            max_retained_bytes,
            retain,
        } => ops::feed_create(db, &name, &tables, max_retained_bytes, retain, stdout),
        FeedCommand::List { format } => ops::feed_list(db, format == ListFormat::Json, stdout),
        FeedCommand::Drop { name } => ops::feed_drop(db, &name, stdout),
        FeedCommand::Tail {
            name,
            follow,
            format,
        } => ops::feed_tail(db, &name, follow, format == ListFormat::Json, stdout),
    }
}

/// `strata table create | list | drop | statistics`.
fn table_command(db: &Db, command: TableCommand) -> Outcome {
    match command {
        TableCommand::Create { name, key, shards } => {
            let key: Vec<&str> = key.iter().map(String::as_str).collect();
            db.create_table(&name, &key, strata::TableOptions::default().shards(shards))
                .map_err(|e| e.to_string())?;
            out(format_args!(
                "created table {name} (key {}, {shards} shard{})",
                key.join(", "),
                plural(u64::from(shards))
            ))
        }
        TableCommand::List => {
            let tables = db.tables();
            if tables.is_empty() {
                return out(format_args!("no tables"));
            }
            for t in &tables {
                out(format_args!("{}", describe(t)))?;
            }
            Ok(())
        }
        TableCommand::Drop { name } => {
            db.drop_table(&name).map_err(|e| e.to_string())?;
            out(format_args!("dropped table {name}"))
        }
        TableCommand::Statistics {
            name,
            groups,
            targets,
            clear,
        } => {
            if clear || !groups.is_empty() || !targets.is_empty() {
                let mut options = strata::StatisticsOptions::default();
                for group in &groups {
                    let fields: Vec<&str> = group.split(',').map(str::trim).collect();
                    options = options.group(fields);
                }
                for target in &targets {
                    let (field, n) = target
                        .split_once('=')
                        .ok_or_else(|| format!("--target: expected FIELD=N, got {target:?}"))?;
                    let n: usize = n
                        .trim()
                        .parse()
                        .map_err(|_| format!("--target: {:?} is not a whole number", n.trim()))?;
                    options = options.target(field.trim(), n);
                }
                db.set_statistics(&name, options)
                    .map_err(|e| e.to_string())?;
            }
            let def = db.table(&name).map_err(|e| e.to_string())?;
            let s = &def.statistics;
            if s.is_empty() {
                return out(format_args!("table {name}: default statistics"));
            }
            for group in &s.groups {
                out(format_args!("table {name}: group ({})", group.join(", ")))?;
            }
            for (field, n) in &s.targets {
                out(format_args!("table {name}: target {field} = {n}"))?;
            }
            Ok(())
        }
    }
}

/// `strata index create | drop`.
fn index_command(db: &Db, command: IndexCommand) -> Outcome {
    match command {
        IndexCommand::Create {
            table,
            name,
            on,
            include,
            all,
            global,
            asynchronous,
        } => {
            let projection = if all {
                Projection::All
            } else if include.is_empty() {
                Projection::KeysOnly
            } else {
                Projection::Include(include)
            };
            let options = IndexOptions {
                scope: if global { Scope::Global } else { Scope::Local },
                maintenance: if asynchronous || global {
                    Maintenance::Async
                } else {
                    Maintenance::Sync
                },
                unique: false,
                projection,
            };
            let start = Instant::now();
            db.create_index(&table, &name, &on, options)
                .map_err(|e| e.to_string())?;
            out(format_args!(
                "created index {name} on {table} ({}) in {:.2} s",
                on.join(", "),
                start.elapsed().as_secs_f64()
            ))
        }
        IndexCommand::Drop { table, name } => {
            db.drop_index(&table, &name).map_err(|e| e.to_string())?;
            out(format_args!("dropped index {name} of {table}"))
        }
    }
}

/// `strata get TABLE KEY…`.
fn get_row(db: &Db, table: &str, key: &[String], format: OutputFormat) -> Outcome {
    let key: Vec<strata::Value> = key.iter().map(|k| key_literal(k)).collect();
    let def = db.table(table).map_err(|e| e.to_string())?;
    let Some(row) = db.get(table, &key).map_err(|e| e.to_string())? else {
        let shown: Vec<String> = key.iter().map(ToString::to_string).collect();
        return Err(format!("no row in {table} with key ({})", shown.join(", ")));
    };
    print_rows(&def, None, format, std::iter::once(Ok(row)))
}

/// `strata analyze [TABLE]`.
fn analyze(db: &Db, table: Option<String>) -> Outcome {
    for name in tables_named(db, table.as_deref())? {
        let start = Instant::now();
        let stats = db.analyze(&name).map_err(|e| e.to_string())?;
        out(format_args!(
            "{name}: {} rows, {} fields ({:.2} s)",
            stats.row_count,
            stats.columns.len(),
            start.elapsed().as_secs_f64()
        ))?;
    }
    Ok(())
}

/// `strata verify [TABLE]`: an error when any entry is wrong.
fn verify(db: &Db, table: Option<String>) -> Outcome {
    db.wait_for_indexes().map_err(|e| e.to_string())?;
    let mut problems = 0;
    for name in tables_named(db, table.as_deref())? {
        let report = db.verify(&name).map_err(|e| e.to_string())?;
        problems += report.problem_count();
        out(format_args!("{}", report.to_string().trim_end()))?;
    }
    if problems > 0 {
        return Err(format!(
            "{problems} index entr{} wrong; `strata repair TABLE` rebuilds them",
            if problems == 1 { "y is" } else { "ies are" }
        ));
    }
    Ok(())
}

/// `strata compact [TABLE]`.
fn compact(db: &Db, table: Option<String>) -> Outcome {
    for name in tables_named(db, table.as_deref())? {
        let start = Instant::now();
        db.compact(&name).map_err(|e| e.to_string())?;
        out(format_args!(
            "{name}: compacted in {:.2} s",
            start.elapsed().as_secs_f64()
        ))?;
    }
    Ok(())
}

/// `strata advice`.
fn advice(db: &Db) -> Outcome {
    let advice = db.index_advice().map_err(|e| e.to_string())?;
    if advice.is_empty() {
        return out(format_args!("no indexes"));
    }
    for a in &advice {
        let u = &a.usage;
        out(format_args!(
            "{}.{}: chosen {} times, lost {}, {} entries written",
            a.table, a.index, u.chosen, u.lost, u.entries_written
        ))?;
        for note in &a.notes {
            out(format_args!("  - {note}"))?;
        }
    }
    Ok(())
}

/// Prints one line to standard output; a closed pipe (`strata … | head`) ends quietly.
fn out(line: std::fmt::Arguments) -> Outcome {
    let mut stdout = io::stdout().lock();
    writeln!(stdout, "{line}").or_else(quiet_pipe)
}

/// A write error as the command's outcome: a reader that went away is not a failure.
fn quiet_pipe(e: io::Error) -> Outcome {
    if e.kind() == io::ErrorKind::BrokenPipe {
        Ok(())
    } else {
        Err(format!("cannot write the output: {e}"))
    }
}

fn plural(n: u64) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Opens the database in `dir`, runs `f`, and closes it (syncing the logs).
fn with_db(dir: &Path, create: bool, f: impl FnOnce(&Db) -> Outcome) -> Outcome {
    if !create && !is_database(dir) {
        return Err(format!(
            "{} holds no Strata database (create one with `strata --db {} table create …`)",
            dir.display(),
            dir.display()
        ));
    }
    let options = Options::from(StoreOptions {
        create_if_missing: create,
        ..StoreOptions::default()
    });
    let db = Db::open(dir, options)
        .map_err(|e| format!("cannot open the database in {}: {e}", dir.display()))?;
    let result = f(&db);
    let closed = db.close().map_err(|e| format!("closing the database: {e}"));
    result.and(closed)
}

/// Whether `dir` looks like a database (it has a `CURRENT` file naming its manifest).
fn is_database(dir: &Path) -> bool {
    dir.join("CURRENT").is_file()
}

/// The tables a command covers: the one named (which must exist) or all of them.
fn tables_named(db: &Db, table: Option<&str>) -> Result<Vec<String>, String> {
    match table {
        Some(name) => {
            db.table(name).map_err(|e| e.to_string())?;
            Ok(vec![name.to_owned()])
        }
        None => Ok(db.tables().into_iter().map(|t| t.name).collect()),
    }
}

/// A table's one-paragraph description for `table list`.
fn describe(t: &TableDef) -> String {
    let mut text = format!(
        "{} (key {}; {} shard{})",
        t.name,
        t.primary_key.join(", "),
        t.shards,
        plural(u64::from(t.shards))
    );
    for ix in &t.indexes {
        let projection = match &ix.projection {
            Projection::KeysOnly => "keys only".to_owned(),
            Projection::Include(fields) => format!("include {}", fields.join(", ")),
            Projection::All => "all fields".to_owned(),
        };
        text.push_str(&format!(
            "\n  index {} on ({}): {projection}; {:?}, {:?}, {:?}",
            ix.name,
            ix.fields.join(", "),
            ix.scope,
            ix.maintenance,
            ix.state
        ));
    }
    text
}

fn run_import(
    db: &Db,
    table: &str,
    file: &Path,
    format: Option<InputFormat>,
    replace: bool,
    batch: Option<u64>,
) -> Outcome {
    let format = match format {
        Some(InputFormat::Csv) => import::Format::Csv,
        Some(InputFormat::Jsonl) => import::Format::Jsonl,
        None => match file.extension().and_then(|e| e.to_str()) {
            Some(_) => import::Format::of_path(file),
            None => import::sniff(file).unwrap_or(import::Format::Csv),
        },
    };
    let options = ImportOptions {
        replace,
        bulk: batch.is_none(),
        batch_rows: batch.map_or(1000, |b| usize::try_from(b).unwrap_or(1000)),
        ..ImportOptions::new(format)
    };
    let report = import::import(db, table, file, &options).map_err(|e| e.to_string())?;
    let start = Instant::now();
    db.wait_for_indexes().map_err(|e| e.to_string())?;
    let waited = start.elapsed();
    let types: Vec<String> = report
        .columns
        .iter()
        .map(|(name, ty)| format!("{name} {ty}"))
        .collect();
    if !types.is_empty() {
        out(format_args!("columns: {}", types.join(", ")))?;
    }
    out(format_args!(
        "imported {} rows into {table} in {:.2} s ({:.0} rows/s, {:.1} MB/s){}",
        report.rows,
        report.elapsed.as_secs_f64(),
        report.rows_per_second(),
        report.bytes as f64 / 1e6 / report.elapsed.as_secs_f64().max(1e-9),
        if waited.as_millis() >= 10 {
            format!(
                "; async indexes caught up {:.2} s later",
                waited.as_secs_f64()
            )
        } else {
            String::new()
        }
    ))
}

fn run_query(db: &Db, args: &QueryArgs) -> Outcome {
    let def = db.table(&args.table).map_err(|e| e.to_string())?;
    let mut query = Query::default();
    if let Some(text) = &args.condition {
        query.add_condition(parse_where(text).map_err(|e| format!("--where: {e}"))?);
    }
    if let Some(text) = &args.order_by {
        query.order = Some(parse_order_by(text).map_err(|e| format!("--order-by: {e}"))?);
    }
    if !args.select.is_empty() {
        for field in &args.select {
            strata::table::catalog::validate_field(field).map_err(|e| format!("--select: {e}"))?;
        }
        query.projection = Some(args.select.clone());
    }
    query.limit = args.limit;
    if let Some(index) = &args.use_index {
        query.hint = Some(Hint::Index(index.clone()));
    } else if args.scan {
        query.hint = Some(Hint::Scan);
    } else if args.union {
        query.hint = Some(Hint::Union);
    }
    let json = matches!(args.format, OutputFormat::Json);
    if args.explain {
        let plan = db.explain(&args.table, &query).map_err(|e| e.to_string())?;
        return if json {
            out(format_args!("{}", output::plan_json(&plan, None)))
        } else {
            out(format_args!("{}", plan.to_string().trim_end()))
        };
    }
    if args.analyze {
        let analysis = db
            .explain_analyze(&args.table, &query)
            .map_err(|e| e.to_string())?;
        return if json {
            out(format_args!(
                "{}",
                output::plan_json(&analysis.plan, Some(&analysis))
            ))
        } else {
            out(format_args!("{}", analysis.to_string().trim_end()))
        };
    }
    let rows = db.query(&args.table, &query).map_err(|e| e.to_string())?;
    print_rows(
        &def,
        query.projection.as_deref(),
        args.format,
        rows.map(|r| r.map_err(|e| e.to_string())),
    )
}

/// Prints `rows` through [`output::print_rows`]; a closed pipe ends quietly.
fn print_rows(
    def: &TableDef,
    selected: Option<&[String]>,
    format: OutputFormat,
    rows: impl Iterator<Item = Result<Record, String>>,
) -> Outcome {
    let format = match format {
        OutputFormat::Table => output::Format::Table,
        OutputFormat::Json => output::Format::Json,
        OutputFormat::Csv => output::Format::Csv,
    };
    match output::print_rows(def, selected, format, rows) {
        Ok(()) => Ok(()),
        Err(output::PrintError::Query(e)) => Err(e),
        Err(output::PrintError::Io(e)) => quiet_pipe(e),
    }
}

/// `strata stats`: [`output::stats_text`], printed.
fn print_stats(table: &str, stats: &strata::TableStats) -> Outcome {
    out(format_args!("{}", output::stats_text(table, stats)))
}
