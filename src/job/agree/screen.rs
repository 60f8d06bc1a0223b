//! `mcpeval plan --agreement FILE`: from an `agreement.csv`, the regressions the screening host
//! (`host_a`) would have missed: tasks where `host_b` says regression and `host_a` does not.

use std::collections::BTreeMap;
use std::path::Path;

use super::read::{read_csv, text};
use super::AgreeError;

/// One pair of hosts' regressions by `host_b`, and those `host_a` missed.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Screened {
    pub regressions: Vec<String>,
    pub missed: Vec<String>,
}

/// Reads `path` (an `agreement.csv`) and says, per pair of hosts, what screening with `host_a`
/// would have missed of `host_b`'s regressions, in lines of text.
pub fn screen(path: &Path) -> Result<Vec<String>, AgreeError> {
    let table = |message: String| AgreeError::Table {
        path: path.to_path_buf(),
        message,
    };
    let df = read_csv(path).map_err(|e| table(e.to_string()))?;
    let column = |name: &str| text(&df, name).map_err(|e| table(e.to_string()));
    let (task, host_a, host_b) = (column("task_id")?, column("host_a")?, column("host_b")?);
    let (verdict_a, verdict_b) = (column("verdict_a")?, column("verdict_b")?);
    let mut pairs: BTreeMap<(String, String), Screened> = BTreeMap::new();
    for i in 0..df.height() {
        let key = (
            host_a[i].clone().unwrap_or_default(),
            host_b[i].clone().unwrap_or_default(),
        );
        let screened = pairs.entry(key).or_default();
        if verdict_b[i].as_deref() != Some("regression") {
            continue;
        }
        let task = task[i].clone().unwrap_or_default();
        if verdict_a[i].as_deref() != Some("regression") {
            screened.missed.push(task.clone());
        }
        screened.regressions.push(task);
    }
    if pairs.is_empty() {
        return Err(table("no rows".to_owned()));
    }
    Ok(pairs.iter().map(|((a, b), s)| line(a, b, s)).collect())
}

/// `sim would have missed 1 of 4 regressions found by gpt (25 %): closed-refunds-hermes`.
fn line(a: &str, b: &str, s: &Screened) -> String {
    let found = s.regressions.len();
    if found == 0 {
        return format!("{b} found no regression: screening with {a} had nothing to miss");
    }
    let share = 100.0 * s.missed.len() as f64 / found as f64;
    let which = match s.missed.is_empty() {
        true => String::new(),
        false => format!(": {}", s.missed.join(", ")),
    };
    format!(
        "screening with {a} would have missed {} of {found} regression(s) found by {b} \
         ({share:.0} %){which}",
        s.missed.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_regressions_host_b_found_and_host_a_did_not_are_missed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("agreement.csv");
        std::fs::write(
            &path,
            "task_id,host_a,host_b,verdict_a,verdict_b,diff_a,diff_b,agree\n\
             t1,sim,gpt,regression,regression,-1.0,-0.9,true\n\
             t2,sim,gpt,neither,regression,0.0,-0.5,false\n\
             t3,sim,gpt,regression,neither,-0.5,0.0,false\n\
             t4,sim,gpt,improvement,regression,0.3,-0.4,false\n\
             t1,sim,claude,neither,neither,0.0,0.0,true\n",
        )
        .unwrap();
        assert_eq!(
            screen(&path).unwrap(),
            [
                "claude found no regression: screening with sim had nothing to miss",
                "screening with sim would have missed 2 of 3 regression(s) found by gpt (67 %): \
                 t2, t4"
            ]
        );
        std::fs::write(&path, "task_id,host\nt1,sim\n").unwrap();
        let err = screen(&path).unwrap_err().to_string();
        assert!(
            err.contains("agreement.csv") && err.contains("host_a"),
            "{err}"
        );
    }
}
