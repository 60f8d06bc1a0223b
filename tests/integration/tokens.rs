//! The token cost of a tool list, through the binary: `tokens.json` in a snapshot, the diff's
//! list and per-tool changes, `max_tool_tokens_increase` failing the contract stage, a snapshot
//! without counts still diffing; the counts held to an independent implementation (npm's
//! js-tiktoken, installed by `scripts/install-token-reference`) and to a real server's list
//! (`@modelcontextprotocol/server-everything`, installed by `scripts/install-real-servers`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use mcpeval::contract::tokens::{list_text, tool_entry, Encoding};
use serde_json::Value;

use crate::common::{diff, everything_server, mcpeval, repo_path, snapshot, temp_dir, text};

/// The js-tiktoken release `scripts/install-token-reference` installs.
const JS_TIKTOKEN: &str = "target/js-tiktoken-1.0.21";

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

/// The demo pair snapshotted into `dir/1.4.0` and `dir/1.5.0`.
fn demo_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let (a, b) = (dir.join("1.4.0"), dir.join("1.5.0"));
    snapshot("demo:1.4.0", &a, &[]);
    snapshot("demo:1.5.0", &b, &[]);
    (a, b)
}

fn o200k(v: &Value) -> u64 {
    v["o200k_base"].as_u64().unwrap()
}

#[test]
fn a_demo_snapshot_has_token_counts_and_the_diff_reports_the_lists_change() {
    let dir = temp_dir();
    let (a, b) = demo_pair(dir.path());
    let tools = read_json(&a.join("tools.json"));
    let tokens = read_json(&a.join("tokens.json"));
    // tools.json keeps its shape: the counts live in their own file.
    assert!(tools
        .as_array()
        .unwrap()
        .iter()
        .all(|t| t.get("tokens").is_none()));
    let names = |v: &Value| -> Vec<String> {
        (v.as_array().unwrap().iter())
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&tools), names(&tokens["tools"]));
    for t in tokens["tools"].as_array().unwrap() {
        assert!(o200k(&t["tokens"]) > 20 && t["tokens"]["cl100k_base"].as_u64() > Some(20));
    }
    let tokenizers: Vec<&str> = (tokens["tokenizers"].as_array().unwrap().iter())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tokenizers, ["o200k_base", "cl100k_base"]);
    assert!(o200k(&tokens["instructions"]) > 10, "{tokens}");

    let out = mcpeval(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let (before, after) = (
        o200k(&tokens["list"]),
        o200k(&read_json(&b.join("tokens.json"))["list"]),
    );
    assert!(after > before, "1.5.0 adds a tool: {before} → {after}");
    let percent = (after - before) as f64 * 100.0 / before as f64;
    let line = format!(
        "tool list tokens: o200k_base {before} → {after} (+{}, +{percent:.1} %)",
        after - before
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&line), "{line}\n{stdout}");
    assert!(stdout.contains("find_issues added, "), "{stdout}");
    assert!(stdout.contains("search_issues "), "{stdout}");

    let (code, json) = diff(&a, &b, dir.path());
    assert_eq!(code, Some(0));
    let list = &json["tokens"]["list"]["o200k_base"];
    assert_eq!(list["before"].as_u64(), Some(before));
    assert_eq!(list["change"].as_i64(), Some((after - before) as i64));
    assert!(
        (list["percent"].as_f64().unwrap() - percent).abs() < 0.01,
        "{list}"
    );
    let changed: Vec<&str> = (json["tokens"]["tools"].as_array().unwrap().iter())
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(changed, ["find_issues", "search_issues"], "{json}");
    assert_eq!(
        json["tokens"]["tools"][0]["o200k_base"]["before"],
        Value::Null
    );
    assert_eq!(json["tokens"]["sources"]["baseline"], "tokens.json");
}

#[test]
fn an_old_snapshot_without_tokens_json_still_diffs_with_counts_from_its_tools() {
    let dir = temp_dir();
    let (a, b) = demo_pair(dir.path());
    let (_, with_file) = diff(&a, &b, dir.path());
    std::fs::remove_file(a.join("tokens.json")).unwrap();
    let out = mcpeval(&["diff", a.to_str().unwrap(), b.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("counted from tools.json for the baseline"),
        "{stdout}"
    );
    let (code, without) = diff(&a, &b, dir.path());
    assert_eq!(code, Some(0));
    assert_eq!(without["tokens"]["sources"]["baseline"], "tools.json");
    assert_eq!(without["tokens"]["list"], with_file["tokens"]["list"]);
    assert_eq!(without["tokens"]["tools"], with_file["tokens"]["tools"]);
}

fn check_contract(dir: &Path, extra: &[&str]) -> (Option<i32>, String) {
    let out_dir = dir.join(format!(
        "check-{}",
        extra.join("-").replace(['/', '%'], "_")
    ));
    let mut args = vec![
        "check",
        "--baseline",
        "demo:1.4.0",
        "--candidate",
        "demo:1.5.0",
        "--stages",
        "contract",
        "--out",
        out_dir.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = mcpeval(&args);
    let read = |name: &str| std::fs::read_to_string(out_dir.join(name)).unwrap_or_default();
    let (summary, junit) = (read("summary.md"), read("junit.xml"));
    (
        out.status.code(),
        format!("{}\n{summary}\n{junit}", text(&out)),
    )
}

#[test]
fn max_tool_tokens_increase_fails_the_contract_stage_and_a_generous_one_passes() {
    let dir = temp_dir();
    // Without a limit the cost is shown, never judged.
    let (code, said) = check_contract(dir.path(), &[]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("tool list +39 tokens (+6.6 %)"), "{said}");
    assert!(
        said.contains("costliest tools (o200k_base): `update_issue` "),
        "{said}"
    );
    assert!(
        said.contains("largest changes (o200k_base): `find_issues` added"),
        "{said}"
    );

    let (code, said) = check_contract(dir.path(), &["--max-tool-tokens-increase", "5%"]);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("the tool list grew by 39 o200k_base tokens (590 → 629, +6.6 %), past max_tool_tokens_increase 5%"),
        "{said}"
    );
    let (code, said) = check_contract(dir.path(), &["--max-tool-tokens-increase", "30"]);
    assert_eq!(code, Some(1), "an absolute limit: {said}");
    assert!(
        said.contains("past max_tool_tokens_increase 30 tokens"),
        "{said}"
    );

    // The config's key, generous enough.
    let config = dir.path().join("check.toml");
    std::fs::write(&config, "[check]\nmax_tool_tokens_increase = \"50%\"\n").unwrap();
    let (code, said) = check_contract(dir.path(), &["--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.contains("tool list tokens within max_tool_tokens_increase 50%"),
        "{said}"
    );

    // Bad values are usage errors naming the key.
    std::fs::write(&config, "[check]\nmax_tool_tokens_increase = \"lots\"\n").unwrap();
    let (code, said) = check_contract(dir.path(), &["--config", config.to_str().unwrap()]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("check.toml:2:") && said.contains("max_tool_tokens_increase must be"));
    let (code, said) = check_contract(dir.path(), &["--max-tool-tokens-increase=-4%"]);
    assert_eq!(code, Some(2), "{said}");
    assert!(said.contains("max_tool_tokens_increase must be"), "{said}");
}

/// Counts `texts` with js-tiktoken (`scripts/count-tokens.js`): per encoding name, one count per
/// text.
fn js_tiktoken(texts: &[String]) -> Value {
    let install = repo_path(JS_TIKTOKEN);
    assert!(
        install
            .join("node_modules/js-tiktoken/package.json")
            .is_file(),
        "js-tiktoken is not installed in {JS_TIKTOKEN}: run scripts/install-token-reference \
         (scripts/test runs it before cargo test)"
    );
    let mut child = Command::new("node")
        .arg(repo_path("scripts/count-tokens.js"))
        .arg(&install)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs scripts/count-tokens.js");
    let input = serde_json::to_vec(texts).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "scripts/count-tokens.js failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Texts that stress a BPE's pre-tokenizer: scripts, emoji, invisible characters, code,
/// numbers, whitespace runs, a special token's spelling, and a long text.
fn hard_texts() -> Vec<String> {
    let mut texts: Vec<String> = [
        "日本語のツール説明: 課題を検索します。中文：搜索问题。한국어 설명입니다.",
        "Emoji 🚀🔥👩‍💻 and flags 🇫🇷🇯🇵, skin tones 👍🏽, keycaps 1️⃣",
        "Combining: e\u{301}te\u{301}, Zalgo: Z\u{336}\u{31b}a\u{337}l\u{335}g\u{334}o, Hangul jamo \u{1100}\u{1161}",
        "RTL: مرحبا بالعالم and שלום עולם; bidi \u{202e}evil\u{202c}; zero-width a\u{200b}b\u{200d}c\u{feff}",
        "Tag characters \u{e0041}\u{e0042}\u{e0043} hidden in plain sight",
        "fn main() {\n    let x: Vec<u8> = (0..=255).collect();\n    println!(\"{x:?}\");\n}\n",
        "def f(a, *args, **kw):\n\treturn {k: v for k, v in kw.items() if v is not None}  # done\n",
        "SELECT id, \"title\" FROM issues WHERE state = 'open' AND n >= 1234567890;",
        "numbers 1 12 123 1234 12345 3.14159 -0.001 1e-9 0xDEADBEEF 2026-12-04T17:31:39Z",
        "   leading spaces, trailing spaces   \n\n\r\n\ttabs\t\tand    runs      ",
        "<|endoftext|> and <|fim_prefix|> are text here, not special tokens",
        "Don't, won't, I'll, we've, they're, it's, O'REILLY'S, CAN'T",
        "{\"type\":\"object\",\"properties\":{\"q\":{\"type\":\"string\",\"maxLength\":256}},\"required\":[\"q\"]}",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let long: String = (0..400)
        .map(|i| {
            format!(
                "Issue #{i} in project apollo-{}: «{}» ",
                i % 7,
                "ñ".repeat(i % 5)
            )
        })
        .collect();
    texts.push(long);
    texts
}

#[test]
fn counts_equal_an_independent_implementation_js_tiktoken() {
    let dir = temp_dir();
    let (a, b) = demo_pair(dir.path());
    let mut texts = hard_texts();
    let mut from_files: Vec<(String, Value)> = Vec::new();
    for side in [&a, &b] {
        let tools = read_json(&side.join("tools.json"));
        let tools = tools.as_array().unwrap();
        let tokens = read_json(&side.join("tokens.json"));
        for (tool, counted) in tools.iter().zip(tokens["tools"].as_array().unwrap()) {
            texts.push(tool_entry(tool));
            from_files.push((tool_entry(tool), counted["tokens"].clone()));
        }
        texts.push(list_text(tools));
        from_files.push((list_text(tools), tokens["list"].clone()));
        let server = read_json(&side.join("server.json"));
        let instructions = server["instructions"].as_str().unwrap().to_owned();
        texts.push(instructions.clone());
        from_files.push((instructions, tokens["instructions"].clone()));
    }
    let reference = js_tiktoken(&texts);
    for encoding in Encoding::ALL {
        let theirs = reference[encoding.name()].as_array().unwrap();
        assert_eq!(theirs.len(), texts.len());
        for (text, n) in texts.iter().zip(theirs) {
            assert_eq!(
                Some(encoding.count(text)),
                n.as_u64(),
                "{}: {text:?}",
                encoding.name()
            );
        }
    }
    // What the binary wrote into tokens.json is what js-tiktoken counts for the same texts.
    let texts: Vec<String> = from_files.iter().map(|(t, _)| t.clone()).collect();
    let reference = js_tiktoken(&texts);
    for encoding in Encoding::ALL {
        for (i, (text, written)) in from_files.iter().enumerate() {
            assert_eq!(
                written[encoding.name()],
                reference[encoding.name()][i],
                "{}: {text}",
                encoding.name()
            );
        }
    }
}

#[test]
fn a_real_servers_list_gets_sane_counts() {
    let dir = temp_dir();
    let out = dir.path().join("everything");
    snapshot(&everything_server(), &out, &[]);
    let tools = read_json(&out.join("tools.json"));
    let tools = tools.as_array().unwrap();
    let tokens = read_json(&out.join("tokens.json"));
    let counted = tokens["tools"].as_array().unwrap();
    assert!(tools.len() >= 10, "{} tools", tools.len());
    assert_eq!(counted.len(), tools.len());
    for encoding in Encoding::ALL {
        let name = encoding.name();
        let per_tool: Vec<u64> = (counted.iter())
            .map(|t| t["tokens"][name].as_u64().unwrap())
            .collect();
        // Each tool's entry holds at least its wrapper, name and schema; none is absurd.
        assert!(
            per_tool.iter().all(|n| (20..5_000).contains(n)),
            "{per_tool:?}"
        );
        // The list is its entries joined by commas in brackets: the sum of the tools within
        // one token per tool (a comma or bracket, or pieces that merge where entries join).
        let sum: u64 = per_tool.iter().sum();
        let list = tokens["list"][name].as_u64().unwrap();
        let n = tools.len() as u64;
        assert!(
            list + n >= sum && list <= sum + n + 1,
            "{name}: list {list}, sum {sum}"
        );
        for (tool, c) in tools.iter().zip(counted) {
            assert_eq!(
                c["tokens"][name].as_u64(),
                Some(encoding.count(&tool_entry(tool)))
            );
        }
    }
}

#[test]
fn the_evaluations_token_rows_name_the_tool_lists_change() {
    let dir = temp_dir();
    let run = dir.path().join("run");
    let out = mcpeval(&["run", "--trials", "2", "--out", run.to_str().unwrap()]);
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(&out));
    let info = read_json(&run.join("run.json"));
    assert_eq!(o200k(&info["baseline"]["tool_tokens"]), 590, "{info}");
    assert_eq!(o200k(&info["candidate"]["tool_tokens"]), 629);
    let summary = std::fs::read_to_string(run.join("summary.md")).unwrap();
    let tokens = summary
        .split("## Tokens and cost")
        .nth(1)
        .unwrap_or_default();
    assert!(
        tokens.contains("590 → 629 tokens, tool list +39 tokens (+6.6 %)"),
        "{tokens}"
    );
    assert!(
        tokens.contains("- `sim`: input tokens +") && tokens.contains("input tokens per request"),
        "{tokens}"
    );
}
