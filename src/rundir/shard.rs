//! Sharding a run across machines: the deterministic partition of its (task, host, trial) units,
//! and the config hash that tells whether shards belong to the same run.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use xxhash_rust::xxh3::xxh3_64;

use crate::config::RunConfig;
use crate::episode::DIRECT_HOST;
use crate::suite::Task;

/// One part of a run: shard `index` of `count`, numbered from 1 (`--shard 2/3`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "ShardFields")]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

/// `run.json`'s `shard` as written, checked by `Shard::new` on the way in.
#[derive(Deserialize)]
struct ShardFields {
    index: u32,
    count: u32,
}

impl TryFrom<ShardFields> for Shard {
    type Error = ShardError;
    fn try_from(f: ShardFields) -> Result<Self, ShardError> {
        Shard::new(f.index, f.count)
    }
}

/// A shard that is not `I/N` with `1 ≤ I ≤ N`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    #[error(
        "shard {index}/{count} does not exist: expected I/N with 1 ≤ I ≤ N (shards are numbered \
         from 1; a 0-based index such as Kubernetes' JOB_COMPLETION_INDEX needs 1 added)"
    )]
    NoSuchShard { index: u32, count: u32 },
    #[error("expected I/N such as 2/3, got `{0}`")]
    NotASlash(String),
    #[error("expected I/N with whole numbers such as 2/3, got `{0}`")]
    NotNumbers(String),
}

impl Shard {
    /// Shard `index` of `count`; `1 ≤ index ≤ count`.
    pub fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        if count == 0 || index == 0 || index > count {
            return Err(ShardError::NoSuchShard { index, count });
        }
        Ok(Self { index, count })
    }

    /// The units of `units` that fall to this shard (see [`assign`]).
    pub fn select(self, units: impl IntoIterator<Item = Unit>) -> HashSet<Unit> {
        assign(units, self.count)
            .into_iter()
            .filter(|(_, s)| *s == self)
            .map(|(u, _)| u)
            .collect()
    }
}

impl std::str::FromStr for Shard {
    type Err = ShardError;
    fn from_str(s: &str) -> Result<Self, ShardError> {
        let (i, n) = s
            .split_once('/')
            .ok_or_else(|| ShardError::NotASlash(s.to_owned()))?;
        let number = |part: &str| {
            part.trim()
                .parse::<u32>()
                .map_err(|_| ShardError::NotNumbers(s.to_owned()))
        };
        Shard::new(number(i)?, number(n)?)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What a shard is made of: a task on a host, one trial, both sides (they stay together so that
/// every shard holds whole pairs).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Unit {
    pub task_id: String,
    pub host: String,
    pub trial: u32,
}

impl fmt::Display for Unit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "task `{}`, host `{}`, trial {}",
            self.task_id, self.host, self.trial
        )
    }
}

/// Every unit of a run: each task on each host, trials `0..trials`.
pub fn units(task_ids: &[String], hosts: &[String], trials: u32) -> Vec<Unit> {
    task_ids
        .iter()
        .flat_map(|t| {
            hosts.iter().flat_map(move |h| {
                (0..trials).map(move |trial| Unit {
                    task_id: t.clone(),
                    host: h.clone(),
                    trial,
                })
            })
        })
        .collect()
}

/// Deals the units to `count` shards: sorted by task id, host name and trial (so neither the
/// order given, the seed nor the scheduling matters), the k-th unit goes to shard `k mod count
/// + 1`. Shard sizes differ by at most one, and a task's trials are spread over the shards.
pub fn assign(units: impl IntoIterator<Item = Unit>, count: u32) -> Vec<(Unit, Shard)> {
    let sorted: BTreeSet<Unit> = units.into_iter().collect();
    let count = count.max(1);
    sorted
        .into_iter()
        .enumerate()
        .map(|(k, unit)| {
            let shard = Shard {
                index: (k as u64 % u64::from(count)) as u32 + 1,
                count,
            };
            (unit, shard)
        })
        .collect()
}

/// The partition of [`assign`] worked out per unit instead of from a list of every unit: in the
/// sorted order, the unit (task, host, trial) comes at place (task's rank × hosts + host's rank)
/// × trials + trial. Memory is that of the task ids and host names.
#[derive(Debug, Clone)]
pub struct Deal {
    /// Rank of each distinct task id, and of each distinct host name, in sorted order.
    tasks: HashMap<String, u64>,
    hosts: HashMap<String, u64>,
    trials: u32,
    count: u32,
    /// Deal (task, host) pairs with all their trials (an adaptive run's shards decide their
    /// tasks' looks alone) rather than single trials.
    whole_tasks: bool,
}

impl Deal {
    /// The deal of an adaptive run: each (task, host) with all its trials to one shard, dealt as
    /// [`Deal::new`] deals single-trial units.
    pub fn whole_tasks(task_ids: &[String], hosts: &[String], trials: u32, count: u32) -> Self {
        Self {
            whole_tasks: true,
            ..Self::new(task_ids, hosts, trials, count)
        }
    }

    /// Whether it deals whole tasks ([`Deal::whole_tasks`]).
    pub fn deals_whole_tasks(&self) -> bool {
        self.whole_tasks
    }

    pub fn new(task_ids: &[String], hosts: &[String], trials: u32, count: u32) -> Self {
        let ranks = |names: &[String]| -> HashMap<String, u64> {
            let sorted: BTreeSet<&String> = names.iter().collect();
            sorted
                .into_iter()
                .enumerate()
                .map(|(i, n)| (n.clone(), i as u64))
                .collect()
        };
        Self {
            tasks: ranks(task_ids),
            hosts: ranks(hosts),
            trials,
            count: count.max(1),
            whole_tasks: false,
        }
    }

    /// The shard the unit falls to, as [`assign`] deals it; `None` for a unit that is not one of
    /// the run's (an unknown task or host, a trial past the run's trials).
    /// The `kind: call` tasks' trials (host [`DIRECT_HOST`]) all fall to shard 1: they are cheap
    /// and exact, and run once per side unless they say otherwise.
    pub fn shard_of(&self, task_id: &str, host: &str, trial: u32) -> Option<Shard> {
        let task = self.tasks.get(task_id)?;
        let host_rank = self.hosts.get(host)?;
        if host == DIRECT_HOST {
            return Some(Shard {
                index: 1,
                count: self.count,
            });
        }
        if trial >= self.trials {
            return None;
        }
        let hosts = self.hosts.len() as u64;
        let (per_pair, trial) = match self.whole_tasks {
            true => (1, 0),
            false => (u64::from(self.trials), u64::from(trial)),
        };
        let place = (task * hosts + host_rank) * per_pair + trial;
        Some(Shard {
            index: (place % u64::from(self.count)) as u32 + 1,
            count: self.count,
        })
    }

    /// Where the task id and the host name come in sorted order (the order [`assign`] deals in).
    pub fn ranks(&self, task_id: &str, host: &str) -> Option<(u64, u64)> {
        Some((*self.tasks.get(task_id)?, *self.hosts.get(host)?))
    }
}

/// The run's config as shards compare it: the resolved config without what may differ between
/// the machines or shards of one run and does not change what is measured — where the config
/// file and suites were read from, the output directory, tags, concurrency, the budget of one
/// invocation, per-key rate limits, servers' working directories and the directory of a stdio
/// server's program (its file name stays).
pub fn comparable_config(config: &RunConfig) -> Value {
    let mut value = serde_json::to_value(config).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        for key in [
            "config_source",
            "suites",
            "out_dir",
            "tags",
            "concurrency",
            "budget",
        ] {
            map.remove(key);
        }
        if let Some(Value::Array(hosts)) = map.get_mut("hosts") {
            for host in hosts.iter_mut().filter_map(Value::as_object_mut) {
                host.remove("rpm");
                host.remove("tpm");
            }
        }
        for side in ["baseline", "candidate"] {
            if let Some(Value::Object(server)) = map.get_mut(side) {
                server.remove("cwd");
                if let Some(Value::String(program)) = server.get_mut("program") {
                    if let Some(name) = Path::new(program.as_str()).file_name() {
                        *program = name.to_string_lossy().into_owned();
                    }
                }
            }
        }
    }
    value
}

/// `config_hash` of `run.json`: xxh3 (16 hex digits) of the canonical JSON (keys sorted) of the
/// mcpeval version, [`comparable_config`] and the selected tasks' definitions (sorted by id,
/// without the file they came from). Shards merge only when their hashes are equal.
pub fn config_hash(config: &RunConfig, tasks: &[Task]) -> String {
    let mut defs: Vec<Value> = tasks
        .iter()
        .map(|t| {
            let mut v = serde_json::to_value(t).unwrap_or(Value::Null);
            if let Value::Object(m) = &mut v {
                m.remove("source");
            }
            v
        })
        .collect();
    defs.sort_by(|a, b| a["id"].as_str().cmp(&b["id"].as_str()));
    let mut all = Map::new();
    all.insert(
        "mcpeval_version".into(),
        Value::from(env!("CARGO_PKG_VERSION")),
    );
    all.insert("config".into(), comparable_config(config));
    all.insert("tasks".into(), Value::Array(defs));
    let mut text = String::new();
    write_canonical(&Value::Object(all), &mut text);
    format!("{:016x}", xxh3_64(text.as_bytes()))
}

/// JSON with every object's keys in sorted order, whatever map type serde_json was built with.
pub(super) fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push(':');
                write_canonical(&map[key], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// Where two configs differ as shards compare them: `seed: 7 ≠ 42`, dotted paths, in key order.
pub fn config_differences(a: &RunConfig, b: &RunConfig) -> Vec<String> {
    let mut out = Vec::new();
    diff_values("", &comparable_config(a), &comparable_config(b), &mut out);
    out
}

fn diff_values(path: &str, a: &Value, b: &Value, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for key in keys {
                let sub = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                let missing = Value::Null;
                diff_values(
                    &sub,
                    x.get(key).unwrap_or(&missing),
                    y.get(key).unwrap_or(&missing),
                    out,
                );
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff_values(&format!("{path}[{i}]"), p, q, out);
            }
        }
        _ if a != b => out.push(format!("{path}: {a} ≠ {b}")),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::*;
    use crate::config::{resolve, Overrides};

    fn ids(prefix: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{prefix}{i}")).collect()
    }

    #[test]
    fn shards_parse_one_based_and_bad_values_say_why() {
        let s: Shard = "2/3".parse().unwrap();
        assert_eq!((s.index, s.count), (2, 3));
        assert_eq!(s.to_string(), "2/3");
        assert_eq!("1/1".parse::<Shard>().unwrap(), Shard::new(1, 1).unwrap());
        for bad in ["0/3", "4/3", "1/0", "3", "a/3", "1/b", "-1/3", ""] {
            let err = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(err.contains("I/N"), "{bad}: {err}");
        }
        assert!("0/3"
            .parse::<Shard>()
            .unwrap_err()
            .to_string()
            .contains("numbered from 1"));
    }

    #[test]
    fn run_json_shards_are_checked_when_read() {
        let ok: Shard = serde_json::from_str(r#"{"index": 3, "count": 3}"#).unwrap();
        assert_eq!(ok, Shard::new(3, 3).unwrap());
        assert_eq!(
            serde_json::to_string(&ok).unwrap(),
            r#"{"index":3,"count":3}"#
        );
        assert!(serde_json::from_str::<Shard>(r#"{"index": 0, "count": 3}"#).is_err());
    }

    #[test]
    fn a_whole_task_deal_gives_every_trial_of_a_pair_one_shard() {
        let tasks: Vec<String> = ["b", "a", "c"].map(String::from).to_vec();
        let hosts: Vec<String> = ["h2", "h1"].map(String::from).to_vec();
        let deal = Deal::whole_tasks(&tasks, &hosts, 30, 4);
        let single = Deal::new(&tasks, &hosts, 1, 4);
        assert!(deal.deals_whole_tasks() && !single.deals_whole_tasks());
        for task in &tasks {
            for host in &hosts {
                // The pair's shard is that of its one unit in a one-trial deal.
                let shard = single.shard_of(task, host, 0);
                assert!(shard.is_some());
                for trial in 0..30 {
                    assert_eq!(
                        deal.shard_of(task, host, trial),
                        shard,
                        "{task} {host} {trial}"
                    );
                }
                assert_eq!(deal.shard_of(task, host, 30), None, "past the run's trials");
            }
        }
    }

    #[test]
    fn a_deal_gives_each_unit_the_shard_assign_gives_it() {
        let tasks: Vec<String> = ["zeta", "alpha", "mid", "beta-2", "beta-10"]
            .map(String::from)
            .to_vec();
        let hosts: Vec<String> = ["sim", "openai:gpt-4.1", "anthropic:x"]
            .map(String::from)
            .to_vec();
        for count in [1, 2, 3, 7, 64] {
            let deal = Deal::new(&tasks, &hosts, 6, count);
            for (unit, shard) in assign(units(&tasks, &hosts, 6), count) {
                assert_eq!(
                    deal.shard_of(&unit.task_id, &unit.host, unit.trial),
                    Some(shard),
                    "{unit}, {count} shards"
                );
            }
            assert_eq!(deal.shard_of("alpha", "sim", 6), None, "past the trials");
            assert_eq!(
                deal.shard_of("omega", "sim", 0),
                None,
                "not a task of the run"
            );
            assert_eq!(
                deal.shard_of("alpha", "other", 0),
                None,
                "not a host of the run"
            );
        }
    }

    #[test]
    fn units_are_dealt_round_robin_in_task_host_trial_order() {
        let all = units(&ids("t", 2), &["sim".into()], 3);
        let dealt: Vec<(String, u32, u32)> = assign(all, 2)
            .into_iter()
            .map(|(u, s)| (u.task_id, u.trial, s.index))
            .collect();
        assert_eq!(
            dealt,
            [
                ("t0".into(), 0, 1),
                ("t0".into(), 1, 2),
                ("t0".into(), 2, 1),
                ("t1".into(), 0, 2),
                ("t1".into(), 1, 1),
                ("t1".into(), 2, 2),
            ]
        );
    }

    proptest! {
        #[test]
        fn shards_cover_every_unit_once_and_differ_by_at_most_one(
            tasks in 1usize..12,
            hosts in 1usize..4,
            trials in 1u32..6,
            count in 1u32..9,
        ) {
            let all = units(&ids("task-", tasks), &ids("host-", hosts), trials);
            let mut seen: HashMap<Unit, u32> = HashMap::new();
            let mut sizes = Vec::new();
            for index in 1..=count {
                let part = Shard::new(index, count).unwrap().select(all.clone());
                sizes.push(part.len());
                for unit in part {
                    *seen.entry(unit).or_default() += 1;
                }
            }
            prop_assert_eq!(seen.len(), all.len());
            prop_assert!(seen.values().all(|&n| n == 1));
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            prop_assert!(max - min <= 1, "sizes {:?}", sizes);
        }

        #[test]
        fn the_partition_ignores_the_order_units_are_given_in(
            order in Just((0..30usize).collect::<Vec<_>>()).prop_shuffle(),
            count in 1u32..7,
        ) {
            let all = units(&ids("t", 5), &ids("h", 2), 3);
            let shuffled: Vec<Unit> = order.iter().map(|&i| all[i].clone()).collect();
            prop_assert_eq!(assign(shuffled, count), assign(all, count));
        }
    }

    fn demo() -> RunConfig {
        resolve(&Overrides::default()).unwrap()
    }

    fn task(id: &str, prompt: &str, source: &str) -> Task {
        Task {
            id: id.into(),
            prompt: prompt.into(),
            kind: crate::suite::TaskKind::Tool,
            set: crate::suite::TaskSet::Regression,
            tools: Vec::new(),
            max_turns: 4,
            expect: Default::default(),
            call: None,
            call_expect: Default::default(),
            trials: None,
            expected_to_fail: false,
            malformed: false,
            setup: Vec::new(),
            teardown: Vec::new(),
            after: Vec::new(),
            source: source.into(),
            call_at: Default::default(),
            turns: Vec::new(),
            stop_on_failure: false,
            user: None,
            asks: Default::default(),
            attach: Vec::new(),
            server_prompt: None,
        }
    }

    #[test]
    fn the_hash_ignores_machine_and_shard_specifics() {
        let tasks = [task("a", "find it", "tasks/a.yaml:1")];
        let base = config_hash(&demo(), &tasks);
        assert_eq!(base.len(), 16);
        assert_eq!(base, config_hash(&demo(), &tasks));
        let mut other = demo();
        other.out_dir = "/elsewhere".into();
        other.config_source = "/home/ci/configs/demo.toml".into();
        other.suites = vec!["/checkout/tasks/demo".into()];
        other.concurrency = 64;
        other.tags.insert("shard".into(), "2".into());
        other.hosts[0].rpm = Some(60);
        other.baseline.cwd = Some("/srv".into());
        if let crate::config::Transport::Stdio { program, .. } = &mut other.baseline.transport {
            let name = Path::new(program.as_str()).file_name().unwrap();
            *program = Path::new("/opt/elsewhere").join(name).display().to_string();
        }
        let moved = [task("a", "find it", "/checkout/tasks/a.yaml:1")];
        assert_eq!(config_hash(&other, &moved), base);
        assert!(config_differences(&demo(), &other).is_empty());
    }

    #[test]
    fn the_hash_changes_with_what_is_measured() {
        let tasks = [task("a", "find it", "x"), task("b", "list them", "x")];
        let base = config_hash(&demo(), &tasks);
        let reversed = [tasks[1].clone(), tasks[0].clone()];
        assert_eq!(config_hash(&demo(), &reversed), base);
        let mut seed = demo();
        seed.seed = 7;
        assert_ne!(config_hash(&seed, &tasks), base);
        assert_eq!(
            config_differences(&demo(), &seed),
            [format!("seed: {} ≠ 7", demo().seed)]
        );
        let mut trials = demo();
        trials.trials += 1;
        assert_ne!(config_hash(&trials, &tasks), base);
        assert_ne!(config_hash(&demo(), &tasks[..1]), base);
        let edited = [task("a", "find it now", "x"), tasks[1].clone()];
        assert_ne!(config_hash(&demo(), &edited), base);
        let mut server = demo();
        if let crate::config::Transport::Stdio { args, .. } = &mut server.candidate.transport {
            args[2] = "2.0.0".into();
        }
        assert_ne!(config_hash(&server, &tasks), base);
        assert_eq!(
            config_differences(&demo(), &server),
            [r#"candidate.args[2]: "1.5.0" ≠ "2.0.0""#]
        );
    }
}
