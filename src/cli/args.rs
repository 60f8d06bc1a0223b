//! The command line (clap): raw flags only; `to_overrides` turns them into config layers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::config::{Isolation, Overrides, ProtocolEra};
use crate::stats::Adjustment;

/// The exit codes of a run (`mcpeval --help`, `run --help`).
macro_rules! exit_codes {
    () => {
        "\
Exit codes:
  0  no regression on a gated metric
  1  regression: a gated metric (default: success, tool_calls, tool_errors, total_tokens)
     regressed, significant after correction and beyond the margin
  2  usage or input error (bad flags, config, task file or run directory), before anything starts
  3  infrastructure failure (a server would not start before the first trial, the message
     naming the side; or more infrastructure errors than [stats] max_infra_share, default
     10 %, of the episodes, a server that fails to start for a trial being one)
  130  interrupted by Ctrl-C, SIGTERM or SIGHUP (the run directory can be finished with --resume)
  141  standard output's reader went away (the command still ran to its end)
Without a command, mcpeval prints this usage and exits 2; the demo is `mcpeval run`.

More: docs/exit-codes.md"
    };
}

/// The environment variables of a run's config layers and hosts (`run`, `nightly`).
macro_rules! run_env {
    () => {
        "\
Environment:
  MCPEVAL_TRIALS, MCPEVAL_CONCURRENCY, MCPEVAL_SEED
      trials, concurrency and seed, over the config file's values (a flag overrides them)
  OPENAI_API_KEY, OPENAI_BASE_URL
      the openai:MODEL, openai-responses:MODEL and codex hosts' key and endpoint (a [host.NAME]
      may name other variables: api_key_env, base_url_env)
  ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL
      the anthropic:MODEL and claude-code hosts'
  GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL
      the gemini-cli host's
  GITHUB_STEP_SUMMARY
      a file summary.md is appended to when set (GitHub Actions sets it)
  $VAR and ${VAR} in the config (a server's env and headers, a host's headers, [auth.NAME])
  are read from the environment too; a variable that is not set is an error."
    };
}

/// `GITHUB_STEP_SUMMARY`, for the commands that write summary.md (`compare`, `merge`).
macro_rules! step_summary_env {
    () => {
        "\
Environment:
  GITHUB_STEP_SUMMARY  a file summary.md is appended to when set (GitHub Actions sets it)"
    };
}

/// `mcpeval --help`: the exit codes, then which command reads which environment variable.
const MAIN_HELP: &str = concat!(
    exit_codes!(),
    "\n\n",
    "\
Environment (each command's --help says which it reads):
  MCPEVAL_TRIALS, MCPEVAL_CONCURRENCY, MCPEVAL_SEED   run, check, nightly, plan --suite
  OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL, GEMINI_API_KEY,
  GOOGLE_GEMINI_BASE_URL                              run, check, nightly (the hosts' keys)
  GITHUB_STEP_SUMMARY                                 run, check, compare, merge, nightly
  MCPEVAL_CONFORMANCE                                 check (--conformance)
  MCPEVAL_HISTORY                                     history (--file)
  MCPEVAL_DEMO_CRASH_AFTER, MCPEVAL_DEMO_DISCOVER_VERSIONS, MCPEVAL_DEMO_DEPRECATED,
  MCPEVAL_DEMO_DENY_ALL, MCPEVAL_DEMO_SETTLE_MS       demo-server (its fault flags)"
);

/// `run --help`: the environment, then the exit codes.
const RUN_HELP: &str = concat!(run_env!(), "\n\n", exit_codes!());

/// mcpeval: did the new version of my MCP server change how models use it?
#[derive(Debug, Parser)]
#[command(name = "mcpeval", version, about, long_about = None, after_help = MAIN_HELP)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a task suite against the baseline and candidate servers (no arguments: the embedded demo).
    ///
    /// More: docs/hosts.md (hosts and models), docs/statistics.md (how the verdicts are reached).
    Run(RunArgs),
    /// Validate, list or import task suites (from mcpchecker or promptfoo files), or write call
    /// tasks from a diff (`boundary`).
    ///
    /// More: docs/task-format.md.
    Tasks {
        #[command(subcommand)]
        action: TasksAction,
    },
    /// Recompute the comparison, verdicts and reports of a run from its stored episodes.
    Compare(CompareArgs),
    /// Why a run regressed: each change of its diff undone alone on the candidate (overlays),
    /// tried with the run's hosts, seeds and trials, and tested against the run's own episodes.
    ///
    /// More: docs/explain.md.
    Explain(ExplainArgs),
    /// Do two hosts' verdicts agree? Cohen's kappa of the tasks' success verdicts, Spearman's
    /// rho of their deltas, the tasks they disagree on (two runs, or one run of several hosts).
    ///
    /// More: docs/hosts.md#host-agreement.
    Agree(AgreeArgs),
    /// Trials per side that Fisher's exact test needs to detect a drop in success rate.
    Plan(PlanArgs),
    /// Snapshot a server's contract: its tools, resources, templates, prompts, handshake facts
    /// and error semantics, normalized into a directory.
    Snapshot(SnapshotArgs),
    /// Diff two contract snapshots and classify each change (exit 1 if any breaks clients).
    Diff(DiffArgs),
    /// Join the shards of a run (`mcpeval run --shard I/N`) into one run directory and compare
    /// it once.
    Merge(MergeArgs),
    /// One nightly eval (snapshot, diff, triggered run, compare, drift, history), now or on a
    /// cron schedule.
    Nightly(NightlyArgs),
    /// The trend of task results across nightly runs, from the history file.
    History(HistoryArgs),
    /// The whole regression check, cheapest stage first: smoke, contract, conformance,
    /// deprecations, evaluation; one verdict (exit 1 if any stage fails)
    Check(CheckArgs),
    /// Draft a starter suite from a live server: call tasks (no model) that pin what it answers
    /// today and model tasks, verified against it. A tool not annotated readOnlyHint: true is
    /// called only on --sandbox copies, a server that keeps no state beyond its process, or
    /// with --allow-writes; elsewhere its tasks are drafted unverified (DIR/unverified.yaml).
    Init(InitArgs),
    /// Read cassettes (`run --record` writes them): check and summarize.
    Cassette {
        #[command(subcommand)]
        action: CassetteAction,
    },
    /// Serve the embedded demo MCP server (an issue tracker) over stdio or Streamable HTTP.
    ///
    /// More: docs/hosts.md.
    DemoServer(DemoServerArgs),
    /// Serve any server (--base) with an overlay file over its lists or a cassette's answers to
    /// its calls, or a cassette alone, over stdio or Streamable HTTP. With neither, a bridge:
    /// any stdio server over HTTP.
    Serve(ServeArgs),
    /// Serve the simulated model behind an OpenAI-compatible /v1/chat/completions endpoint,
    /// Anthropic's /v1/messages (streaming or not; count_tokens), OpenAI's /v1/responses
    /// (streaming or not) and Gemini's /v1beta/models/M:generateContent (also
    /// :streamGenerateContent, :countTokens), for the API and app hosts.
    SimServer(SimServerArgs),
}

#[derive(Debug, Args, Default)]
#[command(after_help = RUN_HELP)]
pub struct RunArgs {
    /// Config file (TOML). Without it and without --baseline/--candidate, the embedded demo runs.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Baseline server: a command line (split like a shell would, never run by one), an
    /// http(s):// Streamable HTTP URL, `demo:1.4.0`, `overlay:FILE+SPEC` (an overlay file over
    /// any spec: see `mcpeval serve --help`), `replay:CASSETTE+SPEC` (SPEC's lists, its calls
    /// answered from a cassette of --record), or a [servers.NAME] from the config. One word that
    /// is neither a [servers.NAME] nor a program on PATH is a usage error (exit 2).
    #[arg(long, value_name = "SPEC")]
    pub baseline: Option<String>,
    /// Candidate server, in the same forms as --baseline.
    #[arg(long, value_name = "SPEC")]
    pub candidate: Option<String>,
    /// A folder of task YAML files, or one file (repeatable). A task's `expect.judge: {rubric,
    /// host}` is a model-graded check: that host (`openai:MODEL`, `anthropic:MODEL` or a
    /// [host.NAME]; `sim` cannot judge) grades each trial, its tokens kept apart in
    /// judge_input_tokens / judge_output_tokens; a judge that fails is an infrastructure error.
    #[arg(long, value_name = "DIR|FILE")]
    pub suite: Vec<PathBuf>,
    /// `sim` (the embedded simulated model), `openai:MODEL` (any OpenAI-compatible
    /// chat-completions endpoint; OPENAI_BASE_URL, OPENAI_API_KEY from the environment),
    /// `openai-responses:MODEL` (OpenAI's Responses API, stateless; the same variables),
    /// `anthropic:MODEL` (the Messages API; ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL from the
    /// environment), `claude-code[:MODEL]` (Claude Code runs each trial itself, headless: `claude`
    /// from PATH in a private HOME, the side's server in its --mcp-config, every server tool
    /// allowed; ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY passed on from the environment; no seed),
    /// `codex[:MODEL]` (Codex CLI runs each trial itself: `codex exec --json` from PATH with a
    /// private CODEX_HOME whose config.toml names the side's server and a Responses API provider
    /// at OPENAI_BASE_URL, key from OPENAI_API_KEY; no seed, no turn limit: the host's timeout
    /// bounds a trial), `gemini-cli[:MODEL]` (Gemini CLI runs each trial itself: `gemini -p …
    /// --output-format stream-json` from PATH in a private HOME whose settings.json names the
    /// side's server; GOOGLE_GEMINI_BASE_URL, GEMINI_API_KEY passed on; no seed) or a
    /// [host.NAME] from the config (repeatable) [default: the config's hosts; `sim` for the demo
    /// alone (no servers named, or both `demo:VERSION`): elsewhere a run of model tasks needs a
    /// host, since the simulated model is not for judging a server].
    #[arg(long, value_name = "HOST")]
    pub host: Vec<String>,
    /// Trials per task, per side, per host [default: 10, or the config's; env: MCPEVAL_TRIALS].
    #[arg(long, value_name = "N")]
    pub trials: Option<u32>,
    /// Trials running at once [default: 8, or the config's; env: MCPEVAL_CONCURRENCY].
    #[arg(long, value_name = "N")]
    pub concurrency: Option<usize>,
    /// Run seed: each trial's seed derives from it, the task and the trial index [default: 42,
    /// or the config's; env: MCPEVAL_SEED].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// The run directory [default: results/<run-id>, or <the config's out_dir>/<run-id>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Server sharing between trials: trial (fresh process each), task, or run [default: trial,
    /// or the config's].
    #[arg(long, value_name = "MODE")]
    pub isolation: Option<Isolation>,
    /// MCP lifecycle for both servers: legacy (initialize), modern (server/discover) or auto
    /// [default: auto, or the server's in the config].
    #[arg(long, value_name = "ERA")]
    pub protocol_era: Option<ProtocolEra>,
    /// The order each host lists the servers' tools in, before a profile's max_tools cuts the
    /// list: server (as tools/list gives them), reverse, or shuffle (a permutation per trial
    /// seed; the tools both sides list keep one relative order in a pair) [default: server, or
    /// the config's [profile] tool_order]. More: docs/hosts.md (Tool order).
    #[arg(long, value_name = "ORDER")]
    pub tool_order: Option<crate::config::ToolOrder>,
    /// Make the tool calls a model writes as text instead of calling (a JSON block, a
    /// <tool_call> or <function=…> element naming an offered tool) as if it had made them, on
    /// both sides alike: the conversation goes on with their results. Recovered calls count as
    /// calls and are also counted apart (recovered_calls); calls whose arguments do not parse
    /// are not made (unparsed_text_calls). API hosts only [default: off, or the config's
    /// recover_text_calls]. More: docs/hosts.md (Recovered text calls).
    #[arg(long)]
    pub recover_text_calls: bool,
    /// What of the servers each API host shows its model, comma-separated: tools (the
    /// default), resources (two host tools, list_resources and read_resource, and a task's
    /// `attach:`), prompts (a task may start from a server prompt: `prompt: {server_prompt:
    /// NAME}`). App hosts are refused: they decide what they show [default: tools, or the
    /// config's [profile] expose]. More: docs/hosts.md (Exposure).
    #[arg(long, value_name = "PARTS", value_delimiter = ',')]
    pub expose: Option<Vec<crate::config::Exposed>>,
    /// For tasks with a simulated user (`user:`): each candidate trial runs after its baseline
    /// trial and its user sends the baseline trial's recorded user messages, in order, so the
    /// sides can be compared turn by turn; when the candidate's conversation needs more turns
    /// than were recorded, its user host writes the rest (the report says how many). Not with
    /// --adaptive. More: docs/task-format.md (Simulated user).
    #[arg(long, conflicts_with = "adaptive")]
    pub replay_user_turns: bool,
    /// Make the candidate side the stale-list window of a deploy: each candidate trial is
    /// offered the baseline's tool list (names, descriptions, schemas), as a client whose cached
    /// tools/list has not yet expired (its ttlMs) still offers it, while every call goes to the
    /// candidate under the name the model used; the server instructions stay the candidate's.
    /// Compared with the baseline and gated as usual, [renames] not followed. The report counts,
    /// per task, the calls to tools the candidate no longer lists, its answers to them (-32602
    /// …) and the failed trials, and shows the baseline's ttlMs as the window's length (and the
    /// candidate's, for the next deploy). Call tasks are left out (they are offered no list);
    /// not with app hosts or replay: servers (exit 2). More: docs/hosts.md (The stale-list
    /// window).
    #[arg(long)]
    pub stale_list: bool,
    /// How each API host's model finds the servers' tools: native (Anthropic's tool-search
    /// tool, every server tool sent with defer_loading: true; anthropic hosts only) or emulated
    /// (mcpeval's search_tools host tool over a BM25 index of the tools' names, titles and
    /// descriptions; no server tool is offered until a search loads it). Each episode records
    /// the searches made, found_rank and found_at_k; the comparison gets a gated found_at_k row
    /// per task. App hosts are refused [default: off, or the config's [profile] tool_search].
    /// More: docs/hosts.md (Tool search).
    #[arg(long, value_name = "MODE")]
    pub tool_search: Option<crate::config::ToolSearch>,
    /// With --tool-search: a task's tool counts as found when a search ranks it within N; an
    /// emulated search returns and loads N tools [default: 5, or the config's [profile]
    /// tool_search_k].
    #[arg(long, value_name = "N", requires = "tool_search")]
    pub tool_search_k: Option<usize>,
    /// Finish a cut-short run in DIR without repeating its finished trials.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["config", "baseline", "candidate", "suite", "host", "trials", "seed", "out", "trigger", "auto_trigger", "adaptive", "max_trials", "trial_budget", "tool_order", "recover_text_calls", "replay_user_turns", "expose", "stale_list", "tool_search", "tool_search_k"])]
    pub resume: Option<PathBuf>,
    /// Adaptive trials ([stats] adaptive = true): each task runs in looks of [stats] look_every
    /// trials per side (5) up to --max-trials, and stops once its verdict is settled (futility,
    /// no change, or a regression or improvement no remaining trial could undo); a config's
    /// `trials` is then ignored (and --trials not allowed). comparison.* gets `trials_run` and
    /// `stopped` per task row.
    #[arg(long, conflicts_with = "trials")]
    pub adaptive: bool,
    /// With --adaptive: at most N trials per task and side [default: 30, or the config's [stats]
    /// max_trials].
    #[arg(long, value_name = "N", requires = "adaptive")]
    pub max_trials: Option<u32>,
    /// With --adaptive: N trials per side for the whole run ([stats] trial_budget). Each look
    /// goes to the tasks not yet settled, the likeliest regressions first; a task the budget
    /// cannot give its next look stops (`stopped = budget`) [default: no budget, or the config's].
    #[arg(long, value_name = "N", requires = "adaptive")]
    pub trial_budget: Option<u64>,
    /// A label stored in run.json (repeatable): --tag branch=main.
    #[arg(long, value_name = "K=V", value_parser = parse_tag)]
    pub tag: Vec<(String, String)>,
    /// Multiple-comparison correction across the tasks of each metric: holm (family-wise
    /// error) or bh (Benjamini–Hochberg false discovery rate) [default: holm, or the config's
    /// [stats] correction].
    #[arg(long, value_name = "METHOD")]
    pub correction: Option<Adjustment>,
    /// Run only if a change in this diff (from `mcpeval diff --out`) affects models, and only
    /// the tasks it touches, every no-tool task and the regression set; nothing to run: exit 0.
    #[arg(long, value_name = "DIFF.json", conflicts_with = "auto_trigger")]
    pub trigger: Option<PathBuf>,
    /// Follow the tools this diff (from `mcpeval diff --out`) found renamed: on the candidate
    /// side, tasks expecting, forbidding or calling the old name are graded (and call tasks
    /// call) with the new one, so they measure the model rather than the rename. Adds to the
    /// config's `[renames]` (old = "new"); run.json and summary.md list the renames applied.
    /// App hosts' allow-lists keep the baseline's names.
    #[arg(long, value_name = "DIFF.json")]
    pub follow_renames: Option<PathBuf>,
    /// Snapshot and diff both servers first (kept in RUN_DIR/contract/), stop with exit 1 on a
    /// change that breaks clients (unless --allow-breaking), then run as with --trigger.
    #[arg(long)]
    pub auto_trigger: bool,
    /// With --auto-trigger: go on even when a change breaks clients.
    #[arg(long, requires = "auto_trigger")]
    pub allow_breaking: bool,
    /// Ask the model every time: neither read nor write the response cache (<out_dir>/.cache,
    /// default results/.cache), which otherwise answers a request it has seen before (same
    /// model, endpoint, request, task, side and trial) with the stored answer. The sim host is
    /// never cached.
    #[arg(long)]
    pub no_cache: bool,
    /// Run only shard I of N (1-based: 1/3, 2/3, 3/3) of the (task, host, trial) units, both
    /// sides of each; every machine of a CI matrix runs one, `mcpeval merge` joins them. A
    /// shard exits 0 on a regression: the verdict is the merge's.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::rundir::Shard>,
    /// Run the embedded demo servers (1.4.0 → 1.5.0) with your --suite or --host: without it, a
    /// run given a suite or hosts but no servers (--baseline/--candidate or a --config naming
    /// them) is refused rather than quietly run against the demo.
    #[arg(long, conflicts_with_all = ["config", "baseline", "candidate", "resume"])]
    pub demo_servers: bool,
    /// Write the `result_snapshot` files of the call tasks (`__snapshots__/` beside each task
    /// file) from the baseline's answers, comparing none. Without it every snapshot is compared
    /// on both sides, and a missing one stops the run before its first trial (exit 2).
    #[arg(long, conflicts_with = "resume")]
    pub update_snapshots: bool,
    /// After the verdict, say why the run regressed: `mcpeval explain` on its directory, with
    /// its default budget (docs/explain.md). The run's exit code stays the verdict's.
    #[arg(long)]
    pub explain: bool,
    /// Record each side's server traffic into DIR/baseline.cassette.jsonl and
    /// DIR/candidate.cassette.jsonl (written when the trials end, also when cut short): the
    /// handshake and lists, and every tools/call, resources/read and prompts/get with its
    /// answers in order, secrets redacted as in transcripts. App hosts (claude-code, codex,
    /// gemini-cli) talk to the server themselves: their traffic is not recorded.
    #[arg(long, value_name = "DIR", conflicts_with = "resume")]
    pub record: Option<PathBuf>,
    #[command(flatten)]
    pub writes: WriteArgs,
}

#[derive(Debug, Args, Default)]
#[command(after_help = CHECK_HELP)]
pub struct CheckArgs {
    /// Config file (TOML): servers, suite, hosts as for `run`, and a [check] table. Without it
    /// and without --candidate, the embedded demo pair (1.4.0 → 1.5.0) is checked.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Baseline server (as for `run`). Without one, --baseline-snapshot stands for the
    /// baseline, and the stages that need a running baseline are skipped.
    #[arg(long, value_name = "SPEC")]
    pub baseline: Option<String>,
    /// A snapshot directory kept in the repository (`mcpeval snapshot` writes one) to diff the
    /// candidate's contract against [default: the config's [check] baseline_snapshot].
    #[arg(long, value_name = "DIR")]
    pub baseline_snapshot: Option<PathBuf>,
    /// Candidate server (as for `run`).
    #[arg(long, value_name = "SPEC")]
    pub candidate: Option<String>,
    /// A folder of task YAML files, or one file (repeatable): its call tasks run in the smoke
    /// stage, its model tasks in the evaluation.
    #[arg(long, value_name = "DIR|FILE")]
    pub suite: Vec<PathBuf>,
    /// The evaluation's hosts, as for `run` (repeatable) [default: the config's hosts; the
    /// simulated model `sim` only for the embedded demo]. Without one the evaluation is skipped.
    #[arg(long, value_name = "HOST")]
    pub host: Vec<String>,
    /// The stages to run, comma-separated: smoke, contract, conformance, deprecations,
    /// evaluation [default: all, in that order].
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub stages: Vec<crate::job::check::Stage>,
    /// The check's directory [default: results/check-<id>, or under the config's out_dir].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// The conformance suite's expected-failures YAML [default: the config's [check]
    /// expected_failures, else expected-failures.yml in the --baseline-snapshot directory when
    /// it exists or --write-baseline writes it].
    #[arg(long, value_name = "FILE")]
    pub expected_failures: Option<PathBuf>,
    /// Evaluate the whole suite, not only the tasks the contract's changes mark.
    #[arg(long)]
    pub all: bool,
    /// After the verdict, say why the evaluation regressed: `mcpeval explain` on
    /// DIR/evaluation, with its default budget (docs/explain.md). The exit code stays the
    /// check's.
    #[arg(long)]
    pub explain: bool,
    /// Skip the evaluation when a change breaks clients.
    #[arg(long)]
    pub stop_on_breaking: bool,
    /// Refresh the stored baseline snapshot and the expected-failures file from the baseline
    /// server (a stdio baseline bridged to HTTP for the conformance suite), then check the
    /// candidate against them.
    #[arg(long)]
    pub write_baseline: bool,
    /// Client profiles to snapshot the contract with (repeatable: bare, roots, full)
    /// [default: the config's, else bare].
    #[arg(long, value_name = "PROFILE")]
    pub client_profile: Vec<crate::config::ClientProfile>,
    /// The command that runs the conformance suite [default: the config's [check]
    /// conformance, else env MCPEVAL_CONFORMANCE, else `npx --yes
    /// @modelcontextprotocol/conformance@0.2.0-alpha.12`, which needs Node ≥ 22].
    #[arg(long, value_name = "CMD")]
    pub conformance: Option<String>,
    /// Fail the deprecations stage on a deprecated feature or warning the baseline lacked.
    #[arg(long)]
    pub fail_on_new_deprecations: bool,
    /// Fail the smoke stage on a description-safety finding (hidden characters, orders to the
    /// model, sensitive files, sending data away, encoded blobs, outsized descriptions) the
    /// baseline did not have [default: the config's [check] fail_on_description_risks, else
    /// reported only].
    #[arg(long)]
    pub fail_on_description_risks: bool,
    /// Fail the contract stage when the tool list's tokens (o200k_base) grow past this from the
    /// baseline: a per cent ("10%") or a number of tokens (500) [default: the config's [check]
    /// max_tool_tokens_increase, else reported only].
    #[arg(long, value_name = "LIMIT")]
    pub max_tool_tokens_increase: Option<crate::config::TokenIncrease>,
    /// Host settings files whose entries name tools (Claude Code's .claude/settings.json
    /// permissions, Gemini CLI's includeTools/excludeTools, Codex's enabled_tools, VS Code's
    /// *.toolsets.jsonc): an entry naming a tool the candidate renamed or removed fails the
    /// contract stage, at its file and line; a file that does not parse is a warning, one that
    /// does not exist an error (exit 2) [default: the config's [check] host_settings, else
    /// those found in the current directory]. The config's [host.NAME] allowed_tools are
    /// always read. More: docs/check.md (Host settings that name tools).
    #[arg(long, value_name = "PATH", num_args = 1..)]
    pub host_settings: Vec<PathBuf>,
    /// The protocol versions the candidate must list in supportedVersions, comma-separated
    /// [default: the config's [check] protocol_versions, else not checked].
    #[arg(long, value_name = "V,V", value_delimiter = ',')]
    pub protocol_versions: Vec<String>,
    /// Evaluation trials per task and side; without it the evaluation is adaptive.
    #[arg(long, value_name = "N")]
    pub trials: Option<u32>,
    /// MCP lifecycle for both servers: legacy, modern or auto [default: auto, or the config's].
    #[arg(long, value_name = "ERA")]
    pub protocol_era: Option<ProtocolEra>,
    /// The order each host lists the servers' tools in, before a profile's max_tools cuts the
    /// list: server (as tools/list gives them), reverse, or shuffle (a permutation per trial
    /// seed; the tools both sides list keep one relative order in a pair) [default: server, or
    /// the config's [profile] tool_order]. More: docs/hosts.md (Tool order).
    #[arg(long, value_name = "ORDER")]
    pub tool_order: Option<crate::config::ToolOrder>,
    /// A stage named in --stages that is skipped (Node too old for conformance, no baseline
    /// server…) passes instead of making the check exit 3.
    #[arg(long)]
    pub allow_skipped: bool,
    /// Record the evaluation's server traffic, as `run --record DIR` does: one cassette per
    /// side, DIR/baseline.cassette.jsonl and DIR/candidate.cassette.jsonl (a resumed check's
    /// evaluation records nothing).
    #[arg(long, value_name = "DIR")]
    pub record: Option<PathBuf>,
    /// Finish the interrupted check in DIR with the flags it was started with (read from its
    /// check.json): the stages it ended are kept, the one cut short and those after it run (an
    /// evaluation through `run --resume`).
    #[arg(long, value_name = "DIR", conflicts_with_all = [
        "config", "baseline", "baseline_snapshot", "candidate", "suite", "host", "stages", "out",
        "expected_failures", "all", "stop_on_breaking", "write_baseline", "client_profile",
        "conformance", "fail_on_new_deprecations", "fail_on_description_risks", "protocol_versions", "trials", "protocol_era",
        "tool_order", "allow_skipped", "record", "max_tool_tokens_increase", "host_settings",
    ])]
    pub resume: Option<PathBuf>,
    #[command(flatten)]
    pub writes: WriteArgs,
}

const CHECK_HELP: &str = "\
Stages, in order (each recorded in DIR/check.json with its result, time and raw output; each
skipped with its reason when it cannot apply):
  smoke         each side starts and answers its lists; the candidate's tool schemas have no
                portability finding the baseline had not (tool names, root type, combinators,
                type lists, remote $ref…); the suite's call tasks run on both sides, and a
                call task the baseline fails every time fails the stage unless it says
                `expected_to_fail: true`; every description, title, parameter and prompt
                description and the instructions are read for description risks (hidden or
                bidi characters, orders to the model, sensitive files, sending data away,
                encoded blobs, outsized descriptions), written to smoke/description-risks.json;
                those the baseline lacked fail only with --fail-on-description-risks
  contract      the candidate snapshotted per client profile (and [check] auth_profiles), diffed
                against the stored snapshot (--baseline-snapshot) or the baseline server's; a change
                that breaks clients fails; supportedVersions against --protocol-versions, and the
                -32022 error's data.supported against supportedVersions; the tool list's tokens
                (o200k_base) against the baseline's, failing past --max-tool-tokens-increase;
                host settings (--host-settings, else .claude/settings.json, .gemini/settings.json,
                .codex/config.toml, .vscode/*.toolsets.jsonc here, and the config's
                allowed_tools): an entry naming a tool the candidate renamed or removed fails
  conformance   the MCP conformance suite (npm @modelcontextprotocol/conformance, Node >= 22) over
                HTTP, once per requirement set the candidate supports (2025-11-25, 2026-07-28),
                judged against --expected-failures: a failure not listed fails, a WARNING counts
                as a failure, a listed entry that now passes fails (stale), an entry naming no
                scenario is an error before the run. A stdio server is bridged to HTTP by
                mcpeval (or served by [check] http_command at http_url, checked to be the
                candidate: same serverInfo and tools). Skipped without Node >= 22
  deprecations  deprecated features the candidate uses (the logging capability, the HTTP+SSE
                transport, dynamic client registration), with their removal dates, and the
                deprecation warnings on its stderr; new ones fail only with
                --fail-on-new-deprecations
  evaluation    the model evaluation of the tasks the contract's changes mark (--all: the whole
                suite), adaptive unless --trials, into DIR/evaluation/; skipped without a host
                (`sim`, the simulated model, is the demo's default only)
Reports: DIR/summary.md (a line per stage, the verdict, a section per stage; appended to
$GITHUB_STEP_SUMMARY), DIR/junit.xml (a testsuite per stage), DIR/check.json.
Environment: MCPEVAL_CONFORMANCE (the conformance suite's command, under --conformance and
[check] conformance), GITHUB_STEP_SUMMARY, and what `run` reads for the evaluation's hosts
(OPENAI_API_KEY…; MCPEVAL_TRIALS, which also turns the adaptive default off).
Console: a line per stage and a last line with the verdict and the exit code the check ends with;
the runs a stage starts (call tasks, the evaluation) show their progress on stderr and no verdict
of their own. A verdict of the simulated model `sim` says `(simulated model, …)`.
Exit codes: 0 every stage passed or was skipped; 1 a stage failed (a candidate that does not
start while the baseline does fails the smoke stage); 2 bad flags, config or task file, before
any stage runs, every file:line:col at once; 3 a stage could not be done (a baseline that would
not start, the conformance suite crashing, a stage named in --stages that was skipped, unless
--allow-skipped) and none failed;
130 interrupted by Ctrl-C, SIGTERM or SIGHUP (the stage in flight ends as `error`, no later
stage runs, the reports are written; `mcpeval check --resume DIR` finishes it).
More: docs/check.md.";

#[derive(Debug, Args)]
#[command(after_help = INIT_HELP)]
pub struct InitArgs {
    /// The server to draft from: a command line (split like a shell would, never run by one),
    /// an http(s):// Streamable HTTP URL, `demo:1.4.0`, or a [servers.NAME] of --config.
    #[arg(long, value_name = "SPEC")]
    pub server: String,
    /// The directory the suite (DIR/tasks/), the report (DIR/init-report.md), the config
    /// (DIR/mcpeval.toml) and the contract snapshot (DIR/contract/) go to; the workflow goes to
    /// .github/workflows/mcpeval.yml of the git repository that holds DIR (none: DIR's parent).
    #[arg(long, value_name = "DIR", default_value = "mcpeval")]
    pub out: PathBuf,
    /// Also draft call tasks of the tools that may change state (every tool not annotated
    /// readOnlyHint: true; no name is trusted) and model tasks of those annotated
    /// destructiveHint: true. Their calls are sent (three times, a fresh process each) only on
    /// --sandbox copies, to a server that keeps no state beyond its process (the demo,
    /// `state = "process"`) or with --allow-writes; otherwise drafted unverified into
    /// DIR/unverified.yaml, expecting a result without isError, with a teardown where one is
    /// derived (create_X → delete_X). Without --sandbox or --allow-writes, a server that lists
    /// any such tool gets no model task verified (a model may pick the tool that writes): all
    /// are drafted unverified. Tasks of read-only tools are verified either way.
    #[arg(long)]
    pub include_writes: bool,
    /// Overwrite the files of an earlier `init` (without it, an existing file is exit 2).
    #[arg(long)]
    pub force: bool,
    /// Config file holding [servers.NAME] and [auth.NAME] tables.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The host that verifies the drafted model tasks: each runs against the server for
    /// --verify-trials trials and is kept only when it passes. `sim` (the default) is the
    /// embedded simulated model, and the files and the report say so: pass a real model
    /// (`openai:MODEL`, `anthropic:MODEL`, a [host.NAME] of --config) to keep what it passes.
    #[arg(long, value_name = "SPEC", default_value = "sim")]
    pub host: String,
    /// The host that writes the model tasks (an LLM: `openai:MODEL`, `anthropic:MODEL`, a
    /// [host.NAME]); without it, templates draft them from each tool's description and schema,
    /// marked as templated. What it writes is checked before any trial: an answer that is not
    /// the JSON asked for, a request that names its tool, arguments the schema refuses are
    /// rejected with the reason.
    #[arg(long, value_name = "SPEC")]
    pub writer_host: Option<String>,
    /// Trials per drafted model task in verification.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub verify_trials: u32,
    /// The share of verification trials a model task must pass to be kept (0 < x ≤ 1).
    #[arg(long, value_name = "SHARE", default_value_t = 1.0, value_parser = parse_share)]
    pub keep_at: f64,
    /// Draft no model tasks (call tasks only: no model, no verification).
    #[arg(long)]
    pub no_models: bool,
    /// Write no CI file: no DIR/mcpeval.toml, no DIR/contract/, no workflow.
    #[arg(long)]
    pub no_ci: bool,
    /// Draft only for the tools the suite in DIR/tasks does not cover yet (no task expects a
    /// call of it or calls it), into new files (DIR/tasks/calls-update.yaml,
    /// models-update.yaml, DIR/init-report-update.md; then -update-2, …); the existing files
    /// and the CI files stay as they are. Nothing new: says so and writes nothing (exit 0).
    #[arg(long, conflicts_with = "force")]
    pub update: bool,
    #[command(flatten)]
    pub writes: WriteArgs,
}

/// How trials may touch the servers' state: the flags of `run`, `check`, `init` and `nightly`.
#[derive(Debug, Args, Default, Clone)]
pub struct WriteArgs {
    /// Copy PATH (a directory, a git repository with its .git, or one file such as a SQLite
    /// database) into a fresh temporary directory before every start of a server's process
    /// (each side, each trial, the pre-flight and contract listings alike) and remove the copy
    /// when the process ends; `{sandbox}` in the server's command, arguments, env and cwd, and
    /// in the tasks' prompts and arguments, is the copy's path (mapped back to `{sandbox}` in the
    /// records). NAME=PATH gives `{sandbox.NAME}` (repeatable) [default: the config's
    /// [servers.NAME] sandbox]. Not for HTTP servers.
    #[arg(long, value_name = "[NAME=]PATH", value_parser = crate::config::SandboxPath::parse_flag)]
    pub sandbox: Vec<crate::config::SandboxPath>,
    /// Leave each sandbox copy on disk when its server process ends.
    #[arg(long)]
    pub keep_sandboxes: bool,
    /// Let trials call tools that may change a server's real state (a tool not annotated
    /// readOnlyHint: true, on a server whose state may outlive its process): without it, or a
    /// --sandbox, or `state = "process"` on the server, such a suite is refused (exit 2)
    /// [default: the config's top-level allow_writes].
    #[arg(long)]
    pub allow_writes: bool,
}

impl WriteArgs {
    pub fn to_flags(&self) -> crate::config::WriteFlags {
        crate::config::WriteFlags {
            sandboxes: self.sandbox.clone(),
            keep_sandboxes: self.keep_sandboxes,
            allow_writes: self.allow_writes,
        }
    }

    /// The flags as given, for `check.json`'s `--resume`.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        for sandbox in &self.sandbox {
            let path = sandbox.path.display();
            args.push("--sandbox".to_owned());
            args.push(match &sandbox.name {
                Some(name) => format!("{name}={path}"),
                None => path.to_string(),
            });
        }
        for (name, on) in [
            ("keep-sandboxes", self.keep_sandboxes),
            ("allow-writes", self.allow_writes),
        ] {
            if on {
                args.push(format!("--{name}"));
            }
        }
        args
    }
}

/// `--keep-at` that is not a share in (0, 1].
#[derive(Debug, thiserror::Error)]
#[error(
    "`{0}` is not a share in (0, 1]: 1 keeps a task that passes every trial, 0.67 two of three"
)]
pub struct BadShare(String);

/// A share in (0, 1].
fn parse_share(s: &str) -> Result<f64, BadShare> {
    match s.trim().parse::<f64>() {
        Ok(x) if x > 0.0 && x <= 1.0 => Ok(x),
        _ => Err(BadShare(s.to_owned())),
    }
}

const INIT_HELP: &str = "\
Each request is sent twice; a task expects only what both answers share (is_error or the
JSON-RPC error code, output-schema validity, stable texts and structured values; no dates,
times, uuids or long numbers), and is kept only when a third call passes it as `mcpeval run`
grades it. Per tool: a call whose values are the schema's (default, examples, enum), else the
description's (`e.g. 'America/New_York'`, `(HH:MM)`), the format's, the server's command line's
(`--repository PATH` for `repo_path`), else neutral ones (never one letter); a call refused on a
value init drafted tries its others and is not kept when none is answered. Then one with a
wrong type, one without a required argument; one unknown tool; each listed resource and
prompt. A request malformed on purpose says `malformed: true`. A tool no sensible model task
can be templated for gets a TODO stub in DIR/todo.yaml.
The server's state: a tool not annotated readOnlyHint: true may change it, and on a server
whose state may outlive its process (any command line or URL but the demo, a replay or
`state = \"process\"`) init calls none of them, and verifies no model task when it lists one;
those tasks go to DIR/unverified.yaml, and the output and DIR/init-report.md name the tools not
called and why. To have them verified: --sandbox PATH with {sandbox} where PATH goes in the
server's command (each process on a fresh copy), or --allow-writes (the real state changes).
The CI around the suite (unless --no-ci): DIR/mcpeval.toml (the server, the suite, [check]
with the stored contract; no host: the workflow passes one from the repository variable
MCPEVAL_HOST; `sandbox`, `state = \"process\"` or `allow_writes` as init ran, so the write
gate lets its check run), DIR/contract/ (the contract snapshot; for a server over HTTP also
expected-failures.yml from the conformance suite, which needs Node >= 22) and
.github/workflows/mcpeval.yml (`mcpeval check` on every pull request against the base branch,
built for the language of the root's package.json, pyproject.toml, go.mod or Cargo.toml).
Then: mcpeval tasks check --suite DIR/tasks --server SPEC
      mcpeval check --config DIR/mcpeval.toml
Exit codes: 0 written (or, with --update, nothing new), 2 bad flags or config, a file exists
without --force (nothing is written), --update without a suite in DIR/tasks, or a {sandbox}
without --sandbox (or the reverse), 3 the server
could not be reached or a file could not be written.
More: docs/init.md.";

#[derive(Debug, Args)]
#[command(after_help = SNAPSHOT_HELP)]
pub struct SnapshotArgs {
    /// The server: a command line (split like a shell would, never run by one), an http(s)://
    /// Streamable HTTP URL, `demo:1.4.0`, `overlay:FILE+SPEC`, or a [servers.NAME] of --config.
    #[arg(long, value_name = "SPEC")]
    pub server: String,
    /// The snapshot directory (created; its files are replaced).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// MCP lifecycle: legacy (initialize), modern (server/discover) or auto [default: auto, or
    /// the server's in --config].
    #[arg(long, value_name = "ERA")]
    pub protocol_era: Option<ProtocolEra>,
    /// What the client declares in the handshake: bare (nothing, as a run's agent), roots, or
    /// full (roots, sampling, elicitation). Recorded in server.json; `mcpeval diff` refuses two
    /// snapshots of different profiles [default: bare].
    #[arg(long, value_name = "PROFILE")]
    pub client_profile: Option<crate::config::ClientProfile>,
    /// Also snapshot with the credentials of [auth.NAME] (repeatable), each into DIR/NAME/:
    /// tool lists may depend on who asks.
    #[arg(long, value_name = "NAME")]
    pub auth_profile: Vec<String>,
    /// Config file holding [servers.NAME] and [auth.NAME] tables [default: none: --server is a
    /// command line, a URL or `demo:VERSION`].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

const SNAPSHOT_HELP: &str = "\
Files: tools.json, resources.json, resource-templates.json, prompts.json (the MCP Inspector CLI's
--format json output normalized with jq -S '.result.tools | sort_by(.name)' and the like),
server.json (era, supportedVersions, acceptedVersions: the versions accepted in each era,
legacy and modern, whichever era the session used; capabilities, instructions, serverInfo, the
client profile: its name, the capabilities it declared and the era it asked for) and errors.json
(how the server answers an unknown tool, a missing or mistyped argument, an unknown resource, an
unsupported protocol version, in each era it speaks; no probe calls a tool with valid
arguments), and tokens.json (what each tool, the list and the instructions cost in
tokens as the OpenAI chat `tools` array sends them, with o200k_base and cl100k_base; counted
offline: docs/tokens.md).
Environment: $VAR and ${VAR} in --config (a server's env and headers, [auth.NAME]) are read
from it; a variable that is not set is an error (exit 2). No other variable is read.
Exit codes: 0 written, 2 bad flags or config, 3 the server could not be reached.
More: docs/contract.md.";

#[derive(Debug, Args)]
#[command(after_help = DIFF_HELP)]
pub struct DiffArgs {
    /// The baseline snapshot directory.
    #[arg(value_name = "BASELINE_DIR")]
    pub baseline: PathBuf,
    /// The candidate snapshot directory.
    #[arg(value_name = "CANDIDATE_DIR")]
    pub candidate: PathBuf,
    /// Write the diff's JSON here (the table goes to stdout either way) [default: none: the table
    /// only].
    #[arg(long, value_name = "DIFF.json")]
    pub out: Option<PathBuf>,
    /// A label for the baseline [default: its server's version].
    #[arg(long, value_name = "LABEL")]
    pub baseline_label: Option<String>,
    /// A label for the candidate [default: its server's version].
    #[arg(long, value_name = "LABEL")]
    pub candidate_label: Option<String>,
}

const DIFF_HELP: &str = "\
The table counts the changes per kind, then shows one line per group: changes of one kind that
differ only in a number or an id are one line (100 × resource_removed …/{1..100}); --out's JSON
keeps every change. A changed text longer than a line shows as the words that differ with a
little context (… Use ['UTC' → 'Etc/UTC'] as local …; [+added], [-removed]); the JSON keeps both
sides whole. When the snapshots' specs differ, each side's version has its spec beside it
(1.30.0 (/opt/time-0.6.2/bin/mcp-server-time) → …): a reported version may be the SDK's. Under
the table: the tool list's and the instructions' tokens on both sides and the tools whose tokens
changed (the JSON's `tokens`; a snapshot without tokens.json is counted from its tools.json).
Exit codes: 0 no change breaks clients, 1 some change breaks clients (breaksClients: true),
2 a snapshot directory cannot be read. `mcpeval run --trigger DIFF.json` runs the tasks the
changes that affect models touch. No environment variable is read.
More: docs/contract.md.";

#[derive(Debug, Args)]
#[command(after_help = COMPARE_HELP)]
pub struct CompareArgs {
    /// A run directory (holding run.json and episodes.jsonl).
    #[arg(value_name = "RUN_DIR")]
    pub run: PathBuf,
    /// Take the baseline episodes from this other run instead: RUN_DIR's candidate against a
    /// stored baseline [default: RUN_DIR's own baseline]. A task whose definition differs
    /// between the two runs (run.json's task_hashes) is warned about, with what changed.
    #[arg(long, value_name = "RUN_DIR")]
    pub against: Option<PathBuf>,
    /// Where to write the reports [default: RUN_DIR; with --against, RUN_DIR/against-<run id>].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Multiple-comparison correction: holm or bh [default: the run's [stats] correction, holm
    /// unless its config said otherwise].
    #[arg(long, value_name = "METHOD")]
    pub correction: Option<Adjustment>,
    /// Run-level significance level [default: the run's [stats] alpha, 0.05 unless its config
    /// said otherwise].
    #[arg(long, value_name = "A")]
    pub alpha: Option<f64>,
}

#[derive(Debug, Args)]
#[command(after_help = EXPLAIN_HELP)]
pub struct ExplainArgs {
    /// A run directory (holding run.json and episodes.jsonl).
    #[arg(value_name = "RUN_DIR")]
    pub run: PathBuf,
    /// Explain the improved tasks too.
    #[arg(long)]
    pub all: bool,
    /// Trials to spend at most, over every change tried: instructions and added tools first,
    /// then the changes of each task's own tools; what does not fit is skipped and said so.
    #[arg(long, value_name = "N", default_value_t = crate::job::explain::DEFAULT_BUDGET)]
    pub budget: u64,
    /// Also try each regressed task with the candidate's tool list offered in reverse order:
    /// says when a regression follows a tool's position rather than its text.
    #[arg(long)]
    pub order: bool,
    /// The config file to read the servers' secrets (env, headers) from [default: the run's
    /// own config file, when it is still there].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

const EXPLAIN_HELP: &str = "\
Reads the run's verdicts first: with no regressed task it says `nothing to explain` (exit 0).
Otherwise it takes the run's diff (RUN_DIR/contract/diff.json, or the diff its trigger read; else
both servers are snapshotted and diffed into RUN_DIR/explain/contract/) and, for each regressed
task, undoes each model-affecting change that touches it alone on the candidate with an overlay
(old description, title, parameter description, annotation or instructions; an added tool hidden;
a rename undone), one file per change in RUN_DIR/explain/overlays/ (rerun one by hand with
`--candidate overlay:FILE+SPEC`). Each change's trials use the run's hosts, trial seeds and trial
count, and are compared with the run's own candidate episodes by the run's test, Holm across the
changes tried for the task: explains, partly, no_effect, inconclusive or not_tried (with why).
When no single change explains a task, the baseline plus one change is tried.

Writes RUN_DIR/explain/attribution.csv, attribution.json and summary.md, and a \"Why\" section
into the run's summary.md and report.html; prints one line per regressed task. Each set of
trials is a run directory of its own under RUN_DIR/explain/runs/: explain again after a Ctrl-C
and it resumes.

Exit codes: 0 finished (whatever it found), 2 not a run directory, or a run that regressed with no
model-affecting change between its servers, 3 a server cannot be started.
More: docs/explain.md.";

#[derive(Debug, Args)]
#[command(after_help = AGREE_HELP)]
pub struct AgreeArgs {
    /// A run directory; alone, every pair of its hosts is compared.
    #[arg(value_name = "RUN_A")]
    pub run_a: PathBuf,
    /// A second run directory of the same server pair and suite (same or other hosts).
    #[arg(value_name = "RUN_B")]
    pub run_b: Option<PathBuf>,
    /// The directory agreement.csv is written into [default: RUN_A].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

const AGREE_HELP: &str = "\
Reads each run's success rows of tasks (comparison.parquet, else comparison.csv) and puts each
host's verdict in one of three classes: regression, improvement, neither (no_change and
inconclusive). Two runs: each host with the host of the same name in the other run (labelled
by the second run's seed, `sim(seed 4)`), or every host of one with every host of the other when
no name is shared. One run: every pair of its hosts. Tasks are matched by task_id.

Per pair: Cohen's kappa over the tasks with its asymptotic 95 % interval (as statsmodels'
cohens_kappa), or the raw agreement when kappa is undefined (every task in one class on both
hosts); the tasks they disagree on; Spearman's rho of the success deltas. Writes agreement.csv
(task_id, host_a, host_b, verdict_a, verdict_b, diff_a, diff_b, agree) into --out or RUN_A, and a
\"Host agreement\" section into RUN_A's summary.md and report.html (RUN_A/agreement.md).
`mcpeval plan --agreement FILE` then says which regressions host_a would have missed.

  mcpeval agree results/sim-run results/gpt-run
  mcpeval agree results/two-hosts --out agreement/

Exit codes: 0 finished (whatever the agreement), 2 not a run directory, no success rows, no
shared task, or one run of one host given alone, 3 a file that cannot be written.
More: docs/hosts.md#host-agreement.";

const COMPARE_HELP: &str = concat!(
    "\
Writes comparison.parquet, comparison.csv, summary.md, junit.xml and report.html (one
self-contained page, no network needed: the verdict, charts, and each task's transcripts side by
side from transcripts.jsonl), prints the verdict table, and exits like `mcpeval run`:
  0  no regression on a gated metric     1  a gated metric regressed
  2  unreadable run directory            3  more infrastructure errors than the limit

The episodes are read from episodes.parquet (only the columns the tests need) when it is up to
date, else from episodes.jsonl; nothing holds them all. When the reports go into the run
directory itself, a run whose tables are missing or older than its episodes.jsonl (cut short,
or resumed since) gets them rewritten in the same pass.

",
    step_summary_env!(),
    "

More: docs/statistics.md (what the verdicts and their words mean)."
);

#[derive(Debug, Args)]
#[command(after_help = MERGE_HELP)]
pub struct MergeArgs {
    /// The shards' run directories (`mcpeval run --shard I/N --out DIR`), one per shard, in
    /// any order.
    #[arg(value_name = "RUN_DIR", required = true)]
    pub shards: Vec<PathBuf>,
    /// The merged run directory (created; it must not hold a run already).
    #[arg(long, value_name = "RUN_DIR")]
    pub out: PathBuf,
}

const MERGE_HELP: &str = concat!(
    "\
Checks that the shards come from the same config (run.json's config_hash: the resolved config
without machine-specific fields, and the selected tasks), that every shard 1..N is there once,
and that every (task, host, trial, side) unit is recorded exactly once; then writes OUT like a
finished run (run.json with merged_from, episodes, transcripts, tables) and the comparison,
summary.md and junit.xml as `mcpeval compare` does. Exit codes:
  0  no regression on a gated metric     1  a gated metric regressed
  2  shards that do not fit together     3  more infrastructure errors than the limit
",
    step_summary_env!(),
    "
More: docs/sharding.md."
);

#[derive(Debug, Args)]
#[command(after_help = PLAN_HELP)]
pub struct PlanArgs {
    /// Success rate of the baseline, in [0, 1]; required without --suite [default: with
    /// --suite, 1, or each task's rate in the --from run].
    #[arg(long, value_name = "P")]
    pub baseline_rate: Option<f64>,
    /// Drop in success rate to detect (absolute: 0.10 = ten points); required without
    /// --agreement.
    #[arg(long, value_name = "D", required_unless_present = "agreement")]
    pub drop: Option<f64>,
    /// An agreement.csv (`mcpeval agree` writes it): the regressions host_b found that
    /// screening with host_a would have missed, and their share (not with --drop, --suite or
    /// --baseline-rate).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["drop", "suite", "baseline_rate"])]
    pub agreement: Option<PathBuf>,
    /// Two-sided significance level. Without --suite: of the one test (for one task among many,
    /// divide by their number and by the gated families). With --suite: the run's α, split as a
    /// run would split it [default: 0.05; with --suite, the config's [stats] alpha].
    #[arg(long, value_name = "A")]
    pub alpha: Option<f64>,
    /// Chance of detecting the drop when it is real [default: 0.8; with --suite, the config's
    /// [stats] power].
    #[arg(long, value_name = "W")]
    pub power: Option<f64>,
    /// Look no further than this many trials per side.
    #[arg(long, value_name = "N", default_value_t = 2000)]
    pub max_trials: u64,
    /// Plan for this suite (a folder of task YAML files or a file; repeatable): the trials per
    /// side a single task needs at the level the run's correction applies to it, and the
    /// suite-level drop the stratified test detects at those trials.
    #[arg(long, value_name = "DIR|FILE")]
    pub suite: Vec<PathBuf>,
    /// An earlier run directory: its baseline's success rate and tokens per trial for each task
    /// (and its models, for `[prices]`) give the estimate of the recommended run's tokens and cost
    /// [default: none: no estimate].
    #[arg(long, value_name = "RUN_DIR", requires = "suite")]
    pub from: Option<PathBuf>,
    /// The run config (TOML) whose [stats], trials, hosts and [prices] the plan uses [default:
    /// the embedded defaults, one `sim` host].
    #[arg(long, value_name = "FILE", requires = "suite")]
    pub config: Option<PathBuf>,
    /// The hosts the run will use (repeatable; as `mcpeval run --host`) [default: the config's].
    #[arg(long, value_name = "HOST", requires = "suite")]
    pub host: Vec<String>,
    /// With --suite: plan an adaptive run (as the config's [stats] adaptive = true does): the
    /// trial budget (trials per side for the whole run) that gives every task its first look,
    /// the recommended trials, and max_trials.
    #[arg(long, requires = "suite")]
    pub adaptive: bool,
}

const PLAN_HELP: &str = "\
Without --suite: the trials per side for Fisher's exact test to detect --drop from
--baseline-rate at --alpha. Power is exact: the two-sided Fisher test's rejection region is
enumerated for every table and weighted by binomial probabilities (no normal formula). Exact power
saw-tooths in n, so both the first n reaching the power and the n from which it never falls below
it are shown.

With --suite: the same for one task at the level a run of that suite gives it (α split over the
gated families, then over the tasks by the correction's worst case), whether the configured
trials can flag a single task at all, and what the whole-suite success row (Cochran–Mantel–
Haenszel over the tasks, normal approximation) detects: a uniform drop of every task's rate.
With --from, also the episodes, tokens and cost of the recommended run. As in a run, `kind: call`
tasks (no model) take no share of the level and no place in the suite rows, and add their own
trials' episodes (both sides, once) to the estimate.

With --agreement FILE (an agreement.csv `mcpeval agree` wrote): per pair of hosts, the tasks
host_b says regressed that host_a did not flag, and their share: what screening with host_a
alone would have missed (docs/hosts.md#host-agreement).

  mcpeval plan --baseline-rate 0.95 --drop 0.10
  mcpeval plan --suite tasks/demo --drop 0.3
  mcpeval plan --suite tasks/mine --drop 0.2 --from results/<run-id> --config configs/mine.toml

Environment (with --suite): MCPEVAL_TRIALS, MCPEVAL_CONCURRENCY and MCPEVAL_SEED layer over the
config as for `mcpeval run` (MCPEVAL_TRIALS is the configured trials the plan checks). Without
--suite nothing is read from the environment.

More: docs/statistics.md.";

/// `nightly --help`, before the environment.
macro_rules! nightly_help {
    () => {
        "\
One job = `mcpeval run --config FILE --auto-trigger` (or the whole suite), the comparison rows
appended to the history as \"candidate\", then tonight's baseline episodes compared with those of
the last stored run of the same baseline version (an A/A comparison across nights) and appended as
\"drift\"; summary.md gets a \"Baseline drift\" section. A night whose contract diff affects no
model appends nothing. Run directories: <out_dir>/nightly-<UTC time>.
Exit codes, one job (no --schedule): those of `mcpeval run`:
  0  no regression   1  regression (or a change that breaks clients, the job stopped before its
     trials: --allow-breaking or [nightly] allow_breaking = true runs it anyway)
  2  bad config or history
  3  infrastructure failure   130  interrupted (Ctrl-C or SIGTERM: in-flight trials finish)
With --schedule: a failed job is logged and the next one runs; SIGTERM or Ctrl-C exits 0 (at once
while waiting, after the job's in-flight trials while one runs); 2 for a bad config or CRON.
The history file is the config's [nightly] history [default: <out_dir>/history.parquet, i.e.
results/history.parquet]; MCPEVAL_HISTORY is `mcpeval history`'s and not read here.
More: docs/nightly.md."
    };
}

#[derive(Debug, Args)]
#[command(after_help = concat!(nightly_help!(), "\n\n", run_env!()))]
pub struct NightlyArgs {
    /// A run config (TOML) with an optional [nightly] table: whole_suite = true runs every task,
    /// not only those the contract diff triggers (false when unset); history = "PATH" is the
    /// history file (<out_dir>/history.parquet when unset); allow_breaking = true runs although
    /// the contract breaks clients (false when unset).
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
    /// Stay up and run a job at each fire time of this cron expression, in UTC: 5 fields
    /// ("0 3 * * *" = 03:00 every day) or 6 with seconds first ("*/30 * * * * *") [default: none:
    /// one job now].
    #[arg(long, value_name = "CRON", conflicts_with = "once")]
    pub schedule: Option<String>,
    /// Run one job now and exit with its code (for cron, a systemd timer or a CI schedule)
    /// [default: on without --schedule].
    #[arg(long)]
    pub once: bool,
    /// Run the triggered tasks although the candidate's contract breaks clients (else the job
    /// stops before its trials and records nothing) [default: the config's [nightly]
    /// allow_breaking, else off].
    #[arg(long)]
    pub allow_breaking: bool,
    #[command(flatten)]
    pub writes: WriteArgs,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 printed, 2 no history file or no row matches.
More: docs/nightly.md."
)]
pub struct HistoryArgs {
    /// The history file.
    #[arg(
        long,
        value_name = "PATH",
        env = "MCPEVAL_HISTORY",
        default_value = crate::history::DEFAULT_HISTORY
    )]
    pub file: PathBuf,
    /// Only this task (`*` for the suite rows) [default: every task].
    #[arg(long, value_name = "ID")]
    pub task: Option<String>,
    /// Only this metric (success, tool_calls, total_tokens, …), or `all`.
    #[arg(long, value_name = "M", default_value = "success")]
    pub metric: String,
    /// Only this host [default: every host].
    #[arg(long, value_name = "H")]
    pub host: Option<String>,
}

/// An `--unmatched` policy that is none of error, nearest, live.
#[derive(Debug, thiserror::Error)]
#[error("`{0}` is no unmatched policy: error, nearest or live")]
pub struct BadPolicy(String);

fn parse_unmatched(s: &str) -> Result<crate::cassette::Unmatched, BadPolicy> {
    use crate::cassette::Unmatched;
    match s.trim() {
        "error" => Ok(Unmatched::Error),
        "nearest" => Ok(Unmatched::Nearest),
        "live" => Ok(Unmatched::Live),
        _ => Err(BadPolicy(s.to_owned())),
    }
}

/// A `--tag` that is not `KEY=VALUE`.
#[derive(Debug, thiserror::Error)]
#[error("expected KEY=VALUE, got `{0}`")]
pub struct BadTag(String);

fn parse_tag(s: &str) -> Result<(String, String), BadTag> {
    s.split_once('=')
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .filter(|(k, _)| !k.is_empty())
        .ok_or_else(|| BadTag(s.to_owned()))
}

impl CheckArgs {
    /// The check these flags ask for.
    pub fn to_request(&self) -> crate::job::check::CheckRequest {
        crate::job::check::CheckRequest {
            overrides: Overrides {
                config: self.config.clone(),
                baseline: self.baseline.clone(),
                candidate: self.candidate.clone(),
                suites: self.suite.clone(),
                hosts: self.host.clone(),
                trials: self.trials,
                protocol_era: self.protocol_era,
                tool_order: self.tool_order,
                suite_optional: true,
                writes: self.writes.to_flags(),
                ..Overrides::default()
            },
            baseline_snapshot: self.baseline_snapshot.clone(),
            out: self.out.clone(),
            stages: self.stages.clone(),
            all: self.all,
            stop_on_breaking: self.stop_on_breaking,
            write_baseline: self.write_baseline,
            expected_failures: self.expected_failures.clone(),
            client_profiles: self.client_profile.clone(),
            conformance: self.conformance.clone(),
            fail_on_new_deprecations: self.fail_on_new_deprecations,
            fail_on_description_risks: self.fail_on_description_risks,
            max_tool_tokens_increase: self.max_tool_tokens_increase,
            host_settings: self.host_settings.clone(),
            protocol_versions: (!self.protocol_versions.is_empty())
                .then(|| self.protocol_versions.clone()),
            allow_skipped: self.allow_skipped,
            record: self.record.clone(),
            resume: false,
            args: self.to_args(),
            quiet: false,
        }
    }

    /// The flags as given, but `--out` and `--resume`: what `check.json` keeps for `--resume`.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = Vec::new();
        let mut flag = |name: &str, value: String| {
            args.push(format!("--{name}"));
            args.push(value);
        };
        let path = |p: &PathBuf| p.display().to_string();
        for (name, value) in [
            ("config", self.config.as_ref().map(path)),
            ("baseline", self.baseline.clone()),
            (
                "baseline-snapshot",
                self.baseline_snapshot.as_ref().map(path),
            ),
            ("candidate", self.candidate.clone()),
            (
                "expected-failures",
                self.expected_failures.as_ref().map(path),
            ),
            ("conformance", self.conformance.clone()),
            ("trials", self.trials.map(|t| t.to_string())),
            ("protocol-era", self.protocol_era.map(era_word)),
            ("tool-order", self.tool_order.map(|o| o.as_str().to_owned())),
            (
                "max-tool-tokens-increase",
                (self.max_tool_tokens_increase).map(|l| l.to_string().replace(" tokens", "")),
            ),
        ] {
            if let Some(value) = value {
                flag(name, value);
            }
        }
        self.suite.iter().for_each(|s| flag("suite", path(s)));
        self.host.iter().for_each(|h| flag("host", h.clone()));
        (self.host_settings.iter()).for_each(|p| flag("host-settings", path(p)));
        (self.client_profile.iter()).for_each(|p| flag("client-profile", p.to_string()));
        if !self.stages.is_empty() {
            flag(
                "stages",
                self.stages
                    .iter()
                    .map(|s| s.name())
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        if !self.protocol_versions.is_empty() {
            flag("protocol-versions", self.protocol_versions.join(","));
        }
        for (name, on) in [
            ("all", self.all),
            ("stop-on-breaking", self.stop_on_breaking),
            ("write-baseline", self.write_baseline),
            ("fail-on-new-deprecations", self.fail_on_new_deprecations),
            ("fail-on-description-risks", self.fail_on_description_risks),
            ("allow-skipped", self.allow_skipped),
        ] {
            if on {
                args.push(format!("--{name}"));
            }
        }
        args.extend(self.writes.to_args());
        args
    }
}

fn era_word(era: ProtocolEra) -> String {
    match era {
        ProtocolEra::Legacy => "legacy",
        ProtocolEra::Modern => "modern",
        ProtocolEra::Auto => "auto",
    }
    .to_owned()
}

impl RunArgs {
    /// The run these flags ask for.
    pub fn to_request(&self) -> crate::job::RunRequest {
        crate::job::RunRequest {
            overrides: self.to_overrides(),
            resume: self.resume.clone(),
            out: self.out.clone(),
            trigger: self.trigger.clone(),
            auto_trigger: self.auto_trigger,
            allow_breaking: self.allow_breaking,
            breaking_advice: None,
            no_cache: self.no_cache,
            shard: self.shard,
            demo_servers: self.demo_servers,
            follow_renames: self.follow_renames.clone(),
            kinds: crate::job::TaskKinds::All,
            no_step_summary: false,
            update_snapshots: self.update_snapshots,
            record: self.record.clone(),
            resolved: None,
        }
    }

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
            correction: self.correction,
            adaptive: self.adaptive,
            max_trials: self.max_trials,
            trial_budget: self.trial_budget,
            suite_optional: false,
            writes: self.writes.to_flags(),
            tool_order: self.tool_order,
            recover_text_calls: self.recover_text_calls,
            expose: self.expose.clone(),
            replay_user_turns: self.replay_user_turns,
            stale_list: self.stale_list,
            tool_search: self.tool_search,
            tool_search_k: self.tool_search_k,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum CassetteAction {
    /// Check cassette files and summarize each: the server, its lists, the requests and
    /// answers. A bad version, a line that is not JSON or not of a known shape is an error
    /// naming file:line (exit 2). Reading a cassette runs nothing it holds.
    ///
    /// More: docs/replay-overlay.md (Cassette format).
    Check {
        /// Cassette files (`DIR/baseline.cassette.jsonl` from `run --record DIR`).
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
    },
}

#[derive(Debug, Subcommand)]
pub enum TasksAction {
    /// Validate task files: every problem with file, line and column. Exit 2 if any.
    ///
    /// Warnings (`file:line:col: warning: …`, on stderr; all counted on the `ok:` line) leave
    /// the exit code at 0: a prompt that names a tool it expects (a model can pick the tool by
    /// its name, so a regression in its description goes unseen), an expected call with `args`
    /// and no `result` (it passes on a call that returned an error: add `result: {is_error:
    /// false}`), a literal tool name that looks like a regex (use `tool: {pattern: …}`). A file of another tool (an mcpchecker task or
    /// eval, a promptfoo config) is one error that names the `mcpeval tasks import` command
    /// converting it.
    Check {
        /// A folder of task YAML files, or one file (repeatable) [default: the suites of
        /// --config, else tasks/].
        #[arg(long, value_name = "DIR|FILE")]
        suite: Vec<PathBuf>,
        /// Also check the tasks against this server's tools, as a run does before its first
        /// trial: given twice, the baseline then the candidate (once: that server is both). A
        /// task that expects, forbids or sets up a tool neither lists, expects or sets up
        /// (setup, teardown, after) an argument its schema does not know, or sets up a call
        /// without an argument its schema requires, is a problem (exit 2); a tool only the first
        /// lists, and a call task's unknown tool or argument, are warnings. A
        /// command line (never run through a shell), an http(s):// URL, `demo:1.4.0`, or a
        /// [servers.NAME] of --config [default: the config's baseline and candidate; without
        /// --config, no server: the files alone].
        #[arg(long, value_name = "SPEC")]
        server: Vec<String>,
        /// A run config: the tasks are checked against its baseline and candidate (as `mcpeval
        /// run --config FILE` checks them before its first trial), with its [renames]; its
        /// suites stand in for --suite, its [servers.NAME] may be named by --server.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Convert other tools' test files (mcpchecker, promptfoo) into mcpeval task files.
    ///
    /// Writes one task file per input into --out, and lists per case what did not convert
    /// (also as comments above each task). Prompts, expected and forbidden tools, call counts
    /// and order, answer checks, LLM rubrics and mcpchecker's MCP tool-call steps (as setup,
    /// teardown and after checks) convert; code assertions, scripts, HTTP and extension steps,
    /// and texts with placeholders filled at run time do not. Files an eval's glob matches that
    /// are not mcpchecker tasks are skipped with a note. Exit 2 if an input is not of the
    /// format, if no case converts, or if an output file exists without --force; nothing is
    /// written then. More: docs/task-format.md (Importing from mcpchecker and promptfoo).
    Import {
        /// The tool the files are for.
        #[arg(long, value_enum)]
        from: ImportFrom,
        /// mcpchecker task or eval files (`kind: Task`, `kind: Eval`), or promptfoo configs.
        #[arg(required = true, value_name = "FILE")]
        files: Vec<PathBuf>,
        /// The directory for the task files (made if missing).
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The `judge.host` of the judges made from LLM rubrics (`sim` cannot judge: set a
        /// real model before a run).
        #[arg(long, value_name = "SPEC", default_value = "sim")]
        judge_host: String,
        /// Overwrite task files that exist.
        #[arg(long)]
        force: bool,
    },
    /// List the tasks of a suite.
    List {
        /// A folder of task YAML files, or one file (repeatable) [default: tasks/].
        #[arg(long, value_name = "DIR|FILE")]
        suite: Vec<PathBuf>,
    },
    /// Write call tasks for the input schemas a diff narrowed: for each enum narrowed, bound or
    /// length tightened, pattern added, type changed, parameter made required or
    /// `additionalProperties: false`, calls with values the baseline's schema accepts and the
    /// candidate's refuses (`…-refused-N`) and values on the border of both (`…-border-N`), each
    /// value checked against both schemas and expecting a result without isError. Other
    /// arguments come from the schema (examples, defaults, enums, formats, bounds), never from a
    /// model. Run them with `mcpeval run --suite DIR/boundary.yaml`: the refused values fail on
    /// the candidate. Exit 2 for an unreadable diff or snapshot.
    Boundary {
        /// A diff written by `mcpeval diff --out DIFF.json`.
        #[arg(long, value_name = "DIFF.json")]
        diff: PathBuf,
        /// Where to write `boundary.yaml`.
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// The baseline snapshot directory [default: the one the diff names].
        #[arg(long, value_name = "DIR")]
        baseline_snapshot: Option<PathBuf>,
        /// The candidate snapshot directory [default: the one the diff names].
        #[arg(long, value_name = "DIR")]
        candidate_snapshot: Option<PathBuf>,
        /// Overwrite an existing `boundary.yaml`.
        #[arg(long)]
        force: bool,
    },
}

/// The tools `mcpeval tasks import --from` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ImportFrom {
    Mcpchecker,
    Promptfoo,
}

#[derive(Debug, Args)]
#[command(after_help = SERVE_HELP)]
pub struct ServeArgs {
    /// The server underneath: a command line (split like a shell would, never run by one), an
    /// http(s):// URL, `demo:1.4.0`, `overlay:FILE+SPEC`, or a [servers.NAME] of --config.
    #[arg(long, value_name = "SPEC")]
    pub base: Option<String>,
    /// An overlay file (YAML, `overlay: 1`): tool descriptions, titles, parameter descriptions,
    /// annotations, instructions, tools renamed or hidden, prompt descriptions [default: none:
    /// the base is served as it is].
    #[arg(long, value_name = "FILE")]
    pub overlay: Option<PathBuf>,
    /// A cassette (`run --record DIR` writes them) that answers every tools/call,
    /// resources/read and prompts/get: the n-th identical request of a session gets its n-th
    /// recorded answer, the last repeating; the base still gives the lists. Without --base the
    /// cassette is served alone, its recorded handshake and lists too, over stdio or --http
    /// [default: none: the base answers]. A call the cassette does not hold is marked
    /// `"_meta": {"mcpeval/replay": "unmatched"}` in its result, and a run counts it.
    #[arg(long, value_name = "CASSETTE")]
    pub replay: Option<PathBuf>,
    /// With --replay, a request the cassette does not hold: `error` (a tool error result, a
    /// JSON-RPC error for a resource or prompt, saying so), `nearest` (the recorded request of
    /// the same tool sharing the most arguments), `live` (the base answers it).
    #[arg(long, value_name = "POLICY", default_value = "error", value_parser = parse_unmatched)]
    pub unmatched: crate::cassette::Unmatched,
    /// Serve Streamable HTTP at this address (path /mcp) instead of stdio, e.g. 127.0.0.1:3001;
    /// port 0 picks a free one, and the bound address is printed on stderr [default: none:
    /// stdio].
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// MCP lifecycle towards the base: legacy, modern or auto [default: auto, or the server's in
    /// --config]. Clients of `serve` may use either era.
    #[arg(long, value_name = "ERA")]
    pub protocol_era: Option<ProtocolEra>,
    /// Config file holding [servers.NAME] tables [default: none].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

const SERVE_HELP: &str = "\
Overlay file (every key optional but the version):
  overlay: 1
  instructions: New server instructions.
  tools:
    search_issues:
      description: Looks up issues.
      title: Search
      params: {query: Words to look for.}
      annotations: {readOnlyHint: true}
    get_issue: {rename: fetch_issue}     # calls to fetch_issue reach get_issue
    add_comment: {hide: true}
  prompts:
    triage: {description: New prompt description.}
An unknown key, a bad version, or a tool, parameter or prompt the base does not list is an error
naming the file and line (exit 2), found before anything is served.
As a server spec elsewhere: overlay:FILE+SPEC, or [servers.NAME] overlay = \"FILE\", base = \"SPEC\";
with --replay: replay:CASSETTE+SPEC.
Exit codes: 0 stopped (stdin closed, Ctrl-C), 2 bad flags, config or overlay, 3 the base could
not be reached or the address not bound.
More: docs/replay-overlay.md.";

#[derive(Debug, Args)]
pub struct DemoServerArgs {
    /// Which release to play: 1.4.0 (baseline), 1.5.0 (candidate) or 2.0.0 (1.5.0 with breaking
    /// contract changes).
    #[arg(long, default_value = "1.4.0")]
    pub release: String,
    /// Serve Streamable HTTP at this address (path /mcp) instead of stdio, e.g. 127.0.0.1:3001
    /// [default: none: stdio].
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
    /// Fault injection: answer N tool calls, then exit with status 1 when the next one arrives,
    /// to test how a runner copes with a dying server [default: never; env:
    /// MCPEVAL_DEMO_CRASH_AFTER, which `demo:` servers of a run read too].
    #[arg(long, value_name = "N")]
    pub crash_after: Option<usize>,
    /// A fault for `mcpeval check`: `server/discover` lists only these versions (comma-separated,
    /// e.g. 2026-07-28) while the server accepts, and its -32022 error lists, every version the
    /// SDK knows [env: MCPEVAL_DEMO_DISCOVER_VERSIONS].
    #[arg(long, value_name = "V,V")]
    pub discover_versions: Option<String>,
    /// Play a server that uses a deprecated feature: it declares the `logging` capability and
    /// prints a Python-SDK-style `MCPDeprecationWarning` line on stderr at start [env:
    /// MCPEVAL_DEMO_DEPRECATED=1].
    #[arg(long)]
    pub deprecated: bool,
    /// Play a server started on the wrong directory: every tool call answers `isError` with
    /// "Access denied - path outside allowed directories" [env: MCPEVAL_DEMO_DENY_ALL=1].
    #[arg(long)]
    pub deny_all: bool,
    /// Play a server whose state settles asynchronously: a write (create_issue, update_issue,
    /// add_comment) is answered at once, but reads see it only N ms later, for `after` checks
    /// with `within_ms` [default: 0, at once; env: MCPEVAL_DEMO_SETTLE_MS].
    #[arg(long, value_name = "N")]
    pub settle_ms: Option<u64>,
}

#[derive(Debug, Args)]
#[command(after_help = "\
Faults: --fail-rate and --garbage-rate take disjoint shares of the requests. Which request gets a
fault is drawn from an RNG of its own, seeded by --fault-seed and the request (a retry of the same
request draws again), never from the model's: the answers that do arrive are exactly those of a
fault-free server, so a faulty run reproduces a fault-free run's results. Injected error statuses
are answered at once; --latency-ms applies to the other answers.
No environment variable is read (it needs no API key).

More: docs/hosts.md.")]
pub struct SimServerArgs {
    /// Address to listen on (port 0 picks a free port; the address is printed).
    #[arg(long, default_value = "127.0.0.1:8089")]
    pub addr: SocketAddr,
    /// Delay before each answer, to stand in for a real model's latency.
    #[arg(long, default_value_t = 0)]
    pub latency_ms: u64,
    /// Softmax temperature of the simulated model's tool choice [default: 0.5].
    #[arg(long)]
    pub temperature: Option<f64>,
    /// Share of requests (0 to 1) that fail: answered with an error status (--status) or, with
    /// --hang-ms, possibly by hanging first.
    #[arg(long, value_name = "R", default_value_t = 0.0)]
    pub fail_rate: f64,
    /// Seed of the fault RNG (which requests fail, and how).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub fault_seed: u64,
    /// Status of a failure: 429, 500, 502, 503 or 504. Repeat to mix them (each equally likely;
    /// repeat one to weight it) [default: 503].
    #[arg(long = "status", value_name = "CODE")]
    pub status: Vec<u16>,
    /// Send `Retry-After: SECONDS` with 429 and 503 failures [default: none sent].
    #[arg(long, value_name = "SECONDS")]
    pub retry_after: Option<u64>,
    /// Hanging this long and then answering 503 becomes one more failure mode, as likely as
    /// each --status [default: none: no hanging].
    #[arg(long, value_name = "N")]
    pub hang_ms: Option<u64>,
    /// Share of requests (0 to 1) answered with a malformed body, half each: a 200 whose body is
    /// not JSON (an infrastructure error for the host), or a completion whose tool-call
    /// `arguments` are not JSON (the model's error; a completion without tool calls gets the
    /// first form instead).
    #[arg(long, value_name = "R", default_value_t = 0.0)]
    pub garbage_rate: f64,
    /// A provider's concurrency limit: requests arriving while N are being answered get 429 at
    /// once (with --retry-after when given). Shows how hosts back off [default: no limit].
    #[arg(long, value_name = "N")]
    pub max_in_flight: Option<usize>,
    /// Share of requests (0 to 1) answered by a model that rambles: an answer with no end, one
    /// token ("more ") per --token-ms, stopped only by the request's output cap
    /// (`max_tokens`, `finish_reason: "length"`). Streamed requests get it token by token;
    /// others get it whole once the cap is reached, or never without a cap.
    #[arg(long, value_name = "R", default_value_t = 0.0)]
    pub ramble_rate: f64,
    /// Share of requests (0 to 1) that stall before the first byte: never answered at all (a
    /// provider that does not answer).
    #[arg(long, value_name = "R", default_value_t = 0.0)]
    pub stall_rate: f64,
    /// The pace of a rambling answer: milliseconds per token.
    #[arg(long, value_name = "MS", default_value_t = 10)]
    pub token_ms: u64,
    /// Send streamed answers labelled `content-type: application/json`, as buffering gateways
    /// relabel them (the body stays `data:` lines).
    #[arg(long)]
    pub relabel_stream: bool,
    /// Refuse `stream: true` on /v1/chat/completions with a 400, as some gateways and mock
    /// servers do.
    #[arg(long)]
    pub refuse_stream: bool,
    /// Play a model that writes its tool calls as text: each call the sim would make goes into
    /// the answer's content as a Markdown JSON block (```json {"name": …, "arguments": …}```)
    /// instead of `tool_calls`, as local models and endpoints without a tool-call parser do.
    #[arg(long)]
    pub tool_calls_as_text: bool,
    /// Append each request body received to FILE, one JSON line each (created or emptied at
    /// start): shows what a host sends (tool_choice, extra_body).
    #[arg(long, value_name = "FILE")]
    pub record_requests: Option<std::path::PathBuf>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// `check --resume` parses the flags check.json kept: they read back as given.
    #[test]
    fn check_flags_read_back_as_given() {
        let given = [
            "mcpeval",
            "check",
            "--config",
            "c.toml",
            "--baseline",
            "node a.js",
            "--candidate",
            "demo:1.5.0",
            "--suite",
            "t",
            "--suite",
            "u.yaml",
            "--host",
            "openai:m",
            "--stages",
            "smoke,evaluation",
            "--out",
            "o",
            "--all",
            "--trials",
            "3",
            "--protocol-era",
            "legacy",
            "--client-profile",
            "roots",
            "--protocol-versions",
            "2025-11-25,2026-07-28",
            "--allow-skipped",
            "--stop-on-breaking",
            "--fail-on-description-risks",
        ];
        let parse = |argv: Vec<String>| match Cli::try_parse_from(argv).unwrap().command {
            Some(Command::Check(args)) => args,
            _ => panic!("not check"),
        };
        let first = parse(given.map(str::to_owned).to_vec());
        let stored = first.to_args();
        assert!(!stored.contains(&"--out".to_owned()), "{stored:?}");
        let argv = ["mcpeval", "check"].map(str::to_owned).into_iter();
        let again = parse(argv.chain(stored).collect());
        let without_out = CheckArgs { out: None, ..first };
        assert_eq!(format!("{again:?}"), format!("{without_out:?}"));
        let resumed = Cli::try_parse_from(["mcpeval", "check", "--resume", "d", "--all"]);
        assert!(resumed.is_err(), "--resume takes the kept flags only");
    }

    /// Every command and subcommand, with its path (`tasks list`).
    fn commands() -> Vec<(String, clap::Command)> {
        fn walk(prefix: &str, cmd: &clap::Command, out: &mut Vec<(String, clap::Command)>) {
            for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
                let path = format!("{prefix}{}", sub.get_name()).trim().to_owned();
                out.push((path.clone(), sub.clone()));
                walk(&format!("{path} "), sub, out);
            }
        }
        let mut out = Vec::new();
        walk("", &Cli::command(), &mut out);
        out
    }

    fn long_help(path: &str) -> String {
        let mut cmd = Cli::command();
        cmd.build();
        let mut sub = &mut cmd;
        for name in path.split_whitespace() {
            sub = sub.find_subcommand_mut(name).expect("a subcommand");
        }
        words(&sub.render_long_help().to_string())
    }

    /// The text with every run of white space made one space (help is wrapped to the terminal).
    fn words(text: &str) -> String {
        text.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn every_flag_that_speaks_of_a_default_gives_it_in_brackets() {
        for (path, cmd) in commands() {
            for arg in cmd
                .get_arguments()
                .filter(|a| a.get_action().takes_values())
            {
                let help = arg
                    .get_long_help()
                    .or(arg.get_help())
                    .map(|h| h.to_string())
                    .unwrap_or_default();
                if help.to_lowercase().contains("default") {
                    assert!(
                        help.contains("[default:") || !arg.get_default_values().is_empty(),
                        "`{path} --{}`: a default in passing, not as [default: …]: {help}",
                        arg.get_id()
                    );
                }
            }
        }
    }

    #[test]
    fn every_help_gives_its_defaults_and_environment() {
        for (path, says) in [
            (
                "run",
                &[
                    "[default: 10, or the config's; env: MCPEVAL_TRIALS]",
                    "[default: holm, or the config's [stats] correction]",
                    "OPENAI_API_KEY",
                    "GITHUB_STEP_SUMMARY",
                ][..],
            ),
            (
                "compare",
                &["[default: the run's [stats] alpha", "GITHUB_STEP_SUMMARY"],
            ),
            ("merge", &["GITHUB_STEP_SUMMARY"]),
            (
                "plan",
                &["[default: 0.8", "[default: 2000]", "MCPEVAL_TRIALS"],
            ),
            ("snapshot", &["[default: auto", "${VAR}"]),
            ("diff", &["[default: its server's version]"]),
            (
                "nightly",
                &[
                    "MCPEVAL_TRIALS",
                    "ANTHROPIC_API_KEY",
                    "GEMINI_API_KEY",
                    "[default: <out_dir>/history.parquet",
                ],
            ),
            (
                "history",
                &["[env: MCPEVAL_HISTORY=]", "[default: success]"],
            ),
            ("tasks check", &["else tasks/]", "warning"]),
            ("tasks import", &["[default: sim]", "--force"]),
            ("tasks list", &["[default: tasks/]"]),
            (
                "demo-server",
                &["[default: 1.4.0]", "MCPEVAL_DEMO_CRASH_AFTER"],
            ),
            (
                "sim-server",
                &[
                    "[default: 127.0.0.1:8089]",
                    "[default: 503]",
                    "[default: 0.5]",
                ],
            ),
        ] {
            let help = long_help(path);
            for s in says {
                assert!(help.contains(s), "`{path} --help` lacks `{s}`:\n{help}");
            }
        }
        let top = words(&Cli::command().render_long_help().to_string());
        for var in [
            "MCPEVAL_HISTORY",
            "OPENAI_BASE_URL",
            "GOOGLE_GEMINI_BASE_URL",
            "MCPEVAL_DEMO_CRASH_AFTER",
        ] {
            assert!(top.contains(var), "`mcpeval --help` lacks {var}:\n{top}");
        }
    }
}
