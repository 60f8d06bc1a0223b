//! An import from the files on disk: read and convert every input, check the tasks it makes,
//! then write one task file per input (nothing is written if any input is refused).

use std::path::{Path, PathBuf};

use super::source::{parse, BadInput, Dir};
use super::write::{write, CaseReport, Ids};
use super::{mcpchecker, promptfoo};
use crate::suite::load::{load_sources, Diagnostic, SuiteError};

/// The tool whose files are imported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Mcpchecker,
    Promptfoo,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Mcpchecker => "mcpchecker",
            Self::Promptfoo => "promptfoo",
        }
    }
}

/// What to import, and where to.
#[derive(Debug, Clone)]
pub struct Request {
    pub format: Format,
    pub files: Vec<PathBuf>,
    /// The directory the task files are written to (made if missing).
    pub out: PathBuf,
    /// The `judge.host` of every judge written.
    pub judge_host: String,
    /// Overwrite task files that exist.
    pub force: bool,
}

/// What became of one input file.
#[derive(Debug, Clone)]
pub struct FileReport {
    pub input: PathBuf,
    /// The task file written (`None` when no case converted).
    pub output: Option<PathBuf>,
    /// Notes about the file as a whole (the servers and hosts to pass, the judge).
    pub notes: Vec<String>,
    pub cases: Vec<CaseReport>,
}

impl FileReport {
    /// How many tasks were written.
    pub fn tasks(&self) -> usize {
        self.cases.iter().filter(|c| c.id.is_some()).count()
    }
}

/// Why an import wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    #[error("cannot read `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {}", position(.file, .problem), .problem.message)]
    Bad { file: PathBuf, problem: BadInput },
    #[error("invalid --judge-host: {0}")]
    JudgeHost(String),
    #[error("`{0}` exists (pass --force to overwrite it)")]
    Exists(PathBuf),
    #[error("the tasks imported from `{file}` do not validate (a bug of the importer):\n{}", .problems.iter().map(|d| format!("  {d}")).collect::<Vec<_>>().join("\n"))]
    Invalid {
        file: PathBuf,
        problems: Vec<Diagnostic>,
    },
    #[error("nothing to import, so nothing is written: {0}")]
    NothingConverts(String),
    #[error("cannot write `{path}`")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn position(file: &Path, problem: &BadInput) -> String {
    match problem.at {
        Some((line, column)) => format!("{}:{line}:{column}", file.display()),
        None => file.display().to_string(),
    }
}

impl crate::error::Coded for ImportError {
    fn exit(&self) -> crate::error::Exit {
        use crate::error::Exit;
        match self {
            Self::Read { .. }
            | Self::Bad { .. }
            | Self::JudgeHost(_)
            | Self::Exists(_)
            | Self::Invalid { .. }
            | Self::NothingConverts(_) => Exit::Usage,
            Self::Write { .. } => Exit::Infra,
        }
    }
}

/// Converts every input of `request` and writes one task file per input into `request.out`.
/// Any input that cannot be read or is not the format, and any output that exists (without
/// `force`), stops the import before a file is written.
pub fn import(request: &Request) -> Result<Vec<FileReport>, ImportError> {
    judge_host(&request.judge_host)?;
    let mut ids = Ids::default();
    let mut planned: Vec<(FileReport, Option<String>)> = Vec::new();
    let mut names: Vec<PathBuf> = Vec::new();
    for input in &request.files {
        let text = std::fs::read_to_string(input).map_err(|source| ImportError::Read {
            path: input.clone(),
            source,
        })?;
        let bad = |problem| ImportError::Bad {
            file: input.clone(),
            problem,
        };
        let root = parse(&text).map_err(bad)?;
        let dir = Dir(input.parent().unwrap_or(Path::new("")).to_path_buf());
        let converted = match request.format {
            Format::Mcpchecker => mcpchecker::convert(&root, input, &dir),
            Format::Promptfoo => promptfoo::convert(&root, &dir),
        }
        .map_err(bad)?;
        let mut notes = converted.notes.clone();
        if converted.cases.iter().any(|c| !c.rubrics.is_empty()) {
            notes.push(judge_note(&request.judge_host));
        }
        let mut header = vec![format!(
            "Imported from {} by `mcpeval tasks import --from {}`.",
            input.display(),
            request.format.as_str()
        )];
        header.extend(notes.iter().map(|n| format!("note: {n}")));
        let written = write(&header, &converted.cases, &request.judge_host, &mut ids);
        let output = written.yaml.as_ref().map(|_| {
            let path = output_name(input, &request.out, &names);
            names.push(path.clone());
            path
        });
        if let (Some(path), Some(yaml)) = (&output, &written.yaml) {
            let checked = load_sources(&[(path.clone(), yaml.clone())]);
            if let Err(SuiteError::Invalid(problems)) = checked {
                return Err(ImportError::Invalid {
                    file: input.clone(),
                    problems,
                });
            }
        }
        let report = FileReport {
            input: input.clone(),
            output,
            notes,
            cases: written.cases,
        };
        planned.push((report, written.yaml));
    }
    if names.is_empty() {
        let reports: Vec<FileReport> = planned.into_iter().map(|(r, _)| r).collect();
        return Err(ImportError::NothingConverts(nothing_converts(&reports)));
    }
    if !request.force {
        if let Some(path) = names.iter().find(|p| p.exists()) {
            return Err(ImportError::Exists(path.clone()));
        }
    }
    std::fs::create_dir_all(&request.out).map_err(|source| ImportError::Write {
        path: request.out.clone(),
        source,
    })?;
    let mut reports = Vec::new();
    for (report, yaml) in planned {
        if let (Some(path), Some(yaml)) = (&report.output, yaml) {
            std::fs::write(path, yaml).map_err(|source| ImportError::Write {
                path: path.clone(),
                source,
            })?;
        }
        reports.push(report);
    }
    Ok(reports)
}

/// Why no input gave a task, in one line: what its cases lack (the first few reasons), or that
/// it holds no case (with its notes that say why: files skipped, globs that name nothing).
fn nothing_converts(reports: &[FileReport]) -> String {
    let files: Vec<String> = reports
        .iter()
        .map(|r| format!("`{}`", r.input.display()))
        .collect();
    let files = files.join(", ");
    let cases: usize = reports.iter().map(|r| r.cases.len()).sum();
    let mut reasons: Vec<String> = Vec::new();
    if cases == 0 {
        let hints = ["mcpeval run", "--baseline", "judge.host", "--trials"];
        for note in reports.iter().flat_map(|r| &r.notes) {
            if !hints.iter().any(|h| note.contains(h)) && !reasons.contains(note) {
                reasons.push(note.clone());
            }
        }
    } else {
        let lines = reports
            .iter()
            .flat_map(|r| &r.cases)
            .flat_map(|c| &c.not_converted)
            .filter(|w| !w.starts_with("the whole case"));
        for what in lines {
            // The reason's head: "`is-json` assertion" of "`is-json` assertion (no mcpeval …)".
            let head = what.split(" (").next().unwrap_or(what).to_owned();
            if !reasons.contains(&head) {
                reasons.push(head);
            }
        }
    }
    const SHOWN: usize = 4;
    let more = reasons.len().saturating_sub(SHOWN);
    reasons.truncate(SHOWN);
    if more > 0 {
        reasons.push(format!("{more} more"));
    }
    let why = if reasons.is_empty() {
        String::new()
    } else {
        format!(": {}", reasons.join("; "))
    };
    if cases == 0 {
        format!("{files} holds no case to convert{why}")
    } else {
        format!("none of the {cases} case(s) of {files} converts{why}")
    }
}

/// `DIR/<input's stem>.yaml`, with `-2`, `-3`… when an earlier input of the import took it.
fn output_name(input: &Path, out: &Path, taken: &[PathBuf]) -> PathBuf {
    let stem = input.file_stem().map_or_else(
        || "imported".to_owned(),
        |s| s.to_string_lossy().into_owned(),
    );
    let mut path = out.join(format!("{stem}.yaml"));
    let mut n = 1;
    while taken.contains(&path) {
        n += 1;
        path = out.join(format!("{stem}-{n}.yaml"));
    }
    path
}

/// Refuses a judge host that `tasks check` would refuse, before anything is converted.
fn judge_host(host: &str) -> Result<(), ImportError> {
    let quoted = serde_json::to_string(host).unwrap_or_default();
    let probe = format!("id: probe\nprompt: p\nexpect:\n  judge: {{rubric: r, host: {quoted}}}\n");
    match load_sources(&[(PathBuf::new(), probe)]) {
        Err(SuiteError::Invalid(problems)) => {
            let why: Vec<String> = problems.into_iter().map(|d| d.message).collect();
            Err(ImportError::JudgeHost(why.join("; ")))
        }
        _ => Ok(()),
    }
}

/// What a file's judges are run by.
fn judge_note(host: &str) -> String {
    let mut note = format!("each `judge.host` is `{host}` (--judge-host)");
    if host == "sim" {
        note.push_str(
            "; `sim` cannot judge (each judged trial would be an infrastructure error): set a \
             real model with --judge-host or in the files before a run",
        );
    }
    note
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROMPTFOO: &str = r#"
prompts: ["{{q}}"]
tests:
  - description: Login issues
    vars: {q: Which apollo issues are about login?}
    assert:
      - {type: trajectory:tool-used, value: search_issues}
      - {type: llm-rubric, value: Lists the login issues}
  - description: Only code
    vars: {q: Anything}
    assert: [{type: javascript, value: "true"}]
"#;

    fn request(dir: &Path, files: Vec<PathBuf>) -> Request {
        Request {
            format: Format::Promptfoo,
            files,
            out: dir.join("out"),
            judge_host: "sim".to_owned(),
            force: false,
        }
    }

    #[test]
    fn an_import_writes_checked_tasks_and_refuses_to_overwrite() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("promptfooconfig.yaml");
        std::fs::write(&input, PROMPTFOO).unwrap();
        let request = request(dir.path(), vec![input.clone()]);
        let reports = import(&request).unwrap();
        let [report] = reports.as_slice() else {
            panic!("{reports:?}")
        };
        assert_eq!(report.tasks(), 1);
        let output = report.output.clone().unwrap();
        assert_eq!(output, dir.path().join("out/promptfooconfig.yaml"));
        let yaml = std::fs::read_to_string(&output).unwrap();
        assert!(yaml.contains("- id: login-issues"), "{yaml}");
        assert!(yaml.contains("# left out \"Only code\""), "{yaml}");
        assert!(report
            .notes
            .iter()
            .any(|n| n.contains("`sim` cannot judge")));
        let again = import(&request).unwrap_err();
        assert!(matches!(again, ImportError::Exists(_)), "{again}");
        let forced = Request {
            force: true,
            ..request
        };
        assert!(import(&forced).is_ok());
    }

    #[test]
    fn bad_input_and_a_bad_judge_host_write_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let good = dir.path().join("good.yaml");
        std::fs::write(&good, PROMPTFOO).unwrap();
        let bad = dir.path().join("bad.yaml");
        std::fs::write(&bad, "tests: [\n").unwrap();
        let err = import(&request(dir.path(), vec![good.clone(), bad.clone()])).unwrap_err();
        let shown = err.to_string();
        assert!(shown.starts_with(&format!("{}:", bad.display())), "{shown}");
        assert!(shown.contains("invalid YAML"), "{shown}");
        assert!(!dir.path().join("out").exists());
        let mut request = request(dir.path(), vec![good]);
        request.judge_host = "gpt:4o".to_owned();
        let err = import(&request).unwrap_err().to_string();
        assert!(err.contains("unknown provider `gpt`"), "{err}");
    }

    #[test]
    fn inputs_with_one_stem_get_two_files() {
        let dir = tempfile::tempdir().unwrap();
        let mut files = Vec::new();
        for sub in ["a", "b"] {
            let path = dir.path().join(sub).join("config.yaml");
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, PROMPTFOO).unwrap();
            files.push(path);
        }
        let reports = import(&request(dir.path(), files)).unwrap();
        let outputs: Vec<PathBuf> = reports.iter().filter_map(|r| r.output.clone()).collect();
        assert_eq!(
            outputs,
            [
                dir.path().join("out/config.yaml"),
                dir.path().join("out/config-2.yaml")
            ]
        );
        // Ids stay unique across the files, so the directory is one valid suite.
        let suite = crate::suite::load_suite(&[dir.path().join("out")]).unwrap();
        assert_eq!(suite.tasks.len(), 2);
    }
}
