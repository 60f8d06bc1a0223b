//! The README stays a front page: at most 400 lines, opening with the two commands a newcomer
//! needs, pointing to CHANGELOG.md and docs/ rather than holding them, with links that lead to
//! files that exist.

use std::path::Path;

const MAX_README_LINES: usize = 400;

fn read(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn the_readme_is_at_most_400_lines_and_leaves_the_changelog_to_changelog_md() {
    let readme = read("README.md");
    let lines = readme.lines().count();
    assert!(
        lines <= MAX_README_LINES,
        "README.md has {lines} lines; keep it at or under {MAX_README_LINES}: move details to docs/ \
         and what changed to CHANGELOG.md"
    );
    assert!(
        readme.contains("](CHANGELOG.md)"),
        "README.md does not link CHANGELOG.md"
    );
    assert!(readme.contains("](docs/"), "README.md does not link docs/");
    // What changed belongs in the changelog: the README keeps a pointer, not a list.
    let changed = readme
        .split("\n## ")
        .find(|s| s.starts_with("What changed"))
        .expect("a `## What changed` section pointing to CHANGELOG.md");
    assert!(
        changed.lines().count() < 10,
        "README.md's `What changed` section is a changelog again ({} lines)",
        changed.lines().count()
    );
    let changelog = read("CHANGELOG.md");
    assert!(changelog.starts_with("# Changelog"));
    assert!(changelog.contains("## Unreleased"));
}

#[test]
fn the_readme_opens_with_the_demo_and_the_test_command() {
    let readme = read("README.md");
    let head: String = readme.lines().take(30).collect::<Vec<_>>().join("\n");
    assert!(
        head.contains("mcpeval run"),
        "the first 30 lines do not show `mcpeval run`"
    );
    assert!(
        head.contains("scripts/test"),
        "the first 30 lines do not show the test command"
    );
    let ci = read(".ci/run");
    assert!(
        ci.contains("scripts/test"),
        ".ci/run does not call the README's test command"
    );
}

#[test]
fn the_readme_and_changelog_link_only_to_files_that_exist() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for name in ["README.md", "CHANGELOG.md"] {
        let text = read(name);
        for target in text.split("](").skip(1).filter_map(|s| s.split(')').next()) {
            if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
                continue;
            }
            let file = target.split('#').next().unwrap_or(target);
            assert!(
                root.join(file).exists(),
                "{name} links to `{target}`, which does not exist"
            );
        }
    }
}
