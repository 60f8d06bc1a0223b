//! The packages users install: the binary the tests built, wrapped as a Python wheel
//! (scripts/wheel-from-binary, maturin's layout) and as the npm packages (scripts/package-npm),
//! each installed offline from the local files into a fresh venv or directory, then the demo
//! run through the installed command: exit 1 and a run directory; and the GitHub Action's step
//! that downloads the prebuilt binary.

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

/// The GitHub Action's "Install mcpeval (prebuilt)" step, run by bash with a `gh` on PATH that
/// serves `mcpeval-x86_64-unknown-linux-musl.tgz` (a stand-in `mcpeval` that prints its version)
/// for release v0.3.1 only:
/// (exit code, what it wrote to $GITHUB_OUTPUT, its stdout and stderr).
fn action_install_step(env: &[(&str, &str)]) -> (Option<i32>, String, String) {
    let action: serde_json::Value =
        serde_saphyr::from_str(&std::fs::read_to_string(repo_path("action.yml")).unwrap()).unwrap();
    let steps = action["runs"]["steps"].as_array().unwrap();
    let step = steps.iter().find(|s| s["id"] == "prebuilt").unwrap();
    let dir = temp_dir();
    let fake = dir.path().join("bin");
    std::fs::create_dir_all(&fake).unwrap();
    let gh = fake.join("gh");
    // gh release download vX --repo R --pattern P --dir D --clobber
    write_script(
        &gh,
        &format!(
            "#!/usr/bin/env bash\necho \"gh $*\" >>\"{log}\"\n[ \"$3\" = v0.3.1 ] || exit 1\n\
             d=$(mktemp -d)\nmkdir \"$d/mcpeval-x86_64-unknown-linux-musl\"\n\
             printf '#!/bin/sh\\necho mcpeval 0.3.1\\n' >\"$d/mcpeval-x86_64-unknown-linux-musl/mcpeval\"\n\
             chmod +x \"$d/mcpeval-x86_64-unknown-linux-musl/mcpeval\"\n\
             tar czf \"$9/$7\" -C \"$d\" mcpeval-x86_64-unknown-linux-musl\n",
            log = dir.path().join("gh.log").display(),
        ),
    );
    let output_file = dir.path().join("github_output");
    std::fs::write(&output_file, "").unwrap();
    let temp = dir.path().join("runner-temp");
    std::fs::create_dir_all(&temp).unwrap();
    let path = format!("{}:{}", fake.display(), std::env::var("PATH").unwrap());
    let output = Command::new("bash")
        .args(["-e", "-c", step["run"].as_str().unwrap()])
        .env("PATH", path)
        .env("RUNNER_OS", "Linux")
        .env("RUNNER_ARCH", "X64")
        .env("RUNNER_TEMP", &temp)
        .env("GITHUB_OUTPUT", &output_file)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let written = std::fs::read_to_string(&output_file).unwrap();
    let log = std::fs::read_to_string(dir.path().join("gh.log")).unwrap_or_default();
    // The binary it names is the release's: it runs.
    if let Some(bin) = written.trim().strip_prefix("bin=") {
        let version = Command::new(bin).arg("--version").output().unwrap();
        assert_eq!(ok(&version, "the downloaded binary"), "mcpeval 0.3.1\n");
    }
    (
        output.status.code(),
        written,
        format!("{}{log}", text(&output)),
    )
}

#[test]
fn the_action_downloads_the_release_it_is_used_at_and_falls_back_to_a_build() {
    // Used at a release tag: the runner's checkout path names the repository and the tag.
    let at_tag = "/home/runner/work/_actions/acme/mcpeval/v0.3.1";
    let (code, written, said) = action_install_step(&[
        ("INSTALL", "auto"),
        ("GITHUB_ACTION_PATH", at_tag),
        ("ACTION_REF", ""),
        ("ACTION_REPO", ""),
        ("VERSION", ""),
    ]);
    assert_eq!(code, Some(0), "{said}");
    assert!(written.starts_with("bin="), "{written}");
    assert!(said.contains("gh release download v0.3.1 --repo acme/mcpeval --pattern mcpeval-x86_64-unknown-linux-musl.tgz"), "{said}");

    // At a branch: no version, so no download; `auto` leaves the build to the next steps.
    let (code, written, said) = action_install_step(&[
        ("INSTALL", "auto"),
        (
            "GITHUB_ACTION_PATH",
            "/home/runner/work/_actions/acme/mcpeval/main",
        ),
    ]);
    assert_eq!((code, written.as_str()), (Some(0), ""), "{said}");
    assert!(said.contains("building mcpeval from source"), "{said}");
    assert!(!said.contains("gh release"), "{said}");

    // A version without that asset: `auto` builds, `release` fails with exit 2.
    for (install, expected) in [("auto", Some(0)), ("release", Some(2))] {
        let (code, written, said) = action_install_step(&[
            ("INSTALL", install),
            ("VERSION", "9.9.9"),
            ("GITHUB_ACTION_PATH", "/work/checkout"),
        ]);
        assert_eq!(
            (code, written.as_str()),
            (expected, ""),
            "{install}: {said}"
        );
        assert!(
            said.contains("release v9.9.9 has no mcpeval-x86_64-unknown-linux-musl.tgz"),
            "{said}"
        );
        assert!(said.contains("--repo mcpeval/mcpeval"), "{said}");
    }

    // An unknown mode is an error that names the ones there are.
    let (code, _, said) = action_install_step(&[("INSTALL", "bogus")]);
    assert_eq!(code, Some(2), "{said}");
    assert!(
        said.contains("expected auto, release, source or path"),
        "{said}"
    );
}
