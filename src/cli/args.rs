//! The command line (clap): raw flags only; `to_overrides` turns them into config layers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{Isolation, Overrides, ProtocolEra};

const EXIT_CODES: &str = "\
Exit codes:
  0  no regression (for now: the run completed)
  1  regression found
  2  usage or input error (bad flags, config or task file)
  3  infrastructure failure (a server would not start, too many infrastructure errors)
  130  interrupted by Ctrl-C (the run directory can be finished with --resume)";

/// mcpeval: did the new version of my MCP server change how models use it?
#[derive(Debug, Parser)]
#[command(name = "mcpeval", version, about, long_about = None, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a task suite against the baseline and candidate servers (no arguments: the embedded demo).
    Run(RunArgs),
    /// Validate or list task suites.
    Tasks {
        #[command(subcommand)]
        action: TasksAction,
    },
    /// Serve the embedded demo MCP server (an issue tracker) over stdio or Streamable HTTP.
    DemoServer(DemoServerArgs),
    /// Serve the simulated model behind an OpenAI-compatible /v1/chat/completions endpoint.
    SimServer(SimServerArgs),
}

#[derive(Debug, Args, Default)]
#[command(after_help = EXIT_CODES)]
pub struct RunArgs {
    /// Config file (TOML). Without it and without --baseline/--candidate, the embedded demo runs.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Baseline server: a command line (split like a shell would, never run by one), an
    /// http(s):// Streamable HTTP URL, `demo:1.4.0`, or a [servers.NAME] from the config.
    #[arg(long, value_name = "SPEC")]
    pub baseline: Option<String>,
    /// Candidate server, in the same forms as --baseline.
    #[arg(long, value_name = "SPEC")]
    pub candidate: Option<String>,
    /// A folder of task YAML files, or one file (repeatable).
    #[arg(long, value_name = "DIR|FILE")]
    pub suite: Vec<PathBuf>,
    /// `sim`, `openai:MODEL` (OPENAI_BASE_URL, OPENAI_API_KEY from the environment) or a
    /// [host.NAME] from the config (repeatable).
    #[arg(long, value_name = "HOST")]
    pub host: Vec<String>,
    /// Trials per task, per side, per host.
    #[arg(long, value_name = "N")]
    pub trials: Option<u32>,
    /// Trials running at once.
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// Run seed: each trial's seed derives from it, the task and the trial index.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The run directory (default: results/<run-id>).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Server sharing between trials: trial (fresh process each), task, or run.
    #[arg(long, value_name = "MODE")]
    pub isolation: Option<Isolation>,
    /// MCP lifecycle for both servers: legacy (initialize), modern (server/discover) or auto.
    #[arg(long, value_name = "ERA")]
    pub protocol_era: Option<ProtocolEra>,
    /// Finish a cut-short run in DIR without repeating its finished trials.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["config", "baseline", "candidate", "suite", "host", "trials", "seed", "out"])]
    pub resume: Option<PathBuf>,
    /// A label stored in run.json (repeatable): --tag branch=main.
    #[arg(long, value_name = "K=V", value_parser = parse_tag)]
    pub tag: Vec<(String, String)>,
}

fn parse_tag(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| format!("expected KEY=VALUE, got `{s}`"))
}

impl RunArgs {
    pub fn to_overrides(&self) -> Overrides {
        Overrides {
            config: self.config.clone(),
            baseline: self.baseline.clone(),
            candidate: self.candidate.clone(),
            suites: self.suite.clone(),
            hosts: self.host.clone(),
            trials: self.trials,
            concurrency: self.concurrency,
            seed: self.seed,
            out_dir: None,
            isolation: self.isolation,
            protocol_era: self.protocol_era,
            tags: self.tag.iter().cloned().collect::<BTreeMap<_, _>>(),
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum TasksAction {
    /// Validate task files: every problem with file, line and column. Exit 2 if any.
    Check {
        /// A folder of task YAML files, or one file (repeatable; default tasks/).
        #[arg(long, value_name = "DIR|FILE")]
        suite: Vec<PathBuf>,
    },
    /// List the tasks of a suite.
    List {
        #[arg(long, value_name = "DIR|FILE")]
        suite: Vec<PathBuf>,
    },
}

#[derive(Debug, Args)]
pub struct DemoServerArgs {
    /// Which release to play: 1.4.0 (baseline) or 1.5.0 (candidate).
    #[arg(long, default_value = "1.4.0")]
    pub release: String,
    /// Serve Streamable HTTP at this address (path /mcp) instead of stdio, e.g. 127.0.0.1:3001.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
}

#[derive(Debug, Args)]
pub struct SimServerArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:8089")]
    pub addr: SocketAddr,
    /// Delay before each answer, to stand in for a real model's latency.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Softmax temperature of the simulated model's tool choice.
    #[arg(long)]
    pub temperature: Option<f64>,
}
