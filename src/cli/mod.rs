//! The command line: clap definitions and the commands, resolved into library calls.

mod agree_cmd;
mod args;
mod boundary_cmd;
mod cassette_cmd;
mod check_cmd;
mod compare_cmd;
mod diff_cmd;
mod explain_cmd;
mod history_cmd;
mod hosts;
mod init_cmd;
mod merge_cmd;
mod nightly_cmd;
pub mod out;
mod plan_cmd;
mod progress;
mod run_cmd;
mod serve_cmd;
mod snapshot_cmd;
mod tasks_cmd;

pub use crate::error::{Exit, Failure};
pub use crate::suite::DEMO_SUITE;
pub use args::MergeArgs;
pub use args::{AgreeArgs, CheckArgs, ExplainArgs, HistoryArgs, InitArgs, NightlyArgs};
pub use args::{
    CassetteAction, Cli, Command, CompareArgs, DemoServerArgs, DiffArgs, PlanArgs, RunArgs,
    SimServerArgs, SnapshotArgs, TasksAction,
};

/// Runs a parsed command line. Without a subcommand it prints the usage (exit 2) rather than
/// start a run nobody asked for: the demo is `mcpeval run` with no arguments.
pub async fn dispatch(cli: Cli) -> Result<Exit, Failure> {
    match cli.command {
        None => {
            let mut command = <Cli as clap::CommandFactory>::command();
            out::outln!("{}", command.render_help());
            Ok(Exit::Usage)
        }
        Some(Command::Run(args)) => run_cmd::run_command(&args).await,
        Some(Command::Compare(args)) => compare_cmd::compare(&args),
        Some(Command::Explain(args)) => explain_cmd::explain(&args).await,
        Some(Command::Agree(args)) => agree_cmd::agree(&args),
        Some(Command::Plan(args)) => plan_cmd::plan(&args),
        Some(Command::Snapshot(args)) => snapshot_cmd::snapshot(&args).await,
        Some(Command::Diff(args)) => diff_cmd::diff(&args),
        Some(Command::Merge(args)) => merge_cmd::merge(&args),
        Some(Command::Nightly(args)) => nightly_cmd::nightly(&args).await,
        Some(Command::History(args)) => history_cmd::history(&args),
        Some(Command::Check(args)) => check_cmd::check(&args).await,
        Some(Command::Init(args)) => init_cmd::init(&args).await,
        Some(Command::Cassette { action }) => cassette_cmd::cassette(action),
        Some(Command::Tasks { action }) => match action {
            TasksAction::Check {
                suite,
                server,
                config,
            } => tasks_cmd::check(&suite, &server, config.as_deref()).await,
            TasksAction::List { suite } => tasks_cmd::list(&suite),
            TasksAction::Boundary {
                diff,
                out,
                baseline_snapshot,
                candidate_snapshot,
                force,
            } => boundary_cmd::boundary(boundary_cmd::Boundary {
                diff: &diff,
                out: &out,
                baseline: baseline_snapshot.as_deref(),
                candidate: candidate_snapshot.as_deref(),
                force,
            }),
            TasksAction::Import {
                from,
                files,
                out,
                judge_host,
                force,
            } => tasks_cmd::import(from, files, out, judge_host, force),
        },
        Some(Command::DemoServer(args)) => {
            if !crate::mcp::demo::RELEASES.contains(&args.release.as_str()) {
                return Err(Failure::usage(anyhow::anyhow!(
                    "unknown demo release `{}`: expected one of {}",
                    args.release,
                    crate::mcp::demo::RELEASES.join(", ")
                )));
            }
            if let Some(n) = args.crash_after {
                // The handler reads this knob at each tool call. Setting the environment is
                // unsound only while another thread reads or writes it: nothing runs yet but
                // this task (the runtime's workers are idle).
                std::env::set_var("MCPEVAL_DEMO_CRASH_AFTER", n.to_string());
            }
            // The same holds for the two knobs below.
            if let Some(versions) = &args.discover_versions {
                std::env::set_var(crate::mcp::demo::quirks::DISCOVER_VERSIONS_ENV, versions);
            }
            if args.deprecated {
                std::env::set_var(crate::mcp::demo::quirks::DEPRECATED_ENV, "1");
            }
            if args.deny_all {
                std::env::set_var(crate::mcp::demo::DENY_ALL_ENV, "1");
            }
            if let Some(ms) = args.settle_ms {
                std::env::set_var(crate::mcp::demo::quirks::SETTLE_MS_ENV, ms.to_string());
            }
            match args.http {
                Some(addr) => crate::mcp::demo::serve_http(&args.release, addr).await?,
                None => crate::mcp::demo::serve_stdio(&args.release).await?,
            }
            Ok(Exit::Ok)
        }
        Some(Command::Serve(args)) => serve_cmd::serve(&args).await,
        Some(Command::SimServer(args)) => {
            let mut config = crate::sim::SimConfig::default();
            if let Some(t) = args.temperature {
                config.temperature = t;
            }
            let faults = crate::sim::server::FaultConfig {
                fail_rate: args.fail_rate,
                statuses: if args.status.is_empty() {
                    vec![503]
                } else {
                    args.status
                },
                retry_after: args.retry_after,
                hang: args.hang_ms.map(std::time::Duration::from_millis),
                garbage_rate: args.garbage_rate,
                max_in_flight: args.max_in_flight,
                seed: args.fault_seed,
                ramble_rate: args.ramble_rate,
                stall_rate: args.stall_rate,
                token_interval: std::time::Duration::from_millis(args.token_ms),
            };
            faults.validate()?;
            let options = crate::sim::server::ServeOptions {
                latency: std::time::Duration::from_millis(args.latency_ms),
                faults,
                relabel_stream: args.relabel_stream,
                refuse_stream: args.refuse_stream,
                tool_calls_as_text: args.tool_calls_as_text,
                record_requests: args.record_requests,
                ..Default::default()
            };
            crate::sim::server::serve(args.addr, config, options).await?;
            Ok(Exit::Ok)
        }
    }
}
