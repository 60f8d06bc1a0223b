//! The CI around `mcpeval init`'s suite: `DIR/mcpeval.toml` (servers and suites, no host), the
//! stored contract snapshot `DIR/contract/` (and, for a server over HTTP, the conformance
//! suite's expected failures), and the GitHub workflow at the repository's root that runs
//! `mcpeval check` on every pull request.

use std::path::{Path, PathBuf};

use super::ci_state::{state_lines, StateLines};
use super::ci_workflow::{
    absolute, relative, repository_root, slashed, workflow_yaml, Language, Layout, BASE_CHECKOUT,
    PR_CHECKOUT,
};
use super::draft::{InitError, InitRequest};
use super::guard::Guard;
use super::write::Files;
use crate::config::{Overrides, Transport};
use crate::error::{Coded, Exit};
use crate::job::check::{CheckRequest, Stage};
use crate::rundir::StageStatus;

/// The CI files of an `init` into `DIR`.
#[derive(Debug, Clone, PartialEq)]
pub struct CiFiles {
    /// The repository's root: the folder with `.git` at or above `DIR`, else `DIR`'s parent.
    pub root: PathBuf,
    /// `DIR` itself (absolute).
    pub dir: PathBuf,
    /// `DIR/mcpeval.toml`.
    pub config: PathBuf,
    /// `DIR/contract/`: the stored contract snapshot.
    pub contract: PathBuf,
    /// `DIR/contract/expected-failures.yml` (a server over HTTP only).
    pub expected_failures: PathBuf,
    /// `ROOT/.github/workflows/mcpeval.yml`.
    pub workflow: PathBuf,
}

impl CiFiles {
    pub fn under(dir: &Path) -> Self {
        let root = repository_root(&absolute(dir));
        Self {
            config: dir.join("mcpeval.toml"),
            contract: dir.join("contract"),
            expected_failures: dir.join("contract").join("expected-failures.yml"),
            workflow: shown(&root)
                .join(".github")
                .join("workflows")
                .join("mcpeval.yml"),
            dir: absolute(dir),
            root,
        }
    }

    /// What an `init` refuses to overwrite without `--force`.
    pub fn all(&self) -> Vec<PathBuf> {
        vec![
            self.config.clone(),
            self.contract.clone(),
            self.workflow.clone(),
        ]
    }
}

/// `path` (absolute) as the user would write it: relative to the working directory when it is
/// inside it.
fn shown(path: &Path) -> PathBuf {
    let here = absolute(Path::new("."));
    match path.strip_prefix(&here) {
        Ok(inside) => inside.to_path_buf(),
        Err(_) => path.to_path_buf(),
    }
}

/// What the CI part did, for the report and the console.
#[derive(Debug, Clone, Default)]
pub struct CiReport {
    /// The files written, each with what it is.
    pub written: Vec<(PathBuf, String)>,
    /// What became of the conformance suite's expected failures: written (and how many), or
    /// why not.
    pub expected_failures: Option<String>,
    /// The language the workflow was written for.
    pub language: Option<Language>,
    /// The workflow's step to fill in (a server over HTTP is started there).
    pub todo: Option<String>,
    /// `--no-ci`, `--update`: why no CI file was written.
    pub skipped: Option<String>,
    /// `--update`: what the suite covered already and what was new.
    pub update: Option<super::ci_update::Update>,
}

/// What keeps the CI part (or `--update`) from being done.
#[derive(Debug, thiserror::Error)]
pub enum CiError {
    #[error("the contract snapshot of `{server}` could not be taken")]
    Snapshot {
        server: String,
        #[source]
        source: crate::contract::SnapshotError,
    },
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: anyhow::Error,
    },
    #[error("nothing to update: `{}` holds no suite (run `mcpeval init` without --update first)", dir.display())]
    NoSuite { dir: PathBuf },
    #[error("the suite to update does not load")]
    Suite(#[source] crate::suite::SuiteError),
}

impl Coded for CiError {
    fn exit(&self) -> Exit {
        match self {
            CiError::NoSuite { .. } | CiError::Suite(_) => Exit::Usage,
            CiError::Snapshot { .. } | CiError::Write { .. } => Exit::Infra,
        }
    }
}

/// The files this `init` writes, refused (exit 2) when one exists without `--force`: a fresh
/// `init`'s suite files (its CI files are checked once the server answered: see
/// [`refuse_existing`]), or an update's new numbered files.
pub fn files(request: &InitRequest) -> Result<Files, InitError> {
    if request.update {
        return super::ci_update::files(&request.out).map_err(InitError::Ci);
    }
    let files = Files::under(&request.out);
    if !request.force {
        if let Some(path) = files.all().into_iter().find(|p| p.exists()) {
            return Err(InitError::Exists { path });
        }
    }
    Ok(files)
}

/// A fresh `init`'s CI files that exist already, refused without `--force`.
pub fn refuse_existing(request: &InitRequest, files: &Files) -> Result<(), InitError> {
    if request.force || request.no_ci || request.update {
        return Ok(());
    }
    match files.ci.all().into_iter().find(|p| p.exists()) {
        Some(path) => Err(InitError::Exists { path }),
        None => Ok(()),
    }
}

/// Writes the CI files: the contract snapshot, the expected failures (HTTP), the config and
/// the workflow.
pub async fn write(
    request: &InitRequest,
    files: &Files,
    server: &str,
    guard: &Guard,
) -> Result<CiReport, CiError> {
    let mut report = CiReport::default();
    if request.no_ci || request.update {
        let why = match request.update {
            true => "--update: the CI files of the first `init` are left as they are",
            false => "--no-ci",
        };
        report.skipped = Some(why.to_owned());
        return Ok(report);
    }
    let ci = &files.ci;
    let snapshot = crate::contract::take(&request.server)
        .await
        .map_err(|source| CiError::Snapshot {
            server: request.server.display(),
            source,
        })?;
    snapshot
        .write(&ci.contract)
        .map_err(|source| CiError::Write {
            path: ci.contract.clone(),
            source,
        })?;
    report.written.push((
        ci.contract.clone(),
        "the stored contract snapshot (the contract stage's baseline)".into(),
    ));
    let failures = expected_failures(request, &ci.expected_failures).await;
    let written = failures.is_ok();
    report.expected_failures = Some(failures.unwrap_or_else(|why| why.0));
    let layout = layout(request, ci);
    let state = state_lines(guard, &request.server, &ci.dir, &ci.root);
    let config = config_toml(request, ci, &layout, server, written, &state);
    write_text(&ci.config, &config)?;
    report.written.push((
        ci.config.clone(),
        "servers, suite, [check]; no host: the workflow passes one".into(),
    ));
    write_text(&ci.workflow, &workflow_yaml(&layout))?;
    report.written.push((
        ci.workflow.clone(),
        format!(
            "`mcpeval check` on every pull request ({})",
            layout.language.words()
        ),
    ));
    report.language = Some(layout.language);
    if let Some(url) = &layout.url {
        report.todo = Some(format!(
            "edit the workflow's step \"Start the server over HTTP\" so that the server answers \
             at {url}"
        ));
    }
    report.todo = report.todo.or(state.todo);
    if layout.url.is_none() {
        if let Some(program) = installed_outside(&layout.command, &ci.root) {
            let todo = format!(
                "the server is a program installed outside the repository ({program}), so the \
                 drafted config cannot give the base branch the same command (CI would compare \
                 a server with itself): fill in [servers.base-branch] `command` in {} and the \
                 workflow's step \"Build the server\"",
                ci.config.display()
            );
            report.todo = Some(match report.todo.take() {
                Some(before) => format!("{before}; {todo}"),
                None => todo,
            });
        }
    }
    Ok(report)
}

fn write_text(path: &Path, text: &str) -> Result<(), CiError> {
    path.parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(path, text))
        .map_err(|e| CiError::Write {
            path: path.to_path_buf(),
            source: e.into(),
        })
}

/// The conformance suite's expected failures, as `check --write-baseline` writes them (the
/// same code: a check of the conformance stage alone, the server on both sides): what was
/// written, or why not (no Node ≥ 22, the suite failing). A stdio server is served over HTTP by
/// the conformance stage itself.
async fn expected_failures(request: &InitRequest, path: &Path) -> Result<String, NotWritten> {
    let scratch = std::env::temp_dir().join(format!(
        "mcpeval-init-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default()
    ));
    let check = CheckRequest {
        overrides: Overrides {
            config: request.config.clone(),
            baseline: Some(request.label.clone()),
            candidate: Some(request.label.clone()),
            suite_optional: true,
            writes: request.writes.clone(),
            ..Overrides::default()
        },
        out: Some(scratch.clone()),
        stages: vec![Stage::Conformance],
        write_baseline: true,
        expected_failures: Some(path.to_path_buf()),
        allow_skipped: true,
        quiet: true,
        ..CheckRequest::default()
    };
    let done = crate::job::check::check(&check, &Silent, Box::new(|_| {})).await;
    let _ = std::fs::remove_dir_all(&scratch);
    let checked =
        done.map_err(|e| NotWritten(format!("not written: {}", crate::error::chain(&e))))?;
    let Some(stage) = checked.record.stages.first() else {
        return Err(NotWritten(
            "not written: the conformance stage did not run".into(),
        ));
    };
    let written = (stage.lines.iter()).find(|l| l.contains("written from the baseline's"));
    match (written, path.exists()) {
        (Some(line), true) => Ok(format!(
            "{}; the conformance stage with it: {} ({})",
            line.trim_start_matches("- ")
                .trim_end_matches(" (--write-baseline)"),
            stage.status.word(),
            stage.reason
        )),
        _ if stage.status == StageStatus::Skipped => {
            Err(NotWritten(format!("not written: {}", stage.reason)))
        }
        _ => Err(NotWritten(format!(
            "not written: the conformance stage ended {}: {}",
            stage.status.word(),
            stage.reason
        ))),
    }
}

/// Why the expected failures were not written, in the report's words (`init` goes on).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
struct NotWritten(String);

/// No face: the conformance stage starts no run to show.
struct Silent;

impl crate::job::Face for Silent {
    fn notes(&self, _notes: &[crate::job::Note]) {}
    fn starting(&self, _job: &crate::job::RunJob) {}
    fn sinks(&self) -> Vec<Box<dyn crate::runner::EventSink>> {
        Vec::new()
    }
    fn finished(&self, _finished: &crate::job::Finished) {}
}

/// Where the workflow finds things: the language, `DIR` from the root, the server.
fn layout(request: &InitRequest, ci: &CiFiles) -> Layout {
    Layout {
        language: Language::of(&ci.root),
        dir: relative(&ci.root, &ci.dir),
        url: match &request.server.transport {
            Transport::Http { url } => Some(url.clone()),
            Transport::Stdio { .. } => None,
        },
        command: spec_text(request),
    }
}

/// The server's command line or URL as the config writes it: `demo:X` as given, a
/// `[servers.NAME]` of `--config` as its command or URL.
fn spec_text(request: &InitRequest) -> String {
    match request.label.starts_with("demo:") {
        true => request.label.clone(),
        false => request.server.display(),
    }
}

/// The folder the server's command line runs from: its `cwd` (a `[servers.NAME]` of
/// `--config`), else where `init` ran, when that is inside the repository; else the
/// repository's root.
fn run_dir(request: &InitRequest, ci: &CiFiles) -> PathBuf {
    let here = absolute(request.server.cwd.as_deref().unwrap_or(Path::new(".")));
    match here.starts_with(&ci.root) {
        true => here,
        false => ci.root.clone(),
    }
}

/// The `[servers.NAME]` of `--config` the server was given as, if it was.
fn config_entry(request: &InitRequest) -> Option<String> {
    let text = std::fs::read_to_string(request.config.as_ref()?).ok()?;
    let file: toml::Value = toml::from_str(&text).ok()?;
    file.get("servers")?.get(&request.label)?;
    Some(request.label.clone())
}

/// `DIR/mcpeval.toml`.
fn config_toml(
    request: &InitRequest,
    ci: &CiFiles,
    layout: &Layout,
    server: &str,
    expected_failures: bool,
    state: &StateLines,
) -> String {
    let q = |s: &str| toml::Value::String(s.to_owned()).to_string();
    let spec = spec_text(request);
    let run = run_dir(request, ci);
    let mut out = format!(
        "# mcpeval's settings for `mcpeval check`, written by `mcpeval init`\n# from {server}.\n\
         # No `hosts`: the model that judges the evaluation comes from the workflow\n\
         # (.github/workflows/mcpeval.yml passes the repository variable MCPEVAL_HOST, its API key\n\
         # from a secret), so the simulated model `sim` is never CI's judge. Here: `mcpeval check\n\
         # --config {0} --host openai:MODEL` (without a host the evaluation is skipped).\n\
         # Paths are relative to this file.\n\
         candidate = \"server\"\n\
         # The suite `mcpeval init` drafted (`./`: this file's folder, whatever folder mcpeval\n\
         # runs in).\n\
         suites = [\"./tasks\"]\n\n\
         {2}\
         [check]\n\
         # The contract a change is checked against; after an intended change refresh it with\n\
         # `mcpeval snapshot --server server --config {0} --out {1}`.\n\
         baseline_snapshot = \"contract\"\n",
        slashed(&relative(&run, &absolute(&ci.config))),
        slashed(&relative(&run, &absolute(&ci.contract))),
        match state.top.is_empty() {
            true => String::new(),
            false => format!("{}\n", state.top),
        },
    );
    if expected_failures {
        out.push_str("expected_failures = \"contract/expected-failures.yml\"\n");
    }
    out.push_str("\n# The server as `mcpeval init` reached it (in CI: the pull request's).\n");
    if let Some(name) = config_entry(request) {
        out.push_str(&format!(
            "# It was [servers.{name}] of {}: copy its `env` and `headers` here\n# (as \
             \"$VAR\" references, never values).\n",
            request
                .config
                .as_ref()
                .map(|c| c.display().to_string())
                .unwrap_or_default()
        ));
    }
    out.push_str("[servers.server]\n");
    match &layout.url {
        Some(url) => {
            out.push_str(&format!("url = {}\n", q(url)));
            out.push_str(&state.server);
        }
        None => {
            let cwd = slashed(&relative(&ci.dir, &run));
            out.push_str(&format!("command = {}\ncwd = {}\n", q(&spec), q(&cwd)));
            out.push_str(&state.server);
            let base = base_branch(ci, layout, &spec, &run);
            match installed_outside(&spec, &ci.root) {
                None => out.push_str(&format!(
                    "\n# The base branch's server, for the workflow: its checkout \
                     `{BASE_CHECKOUT}/` beside the pull\n# request's `{PR_CHECKOUT}/`.\n\
                     [servers.base-branch]\ncommand = {}\ncwd = {}\n",
                    q(&base.0),
                    q(&base.1)
                )),
                Some(program) => out.push_str(&format!(
                    "\n# The base branch's server, for the workflow: its checkout \
                     `{BASE_CHECKOUT}/` beside the pull\n# request's `{PR_CHECKOUT}/`. \
                     `mcpeval init` reached the server as a program installed\n# outside this \
                     repository (`{program}`): the base branch's checkout cannot\n# run that \
                     same program, or CI would compare a server with itself.\n# TODO: build \
                     the base branch's server in the workflow's step \"Build the server\" and\n\
                     # put its command here (it runs in `cwd`); [servers.server] likewise needs \
                     the pull\n# request's build in CI.\n[servers.base-branch]\n\
                     command = {}\ncwd = {}\n",
                    q(BASE_PLACEHOLDER),
                    q(&base.1)
                )),
            }
            out.push_str(&state.server);
        }
    }
    out
}

/// The base branch's command in the drafted config when the server is a program installed
/// outside the repository: a placeholder the user fills.
pub const BASE_PLACEHOLDER: &str = "TODO: the base branch's server, built in its checkout";

/// The program a stdio command line runs when it is installed outside the repository at
/// `root`: an absolute program path outside it, or the script an interpreter (`node`, `python`,
/// `deno`, `bun`) is given as an absolute path outside it. `None`: a program the repository
/// builds, one on PATH, or a runner (`uv run`, `npx`) that resolves it in the checkout.
fn installed_outside(spec: &str, root: &Path) -> Option<String> {
    let words = shlex::split(spec)?;
    let outside = |w: &str| {
        let p = Path::new(w);
        p.is_absolute() && !absolute(p).starts_with(root)
    };
    let program = words.first()?;
    if outside(program) {
        return Some(program.clone());
    }
    let name = Path::new(program)
        .file_name()?
        .to_string_lossy()
        .to_string();
    let interpreter =
        ["node", "deno", "bun"].contains(&name.as_str()) || name.starts_with("python");
    let script = words[1..].iter().find(|w| !w.starts_with('-'))?;
    (interpreter && outside(script) && Path::new(script).is_file()).then(|| script.clone())
}

/// The base branch's command and folder (from this file as the workflow checks it out): a
/// Python server runs from its checkout's virtualenv.
fn base_branch(ci: &CiFiles, layout: &Layout, spec: &str, run: &Path) -> (String, String) {
    let in_pr = Path::new("/").join(PR_CHECKOUT).join(&layout.dir);
    let in_base = Path::new("/")
        .join(BASE_CHECKOUT)
        .join(relative(&ci.root, run));
    let cwd = slashed(&relative(&absolute(&in_pr), &absolute(&in_base)));
    let command = match layout.language {
        Language::Python => in_venv(spec),
        _ => spec.to_owned(),
    };
    (command, cwd)
}

/// A Python command line run with the virtualenv's program: `python …` → `.venv/bin/python …`,
/// a console script `srv …` → `.venv/bin/srv …`; a path or a runner (uv, pipx…) as it is.
fn in_venv(spec: &str) -> String {
    let Some(words) = shlex::split(spec).filter(|w| !w.is_empty()) else {
        return spec.to_owned();
    };
    let program = &words[0];
    let runner = [
        "uv", "uvx", "pipx", "poetry", "hatch", "pdm", "docker", "npx", "node",
    ];
    if program.contains('/') || runner.contains(&program.as_str()) || spec.starts_with("demo:") {
        return spec.to_owned();
    }
    let program = match program.starts_with("python") {
        true => ".venv/bin/python".to_owned(),
        false => format!(".venv/bin/{program}"),
    };
    let mut all = vec![program];
    all.extend(words[1..].iter().cloned());
    shlex::try_join(all.iter().map(String::as_str)).unwrap_or_else(|_| all.join(" "))
}

/// The report's section on the CI files.
pub fn report_section(ci: &CiReport) -> String {
    let mut out = String::new();
    if let Some(update) = &ci.update {
        out.push_str(&super::ci_update::report_section(update));
    }
    out.push_str("\n## CI\n\n");
    if let Some(why) = &ci.skipped {
        out.push_str(&format!("No CI file written ({why}).\n"));
        return out;
    }
    for (path, what) in &ci.written {
        out.push_str(&format!("- `{}`: {what}\n", path.display()));
    }
    if let Some(failures) = &ci.expected_failures {
        out.push_str(&format!("- expected failures: {failures}\n"));
    }
    if let Some(todo) = &ci.todo {
        out.push_str(&format!("- **to do**: {todo}\n"));
    }
    out.push_str(
        "- the workflow needs the repository variable `MCPEVAL_HOST` (e.g. `openai:gpt-4.1-mini`) \
         and the secret `OPENAI_API_KEY` (or `ANTHROPIC_API_KEY`) for the evaluation; without \
         them it checks the contract and the call tasks only\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_installed_outside_the_repository_is_found() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let script = elsewhere.path().join("index.js");
        std::fs::write(&script, "").unwrap();
        let inside = root.path().join("bin/srv");
        let at = |p: &Path| p.display().to_string();
        let root = absolute(root.path());
        assert_eq!(
            installed_outside("/opt/srv/bin/mcp-server-time --x", &root).as_deref(),
            Some("/opt/srv/bin/mcp-server-time")
        );
        let node = format!("node {}", at(&script));
        assert_eq!(installed_outside(&node, &root), Some(at(&script)));
        assert_eq!(
            installed_outside(&format!("{} --x", at(&inside)), &root),
            None
        );
        assert_eq!(installed_outside("node dist/index.js", &root), None);
        assert_eq!(
            installed_outside("uv run srv --repository /tmp/r", &root),
            None
        );
    }

    #[test]
    fn a_python_command_runs_from_the_virtualenv() {
        assert_eq!(in_venv("python -m srv --x"), ".venv/bin/python -m srv --x");
        assert_eq!(in_venv("my-server 'a b'"), ".venv/bin/my-server 'a b'");
        assert_eq!(in_venv("uv run srv"), "uv run srv");
        assert_eq!(in_venv("./bin/srv"), "./bin/srv");
    }
}
