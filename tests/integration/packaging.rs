//! The packages users install: the binary the tests built, wrapped as a Python wheel
//! (scripts/wheel-from-binary, maturin's layout) and as the npm packages (scripts/package-npm),
//! each installed offline from the local files into a fresh venv or directory, then the demo
//! run through the installed command: exit 1 and a run directory.

use std::path::Path;
use std::process::{Command, Output};

use crate::common;

use common::*;

fn ok(output: &Output, what: &str) -> String {
    assert!(output.status.success(), "{what}: {}", text(output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// `COMMAND run --out DIR` from `cwd`: the demo through an installed command.
fn demo_through(command: &mut Command, cwd: &Path, out: &Path) {
    let output = command
        .args(["run", "--out", out.to_str().unwrap()])
        .current_dir(cwd)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("OPENAI_API_KEY")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(out.join("run.json").is_file());
    assert!(out.join("summary.md").is_file());
}

#[test]
fn the_wheel_installs_into_a_fresh_venv_and_runs_the_demo() {
    let dir = temp_dir();
    let made = Command::new(repo_path("scripts/wheel-from-binary"))
        .args([bin(), dir.path().join("dist").to_str().unwrap()])
        .output()
        .unwrap();
    let wheel = ok(&made, "wheel-from-binary").trim().to_owned();
    assert!(
        wheel.ends_with(".whl") && wheel.contains("mcpeval-0.1.0-py3-none-"),
        "{wheel}"
    );
    let venv = dir.path().join("venv");
    ok(
        &Command::new("python3")
            .args(["-m", "venv", venv.to_str().unwrap()])
            .output()
            .unwrap(),
        "venv",
    );
    // Offline: nothing but the local file.
    ok(
        &Command::new(venv.join("bin/pip"))
            .args(["install", "--no-index", "--no-deps", "--quiet", &wheel])
            .output()
            .unwrap(),
        "pip install",
    );
    let installed = venv.join("bin/mcpeval");
    let version = ok(
        &Command::new(&installed).arg("--version").output().unwrap(),
        "mcpeval --version",
    );
    assert_eq!(version.trim(), "mcpeval 0.1.0");
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    demo_through(&mut Command::new(&installed), &work, &work.join("run"));
}

#[test]
fn the_npm_packages_install_from_their_tarballs_and_npx_runs_the_demo() {
    let dir = temp_dir();
    let dist = dir.path().join("dist");
    let packed = Command::new(repo_path("scripts/package-npm"))
        .args([bin(), dist.to_str().unwrap()])
        .output()
        .unwrap();
    let tarballs: Vec<String> = ok(&packed, "package-npm")
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(tarballs.len(), 2, "{tarballs:?}");
    let work = dir.path().join("project");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("package.json"),
        r#"{"name": "uses-mcpeval", "version": "1.0.0", "private": true}"#,
    )
    .unwrap();
    let mut install = Command::new("npm");
    install
        .args([
            "install",
            "--offline",
            "--no-audit",
            "--no-fund",
            "--silent",
        ])
        .args(&tarballs)
        .current_dir(&work);
    ok(&install.output().unwrap(), "npm install");
    let version = ok(
        &Command::new("npx")
            .args(["--offline", "mcpeval", "--version"])
            .current_dir(&work)
            .output()
            .unwrap(),
        "npx mcpeval --version",
    );
    assert_eq!(version.trim(), "mcpeval 0.1.0");
    let mut npx = Command::new("npx");
    npx.args(["--offline", "mcpeval"]);
    demo_through(&mut npx, &work, &work.join("run"));
}
