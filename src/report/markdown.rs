//! `summary.md`: the verdict, the suite rows, the tasks that regressed with their grades'
//! explanations, then the rest, and what the run could detect; readable on a GitHub PR.

use std::fmt::Write;

use super::export::Report;
use super::format;
use crate::analysis::{
    Comparison, Outcome, Row, SideOutcome, TaskOutcome, MAX_PLANNED_TRIALS, SUITE,
};
use crate::analysis::{Scope, Verdict};
use crate::config::Metric;
use crate::rundir::{RunInfo, RunStatus, ServerRecord};

/// Renders the summary. Deterministic: the same report gives the same text.
pub fn summary(report: &Report) -> String {
    let c = report.comparison;
    let mut out = String::new();
    let stopped = stopped_early(&mut out, report);
    let simulated = report.info.hosts.iter().any(|h| h.simulated);
    headline(
        &mut out,
        c,
        stopped,
        if simulated { " (simulated model)" } else { "" },
    );
    if let Some(line) = super::format::recovered_line(c) {
        let _ = writeln!(out, "{line}\n");
    }
    if let Some(line) = super::format::simulated_users_line(c) {
        let _ = writeln!(out, "{line}\n");
    }
    if let Some(line) = super::format::unprepared_line(c) {
        let _ = writeln!(out, "{line}\n");
    }
    out.push_str(&super::diagnosis::markdown(
        &crate::analysis::Diagnosis::of(c),
    ));
    facts(&mut out, report);
    super::triggered::markdown(&mut out, report.info);
    super::stale_list::markdown(&mut out, report);
    suite(&mut out, c);
    broken(&mut out, c);
    regressed(&mut out, c);
    super::tool_search::markdown(&mut out, c);
    turns(&mut out, c);
    others(&mut out, c);
    super::tool_choice::markdown(&mut out, report);
    adaptive(&mut out, c);
    usage(&mut out, report);
    answers(&mut out, report);
    detectable(&mut out, c);
    out
}

/// Conversations: each user turn's own success per side, tested like a task's, so that a
/// regressed conversation says which turn regressed.
fn turns(out: &mut String, c: &Comparison) {
    if c.turn_rows.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Conversation turns\n\nEach user turn graded by its own `expect`, compared like a \
         task's success (Fisher's exact test; the turn rows of a host adjusted together). A turn \
         row explains its task's row and gates nothing.\n\n\
         | task | host | turn | success b → c | p_adj | verdict |\n|---|---|---:|---|---:|---|"
    );
    for r in &c.turn_rows {
        let rate = |m: Option<f64>| format::value(Metric::Success, m);
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} | {} → {} | {} | {} |",
            r.task_id,
            r.host,
            r.turn.unwrap_or(0),
            rate(r.baseline_mean),
            rate(r.candidate_mean),
            r.p_adjusted.map_or("–".to_owned(), |p| format!("{p:.2e}")),
            r.verdict.as_str()
        );
    }
    out.push('\n');
}

/// An adaptive run: per task how many trials it took and why it stopped, and the trials and
/// tokens spent against what the fixed design (`max_trials` for every task) would have spent.
fn adaptive(out: &mut String, c: &Comparison) {
    let rows: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| !r.is_suite() && r.metric == Metric::Success && r.trials_run.is_some())
        .collect();
    if rows.is_empty() {
        return;
    }
    let max = u64::from(c.stats.max_trials);
    let _ = writeln!(
        out,
        "## Adaptive trials\n\nEach task ran in looks of {} trials per side, up to {max}, until its \
         verdict was settled.\n\n| task | host | trials per side | stopped |\n|---|---|---:|---|",
        c.stats.look_every
    );
    let (mut run, mut tokens, mut fixed_tokens) = (0u64, 0.0, 0.0);
    for r in &rows {
        let n = r.trials_run.unwrap_or(0);
        run += 2 * u64::from(n);
        let stopped = r.stopped.map_or("running", |s| s.as_str());
        let _ = writeln!(out, "| `{}` | `{}` | {n} | {stopped} |", r.task_id, r.host);
        let used = c.rows.iter().find(|t| {
            t.metric == Metric::TotalTokens && t.task_id == r.task_id && t.host == r.host
        });
        if let Some(t) = used {
            let (b, cand) = (
                t.baseline_mean.unwrap_or(0.0),
                t.candidate_mean.unwrap_or(0.0),
            );
            tokens += b * f64::from(t.n_baseline) + cand * f64::from(t.n_candidate);
            fixed_tokens += (b + cand) * max as f64;
        }
    }
    let fixed = 2 * max * rows.len() as u64;
    let share = |a: f64, b: f64| if b > 0.0 { 100.0 * a / b } else { 0.0 };
    let _ = writeln!(
        out,
        "\nTrials: {run} of the fixed design's {fixed} ({:.0} %). Tokens: {:.0} against about {:.0} \
         at {max} trials per task ({:.0} %).\n",
        share(run as f64, fixed as f64),
        tokens,
        fixed_tokens,
        share(tokens, fixed_tokens)
    );
}

/// Requests, tokens and the estimated cost per host and side (`[prices]` of the config).
fn usage(out: &mut String, report: &Report) {
    let c = report.comparison;
    if c.usage.is_empty() {
        return;
    }
    let prices = &report.info.config.prices;
    let _ = writeln!(
        out,
        "## Tokens and cost\n\n| host | side | episodes | model requests | input tokens | output \
         tokens | estimated cost |\n| --- | --- | ---: | ---: | ---: | ---: | ---: |"
    );
    for u in &c.usage {
        let cost = match crate::runner::price_for(&u.host, &u.model, prices) {
            Some(price) => format!(
                "${:.4}",
                crate::runner::cost(price, u.input_tokens, u.output_tokens)
            ),
            None => "– (no `[prices]` entry)".to_owned(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            u.host, u.side, u.episodes, u.requests, u.input_tokens, u.output_tokens, cost
        );
    }
    // A judge's calls, priced when the run had one judge model (several: per-task, unpriced).
    let judges = &report.info.judges;
    for u in c.usage.iter().filter(|u| u.judge_requests > 0) {
        let price = match judges.as_slice() {
            [judge] => crate::runner::price_for(&judge.name, &judge.model, prices),
            _ => None,
        };
        let cost = match price {
            Some(price) => format!(
                "${:.4}",
                crate::runner::cost(price, u.judge_input_tokens, u.judge_output_tokens)
            ),
            None => "– (no `[prices]` entry for one judge)".to_owned(),
        };
        let _ = writeln!(
            out,
            "| `{}` | {} · judge | – | {} | {} | {} | {} |",
            u.host, u.side, u.judge_requests, u.judge_input_tokens, u.judge_output_tokens, cost
        );
    }
    let _ = writeln!(out);
    let list = super::tool_tokens::lines(report.info, &c.usage);
    if !list.is_empty() {
        let _ = writeln!(out, "{}\n", list.join("\n"));
    }
}

/// How the models answered, per host and side, where there is anything to say: answers cut at
/// the output cap or at the timeout (the model's outcomes, graded as they came), reasoning
/// tokens, time to first token.
fn answers(out: &mut String, report: &Report) {
    let usage = &report.comparison.usage;
    if !usage.iter().any(|u| u.has_answer_facts()) {
        return;
    }
    let _ = writeln!(
        out,
        "## How the models answered

Cut answers are the model's outcomes, graded as they \
         came back (not infrastructure errors).

| host | side | episodes | stopped at the \
         output cap | cut at the timeout | reasoning tokens | mean time to first token |\n\
         | --- | --- | ---: | ---: | ---: | ---: | ---: |"
    );
    for u in usage {
        let ttft = u
            .mean_ttft_ms()
            .map_or_else(|| "–".to_owned(), |t| format!("{t:.0} ms"));
        let _ = writeln!(
            out,
            "| `{}` | {} | {} | {} | {} | {} | {} |",
            u.host, u.side, u.episodes, u.truncated, u.timed_out, u.reasoning_tokens, ttft
        );
    }
    let _ = writeln!(out);
}

/// A run cut short (interrupted, or stopped by its budget) or left incomplete (too many
/// infrastructure errors, a host stopped) says so first: how many of the planned trials ran, and
/// the exit code it ends with. Returns whether the verdict below is only of the trials that
/// finished, the run's exit code being another's (130 for an interrupt, 3 for an incomplete run).
fn stopped_early(out: &mut String, report: &Report) -> bool {
    let info = report.info;
    let (title, whole_exit) = match info.status {
        RunStatus::Interrupted => ("interrupted", true),
        RunStatus::BudgetReached => ("stopped by its budget", false),
        RunStatus::Incomplete => ("incomplete", true),
        _ => return false,
    };
    let c = report.comparison;
    let ran = |side: fn(&TaskOutcome) -> &SideOutcome| -> u32 {
        c.tasks
            .iter()
            .map(|t| side(t).n + side(t).infra_errors)
            .sum()
    };
    let (planned, how) = planned(info);
    let _ = writeln!(out, "# mcpeval: {title}\n");
    let ending = match info.status {
        RunStatus::Interrupted => {
            "It exits 130; `mcpeval run --resume DIR` runs the trials that are missing.".to_owned()
        }
        RunStatus::Incomplete => {
            let mut why = format!(
                "{} of {} episodes ended as infrastructure errors",
                info.infra_errors, info.episodes
            );
            for s in &info.stopped_hosts {
                let _ = write!(
                    why,
                    "; host `{}` was stopped ({}) and {} of its trials were not run",
                    s.host, s.reason, s.not_run
                );
            }
            format!(
                "{why}. It exits 3; once the cause is fixed, `mcpeval run --resume DIR` runs those \
                 trials again and finishes the run."
            )
        }
        _ => "Scheduling stopped at a `[budget]` limit; the exit code is the verdict's below."
            .to_owned(),
    };
    let _ = writeln!(
        out,
        "The run was {title} after {} baseline and {} candidate trials of the {planned} per side \
         planned ({how}). {ending} The verdicts below are of the trials that finished.\n",
        ran(|t| &t.baseline),
        ran(|t| &t.candidate),
    );
    whole_exit
}

/// The trials per side a run planned, and how they add up: the model tasks × the model hosts ×
/// the trials, plus the call tasks' own trials (a call task runs on each side as many times as
/// its `trials:` says, with no model and no host).
fn planned(info: &RunInfo) -> (usize, String) {
    let calls: Vec<u32> = (info.tasks.iter())
        .filter_map(|t| info.call_trials.get(t).copied())
        .collect();
    let call_trials: usize = calls.iter().map(|n| *n as usize).sum();
    let models = info.tasks.len() - calls.len();
    let hosts = (info.hosts.iter())
        .filter(|h| h.name != crate::episode::DIRECT_HOST)
        .count();
    let trials = info.trials as usize;
    let model_words =
        |kind: &str| format!("{models} {kind}task(s) × {hosts} host(s) × {trials} trials");
    let call_words = if call_trials == calls.len() {
        format!("{} call task(s) × 1 trial", calls.len())
    } else {
        format!("{} call task(s), {call_trials} trials in all", calls.len())
    };
    let how = match (models, calls.len()) {
        (_, 0) => model_words(""),
        (0, _) => call_words,
        _ => format!("{} + {call_words}", model_words("model ")),
    };
    (models * hosts * trials + call_trials, how)
}

/// The verdict: what regressed, or that nothing did, with the exit code. Under the headline of
/// a run cut short by an interrupt it is the verdict of the trials that finished, a section of
/// its own, and the exit code is the interrupt's.
fn headline(out: &mut String, c: &Comparison, interrupted: bool, label: &str) {
    let (title, exit): (&str, fn(u8) -> String) = if interrupted {
        ("## Verdict of the trials that finished: ", |code| {
            format!("Finished here, it would exit {code}.")
        })
    } else {
        ("# mcpeval: ", |code| format!("Exit code {code}."))
    };
    let regressions: Vec<&Row> = c.gated_regressions().collect();
    match c.outcome() {
        Outcome::InfraFailure => {
            let _ = writeln!(out, "{title}infrastructure failure{label}\n");
            let _ = writeln!(
                out,
                "{} of {} episodes ({}) ended in an infrastructure error, more than the limit of \
                 {}: the statistics below leave them out and cannot be trusted. {}\n",
                c.infra_errors,
                c.episodes,
                format::percent(c.infra_share()),
                format::percent(c.stats.max_infra_share),
                exit(3)
            );
        }
        Outcome::Regression => {
            let _ = writeln!(out, "{title}regression{label}\n");
            regression_list(out, c, &regressions, &exit(1));
        }
        Outcome::Pass => {
            let _ = writeln!(out, "{title}no regression{label}\n");
            let rows: Vec<&Row> = (c.rows.iter())
                .filter(|r| r.gated && r.tested() && r.verdict == Verdict::Inconclusive)
                .collect();
            let inconclusive = rows.len();
            let k = format::Kinds::of(c, rows);
            let kinds = match (k.too_few, k.changed) {
                _ if !k.fixed_only() => format!(": {}", k.words()),
                (0, 0) => String::new(),
                (_, 0) => ": too few trials to rule out a change as large as the margin".into(),
                (0, _) => ": changed, but by less than the margin, while the interval still \
                           reaches past it"
                    .into(),
                (f, ch) => format!(
                    ": {f} with too few trials to tell, {ch} changed by less than the margin while \
                     the interval still reaches past it"
                ),
            };
            let _ = writeln!(
                out,
                "No gated metric regressed. {} gated {} inconclusive{kinds} (see the last \
                 section). {}\n",
                inconclusive,
                if inconclusive == 1 {
                    "row is"
                } else {
                    "rows are"
                },
                exit(0)
            );
        }
    }
}

/// Rows grouped by task (or suite scope) and host, in their order.
type Groups<'a> = Vec<((String, String), Vec<&'a Row>)>;

fn grouped<'a>(rows: &[&'a Row]) -> Groups<'a> {
    let mut groups: Groups<'a> = Vec::new();
    for r in rows {
        let key = (task_name(r), r.host.clone());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(r),
            None => groups.push((key, vec![r])),
        }
    }
    groups
}

/// The gated rows that regressed: the tasks first, one line each with the metrics that
/// regressed, then the suite rows (the whole suite, its sets and kinds), one line per scope.
fn regression_list(out: &mut String, c: &Comparison, regressions: &[&Row], exit: &str) {
    let (tasks, suite): (Vec<&Row>, Vec<&Row>) =
        regressions.iter().copied().partition(|r| !r.is_suite());
    let (task_groups, suite_groups) = (grouped(&tasks), grouped(&suite));
    let count =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut parts = Vec::new();
    if !tasks.is_empty() {
        parts.push(format!(
            "{} in {}",
            tasks.len(),
            count(task_groups.len(), "task", "tasks")
        ));
    }
    if !suite.is_empty() {
        parts.push(count(suite.len(), "suite row", "suite rows"));
    }
    let _ = writeln!(
        out,
        "{} regressed: {}. {exit}\n",
        count(regressions.len(), "gated row", "gated rows"),
        parts.join(", then ")
    );
    let line = |out: &mut String, label: String, host: &str, rows: &[&Row]| {
        let metrics: Vec<String> = rows
            .iter()
            .map(|r| {
                let outcome = c.tasks.iter().find(|t| {
                    r.metric == Metric::Success && t.task_id == r.task_id && t.host == r.host
                });
                let (b, cand) = match outcome {
                    Some(t) => (
                        format::successes(&t.baseline),
                        format::successes(&t.candidate),
                    ),
                    None => (
                        format::value(r.metric, r.baseline_mean),
                        format::value(r.metric, r.candidate_mean),
                    ),
                };
                format!("{} {b} → {cand}", r.metric)
            })
            .collect();
        let _ = writeln!(out, "- {label} · `{host}`: {}", metrics.join(", "));
    };
    if !task_groups.is_empty() {
        let _ = writeln!(out, "Tasks:\n");
        for ((task, host), rows) in &task_groups {
            line(out, format!("`{task}`"), host, rows);
        }
        let _ = writeln!(out);
    }
    if !suite_groups.is_empty() {
        let _ = writeln!(out, "Suite rows (the tasks pooled as strata):\n");
        for ((scope, host), rows) in &suite_groups {
            line(out, scope.clone(), host, rows);
        }
        let _ = writeln!(out);
    }
}

fn task_name(r: &Row) -> String {
    match (r.task_id == SUITE, r.scope) {
        (false, _) => r.task_id.clone(),
        (true, Scope::Suite | Scope::Task) => "suite".into(),
        (true, scope) => format!("suite {scope}"),
    }
}

/// An app host as the summary names it: the app, its version and the model it was given
/// (`claude-code:sim` → app `claude-code` 2.1.332, model `sim`).
fn app_host(h: &crate::rundir::HostRecord) -> String {
    let (app, model) = match h.model.split_once(':') {
        Some((app, model)) => (app, format!("model `{model}`")),
        None => (h.model.as_str(), "the app's default model".to_owned()),
    };
    let version = h
        .version
        .as_deref()
        .map_or_else(String::new, |v| format!(" `{v}`"));
    format!("`{}` (app `{app}`{version}, {model})", h.name)
}

fn server(record: &ServerRecord) -> String {
    match &record.info {
        Some(i) => format!(
            "`{}`: {} {} (protocol {}, {})",
            record.spec, i.name, i.version, i.protocol_version, i.era
        ),
        None => format!("`{}`", record.spec),
    }
}

fn facts(out: &mut String, report: &Report) {
    let (info, c) = (report.info, report.comparison);
    let base = report.baseline_info();
    let _ = writeln!(out, "| | |\n| --- | --- |");
    let _ = writeln!(out, "| run | `{}` |", info.run_id);
    match info.status.as_str() {
        "completed" => {}
        "running" => {
            let _ = writeln!(
                out,
                "| status | **running**: partial results of the trials finished so far |"
            );
        }
        "budget_reached" => {
            let _ = writeln!(
                out,
                "| status | **budget reached**: scheduling stopped at a `[budget]` limit; partial \
                 results of the trials that finished |"
            );
        }
        other => {
            let _ = writeln!(
                out,
                "| status | **{other}**: partial results; finish with `mcpeval run --resume DIR` |"
            );
        }
    }
    if let Some(b) = report.baseline_run {
        let _ = writeln!(out, "| baseline run | `{}` (compare --against) |", b.run_id);
    }
    let _ = writeln!(out, "| baseline | {} |", server(&base.baseline));
    let window = match info.config.stale_list {
        true => " — **the stale-list window**: offered the baseline's tool list (`--stale-list`)",
        false => "",
    };
    let _ = writeln!(out, "| candidate | {}{window} |", server(&info.candidate));
    let hosts: Vec<String> = info
        .hosts
        .iter()
        .map(|h| {
            if h.simulated {
                format!(
                    "`{}` (the embedded simulated model, not a real LLM)",
                    h.name
                )
            } else if h.program.is_some() {
                app_host(h)
            } else if h.name == crate::episode::DIRECT_HOST {
                format!(
                    "`{}` (the call tasks: mcpeval's own requests, no model)",
                    h.name
                )
            } else {
                format!("`{}` ({})", h.name, h.model)
            }
        })
        .collect();
    let _ = writeln!(out, "| hosts | {} |", hosts.join(", "));
    let trials = match (
        c.tasks.iter().any(|t| t.kind.has_model()),
        c.tasks.iter().any(|t| !t.kind.has_model()),
    ) {
        (_, false) => format!("{} per task and side", info.trials),
        (true, true) => format!(
            "{} per task and side; call tasks as many as their `trials:` say (1 unless set)",
            info.trials
        ),
        (false, true) => {
            "as many per call task and side as its `trials:` says (1 unless set)".to_owned()
        }
    };
    let _ = writeln!(out, "| trials | {trials}, seed {} |", info.seed);
    let _ = writeln!(
        out,
        "| episodes | {} ({} infrastructure errors, left out of the statistics; limit {}) |",
        c.episodes,
        c.infra_errors,
        format::percent(c.stats.max_infra_share)
    );
    let counts = format::TaskCounts::of(info, c);
    let _ = writeln!(out, "| trigger | {} |", trigger(info, &counts));
    if counts.short() {
        let mut line = counts.words();
        if !counts.never_ran.is_empty() {
            let names: Vec<String> = (counts.never_ran.iter())
                .take(10)
                .map(|t| format!("`{t}`"))
                .collect();
            let more = counts.never_ran.len().saturating_sub(10);
            line.push_str(&format!(
                ": {}{}",
                names.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            ));
            line.push_str(counts.never_ran_cause());
        }
        let _ = writeln!(out, "| tasks | {line} |");
    }
    if !info.config.renames.is_empty() {
        let pairs: Vec<String> = (info.config.renames.iter())
            .map(|(old, new)| format!("`{old}` → `{new}`"))
            .collect();
        let meant = match info.config.stale_list {
            true => "not followed: the stale-list window offers the baseline's names",
            false => "the candidate side's tasks expect, forbid and call the new names",
        };
        let _ = writeln!(out, "| renames | {} ({meant}) |", pairs.join(", "));
    }
    if let Some(line) = state_line(&info.config) {
        let _ = writeln!(out, "| server state | {line} |");
    }
    let gated: Vec<&str> = c.stats.gated.iter().map(|m| m.as_str()).collect();
    let _ = writeln!(
        out,
        "| verdict rule | α = {} for the whole run, split over {} gated families (α = {} each; \
         {} within each); margins: success {} points, counts {} (suite rows: {} points, {}); \
         gated: {} |\n",
        c.stats.alpha,
        c.level.families,
        trim(c.level.family_alpha),
        c.stats.correction.as_str(),
        trim(c.stats.success_margin * 100.0),
        format::percent(c.stats.relative_margin),
        trim(c.stats.suite_success_margin * 100.0),
        format::percent(c.stats.suite_relative_margin),
        gated.join(", ")
    );
}

fn trigger(info: &RunInfo, counts: &format::TaskCounts) -> String {
    match &info.trigger {
        Some(t) => t.clone(),
        None if counts.never_ran.is_empty() => format!(
            "none: every task of the suite ran ({} tasks)",
            info.tasks.len()
        ),
        None => format!(
            "none: the whole suite was selected ({} tasks); {} of them never ran",
            info.tasks.len(),
            counts.never_ran.len()
        ),
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.6}");
    s.trim_end_matches('0').trim_end_matches('.').to_owned()
}

/// The header of a table of rows; the interval's level follows `alpha`.
fn row_header(c: &Comparison) -> String {
    format!(
        "| metric | baseline | candidate | delta | {} % CI | test | p | p adj. | verdict | flags \
         (power {}) |\n| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | --- | ---: |",
        trim((1.0 - c.stats.alpha) * 100.0),
        format::percent(c.stats.power)
    )
}

fn row_line(c: &Comparison, r: &Row) -> String {
    let verdict = match (r.tested(), r.gated) {
        (false, _) => "– (no test)".to_owned(),
        (true, gated) => {
            let mark = verdict_mark(r.verdict);
            let mark = if gated {
                mark
            } else {
                format!("{mark} (not gated)")
            };
            match format::reason(c, r, format::Length::Full) {
                Some(why) => format!("{mark}: {why}"),
                None => mark,
            }
        }
    };
    let flags = if r.tested() {
        format::mde(r)
    } else {
        "–".into()
    };
    format!(
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {flags} |",
        metric_name(r),
        format::value(r.metric, r.baseline_mean),
        format::value(r.metric, r.candidate_mean),
        format::delta(r.metric, r.delta),
        format::interval(r),
        r.test.as_str(),
        format::p(r.p_value),
        format::p(r.p_adjusted),
        verdict
    )
}

fn metric_name(r: &Row) -> String {
    let name = match r.k {
        Some(k) => format!("{} (k = {k})", r.metric),
        None => r.metric.to_string(),
    };
    match r.scope {
        Scope::Task | Scope::Suite => name,
        scope => format!("{name} · {scope}"),
    }
}

fn verdict_mark(v: Verdict) -> String {
    match v {
        Verdict::Regression => "**regression**".into(),
        other => other.as_str().to_owned(),
    }
}

fn suite(out: &mut String, c: &Comparison) {
    // A host of call tasks only has no suite rows.
    for host in hosts(c)
        .into_iter()
        .filter(|h| c.suite_rows(h).next().is_some())
    {
        let _ = writeln!(
            out,
            "## Suite · `{host}`\n\nThe tasks are strata and every trial counts: rates by the \
             Cochran–Mantel–Haenszel test (`cmh`; `cmh_exact` where the counts are too small for \
             it), delta = the Mantel–Haenszel risk difference; counts by van Elteren's stratified \
             rank test (`van_elteren`), delta = the mean per-task delta with a task-level \
             bootstrap interval. Means are pooled over the tasks run on both sides. \
             `false_call_rate`: no-tool episodes that called a tool; `missed_call_rate`: tool \
             episodes that called none. The last column is the smallest change in the bad \
             direction the row flags with that power (the same change on every task). The parts \
             of the suite (a set, a kind) show their gated rows.\n"
        );
        let _ = writeln!(out, "{}", row_header(c));
        for r in c
            .suite_rows(host)
            .filter(|r| r.scope == Scope::Suite || r.gated)
        {
            let _ = writeln!(out, "{}", row_line(c, r));
        }
        let _ = writeln!(out);
    }
}

fn hosts(c: &Comparison) -> Vec<&str> {
    let mut hosts: Vec<&str> = c.rows.iter().map(|r| r.host.as_str()).collect();
    hosts.dedup();
    hosts
}

fn broken(out: &mut String, c: &Comparison) {
    let broke: Vec<&TaskOutcome> = c.tasks.iter().filter(|t| t.broke()).collect();
    if broke.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Regression-set tasks that broke\n\nThe baseline passed every trial, the candidate \
         failed at least one (listed whatever the verdict):\n"
    );
    for t in broke {
        let row = c
            .task_rows(&t.task_id, &t.host)
            .find(|r| r.metric == Metric::Success);
        let why = row
            .and_then(|r| format::reason(c, r, format::Length::Full))
            .map_or_else(String::new, |why| format!(": {why}"));
        let _ = writeln!(
            out,
            "- `{}` · `{}`: {} → {} (success verdict: {}){why}",
            t.task_id,
            t.host,
            format::successes(&t.baseline),
            format::successes(&t.candidate),
            row.map_or("inconclusive", |r| r.verdict.as_str())
        );
    }
    let _ = writeln!(out);
}

/// Whether any gated row of the task regressed.
fn regressed_task(c: &Comparison, t: &TaskOutcome) -> bool {
    c.task_rows(&t.task_id, &t.host)
        .any(|r| r.gated && r.verdict == Verdict::Regression)
}

fn regressed(out: &mut String, c: &Comparison) {
    let tasks: Vec<&TaskOutcome> = c.tasks.iter().filter(|t| regressed_task(c, t)).collect();
    if tasks.is_empty() {
        return;
    }
    let _ = writeln!(out, "## Regressed tasks\n");
    for t in tasks {
        let _ = writeln!(
            out,
            "### `{}` · `{}`\n\n{} task, {} set; success {} → {}\n",
            t.task_id,
            t.host,
            t.kind.as_str(),
            t.set.as_str(),
            format::successes(&t.baseline),
            format::successes(&t.candidate)
        );
        let _ = writeln!(out, "{}", row_header(c));
        for r in c.task_rows(&t.task_id, &t.host).filter(|r| r.tested()) {
            let _ = writeln!(out, "{}", row_line(c, r));
        }
        let _ = writeln!(out);
        failures(out, "candidate", &t.candidate.failures);
        failures(out, "baseline", &t.baseline.failures);
    }
}

fn failures(out: &mut String, side: &str, failures: &[(String, u32)]) {
    if failures.is_empty() {
        return;
    }
    let _ = writeln!(out, "Why the {side} failed:\n");
    for (why, n) in failures {
        let trials = if *n == 1 { "trial" } else { "trials" };
        let why = if why.is_empty() {
            "(no failed check recorded)"
        } else {
            why
        };
        let _ = writeln!(out, "- {n} {trials}: {}", why.replace('\n', " "));
    }
    let _ = writeln!(out);
}

fn others(out: &mut String, c: &Comparison) {
    let tasks: Vec<&TaskOutcome> = c.tasks.iter().filter(|t| !regressed_task(c, t)).collect();
    if tasks.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "## Other tasks\n\n| task | host | success | tool calls | total tokens | verdict (gated \
         metrics) | why inconclusive | trials to tell |\n| --- | --- | ---: | ---: | ---: | \
         --- | --- | ---: |"
    );
    for t in tasks {
        let row = |m: Metric| c.task_rows(&t.task_id, &t.host).find(|r| r.metric == m);
        let means = |m: Metric| {
            row(m).map_or("–".into(), |r| {
                format!(
                    "{} → {}",
                    format::value(m, r.baseline_mean),
                    format::value(m, r.candidate_mean)
                )
            })
        };
        // Advice only where more trials can help (not a task stopped as futile, or that never
        // passed).
        let needed = c
            .task_rows(&t.task_id, &t.host)
            .filter(|r| r.gated && r.verdict == Verdict::Inconclusive && r.tested())
            .filter(|r| format::advises_trials(c, r))
            .map(|r| r.trials_needed)
            .try_fold(0, |acc: u64, n| n.map(|n| acc.max(n)));
        let needed = match needed {
            Some(0) => "–".to_owned(),
            Some(n) => n.to_string(),
            None => format!("> {MAX_PLANNED_TRIALS}"),
        };
        let why = inconclusive_why(c, t);
        let verdict = c.task_verdict(t);
        // An improvement over a baseline that failed every trial is marked as such, and so is a
        // task judged on the candidate alone.
        let verdict = match c.candidate_alone(t)
            || verdict.verdict == Verdict::Improvement
                && crate::analysis::Diagnosis::baseline_never_passed(t)
        {
            true => format::task_verdict_words(c, t),
            false => verdict.to_string(),
        };
        let _ = writeln!(
            out,
            "| `{}` | `{}` | {} → {} | {} | {} | {} | {} | {} |",
            t.task_id,
            t.host,
            format::successes(&t.baseline),
            format::successes(&t.candidate),
            means(Metric::ToolCalls),
            means(Metric::TotalTokens),
            verdict,
            why,
            needed
        );
    }
    let _ = writeln!(out);
    let failing: Vec<&TaskOutcome> = c
        .tasks
        .iter()
        .filter(|t| !regressed_task(c, t) && !t.candidate.failures.is_empty())
        .collect();
    if failing.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<details><summary>Why candidate trials of these tasks failed</summary>\n"
    );
    for t in failing {
        let _ = writeln!(out, "**`{}` · `{}`**\n", t.task_id, t.host);
        failures(out, "candidate", &t.candidate.failures);
    }
    let _ = writeln!(out, "</details>\n");
}

/// Why a task is inconclusive, per gated metric (`success: too few trials to tell (…)`), or
/// once for an end of the whole task; `–` when it is not.
fn inconclusive_why(c: &Comparison, t: &TaskOutcome) -> String {
    if format::never_passed(t) {
        let rows = c.task_rows(&t.task_id, &t.host);
        if let Some(why) = rows
            .filter(|r| r.gated && r.tested())
            .find_map(|r| format::reason(c, r, format::Length::Full))
        {
            return why;
        }
    }
    let why: Vec<String> = c
        .task_rows(&t.task_id, &t.host)
        .filter(|r| r.gated && r.tested() && r.verdict == Verdict::Inconclusive)
        .filter_map(|r| {
            let why = format::reason(c, r, format::Length::Full)?;
            Some(format!("{}: {why}", r.metric))
        })
        .collect();
    if why.is_empty() {
        "–".to_owned()
    } else {
        why.join("; ")
    }
}

fn detectable(out: &mut String, c: &Comparison) {
    let _ = writeln!(out, "## What this run could detect\n");
    for (host, d) in &c.detectable {
        let drop = match d.drop {
            Some(drop) => format!(
                "only when its candidate drops by at least {} points (to {})",
                trim(drop * 100.0),
                format::percent(d.baseline_rate - drop)
            ),
            None => "not even when its candidate drops to 0 %".into(),
        };
        let _ = writeln!(
            out,
            "- `{host}`: with {} trials per side, a task that passes {} on the baseline is \
             flagged with {} power {drop}, at the per-task level α = {:.2e} (the family's level \
             over its tasks, the worst case of the correction). Smaller drops can go unnoticed.",
            d.trials,
            format::percent(d.baseline_rate),
            format::percent(d.power),
            d.alpha
        );
        match (d.suite_drop, d.suite_alpha) {
            (Some(drop), Some(alpha)) => {
                let _ = writeln!(
                    out,
                    "- `{host}`, whole suite: the success row (tasks as strata, CMH at the \
                     suite rows' level α = {alpha:.2e}) flags a drop of every task's success \
                     rate by {} points with {} power; a few tasks falling further add up to the \
                     same evidence.",
                    format::points(drop),
                    format::percent(d.power)
                );
            }
            (None, Some(_)) => {
                let _ = writeln!(
                    out,
                    "- `{host}`, whole suite: the success row cannot flag even a drop of every \
                     task to 0 % at these trials."
                );
            }
            _ => {}
        }
    }
    let inconclusive: Vec<&Row> = c
        .rows
        .iter()
        .filter(|r| r.gated && r.task_id != SUITE && r.verdict == Verdict::Inconclusive)
        .filter(|r| r.tested())
        .collect();
    if inconclusive.is_empty() {
        let _ = writeln!(out, "- Every gated task row reached a verdict.");
        return;
    }
    // Trials are advised only where more can help: not for a row stopped as futile or
    // settled, nor for a task that never passed.
    let advised: Vec<&Row> = (inconclusive.iter().copied())
        .filter(|r| format::advises_trials(c, r))
        .collect();
    let needed: Vec<u64> = advised.iter().filter_map(|r| r.trials_needed).collect();
    let unknown = advised.len() - needed.len();
    let most = needed.iter().max();
    let k = format::Kinds::of(c, inconclusive.iter().copied());
    let kinds = match (k.too_few, k.changed) {
        _ if !k.fixed_only() => k.words(),
        (_, 0) => "all with too few trials to tell".to_owned(),
        (0, _) => "all changed by less than the margin".to_owned(),
        (few, changed) => {
            format!("{few} with too few trials to tell, {changed} changed by less than the margin")
        }
    };
    let _ = write!(
        out,
        "- {} gated task {} inconclusive: the interval still allows a change as large as the \
         margin ({kinds}).",
        inconclusive.len(),
        if inconclusive.len() == 1 {
            "row is"
        } else {
            "rows are"
        }
    );
    if !k.fixed_only() {
        let _ = write!(out, " {}", k.notes());
    }
    if let Some(most) = most {
        let _ = write!(
            out,
            " Telling {} apart needs up to {most} trials per side ({} power against a change \
             of the margin; `mcpeval plan` for success rates).",
            if advised.len() == inconclusive.len() {
                "them".to_owned()
            } else {
                format!("the {} with too few trials", advised.len())
            },
            format::percent(c.stats.power)
        );
    }
    if unknown > 0 {
        let _ = write!(
            out,
            " For {unknown} of them no estimate within {MAX_PLANNED_TRIALS} trials per side \
             exists."
        );
    }
    let _ = writeln!(out);
}

/// How the trials treated the servers' real state: sandbox copies, or the user's consent to
/// write to it (`--allow-writes`); `None` when neither applies.
fn state_line(config: &crate::config::RunConfig) -> Option<String> {
    let sandboxed: Vec<String> = [
        ("baseline", &config.baseline),
        ("candidate", &config.candidate),
    ]
    .iter()
    .filter(|(_, spec)| !spec.sandboxes.is_empty())
    .map(|(side, spec)| {
        let paths: Vec<String> = (spec.sandboxes.iter())
            .map(|s| format!("`{}` = `{}`", s.placeholder(), s.path.display()))
            .collect();
        format!("{side} on fresh copies of {}", paths.join(", "))
    })
    .collect();
    let mut parts = sandboxed;
    if config.allow_writes {
        parts.push(
            "**--allow-writes**: trials may have changed the servers' real state (a server \
             without a sandbox or `state = \"process\"`)"
                .to_owned(),
        );
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rundir::HostRecord;

    fn record(model: &str, version: Option<&str>) -> HostRecord {
        HostRecord {
            name: "h".into(),
            model: model.into(),
            simulated: false,
            program: Some(vec!["app".into()]),
            version: version.map(str::to_owned),
            args: None,
            notes: Vec::new(),
        }
    }

    #[test]
    fn app_hosts_are_named_by_app_version_and_model() {
        assert_eq!(
            app_host(&record("gemini-cli:sim", Some("0.61.0"))),
            "`h` (app `gemini-cli` `0.61.0`, model `sim`)"
        );
        assert_eq!(
            app_host(&record("codex", None)),
            "`h` (app `codex`, the app's default model)"
        );
    }
}
