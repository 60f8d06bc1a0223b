//! `sampling:` and `elicitation:` of a task (or a `defaults.yaml`): how mcpeval answers the
//! requests a server sends its client during a trial, and the graders of them (`expect.sampled`,
//! `expect.elicited`); read from the spanned YAML tree with `file:line:col` problems.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value as Json};

use super::check::{suggestion, Checker};
use super::raw::{Node, Value};

/// The keys `sampling:` takes (exactly one of them).
pub(crate) const SAMPLING_KEYS: &[&str] = &["host", "reply"];
/// The keys `elicitation:` takes (exactly one of them).
pub(crate) const ELICITATION_KEYS: &[&str] = &["answers", "action", "user"];
const SAMPLED_KEYS: &[&str] = &["min", "max"];
const ELICITED_KEYS: &[&str] = &["field", "equals"];

/// How a `sampling/createMessage` request is answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Sampling {
    /// `{host: HOST}`: that host's model answers (the request's messages, system prompt and
    /// `maxTokens`); `sim` answers [`SIM_SAMPLING_TEXT`].
    Host(String),
    /// `{reply: TEXT}`: this text, always.
    Reply(String),
}

/// What the `sim` host answers every sampling request with: the simulated model does not write
/// free text, so it says so in a fixed, documented sentence.
pub const SIM_SAMPLING_TEXT: &str =
    "This is a fixed answer from mcpeval's simulated model (sim) to a sampling request.";

/// An elicitation's action other than accepting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    Decline,
    Cancel,
}

impl ElicitAction {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }
}

/// How an `elicitation/create` request is answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Elicitation {
    /// `{answers: {field: value}}`: accepted with these values, if they fit the request's
    /// `requestedSchema` (a misfit is not sent: the trial fails with the schema's complaint).
    Answers(Map<String, Json>),
    /// `{action: decline|cancel}`.
    Action(ElicitAction),
    /// `{user: true}`: the simulated user answers.
    User,
}

/// `expect.sampled: {min, max}`: how many sampling requests the trial answered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CountRange {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u32>,
}

/// One entry of `expect.elicited`: an elicitation was accepted with this field (and this value).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitedField {
    pub field: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub equals: Option<Json>,
}

/// The graders of the server's requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AskExpect {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampled: Option<CountRange>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub elicited: Vec<ElicitedField>,
}

impl AskExpect {
    pub fn is_empty(&self) -> bool {
        self.sampled.is_none() && self.elicited.is_empty()
    }
}

/// Which of the requests a client declares it can answer (on top of its profile's).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct AskCapabilities {
    pub sampling: bool,
    pub elicitation: bool,
}

impl AskCapabilities {
    pub fn is_none(&self) -> bool {
        !self.sampling && !self.elicitation
    }

    /// Both sets together.
    pub fn union(self, other: Self) -> Self {
        Self {
            sampling: self.sampling || other.sampling,
            elicitation: self.elicitation || other.elicitation,
        }
    }
}

/// What a task says about the server's requests: how to answer them, and what to expect.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TaskAsks {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<Sampling>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<Elicitation>,
    #[serde(default, skip_serializing_if = "AskExpect::is_empty")]
    pub expect: AskExpect,
    /// Where `sampling.host` is written (`file:line:col`), for the check of the host before a
    /// run; not serialized.
    #[serde(skip)]
    pub host_at: Option<String>,
}

impl TaskAsks {
    pub fn is_empty(&self) -> bool {
        self.sampling.is_none() && self.elicitation.is_none() && self.expect.is_empty()
    }

    /// The capabilities a trial of the task declares: those it says how to answer.
    pub fn capabilities(&self) -> AskCapabilities {
        AskCapabilities {
            sampling: self.sampling.is_some(),
            elicitation: self.elicitation.is_some(),
        }
    }

    /// The sampling host it names, other than `sim` (which needs no model).
    pub fn sampling_host(&self) -> Option<&str> {
        match &self.sampling {
            Some(Sampling::Host(host)) if host != "sim" => Some(host),
            _ => None,
        }
    }
}

/// The one key of a mapping that must hold exactly one of `known`: unknown keys are refused
/// with "did you mean" and the keys it takes; none or two are refused too.
fn one_key<'n>(
    checker: &mut Checker<'_>,
    node: &'n Node,
    place: &str,
    known: &[&str],
) -> Option<(&'n str, &'n Node)> {
    let takes: Vec<String> = known.iter().map(|k| format!("`{k}`")).collect();
    let takes = takes.join(", ");
    let Value::Map(entries) = &node.value else {
        let got = node.value.kind();
        let message = format!("`{place}` must be a mapping with one of {takes}, got {got}");
        checker.error(node, message);
        return None;
    };
    let before = checker.count();
    let mut found: Vec<(&str, &Node, &Node)> = Vec::new();
    for (key, value) in entries {
        let Value::Str(name) = &key.value else {
            let got = key.value.kind();
            checker.error(key, format!("keys in `{place}` must be strings, got {got}"));
            continue;
        };
        if !known.contains(&name.as_str()) {
            let hint = suggestion(name, known);
            let message = format!("unknown key `{name}` in `{place}`{hint}; it takes {takes}");
            checker.error(key, message);
            continue;
        }
        found.push((name, key, value));
    }
    if checker.count() > before {
        return None;
    }
    match found.as_slice() {
        [(name, _, value)] => Some((name, value)),
        [] => {
            checker.error(node, format!("`{place}` is empty: set one of {takes}"));
            None
        }
        [_, (name, key, _), ..] => {
            let message = format!("`{place}` takes one of {takes}, not two (`{name}` too)");
            checker.error(key, message);
            None
        }
    }
}

/// `sampling: {host: HOST}` or `{reply: TEXT}`; `host` is checked as a host spec by `host_spec`.
pub(crate) fn sampling(
    checker: &mut Checker<'_>,
    node: &Node,
    host_spec: impl FnOnce(&mut Checker<'_>, &Node) -> Option<String>,
) -> Option<(Sampling, Option<String>)> {
    let (key, value) = one_key(checker, node, "sampling", SAMPLING_KEYS)?;
    match key {
        "host" => {
            let at = format!(
                "{}:{}:{}",
                checker.file().display(),
                value.line,
                value.column
            );
            host_spec(checker, value).map(|h| (Sampling::Host(h), Some(at)))
        }
        _ => checker
            .string(value, "sampling.reply")
            .map(|text| (Sampling::Reply(text), None)),
    }
}

/// `elicitation: {answers: {…}}`, `{action: decline|cancel}` or `{user: true}`.
pub(crate) fn elicitation(checker: &mut Checker<'_>, node: &Node) -> Option<Elicitation> {
    let (key, value) = one_key(checker, node, "elicitation", ELICITATION_KEYS)?;
    match key {
        "answers" => {
            if !matches!(value.value, Value::Map(_)) {
                let what = "a mapping of field names to values";
                checker.wrong_type(value, "elicitation.answers", what);
                return None;
            }
            match checker.json(value)? {
                Json::Object(map) => Some(Elicitation::Answers(map)),
                _ => None,
            }
        }
        "action" => {
            let actions = [
                ("decline", ElicitAction::Decline),
                ("cancel", ElicitAction::Cancel),
            ];
            checker
                .choice(value, "elicitation.action", &actions)
                .map(Elicitation::Action)
        }
        _ => match checker.boolean(value, "elicitation.user")? {
            true => Some(Elicitation::User),
            false => {
                let message = "`elicitation.user` must be `true` (leave `elicitation` out for a \
                               client that does not answer)";
                checker.error(value, message);
                None
            }
        },
    }
}

/// `expect.sampled` and `expect.elicited` of an `expect` mapping (its other keys are checked by
/// the caller); `None` when one is invalid.
pub(crate) fn ask_expect(checker: &mut Checker<'_>, expect: &Node) -> Option<AskExpect> {
    let Value::Map(entries) = &expect.value else {
        return Some(AskExpect::default());
    };
    let before = checker.count();
    let mut out = AskExpect::default();
    for (key, value) in entries {
        match &key.value {
            Value::Str(k) if k == "sampled" => out.sampled = sampled(checker, value),
            Value::Str(k) if k == "elicited" => out.elicited = elicited(checker, value),
            _ => {}
        }
    }
    (checker.count() == before).then_some(out)
}

fn sampled(checker: &mut Checker<'_>, node: &Node) -> Option<CountRange> {
    let fields = checker.fields(node, "`sampled`", Some(SAMPLED_KEYS))?;
    let mut range = CountRange::default();
    if let Some((_, v)) = fields.get("min") {
        range.min = checker.integer(v, "sampled.min", 0..=u32::MAX);
    }
    if let Some((_, v)) = fields.get("max") {
        range.max = checker.integer(v, "sampled.max", 0..=u32::MAX);
    }
    match (range.min, range.max) {
        (None, None) => {
            checker.error(node, "`sampled` checks nothing: set `min` or `max`");
            None
        }
        (Some(min), Some(max)) if min > max => {
            let message = format!("`sampled.min` ({min}) is above `sampled.max` ({max})");
            checker.error(node, message);
            None
        }
        _ => Some(range),
    }
}

fn elicited(checker: &mut Checker<'_>, node: &Node) -> Vec<ElicitedField> {
    let Value::Seq(items) = &node.value else {
        checker.wrong_type(node, "elicited", "a list of `{field, equals}`");
        return Vec::new();
    };
    let mut out = Vec::new();
    for item in items {
        let before = checker.count();
        let Some(fields) = checker.fields(item, "`elicited` entry", Some(ELICITED_KEYS)) else {
            continue;
        };
        let Some((_, field)) = fields.get("field") else {
            // A misspelt `field` was named already.
            if checker.count() == before {
                checker.missing(&fields, "field", "`elicited` entry");
            }
            continue;
        };
        let Some(field) = checker.non_empty_string(field, "elicited.field") else {
            continue;
        };
        let equals = match fields.get("equals") {
            Some((_, v)) => match checker.json(v) {
                Some(v) => Some(v),
                None => continue,
            },
            None => None,
        };
        out.push(ElicitedField { field, equals });
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::suite::raw::parse;

    fn read<T>(
        text: &str,
        f: impl FnOnce(&mut Checker<'_>, &Node) -> Option<T>,
    ) -> Result<T, Vec<String>> {
        let node = parse(text).unwrap();
        let mut checker = Checker::new(Path::new("t.yaml"));
        let out = f(&mut checker, &node);
        let problems: Vec<String> = (checker.into_diagnostics().iter())
            .map(|d| format!("{}:{}: {}", d.line, d.column, d.message))
            .collect();
        match out {
            Some(out) if problems.is_empty() => Ok(out),
            _ => Err(problems),
        }
    }

    fn host(c: &mut Checker<'_>, v: &Node) -> Option<String> {
        c.string(v, "sampling.host")
    }

    #[test]
    fn each_form_reads_and_bad_keys_name_the_valid_ones() {
        let (s, at) = read("reply: hi", |c, n| sampling(c, n, host)).unwrap();
        assert_eq!((s, at), (Sampling::Reply("hi".into()), None));
        let (s, at) = read("host: sim", |c, n| sampling(c, n, host)).unwrap();
        assert_eq!(
            (s, at.as_deref()),
            (Sampling::Host("sim".into()), Some("t.yaml:1:7"))
        );
        let e = read("rpely: hi", |c, n| sampling(c, n, host)).unwrap_err();
        assert_eq!(
            e,
            ["1:1: unknown key `rpely` in `sampling` (did you mean `reply`?); it takes `host`, `reply`"]
        );
        let e = read("{host: a, reply: b}", |c, n| sampling(c, n, host)).unwrap_err();
        assert!(
            e[0].contains("takes one of `host`, `reply`, not two"),
            "{e:?}"
        );
        let a = read("answers: {name: Ada, n: 3}", elicitation).unwrap();
        let Elicitation::Answers(map) = a else {
            panic!()
        };
        assert_eq!(
            Json::Object(map),
            serde_json::json!({"name": "Ada", "n": 3})
        );
        assert_eq!(
            read("action: cancel", elicitation).unwrap(),
            Elicitation::Action(ElicitAction::Cancel)
        );
        assert_eq!(read("user: true", elicitation).unwrap(), Elicitation::User);
        let e = read("action: accept", elicitation).unwrap_err();
        assert!(
            e[0].contains("expected one of `decline`, `cancel`"),
            "{e:?}"
        );
        let e = read("answer: {name: x}", elicitation).unwrap_err();
        assert!(
            e[0].contains("(did you mean `answers`?); it takes `answers`, `action`, `user`"),
            "{e:?}"
        );
    }

    #[test]
    fn graders_read_and_refuse_empty_or_crossed_bounds() {
        let text = "sampled: {min: 1}\nelicited: [{field: name, equals: Ada}, {field: check}]";
        let e = read(text, ask_expect).unwrap();
        assert_eq!(
            e.sampled,
            Some(CountRange {
                min: Some(1),
                max: None
            })
        );
        assert_eq!(e.elicited.len(), 2);
        assert_eq!(e.elicited[0].equals, Some(Json::from("Ada")));
        assert!(read("sampled: {}", ask_expect).is_err());
        assert!(read("sampled: {min: 3, max: 1}", ask_expect).is_err());
        let e = read("elicited: [{fields: x}]", ask_expect).unwrap_err();
        assert!(e[0].contains("did you mean `field`"), "{e:?}");
    }
}
