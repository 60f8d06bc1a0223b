//! Config files through the binary: a file with several problems gets all of them at once, in
//! file order, each as `file:line:col: message`, and exit code 2.

use crate::common;

use common::*;

#[test]
fn every_problem_of_a_config_file_is_reported_at_once_in_file_order() {
    let dir = temp_dir();
    let bad = dir.path().join("BAD.toml");
    std::fs::write(
        &bad,
        "trials = 3\ntrails = 4\n\n[stats]\nalpah = 0.1\n\n[host.fast]\nprovider = \"sim\"\n\
         modle = \"m\"\n",
    )
    .unwrap();
    let out = mcpeval(&["run", "--config", bad.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("BAD.toml:"))
        .collect();
    let expected = [
        "BAD.toml:2:1: unknown key `trails` (did you mean `trials`?)",
        "BAD.toml:5:1: unknown key `alpah` in [stats] (did you mean `alpha`?)",
        "BAD.toml:9:1: unknown key `modle` in [host.fast] (did you mean `model`?)",
    ];
    assert_eq!(lines.len(), expected.len(), "{}", text(&out));
    for (line, end) in lines.iter().zip(expected) {
        assert!(
            line.ends_with(end),
            "{line:?} should end with {end:?}\n{}",
            text(&out)
        );
    }
    assert!(stderr.contains("3 problem(s) in config"), "{}", text(&out));
}
