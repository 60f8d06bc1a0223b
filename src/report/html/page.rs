//! The `report.html` exporter and the page's sections: verdict and facts, the verdict table,
//! the charts, the tools each side was shown, and each task's transcripts side by side.

use std::fmt::Write;
use std::path::Path;

use super::text::{blocks, escape, head, inline, section};
use super::transcripts::{self, Loaded};
use super::{charts, contract, pairs, tools};
use crate::analysis::{Comparison, Outcome, Row, TaskOutcome, SUITE};
use crate::analysis::{Scope, Verdict};
use crate::config::Metric;
use crate::report::export::{Exporter, Report};
use crate::report::format;

/// The page's file name in the run directory.
pub const REPORT_HTML: &str = "report.html";

const CSS: &str = include_str!("report.css");
const SCRIPT: &str = include_str!("report.js");
const ERRORS_SCRIPT: &str = include_str!("errors.js");
/// Nothing is fetched: no network, no other file. Inline styles and scripts only.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; \
                   img-src data:";

/// `report.html`: one self-contained page (inline CSS, SVG and script; nothing fetched).
pub struct HtmlReport;

impl Exporter for HtmlReport {
    fn file_name(&self) -> &'static str {
        REPORT_HTML
    }

    /// Without the run directory the page has no transcripts and says so.
    fn render(&self, report: &Report) -> anyhow::Result<Vec<u8>> {
        let loaded = Loaded {
            notes: vec!["The transcripts were not read (no run directory given).".into()],
            ..Loaded::default()
        };
        Ok(page(report, &loaded).into_bytes())
    }

    fn render_in(&self, report: &Report, dir: &Path) -> anyhow::Result<Vec<u8>> {
        Ok(page(report, &transcripts::load(dir, report)).into_bytes())
    }
}

/// The whole page. Deterministic: the same report and files give the same bytes.
pub fn page(report: &Report, loaded: &Loaded) -> String {
    let c = report.comparison;
    let mut out = String::with_capacity(64 * 1024);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <title>mcpeval {}: run {}</title>\n<style>\n{CSS}</style>\n\
         <script>\n{ERRORS_SCRIPT}</script>\n</head>\n<body>\n\
         <pre id=\"js-errors\" hidden></pre>\n\
         <nav><a href=\"#summary\">Summary</a><a href=\"#verdicts-section\">Verdicts</a>\
         <a href=\"#charts\">Charts</a><a href=\"#tools\">Tools</a>\
         <a href=\"#tasks\">Transcripts</a></nav>\n",
        outcome_word(c.outcome()),
        escape(&report.info.run_id)
    );
    summary(&mut out, report);
    verdict_table(&mut out, c);
    contract::render(&mut out, report.info);
    charts_section(&mut out, c);
    out.push_str("<section id=\"tools\">\n<h2>Tools as the model saw them</h2>\n");
    tools::render(&mut out, &loaded.tools);
    out.push_str("</section>\n");
    tasks(&mut out, c, loaded);
    let _ = write!(
        out,
        "<footer class=\"note\">mcpeval {} · written from the run directory's files; open it \
         without a network.</footer>\n<script>\n{SCRIPT}</script>\n</body>\n</html>\n",
        escape(&report.info.mcpeval_version)
    );
    out
}

fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Pass => "no regression",
        Outcome::Regression => "regression",
        Outcome::InfraFailure => "infrastructure failure",
    }
}

/// The verdict and the facts, taken from `summary.md` so that both say the same.
fn summary(out: &mut String, report: &Report) {
    let md = crate::report::markdown::summary(report);
    let class = match report.comparison.outcome() {
        Outcome::Pass => "pass",
        Outcome::Regression => "regression",
        Outcome::InfraFailure => "infra",
    };
    let _ = writeln!(
        out,
        "<section id=\"summary\">\n<div class=\"banner {class}\">\n{}</div>",
        blocks(head(&md), 0)
    );
    // The contract's changes come after the verdict table (`contract::render`).
    for title in [
        "Regression-set tasks that broke",
        crate::report::TOOL_CHOICE,
        "Tokens and cost",
        "What this run could detect",
    ] {
        if let Some(body) = section(&md, title) {
            let _ = writeln!(out, "<h3>{}</h3>\n{}", escape(title), blocks(body, 2));
        }
    }
    out.push_str("</section>\n");
}

fn task_anchor(index: usize) -> String {
    format!("task-{index}")
}

/// A matrix: one line per task × host (the suite first), one column per gated metric.
fn verdict_table(out: &mut String, c: &Comparison) {
    let level = format::percent(1.0 - c.stats.alpha);
    let gated: Vec<Metric> = c.stats.gated.clone();
    let _ = write!(
        out,
        "<section id=\"verdicts-section\">\n<h2>Verdicts</h2>\n<p>Per task and host, each gated \
         metric: its verdict, baseline → candidate means, the delta (candidate minus baseline) \
         with its {level} interval, and the adjusted p-value; under an inconclusive verdict, which \
         kind it is (changed, but by less than the margin; stopped as futile, settled early or by \
         the budget; never passed on either side; or too few trials to tell, with the smallest \
         change the row would see), and under a no change with a small p-value, that \
         the change is smaller than the margin. The suite lines treat the tasks as strata and pool their \
         trials (CMH for rates, van Elteren for counts), for the whole suite and for each set \
         and kind of task.</p>\n<p><label><input type=\"checkbox\" id=\"only-regressed\"> only \
         tasks with a regression</label></p>\n<table id=\"verdicts\"><thead><tr><th>task</th>\
         <th>host</th><th>trials passed<br><small>baseline → candidate</small></th>"
    );
    // An adaptive run: how many trials each task took, and why it stopped.
    let adaptive = c.stats.adaptive;
    if adaptive {
        out.push_str("<th>trials per side · stopped</th>");
    }
    for m in &gated {
        let _ = write!(out, "<th>{}</th>", escape(m.as_str()));
    }
    out.push_str("</tr></thead><tbody>\n");
    let mut suite_hosts: Vec<&str> = c
        .rows
        .iter()
        .filter(|r| r.task_id == SUITE)
        .map(|r| r.host.as_str())
        .collect();
    suite_hosts.dedup();
    for host in suite_hosts {
        let mut scopes: Vec<Scope> = c.suite_rows(host).map(|r| r.scope).collect();
        scopes.dedup();
        for scope in scopes {
            let rows: Vec<&Row> = c
                .suite_rows(host)
                .filter(|r| r.scope == scope && r.gated)
                .collect();
            let regressed = rows.iter().any(|r| r.verdict == Verdict::Regression);
            let label = match scope {
                Scope::Suite => "suite".to_owned(),
                other => format!("suite · {other}"),
            };
            let _ = write!(
                out,
                "<tr class=\"{}\"><td><i>{}</i></td><td><code>{}</code></td><td>–</td>",
                if regressed { "t-regressed" } else { "t-other" },
                escape(&label),
                escape(host)
            );
            if adaptive {
                out.push_str("<td>–</td>");
            }
            for m in &gated {
                cell(
                    out,
                    rows.iter()
                        .copied()
                        .find(|r| r.metric == *m && r.k.is_none()),
                    c,
                );
            }
            out.push_str("</tr>\n");
        }
    }
    for (i, t) in c.tasks.iter().enumerate() {
        let regressed = c.task_verdict(t).verdict == Verdict::Regression;
        let _ = write!(
            out,
            "<tr class=\"{}\"><td><a href=\"#{}\">{}</a></td><td><code>{}</code></td><td \
             class=\"num\">{} → {}</td>",
            if regressed { "t-regressed" } else { "t-other" },
            task_anchor(i),
            escape(&t.task_id),
            escape(&t.host),
            escape(&format::successes(&t.baseline)),
            escape(&format::successes(&t.candidate))
        );
        if adaptive {
            let success = c
                .task_rows(&t.task_id, &t.host)
                .find(|r| r.metric == Metric::Success);
            let (n, why) = success.map_or((None, None), |r| (r.trials_run, r.stopped));
            let _ = write!(
                out,
                "<td class=\"num\">{} · {}</td>",
                n.map_or("–".to_owned(), |n| n.to_string()),
                why.map_or("running", |w| w.as_str())
            );
        }
        for m in &gated {
            cell(
                out,
                c.task_rows(&t.task_id, &t.host)
                    .find(|r| r.metric == *m && r.k.is_none()),
                c,
            );
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody></table>\n</section>\n");
}

/// One gated metric of one line of the verdict table.
/// A row's cell, with what its verdict means in the words that know its task (a task that never
/// passed says so on every metric).
fn cell(out: &mut String, row: Option<&Row>, c: &Comparison) {
    let Some(r) = row.filter(|r| r.tested()) else {
        out.push_str("<td class=\"cell untested\">– (no test)</td>");
        return;
    };
    let m = r.metric;
    let why = format::reason(c, r, format::Length::Full).map_or_else(String::new, |why| {
        format!("<br><small class=\"why-verdict\">{}</small>", escape(&why))
    });
    let _ = write!(
        out,
        "<td class=\"cell v-{v}\"><span class=\"verdict\">{v}</span><br>{} → {}<br><small>Δ {} \
         {} · p {}</small>{why}</td>",
        format::value(m, r.baseline_mean),
        format::value(m, r.candidate_mean),
        format::delta(m, r.delta),
        escape(&format::interval(r)),
        format::p(r.p_adjusted),
        v = r.verdict.as_str()
    );
}

fn charts_section(out: &mut String, c: &Comparison) {
    out.push_str("<section id=\"charts\">\n<h2>Charts</h2>\n");
    if c.tasks.is_empty() {
        out.push_str("<p class=\"note\">No task ran on both sides.</p>\n</section>\n");
        return;
    }
    let _ = writeln!(
        out,
        "<h3>Success rate per task</h3>\n<p>Dots: the share of trials that passed; whiskers: its \
         {} Wilson interval (infrastructure errors left out).</p>\n{}",
        format::percent(1.0 - c.stats.alpha),
        charts::success(c)
    );
    let _ = writeln!(
        out,
        "<h3>Mean tool calls per task</h3>\n{}",
        charts::means(c, Metric::ToolCalls, "Mean tool calls per task and side")
    );
    let _ = writeln!(
        out,
        "<h3>Mean total tokens per task</h3>\n{}",
        charts::means(
            c,
            Metric::TotalTokens,
            "Mean total tokens per task and side"
        )
    );
    out.push_str("</section>\n");
}

/// Regressions first, then inconclusive, improved and unchanged tasks.
fn severity(v: Verdict) -> u8 {
    match v {
        Verdict::Regression => 0,
        Verdict::Inconclusive => 1,
        Verdict::Improvement => 2,
        Verdict::NoChange => 3,
    }
}

fn tasks(out: &mut String, c: &Comparison, loaded: &Loaded) {
    let _ = writeln!(
        out,
        "<section id=\"tasks\">\n<h2>Transcripts</h2>\n<p>Per task, a baseline trial and the \
         candidate trial of the same index side by side (the same seed on both sides). \
         <b>diverged here</b> marks the first message of the exchange that differs; system \
         prompts, which carry the server's instructions, are marked <i>differs</i> on their own. \
         Up to {} trial pairs per task, the most telling first; long texts are cut (the whole \
         exchange is in <code>transcripts.jsonl</code>).</p>\n<p><button type=\"button\" \
         id=\"expand-all\">expand all</button> <button type=\"button\" id=\"collapse-all\">\
         collapse all</button></p>",
        transcripts::PAIRS_PER_TASK
    );
    for note in &loaded.notes {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", inline(note));
    }
    let mut order: Vec<(usize, &TaskOutcome)> = c.tasks.iter().enumerate().collect();
    order.sort_by_key(|(i, t)| (severity(c.task_verdict(t).verdict), *i));
    for (i, t) in order {
        task(out, c, i, t, loaded);
    }
    out.push_str("</section>\n");
}

fn task(out: &mut String, c: &Comparison, i: usize, t: &TaskOutcome, loaded: &Loaded) {
    let verdict = c.task_verdict(t);
    let _ = writeln!(
        out,
        "<details class=\"task v-{v}\" id=\"{}\"{}><summary><code>{}</code> · <code>{}</code> · \
         {} task, {} set · success {} → {} · <span class=\"verdict\">{}</span></summary>",
        task_anchor(i),
        if verdict.verdict == Verdict::Regression {
            " open"
        } else {
            ""
        },
        escape(&t.task_id),
        escape(&t.host),
        t.kind.as_str(),
        t.set.as_str(),
        escape(&format::successes(&t.baseline)),
        escape(&format::successes(&t.candidate)),
        escape(&format::task_verdict_words(c, t)),
        v = verdict.verdict.as_str()
    );
    for (side, failures) in [
        ("candidate", &t.candidate.failures),
        ("baseline", &t.baseline.failures),
    ] {
        if failures.is_empty() {
            continue;
        }
        let _ = write!(out, "<p>Why the {side} failed:</p><ul>");
        for (why, n) in failures {
            let _ = write!(
                out,
                "<li>{n} {}: {}</li>",
                if *n == 1 { "trial" } else { "trials" },
                inline(why)
            );
        }
        out.push_str("</ul>\n");
    }
    match loaded.pairs.get(&(t.task_id.clone(), t.host.clone())) {
        Some(list) if !list.is_empty() => pairs::render(out, i, list),
        _ => out.push_str(
            "<p class=\"note\">No trial of this task ran on both sides without an \
             infrastructure error, or its episodes were not read.</p>\n",
        ),
    }
    out.push_str("</details>\n");
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::episode::{Episode, Side, Transcript};
    use crate::host::Message;
    use crate::test_support::sample_episode;
    use crate::test_support::sample_info;

    /// Ten trials of three tasks: `broke` fails on the candidate, `steady` passes on both, and
    /// `<b>odd</b>` has a name to escape.
    pub(crate) fn sample_episodes() -> Vec<Episode> {
        let mut eps = Vec::new();
        for trial in 0..10 {
            for (task, b, c) in [
                ("broke", true, trial == 0),
                ("steady", true, true),
                ("<b>odd</b>", trial % 2 == 0, trial % 2 == 0),
            ] {
                for (side, ok) in [(Side::Baseline, b), (Side::Candidate, c)] {
                    let mut e = sample_episode(task, side, ok);
                    e.trial = trial;
                    eps.push(e);
                }
            }
        }
        eps
    }

    pub(crate) fn sample_comparison() -> Comparison {
        let eps = sample_episodes();
        let (b, c): (Vec<&Episode>, Vec<&Episode>) =
            eps.iter().partition(|e| e.side == Side::Baseline);
        crate::analysis::compare(b, c, &Default::default(), 7).unwrap()
    }

    fn transcript(e: &Episode, answer: &str) -> Transcript {
        Transcript {
            run_id: e.run_id.clone(),
            task_id: e.task_id.clone(),
            side: e.side,
            host: e.host.clone(),
            trial: e.trial,
            seed: e.seed,
            tools: Vec::new().into(),
            messages: vec![
                Message::User {
                    content: "list the open issues".into(),
                },
                Message::Tool {
                    tool_call_id: "c".into(),
                    content: answer.into(),
                },
            ],
            judge: None,
        }
    }

    /// A run directory with episodes and transcripts; the candidate's tool results hold markup.
    fn run_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let (mut eps, mut ts) = (String::new(), String::new());
        for e in sample_episodes() {
            eps.push_str(&serde_json::to_string(&e).unwrap());
            eps.push('\n');
            let answer = match e.side {
                Side::Baseline => "3 open issues".to_owned(),
                Side::Candidate => {
                    "<script>alert('x')</script><a href=\"https://evil\">x</a>".into()
                }
            };
            ts.push_str(&serde_json::to_string(&transcript(&e, &answer)).unwrap());
            ts.push('\n');
        }
        std::fs::write(dir.path().join("episodes.jsonl"), eps).unwrap();
        // A killed run leaves a partial last line: skipped without a note.
        ts.push_str("{\"run_id\":\"r\",\"task");
        std::fs::write(dir.path().join("transcripts.jsonl"), ts).unwrap();
        dir
    }

    fn render(dir: &Path) -> String {
        let info = sample_info();
        let c = sample_comparison();
        let report = Report {
            info: &info,
            baseline_run: None,
            comparison: &c,
            tool_shift: None,
            stale_list: None,
        };
        String::from_utf8(HtmlReport.render_in(&report, dir).unwrap()).unwrap()
    }

    /// Every value of `attr="…"` in the page.
    fn attribute_values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
        let pat = format!(" {attr}=\"");
        html.match_indices(&pat)
            .map(|(at, _)| {
                let rest = &html[at + pat.len()..];
                &rest[..rest.find('"').unwrap()]
            })
            .collect()
    }

    #[test]
    fn the_page_is_self_contained_and_untrusted_text_is_inert() {
        let dir = run_dir();
        let html = render(dir.path());
        for attr in ["src", "href", "action", "xlink:href"] {
            for v in attribute_values(&html, attr) {
                assert!(v.starts_with('#'), "{attr}=\"{v}\" points outside the page");
            }
        }
        // A link in a tool result stays text: no attribute anywhere names a URL.
        assert!(!html.contains("=\"http"), "a URL in an attribute");
        assert!(html.contains("&lt;a href=&quot;https://evil&quot;&gt;"));
        // Two scripts, both ours: the transcripts' `<script>` is text.
        assert_eq!(html.matches("<script").count(), 2);
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;"));
        assert!(html.contains("&lt;b&gt;odd&lt;/b&gt;") && !html.contains("<b>odd</b>"));
        assert!(
            html.contains("default-src 'none'"),
            "the CSP forbids fetching"
        );
    }

    #[test]
    fn the_page_has_its_sections_in_order_and_balanced_markup() {
        let dir = run_dir();
        let html = render(dir.path());
        assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
        assert!(html.ends_with("</body>\n</html>\n"));
        let at = |id: &str| {
            html.find(&format!("<section id=\"{id}\">"))
                .unwrap_or_else(|| panic!("no section {id}"))
        };
        assert!(at("summary") < at("verdicts-section"));
        assert!(at("verdicts-section") < at("charts"));
        assert!(at("charts") < at("tools"));
        assert!(at("tools") < at("tasks"));
        for tag in [
            "section", "table", "details", "svg", "div", "pre", "ul", "script", "tr",
        ] {
            let open = html.matches(&format!("<{tag}>")).count()
                + html.matches(&format!("<{tag} ")).count();
            let close = html.matches(&format!("</{tag}>")).count();
            assert_eq!(open, close, "<{tag}> opened {open} times, closed {close}");
        }
        let ids = attribute_values(&html, "id");
        let unique: std::collections::HashSet<&&str> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len(), "duplicate ids");
        for link in attribute_values(&html, "href") {
            assert!(ids.contains(&&link[1..]), "{link} points at no element");
        }
        // The same facts as summary.md, the verdict, three charts.
        assert!(
            html.contains("<h1>mcpeval: regression (simulated model)</h1>"),
            "the headline"
        );
        assert!(html.contains("<th>trials</th><td>1 per task and side, seed 42</td>"));
        assert_eq!(html.matches("<svg class=\"chart\"").count(), 3);
        // Task × host × gated metric cells, the suite's included.
        let c = sample_comparison();
        let cells = (c.tasks.len() + 1) * c.stats.gated.len();
        assert_eq!(html.matches("<td class=\"cell ").count(), cells);
        let table = &html[html.find("<table id=\"verdicts\">").unwrap()..];
        let broke = &table[table.find("\">broke</a>").expect("a line for `broke`")..];
        let broke_line = &broke[..broke.find("</tr>").unwrap()];
        assert!(
            broke_line.contains("10/10 → 1/10")
                && broke_line.contains("<td class=\"cell v-regression\"><span class=\"verdict\">regression</span><br>1.000 → 0.100"),
            "{broke_line}"
        );
    }

    #[test]
    fn the_regressed_task_shows_its_most_telling_pair_diverged() {
        let dir = run_dir();
        let html = render(dir.path());
        let broke = &html[html
            .find("<details class=\"task v-regression\"")
            .expect("open task")..];
        let broke = &broke[..broke.find("</details>").unwrap()];
        assert!(broke.contains("<code>broke</code>"), "{broke}");
        assert!(broke.contains(" open>"), "a regressed task starts open");
        // Trials 1, 2, 3 are the first where the baseline passed and the candidate failed.
        let trials = attribute_values(broke, "data-trial");
        assert_eq!(trials, vec!["1", "2", "3"]);
        assert!(broke.contains("<select class=\"trial-select\""));
        assert_eq!(broke.matches("diverged here").count(), 3);
        assert!(broke.contains("baseline passed, candidate failed"));
    }

    #[test]
    fn missing_transcripts_are_said_on_the_page() {
        let dir = tempfile::tempdir().unwrap();
        let html = render(dir.path());
        assert!(html.contains("cannot read <code>"), "{html}");
        assert!(html.contains("transcripts.jsonl"));
        assert!(html.contains("No trial of this task ran on both sides"));
    }

    #[test]
    fn a_corrupt_line_is_named_with_its_file_and_line() {
        let dir = run_dir();
        let path = dir.path().join("transcripts.jsonl");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, format!("not json\n{text}")).unwrap();
        let html = render(dir.path());
        assert!(
            html.contains("transcripts.jsonl</code> line 1: not a transcript record"),
            "{html}"
        );
        assert!(
            html.contains("diverged here"),
            "the other lines are still read"
        );
    }

    #[test]
    fn the_same_files_give_the_same_bytes() {
        let dir = run_dir();
        assert_eq!(render(dir.path()), render(dir.path()));
    }
}
