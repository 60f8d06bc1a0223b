//! Printing to stdout for the commands: a reader that went away (`mcpeval plan | head -3`) is
//! noted, the command goes on to its end (a run still writes its files), and `main` then exits
//! quietly with the status a SIGPIPE would give (141), instead of a panic.
//!
//! SIGPIPE itself stays ignored (Rust's default): mcpeval writes to the stdin of stdio MCP
//! servers, and a server that exits early must be an error of that server, not the end of the
//! run.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

/// `println!` for command output; see the module.
macro_rules! outln {
    () => { $crate::cli::out::line(format_args!("")) };
    ($($arg:tt)*) => { $crate::cli::out::line(format_args!($($arg)*)) };
}
pub(crate) use outln;

/// `print!` for command output; see the module.
macro_rules! out {
    ($($arg:tt)*) => { $crate::cli::out::text(format_args!($($arg)*)) };
}
pub(crate) use out;

/// `eprintln!` that never panics: a closed stderr (`mcpeval run 2>&1 | head -1`) loses the line,
/// not the run.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::cli::out::err_line(format_args!($($arg)*)) };
}
pub(crate) use errln;

/// A line on stderr; a write that fails is dropped (nothing better is left to do with it).
pub fn err_line(args: std::fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr
        .write_fmt(args)
        .and_then(|()| stderr.write_all(b"\n"));
}

/// The exit status of a process ended by SIGPIPE (128 + 13), as shells report it.
pub const BROKEN_PIPE_EXIT: u8 = 141;

/// Set when a write to stdout found its reader gone.
static READER_GONE: AtomicBool = AtomicBool::new(false);

/// Whether standard output's reader went away while the command ran.
pub fn reader_gone() -> bool {
    READER_GONE.load(Ordering::Relaxed)
}

pub fn line(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(args)
        .and_then(|()| stdout.write_all(b"\n"));
    settle(written);
}

pub fn text(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout.write_fmt(args).and_then(|()| stdout.flush());
    settle(written);
}

fn settle(written: std::io::Result<()>) {
    if let Err(e) = written {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            READER_GONE.store(true, Ordering::Relaxed);
        }
        // Any other failure (a full disk behind a redirect) leaves nothing better to do than
        // go on: the run's files are written apart from this output.
    }
}
