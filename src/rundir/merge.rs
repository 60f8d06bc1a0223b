//! Merging the shards of a run (`mcpeval run --shard I/N`) into one run directory, after checking
//! that they belong together and hold every unit exactly once.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use serde_json::Value;

use super::info::{MergedShard, RunInfo, RUN_JSON};
use super::jsonl::{
    read_episode_at, scan_episode_lines, LineAt, EPISODES_JSONL, TRANSCRIPTS_JSONL,
};
use super::tables::TableWriter;
use super::{config_differences, Deal, RunStatus, Shard, Unit};
use crate::episode::{Episode, Side, DIRECT_HOST};

/// Why shards were not merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// The shards do not fit together (or OUT is taken): said in words.
    #[error("{0}")]
    Refused(String),
    /// A shard's files cannot be read.
    #[error(transparent)]
    Unreadable(anyhow::Error),
    /// The merged run cannot be written.
    #[error(transparent)]
    Write(#[from] anyhow::Error),
}

impl crate::error::Coded for MergeError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::Refused(_) | Self::Unreadable(_) => crate::error::Exit::Usage,
            Self::Write(_) => crate::error::Exit::Infra,
        }
    }
}

/// How many units a refusal names before it only counts the rest.
const NAMED: usize = 5;

/// One shard's run directory and record.
struct Part {
    dir: PathBuf,
    info: RunInfo,
    shard: Shard,
    hash: String,
}

/// A unit with its side: what one episode records.
type SideUnit = (Unit, Side);

/// What a merge made.
#[derive(Debug, Clone)]
pub struct Merged {
    /// The merged run's directory.
    pub out: PathBuf,
    pub shards: usize,
    pub episodes: usize,
    /// The shards' `config_hash`.
    pub config_hash: String,
    /// Episodes whose shard's `transcripts.jsonl` has no transcript of theirs.
    pub without_transcript: usize,
}

/// Joins the shards of a run (`mcpeval run --shard I/N`) into `out`, after checking that they
/// come from the same config, that every shard 1..N is there once and that every (task, host,
/// trial, side) unit is recorded exactly once: `run.json` with `merged_from`, the episodes in
/// run order under the merged run id, the transcripts streamed over, and the tables. The
/// comparison and its reports are left to the caller (`mcpeval compare OUT`).
pub fn merge(shards: &[PathBuf], out: &Path) -> Result<Merged, MergeError> {
    let mut parts = shards
        .iter()
        .map(|dir| read_part(dir))
        .collect::<Result<Vec<_>, _>>()?;
    check_out(out, &parts)?;
    check_same_config(&parts)?;
    check_shards(&parts)?;
    parts.sort_by_key(|p| p.shard.index);
    let layout = Layout::of(&parts[0]);
    let index = Index::scan(&parts, &layout)?;
    check_units(&parts, &layout, &index)?;
    let mut info = merged_info(&parts, &index.counts);
    std::fs::create_dir_all(out).with_context(|| format!("cannot create `{}`", out.display()))?;
    let (episodes, infra_errors) = write_in_run_order(&parts, index.places, &info.run_id, out)?;
    info.episodes = episodes;
    info.infra_errors = infra_errors;
    let transcripts = copy_transcripts(&parts, &info.run_id, &layout, &index.holders, out)?;
    info.write(out)?;
    Ok(Merged {
        out: out.to_path_buf(),
        shards: parts.len(),
        episodes,
        config_hash: parts[0].hash.clone(),
        without_transcript: episodes.saturating_sub(transcripts),
    })
}

/// A (task, host, trial, side) of the run, by the places of its task and host in `run.json`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Key {
    task: u32,
    host: u32,
    trial: u32,
    side: Side,
}

/// The run's tasks and hosts as `run.json` lists them, and how its units are dealt to shards.
struct Layout {
    tasks: HashMap<String, u32>,
    hosts: HashMap<String, u32>,
    task_ids: Vec<String>,
    host_names: Vec<String>,
    trials: u32,
    deal: Deal,
    /// The call tasks' trials per side (they run on the direct host only).
    call_trials: BTreeMap<String, u32>,
}

impl Layout {
    fn of(part: &Part) -> Self {
        let info = &part.info;
        let host_names: Vec<String> = info.hosts.iter().map(|h| h.name.clone()).collect();
        let places = |names: &[String]| {
            let mut map = HashMap::new();
            for (i, n) in names.iter().enumerate() {
                map.entry(n.clone()).or_insert(i as u32);
            }
            map
        };
        Self {
            tasks: places(&info.tasks),
            hosts: places(&host_names),
            task_ids: info.tasks.clone(),
            deal: match info.config.stats.adaptive {
                true => Deal::whole_tasks(&info.tasks, &host_names, info.trials, part.shard.count),
                false => Deal::new(&info.tasks, &host_names, info.trials, part.shard.count),
            },
            host_names,
            trials: info.trials,
            call_trials: info.call_trials.clone(),
        }
    }

    /// The key of a unit whose task and host are the run's (its trial may not be).
    fn key(&self, task_id: &str, host: &str, trial: u32, side: Side) -> Option<Key> {
        Some(Key {
            task: *self.tasks.get(task_id)?,
            host: *self.hosts.get(host)?,
            trial,
            side,
        })
    }

    fn unit(&self, k: Key) -> SideUnit {
        let unit = Unit {
            task_id: self.task_ids[k.task as usize].clone(),
            host: self.host_names[k.host as usize].clone(),
            trial: k.trial,
        };
        (unit, k.side)
    }

    /// The shard that should record the unit; `None` for a trial past the run's.
    fn owner(&self, k: Key) -> Option<Shard> {
        let (task, host) = (
            &self.task_ids[k.task as usize],
            &self.host_names[k.host as usize],
        );
        self.deal.shard_of(task, host, k.trial)
    }

    /// Sorts units as [`SideUnit`]s sort (task id, host name, trial, side) without making them.
    fn sort(&self, keys: &mut [Key]) {
        keys.sort_by_cached_key(|k| {
            let names = (
                &self.task_ids[k.task as usize],
                &self.host_names[k.host as usize],
            );
            (self.deal.ranks(names.0, names.1), k.trial, k.side)
        });
    }
}

/// Where an episode of a shard is: read again to be written in run order.
struct Place {
    key: Key,
    part: usize,
    at: LineAt,
}

/// What one pass over the shards' episodes finds: where each is, which shard holds each unit,
/// and what does not belong. A few dozen bytes per episode; no episode is held.
struct Index {
    places: Vec<Place>,
    /// The (first) shard recording each unit of the run's tasks and hosts.
    holders: HashMap<Key, usize>,
    /// Units recorded by more than one shard, with every shard that did.
    twice: BTreeMap<Key, Vec<usize>>,
    /// Episodes of a task or host the run does not have, with the shards holding them.
    strays: BTreeMap<SideUnit, Vec<usize>>,
    /// Episodes per shard.
    counts: Vec<usize>,
}

impl Index {
    fn scan(parts: &[Part], layout: &Layout) -> Result<Self, MergeError> {
        let mut index = Index {
            places: Vec::new(),
            holders: HashMap::new(),
            twice: BTreeMap::new(),
            strays: BTreeMap::new(),
            counts: vec![0; parts.len()],
        };
        for (i, part) in parts.iter().enumerate() {
            let counted = scan_episode_lines(&part.dir, |at, e| {
                let Some(key) = layout.key(&e.task_id, &e.host, e.trial, e.side) else {
                    index.strays.entry(side_unit(&e)).or_default().push(i);
                    return;
                };
                match index.holders.entry(key) {
                    Entry::Vacant(v) => {
                        v.insert(i);
                    }
                    Entry::Occupied(o) => index
                        .twice
                        .entry(key)
                        .or_insert_with(|| vec![*o.get()])
                        .push(i),
                }
                index.places.push(Place { key, part: i, at });
            })
            .map_err(MergeError::Unreadable)?;
            index.counts[i] = counted;
        }
        Ok(index)
    }
}

fn read_part(dir: &Path) -> Result<Part, MergeError> {
    let info = RunInfo::read(dir).map_err(|e| MergeError::Unreadable(e.into()))?;
    let shard = info.shard.ok_or_else(|| {
        usage(format!(
            "`{}` is not a shard: its {RUN_JSON} has no `shard` (shards are run with \
             `mcpeval run --shard I/N`)",
            dir.display()
        ))
    })?;
    let hash = info.config_hash.clone().ok_or_else(|| {
        usage(format!(
            "`{}`: its {RUN_JSON} has no `config_hash`, so it cannot be matched with other shards",
            dir.display()
        ))
    })?;
    Ok(Part {
        dir: dir.to_path_buf(),
        info,
        shard,
        hash,
    })
}

fn usage(message: String) -> MergeError {
    MergeError::Refused(message)
}

/// The merged run gets a directory of its own, never one of the shards'.
fn check_out(out: &Path, parts: &[Part]) -> Result<(), MergeError> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if let Some(p) = parts.iter().find(|p| same(&p.dir, out)) {
        return Err(usage(format!(
            "--out `{}` is shard {}'s own directory: merge into a new one",
            out.display(),
            p.shard
        )));
    }
    if out.join(EPISODES_JSONL).exists() || out.join(RUN_JSON).exists() {
        return Err(usage(format!(
            "--out `{}` already holds a run: choose another directory",
            out.display()
        )));
    }
    Ok(())
}

/// Refuses shards whose `config_hash` differs, naming the directories and what differs.
fn check_same_config(parts: &[Part]) -> Result<(), MergeError> {
    let mut groups: BTreeMap<&str, Vec<&Part>> = BTreeMap::new();
    for p in parts {
        groups.entry(p.hash.as_str()).or_default().push(p);
    }
    if groups.len() == 1 {
        return Ok(());
    }
    let first = &parts[0];
    let listed: Vec<String> = groups
        .iter()
        .map(|(hash, ps)| format!("{} ({hash})", dirs(ps.iter().map(|p| &p.dir))))
        .collect();
    let mut message = format!(
        "the shards come from different run configs (run.json config_hash): {}",
        listed.join(" vs ")
    );
    for other in groups.values().map(|ps| ps[0]) {
        if other.hash != first.hash {
            message.push_str(&format!(
                "; `{}` differs from `{}`: {}",
                other.dir.display(),
                first.dir.display(),
                explain(&first.info, &other.info)
            ));
        }
    }
    Err(usage(message))
}

/// What differs between two shards' configs, in words.
fn explain(a: &RunInfo, b: &RunInfo) -> String {
    let mut found = Vec::new();
    if a.mcpeval_version != b.mcpeval_version {
        found.push(format!(
            "mcpeval version: {} ≠ {}",
            a.mcpeval_version, b.mcpeval_version
        ));
    }
    found.extend(config_differences(&a.config, &b.config));
    if a.tasks != b.tasks {
        let (x, y): (HashSet<&String>, HashSet<&String>) =
            (a.tasks.iter().collect(), b.tasks.iter().collect());
        found.push(format!(
            "tasks: {} only in the first, {} only in the second",
            x.difference(&y).count(),
            y.difference(&x).count()
        ));
    }
    if found.is_empty() {
        return "the task definitions (same ids, other prompts or expectations)".to_owned();
    }
    let more = found.len().saturating_sub(NAMED);
    found.truncate(NAMED);
    if more > 0 {
        found.push(format!("and {more} more"));
    }
    found.join(", ")
}

/// Every shard 1..=N exactly once, all split N ways.
fn check_shards(parts: &[Part]) -> Result<(), MergeError> {
    let counts: HashSet<u32> = parts.iter().map(|p| p.shard.count).collect();
    if counts.len() > 1 {
        let each: Vec<String> = parts
            .iter()
            .map(|p| format!("`{}` is {}", p.dir.display(), p.shard))
            .collect();
        return Err(usage(format!(
            "the shards split the run into different numbers of parts: {}",
            each.join(", ")
        )));
    }
    let count = parts[0].shard.count;
    let mut by_index: BTreeMap<u32, Vec<&PathBuf>> = BTreeMap::new();
    for p in parts {
        by_index.entry(p.shard.index).or_default().push(&p.dir);
    }
    let mut problems: Vec<String> = by_index
        .iter()
        .filter(|(_, ds)| ds.len() > 1)
        .map(|(i, ds)| {
            format!(
                "shard {i}/{count} is given {} times ({})",
                ds.len(),
                dirs(ds.iter().copied())
            )
        })
        .collect();
    let missing: Vec<String> = (1..=count)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| format!("{i}/{count}"))
        .collect();
    if !missing.is_empty() {
        problems.push(format!(
            "shard{} {} {} missing",
            if missing.len() > 1 { "s" } else { "" },
            missing.join(", "),
            if missing.len() > 1 { "are" } else { "is" }
        ));
    }
    if problems.is_empty() {
        return Ok(());
    }
    Err(usage(format!(
        "cannot merge the {} directories given: {}",
        parts.len(),
        problems.join("; ")
    )))
}

fn dirs<'a>(paths: impl Iterator<Item = &'a PathBuf>) -> String {
    paths
        .map(|d| format!("`{}`", d.display()))
        .collect::<Vec<_>>()
        .join(", ")
}

fn side_unit(e: &Episode) -> SideUnit {
    let unit = Unit {
        task_id: e.task_id.clone(),
        host: e.host.clone(),
        trial: e.trial,
    };
    (unit, e.side)
}

fn describe((unit, side): &SideUnit) -> String {
    format!("{unit}, {side}")
}

/// Every (task, host, trial, side) of the run recorded by exactly one shard, and nothing else.
fn check_units(parts: &[Part], layout: &Layout, index: &Index) -> Result<(), MergeError> {
    let twice: Vec<(SideUnit, Vec<usize>)> = index
        .twice
        .iter()
        .map(|(k, hs)| (layout.unit(*k), hs.clone()))
        .collect();
    let mut outside: Vec<(SideUnit, Vec<usize>)> = index
        .strays
        .iter()
        .map(|(u, hs)| (u.clone(), hs.clone()))
        .collect();
    for (k, first) in &index.holders {
        if layout.owner(*k).is_none() {
            let holders = index.twice.get(k).cloned().unwrap_or_else(|| vec![*first]);
            outside.push((layout.unit(*k), holders));
        }
    }
    let problems: Vec<String> = [
        missing_units(parts, layout, index),
        held_wrongly(parts, twice, "recorded twice"),
        held_wrongly(
            parts,
            outside,
            "not part of the run's tasks, hosts and trials",
        ),
    ]
    .into_iter()
    .flatten()
    .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(usage(format!("cannot merge: {}", problems.join("; "))))
}

/// The units no shard recorded, with the shard that should have.
fn missing_units(parts: &[Part], layout: &Layout, index: &Index) -> Option<String> {
    // An adaptive run's shards stop each task where its rule says: no trial count is expected.
    if layout.deal.deals_whole_tasks() {
        return None;
    }
    let mut missing: Vec<Key> = Vec::new();
    let direct = layout.hosts.get(DIRECT_HOST).copied();
    for (task_id, task) in &layout.tasks {
        // A call task runs on the direct host only, as many trials as it says; the other tasks
        // on every other host.
        let call = layout.call_trials.get(task_id).copied();
        for host in layout.hosts.values() {
            let trials = match (call, Some(*host) == direct) {
                (Some(trials), true) => trials,
                (None, false) => layout.trials,
                _ => 0,
            };
            for trial in 0..trials {
                for side in Side::BOTH {
                    let key = Key {
                        task: *task,
                        host: *host,
                        trial,
                        side,
                    };
                    if !index.holders.contains_key(&key) {
                        missing.push(key);
                    }
                }
            }
        }
    }
    if missing.is_empty() {
        return None;
    }
    layout.sort(&mut missing);
    let owner = |k: &Key| layout.owner(*k).expect("a unit of the run");
    let text = listing(&missing, |k| {
        let unit = layout.unit(*k);
        match parts.iter().find(|p| p.shard == owner(k)) {
            Some(p) => format!(
                "{} (shard {}, `{}`, {})",
                describe(&unit),
                p.shard,
                p.dir.display(),
                p.info.status
            ),
            None => describe(&unit),
        }
    });
    let unfinished = parts.iter().any(|p| {
        p.info.status != RunStatus::Completed && missing.iter().any(|k| owner(k) == p.shard)
    });
    let hint = if unfinished {
        " (finish an unfinished shard with `mcpeval run --resume DIR`)"
    } else {
        ""
    };
    Some(format!(
        "{} missing: {text}{hint}",
        units_word(missing.len())
    ))
}

/// The units recorded where they should not be, with the directories holding them.
fn held_wrongly(
    parts: &[Part],
    mut found: Vec<(SideUnit, Vec<usize>)>,
    what: &str,
) -> Option<String> {
    if found.is_empty() {
        return None;
    }
    found.sort();
    let text = listing(&found, |(k, hs)| {
        let dirs = dirs(hs.iter().map(|&i| &parts[i].dir));
        format!("{} (in {dirs})", describe(k))
    });
    Some(format!("{} {what}: {text}", units_word(found.len())))
}

fn units_word(n: usize) -> String {
    format!("{n} unit{}", if n == 1 { "" } else { "s" })
}

/// The first few items, then how many more.
fn listing<T>(items: &[T], show: impl Fn(&T) -> String) -> String {
    let mut text: Vec<String> = items.iter().take(NAMED).map(show).collect();
    if items.len() > NAMED {
        text.push(format!("and {} more", items.len() - NAMED));
    }
    text.join("; ")
}

/// The merged run's record: the first shard's, with the run's times, its own id and the shards
/// it came from. Tags and the git commit are kept where the shards agree.
fn merged_info(parts: &[Part], counts: &[usize]) -> RunInfo {
    let mut info = parts[0].info.clone();
    let instant = |s: &str| chrono::DateTime::parse_from_rfc3339(s).ok();
    info.started_at = parts
        .iter()
        .map(|p| &p.info.started_at)
        .min_by_key(|s| (instant(s), (*s).clone()))
        .cloned()
        .unwrap_or_default();
    info.finished_at = parts
        .iter()
        .filter_map(|p| p.info.finished_at.as_ref())
        .max_by_key(|s| (instant(s), (*s).clone()))
        .cloned();
    info.status = RunStatus::Completed;
    info.format_version = super::FORMAT_VERSION.to_owned();
    info.shard = None;
    // Each shard's estimate was of its own trials.
    info.estimate = None;
    info.runner_cpu_ms = parts
        .iter()
        .filter_map(|p| p.info.runner_cpu_ms)
        .reduce(|a, b| a + b);
    info.config
        .tags
        .retain(|k, v| parts.iter().all(|p| p.info.config.tags.get(k) == Some(&*v)));
    if parts.iter().any(|p| p.info.git_commit != info.git_commit) {
        info.git_commit = None;
    }
    info.merged_from = parts
        .iter()
        .zip(counts)
        .map(|(p, &episodes)| MergedShard {
            run_id: p.info.run_id.clone(),
            shard: p.shard,
            status: p.info.status,
            episodes,
            started_at: p.info.started_at.clone(),
            finished_at: p.info.finished_at.clone(),
        })
        .collect();
    info.run_id = merged_run_id(parts);
    info
}

/// `20261130T051500Z-3fa2c1`, like a run's: the merge time and a hash of the shards' ids.
fn merged_run_id(parts: &[Part]) -> String {
    let now = chrono::Utc::now();
    let mut text = format!(
        "{}{}",
        parts[0].hash,
        now.timestamp_nanos_opt().unwrap_or(0)
    );
    for p in parts {
        text.push_str(&p.info.run_id);
    }
    let hash = xxhash_rust::xxh3::xxh3_64(text.as_bytes());
    format!("{}-{:06x}", now.format("%Y%m%dT%H%M%SZ"), hash & 0xff_ffff)
}

/// Writes the shards' episodes into OUT's `episodes.jsonl` and tables in run order (task order
/// of `run.json`, then host order, trial and side) under the merged run id, reading each again
/// where the index found it. Returns how many episodes, and how many infrastructure errors.
fn write_in_run_order(
    parts: &[Part],
    mut places: Vec<Place>,
    run_id: &str,
    out: &Path,
) -> Result<(usize, usize), MergeError> {
    places.sort_unstable_by_key(|p| p.key);
    let path = out.join(EPISODES_JSONL);
    let cannot = || format!("cannot write `{}`", path.display());
    let files = parts
        .iter()
        .map(|p| {
            let source = p.dir.join(EPISODES_JSONL);
            File::open(&source)
                .with_context(|| format!("cannot read `{}`", source.display()))
                .map_err(MergeError::Unreadable)
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut writer = BufWriter::new(File::create(&path).with_context(cannot)?);
    let mut tables = TableWriter::new(out);
    let (mut buffer, mut infra_errors) = (Vec::new(), 0);
    for place in &places {
        let mut e = read_episode_at(&files[place.part], place.at, &mut buffer).map_err(|e| {
            let source = parts[place.part].dir.join(EPISODES_JSONL);
            MergeError::Unreadable(e.context(format!("cannot read `{}` again", source.display())))
        })?;
        e.run_id.clear();
        e.run_id.push_str(run_id);
        infra_errors += usize::from(e.infra_error.is_some());
        serde_json::to_writer(&mut writer, &e).with_context(cannot)?;
        writer.write_all(b"\n").with_context(cannot)?;
        tables.push(&e)?;
    }
    writer.flush().with_context(cannot)?;
    tables.finish()?;
    Ok((places.len(), infra_errors))
}

/// Streams the shards' transcripts into OUT (one line at a time: transcripts can be large),
/// each wanted unit once, under the merged run id. Returns how many were written.
fn copy_transcripts(
    parts: &[Part],
    run_id: &str,
    layout: &Layout,
    wanted: &HashMap<Key, usize>,
    out: &Path,
) -> Result<usize, MergeError> {
    let path = out.join(TRANSCRIPTS_JSONL);
    let cannot = || format!("cannot write `{}`", path.display());
    let mut writer = BufWriter::new(File::create(&path).with_context(cannot)?);
    let mut written: HashSet<Key> = HashSet::new();
    for part in parts {
        let source = part.dir.join(TRANSCRIPTS_JSONL);
        let file = match File::open(&source) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                return Err(MergeError::Unreadable(
                    anyhow!(e).context(format!("cannot read `{}`", source.display())),
                ))
            }
        };
        let mut lines = BufReader::new(file).lines().enumerate().peekable();
        while let Some((n, line)) = lines.next() {
            let last = lines.peek().is_none();
            let line = line.with_context(|| format!("cannot read `{}`", source.display()))?;
            if line.trim().is_empty() {
                continue;
            }
            let mut record: Value = match serde_json::from_str(&line) {
                Ok(v) => v,
                // A killed shard may leave a partial last line, as in episodes.jsonl.
                Err(_) if last => break,
                Err(e) => {
                    return Err(usage(format!(
                        "`{}` line {}: not a transcript record: {e}",
                        source.display(),
                        n + 1
                    )))
                }
            };
            let Some((unit, side)) = transcript_unit(&record) else {
                return Err(usage(format!(
                    "`{}` line {}: a transcript without task_id, host, trial or side",
                    source.display(),
                    n + 1
                )));
            };
            let key = layout.key(&unit.task_id, &unit.host, unit.trial, side);
            if !key.is_some_and(|k| wanted.contains_key(&k) && written.insert(k)) {
                continue;
            }
            record["run_id"] = Value::from(run_id);
            serde_json::to_writer(&mut writer, &record).with_context(cannot)?;
            writer.write_all(b"\n").with_context(cannot)?;
        }
    }
    writer.flush().with_context(cannot)?;
    Ok(written.len())
}

fn transcript_unit(record: &Value) -> Option<SideUnit> {
    let unit = Unit {
        task_id: record.get("task_id")?.as_str()?.to_owned(),
        host: record.get("host")?.as_str()?.to_owned(),
        trial: u32::try_from(record.get("trial")?.as_u64()?).ok()?,
    };
    let side = serde_json::from_value(record.get("side")?.clone()).ok()?;
    Some((unit, side))
}
