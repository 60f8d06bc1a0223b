//! The `mcpeval` binary: parse arguments, call the library, map errors to exit codes.

use std::process::ExitCode;

use clap::Parser;
use mcpeval::cli::{dispatch, Cli, Exit};

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(Exit::Infra as u8);
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(exit) => ExitCode::from(exit as u8),
        Err(failure) => {
            eprintln!("error: {:#}", failure.error);
            ExitCode::from(failure.exit as u8)
        }
    }
}

/// Rust ignores SIGPIPE, so printing into a closed pipe (`mcpeval plan | head -3`) would panic;
/// the default action ends the process quietly, as command-line tools are expected to. Every
/// file of a run is written before its tables are printed.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
