//! The sim against a real published server: natural requests for the read-only tools of npm's
//! `@modelcontextprotocol/server-filesystem` (installed by `scripts/install-real-servers`), whose
//! paths must reach the arguments verbatim, through the real binary.

use crate::common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use common::*;

const VERSION: &str = "2026.8.31";

/// The suite; `{D}` stands for the fixture directory. One or two natural requests per read-only
/// tool, each expecting the tool with the exact path, and three requests that need no tool.
const SUITE: &str = r##"
- id: read-todo
  prompt: "Read the file {D}/notes/todo.txt"
  expect:
    calls:
      - {tool: read_text_file, args: {path: "{D}/notes/todo.txt"}, result: {contains: [buy milk], is_error: false}}
- id: show-readme
  prompt: "Show me the contents of {D}/README.md"
  expect:
    calls:
      - {tool: read_text_file, args: {path: "{D}/README.md"}, result: {is_error: false}}
- id: list-notes
  prompt: "List the files in {D}/notes"
  expect:
    calls:
      - {tool: list_directory, args: {path: "{D}/notes"}, result: {is_error: false}}
- id: whats-in-fixture
  prompt: "What is in the directory {D}?"
  expect:
    calls:
      - {tool: list_directory, args: {path: "{D}"}, result: {is_error: false}}
- id: sizes-notes
  prompt: "List the files in {D}/notes with their sizes"
  expect:
    calls:
      - {tool: list_directory_with_sizes, args: {path: "{D}/notes"}, result: {is_error: false}}
- id: tree-fixture
  prompt: "Show the directory tree of {D}"
  expect:
    calls:
      - {tool: directory_tree, args: {path: "{D}"}, result: {is_error: false}}
- id: search-txt
  prompt: "Search for files matching '**/*.txt' in {D}"
  expect:
    calls:
      - {tool: search_files, args: {path: "{D}", pattern: "**/*.txt"}, result: {contains: [todo.txt], is_error: false}}
- id: info-readme
  prompt: "Get the file info of {D}/README.md"
  expect:
    calls:
      - {tool: get_file_info, args: {path: "{D}/README.md"}, result: {is_error: false}}
- id: allowed-dirs
  prompt: "Which directories are you allowed to access?"
  expect:
    calls:
      - {tool: list_allowed_directories, result: {is_error: false}}
- id: read-two
  prompt: "Read the files {D}/README.md and {D}/notes/todo.txt"
  expect:
    calls:
      - {tool: read_multiple_files, result: {contains: ["# Fixture", buy milk], is_error: false}}
- id: logo-image
  prompt: "Read the image {D}/logo.png"
  expect:
    calls:
      - {tool: read_media_file, args: {path: "{D}/logo.png"}, result: {is_error: false}}
- id: capital
  prompt: What is the capital of France?
  kind: no-tool
- id: thanks
  prompt: Thanks, that was helpful!
  kind: no-tool
- id: explain-glob
  prompt: Explain in one sentence what a glob pattern is.
  kind: no-tool
"##;

/// A 1×1 PNG, for `read_media_file`.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0xda, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

/// The installed server's entry point; runs `scripts/install-real-servers` when it is missing
/// and fails (never skips) when that does not produce it.
pub fn filesystem_server() -> String {
    let entry = repo_path(&format!(
        "target/real-servers/filesystem-{VERSION}/node_modules/@modelcontextprotocol/\
         server-filesystem/dist/index.js"
    ));
    if !entry.is_file() {
        let status = Command::new(repo_path("scripts/install-real-servers"))
            .status()
            .expect("scripts/install-real-servers runs (needs node and npm)");
        assert!(
            status.success() && entry.is_file(),
            "@modelcontextprotocol/server-filesystem@{VERSION} is not installed at {} and \
             scripts/install-real-servers could not install it (needs node, npm and the npm \
             registry)",
            entry.display()
        );
    }
    entry.display().to_string()
}

pub fn write_fixture(dir: &Path) {
    std::fs::create_dir_all(dir.join("notes")).unwrap();
    std::fs::write(dir.join("notes/todo.txt"), "buy milk\ncall maria\n").unwrap();
    std::fs::write(dir.join("notes/ideas.txt"), "a garden\n").unwrap();
    std::fs::write(dir.join("README.md"), "# Fixture\nA small directory.\n").unwrap();
    std::fs::write(dir.join("logo.png"), PNG).unwrap();
}

#[test]
fn the_sim_passes_natural_requests_for_a_real_servers_read_only_tools() {
    let entry = filesystem_server();
    let tmp = temp_dir();
    // The server resolves symlinks in its allowed directory; so must the prompts' paths.
    let root = tmp.path().canonicalize().unwrap();
    let fixture = root.join("fixture");
    write_fixture(&fixture);
    let suite = root.join("fs.yaml");
    // The server can write (write_file, move_file…): each process runs on a copy of the
    // fixture, and the prompts and expected paths name the copy.
    std::fs::write(&suite, SUITE.replace("{D}", "{sandbox}")).unwrap();
    let server = format!("node {entry} {{sandbox}}");
    let out_dir = root.join("run");
    let out = mcpeval(&[
        "run",
        "--sandbox",
        fixture.to_str().unwrap(),
        "--baseline",
        &server,
        "--candidate",
        &server,
        "--suite",
        suite.to_str().unwrap(),
        "--host",
        "sim",
        "--trials",
        "3",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    // Successes per task over both sides' six trials.
    let mut passed: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    for e in episodes(&out_dir) {
        assert!(e.infra_error.is_none(), "{e:?}");
        let p = passed.entry(e.task_id.clone()).or_default();
        p.0 += usize::from(e.success);
        p.1 += 1;
    }
    let rate = |id: &str| {
        let (ok, all) = passed[id];
        ok as f64 / all as f64
    };
    // Requests that need no tool get none.
    for id in ["capital", "thanks", "explain-glob"] {
        assert_eq!(rate(id), 1.0, "{id}: {passed:?}");
    }
    let tool_tasks: Vec<&String> = passed
        .keys()
        .filter(|k| !["capital", "thanks", "explain-glob"].contains(&k.as_str()))
        .collect();
    assert_eq!(tool_tasks.len(), 11, "{passed:?}");
    let good = tool_tasks.iter().filter(|k| rate(k) >= 0.5).count();
    assert!(
        good * 3 >= tool_tasks.len() * 2,
        "only {good} of {} read-only tool tasks pass in at least half of their trials: {passed:?}",
        tool_tasks.len()
    );
    // The verbatim paths are what the server accepted: a file read and a search that found it.
    assert_eq!(rate("read-todo"), 1.0, "{passed:?}");
    assert_eq!(rate("search-txt"), 1.0, "{passed:?}");
}
