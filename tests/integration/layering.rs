//! The layering of `src/`, enforced: a top-level module imports only modules below it in
//! [`LAYERS`], the module graph has no cycle, and every layer named there exists.
//!
//! Why: in `src/`, data flows one way (docs/architecture.md). A module that decides (the runner,
//! the analysis) never reaches up into one that shows (the report, the CLI), so a verdict can be
//! computed, tested and reused without a renderer; product code never imports a test double
//! (`sim`); and the leaves (`config`, `suite`, `stats`) stay free of the modules that act on
//! them. The check reads the sources as text, which is enough for `crate::` paths: the scanner
//! works on `(path, text)` pairs, and only [`source_files`] touches the file system, so
//! `the_checker_finds_a_forbidden_import` can run it on fake sources.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

/// The top-level modules of `src/`, from the face down: a module may import only modules
/// further down this list.
const LAYERS: &[&str] = &[
    "cli",      // clap definitions and dispatch
    "job",      // one run, built from resolved config
    "report",   // renderers only
    "history",  // the nightly history table, drift, schedule
    "analysis", // comparison, verdicts, the adaptive stopping rule
    "runner",   // schedules trials, emits events; imports neither analysis nor report
    "rundir",   // the run directory, its one owner
    "episode",  // one trial: the agent loop or an app host
    "grade",    // graders
    "sim",      // the simulated model and sim-server: a test double
    "host",     // the Model trait, providers, app host settings
    "contract", // snapshot, diff, trigger
    "mcp",      // the MCP client and the demo server
    "cassette", // recorded server traffic: format, reading, matcher, recorder
    "config",   // owns the settings types it parses
    "suite",    // tasks
    "stats",    // pure statistics
    "net",      // HTTP clients on rustls with ring
    "memory",   // allocator settings
    "error",    // exit codes and error chains
];

/// A source file as the checker sees it: its path from the crate root (`src/job.rs`) and text.
type Source = (String, String);

/// One reference from a file to another top-level module (`crate::to…`).
#[derive(Debug)]
struct Import {
    file: String,
    line: usize,
    from: String,
    to: String,
}

/// The top-level module a file belongs to: `src/host/app/claude.rs` -> `host`,
/// `src/job.rs` -> `job`; `None` for the crate roots `src/main.rs` and `src/lib.rs`.
fn top_level_module(path: &str) -> Option<&str> {
    let rest = path.strip_prefix("src/")?;
    match rest.split_once('/') {
        Some((dir, _)) => Some(dir),
        None => rest
            .strip_suffix(".rs")
            .filter(|m| *m != "main" && *m != "lib"),
    }
}

/// Whether the whole file is test code: `tests.rs`, `tests_*.rs`, `*_tests.rs`,
/// `test_support.rs`, or anything under a folder named `tests`.
fn is_test_file(path: &str) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    let name = parts.pop().unwrap_or_default();
    parts.contains(&"tests")
        || name == "tests.rs"
        || name == "test_support.rs"
        || name.starts_with("tests_")
        || name.ends_with("_tests.rs")
}

/// The text with comments (doc comments too), string and char literals blanked to spaces;
/// newlines are kept, so line numbers still hold. Good enough for well-formed Rust.
fn strip_comments_and_strings(text: &str) -> Vec<char> {
    let src: Vec<char> = text.chars().collect();
    let mut out = src.clone();
    let at = |i: usize| src.get(i).copied().unwrap_or('\0');
    let mut i = 0;
    while i < src.len() {
        let start = i;
        match (at(i), at(i + 1)) {
            ('/', '/') => {
                while i < src.len() && src[i] != '\n' {
                    i += 1;
                }
            }
            ('/', '*') => {
                let mut depth = 0;
                while i < src.len() {
                    match (at(i), at(i + 1)) {
                        ('/', '*') => (depth, i) = (depth + 1, i + 2),
                        ('*', '/') => (depth, i) = (depth - 1, i + 2),
                        _ => i += 1,
                    }
                    if depth == 0 {
                        break;
                    }
                }
            }
            ('"', _) => {
                // A raw string `r#"…"#` is recognised by the `r` and hashes before its quote.
                let hashes = src[..i].iter().rev().take_while(|&&c| c == '#').count();
                let raw = i > hashes && src[i - hashes - 1] == 'r';
                i += 1;
                while i < src.len() {
                    if !raw && src[i] == '\\' {
                        i += 2;
                    } else if src[i] == '"' && (!raw || (1..=hashes).all(|k| at(i + k) == '#')) {
                        i += 1 + if raw { hashes } else { 0 };
                        break;
                    } else {
                        i += 1;
                    }
                }
            }
            ('\'', '\\') => {
                i += 3;
                while i < src.len() && src[i] != '\'' {
                    i += 1;
                }
                i += 1;
            }
            ('\'', _) if at(i + 2) == '\'' => i += 3,
            _ => {
                i += 1;
                continue; // code (a lifetime's `'` included)
            }
        }
        blank(&mut out[start..i.min(src.len())]);
    }
    out
}

/// Spaces for everything but newlines.
fn blank(chars: &mut [char]) {
    for c in chars.iter_mut().filter(|c| **c != '\n') {
        *c = ' ';
    }
}

/// Whether `code[i..]` starts with `pattern`, whitespace between tokens ignored.
fn starts_with_tokens(code: &[char], i: usize, pattern: &str) -> bool {
    let mut rest = code[i..].iter().filter(|c| !c.is_whitespace());
    pattern.chars().all(|p| rest.next() == Some(&p))
}

/// Blanks every item marked `#[cfg(test)]` in stripped code: a `mod tests { … }` to its closing
/// brace, a `mod tests;` or `use …;` to its semicolon, a `fn` to the end of its body (and a
/// marked field to the end of its struct: good enough). `#![cfg(test)]` blanks the whole file.
fn strip_cfg_test(mut code: Vec<char>) -> Vec<char> {
    let mut i = 0;
    while i < code.len() {
        if code[i] == '#' && starts_with_tokens(&code, i, "#![cfg(test)]") {
            blank(&mut code[i..]);
            break;
        }
        if code[i] != '#' || !starts_with_tokens(&code, i, "#[cfg(test)]") {
            i += 1;
            continue;
        }
        let start = i;
        while code[i] != ']' {
            i += 1; // past the attribute itself
        }
        i += 1;
        let mut depth = 0_i32;
        while i < code.len() {
            match code[i] {
                '(' | '[' | '{' => depth += 1,
                ')' | ']' | '}' => depth -= 1,
                ';' if depth == 0 => break,
                _ => {}
            }
            if depth < 0 || (depth == 0 && code[i] == '}') {
                break;
            }
            i += 1;
        }
        i = (i + 1).min(code.len());
        blank(&mut code[start..i]);
    }
    code
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Every `crate::x` in stripped code as (line, `x`), grouped uses `crate::{a::b, c}` giving each
/// first component inside the braces; `crate::{self, …}` and globs name no module.
fn crate_references(code: &[char]) -> Vec<(usize, String)> {
    let line = |pos: usize| 1 + code[..pos].iter().filter(|&&c| c == '\n').count();
    let skip_ws = |mut i: usize| {
        while i < code.len() && code[i].is_whitespace() {
            i += 1;
        }
        i
    };
    let ident_at =
        |i: usize| -> String { code[i..].iter().take_while(|&&c| is_ident(c)).collect() };
    let mut found = Vec::new();
    let mut i = 0;
    while i < code.len() {
        let path = code[i..].starts_with(&['c', 'r', 'a', 't', 'e'])
            && (i == 0 || !is_ident(code[i - 1]))
            && code[skip_ws(i + 5)..].starts_with(&[':', ':']);
        if !path {
            i += 1;
            continue;
        }
        i = skip_ws(skip_ws(i + 5) + 2);
        if code.get(i) != Some(&'{') {
            found.push((line(i), ident_at(i)));
            continue;
        }
        let (mut depth, mut expect) = (0, true);
        while i < code.len() {
            match code[i] {
                '{' => (depth, expect) = (depth + 1, depth == 0),
                '}' => depth -= 1,
                ',' if depth == 1 => expect = true,
                c if expect && depth == 1 && is_ident(c) => {
                    found.push((line(i), ident_at(i)));
                    expect = false;
                }
                _ => {}
            }
            if depth == 0 {
                break;
            }
            i += 1;
        }
    }
    found.retain(|(_, name)| !name.is_empty() && name != "self");
    found
}

/// Every reference from a file to another top-level module (a module of the files, or a layer),
/// test code left out.
fn imports(files: &[Source]) -> Vec<Import> {
    let product = || files.iter().filter(|(path, _)| !is_test_file(path));
    let mut known: BTreeSet<&str> = LAYERS.iter().copied().collect();
    known.extend(product().filter_map(|(path, _)| top_level_module(path)));
    let mut all = Vec::new();
    for (path, text) in product() {
        let Some(from) = top_level_module(path) else {
            continue;
        };
        let code = strip_cfg_test(strip_comments_and_strings(text));
        for (line, to) in crate_references(&code) {
            if to != from && known.contains(to.as_str()) {
                all.push(Import {
                    file: path.clone(),
                    line,
                    from: from.to_owned(),
                    to,
                });
            }
        }
    }
    all
}

/// Every `.rs` file under `src/`, as (`src/…` with `/` separators, text), sorted by path.
fn source_files() -> Vec<Source> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<Source>) {
        for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let rel = format!("{rel}/{name}");
            if path.is_dir() {
                walk(&path, &rel, out);
            } else if name.ends_with(".rs") {
                out.push((rel, fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut files = Vec::new();
    walk(&src_dir(), "src", &mut files);
    files.sort();
    files
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rank(module: &str) -> Option<usize> {
    LAYERS.iter().position(|&layer| layer == module)
}

/// One line per (file, imported module) for each import with `from` whose target is not in
/// `allowed(from)`, naming the first line and any further ones.
fn forbidden(imports: &[Import], allowed: impl Fn(&str) -> Vec<&'static str>) -> Vec<String> {
    let mut lines: BTreeMap<(&str, &str), (&str, Vec<usize>)> = BTreeMap::new();
    for import in imports {
        if !allowed(&import.from).contains(&import.to.as_str()) {
            let key = (import.file.as_str(), import.to.as_str());
            lines
                .entry(key)
                .or_insert((&import.from, vec![]))
                .1
                .push(import.line);
        }
    }
    let lines = lines.into_iter().map(|((file, to), (from, at))| {
        let may = allowed(from).join(", ");
        let may = if may.is_empty() { "nothing" } else { &may };
        let also: Vec<String> = at[1..].iter().map(ToString::to_string).collect();
        let also = if also.is_empty() {
            String::new()
        } else {
            format!("; also lines {}", also.join(", "))
        };
        format!(
            "{file}:{} imports crate::{to} ({from} may import only: {may}{also})",
            at[0]
        )
    });
    lines.collect()
}

/// The layers below `module`, which it may import.
fn below(module: &str) -> Vec<&'static str> {
    rank(module).map_or(vec![], |r| LAYERS[r + 1..].to_vec())
}

/// Everything wrong with the layering of these files: modules with no layer, upward imports.
fn layering_problems(files: &[Source]) -> Vec<String> {
    let mut unplaced = BTreeMap::new();
    for (path, _) in files.iter().filter(|(path, _)| !is_test_file(path)) {
        if let Some(module) = top_level_module(path).filter(|m| rank(m).is_none()) {
            unplaced.entry(module).or_insert(path);
        }
    }
    let mut problems: Vec<String> = unplaced
        .into_iter()
        .map(|(module, path)| {
            format!(
                "{path}: top-level module `{module}` has no place in the layering \
                 (tests/integration/layering.rs LAYERS)"
            )
        })
        .collect();
    let placed: Vec<Import> = imports(files)
        .into_iter()
        .filter(|i| rank(&i.from).is_some())
        .collect();
    problems.extend(forbidden(&placed, below));
    problems
}

/// Depth-first from `node`: the first cycle through `path` (the nodes being visited).
fn visit<'a>(
    node: &'a str,
    edges: &BTreeMap<&'a str, BTreeMap<&'a str, &'a Import>>,
    path: &mut Vec<&'a str>,
    done: &mut BTreeSet<&'a str>,
) -> Option<Vec<&'a str>> {
    if let Some(at) = path.iter().position(|&n| n == node) {
        return Some([&path[at..], &[node]].concat());
    }
    if !done.insert(node) {
        return None;
    }
    path.push(node);
    for &next in edges.get(node).into_iter().flat_map(|e| e.keys()) {
        if let Some(cycle) = visit(next, edges, path, done) {
            return Some(cycle);
        }
    }
    path.pop();
    None
}

/// A cycle in the graph of top-level modules, as `a -> b -> a` with a file for each edge.
fn find_cycle(imports: &[Import]) -> Option<String> {
    let mut edges: BTreeMap<&str, BTreeMap<&str, &Import>> = BTreeMap::new();
    for import in imports {
        edges
            .entry(&import.from)
            .or_default()
            .entry(&import.to)
            .or_insert(import);
    }
    let mut done = BTreeSet::new();
    let cycle = edges
        .keys()
        .find_map(|&n| visit(n, &edges, &mut vec![], &mut done))?;
    let evidence = cycle.windows(2).map(|pair| {
        let import = edges[pair[0]][pair[1]];
        format!(
            "  {} -> {}: {}:{}",
            pair[0], pair[1], import.file, import.line
        )
    });
    Some(format!(
        "{}\n{}",
        cycle.join(" -> "),
        evidence.collect::<Vec<_>>().join("\n")
    ))
}

#[test]
fn imports_flow_one_way() {
    let problems = layering_problems(&source_files());
    assert!(
        problems.is_empty(),
        "{} imports against the layering (a module imports only modules below it in \
         tests/integration/layering.rs LAYERS):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn the_top_level_module_graph_has_no_cycle() {
    let cycle = find_cycle(&imports(&source_files()));
    assert!(
        cycle.is_none(),
        "the top-level modules import each other in a cycle: {}",
        cycle.unwrap()
    );
}

/// The imports of `from` into any of `to`, as [`forbidden`] lines.
fn imports_between(from: &str, to: &[&str]) -> Vec<String> {
    let found: Vec<Import> = imports(&source_files())
        .into_iter()
        .filter(|i| i.from == from && to.contains(&i.to.as_str()))
        .collect();
    forbidden(&found, below)
}

#[test]
fn the_runner_imports_neither_analysis_nor_report() {
    let found = imports_between("runner", &["analysis", "report"]);
    assert!(
        found.is_empty(),
        "the runner schedules trials and emits events; what they mean (analysis) and how they \
         look (report) is decided above it:\n{}",
        found.join("\n")
    );
}

#[test]
fn nothing_in_host_imports_sim() {
    let found = imports_between("host", &["sim"]);
    assert!(
        found.is_empty(),
        "product code never imports the test double (sim builds on host, not the other way):\n{}",
        found.join("\n")
    );
}

#[test]
fn config_suite_and_stats_import_nothing_that_acts_on_them() {
    let allowed = |module: &str| match module {
        "config" => vec!["suite", "stats", "memory", "error"],
        "suite" => vec!["stats", "error"],
        _ => vec!["error"],
    };
    let leaves: Vec<Import> = imports(&source_files())
        .into_iter()
        .filter(|i| ["config", "suite", "stats"].contains(&i.from.as_str()))
        .collect();
    let found = forbidden(&leaves, allowed);
    assert!(
        found.is_empty(),
        "the leaves import nothing that acts on them:\n{}",
        found.join("\n")
    );
}

#[test]
fn every_layer_exists() {
    let src = src_dir();
    let missing: Vec<&str> = LAYERS
        .iter()
        .copied()
        .filter(|m| !src.join(format!("{m}.rs")).is_file() && !src.join(m).is_dir())
        .collect();
    assert!(
        missing.is_empty(),
        "layers named in LAYERS but not in src/ (a stale name?): {}",
        missing.join(", ")
    );
}

#[test]
fn the_checker_finds_a_forbidden_import() {
    // `x.rs` imports upward twice (lines 2 and 6), and mentions `crate::` paths that are no
    // imports: in comments, strings, test code, behind a `'"'` and lifetimes.
    let files: Vec<Source> = [
        (
            "src/runner/x.rs",
            concat!(
                "//! The runner, see [`crate::report::adaptive`].\n",
                "use crate::report::Verdict;\n",
                "/// Not [`crate::analysis::Rule`] either.\n",
                "const S: &str = \"crate::analysis::x { \"; const R: &str = r#\"crate::cli\"#;\n",
                "fn seed() -> u64 { let _ = '{'; crate::sim::SEED }\n",
                "use crate::{config::X, report::Y, episode::{a, b}, self};\n",
                "#[cfg(test)]\n",
                "mod tests {\n",
                "    use crate::analysis::Z; // }\n",
                "    fn f() { let _ = \"}\"; }\n",
                "}\n",
                "#[cfg(test)] pub(crate) use crate::cli::W;\n",
                "#[cfg(test)]\n#[path = \"x_tests.rs\"]\nmod tests2;\n",
                "/* crate::job::Job */ use crate::runner::Own; const C: char = '\"';\n",
                "fn g<'a>(x: &'a str) -> &'a str { crate::episode::f(x) }\n",
            ),
        ),
        ("src/runner/tests.rs", "use crate::report::Tested;\n"),
        (
            "src/grade/whole.rs",
            "#![cfg(test)]\nuse crate::cli::Args;\n",
        ),
        ("src/host/sim_user.rs", "use crate::sim::Model;\n"),
        ("src/report.rs", "use crate::runner::Events;\n"),
        ("src/sim.rs", ""),
        ("src/foo.rs", ""),
    ]
    .iter()
    .map(|&(path, text)| (path.to_owned(), text.to_owned()))
    .collect();
    let all = imports(&files);
    let found: Vec<(usize, &str)> = all
        .iter()
        .filter(|i| i.file == "src/runner/x.rs")
        .map(|i| (i.line, i.to.as_str()))
        .collect();
    assert_eq!(
        found,
        [
            (2, "report"),
            (5, "sim"),
            (6, "config"),
            (6, "report"),
            (6, "episode"),
            (17, "episode")
        ],
        "only code counts: not doc comments, strings, comments, #[cfg(test)] items or test files"
    );
    let problems = layering_problems(&files);
    let expected = [
        "src/foo.rs: top-level module `foo` has no place in the layering",
        "src/host/sim_user.rs:1 imports crate::sim (host may import only: contract, mcp,",
        "src/runner/x.rs:2 imports crate::report (runner may import only: rundir, episode,",
    ];
    assert_eq!(problems.len(), expected.len(), "{problems:#?}");
    for (problem, start) in problems.iter().zip(expected) {
        assert!(
            problem.starts_with(start),
            "{problem:?} should start with {start:?}"
        );
    }
    assert!(problems[2].ends_with("; also lines 6)"), "{}", problems[2]);
    let cycle = find_cycle(&all).expect("report -> runner -> report is a cycle");
    assert!(cycle.starts_with("report -> runner -> report\n"), "{cycle}");
    assert!(
        cycle.contains("  runner -> report: src/runner/x.rs:2"),
        "{cycle}"
    );
}

/// Product code (test code and comments left out) matching `needle` as a token sequence, as
/// `file:line` (`needle` is matched on the code with its spaces removed).
fn product_lines_with(files: &[Source], needle: &str) -> Vec<String> {
    let needle: Vec<char> = needle.chars().filter(|c| !c.is_whitespace()).collect();
    let mut found = Vec::new();
    for (path, text) in files.iter().filter(|(path, _)| !is_test_file(path)) {
        let code = strip_cfg_test(strip_comments_and_strings(text));
        let code: String = code.into_iter().collect();
        for (n, line) in code.lines().enumerate() {
            let squeezed: Vec<char> = line.chars().filter(|c| !c.is_whitespace()).collect();
            if squeezed
                .windows(needle.len())
                .any(|w| w == needle.as_slice())
            {
                found.push(format!("{path}:{}", n + 1));
            }
        }
    }
    found
}

/// Exit codes are chosen in one place: nothing below `main` ends the process itself (it returns
/// an outcome or an error that says its code). The one exception is the demo server's crash on
/// purpose (`MCPEVAL_DEMO_CRASH_AFTER`), a fault it injects into its own process for the tests.
#[test]
fn nothing_below_main_calls_process_exit() {
    let found: Vec<String> = product_lines_with(&source_files(), "process::exit(")
        .into_iter()
        .filter(|at| !at.starts_with("src/main.rs:") && !at.starts_with("src/mcp/demo/handler.rs:"))
        .collect();
    assert!(
        found.is_empty(),
        "process::exit below main (return an exit code or a coded error instead):\n{}",
        found.join("\n")
    );
}

/// The error type of a `-> Result<T, E>` on this line of code, if it has one.
fn result_error_type(line: &str) -> Option<String> {
    let after_arrow = &line[line.find("->")? + 2..];
    let inner = &after_arrow[after_arrow.find("Result<")? + "Result<".len()..];
    let (mut depth, mut args, mut current) = (0usize, Vec::new(), String::new());
    for c in inner.chars() {
        match c {
            '<' | '(' | '[' => depth += 1,
            '>' if depth == 0 => {
                args.push(current.trim().to_owned());
                return args.get(1).cloned();
            }
            '>' | ')' | ']' => depth -= 1,
            ',' if depth == 0 => {
                args.push(current.trim().to_owned());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    None
}

/// Product functions (test code and comments left out) whose error type is `String`, as
/// `file:line`.
fn string_errors(files: &[Source]) -> Vec<String> {
    let mut found = Vec::new();
    for (path, text) in files.iter().filter(|(path, _)| !is_test_file(path)) {
        let code: String = strip_cfg_test(strip_comments_and_strings(text))
            .into_iter()
            .collect();
        for (n, line) in code.lines().enumerate() {
            if result_error_type(line).as_deref() == Some("String") {
                found.push(format!("{path}:{}", n + 1));
            }
        }
    }
    found
}

/// Library errors are typed, so that each says which exit code it means: no function of the
/// product returns `Result<_, String>`.
#[test]
fn no_function_returns_a_string_error() {
    let found = string_errors(&source_files());
    assert!(
        found.is_empty(),
        "functions returning Result<_, String> (give the error a type):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_code_checks_see_code_only() {
    let files = vec![(
        "src/runner/x.rs".to_owned(),
        "// std::process::exit(1)\nfn f() -> Result<(), String> { let s = \"process::exit(\"; std::process::exit(2) }\n#[cfg(test)]\nmod tests { fn g() { std::process::exit(3) } }\n".to_owned(),
    )];
    assert_eq!(
        product_lines_with(&files, "process::exit("),
        ["src/runner/x.rs:2"]
    );
    assert_eq!(
        product_lines_with(&files, ", String>"),
        ["src/runner/x.rs:2"]
    );
}
