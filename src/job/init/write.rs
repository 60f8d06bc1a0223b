//! What `mcpeval init` writes: the call tasks as YAML (`DIR/tasks/calls.yaml`) and the report
//! (`DIR/init-report.md`).

use std::path::{Path, PathBuf};

use serde_json::json;

use super::calls::{call_json, Expect, Probe};
use crate::mcp::ServerInfo;

/// The files `init` writes under its `--out` directory.
#[derive(Debug, Clone, PartialEq)]
pub struct Files {
    /// The call tasks: the suite is `DIR/tasks`.
    pub calls: PathBuf,
    /// The verified model tasks (`DIR/tasks/models.yaml`).
    pub models: PathBuf,
    /// The model tasks verification turned down, with the reasons (`DIR/rejected.yaml`:
    /// outside the suite, so never run).
    pub rejected: PathBuf,
    /// The tasks drafted and not verified, since they would reach a tool that may change the
    /// server's real state (`DIR/unverified.yaml`: outside the suite).
    pub unverified: PathBuf,
    /// The `TODO` stubs: a model task per tool init could not draft a sensible one for
    /// (`DIR/todo.yaml`: outside the suite).
    pub todo: PathBuf,
    pub report: PathBuf,
    /// The CI files: `DIR/mcpeval.toml`, `DIR/contract/`, the workflow.
    pub ci: super::ci::CiFiles,
}

impl Files {
    pub fn under(dir: &Path) -> Self {
        Self {
            calls: dir.join("tasks").join("calls.yaml"),
            models: dir.join("tasks").join("models.yaml"),
            rejected: dir.join("rejected.yaml"),
            unverified: dir.join("unverified.yaml"),
            todo: dir.join("todo.yaml"),
            report: dir.join("init-report.md"),
            ci: super::ci::CiFiles::under(dir),
        }
    }

    pub fn all(&self) -> Vec<PathBuf> {
        vec![
            self.calls.clone(),
            self.models.clone(),
            self.rejected.clone(),
            self.unverified.clone(),
            self.todo.clone(),
            self.report.clone(),
        ]
    }

    /// The suite's directory (`DIR/tasks`).
    pub fn suite(&self) -> PathBuf {
        self.calls
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }
}

/// A drafted call task: its request, its checks, and the start of the answer it pins.
#[derive(Debug, Clone)]
pub struct Drafted {
    pub probe: Probe,
    pub expect: Expect,
    pub answer: String,
}

/// Something `init` did not draft a task for, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    pub what: String,
    pub why: String,
}

impl LeftOut {
    /// A thing left out; a reason of several lines (a server's stderr) is joined into one.
    pub fn new(what: &str, why: String) -> Self {
        let lines: Vec<&str> = why
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        Self {
            what: what.to_owned(),
            why: lines.join(" "),
        }
    }

    pub fn tool(name: &str, why: String) -> Self {
        Self::new(&format!("tool `{name}`"), why)
    }
}

/// The report's facts.
#[derive(Debug, Clone)]
pub struct Report {
    /// The server as given, with its `serverInfo` name and version.
    pub server: String,
    /// The server spec as given, quoted for a shell when it has spaces.
    pub spec: String,
    pub drafted: Vec<Drafted>,
    pub left_out: Vec<LeftOut>,
    /// Every valid tool call was refused (an error): the tasks pin that.
    pub refused_everything: bool,
    /// `(tool, argument, value)`: values init drafted that a valid call was refused on (its
    /// task not kept).
    pub refused_values: Vec<(String, String, serde_json::Value)>,
    pub notes: Vec<String>,
    /// The model tasks' stage (`None` with `--no-models`).
    pub models: Option<super::model_tasks::ModelOutcome>,
    /// The CI files and `--update`'s findings.
    pub ci: super::ci::CiReport,
    /// What init may call on the server, and the tools it did not call (`None` before the
    /// server listed its tools).
    pub guard: Option<super::guard::Guard>,
    /// The tasks drafted and not verified.
    pub unverified: super::unverified::Unverified,
}

impl Report {
    pub fn new(spec: &str, info: &ServerInfo) -> Self {
        Self {
            server: format!("`{spec}` ({} {})", info.name, info.version),
            spec: match spec.contains(char::is_whitespace) {
                true => format!("'{}'", spec.replace('\'', "'\\''")),
                false => spec.to_owned(),
            },
            drafted: Vec::new(),
            left_out: Vec::new(),
            refused_everything: false,
            refused_values: Vec::new(),
            notes: Vec::new(),
            models: None,
            ci: Default::default(),
            guard: None,
            unverified: Default::default(),
        }
    }

    /// How many tasks send a request malformed on purpose (`malformed: true`).
    pub fn malformed(&self) -> usize {
        self.drafted.iter().filter(|d| d.probe.malformed).count()
    }

    /// How `tasks check` reaches the server: `--server SPEC`, or, on sandbox copies, through
    /// the drafted config, which names the sandbox (`--config DIR/mcpeval.toml --server server`).
    pub fn server_args(&self, files: &Files) -> String {
        match self.sandbox_args().is_empty() || self.ci.written.is_empty() {
            true => format!("--server {}", self.spec),
            false => format!("--config {} --server server", files.ci.config.display()),
        }
    }

    /// ` --sandbox PATH` for each sandbox the server ran on (empty without one).
    pub fn sandbox_args(&self) -> String {
        let Some(super::guard::Safety::Sandboxed(paths)) = self.guard.as_ref().map(|g| &g.safety)
        else {
            return String::new();
        };
        let shown = |s: &crate::config::SandboxPath| match &s.name {
            Some(name) => format!("{name}={}", s.path.display()),
            None => s.path.display().to_string(),
        };
        paths
            .iter()
            .map(|s| format!(" --sandbox {}", shown(s)))
            .collect()
    }

    /// The tools left out because they may change state.
    pub fn write_tools(&self) -> Vec<&LeftOut> {
        (self.left_out.iter())
            .filter(|l| l.what.starts_with("tool `") && l.why.starts_with("writes"))
            .collect()
    }
}

/// The task file's path and text (for loading it before it is written).
pub fn task_sources(files: &Files, drafted: &[Drafted]) -> Vec<(PathBuf, String)> {
    let all: Vec<&Drafted> = drafted.iter().collect();
    let report = Report::new("", &ServerInfo::default());
    vec![(files.calls.clone(), calls_yaml(&all, &report))]
}

/// Writes the task file and the report; the error names the file that could not be written.
pub fn write_all(files: &Files, report: &Report) -> Result<(), (PathBuf, std::io::Error)> {
    let write = |path: &Path, text: String| {
        path.parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::write(path, text))
            .map_err(|e| (path.to_path_buf(), e))
    };
    let all: Vec<&Drafted> = report.drafted.iter().collect();
    write(&files.calls, calls_yaml(&all, report))?;
    if let Some(models) = &report.models {
        // A task file must hold a task: with none kept there is no models.yaml (an earlier
        // one goes, under --force).
        if models.kept.is_empty() {
            if files.models.exists() {
                std::fs::remove_file(&files.models).map_err(|e| (files.models.clone(), e))?;
            }
        } else {
            let text = super::models_write::models_yaml(models, &report.server);
            write(&files.models, text)?;
        }
        write(
            &files.rejected,
            super::models_write::rejected_yaml(models, &report.server),
        )?;
    }
    let todo = report
        .models
        .as_ref()
        .map(|m| m.todo.as_slice())
        .unwrap_or_default();
    match todo.is_empty() {
        false => write(&files.todo, super::todo::todo_yaml(todo, &report.server))?,
        true if files.todo.exists() => {
            std::fs::remove_file(&files.todo).map_err(|e| (files.todo.clone(), e))?
        }
        true => {}
    }
    match super::unverified::unverified_yaml(report) {
        Some(text) => write(&files.unverified, text)?,
        None if files.unverified.exists() => {
            std::fs::remove_file(&files.unverified).map_err(|e| (files.unverified.clone(), e))?
        }
        None => {}
    }
    write(&files.report, report_md(files, report))
}

/// `tasks/calls.yaml`: a header saying where the tasks come from, which tools were left out
/// and which were drafted unverified, then one task per draft.
fn calls_yaml(drafted: &[&Drafted], report: &Report) -> String {
    let mut out = format!(
        "# Call tasks drafted by `mcpeval init` from {}.\n\
         # No model: one request per trial, each expecting what the server answered to two calls\n\
         # (only what both answers shared), kept when a third call passed it.\n\
         # They pin today's behaviour: a change of an answer is a regression of the candidate.\n\
         # `malformed: true` marks a request malformed on purpose (a tool the server does not\n\
         # list, a required argument left out): it pins the server's error semantics.\n",
        report.server
    );
    let writes = report.write_tools();
    if !writes.is_empty() {
        out.push_str("# Left out (`mcpeval init --include-writes` drafts them too):\n");
        for w in writes {
            out.push_str(&format!("#   {}: {}\n", w.what, w.why));
        }
    }
    if !report.unverified.calls.is_empty() {
        out.push_str(
            "# Drafted but not called, so not verified (in unverified.yaml, beside tasks/; \
             see init-report.md):\n",
        );
        for call in &report.unverified.calls {
            out.push_str(&format!("#   {}\n", call.probe.id));
        }
    }
    for d in drafted {
        out.push_str(&task_yaml(d));
    }
    out
}

fn task_yaml(d: &Drafted) -> String {
    let comment = format!("{}; answered: {}", d.probe.why, d.answer).replace('\n', " ");
    let mut out = format!(
        "\n# {comment}\n- id: {}\n  kind: call\n  call: {}\n{}  expect:\n",
        d.probe.id,
        call_json(&d.probe.request),
        if d.probe.malformed {
            "  malformed: true\n"
        } else {
            ""
        }
    );
    let e = &d.expect;
    if let Some(is_error) = e.is_error {
        out.push_str(&format!("    is_error: {is_error}\n"));
    }
    if let Some(code) = e.error_code {
        out.push_str(&format!("    error_code: {code}\n"));
    }
    if !e.result_contains.is_empty() {
        out.push_str(&format!(
            "    result_contains: {}\n",
            json!(e.result_contains)
        ));
    }
    if !e.structured.is_empty() {
        out.push_str("    structured:\n");
        for (path, equals) in &e.structured {
            let check = match equals {
                Some(v) => json!({"path": path, "equals": v}),
                None => json!({"path": path}),
            };
            out.push_str(&format!("      - {check}\n"));
        }
    }
    if e.output_schema {
        out.push_str("    output_schema: true\n");
    }
    out
}

/// `init-report.md`: what was drafted, what was left out and why, how to use the files.
pub fn report_md(files: &Files, report: &Report) -> String {
    let mut out = format!("# mcpeval init: {}\n\n", report.server);
    out.push_str(&format!(
        "{} call task(s) in `{}` ({} of them malformed on purpose, for the error semantics), \
         {} thing(s) left out.\n\n",
        report.drafted.len(),
        files.calls.display(),
        report.malformed(),
        report.left_out.len()
    ));
    out.push_str(&trust_section(files, report));
    if let Some(refused) = refused_words(report) {
        out.push_str(&format!("**{}**{}\n\n", refused.0, refused.1));
    }
    out.push_str("## Drafted\n\n| task | request | checks |\n| --- | --- | --- |\n");
    for d in &report.drafted {
        out.push_str(&format!(
            "| `{}` | `{}` | {} |\n",
            d.probe.id,
            call_json(&d.probe.request).to_string().replace('|', "\\|"),
            checks_words(&d.expect)
        ));
    }
    if let Some(models) = &report.models {
        let unverified = report.unverified.models.len();
        out.push_str(&super::models_write::report_section(
            files, models, unverified,
        ));
    }
    out.push_str("\n## Left out\n\n");
    if report.left_out.is_empty() {
        out.push_str("Nothing.\n");
    }
    for l in &report.left_out {
        out.push_str(&format!("- {}: {}\n", l.what, l.why));
    }
    for note in &report.notes {
        out.push_str(&format!("\nNote: {note}\n"));
    }
    out.push_str(&super::unverified::report_section(files, report));
    out.push_str(&super::ci::report_section(&report.ci));
    let suite_dir = files.suite();
    out.push_str(&format!(
        "\n## Next\n\n- `mcpeval tasks check --suite {0} {2}`\n- `mcpeval run --suite \
         {0} --baseline {1} --candidate NEW{3}` (or `mcpeval check --baseline {1} --candidate \
         NEW --suite {0}{3}`)\n",
        suite_dir.display(),
        report.spec,
        report.server_args(files),
        report.sandbox_args(),
    ));
    out
}

/// The report's list of what was verified and what was not: the call tasks (a third call
/// passed each), the model tasks (by a real model, or only by the simulated one), the drafts
/// not run, the `TODO` stubs.
fn trust_section(files: &Files, report: &Report) -> String {
    let mut out = String::from(
        "## Verified and unverified

",
    );
    out.push_str(&format!(
        "- **verified**: {} call task(s) in `{}` (each passed a third call as `mcpeval run` \
         grades it)\n",
        report.drafted.len(),
        files.calls.display()
    ));
    if let Some(m) = &report.models {
        let how = match &m.writer {
            Some(w) => format!("written by `{w}`"),
            None => "templated from the tools' descriptions and schemas".to_owned(),
        };
        match (m.verified, m.simulated) {
            (true, false) => out.push_str(&format!(
                "- **verified**: {} model task(s) in `{}` ({how}; kept when `{}` passed them)\n",
                m.kept.len(),
                files.models.display(),
                m.host
            )),
            (true, true) => out.push_str(&format!(
                "- **{}, not verified by a real model**: {} model task(s) in `{}` (only `sim`, \
                 mcpeval's simulated model, ran them: `mcpeval init --force --host \
                 openai:MODEL` keeps what a real model passes)\n",
                match m.writer {
                    Some(_) => "written",
                    None => "templated",
                },
                m.kept.len(),
                files.models.display()
            )),
            (false, _) => out.push_str(&format!(
                "- **not verified**: {} model task(s) in `{}` ({how}; not run, see below)\n",
                report.unverified.models.len(),
                files.unverified.display()
            )),
        }
        if !m.todo.is_empty() {
            let tools: Vec<String> = m.todo.iter().map(|t| format!("`{}`", t.tool)).collect();
            out.push_str(&format!(
                "- **TODO**: {} stub(s) in `{}` (outside the suite), for {}: init could not \
                 draft a sensible model task; write the request and move it into tasks/\n",
                m.todo.len(),
                files.todo.display(),
                tools.join(", ")
            ));
            for t in &m.todo {
                out.push_str(&format!("  - `{}`: {}\n", t.tool, t.why));
            }
        }
    }
    out.push('\n');
    out
}

/// What the report and the output say when the server refused valid calls: every one
/// ("Every tool call was refused", then the rest), or some on values init drafted. Which
/// values (tool, argument, value) when the refusals answered those.
pub fn refused_words(report: &Report) -> Option<(String, String)> {
    let values: Vec<String> = (report.refused_values.iter())
        .map(|(tool, arg, value)| format!("`{tool}` {arg} = {value}"))
        .collect();
    let fix = "put values the server accepts in the tasks' `args` of tasks/calls.yaml (or in \
               the parameters' descriptions, `e.g. …`, and run `mcpeval init --force` again)";
    match (report.refused_everything, values.is_empty()) {
        (true, true) => Some((
            "Every tool call was refused".into(),
            " (an error answer): the call tasks pin the refusals. If the server was started \
             wrong (a directory it may not read, missing credentials), fix that and run \
             `mcpeval init --force` again."
                .into(),
        )),
        (true, false) => Some((
            "Every tool call was refused".into(),
            format!(
                " (an error answer), and the refusals named values init drafted, not the \
                 server's own: {}. Those calls are not kept as tasks; {fix}.",
                values.join("; ")
            ),
        )),
        (false, false) => Some((
            "Some tool calls were refused on values init drafted".into(),
            format!(
                ": {}. Those calls are not kept as tasks; {fix}.",
                values.join("; ")
            ),
        )),
        (false, true) => None,
    }
}

/// The checks of a task, in words: `is_error: false, output_schema, 2 texts, 3 paths`.
fn checks_words(e: &Expect) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(is_error) = e.is_error {
        parts.push(format!("is_error: {is_error}"));
    }
    if let Some(code) = e.error_code {
        parts.push(format!("error_code: {code}"));
    }
    if e.output_schema {
        parts.push("output_schema".into());
    }
    if !e.result_contains.is_empty() {
        parts.push(format!("{} text(s)", e.result_contains.len()));
    }
    if !e.structured.is_empty() {
        parts.push(format!("{} path(s)", e.structured.len()));
    }
    parts.join(", ")
}
