//! The `mcpeval` binary: parse arguments, call the library, map its outcome or error to one of
//! the documented exit codes (`mcpeval::error::Exit`).

use std::process::ExitCode;

use clap::Parser;
use mcpeval::cli::out::{err_line, reader_gone, BROKEN_PIPE_EXIT};
use mcpeval::cli::{dispatch, Cli};
use mcpeval::error::Exit;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            err_line(format_args!("error: cannot start the async runtime: {e}"));
            return ExitCode::from(Exit::Infra.code());
        }
    };
    let exit = match runtime.block_on(dispatch(cli)) {
        Ok(exit) => exit,
        Err(failure) => {
            err_line(format_args!("error: {:#}", failure.error));
            failure.exit
        }
    };
    // A reader of standard output that went away ends the process as SIGPIPE would have.
    if reader_gone() {
        return ExitCode::from(BROKEN_PIPE_EXIT);
    }
    ExitCode::from(exit.code())
}
