//! `mcpeval tasks check|list` through the binary: the demo suite is valid; each bad task file
//! gives its message with file, line and column.

mod common;

use common::*;

#[test]
fn the_demo_suite_is_valid_and_large_enough() {
    let out = mcpeval(&["tasks", "check", "--suite", "tasks/demo"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("ok: "), "{stdout}");
    let list = mcpeval(&["tasks", "list", "--suite", "tasks/demo"]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(listed.lines().count() > 15, "{listed}");
    assert!(listed.matches("no-tool").count() >= 4, "{listed}");
    assert!(listed.contains("capability") && listed.contains("regression"));
}

#[test]
fn the_embedded_demo_suite_is_the_one_on_disk() {
    let mut on_disk: Vec<String> = std::fs::read_dir(repo_path("tasks/demo"))
        .unwrap()
        .map(|e| format!("tasks/demo/{}", e.unwrap().file_name().to_string_lossy()))
        .filter(|p| p.ends_with(".yaml"))
        .collect();
    on_disk.sort();
    let mut embedded: Vec<String> = mcpeval::cli::DEMO_SUITE
        .iter()
        .map(|(p, _)| p.to_string())
        .collect();
    embedded.sort();
    assert_eq!(on_disk, embedded);
    for (path, text) in mcpeval::cli::DEMO_SUITE {
        assert_eq!(std::fs::read_to_string(repo_path(path)).unwrap(), *text);
    }
}
