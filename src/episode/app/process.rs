//! Running an app headless: a private per-trial directory, the process (never through a shell,
//! in its own process group, killed with its children on timeout), its stdout lines with their
//! arrival times, and the tail of its stderr.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::Command;

/// Bytes of the app's stderr kept for an infrastructure error.
const STDERR_TAIL: usize = 4000;

/// A directory of one trial (`HOME`, config, working directory), removed when dropped.
pub struct TrialDir {
    pub root: PathBuf,
}

impl TrialDir {
    /// Makes `mcpeval-app-<pid>-<n>` under `scratch`, with `home/` and `work/` inside.
    pub fn create(scratch: &Path) -> std::io::Result<Self> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let root = scratch.join(format!("mcpeval-app-{}-{n}", std::process::id()));
        if root.exists() {
            std::fs::remove_dir_all(&root)?;
        }
        std::fs::create_dir_all(root.join("home"))?;
        std::fs::create_dir_all(root.join("work"))?;
        Ok(Self { root })
    }

    pub fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }
}

impl Drop for TrialDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// How to start the app for one trial.
pub struct AppRun<'a> {
    /// Program and its leading arguments (from the host's `program`).
    pub program: &'a [String],
    pub args: Vec<String>,
    /// The whole environment of the app: nothing of mcpeval's is inherited besides this.
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    pub timeout: Duration,
}

/// How the app ended.
#[derive(Debug)]
pub struct Finished {
    /// Each stdout line and when it arrived, from the start.
    pub lines: Vec<(Duration, String)>,
    pub stderr_tail: String,
    /// `None` when it was killed (timeout) or its status is unknown.
    pub status: Option<std::process::ExitStatus>,
    pub timed_out: bool,
    pub elapsed: Duration,
}

impl Finished {
    /// Ends `out`, read from this run's stream, as an infrastructure error when the app did not
    /// end well: killed at its timeout (`after_timeout` may say more), an error the stream
    /// reported (already in `out.infra_error`), or no `end_event` seen (`ended`). The message
    /// starts with `app` and carries the tail of the app's stderr.
    pub fn mark_failure(
        &self,
        out: &mut crate::episode::TrialOutput,
        app: &str,
        ended: bool,
        end_event: &str,
        after_timeout: &str,
    ) {
        out.latency_ms = self.elapsed.as_secs_f64() * 1000.0;
        let problem = if self.timed_out {
            Some(format!(
                "did not finish within its timeout ({:.0} s) and was killed{after_timeout}",
                self.elapsed.as_secs_f64()
            ))
        } else if let Some(problem) = out.infra_error.take() {
            Some(problem)
        } else if !ended {
            let status = self
                .status
                .map_or_else(|| "unknown status".to_owned(), |s| s.to_string());
            Some(format!(
                "printed no `{end_event}` event ({} stdout lines, {status})",
                self.lines.len()
            ))
        } else {
            None
        };
        if let Some(problem) = problem {
            let mut error = format!("{app} {problem}");
            if !self.stderr_tail.is_empty() {
                error.push_str("\n--- app stderr ---\n");
                error.push_str(&self.stderr_tail);
            }
            out.infra_error = Some(error);
        }
    }
}

/// Why an app could not be run.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("the app's `program` is empty")]
    NoProgram,
    #[error("cannot start `{program}`: {source}")]
    Start {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot make a directory to ask `{program}` its version in: {source}")]
    Scratch {
        program: String,
        source: std::io::Error,
    },
    #[error("cannot run `{program}`: {source}")]
    Run {
        program: String,
        source: std::io::Error,
    },
    #[error("`{program} --version` failed ({status}): {stderr}")]
    Version {
        program: String,
        status: String,
        stderr: String,
    },
}

impl AppRun<'_> {
    /// Runs the app to its end or to the timeout. `Err` only when it could not be started.
    pub async fn run(self) -> Result<Finished, AppError> {
        let (program, lead) = self.program.split_first().ok_or(AppError::NoProgram)?;
        let mut cmd = Command::new(program);
        cmd.args(lead)
            .args(&self.args)
            .env_clear()
            .envs(&self.env)
            .current_dir(&self.cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        #[cfg(unix)]
        cmd.process_group(0);
        let started = Instant::now();
        let mut child = cmd.spawn().map_err(|source| AppError::Start {
            program: program.clone(),
            source,
        })?;
        let pid = child.id();
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let err_task = tokio::spawn(async move {
            let mut tail: Vec<u8> = Vec::new();
            let mut buf = [0u8; 8192];
            while let Ok(n) = stderr.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                tail.extend_from_slice(&buf[..n]);
                if tail.len() > 2 * STDERR_TAIL {
                    tail.drain(..tail.len() - STDERR_TAIL);
                }
            }
            tail
        });
        let mut lines = Vec::new();
        let mut reader = BufReader::new(stdout).lines();
        let read = async {
            while let Ok(Some(line)) = reader.next_line().await {
                lines.push((started.elapsed(), line));
            }
            child.wait().await.ok()
        };
        let (status, timed_out) = match tokio::time::timeout(self.timeout, read).await {
            Ok(status) => (status, false),
            Err(_) => (None, true),
        };
        // The app's own children (stdio servers) share its process group: end them all.
        kill_group(pid);
        let _ = child.kill().await;
        let tail = match tokio::time::timeout(Duration::from_secs(5), err_task).await {
            Ok(Ok(tail)) => tail,
            _ => Vec::new(),
        };
        Ok(Finished {
            lines,
            stderr_tail: tail_text(&tail),
            status,
            timed_out,
            elapsed: started.elapsed(),
        })
    }
}

#[cfg(unix)]
fn kill_group(pid: Option<u32>) {
    if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok()) {
        // SAFETY: kill(2) with a negative pid signals the process group the child leads; the
        // group was made for it (`process_group(0)`), so nothing else is in it.
        unsafe {
            libc::kill(-pid, libc::SIGKILL);
        }
    }
}

#[cfg(not(unix))]
fn kill_group(_pid: Option<u32>) {}

fn tail_text(bytes: &[u8]) -> String {
    let start = bytes.len().saturating_sub(STDERR_TAIL);
    let text = String::from_utf8_lossy(&bytes[start..]);
    text.trim().to_owned()
}

/// `PROGRAM --version`, first line (the apps answer it offline), run in a private directory
/// of its own as `HOME` and working directory (Gemini CLI writes its project list under
/// `~/.gemini` even for `--version`). `Err` when the program cannot be run or fails.
pub fn version(program: &[String]) -> Result<String, AppError> {
    let (name, lead) = program.split_first().ok_or(AppError::NoProgram)?;
    let dir = TrialDir::create(&std::env::temp_dir()).map_err(|source| AppError::Scratch {
        program: name.clone(),
        source,
    })?;
    let out = std::process::Command::new(name)
        .args(lead)
        .arg("--version")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("DISABLE_TELEMETRY", "1")
        .env("HOME", dir.home())
        .current_dir(dir.work())
        .stdin(Stdio::null())
        .output()
        .map_err(|source| AppError::Run {
            program: name.clone(),
            source,
        })?;
    if !out.status.success() {
        return Err(AppError::Version {
            program: name.clone(),
            status: out.status.to_string(),
            stderr: tail_text(&out.stderr),
        });
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().next().unwrap_or_default().trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trial_dir_is_private_and_goes_away() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = TrialDir::create(scratch.path()).unwrap();
        assert!(dir.home().is_dir() && dir.work().is_dir());
        let root = dir.root.clone();
        drop(dir);
        assert!(!root.exists());
    }

    #[tokio::test]
    async fn a_hanging_app_is_killed_at_its_timeout() {
        let program = vec!["sleep".to_owned()];
        let run = AppRun {
            program: &program,
            args: vec!["30".into()],
            env: BTreeMap::new(),
            cwd: std::env::temp_dir(),
            timeout: Duration::from_millis(200),
        };
        let done = run.run().await.unwrap();
        assert!(done.timed_out);
        assert!(done.elapsed < Duration::from_secs(10));
    }
}
