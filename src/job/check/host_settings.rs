//! The contract stage's host settings: the files named (`--host-settings`, `[check]
//! host_settings`) or found in the current directory, and the config's own `allowed_tools`, read
//! for entries that name a tool the candidate renamed or removed; each such entry fails the stage
//! as a change that breaks clients does, since the host silently stops matching it.

use std::path::{Path, PathBuf};

use super::{Ctx, JobError, Outcome};
use crate::config::{ServerSpec, Transport};
use crate::contract::host_settings::{
    defaults, findings, read_all, server_files, Kind, SettingsFile, ToolChanges, UnderTest,
};
use crate::rundir::Case;

/// The host settings files a check was told to read, and who told it.
#[derive(Debug, Clone)]
pub(in crate::job) struct Named {
    pub files: Vec<PathBuf>,
    /// `--host-settings` or `[check] host_settings`, for the error naming a missing file.
    pub by: &'static str,
}

impl Named {
    /// The files of the flag, else of the config's `[check] host_settings`; `None` when neither
    /// names any (the check then reads the files it finds).
    pub fn of(flag: &[PathBuf], table: Option<Vec<PathBuf>>) -> Option<Self> {
        match (flag, table) {
            (given, _) if !given.is_empty() => Some(Self {
                files: given.to_vec(),
                by: "--host-settings",
            }),
            (_, Some(listed)) if !listed.is_empty() => Some(Self {
                files: listed,
                by: "[check] host_settings",
            }),
            _ => None,
        }
    }

    /// Every file named is there: a missing one is the user's mistake (exit 2), found before
    /// any stage runs.
    pub fn ensure_exist(&self) -> Result<(), JobError> {
        match self.files.iter().find(|p| !p.is_file()) {
            Some(path) => Err(JobError::NoHostSettings {
                path: path.clone(),
                by: self.by,
            }),
            None => Ok(()),
        }
    }
}

/// Reads the host settings and adds what they say to the contract stage: a line with what was
/// read, a warning line per file that does not parse, and a line and a failed case per entry
/// that names a tool the candidate renamed or removed. Returns the number of such entries.
pub(super) fn report(ctx: &Ctx, changes: &ToolChanges, out: &mut Outcome) -> usize {
    let here = Path::new(".");
    let mut files = match &ctx.settings.host_settings {
        Some(named) => named.files.iter().map(|p| SettingsFile::given(p)).collect(),
        None => defaults(here),
    };
    if let Some(config) = &ctx.settings.config_path {
        files.push(SettingsFile::of_kind(config, Kind::Mcpeval));
    }
    let mut found = read_all(&files);
    let defs = read_all(&server_files(here));
    found.servers.extend(defs.servers);
    found.warnings.extend(defs.warnings);
    let own = under_test(ctx);
    let flagged = findings(&found.entries, &found.servers, &own, changes);
    // Nothing read, nothing to say: a repository without host settings gets no line.
    if found.entries.is_empty() && found.warnings.is_empty() {
        return 0;
    }
    let entries = match found.entries.len() {
        1 => "1 entry names a tool".to_owned(),
        n => format!("{n} entries name tools"),
    };
    out.line(format!(
        "- host settings ({}): {entries}; {}",
        match found.read.is_empty() {
            true => "no file read".to_owned(),
            false => found.read.join(", "),
        },
        match flagged.len() {
            0 => "none names a tool the candidate renamed or removed".to_owned(),
            n => format!("{n} name a tool the candidate renamed or removed"),
        }
    ));
    for warning in &found.warnings {
        (ctx.log)(&format!("warning: host settings {warning}"));
        out.line(format!("  - warning: {warning}"));
    }
    for finding in &flagged {
        out.line(format!("  - {finding}"));
        out.case(Case::failed(
            format!("host settings: {}:{}", finding.file, finding.line),
            finding.to_string(),
        ));
    }
    flagged.len()
}

/// The server under test as the check runs it: both sides' command lines and URLs, and the
/// config's `[profile] server_label`.
fn under_test(ctx: &Ctx) -> UnderTest {
    let mut own = UnderTest {
        label: ctx.settings.server_label.clone(),
        ..UnderTest::default()
    };
    let sides: [Option<&ServerSpec>; 2] = [ctx.baseline.as_ref(), Some(&ctx.candidate)];
    for spec in sides.into_iter().flatten() {
        match &spec.transport {
            Transport::Stdio { program, args } => own.commands.push(
                std::iter::once(program.clone())
                    .chain(args.clone())
                    .collect(),
            ),
            Transport::Http { url } => own.urls.push(url.clone()),
        }
    }
    own
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flag_wins_over_the_config_and_a_missing_file_is_named() {
        let flag = [PathBuf::from("a.json")];
        let listed = Some(vec![PathBuf::from("b.json")]);
        let named = Named::of(&flag, listed.clone()).unwrap();
        assert_eq!((named.files, named.by), (flag.to_vec(), "--host-settings"));
        let named = Named::of(&[], listed).unwrap();
        assert_eq!(named.by, "[check] host_settings");
        assert!(Named::of(&[], Some(Vec::new())).is_none());
        let err = named.ensure_exist().unwrap_err();
        assert_eq!(
            err.to_string(),
            "host settings file `b.json` does not exist (named by [check] host_settings)"
        );
        assert_eq!(crate::error::Coded::exit(&err), crate::error::Exit::Usage);
    }
}
