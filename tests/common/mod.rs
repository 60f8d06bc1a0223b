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

pub fn temp_dir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

pub fn episodes(dir: &Path) -> Vec<mcpeval::episode::Episode> {
    mcpeval::report::read_episodes(dir).expect("episodes.jsonl reads")
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

/// `mcpeval run --baseline B --candidate C --suite tasks/demo --out OUT EXTRA…`.
pub fn run_pair(baseline: &str, candidate: &str, out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", "--baseline", baseline, "--candidate", candidate];
    args.extend(["--suite", "tasks/demo", "--out", out.to_str().unwrap()]);
    args.extend_from_slice(extra);
    mcpeval(&args)
}
