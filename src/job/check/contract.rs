//! The contract stage: the candidate snapshotted per client profile (and auth profile), each
//! diffed against the stored baseline snapshot or a baseline server's; a change that breaks
//! clients fails the stage, the changes that affect models mark the evaluation's tasks; the
//! protocol versions the candidate lists checked against the config's and against what its
//! `-32022` error says.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{profile_dir, step, Ctx, Outcome, Stage, StepError};
use crate::config::{resolve_server, ClientProfile, ServerSpec};
use crate::contract::host_settings::ToolChanges;
use crate::contract::versions::sides;
use crate::contract::words;
use crate::contract::{counts_line, diff_snapshots, group, take, Diff, Snapshot};
use crate::report::markdown_code;
use crate::rundir::{Case, StageRecord, StageStatus};

/// One snapshot to take: a client profile, maybe an auth profile.
struct Profile {
    client: ClientProfile,
    auth: Option<String>,
}

pub(super) async fn run(ctx: &mut Ctx) -> StageRecord {
    let mut out = Outcome::new(Stage::Contract);
    let dir = ctx.dir.join("contract");
    out.output(&dir, &ctx.dir);
    let profiles = &ctx.settings.client_profiles;
    let mut wanted: Vec<Profile> = (profiles.iter())
        .map(|p| Profile {
            client: *p,
            auth: None,
        })
        .collect();
    wanted.extend(ctx.settings.auth_profiles.iter().map(|a| Profile {
        client: profiles[0],
        auth: Some(a.clone()),
    }));
    if ctx.baseline.is_none() && ctx.settings.stored.is_none() {
        return out.end(
            StageStatus::Skipped,
            "neither a stored baseline snapshot nor a baseline server to diff against",
        );
    }
    if ctx.settings.write_baseline {
        if let Err(why) = write_baseline(ctx, &wanted).await {
            return out.end(StageStatus::Error, why);
        }
        if let Some(stored) = &ctx.settings.stored {
            out.line(format!(
                "- stored snapshot `{}` refreshed from the baseline server (--write-baseline)",
                stored.display()
            ));
        }
    }
    let mut breaking = 0;
    let mut affecting = 0;
    // The failed cases the breaking changes made: one per group of them.
    let mut breaking_cases = 0;
    // The first profile's tool list change in tokens, for the summary.
    let mut list_tokens: Option<String> = None;
    // The failed cases the token threshold made: one per profile past it.
    let mut token_cases = 0;
    // The first profile's renamed and removed tools, for the host settings.
    let mut tool_changes = None;
    for (i, profile) in wanted.iter().enumerate() {
        let label = label(profile);
        let cand_dir = profile_dir(
            &dir.join("candidate"),
            profiles,
            profile.client,
            profile.auth.as_deref(),
        );
        let cand = match snapshot(ctx, &ctx.candidate.clone(), profile).await {
            Ok(s) => s,
            Err(why) => {
                out.case(Case::failed(
                    format!("{label}: candidate snapshot"),
                    why.to_string(),
                ));
                return out.judged(format!(
                    "the candidate could not be snapshotted ({label}): {why}"
                ));
            }
        };
        if let Err(e) = cand.write(&cand_dir) {
            return out.end(StageStatus::Error, crate::error::chain(e.as_ref()));
        }
        let (base, base_dir) = match baseline_side(ctx, profile, &dir).await {
            Ok(found) => found,
            Err(why) => return out.end(StageStatus::Error, why),
        };
        if let Err(mismatch) = Snapshot::comparable(&base, &cand) {
            out.case(Case::failed(
                format!("{label}: comparable"),
                mismatch.to_string(),
            ));
            out.line(format!("- {label}: not diffed: {mismatch}"));
            continue;
        }
        let diff = diff_snapshots(&base, &cand, (&base_dir, None), (&cand_dir, None));
        let path = cand_dir.join("diff.json");
        if let Err(e) = write_json(&path, &diff) {
            return out.end(StageStatus::Error, e);
        }
        let (b, m, cases) = describe(&diff, &label, &mut out);
        let limit = ctx.settings.max_tool_tokens_increase;
        let cost = super::token_cost::report(&diff, &cand, &label, limit, &mut out);
        token_cases += cost.as_ref().is_some_and(|c| c.failed) as usize;
        if i == 0 {
            list_tokens = cost.map(|c| c.words);
        }
        breaking += b;
        affecting += m;
        breaking_cases += cases;
        if i == 0 {
            tool_changes = Some(ToolChanges::of(&diff.changes, &cand.tools));
            ctx.diff_path = Some(path);
            ctx.baseline_snapshot = Some(base);
            ctx.candidate_snapshot = Some(cand);
        }
    }
    // An entry naming a renamed or removed tool comes with a change that breaks clients (the
    // rename or removal), so `breaking` already covers it.
    let stale =
        (tool_changes.as_ref()).map_or(0, |c| super::host_settings::report(ctx, c, &mut out));
    ctx.breaking = breaking > 0;
    if let Some(cand) = ctx.candidate_snapshot.clone() {
        versions(ctx, &cand, &mut out);
    }
    let known = breaking_cases + token_cases + stale;
    let summary = format!(
        "{breaking} change(s) break clients, {affecting} affect models{}{}{}",
        list_tokens.map_or(String::new(), |t| format!("; {t}")),
        match stale {
            0 => String::new(),
            n => format!("; {n} host setting(s) name a renamed or removed tool"),
        },
        match out.failures() {
            n if n <= known => String::new(),
            n => format!("; {} other failure(s)", n - known),
        }
    );
    out.judged(summary)
}

fn label(profile: &Profile) -> String {
    match &profile.auth {
        Some(auth) => format!("client profile `{}`, auth `{auth}`", profile.client),
        None => format!("client profile `{}`", profile.client),
    }
}

/// The server spec of `base` with a profile's client capabilities and credentials.
fn with_profile(ctx: &Ctx, base: &ServerSpec, profile: &Profile) -> Result<ServerSpec, StepError> {
    let mut spec = match &profile.auth {
        None => base.clone(),
        Some(auth) => {
            let given = base.display();
            let mut spec = resolve_server(
                ctx.settings.config_path.as_deref(),
                &given,
                std::slice::from_ref(auth),
            )
            .map_err(|e| crate::error::chain(&e))?;
            spec.protocol_era = base.protocol_era;
            spec
        }
    };
    spec.client = profile.client;
    Ok(spec)
}

async fn snapshot(ctx: &Ctx, base: &ServerSpec, profile: &Profile) -> Result<Snapshot, StepError> {
    let spec = with_profile(ctx, base, profile)?;
    take(&spec)
        .await
        .map_err(|e| StepError::from(crate::error::chain(&e)))
}

/// The baseline's snapshot for a profile: the stored one, else the baseline server's (kept in
/// `contract/baseline/`).
async fn baseline_side(
    ctx: &Ctx,
    profile: &Profile,
    dir: &Path,
) -> Result<(Snapshot, PathBuf), StepError> {
    let profiles = &ctx.settings.client_profiles;
    if let Some(stored) = &ctx.settings.stored {
        let at = profile_dir(stored, profiles, profile.client, profile.auth.as_deref());
        let snapshot = Snapshot::read(&at).map_err(|e| {
            format!(
                "the stored baseline snapshot for {}: {} (write it with --write-baseline)",
                label(profile),
                crate::error::chain(&e)
            )
        })?;
        return Ok((snapshot, at));
    }
    let spec = ctx.baseline.clone().ok_or("no baseline")?;
    let snapshot = snapshot(ctx, &spec, profile)
        .await
        .map_err(|why| format!("the baseline could not be snapshotted: {why}"))?;
    let at = profile_dir(
        &dir.join("baseline"),
        profiles,
        profile.client,
        profile.auth.as_deref(),
    );
    snapshot
        .write(&at)
        .map_err(|e| crate::error::chain(e.as_ref()))?;
    Ok((snapshot, at))
}

/// `--write-baseline`: the baseline server's snapshots into the stored snapshot's folders.
async fn write_baseline(ctx: &Ctx, wanted: &[Profile]) -> Result<(), StepError> {
    let Some(stored) = &ctx.settings.stored else {
        return Ok(());
    };
    let spec = ctx.baseline.clone().ok_or_else(|| {
        "--write-baseline needs a baseline server (--baseline or the config's) to snapshot"
            .to_owned()
    })?;
    for profile in wanted {
        let snapshot = snapshot(ctx, &spec, profile)
            .await
            .map_err(|why| format!("the baseline could not be snapshotted: {why}"))?;
        let at = profile_dir(
            stored,
            &ctx.settings.client_profiles,
            profile.client,
            profile.auth.as_deref(),
        );
        snapshot
            .write(&at)
            .map_err(|e| crate::error::chain(e.as_ref()))?;
    }
    Ok(())
}

fn write_json(path: &Path, value: &impl serde::Serialize) -> Result<(), StepError> {
    let mut text = serde_json::to_string_pretty(value).map_err(|e| e.to_string())?;
    text.push('\n');
    std::fs::write(path, text).map_err(|e| step!("cannot write `{}`: {e}", path.display()))
}

/// The diff's changes as lines and cases: (changes that break clients, changes that affect
/// models). Changes of one kind that differ only in a number or an id are one line and one case.
fn describe(diff: &Diff, label: &str, out: &mut Outcome) -> (usize, usize, usize) {
    let breaking = diff.changes.iter().filter(|c| c.breaks_clients).count();
    let affecting = diff.changes.iter().filter(|c| c.affects_models).count();
    out.line(format!(
        "- {label}: {} change(s): {breaking} break clients, {affecting} affect models ({})",
        diff.changes.len(),
        sides(diff)
    ));
    if !diff.changes.is_empty() {
        out.line(format!("  - per kind: {}", counts_line(&diff.changes)));
    }
    let mut cases = 0;
    for g in group(&diff.changes) {
        let what = match &g.path {
            Some(path) => format!("{}{} `{}` {path}", g.times(), g.kind.as_str(), g.name),
            None => format!("{}{} `{}`", g.times(), g.kind.as_str(), g.name),
        };
        let mark = match (g.breaks_clients, g.affects_models) {
            (true, _) => "breaks clients",
            (false, true) => "affects models",
            _ => "neither",
        };
        out.line(format!("  - {what} ({}): {mark}", g.list));
        changed_words(&g, out);
        if g.breaks_clients {
            cases += 1;
            out.case(Case::failed(
                format!("{label}: {what}"),
                format!("{what} in {} breaks clients", g.list),
            ));
        }
    }
    if breaking == 0 {
        out.case(Case::passed(format!("{label}: no change breaks clients")));
    }
    (breaking, affecting, cases)
}

/// How many changed texts of one group are shown as words; diff.json has them all.
const TEXTS_PER_GROUP: usize = 5;

/// Under a group of changed texts (descriptions, titles, the instructions), each one's words
/// that differ with a little context, as a code span.
fn changed_words(g: &crate::contract::Group, out: &mut Outcome) {
    let texts: Vec<(&crate::contract::Change, String)> = (g.changes.iter())
        .filter_map(|c| {
            let (before, after) = words::texts(c)?;
            Some((*c, words::sides(before, after)))
        })
        .collect();
    for (c, words) in texts.iter().take(TEXTS_PER_GROUP) {
        let member = match (g.len(), &c.path) {
            (1, _) => String::new(),
            (_, Some(path)) => format!("`{}` {path}: ", c.name),
            (_, None) => format!("`{}`: ", c.name),
        };
        out.line(format!("    - {member}{}", markdown_code(words)));
    }
    if texts.len() > TEXTS_PER_GROUP {
        out.line(format!(
            "    - … and {} more (diff.json has them all)",
            texts.len() - TEXTS_PER_GROUP
        ));
    }
}

/// The servers' reported names and versions, from the contract stage's snapshots once it took
/// them; said once on the log when the specs differ (the header then shows them).
pub(super) fn reported(ctx: &Ctx, record: &mut crate::rundir::CheckRecord) {
    if record.candidate_reported.is_some() {
        return;
    }
    let of = |s: &Option<crate::contract::Snapshot>| {
        let info = s.as_ref()?.server.get("serverInfo")?;
        let text = |k: &str| {
            info.get(k)
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        };
        Some(crate::rundir::Reported {
            name: text("name").unwrap_or_default(),
            version: text("version")?,
        })
    };
    record.baseline_reported = of(&ctx.baseline_snapshot);
    record.candidate_reported = of(&ctx.candidate_snapshot);
    if record.candidate_reported.is_some() && record.baseline != record.candidate {
        (ctx.log)(&crate::report::check_sides(record));
    }
}

/// `supportedVersions` against the config's list, and against the versions the server's
/// `-32022` error names (`data.supported`).
fn versions(ctx: &Ctx, cand: &Snapshot, out: &mut Outcome) {
    let listed: BTreeSet<String> = strings(cand.server.get("supportedVersions"));
    out.line(format!(
        "- supportedVersions: {}",
        listed.iter().cloned().collect::<Vec<_>>().join(", ")
    ));
    if let Some(expected) = &ctx.settings.protocol_versions {
        let want: BTreeSet<String> = expected.iter().cloned().collect();
        let name = "protocol versions as configured";
        match want == listed {
            true => out.case(Case::passed(name)),
            false => {
                let why = format!(
                    "supportedVersions is [{}], the config expects [{}]",
                    join(&listed),
                    join(&want)
                );
                out.line(format!("  - **{why}**"));
                out.case(Case::failed(name, why));
            }
        }
    }
    let probe = (cand.errors.as_ref())
        .and_then(|e| e.get("probes"))
        .and_then(Value::as_array)
        .and_then(|p| {
            p.iter().find(|p| {
                p.get("probe").and_then(Value::as_str) == Some("unsupported_protocol_version")
            })
        });
    let name = "-32022 data.supported equals supportedVersions";
    match probe {
        Some(p) if p.get("code").and_then(Value::as_i64) == Some(-32022) => {
            let named = strings(p.pointer("/data/supported"));
            match named == listed {
                true => {
                    out.line("- the -32022 error's `data.supported` names the same versions");
                    out.case(Case::passed(name));
                }
                false => {
                    let why = format!(
                        "the -32022 error's data.supported is [{}], supportedVersions is [{}]",
                        join(&named),
                        join(&listed)
                    );
                    out.line(format!("  - **{why}**"));
                    out.case(Case::failed(name, why));
                }
            }
        }
        _ => out.line(
            "- the unsupported-version probe got no -32022 error (a legacy server answers with a \
             version of its own): `data.supported` not checked",
        ),
    }
}

fn strings(value: Option<&Value>) -> BTreeSet<String> {
    (value.and_then(Value::as_array).into_iter().flatten())
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}
