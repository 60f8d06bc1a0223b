//! Which words changed, and which server is which, through the real binary: a description that
//! differs only past the console's old 60-character cut shows its changed words in `mcpeval
//! diff`'s table, in a triggered run's summary.md and report.html, and in check's summary.md;
//! two servers whose specs differ are named by their specs beside the versions they report (an
//! old Python server reports its SDK's version), in the headers of diff, run and check; an A/A
//! run's header is unchanged.

use crate::common;
use crate::contract_reading::LIST_SERVER;

use std::path::Path;

use common::*;
use serde_json::json;

/// A description whose first 60 characters are the same in both releases (as
/// mcp-server-time's `convert_time`'s between 0.6.2 and 2026.10.19).
fn described(zone: &str) -> String {
    format!(
        "IANA timezone name (e.g., 'America/New_York', 'Europe/London'). Use '{zone}' as local \
         timezone if no timezone provided by the user."
    )
}

/// Two releases of a server (the old one reporting its SDK's version, as old Python servers
/// do) that differ in one word of `search_issues`' description; returns the two specs.
fn releases(dir: &Path) -> (String, String) {
    let server = dir.join("list-server");
    write_script(&server, LIST_SERVER);
    let release = |version: &str, zone: &str, file: &str| {
        let lists = json!({
            "serverInfo": {"name": "mcp-time", "version": version},
            "tools": [{"name": "search_issues", "description": described(zone),
                       "inputSchema": {"type": "object", "properties": {}}}],
        });
        let path = dir.join(file);
        std::fs::write(&path, lists.to_string()).unwrap();
        format!("{} {}", server.display(), path.display())
    };
    (
        release("1.30.0", "UTC", "time-0.6.2.json"),
        release("2026.10.19", "Etc/UTC", "time-2026.10.19.json"),
    )
}

const WORDS: &str = "Use ['UTC' → 'Etc/UTC'] as local timezone …";

#[test]
fn a_change_past_the_old_cut_shows_its_words_and_both_servers_their_specs() {
    let dir = temp_dir();
    let (old, new) = releases(dir.path());
    assert_eq!(described("UTC")[..60], described("Etc/UTC")[..60]);
    let (a, b) = (dir.path().join("snap-old"), dir.path().join("snap-new"));
    snapshot(&old, &a, &[]);
    snapshot(&new, &b, &[]);
    let diff_json = dir.path().join("diff.json");
    let out = mcpeval(&[
        "diff",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "--out",
        diff_json.to_str().unwrap(),
    ]);
    let table = String::from_utf8_lossy(&out.stdout).into_owned();
    // Before: `IANA timezone name (e.g., 'America/New_York', 'Europe/London… → ` twice the same.
    assert!(table.contains(WORDS), "{table}");
    // Before: `contract diff 1.30.0 → 2026.10.19`, the old release's SDK version.
    let header = table.lines().next().unwrap();
    assert!(
        header.starts_with("contract diff 1.30.0 (")
            && header.contains("time-0.6.2.json) → 2026.10.19 (")
            && header.contains("time-2026.10.19.json): 1 change(s)"),
        "{header}"
    );

    // A run the diff triggers (on the demo pair, whose suite uses `search_issues`).
    let run = dir.path().join("run");
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.5.0",
        &run,
        &["--trigger", diff_json.to_str().unwrap(), "--trials", "1"],
    );
    assert_verdict(&out);
    let console = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(console.contains(WORDS), "{console}");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let header = stderr.lines().find(|l| l.starts_with("baseline "));
    let header = header.unwrap_or_else(|| panic!("{stderr}"));
    assert!(
        header.starts_with("baseline mcpeval-demo-tracker 1.4.0 (")
            && header
                .contains("demo-server --release 1.4.0) → candidate mcpeval-demo-tracker 1.5.0 (")
            && header.ends_with("demo-server --release 1.5.0)"),
        "{header}"
    );
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        summary.contains(&format!(
            "- tools `search_issues` at `description`: description_changed\n  - `… \
             'America/New_York', 'Europe/London'). {WORDS}`\n"
        )),
        "{summary}"
    );
    // The trigger's row names the diff's sides by their specs too.
    assert!(summary.contains("affect models (1.30.0 ("), "{summary}");
    let html = std::fs::read_to_string(run.join("report.html")).unwrap();
    assert!(
        html.contains(
            "<div class=\"wdiff\">IANA timezone name (e.g., &#39;America/New_York&#39;, \
             &#39;Europe/London&#39;). Use <del>&#39;UTC&#39;</del> <ins>&#39;Etc/UTC&#39;</ins> \
             as local timezone if no timezone provided by the user.</div>"
        ),
        "{}",
        &html[html.find("id=\"contract\"").unwrap_or(0)..][..2000.min(html.len())]
    );

    // check: the contract stage's lines and the header.
    let check_dir = dir.path().join("check");
    let out = mcpeval(&[
        "check",
        "--baseline",
        &old,
        "--candidate",
        &new,
        "--stages",
        "contract",
        "--out",
        check_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let page = std::fs::read_to_string(check_dir.join("summary.md")).unwrap();
    let lines: Vec<&str> = page.lines().collect();
    assert!(
        lines[2].starts_with("mcp-time 1.30.0 (")
            && lines[2].contains("time-0.6.2.json) → mcp-time 2026.10.19 (")
            && lines[2].ends_with("time-2026.10.19.json)"),
        "{page}"
    );
    assert!(
        page.contains(&format!(
            "  - description_changed `search_issues` description (tools): affects models\n    - \
             `… 'America/New_York', 'Europe/London'). {WORDS}`\n"
        )),
        "{page}"
    );
}

#[test]
fn an_a_a_runs_header_names_its_one_spec_as_before() {
    let dir = temp_dir();
    let run = dir.path().join("run");
    let out = run_pair(
        "demo:1.4.0",
        "demo:1.4.0",
        &run,
        &["--suite", "tasks/demo/no_tool.yaml", "--trials", "1"],
    );
    assert_verdict(&out);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let header = stderr
        .lines()
        .find(|l| l.starts_with("baseline "))
        .unwrap_or_else(|| panic!("{stderr}"));
    // `baseline SPEC → candidate SPEC`, the same spec twice, and no name or version.
    let (base, cand) = header
        .strip_prefix("baseline ")
        .and_then(|h| h.split_once(" → candidate "))
        .unwrap_or_else(|| panic!("{header}"));
    assert_eq!(base, cand, "{header}");
    assert!(base.ends_with("demo-server --release 1.4.0"), "{header}");
    assert!(!header.contains("mcpeval-demo-tracker"), "{header}");
}
