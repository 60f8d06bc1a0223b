//! Tool order (issue 50, item 3): `--tool-order shuffle` lists the tools both sides share in one
//! order within a pair and in another across trials (read from the requests the model got), an
//! A/A run shuffled has no regression, and `explain --order` says which regression follows a
//! tool's position (the sim's `position_bias` makes near ties follow the list).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::common::*;

/// The demo's suite on `sim`, 1.4.0 against `candidate`, seed 3, with `extra` arguments.
fn demo_run(dir: &Path, candidate: &str, trials: &str, extra: &[&str]) -> std::path::PathBuf {
    let run = dir.join("run");
    let mut args = vec!["--trials", trials, "--seed", "3"];
    args.extend_from_slice(extra);
    assert_verdict(&run_pair("demo:1.4.0", candidate, &run, &args));
    run
}

/// (task, trial) → side → the tool names of the first request the model got, in order.
type Offered = BTreeMap<(String, u64), BTreeMap<String, Vec<String>>>;

fn requests(run: &Path) -> Offered {
    let mut out = Offered::new();
    let text = std::fs::read_to_string(run.join("transcripts.jsonl")).unwrap();
    for line in text.lines() {
        let t: serde_json::Value = serde_json::from_str(line).unwrap();
        let names: Vec<String> = (t["tools"].as_array().unwrap().iter())
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect();
        let key = (
            t["task_id"].as_str().unwrap().to_owned(),
            t["trial"].as_u64().unwrap(),
        );
        let side = t["side"].as_str().unwrap().to_owned();
        out.entry(key).or_default().insert(side, names);
    }
    out
}

#[test]
fn shuffle_keeps_shared_tools_in_one_order_per_pair_and_moves_them_across_trials() {
    let dir = temp_dir();
    let run = demo_run(dir.path(), "demo:1.5.0", "4", &["--tool-order", "shuffle"]);
    let offered = requests(&run);
    assert_eq!(offered.len(), 18 * 4, "every task and trial");
    let mut orders: BTreeMap<&str, BTreeSet<Vec<String>>> = BTreeMap::new();
    for ((task, trial), sides) in &offered {
        let (base, cand) = (&sides["baseline"], &sides["candidate"]);
        assert_eq!((base.len(), cand.len()), (6, 7), "{task} #{trial}");
        let shared: Vec<&String> = cand.iter().filter(|n| base.contains(n)).collect();
        assert_eq!(
            shared,
            base.iter().collect::<Vec<_>>(),
            "{task} #{trial}: the shared tools' order differs between the sides"
        );
        orders.entry(task).or_default().insert(base.clone());
    }
    let moved = orders.values().filter(|o| o.len() > 1).count();
    assert_eq!(moved, 18, "every task saw more than one order: {orders:?}");
    // The episodes say the order offered, and run.json the setting.
    let episodes = std::fs::read_to_string(run.join("episodes.jsonl")).unwrap();
    for line in episodes.lines() {
        let e: serde_json::Value = serde_json::from_str(line).unwrap();
        let key = (
            e["task_id"].as_str().unwrap().to_owned(),
            e["trial"].as_u64().unwrap(),
        );
        let side = e["side"].as_str().unwrap();
        assert_eq!(e["tools_offered"], offered[&key][side].join(","));
    }
    let info = std::fs::read_to_string(run.join("run.json")).unwrap();
    assert!(info.contains("\"tool_order\": \"shuffle\""), "{info}");
    let csv = std::fs::read_to_string(run.join("episodes.csv")).unwrap();
    // `tools_offered` comes after the older columns, before issue 51's two (calls written as text),
    // issue 52's six (a conversation's user turns, the server's sampling and elicitation
    // requests) and issue 53's four (tool search).
    assert!(csv.lines().next().unwrap().ends_with(
        ",tools_offered,recovered_calls,unparsed_text_calls,user_turns,sampling_requests,\
         elicitation_requests,unprepared_requests,sampling_input_tokens,sampling_output_tokens,\
         tool_searches,found_rank,found_at_k,search_turns"
    ));
}

#[test]
fn a_shuffled_a_a_run_has_no_regression() {
    let dir = temp_dir();
    let run = demo_run(dir.path(), "demo:1.4.0", "5", &["--tool-order", "shuffle"]);
    let comparison = std::fs::read_to_string(run.join("comparison.csv")).unwrap();
    assert!(!comparison.contains(",regression,"), "{comparison}");
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(!summary.starts_with("# mcpeval: regression"), "{summary}");
    let orders: BTreeSet<String> = requests(&run)
        .values()
        .map(|sides| sides["baseline"].join(","))
        .collect();
    assert!(orders.len() > 10, "shuffled: {} orders", orders.len());
}

/// Listed in reverse, 1.5.0 puts `find_issues` before `search_issues`; a sim that takes the
/// earlier of two near ties then loses `find-open-login-apollo` to the position alone, and
/// `explain --order` says so, while the other lookups follow the text.
#[test]
fn explain_order_names_the_regression_that_follows_a_tool_s_position() {
    let dir = temp_dir();
    let config = dir.path().join("bias.toml");
    std::fs::write(&config, "[sim]\nposition_bias = 1.0\nnear_tie = 1.5\n").unwrap();
    let extra = [
        "--config",
        config.to_str().unwrap(),
        "--tool-order",
        "reverse",
    ];
    let run = demo_run(dir.path(), "demo:1.5.0", "10", &extra);
    let out = mcpeval(&["explain", "--order", run.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(
            "Tool order: 1 of 4 task(s) follow the tools' positions: find-open-login-apollo \
             (10/10 reversed vs 0/10 as served)."
        ),
        "{said}"
    );
    let csv = std::fs::read_to_string(run.join("explain").join("attribution.csv")).unwrap();
    let reversed: Vec<&str> = (csv.lines())
        .filter(|l| l.contains(",success,") && l.contains(",reversed_order,"))
        .collect();
    assert_eq!(reversed.len(), 4, "{csv}");
    for line in reversed {
        let verdict = if line.starts_with("find-open-login-apollo,") {
            ",explains,"
        } else {
            ",no_effect,"
        };
        assert!(line.contains(verdict), "{line}");
    }
}
