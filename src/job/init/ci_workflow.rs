//! The GitHub workflow `mcpeval init` writes at the repository's root
//! (`.github/workflows/mcpeval.yml`): on every pull request, the base branch's server and the
//! pull request's are built in two checkouts and `mcpeval check` runs with the drafted config,
//! for the language the root's manifest shows. Derived from examples/workflows/*.yml: the same
//! action, the host from a repository variable, the API keys from secrets.

use std::path::{Component, Path, PathBuf};

/// The project's language, as the manifest at the repository's root shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// `package.json`; `lock`: a `package-lock.json` beside it (`npm ci`, else `npm install`).
    Node { lock: bool },
    /// `pyproject.toml`.
    Python,
    /// `go.mod`.
    Go,
    /// `Cargo.toml`.
    Rust,
    /// None of those: a workflow with a step to fill in.
    Generic,
}

impl Language {
    /// The language of the repository at `root`, by the first manifest found there.
    pub fn of(root: &Path) -> Self {
        if root.join("package.json").is_file() {
            Self::Node {
                lock: root.join("package-lock.json").is_file(),
            }
        } else if root.join("pyproject.toml").is_file() {
            Self::Python
        } else if root.join("go.mod").is_file() {
            Self::Go
        } else if root.join("Cargo.toml").is_file() {
            Self::Rust
        } else {
            Self::Generic
        }
    }

    /// In words, with the manifest it was read from.
    pub fn words(self) -> &'static str {
        match self {
            Self::Node { .. } => "Node (package.json)",
            Self::Python => "Python (pyproject.toml)",
            Self::Go => "Go (go.mod)",
            Self::Rust => "Rust (Cargo.toml)",
            Self::Generic => "no package.json, pyproject.toml, go.mod or Cargo.toml: generic",
        }
    }
}

/// Where the workflow's pieces are, relative to the repository's root.
#[derive(Debug, Clone)]
pub struct Layout {
    pub language: Language,
    /// `init`'s `--out` directory, relative to the root (empty: the root itself).
    pub dir: PathBuf,
    /// The server is an `http(s)://` URL: it must be started in the workflow.
    pub url: Option<String>,
    /// The server's command line, to see which build a Rust server runs.
    pub command: String,
}

/// The checkouts' folders in the workflow's workspace.
pub const PR_CHECKOUT: &str = "candidate";
pub const BASE_CHECKOUT: &str = "baseline";

/// The workflow's text.
pub fn workflow_yaml(layout: &Layout) -> String {
    let config = yaml_str(&slashed(
        &Path::new(PR_CHECKOUT)
            .join(&layout.dir)
            .join("mcpeval.toml"),
    ));
    let suite = yaml_str(&slashed(
        &Path::new(PR_CHECKOUT).join(&layout.dir).join("tasks"),
    ));
    let mut out = String::from(HEADER);
    out.push_str(&checkouts(layout.url.is_some()));
    out.push_str(&setup(layout));
    out.push_str(&build(layout));
    if let Some(url) = &layout.url {
        out.push_str(&start(url));
    }
    let baseline = match layout.url {
        // The base branch's server is not started: the contract stored in the repository is
        // the baseline.
        Some(_) => String::new(),
        None => "          # [servers.base-branch] of the config: the base branch's server, \
                 built in its checkout.\n          baseline: base-branch\n"
            .to_owned(),
    };
    out.push_str(&format!(
        "      - name: mcpeval check\n{ACTION_COMMENT}        uses: {ACTION}\n        # The host's \
         API key, from a repository secret (secrets are empty for forks' PRs).\n        env:\n          \
         OPENAI_API_KEY: ${{{{ secrets.OPENAI_API_KEY }}}}\n          ANTHROPIC_API_KEY: ${{{{ \
         secrets.ANTHROPIC_API_KEY }}}}\n        with:\n          install: source\n          \
         config: {config}\n          suite: {suite}\n{baseline}{HOST_COMMENT}          host: ${{{{ vars.MCPEVAL_HOST }}}}\n          \
         args: --stop-on-breaking\n"
    ));
    out
}

/// The action the check step uses: its default branch, since no release is published yet (a
/// version tag such as `@v1` names nothing until one is); `install: source` builds mcpeval from
/// the action's own source, as `action.yml` offers.
pub const ACTION: &str = "mcpeval/mcpeval@main";

/// What the check step says about [`ACTION`].
const ACTION_COMMENT: &str = "        \
# No release of mcpeval is published yet: the action at its default branch, building
        # mcpeval from that source (`install: source`, cached after the first run). Once a
        # release exists, pin it instead (`uses: mcpeval/mcpeval@vX.Y.Z`) and drop `install`.
";

const HEADER: &str = "\
# mcpeval check on every pull request, written by `mcpeval init`: the pull request's server is
# checked against the contract stored in the repository and, with a model host, against the
# base branch's server on the drafted suite (smoke, contract, conformance, deprecations,
# evaluation). The settings are in the config the `config:` input names. `pull_request` runs the
# PR's code with a read-only token (and no secrets for a PR from a fork).
name: mcpeval

on:
  pull_request:

permissions:
  contents: read

concurrency:
  group: mcpeval-${{ github.event.pull_request.number }}
  cancel-in-progress: true

jobs:
  check:
    runs-on: ubuntu-latest
    timeout-minutes: 30
    steps:
";

const HOST_COMMENT: &str =
    "          # The evaluation's model, from a repository variable (Settings → Secrets and
          # variables → Actions → Variables), e.g. `openai:gpt-4.1-mini`. Empty: the
          # evaluation is skipped (the config names no host, so the simulated model `sim` is
          # never the judge).
";

fn checkouts(url: bool) -> String {
    let mut out = format!(
        "      - name: Check out the pull request\n        uses: actions/checkout@v6\n        \
         with:\n          path: {PR_CHECKOUT}\n          persist-credentials: false\n"
    );
    if !url {
        out.push_str(&format!(
            "      - name: Check out the base branch\n        uses: actions/checkout@v6\n        \
             with:\n          ref: ${{{{ github.event.pull_request.base.sha }}}}\n          \
             path: {BASE_CHECKOUT}\n          persist-credentials: false\n"
        ));
    }
    out
}

/// The language's toolchain; Node ≥ 22 also for a server over HTTP (the conformance suite).
fn setup(layout: &Layout) -> String {
    // The server's Node (a package.json) serves the conformance suite too.
    let node = |server: bool, cache: bool| {
        let mut s = String::from(match server {
            true => "      # Node >= 22, for the server and the conformance stage's suite.\n",
            false => "      # Node >= 22: the conformance stage's suite is an npm package.\n",
        });
        s.push_str(
            "      - uses: actions/setup-node@v6\n        with:\n          node-version: 22\n",
        );
        if cache {
            s.push_str(&format!(
                "          cache: npm\n          cache-dependency-path: {PR_CHECKOUT}/package-lock.json\n"
            ));
        }
        s
    };
    let mut out = match layout.language {
        Language::Node { lock } => node(true, lock),
        Language::Python => {
            "      - uses: actions/setup-python@v6\n        with:\n          python-version: \
             '3.12'\n"
                .to_owned()
        }
        Language::Go => format!(
            "      - uses: actions/setup-go@v6\n        with:\n          go-version-file: \
             {PR_CHECKOUT}/go.mod\n"
        ),
        // Rust is on GitHub's Ubuntu runners; nothing else is known to be needed.
        Language::Rust | Language::Generic => String::new(),
    };
    if layout.url.is_some() && !matches!(layout.language, Language::Node { .. }) {
        out.push_str(&node(false, false));
    }
    out
}

/// Builds the server in each checkout (the pull request's only for a server over HTTP).
fn build(layout: &Layout) -> String {
    let sides = match layout.url {
        Some(_) => PR_CHECKOUT.to_owned(),
        None => format!("{BASE_CHECKOUT} {PR_CHECKOUT}"),
    };
    let each = |name: &str, command: &str| {
        format!(
            "      - name: {name}\n        run: |\n          for side in {sides}; do\n            \
             (cd \"$side\" && {command})\n          done\n"
        )
    };
    match layout.language {
        Language::Node { lock } => {
            let install = if lock { "npm ci" } else { "npm install" };
            each("Build the server", &format!("{install} && npm run build --if-present"))
        }
        // The pull request's server into the runner's Python (so the config's command runs as
        // written), the base branch's into a virtualenv of its own checkout.
        Language::Python => match layout.url {
            Some(_) => format!(
                "      - name: Install the server\n        run: python -m pip install \
                 ./{PR_CHECKOUT}\n"
            ),
            None => format!(
                "      - name: Install both servers\n        run: |\n          python -m pip \
                 install ./{PR_CHECKOUT}\n          python -m venv {BASE_CHECKOUT}/.venv\n          \
                 {BASE_CHECKOUT}/.venv/bin/pip install ./{BASE_CHECKOUT}\n"
            ),
        },
        Language::Go => each("Build the server", "go build ./..."),
        Language::Rust => {
            let profile = match layout.command.contains("target/debug") {
                true => "cargo build --locked",
                false => "cargo build --release --locked",
            };
            each("Build the server", profile)
        }
        Language::Generic => format!(
            "      # mcpeval init found no package.json, pyproject.toml, go.mod or Cargo.toml at \
             the\n      # repository's root: build the server here, in each checkout, as the \
             config's\n      # command runs it.\n{}",
            each("Build the server", "echo \"build the server in $side here\"")
        ),
    }
}

/// A server over HTTP must listen before the check: the step to fill in.
fn start(url: &str) -> String {
    let url = yaml_str(url);
    format!(
        "      - name: Start the server over HTTP\n        # Start the pull request's server in \
         the background so that it answers at the config's\n        # URL ({url}), e.g. `(cd \
         {PR_CHECKOUT} && npm start &)`, then remove the `exit 1`.\n        run: |\n          \
         echo \"::error::edit .github/workflows/mcpeval.yml: start the server at {}\"\n          \
         exit 1\n",
        url.trim_matches('"')
    )
}

/// A string as YAML writes it: plain when it is safe, else double-quoted (JSON's quoting is
/// YAML's).
fn yaml_str(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c))
        && !text.starts_with(['-', '.']);
    match plain {
        true => text.to_owned(),
        false => serde_json::Value::String(text.to_owned()).to_string(),
    }
}

/// A relative path with `/` between its parts, whatever the platform.
pub fn slashed(path: &Path) -> String {
    let parts: Vec<String> = (path.components())
        .filter(|c| !matches!(c, Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    match parts.is_empty() {
        true => ".".to_owned(),
        false => parts.join("/"),
    }
}

/// `path` made absolute (from the working directory) with `.` and `..` resolved by their names.
pub fn absolute(path: &Path) -> PathBuf {
    let joined = match path.is_absolute() {
        true => path.to_path_buf(),
        false => std::env::current_dir().unwrap_or_default().join(path),
    };
    let mut out = PathBuf::new();
    for part in joined.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The path that leads from the folder `from` to `to` (both absolute and resolved).
pub fn relative(from: &Path, to: &Path) -> PathBuf {
    let from: Vec<Component> = from.components().collect();
    let to: Vec<Component> = to.components().collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut out = PathBuf::new();
    for _ in common..from.len() {
        out.push("..");
    }
    for part in &to[common..] {
        out.push(part);
    }
    if out.as_os_str().is_empty() {
        out.push(".");
    }
    out
}

/// The repository that holds `dir` (absolute): the nearest folder with a `.git` at or above
/// it; none: `dir`'s parent.
pub fn repository_root(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|a| a.join(".git").exists())
        .or_else(|| dir.parent())
        .unwrap_or(dir)
        .to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_taken_from_one_folder_to_another_by_name() {
        let p = |s: &str| PathBuf::from(s);
        assert_eq!(relative(&p("/r/mcpeval"), &p("/r")), p(".."));
        assert_eq!(relative(&p("/r"), &p("/r")), p("."));
        assert_eq!(
            relative(&p("/w/candidate/a/b"), &p("/w/baseline/srv")),
            p("../../../baseline/srv")
        );
        assert_eq!(absolute(&p("/r/x/../y/./z")), p("/r/y/z"));
        assert_eq!(
            slashed(&p("./candidate/mcpeval.toml")),
            "candidate/mcpeval.toml"
        );
    }

    #[test]
    fn the_manifest_at_the_root_names_the_language() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(Language::of(dir.path()), Language::Generic);
        std::fs::write(dir.path().join("go.mod"), "module x\n").unwrap();
        assert_eq!(Language::of(dir.path()), Language::Go);
        std::fs::write(dir.path().join("package.json"), "{}").unwrap();
        assert_eq!(Language::of(dir.path()), Language::Node { lock: false });
        assert_eq!(yaml_str("candidate/mcpeval.toml"), "candidate/mcpeval.toml");
        assert_eq!(yaml_str("a b: c"), "\"a b: c\"");
    }

    #[test]
    fn the_workflow_is_yaml_whose_check_step_names_the_config_and_the_base_branch() {
        let layout = Layout {
            language: Language::Python,
            dir: PathBuf::from("mcp eval"),
            url: None,
            command: "python -m srv".into(),
        };
        let yaml: serde_json::Value = serde_saphyr::from_str(&workflow_yaml(&layout)).unwrap();
        let steps = yaml["jobs"]["check"]["steps"].as_array().unwrap();
        let check = steps.last().unwrap();
        assert_eq!(check["uses"].as_str(), Some("mcpeval/mcpeval@main"));
        assert_eq!(
            check["with"]["install"].as_str(),
            Some("source"),
            "no release yet"
        );
        assert_eq!(
            check["with"]["config"].as_str(),
            Some("candidate/mcp eval/mcpeval.toml")
        );
        assert_eq!(check["with"]["baseline"].as_str(), Some("base-branch"));
        assert!(steps
            .iter()
            .any(|s| s["uses"].as_str() == Some("actions/setup-python@v6")));
    }
}
