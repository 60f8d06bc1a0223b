//! Budgets and cost through the real binary: a `[budget]` limit stops scheduling and the run
//! reports on what it has; `[prices]` give the summary's estimated cost per side and host.

use crate::common;

use common::*;

fn config(extra: &str) -> String {
    format!(
        "baseline = \"demo:1.4.0\"\ncandidate = \"demo:1.5.0\"\nsuites = [\"tasks/demo\"]\n\
         concurrency = 2\n{extra}\n[prices.sim]\ninput = 1.0\noutput = 2.0\n"
    )
}

#[test]
fn a_request_budget_stops_the_run_and_it_reports_on_what_it_has() {
    let dir = temp_dir();
    let path = dir.path().join("budget.toml");
    std::fs::write(&path, config("[budget]\nmax_requests = 40\n")).unwrap();
    let out_dir = dir.path().join("run");
    let out = mcpeval(&[
        "run",
        "--config",
        path.to_str().unwrap(),
        "--trials",
        "5",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("budget reached: "), "{stderr}");
    let eps = episodes(&out_dir);
    let requests: u64 = eps.iter().map(|e| u64::from(e.turns)).sum();
    assert!(requests >= 40, "the limit was reached: {requests}");
    assert!(
        eps.len() < 18 * 5 * 2,
        "scheduling stopped early: {}",
        eps.len()
    );
    // In-flight trials finish: at most `concurrency` trials past the one that crossed the limit.
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("run.json")).unwrap()).unwrap();
    assert_eq!(info["status"], "budget_reached");
    let summary = std::fs::read_to_string(out_dir.join("summary.md")).unwrap();
    assert!(summary.contains("**budget reached**"), "{summary}");
    assert!(summary.contains("## Tokens and cost"));
}

#[test]
fn the_summary_estimates_cost_per_side_from_prices() {
    let dir = temp_dir();
    let run = run_config(dir.path(), &config(""), "1");
    let eps = episodes(&run);
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    for side in ["baseline", "candidate"] {
        let (input, output): (u64, u64) = eps
            .iter()
            .filter(|e| e.side.as_str() == side)
            .fold((0, 0), |(i, o), e| {
                (i + e.input_tokens, o + e.output_tokens)
            });
        let cost = (input as f64 * 1.0 + output as f64 * 2.0) / 1e6;
        let line = format!("| `sim` | {side} | 18 | ");
        let row = summary
            .lines()
            .find(|l| l.starts_with(&line))
            .unwrap_or_else(|| panic!("no {side} row in\n{summary}"));
        assert!(
            row.contains(&format!("| {input} | {output} | ${cost:.4} |")),
            "{row}"
        );
    }
}
