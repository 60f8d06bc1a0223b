//! `mcpeval plan` as a job: trials per side for Fisher's exact test to detect a drop in success
//! rate, for one test or for the tasks of a suite as a run would judge them (`--suite`), said in
//! lines of text for the command line to print.

use std::collections::BTreeMap;
use std::path::Path;

use super::JobError;

/// A line of the plan, as `format!` makes it.
macro_rules! say {
    ($lines:expr, $($arg:tt)*) => { $lines.push(format!($($arg)*)) };
}
use crate::analysis::RunDesign;
use crate::config::{resolve, InvalidSetting, Overrides, RunConfig};
use crate::episode::Side;
use crate::rundir::scan_episodes;
use crate::stats::{fisher_power, trials_needed, trials_needed_stable};
use crate::suite::{Task, TaskKind, TaskSet};

/// What `mcpeval plan` asks for.
#[derive(Debug, Clone, Default)]
pub struct PlanRequest {
    /// The success rate of the baseline (required without `suite`).
    pub baseline_rate: Option<f64>,
    /// The absolute drop to detect (0.10 = ten points).
    pub drop: f64,
    pub alpha: Option<f64>,
    pub power: Option<f64>,
    /// The most trials per side to consider.
    pub max_trials: u64,
    /// Plan the tasks of these suites as a run would judge them.
    pub suite: Vec<std::path::PathBuf>,
    pub config: Option<std::path::PathBuf>,
    pub host: Vec<String>,
    /// An earlier run whose baseline gives each task's rate and tokens.
    pub from: Option<std::path::PathBuf>,
    /// Plan an adaptive run (also when the config's `[stats] adaptive` is set): the trial budget
    /// the suite's tasks need.
    pub adaptive: bool,
}

/// The flags' ranges, said with the flags' names (the statistics would name their own
/// parameters).
fn check_flags(request: &PlanRequest) -> Result<(), InvalidSetting> {
    let open01 = |flag: &str, value: Option<f64>| match value {
        Some(v) if !(v > 0.0 && v < 1.0) => Err(InvalidSetting(format!(
            "{flag} must lie in (0, 1), got {v}"
        ))),
        _ => Ok(()),
    };
    open01("--alpha", request.alpha)?;
    open01("--power", request.power)?;
    match request.baseline_rate {
        Some(p) if !(0.0..=1.0).contains(&p) => Err(InvalidSetting(format!(
            "--baseline-rate must lie in [0, 1], got {p}"
        ))),
        Some(p) if request.drop > p => Err(InvalidSetting(format!(
            "--drop {} is larger than --baseline-rate {p}",
            request.drop
        ))),
        _ => Ok(()),
    }
}

/// The plan `request` asks for, as lines of text.
pub fn plan(request: &PlanRequest) -> Result<Vec<String>, JobError> {
    if request.drop.is_nan() || request.drop <= 0.0 {
        return Err(InvalidSetting(format!(
            "--drop must be above 0 (an absolute drop: 0.10 = ten points), got {}",
            request.drop
        ))
        .into());
    }
    check_flags(request)?;
    let mut lines = Vec::new();
    if !request.suite.is_empty() {
        plan_suite(request, &mut lines)?;
        return Ok(lines);
    }
    let Some(p0) = request.baseline_rate else {
        return Err(InvalidSetting::from("--baseline-rate is required without --suite").into());
    };
    single(
        p0,
        request.drop,
        request.alpha.unwrap_or(0.05),
        request.power.unwrap_or(0.8),
        request.max_trials.max(1),
        &mut lines,
    )?;
    Ok(lines)
}

/// Prints the first n whose exact power reaches the target, the n from which it stays there,
/// and the power at a few round numbers of trials for a sense of scale.
fn single(
    p0: f64,
    drop: f64,
    alpha: f64,
    power: f64,
    max: u64,
    lines: &mut Vec<String>,
) -> Result<(), JobError> {
    let first = trials_needed(p0, drop, alpha, power, max)?;
    say!(
        lines,
        "Fisher's exact test, two-sided, alpha {alpha}: baseline {:.1} % → candidate {:.1} % \
         (a drop of {:.1} points), power {:.0} %",
        p0 * 100.0,
        (p0 - drop) * 100.0,
        drop * 100.0,
        power * 100.0
    );
    match first {
        None => say!(
            lines,
            "trials per side: more than {max} (raise --max-trials)"
        ),
        Some(n) => {
            say!(lines, "trials per side: {n}");
            // Dips below the target happen just above the first n; looking a quarter beyond
            // it keeps this O(n³) search short (the full range would take minutes at 2000).
            let window = (n + n / 4 + 10).min(max);
            let stable = trials_needed_stable(p0, drop, alpha, power, window)?;
            match stable {
                Some(s) if s != n => say!(
                    lines,
                    "  exact power saw-tooths: it dips below {:.0} % again between {n} and {s}; \
                     from {s} trials on it stays above (checked up to {window})",
                    power * 100.0
                ),
                Some(_) => say!(
                    lines,
                    "  (power stays above the target from {n} up to {window})"
                ),
                None => say!(
                    lines,
                    "  exact power saw-tooths: it is below the target again at {window}; \
                     plan for more than {window} trials"
                ),
            }
        }
    }
    let mut scale: Vec<u64> = [5, 10, 20, 50, 100, 200]
        .into_iter()
        .filter(|&n| n <= max)
        .collect();
    if let Some(n) = first {
        scale.push(n);
    }
    scale.sort_unstable();
    scale.dedup();
    say!(lines, "  trials  power");
    for n in scale {
        let p = fisher_power(p0, drop, n, alpha)?;
        // Rounding can leave -0.0 for a power of nothing.
        let percent = if p > 0.0 { p * 100.0 } else { 0.0 };
        say!(lines, "  {n:>6}  {percent:>5.1} %");
    }
    Ok(())
}

/// What an earlier run's baseline says of one task.
#[derive(Debug, Default, Clone, Copy)]
struct Observed {
    n: u64,
    successes: u64,
    input_tokens: u64,
    output_tokens: u64,
}

/// An earlier run's baseline, per task, and the model each host answered as.
struct FromRun {
    tasks: BTreeMap<String, Observed>,
    models: BTreeMap<String, String>,
}

fn read_from(dir: &Path) -> Result<FromRun, JobError> {
    let mut from = FromRun {
        tasks: BTreeMap::new(),
        models: BTreeMap::new(),
    };
    let seen = scan_episodes(dir, |e| {
        // Call tasks' episodes carry no model's tokens or rate to plan from.
        if e.side != Side::Baseline || e.infra_error.is_some() || !e.kind.has_model() {
            return;
        }
        let o = from.tasks.entry(e.task_id.clone()).or_default();
        o.n += 1;
        o.successes += u64::from(e.success);
        o.input_tokens += e.input_tokens;
        o.output_tokens += e.output_tokens;
        from.models.insert(e.host.clone(), e.model.clone());
    })
    .map_err(|e| JobError::Episodes {
        dir: dir.to_path_buf(),
        source: e.into(),
    })?;
    if seen == 0 || from.tasks.is_empty() {
        return Err(InvalidSetting(format!(
            "`{}` has no baseline episodes to plan from (no {} there, or every one an \
             infrastructure error)",
            dir.display(),
            crate::rundir::EPISODES_JSONL
        ))
        .into());
    }
    Ok(from)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// `mcpeval plan --suite`: what a run of the suite can detect, and what it would cost.
fn plan_suite(args: &PlanRequest, lines: &mut Vec<String>) -> Result<(), JobError> {
    let overrides = Overrides {
        config: args.config.clone(),
        suites: args.suite.clone(),
        hosts: args.host.clone(),
        ..Overrides::default()
    };
    let mut config = resolve(&overrides)?;
    if let Some(a) = args.alpha {
        config.stats.alpha = a;
    }
    if let Some(p) = args.power {
        config.stats.power = p;
    }
    config
        .stats
        .validate()
        .map_err(|e| InvalidSetting(e.0.replace("[stats] ", "--")))?;
    let suite = crate::suite::load_or_embedded(&config.suites)?;
    if suite.tasks.is_empty() {
        return Err(InvalidSetting::from("the suite holds no task").into());
    }
    // As a run judges them: the call tasks (no model) are compared exactly, with no test, so
    // they take no share of the level, and run their own trials once, not per host.
    let (model_tasks, call_tasks): (Vec<&Task>, Vec<&Task>) =
        suite.tasks.iter().partition(|t| t.kind.has_model());
    let call_episodes: u64 = (call_tasks.iter())
        .map(|t| 2 * u64::from(t.trials.unwrap_or(1)))
        .sum();
    if model_tasks.is_empty() {
        say!(
            lines,
            "Suite: {} call task(s), no model task: each call task is compared exactly (no test, \
             nothing to plan); a run makes {call_episodes} episodes, its trials on both sides.",
            call_tasks.len()
        );
        return Ok(());
    }
    let from = args.from.as_deref().map(read_from).transpose()?;
    let stats = &config.stats;
    let design = RunDesign {
        tasks: model_tasks.iter().map(|t| (t.kind, t.set)).collect(),
        hosts: config.hosts.len(),
    };
    describe(&design, &suite.tasks, &config, lines);
    // The baseline rate of each task: the earlier run's, else --baseline-rate, else 100 %.
    let given = args.baseline_rate.unwrap_or(1.0);
    let rates: Vec<f64> = model_tasks
        .iter()
        .map(|t| match from.as_ref().and_then(|f| f.tasks.get(&t.id)) {
            Some(o) if o.n > 0 => o.successes as f64 / o.n as f64,
            _ => given,
        })
        .collect();
    let p0 = match (&from, args.baseline_rate) {
        (_, Some(p)) => p,
        (Some(_), None) => median(rates.clone()),
        (None, None) => 1.0,
    };
    if p0 - args.drop < 0.0 {
        return Err(InvalidSetting(format!(
            "--drop {} is larger than the baseline rate {p0}",
            args.drop
        ))
        .into());
    }
    let task_level = design.task_level(stats);
    let max = args.max_trials.max(1);
    let needed = trials_needed(p0, args.drop, task_level, stats.power, max)?;
    let source = if from.is_some() && args.baseline_rate.is_none() {
        "the median task's baseline rate in the earlier run"
    } else {
        "baseline rate"
    };
    match needed {
        Some(n) => say!(
            lines,
            "One task at {} ({source}) falling by {} points is flagged with {} power from {n} \
             trials per side (Fisher's exact test at the per-task level {task_level:.2e}).",
            crate::analysis::percent(p0),
            crate::analysis::points(args.drop),
            crate::analysis::percent(stats.power),
        ),
        None => say!(
            lines,
            "One task at {} falling by {} points needs more than {max} trials per side to be \
             flagged with {} power (raise --max-trials).",
            crate::analysis::percent(p0),
            crate::analysis::points(args.drop),
            crate::analysis::percent(stats.power),
        ),
    }
    let configured = u64::from(config.trials);
    let mut at: Vec<u64> = vec![configured];
    if let Some(n) = needed.filter(|n| *n != configured) {
        at.push(n);
    }
    for trials in at {
        let label = if trials == configured {
            "the config's"
        } else {
            "the recommended"
        };
        let single = single_task(&design, stats, p0, trials)?;
        let suite_drop = match design.suite_drop(stats, trials, &rates)? {
            Some(d) => format!(
                "the whole-suite success row flags a drop of every task by {} points",
                crate::analysis::points(d)
            ),
            None => "the whole-suite success row cannot flag even a drop to 0 %".into(),
        };
        say!(
            lines,
            "At {label} {trials} trials per side: {single}; {suite_drop}."
        );
    }
    if args.adaptive || stats.adaptive {
        adaptive_budget(stats, model_tasks.len(), config.hosts.len(), needed, lines);
    }
    if let (Some(from), Some(n)) = (&from, needed) {
        estimate(&config, &model_tasks, call_episodes, from, n, lines);
    }
    Ok(())
}

/// The trial budget an adaptive run of `tasks` × `hosts` needs: every task's first look, and
/// every task's looks up to the recommended trials (`needed`, rounded up to a look and capped at
/// `max_trials`).
fn adaptive_budget(
    stats: &crate::config::StatsConfig,
    tasks: usize,
    hosts: usize,
    needed: Option<u64>,
    lines: &mut Vec<String>,
) {
    let needs = super::BudgetNeeds::of(stats, tasks, hosts);
    let max = u64::from(stats.max_trials);
    let per_task = match needed {
        Some(n) => stats
            .looks()
            .iter()
            .map(|l| u64::from(*l))
            .find(|l| *l >= n)
            .unwrap_or(max),
        None => max,
    };
    let units = (tasks * hosts) as u64;
    say!(
        lines,
        "Adaptive (looks of {} trials per side, up to max_trials {max}): a trial budget is \
         trials per side for the whole run. Every task's first look needs {}; letting every \
         task run to {per_task} trials per side{} needs {} ({tasks} tasks × {hosts} host(s) × \
         {per_task}); every task to max_trials needs {}.",
        stats.look_every,
        needs.first_look,
        match needed {
            Some(n) if n <= max => format!(" (the recommended {n}, at its look)"),
            Some(n) => format!(" (max_trials; the recommended {n} is beyond it)"),
            None => String::new(),
        },
        units * per_task,
        needs.max_trials
    );
    if let Some(budget) = stats.trial_budget {
        let verdict = if budget < needs.first_look {
            "too small: a run refuses it"
        } else if budget < units * per_task {
            "enough for every first look, not for the recommended trials of every task"
        } else {
            "enough"
        };
        say!(lines, "The config's trial_budget {budget}: {verdict}.");
    }
}

/// What a single task at `p0` must lose to be flagged at `trials` per side, in words.
fn single_task(
    design: &RunDesign,
    stats: &crate::config::StatsConfig,
    p0: f64,
    trials: u64,
) -> Result<String, JobError> {
    if !design.task_flaggable(stats, trials) {
        return Ok(format!(
            "no single task can be flagged (the smallest Fisher p, {:.2e}, is above the \
             per-task level)",
            crate::stats::min_fisher_p(trials)
        ));
    }
    let level = design.task_level(stats);
    let drop =
        crate::stats::fisher_mde(p0, trials, trials, level, stats.power, stats.success_margin)?;
    Ok(match drop {
        Some(d) => format!(
            "a single task at {} is flagged when it falls by {} points",
            crate::analysis::percent(p0),
            crate::analysis::points(d)
        ),
        None => format!(
            "a single task at {} is not flagged with {} power even when it falls to 0 %",
            crate::analysis::percent(p0),
            crate::analysis::percent(stats.power)
        ),
    })
}

/// The suite's shape and the levels a run of it gives its rows.
fn describe(design: &RunDesign, tasks: &[Task], config: &RunConfig, lines: &mut Vec<String>) {
    let stats = &config.stats;
    let count = |f: &dyn Fn(&Task) -> bool| tasks.iter().filter(|t| f(t)).count();
    let level = design.level(stats);
    let calls = count(&|t| t.kind == TaskKind::Call);
    let calls = match calls {
        0 => String::new(),
        n => format!(", {n} call (no model: compared exactly on their own trials, no share of α)"),
    };
    say!(
        lines,
        "Suite: {} tasks ({} tool, {} no-tool{calls}; {} regression, {} capability) × {} \
         host(s); α = {} for the run, split over {} gated families ({:.2e} each, {} within each).",
        tasks.len(),
        count(&|t| t.kind == TaskKind::Tool),
        count(&|t| t.kind == TaskKind::NoTool),
        count(&|t| t.set == TaskSet::Regression),
        count(&|t| t.set == TaskSet::Capability),
        design.hosts,
        stats.alpha,
        level.families,
        level.family_alpha,
        stats.correction.as_str(),
    );
    say!(
        lines,
        "Per task: level {:.2e} (the family's over {} model tasks, the worst case of the \
         correction). Suite rows: {} gated, level {:.2e}; margin {} points for rates.",
        design.task_level(stats),
        design.tasks.len(),
        design.gated_suite_rows(stats),
        design.suite_level(stats),
        crate::analysis::points(stats.suite_success_margin),
    );
}

/// The episodes, tokens and cost of a run at `trials` per side, from the earlier run's tokens
/// per trial of each model task (tasks it lacks: the mean of the others); the call tasks add
/// `call_episodes`, whatever the trials, and no tokens.
fn estimate(
    config: &RunConfig,
    tasks: &[&Task],
    call_episodes: u64,
    from: &FromRun,
    trials: u64,
    lines: &mut Vec<String>,
) {
    let per_trial = |o: &Observed| {
        (
            o.input_tokens as f64 / o.n as f64,
            o.output_tokens as f64 / o.n as f64,
        )
    };
    let known: Vec<(f64, f64)> = from
        .tasks
        .values()
        .filter(|o| o.n > 0)
        .map(per_trial)
        .collect();
    let fallback = (
        known.iter().map(|k| k.0).sum::<f64>() / known.len() as f64,
        known.iter().map(|k| k.1).sum::<f64>() / known.len() as f64,
    );
    let (mut input, mut output) = (0.0, 0.0);
    for t in tasks {
        let (i, o) = from.tasks.get(&t.id).map_or(fallback, per_trial);
        input += i;
        output += o;
    }
    let episodes_per_host = tasks.len() as u64 * 2 * trials;
    let episodes = episodes_per_host * config.hosts.len() as u64 + call_episodes;
    let calls = match call_episodes {
        0 => String::new(),
        n => format!(" ({n} of them the call tasks' requests)"),
    };
    let scale = 2.0 * trials as f64;
    let (input, output) = (
        (input * scale).round() as u64,
        (output * scale).round() as u64,
    );
    let mut costs = Vec::new();
    let mut unpriced = Vec::new();
    for host in &config.hosts {
        let model = from
            .models
            .get(&host.name)
            .map_or(host.name.as_str(), String::as_str);
        match crate::runner::price_for(&host.name, model, &config.prices) {
            Some(price) => costs.push(crate::runner::cost(price, input, output)),
            None => unpriced.push(host.name.clone()),
        }
    }
    let cost = if costs.is_empty() {
        "no `[prices]` entry for its hosts".to_owned()
    } else {
        let total: f64 = costs.iter().sum();
        let mut s = format!("estimated cost ${total:.2}");
        if !unpriced.is_empty() {
            s.push_str(&format!(
                " (without {}: no `[prices]` entry)",
                unpriced.join(", ")
            ));
        }
        s
    };
    say!(
        lines,
        "Recommended run ({trials} trials per side): {episodes} episodes{calls}, about {input} \
         input and {output} output tokens per host (from the earlier run's baseline tokens per \
         trial); {cost}.",
    );
}
