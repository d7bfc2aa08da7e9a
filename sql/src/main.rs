//! `strata-sql`: the SQL shell over a Strata database, also run as `strata --db DIR sql`.
//!
//! ```text
//! strata-sql --db DIR                      # interactive, with history
//! strata-sql --db DIR -c "SELECT …" [--format table|csv|json]
//! strata-sql --db DIR -f script.sql        # statements separated by ';'
//! strata-sql --db DIR < script.sql         # the same, from standard input
//! ```
//!
//! In `-c`, `-f` and script mode the first statement that fails stops the run: one line on
//! standard error and exit status 1. The interactive shell prints the error and goes on.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, ValueEnum};
use rustyline::error::ReadlineError;
use strata::{Db, Options};
use strata_sql::SqlSession;
use strata_sql::shell::{Flow, Format, Shell, split_statements};

/// SQL over a Strata database, through Apache DataFusion.
#[derive(Parser)]
#[command(name = "strata-sql", version)]
struct Cli {
    /// The database directory.
    #[arg(long, value_name = "DIR")]
    db: PathBuf,
    /// Run these statements and exit (may be given more than once).
    #[arg(short = 'c', long = "command", value_name = "SQL")]
    command: Vec<String>,
    /// Run the statements of this file and exit.
    #[arg(short = 'f', long = "file", value_name = "FILE")]
    file: Option<PathBuf>,
    /// How to print results.
    #[arg(long, value_enum, default_value_t = OutputFormat::Table)]
    format: OutputFormat,
}

#[derive(Clone, Copy, ValueEnum)]
enum OutputFormat {
    Table,
    Csv,
    Json,
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("strata sql: {message}");
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> Result<(), String> {
    let format = match cli.format {
        OutputFormat::Table => Format::Table,
        OutputFormat::Csv => Format::Csv,
        OutputFormat::Json => Format::Json,
    };
    if !cli.db.is_dir() {
        return Err(format!("no database at {}", cli.db.display()));
    }
    let db = Db::open(&cli.db, Options::default()).map_err(|e| e.to_string())?;
    let session = SqlSession::new(Arc::new(db)).map_err(|e| e.to_string())?;
    let stdout = std::io::stdout();
    let mut shell = Shell::new(&session, format, stdout.lock());
    if !cli.command.is_empty() || cli.file.is_some() {
        for command in &cli.command {
            shell.run_script(command)?;
        }
        if let Some(file) = &cli.file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
            shell.run_script(&text)?;
        }
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read standard input: {e}"))?;
        return shell.run_script(&text);
    }
    interactive(&mut shell)
}

/// The prompt loop: a statement runs when a line ends it with `;`; a line starting with `\`
/// is a meta-command. Errors are printed and the loop goes on.
fn interactive<W: Write>(shell: &mut Shell<'_, W>) -> Result<(), String> {
    let mut editor = rustyline::DefaultEditor::new().map_err(|e| e.to_string())?;
    let history = std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".strata_sql_history"));
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    println!("strata sql — statements end with ';', \\? for help, \\q to quit");
    let mut buffer = String::new();
    loop {
        let prompt = if buffer.is_empty() {
            "strata> "
        } else {
            "   ...> "
        };
        let line = match editor.readline(prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                buffer.clear();
                continue;
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.to_string()),
        };
        if buffer.is_empty() && line.trim_start().starts_with('\\') {
            let _ = editor.add_history_entry(line.as_str());
            match shell.meta(line.trim_start()[1..].trim()) {
                Ok(Flow::Quit) => break,
                Ok(Flow::Continue) => {}
                Err(e) => eprintln!("error: {e}"),
            }
            continue;
        }
        buffer.push_str(&line);
        buffer.push('\n');
        let (statements, rest) = split_statements(&buffer);
        if statements.is_empty() && !rest.is_empty() {
            continue;
        }
        let _ = editor.add_history_entry(buffer.trim_end());
        for statement in statements {
            if let Err(e) = shell.statement(&statement) {
                eprintln!("error: {e}");
            }
        }
        buffer = rest;
    }
    if let Some(path) = &history {
        let _ = editor.save_history(path);
    }
    Ok(())
}
