//! The deprecations stage: the deprecated features the candidate uses (from its contract and,
//! over HTTP, its transport and authorization server), each with its earliest removal date, and
//! the deprecation warnings on its stderr, and the tools, prompts and resources its own titles
//! and descriptions mark deprecated; those the baseline did not have are new, and fail the
//! stage only with `fail_on_new_deprecations`.

use std::collections::{BTreeMap, BTreeSet};

use super::{Ctx, Outcome, Stage, StepError};
use crate::config::{ServerSpec, Transport};
use crate::contract::deprecations::{
    in_contract, new_warnings, over_http, stderr_warnings, Deprecation,
};
use crate::contract::marked::{in_lists, was_marked};
use crate::contract::{take, Snapshot};
use crate::mcp::McpConnection;
use crate::rundir::{Case, StageRecord, StageStatus};

pub(super) async fn run(ctx: &mut Ctx) -> StageRecord {
    let mut out = Outcome::new(Stage::Deprecations);
    let strict = ctx.settings.fail_on_new_deprecations;
    let candidate = match features(&ctx.candidate, ctx.candidate_snapshot.as_ref()).await {
        Ok(found) => found,
        Err(why) => return out.end(StageStatus::Error, why),
    };
    let baseline = match (&ctx.baseline, &ctx.baseline_snapshot) {
        (Some(spec), snapshot) => features(spec, snapshot.as_ref()).await.ok(),
        (None, Some(snapshot)) => Some(in_contract(&snapshot.server)),
        (None, None) => match &ctx.settings.stored {
            Some(stored) => Snapshot::read(stored).ok().map(|s| in_contract(&s.server)),
            None => None,
        },
    };
    let before: BTreeSet<&str> = (baseline.iter().flatten())
        .map(|d| d.feature.as_str())
        .collect();
    out.line(format!(
        "- deprecated features the candidate uses: {}",
        if candidate.is_empty() {
            "none".into()
        } else {
            candidate.len().to_string()
        }
    ));
    let mut new = 0;
    for d in &candidate {
        let is_new = baseline.is_some() && !before.contains(d.feature.as_str());
        new += usize::from(is_new);
        out.line(format!(
            "  - {}{}: {} (deprecated in {}, removable from {}; {})",
            if is_new { "**new** " } else { "" },
            d.feature,
            d.evidence,
            d.deprecated_in,
            d.removable_from,
            d.reference
        ));
        out.case(verdict(
            format!("feature {}", d.feature),
            is_new && strict,
            &d.evidence,
        ));
    }
    let new_marked = marked(ctx, &mut out, strict).await;
    let warnings = warnings(ctx).await;
    let mut new_kinds = 0;
    match warnings {
        Some((base, cand)) => {
            let fresh = new_warnings(&base, &cand);
            new_kinds = fresh.len();
            out.line(format!(
                "- deprecation warnings on stderr: {} kind(s) from the candidate, {} from the \
                 baseline, {new_kinds} new",
                cand.len(),
                base.len()
            ));
            for (kind, n) in &cand {
                let is_new = fresh.iter().any(|(k, _)| k == kind);
                out.line(format!(
                    "  - {}{kind}: {n} time(s) (baseline: {})",
                    if is_new { "**new** " } else { "" },
                    base.get(kind).copied().unwrap_or(0)
                ));
                out.case(verdict(format!("warning {kind}"), is_new && strict, kind));
            }
        }
        None => out.line("- deprecation warnings on stderr: not read (an HTTP server's stderr is not ours to read)"),
    }
    let total_new = new + new_kinds + new_marked.new;
    let summary = format!(
        "{} deprecated feature(s), {total_new} new{}",
        candidate.len() + new_marked.found,
        match (total_new, strict) {
            (0, _) => String::new(),
            (_, true) => " (fail_on_new_deprecations)".to_owned(),
            (_, false) =>
                " (reported only: set fail_on_new_deprecations to fail on them)".to_owned(),
        }
    );
    out.judged(summary)
}

/// What the lists showed: items marked deprecated, and how many of them are new.
struct MarkedCount {
    found: usize,
    new: usize,
}

/// The tools, prompts, resources and templates the candidate's own words mark deprecated; those
/// not marked in the baseline's lists are new. The lists are the contract stage's snapshots, or
/// taken now (the baseline's from the stored snapshot where there is one).
async fn marked(ctx: &Ctx, out: &mut Outcome, strict: bool) -> MarkedCount {
    let candidate = match &ctx.candidate_snapshot {
        Some(s) => Some(s.clone()),
        None => take(&ctx.candidate).await.ok(),
    };
    let Some(candidate) = candidate else {
        out.line("- tools, prompts and resources marked deprecated: not read (the candidate could not be snapshotted)");
        return MarkedCount { found: 0, new: 0 };
    };
    let baseline = match (&ctx.baseline_snapshot, &ctx.settings.stored, &ctx.baseline) {
        (Some(s), _, _) => Some(s.clone()),
        (None, Some(stored), _) => Snapshot::read(stored).ok(),
        (None, None, Some(spec)) => take(spec).await.ok(),
        (None, None, None) => None,
    };
    let before = baseline.as_ref().map(in_lists);
    let found = in_lists(&candidate);
    let mut new = 0;
    out.line(format!(
        "- tools, prompts and resources the candidate marks deprecated: {}",
        if found.is_empty() {
            "none".to_owned()
        } else {
            found.len().to_string()
        }
    ));
    for m in &found {
        let is_new = before.as_ref().is_some_and(|b| !was_marked(b, m));
        new += usize::from(is_new);
        let instead =
            (m.instead.as_ref()).map_or_else(String::new, |i| format!("; use `{i}` instead"));
        out.line(format!(
            "  - {}{}: says {}{instead}",
            if is_new { "**new** " } else { "" },
            m.what(),
            m.says
        ));
        out.case(verdict(
            format!("deprecated {}", m.what()),
            is_new && strict,
            &m.says,
        ));
    }
    MarkedCount {
        found: found.len(),
        new,
    }
}

fn verdict(name: String, fails: bool, why: &str) -> Case {
    match fails {
        true => Case::failed(name, format!("new: {why}")),
        false => Case::passed(name),
    }
}

/// The deprecated features of one side: from its snapshot (taken now if the contract stage did
/// not), and over HTTP.
async fn features(
    spec: &ServerSpec,
    snapshot: Option<&Snapshot>,
) -> Result<Vec<Deprecation>, StepError> {
    let server = match snapshot {
        Some(s) => s.server.clone(),
        // A server our client cannot talk to (one that speaks only the old HTTP+SSE transport)
        // still shows what it serves over HTTP.
        None => match McpConnection::connect(spec).await {
            Ok(conn) => {
                let facts = conn.handshake_facts();
                conn.close().await;
                serde_json::json!({"capabilities": facts.capabilities})
            }
            Err(_) if matches!(spec.transport, Transport::Http { .. }) => serde_json::Value::Null,
            Err(e) => return Err(StepError::from(crate::error::chain(&e))),
        },
    };
    let mut found = in_contract(&server);
    if let Transport::Http { url } = &spec.transport {
        found.extend(over_http(url, &spec.headers).await);
    }
    found.sort();
    Ok(found)
}

/// The warnings on both sides' stderr: as the smoke stage saw it, or read now by starting each
/// stdio server once. `None` when the candidate is an HTTP server.
async fn warnings(ctx: &mut Ctx) -> Option<(BTreeMap<String, usize>, BTreeMap<String, usize>)> {
    if matches!(ctx.candidate.transport, Transport::Http { .. }) {
        return None;
    }
    let read = |side: &'static str, spec: Option<ServerSpec>| {
        let seen = ctx.stderr.get(side).cloned();
        async move {
            match (seen, spec) {
                (Some(text), _) => text,
                (None, Some(spec)) if matches!(spec.transport, Transport::Stdio { .. }) => {
                    match McpConnection::connect(&spec).await {
                        Ok(conn) => {
                            let _ = conn.list_tools().await;
                            conn.close_reading_stderr().await
                        }
                        Err(_) => String::new(),
                    }
                }
                _ => String::new(),
            }
        }
    };
    let base = read("baseline", ctx.baseline.clone()).await;
    let cand = read("candidate", Some(ctx.candidate.clone())).await;
    Some((stderr_warnings(&base), stderr_warnings(&cand)))
}
