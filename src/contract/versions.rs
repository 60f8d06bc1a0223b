//! Which release a side is when `serverInfo.version` cannot tell: both releases of
//! `@modelcontextprotocol/server-filesystem` report `0.2.0`, so a side is shown with its spec
//! beside the version (the package and version where the spec names one:
//! `@modelcontextprotocol/server-filesystem@2025.3.28` in `npx -y …@2025.3.28 /dir`).

use serde_json::Value;

use super::model::Diff;

/// The longest spec shown whole beside a version.
const SPEC_CHARS: usize = 60;
/// The characters of a longer spec kept before where it differs from the other.
const CONTEXT_CHARS: usize = 20;

/// The `name@version` (or `name==version`) package a command line names: an npm package
/// (`@scope/name@1.2.3`, `name@1.2.3`) or a Python one (`name==1.2.3`); `None` when it names
/// none.
pub fn package_of(spec: &str) -> Option<String> {
    let words =
        shlex::split(spec).unwrap_or_else(|| spec.split_whitespace().map(str::to_owned).collect());
    words.into_iter().find(|w| is_package(w))
}

fn is_package(word: &str) -> bool {
    if word.starts_with('-') || word.contains("://") {
        return false;
    }
    let version = match word.rsplit_once("==") {
        Some((name, v)) if !name.is_empty() => v,
        _ => match word.rsplit_once('@') {
            // `@scope/name` alone has its `@` first: no version.
            Some((name, v)) if !name.is_empty() => v,
            _ => return false,
        },
    };
    version.chars().next().is_some_and(|c| c.is_ascii_digit())
}

/// What tells a side's release apart: the package it names, else the spec whole (an URL without
/// its query). [`shown`] shortens it beside the other side's.
pub fn identity(spec: &str) -> String {
    match package_of(spec) {
        Some(package) => package,
        None => spec.split_once('?').map_or(spec, |(url, _)| url).to_owned(),
    }
}

/// An identity as shown beside the other side's: whole up to [`SPEC_CHARS`] characters; a longer
/// one cut to about that around where the two differ, so the part that tells them apart stays
/// (`node /opt/seq-0.6.2/node_modules/@modelcontextprotocol/serve…`, `…/target/debug/mcpeval
/// demo-server --release 1.4.0`), wherever it is.
pub fn shown(own: &str, other: &str) -> String {
    let a: Vec<char> = own.chars().collect();
    if a.len() <= SPEC_CHARS {
        return own.to_owned();
    }
    let b: Vec<char> = other.chars().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = (a.iter().rev().zip(b.iter().rev()))
        .take_while(|(x, y)| x == y)
        .count()
        .min(a.len() - prefix)
        .min(b.len() - prefix);
    // Where they differ, with some context before it; from the start when that is near.
    let start = match prefix {
        p if p > SPEC_CHARS / 2 => (p - CONTEXT_CHARS).min(a.len() - SPEC_CHARS),
        _ => 0,
    };
    let end = (a.len() - suffix + CONTEXT_CHARS)
        .max(start + SPEC_CHARS)
        .min(start + 2 * SPEC_CHARS)
        .min(a.len());
    let text: String = a[start..end].iter().collect();
    let before = if start > 0 { "…" } else { "" };
    let after = if end < a.len() { "…" } else { "" };
    format!("{before}{text}{after}")
}

/// A side as a header shows it: its spec when both sides have the same spec (an A/A run) or the
/// server's name and version are unknown; else the name and version the server reports with its
/// spec beside (`mcp-time 1.30.0 (/opt/time-0.6.2/bin/mcp-server-time)`), since an old Python
/// server reports its SDK's version (`1.30.0`), not its own.
pub fn headed(reported: Option<(&str, &str)>, spec: &str, other_spec: &str) -> String {
    match reported {
        Some((name, version)) if spec != other_spec => {
            let reported = format!("{name} {version}");
            format!("{} ({})", reported.trim_start(), identity(spec))
        }
        _ => spec.to_owned(),
    }
}

/// A side's version as shown beside the other's: `0.2.0`, or `0.2.0 (identity)` when both
/// report the same version but are not the same server (their [`identity`]s differ).
pub fn labelled(version: &str, spec: &str, other_version: &str, other_spec: &str) -> String {
    let (own, other) = (identity(spec), identity(other_spec));
    if version == other_version && own != other {
        format!("{version} ({})", shown(&own, &other))
    } else {
        version.to_owned()
    }
}

/// The version part of a [`labelled`] text (`0.2.0` of `0.2.0 (…)`).
pub fn bare(label: &str) -> &str {
    label.split_once(" (").map_or(label, |(v, _)| v)
}

/// `serverInfo.version` of a diff's side.
fn reported(info: &Value) -> Option<&str> {
    info.get("version").and_then(Value::as_str)
}

/// `A → B`, and when both sides report the same `serverInfo.version`, that they do:
/// `0.2.0 (…@2025.3.28) → 0.2.0 (…@2026.8.31); both report serverInfo version 0.2.0`.
pub fn sides(diff: &Diff) -> String {
    let (b, c) = (&diff.baseline, &diff.candidate);
    let arrow = format!("{} → {}", b.label, c.label);
    match (reported(&b.server_info), reported(&c.server_info)) {
        (Some(x), Some(y)) if x == y && b.label != c.label => {
            format!("{arrow}; both report serverInfo version {x}")
        }
        _ => arrow,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_package_a_command_names_is_found() {
        let npx = "npx -y @modelcontextprotocol/server-filesystem@2025.3.28 /tmp/x";
        assert_eq!(
            package_of(npx).as_deref(),
            Some("@modelcontextprotocol/server-filesystem@2025.3.28")
        );
        assert_eq!(
            package_of("uvx mcp-server-fetch==2025.1.17").as_deref(),
            Some("mcp-server-fetch==2025.1.17")
        );
        assert_eq!(package_of("npx -y @scope/name /dir"), None);
        assert_eq!(
            package_of("node build/index.js --user me@example.org"),
            None
        );
        assert_eq!(
            identity(npx),
            "@modelcontextprotocol/server-filesystem@2025.3.28"
        );
        assert_eq!(
            identity("http://127.0.0.1:8/mcp?token=x"),
            "http://127.0.0.1:8/mcp"
        );
        let long =
            "/home/someone/work/checkouts/main/target/release/mcpeval demo-server --release 1.4.0";
        assert_eq!(identity(long), long, "whole: shown() shortens it");
    }

    #[test]
    fn a_long_spec_is_shown_around_where_it_differs_from_the_other() {
        let demo = |v: &str| {
            format!(
                "/home/someone/work/checkouts/main/target/release/mcpeval demo-server --release {v}"
            )
        };
        let new = shown(&demo("1.4.0"), &demo("1.5.0"));
        assert!(
            new.starts_with('…') && new.ends_with("/release/mcpeval demo-server --release 1.4.0"),
            "{new}"
        );
        assert_eq!(new.chars().count(), SPEC_CHARS + 1, "{new}");
        let seq = |v: &str| {
            format!(
                "node /opt/seq-{v}/node_modules/@modelcontextprotocol/server-sequential-thinking/\
                 dist/index.js"
            )
        };
        let old = shown(&seq("0.6.2"), &seq("2026.8.31"));
        assert!(
            old.starts_with("node /opt/seq-0.6.2/node_modules/") && old.ends_with('…'),
            "{old}"
        );
        assert_eq!(old.chars().count(), SPEC_CHARS + 1, "{old}");
        let time = "/opt/time-0.6.2/bin/mcp-server-time";
        assert_eq!(shown(time, "x"), time);
    }

    #[test]
    fn a_version_gets_its_spec_only_when_both_sides_report_it() {
        let spec = "npx -y @modelcontextprotocol/server-filesystem@2026.8.31 /tmp/x";
        let old = spec.replace("2026.8.31", "2025.3.28");
        assert_eq!(
            labelled("0.2.0", spec, "0.2.0", &old),
            "0.2.0 (@modelcontextprotocol/server-filesystem@2026.8.31)"
        );
        assert_eq!(
            labelled("1.5.0", "demo:1.5.0", "1.4.0", "demo:1.4.0"),
            "1.5.0"
        );
        assert_eq!(
            labelled("1.4.0", "demo:1.4.0", "1.4.0", "demo:1.4.0"),
            "1.4.0"
        );
        assert_eq!(bare("0.2.0 (x@1)"), "0.2.0");
        assert_eq!(bare("1.5.0"), "1.5.0");
    }

    #[test]
    fn a_header_names_each_spec_beside_the_reported_version_when_the_specs_differ() {
        let old = "/opt/time-0.6.2/bin/mcp-server-time";
        let new = "/opt/time-2026.10.19/bin/mcp-server-time";
        assert_eq!(
            headed(Some(("mcp-time", "1.30.0")), old, new),
            "mcp-time 1.30.0 (/opt/time-0.6.2/bin/mcp-server-time)"
        );
        assert_eq!(
            headed(Some(("demo", "1.4.0")), "demo:1.4.0", "demo:1.4.0"),
            "demo:1.4.0"
        );
        assert_eq!(headed(None, old, new), old);
        assert_eq!(
            headed(
                Some(("f", "0.2.0")),
                "npx -y @m/f@2025.3.28 /tmp/x",
                "npx -y @m/f@2026.8.31 /tmp/x"
            ),
            "f 0.2.0 (@m/f@2025.3.28)"
        );
        let long = format!(
            "/very/long/path/{}/mcpeval demo-server --release 1.4.0",
            "x".repeat(60)
        );
        assert!(headed(Some(("demo", "1.4.0")), &long, "demo:1.5.0").ends_with("--release 1.4.0)"));
    }
}
