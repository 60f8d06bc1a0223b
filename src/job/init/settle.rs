//! Before `mcpeval init` sends its requests twice: a valid tool call the server refuses on a
//! value init drafted (the refusal names the value or the argument) is tried with the other
//! values init has for those arguments ([`super::values::alternatives`]), one call each, and
//! keeps the first set the server answers without an error. A call that writes is not retried.

use std::time::Duration;

use super::calls::Probe;
use super::draft::{ask, refused_on_drafted};
use super::values::{alternatives, Known};
use crate::config::ServerSpec;
use crate::mcp::{CallOutcome, McpConnection};
use crate::suite::CallSpec;

/// How many other argument sets a refused call tries at most.
const MAX_TRIES: usize = 6;

/// Replaces, in `probes`, the arguments of each valid call refused on a drafted value with the
/// first other set the server answers without an error (its `why` says so); the rest stay.
pub async fn settle(
    spec: &ServerSpec,
    tools: &[rmcp::model::Tool],
    probes: &mut [Probe],
    known: &Known,
    timeout: Duration,
) {
    let todo: Vec<usize> = (0..probes.len())
        .filter(|i| {
            let p = &probes[*i];
            !p.chosen.is_empty() && !p.writes && !p.malformed
        })
        .collect();
    if todo.is_empty() {
        return;
    }
    let Ok(mut conn) = McpConnection::connect(spec).await else {
        return;
    };
    for i in todo {
        let probe = &probes[i];
        let CallSpec::Tool { name, args } = &probe.request else {
            continue;
        };
        let refused = match ask(&conn, &probe.request, timeout).await {
            Ok(answer) => {
                refusal(&answer.outcome) && !refused_on_drafted(probe, &answer.text).is_empty()
            }
            Err(_) => false,
        };
        if !refused {
            continue;
        }
        let Some(props) = (tools.iter())
            .find(|t| t.name == name.as_str())
            .and_then(|t| t.input_schema.get("properties").cloned())
        else {
            continue;
        };
        let mut sets = Vec::new();
        for (arg, _) in &probe.chosen {
            for alt in alternatives(arg, &props[arg.as_str()], known) {
                let mut other = args.clone();
                other.insert(arg.clone(), alt.clone());
                sets.push((other, vec![(arg.clone(), alt)]));
            }
        }
        let mut found = None;
        for (set, changed) in sets.into_iter().take(MAX_TRIES) {
            let call = CallSpec::Tool {
                name: name.clone(),
                args: set.clone(),
            };
            match ask(&conn, &call, timeout).await {
                Ok(answer) if !refusal(&answer.outcome) => {
                    found = Some((call, changed));
                    break;
                }
                Ok(_) => {}
                Err(_) => {
                    conn.close().await;
                    let Ok(again) = McpConnection::connect(spec).await else {
                        return;
                    };
                    conn = again;
                }
            }
        }
        if let Some((call, changed)) = found {
            let probe = &mut probes[i];
            let said: Vec<String> = (changed.iter())
                .map(|(arg, value)| {
                    let before = (probe.chosen.iter())
                        .find(|(a, _)| a == arg)
                        .map(|(_, v)| v.to_string())
                        .unwrap_or_default();
                    format!("`{arg}` = {value}, since {before} was refused")
                })
                .collect();
            probe.why = format!("{} ({})", probe.why, said.join(", "));
            for (arg, value) in changed {
                if let Some(slot) = probe.chosen.iter_mut().find(|(a, _)| *a == arg) {
                    slot.1 = value;
                }
            }
            probe.request = call;
        }
    }
    conn.close().await;
}

fn refusal(outcome: &CallOutcome) -> bool {
    matches!(
        outcome,
        CallOutcome::Result { is_error: true, .. } | CallOutcome::ProtocolError { .. }
    )
}
