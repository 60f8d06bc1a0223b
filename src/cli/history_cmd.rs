//! `mcpeval history`: the trend of task results across nightly runs, read from the history.

use super::args::HistoryArgs;
use super::out::{out, outln};
use crate::error::{Exit, Failure};
use crate::history::{self, TrendFilter};

/// Prints the trend the flags select; exit 2 when there is no history or no row matches.
pub fn history(args: &HistoryArgs) -> Result<Exit, Failure> {
    let path = &args.file;
    if !path.exists() {
        return Err(Failure::usage(anyhow::anyhow!(
            "no history at `{}`: `mcpeval nightly --config FILE` writes one (or pass --file PATH)",
            path.display()
        )));
    }
    let rows = history::read(path)?;
    let filter = TrendFilter {
        task: args.task.clone(),
        host: args.host.clone(),
        metric: (args.metric != "all").then(|| args.metric.clone()),
    };
    let groups = history::select(&rows, &filter);
    if groups.is_empty() {
        let known = |f: fn(&history::HistoryRow) -> &str| {
            let mut v: Vec<&str> = rows.iter().map(f).collect();
            v.sort_unstable();
            v.dedup();
            v.join(", ")
        };
        return Err(Failure::usage(anyhow::anyhow!(
            "no row of `{}` matches{}{}{} (tasks: {}; hosts: {}; metrics: {})",
            path.display(),
            args.task
                .as_ref()
                .map_or(String::new(), |t| format!(" task `{t}`")),
            args.host
                .as_ref()
                .map_or(String::new(), |h| format!(" host `{h}`")),
            filter
                .metric
                .as_ref()
                .map_or(String::new(), |m| format!(" metric `{m}`")),
            known(|r| &r.task_id),
            known(|r| &r.host),
            known(|r| &r.metric),
        )));
    }
    let runs: std::collections::HashSet<&str> = groups
        .values()
        .flatten()
        .map(|r| r.run_id.as_str())
        .collect();
    out!("{}", history::trend_table(&groups));
    outln!(
        "{} run(s) from {}; \"drift\" rows compare a night's baseline with an earlier night's \
         baseline of the same version (the server did not change: a moved one is the model's)",
        runs.len(),
        path.display()
    );
    Ok(Exit::Ok)
}
