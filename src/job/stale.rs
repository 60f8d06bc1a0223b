//! `run --stale-list` checked before any server starts: what it refuses (exit 2), and the call
//! tasks it leaves out. The window itself is the runner's (`runner::StaleList`) and the report's.

use super::Note;
use crate::config::{ConfigError, Provider, RunConfig};
use crate::suite::Suite;

/// Refuses a stale-list run that could not measure the window, and leaves its call tasks out
/// with a note: a call task sends its request itself and is offered no list. Nothing for a run
/// without `--stale-list`.
pub fn prepare(
    config: &RunConfig,
    suite: &mut Suite,
    notes: &mut Vec<Note>,
) -> Result<(), ConfigError> {
    if !config.stale_list {
        return Ok(());
    }
    refuse(config)?;
    let calls = suite.tasks.iter().filter(|t| !t.kind.has_model()).count();
    if calls > 0 && calls == suite.tasks.len() {
        return Err(ConfigError::Invalid(
            "--stale-list: the suite has only call tasks, which send their requests themselves \
             and are offered no list: the window needs tasks a model runs"
                .to_owned(),
        ));
    }
    if calls > 0 {
        suite.tasks.retain(|t| t.kind.has_model());
        notes.push(Note::warn(format!(
            "--stale-list: {calls} call task(s) left out: they send their requests themselves \
             and are offered no list"
        )));
    }
    if !config.renames.is_empty() {
        notes.push(Note::warn(
            "--stale-list: [renames] not followed: the candidate's trials are offered the \
             baseline's names, call the candidate with them and are graded by the tasks as \
             written"
                .to_owned(),
        ));
    }
    Ok(())
}

/// The hosts and servers a window cannot be measured with: an app host lists the tools itself
/// (mcpeval cannot hand it the baseline's list), and a replayed server keeps neither its lists'
/// `ttlMs` nor answers to calls its cassette did not record.
fn refuse(config: &RunConfig) -> Result<(), ConfigError> {
    if let Some(app) = config.hosts.iter().find(|h| h.provider == Provider::App) {
        return Err(ConfigError::Invalid(format!(
            "--stale-list: host `{}` is an app that lists the server's tools itself, so it \
             cannot be offered the baseline's list: measure the window on API hosts",
            app.name
        )));
    }
    let sides = [
        ("baseline", &config.baseline),
        ("candidate", &config.candidate),
    ];
    for (side, spec) in sides {
        if spec
            .served_files()
            .iter()
            .any(|(kind, _)| *kind == "replay")
        {
            return Err(ConfigError::Invalid(format!(
                "--stale-list: the {side} is replayed from a cassette, which keeps neither its \
                 lists' ttlMs (the window's length) nor answers to calls it did not record (a \
                 call to a tool the candidate no longer lists would meet the cassette, not the \
                 server): measure the window against live servers"
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo_config() -> RunConfig {
        let mut config = crate::config::resolve(&Default::default()).expect("the demo config");
        config.stale_list = true;
        config
    }

    /// A suite of `models` tool tasks and `calls` call tasks.
    fn suite(models: usize, calls: usize) -> Suite {
        let model =
            "- id: m{i}\n  prompt: Show me issue 3\n  expect: {calls: [{tool: get_issue}]}\n";
        let call = "- id: c{i}\n  kind: call\n  call: {tool: get_issue, args: {id: 3}}\n  \
                    expect: {is_error: false}\n";
        let mut yaml = String::new();
        for i in 0..models {
            yaml.push_str(&model.replace("{i}", &i.to_string()));
        }
        for i in 0..calls {
            yaml.push_str(&call.replace("{i}", &i.to_string()));
        }
        crate::suite::load_sources(&[("t.yaml".into(), yaml)]).expect("the tasks load")
    }

    #[test]
    fn call_tasks_are_left_out_and_a_suite_of_them_alone_is_refused() {
        let (config, mut notes) = (demo_config(), Vec::new());
        let mut mixed = suite(1, 2);
        prepare(&config, &mut mixed, &mut notes).expect("a model task is left");
        assert_eq!(mixed.tasks.len(), 1);
        assert!(matches!(&notes[0], Note::Warn(w) if w.contains("2 call task(s) left out")));
        let error = prepare(&config, &mut suite(0, 1), &mut notes).unwrap_err();
        assert!(error.to_string().contains("only call tasks"), "{error}");
        let mut calls = suite(0, 1);
        let off = RunConfig {
            stale_list: false,
            ..demo_config()
        };
        prepare(&off, &mut calls, &mut notes).expect("nothing to check without the flag");
        assert_eq!(calls.tasks.len(), 1);
    }

    #[test]
    fn app_hosts_are_refused() {
        let mut config = demo_config();
        config.hosts[0].provider = Provider::App;
        let error = refuse(&config).unwrap_err().to_string();
        assert!(error.contains("lists the server's tools itself"), "{error}");
    }
}
