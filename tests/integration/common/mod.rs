//! Helpers shared by the integration tests: the real binary, background servers on 127.0.0.1.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mcpeval")
}

/// Runs `mcpeval ARGS` from the repository root (so `tasks/demo` is found) and waits.
pub fn mcpeval(args: &[&str]) -> Output {
    Command::new(bin())
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("mcpeval runs")
}

pub fn text(out: &Output) -> String {
    format!(
        "status: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A child process killed when dropped.
pub struct Background {
    pub child: Child,
    pub addr: String,
}

impl Drop for Background {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `mcpeval ARGS` and waits for the line naming `http://ADDR` it prints once bound
/// (on stdout or stderr, as `from_stderr` says).
pub fn spawn_listening(args: &[&str], from_stderr: bool) -> Background {
    let mut cmd = Command::new(bin());
    cmd.args(args).stdin(Stdio::null());
    if from_stderr {
        cmd.stderr(Stdio::piped()).stdout(Stdio::null());
    } else {
        cmd.stdout(Stdio::piped()).stderr(Stdio::inherit());
    }
    let mut child = cmd.spawn().expect("server starts");
    let stream: Box<dyn std::io::Read + Send> = if from_stderr {
        Box::new(child.stderr.take().unwrap())
    } else {
        Box::new(child.stdout.take().unwrap())
    };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if let Some(at) = line.find("http://") {
                let url = line[at..].split_whitespace().next().unwrap().to_owned();
                let _ = tx.send(url);
            }
        }
    });
    let url = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("server printed its address");
    let addr = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    Background { child, addr }
}

/// Writes `text` to `path` as an executable file (a stand-in program or launcher).
pub fn write_script(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

pub fn episodes(dir: &Path) -> Vec<mcpeval::episode::Episode> {
    mcpeval::rundir::read_episodes(dir).expect("episodes.jsonl reads")
}

pub fn wait_for(mut cond: impl FnMut() -> bool, limit: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

pub fn repo_path(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

/// A host application `scripts/install-host-apps` puts under `.apps/` (`scripts/test` runs it).
pub fn installed_app(rel: &str) -> PathBuf {
    let path = repo_path(rel);
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-host-apps (scripts/test does)",
        path.display()
    );
    path
}

/// The app-host tests' suite. Three tasks: a search, a lookup by id (the tool 2.0.0 renames), and one that needs no tool.
pub const APP_SUITE: &str = r#"
- id: search-crash-zephyr
  prompt: Search for crash issues in the zephyr project
  expect:
    calls:
      - tool: search_issues
        args: {project: zephyr}
- id: show-issue-3
  prompt: Show me issue 3
  expect:
    calls:
      - tool: get_issue
        args: {id: 3}
- id: capital-of-france
  prompt: What is the capital of France?
  kind: no-tool
"#;

/// `mcpeval run --baseline B --candidate C --suite tasks/demo --out OUT`, from the repository
/// root, ready for more arguments and environment.
pub fn pair_command(baseline: &str, candidate: &str, out: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--baseline", baseline, "--candidate", candidate])
        .args(["--suite", "tasks/demo", "--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("OPENAI_API_KEY")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// `mcpeval run --config CONFIG --suite SUITE --trials N --out OUT`, from the repository root,
/// ready for more arguments and environment (the app-host tests' runs).
pub fn config_command(config: &Path, suite: &Path, trials: &str, out: &Path) -> Command {
    let mut cmd = Command::new(bin());
    cmd.args(["run", "--config", config.to_str().unwrap()])
        .args(["--suite", suite.to_str().unwrap()])
        .args(["--trials", trials, "--out", out.to_str().unwrap()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// `mcpeval run --resume OUT --concurrency 8` against the sim-server at `server`, from the
/// repository root; waits for it.
pub fn resume_run(server: &Background, out: &Path) -> Output {
    Command::new(bin())
        .args([
            "run",
            "--resume",
            out.to_str().unwrap(),
            "--concurrency",
            "8",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("OPENAI_BASE_URL", format!("http://{}/v1", server.addr))
        .output()
        .expect("mcpeval runs")
}

/// Runs `pair_command` with `extra` arguments and waits; on the simulated model (`--host sim`)
/// unless `extra` names a host (outside the demo pair no host is the default).
pub fn run_pair(baseline: &str, candidate: &str, out: &Path, extra: &[&str]) -> Output {
    let mut cmd = pair_command(baseline, candidate, out);
    if !extra.contains(&"--host") {
        cmd.args(["--host", "sim"]);
    }
    cmd.args(extra).output().expect("mcpeval runs")
}

/// Asserts that a run finished with a verdict: exit 0, or 1 when it found a regression (the
/// demo's 1.4.0 → 1.5.0 pair really regresses, and the stratified suite rows can see its extra
/// tokens from one or two trials on, so tests of other things accept both).
#[track_caller]
pub fn assert_verdict(out: &Output) {
    assert!(matches!(out.status.code(), Some(0 | 1)), "{}", text(out));
}

/// Writes `config` into `dir` and runs `mcpeval run --config … --trials N --out dir/run`;
/// returns the run directory after checking the run finished with a verdict (exit 0, or 1: the
/// demo's 1.4.0 → 1.5.0 really spends more tokens, which the suite rows see from one trial on).
pub fn run_config(dir: &Path, config: &str, trials: &str) -> PathBuf {
    let path = dir.join("config.toml");
    std::fs::write(&path, config).unwrap();
    let out_dir = dir.join("run");
    let out = mcpeval(&[
        "run",
        "--config",
        path.to_str().unwrap(),
        "--trials",
        trials,
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert_verdict(&out);
    out_dir
}

/// Every file under `dir`, at any depth.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The lines of a file (0 when it does not exist yet).
pub fn lines(path: &Path) -> usize {
    std::fs::read_to_string(path)
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

/// A demo run of `trials` per task and side through the sim model behind `server` (a
/// `sim-server`, with latency when the test needs the run still under way), two at a time,
/// its output dropped.
pub fn slow_demo(server: &Background, out: &Path, trials: &str) -> Child {
    pair_command("demo:1.4.0", "demo:1.5.0", out)
        .args([
            "--host",
            "openai:sim",
            "--trials",
            trials,
            "--concurrency",
            "2",
        ])
        .env("OPENAI_BASE_URL", format!("http://{}/v1", server.addr))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// `mcpeval snapshot --server SERVER --out OUT EXTRA…`, which must succeed.
pub fn snapshot(server: &str, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "snapshot",
        "--server",
        server,
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let output = mcpeval(&args);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output));
}

/// Diffs two snapshot directories; returns the exit code and the diff's JSON.
pub fn diff(base: &Path, cand: &Path, dir: &Path) -> (Option<i32>, serde_json::Value) {
    let out = dir.join("diff.json");
    let output = mcpeval(&[
        "diff",
        base.to_str().unwrap(),
        cand.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let json = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    (output.status.code(), json)
}

/// A scratch git repository `dir/repo` with one commit (the write gate's and init's tests over
/// mcp-server-git).
pub fn scratch_repo(dir: &Path) -> PathBuf {
    let repo = dir.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .args(["-c", "user.email=t@example.com", "-c", "user.name=t"])
            .args(args)
            .current_dir(&repo)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", text(&out));
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.join("README.md"), "scratch\n").unwrap();
    git(&["add", "README.md"]);
    git(&["commit", "-q", "-m", "first"]);
    repo
}

/// An installed release of PyPI's mcp-server-git (scripts/install-real-servers); missing is a
/// failure, never a skip.
pub fn git_server(version: &str) -> PathBuf {
    let path = repo_path(&format!(
        "target/real-servers/git-{version}/bin/mcp-server-git"
    ));
    assert!(
        path.exists(),
        "{} is missing: run scripts/install-real-servers (scripts/test does)",
        path.display()
    );
    path
}

/// The `scope = task` rows of the run's `comparison.csv` in `dir`, each the values of `columns`
/// in that order.
pub fn task_rows_of<const N: usize>(dir: &Path, columns: [&str; N]) -> Vec<[String; N]> {
    let text = std::fs::read_to_string(dir.join("comparison.csv")).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| {
        header
            .iter()
            .position(|h| *h == name)
            .unwrap_or_else(|| panic!("comparison.csv has no column `{name}`"))
    };
    let (scope, wanted) = (col("scope"), columns.map(col));
    lines
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f[scope] == "task")
        .map(|f| wanted.map(|i| f[i].to_owned()))
        .collect()
}

/// `@modelcontextprotocol/server-everything` as a stdio command (installed by
/// `scripts/install-real-servers`, which this runs when it is missing).
pub fn everything_server() -> String {
    let entry = repo_path(
        "target/real-servers/everything-2026.8.31/node_modules/@modelcontextprotocol/\
         server-everything/dist/index.js",
    );
    if !entry.is_file() {
        let status = Command::new(repo_path("scripts/install-real-servers"))
            .status()
            .expect("scripts/install-real-servers runs (needs node and npm)");
        assert!(status.success(), "scripts/install-real-servers failed");
    }
    format!("node {} stdio", entry.display())
}
