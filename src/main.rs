//! The `mcpeval` binary: parse arguments, call the library, map errors to exit codes.

use std::process::ExitCode;

use clap::Parser;
use mcpeval::cli::{dispatch, Cli, Exit};

fn main() -> ExitCode {
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
