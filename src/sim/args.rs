//! Filling a tool's arguments from the request and the tool's JSON schema.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::args_literal as lit;
use super::extract::{self as x, Used};
use super::lexicon::{enum_hints, is_stopword, VERBS};
use super::literal::Kind;
use super::params::{self, json_type, Param};
use super::request::Utterance;
use super::text::{content_stems, stem};

/// What the filler knows besides the schema.
pub(super) struct FillCtx<'u, 'a> {
    pub utt: &'u Utterance<'a>,
    /// Stems of the tool's name, title and description: the words that chose the tool are not
    /// values.
    pub tool_terms: &'u [String],
    /// The previous successful tool result of this request, for ids the user did not spell out.
    pub prior: Option<&'u str>,
}

/// Arguments, and how well the request supported them.
#[derive(Debug, Default)]
pub(super) struct Filled {
    pub args: Map<String, Value>,
    /// Parameters filled from something the request said.
    pub evidence: u32,
    /// Required parameters the request said nothing about (filled with a guess).
    pub missing: u32,
    /// How many of the request's paths, URLs and e-mail addresses the arguments took.
    pub placed_literals: usize,
}

/// Finds a value of a fixed format (time, date, e-mail, URL) in a request.
type Finder = fn(&Utterance) -> Option<String>;

/// How a value was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Evidence,
    /// The request's leftover words: plausible, proves little.
    Weak,
    Guess,
}

static PRIOR_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""id"\s*:\s*"?(\d+)|#(\d+)\b"#).expect("regex"));

const LIMIT_CUES: &[&str] = &["top", "first", "limit", "max", "most", "last", "only"];
const ID_CUES: &[&str] = &["id", "#", "number", "no", "num"];
const SAYING: &[&str] = &["saying", "says", "stating", "reading", "text", "that"];

/// Fills the arguments of an object schema from the request.
pub(super) fn fill(schema: &Value, ctx: &FillCtx) -> Filled {
    let mut used = Used::new(ctx.utt);
    let mut filled = fill_object(schema, ctx, &mut used, 0);
    filled.placed_literals = used.literals.iter().filter(|u| **u).count();
    filled
}

fn fill_object(schema: &Value, ctx: &FillCtx, used: &mut Used, depth: u8) -> Filled {
    let ps = params::params(schema);
    let mut found: Vec<Option<(Value, Source)>> = vec![None; ps.len()];
    // Most specific evidence first: enums, numbers, formats and keyed values, then quotes, then
    // what is left of the request.
    // Enums, then numbers, then strings: "to critical" is a priority before it is a person.
    for rank in 0..3 {
        for (slot, p) in found.iter_mut().zip(&ps) {
            if structured_rank(p) == rank {
                *slot = structured(p, ctx, used).map(|v| (v, Source::Evidence));
            }
        }
    }
    assign_quotes(&ps, &mut found, ctx, used);
    for (slot, p) in found.iter_mut().zip(&ps) {
        if slot.is_none() {
            *slot = free_text(p, ctx, used, depth);
        }
    }
    let mut out = Filled::default();
    for (slot, p) in found.into_iter().zip(&ps) {
        let (value, source) = match slot {
            Some(found) => found,
            None if p.required => match lit::any_unused(p, ctx.utt, used) {
                // A leftover path in a parameter that did not ask for one: not a placed value.
                Some(v) => (v, Source::Weak),
                None => (guess(p, ctx, used, depth), Source::Guess),
            },
            None => continue,
        };
        match source {
            Source::Evidence => out.evidence += 1,
            Source::Guess => out.missing += 1,
            Source::Weak => {}
        }
        out.args.insert(p.name.to_owned(), value);
    }
    out
}

fn structured_rank(p: &Param) -> u8 {
    match (p.enum_values().is_some(), p.ty()) {
        (true, _) => 0,
        (false, "integer" | "number" | "boolean") => 1,
        _ => 2,
    }
}

/// Values the request states outright: an enum word, a number, a time, "project apollo", "in X".
fn structured(p: &Param, ctx: &FillCtx, used: &mut Used) -> Option<Value> {
    if let Some(values) = p.enum_values() {
        return enum_value(values, ctx.utt, used);
    }
    match p.ty() {
        "integer" | "number" => number(p, ctx, used),
        "boolean" => boolean(p, ctx.utt),
        "string" => string_value(p, ctx, used).map(Value::String),
        _ => None,
    }
}

fn enum_value(values: &[Value], utt: &Utterance, used: &mut Used) -> Option<Value> {
    let stems: Vec<(String, &Value)> = values
        .iter()
        .filter_map(|v| Some((v.as_str()?, v)))
        .map(|(s, v)| (stem(&s.to_lowercase()), v))
        .collect();
    for (i, w) in utt.words.iter().enumerate() {
        if used.words[i] {
            continue;
        }
        let hit = stems.iter().find(|(s, _)| *s == w.stem).or_else(|| {
            enum_hints(&w.stem)
                .iter()
                .find_map(|h| stems.iter().find(|(s, _)| s == h))
        });
        if let Some((_, v)) = hit {
            used.words[i] = true;
            return Some((*v).clone());
        }
    }
    None
}

fn number(p: &Param, ctx: &FillCtx, used: &mut Used) -> Option<Value> {
    let utt = ctx.utt;
    let unused = |n: &&super::request::Number| !used.words[n.word];
    let cue_in = |n: &super::request::Number, set: &[&str]| {
        n.cue.as_deref().is_some_and(|c| set.contains(&c))
    };
    let next_is_count = |n: &super::request::Number| {
        utt.words.get(n.word + 1).is_some_and(|w| {
            matches!(
                w.stem.as_str(),
                "result" | "item" | "match" | "entry" | "record" | "row"
            )
        })
    };
    let keyed = |n: &super::request::Number| n.cue.as_ref().is_some_and(|c| p.keys.contains(c));
    let pick = if p.is(params::LIMIT) {
        utt.numbers
            .iter()
            .filter(unused)
            .find(|n| keyed(n) || cue_in(n, LIMIT_CUES) || next_is_count(n))
    } else if p.is(params::ID) {
        let desc = content_stems(p.desc);
        let cued = |n: &super::request::Number| {
            cue_in(n, ID_CUES)
                || n.cue
                    .as_ref()
                    .is_some_and(|c| keyed(n) || desc.contains(c) || ctx.tool_terms.contains(c))
        };
        let plain = |n: &super::request::Number| !cue_in(n, LIMIT_CUES) && !next_is_count(n);
        let numbers = || utt.numbers.iter().filter(unused);
        numbers()
            .find(|n| cued(n))
            .or_else(|| numbers().find(|n| plain(n)))
    } else {
        utt.numbers.iter().filter(unused).find(|n| keyed(n))
    };
    if let Some(n) = pick {
        used.words[n.word] = true;
        return Some(Value::from(n.value));
    }
    let prior_id = || {
        let ids: Vec<i64> = (PRIOR_ID.captures_iter(ctx.prior?))
            .filter_map(|c| c.get(1).or(c.get(2))?.as_str().parse().ok())
            .collect();
        pick_ordinal(&ids, utt)
    };
    p.is(params::ID).then(prior_id).flatten().map(Value::from)
}

/// The id an earlier result's list gives for "the first one", "the second", "the last one": by
/// the ordinal the request uses (first to fifth, last), the first without one.
fn pick_ordinal(ids: &[i64], utt: &Utterance) -> Option<i64> {
    const ORDINALS: [&str; 5] = ["first", "second", "third", "fourth", "fifth"];
    for word in &utt.words {
        let raw = word.raw.to_ascii_lowercase();
        if raw == "last" {
            return ids.last().copied();
        }
        if let Some(k) = ORDINALS.iter().position(|o| *o == raw) {
            return ids.get(k).copied();
        }
    }
    ids.first().copied()
}

fn boolean(p: &Param, utt: &Utterance) -> Option<Value> {
    let keys: Vec<&String> = p.keys.iter().filter(|k| !is_stopword(k)).collect();
    let at = utt
        .words
        .iter()
        .position(|w| keys.first().is_some_and(|k| **k == w.stem))?;
    if !keys.iter().all(|k| utt.words.iter().any(|w| w.stem == **k)) {
        return None;
    }
    let negated = utt.words[at.saturating_sub(2)..at].iter().any(|w| {
        matches!(
            w.raw.to_lowercase().as_str(),
            "no" | "not" | "without" | "exclude"
        )
    });
    Some(Value::Bool(!negated))
}

fn string_value(p: &Param, ctx: &FillCtx, used: &mut Used) -> Option<String> {
    let utt = ctx.utt;
    for (role, kind) in [(params::EMAIL, Kind::Email), (params::URL, Kind::Url)] {
        if p.is(role) {
            if let Some(v) = lit::of_kind(utt, used, kind) {
                return Some(v);
            }
        }
    }
    let formats: [(params::Roles, Finder); 4] = [
        (params::TIME, x::time_of_day),
        (params::DATE, x::date),
        (params::EMAIL, x::email),
        (params::URL, x::url),
    ];
    for (role, find) in formats {
        if p.is(role) {
            return find(utt);
        }
    }
    if p.is(params::PATH | params::SOURCE | params::TARGET) {
        if let Some(path) = lit::path_value(p, utt, used) {
            return Some(path);
        }
    }
    if p.is(params::TEXT | params::QUERY) {
        return None;
    }
    let terms = ctx.tool_terms;
    let not_term = |s: &str| terms.iter().any(|t| t == s);
    let found = x::after_key(utt, used, &p.keys, &not_term)
        .map(|(_, v)| v.to_owned())
        .or_else(|| role_value(p, utt, used, &not_term))
        .or_else(|| p.is(params::ID).then(|| x::id_token(utt)).flatten())?;
    if p.is(params::LOCATION) {
        if let Some(example) = x::matching_example(p.desc, &found) {
            return Some(example.to_owned());
        }
    }
    Some(found)
}

/// Values found by the role of the parameter: "from X", "to X", "in X", "X project".
fn role_value(
    p: &Param,
    utt: &Utterance,
    used: &mut Used,
    reject: &dyn Fn(&str) -> bool,
) -> Option<String> {
    let place = p.is(params::LOCATION);
    let after =
        |used: &mut Used, preps: &[&str]| x::after_preposition(utt, used, preps, place, reject);
    if p.is(params::SOURCE) {
        return after(used, &["from"]);
    }
    if p.is(params::TARGET) {
        return after(used, &["to", "into"]);
    }
    if p.is(params::PERSON) {
        return after(used, &["to", "assign", "for"]);
    }
    if p.is(params::CONTAINER) {
        let before = x::before_key(utt, used, &p.keys, reject).map(str::to_owned);
        return before.or_else(|| after(used, &["in", "within"]));
    }
    if place {
        return after(used, &["in", "at", "for"]);
    }
    None
}

/// Gives quoted text to text-like parameters: first to the one its cue names ("titled '…'"),
/// then in schema order to required ones, then to an optional query or a lone text parameter.
fn assign_quotes(
    ps: &[Param],
    found: &mut [Option<(Value, Source)>],
    ctx: &FillCtx,
    used: &mut Used,
) {
    let quotes = &ctx.utt.quotes;
    let texty = |p: &Param| p.is(params::TEXT | params::QUERY) && p.ty() == "string";
    for (qi, q) in quotes.iter().enumerate() {
        let Some(cue) = &q.cue else { continue };
        let target = ps.iter().enumerate().position(|(k, p)| {
            found[k].is_none() && p.ty() == "string" && (p.keys.contains(cue) || cue_names(cue, p))
        });
        if let Some(k) = target {
            found[k] = Some((Value::String(q.text.to_owned()), Source::Evidence));
            used.quotes[qi] = true;
        }
    }
    let lone = ps.iter().filter(|p| texty(p)).count() == 1;
    let passes: [&dyn Fn(&Param) -> bool; 2] = [&|p: &Param| p.required, &|p: &Param| {
        p.is(params::QUERY) || lone
    }];
    for pass in passes {
        for (k, p) in ps.iter().enumerate() {
            if found[k].is_some() || !texty(p) || !pass(p) {
                continue;
            }
            if let Some(qi) = used.quotes.iter().position(|u| !u) {
                found[k] = Some((Value::String(quotes[qi].text.to_owned()), Source::Evidence));
                used.quotes[qi] = true;
            }
        }
    }
}

/// Cue words that name a kind of text parameter ("titled", "saying", "described as").
fn cue_names(cue: &str, p: &Param) -> bool {
    let kind = |k: &str| p.keys.iter().any(|key| key == k);
    match cue {
        "called" | "nam" => kind("nam") || kind("titl"),
        "saying" | "say" | "text" | "messag" | "comment" => {
            p.is(params::TEXT) && !kind("titl") && !kind("nam")
        }
        "describ" | "as" | "detail" => kind("description") || kind("detail"),
        "for" | "about" | "search" | "find" => p.is(params::QUERY),
        _ => false,
    }
}

/// Query and text parameters, arrays and objects, from what is left of the request.
fn free_text(p: &Param, ctx: &FillCtx, used: &mut Used, depth: u8) -> Option<(Value, Source)> {
    match p.ty() {
        "string" if p.is(params::QUERY) => {
            let words = leftover(ctx, used);
            (!words.is_empty()).then_some((Value::String(words), Source::Evidence))
        }
        "string" if p.is(params::TEXT) && p.required => {
            let text = saying(ctx.utt).unwrap_or_else(|| leftover(ctx, used));
            (!text.is_empty()).then_some((Value::String(text), Source::Weak))
        }
        "string" if p.is(params::TEXT) => x::after_key(ctx.utt, used, &p.keys, &|_| false)
            .map(|(_, v)| (Value::String(v.to_owned()), Source::Evidence)),
        "array" if depth < 3 => array(p, ctx, used, depth),
        "object" if depth < 3 => {
            let inner = fill_object(p.schema, ctx, used, depth + 1);
            (inner.evidence > 0).then_some((Value::Object(inner.args), Source::Evidence))
        }
        _ => None,
    }
}

fn array(p: &Param, ctx: &FillCtx, used: &mut Used, depth: u8) -> Option<(Value, Source)> {
    let items = p.schema.get("items").unwrap_or(&Value::Null);
    match json_type(items) {
        "object" => {
            let inner = fill_object(items, ctx, used, depth + 1);
            let source = if inner.evidence > 0 {
                Source::Evidence
            } else {
                Source::Weak
            };
            (inner.evidence > 0 || p.required)
                .then(|| (Value::Array(vec![Value::Object(inner.args)]), source))
        }
        "string" if p.is(params::PATH) && lit::has_paths(ctx.utt, used) => {
            let paths = lit::all_paths(ctx.utt, used);
            Some((Value::Array(paths), Source::Evidence))
        }
        "string" => {
            let quotes: Vec<Value> = (0..ctx.utt.quotes.len())
                .filter(|&qi| !std::mem::replace(&mut used.quotes[qi], true))
                .map(|qi| Value::String(ctx.utt.quotes[qi].text.to_owned()))
                .collect();
            if !quotes.is_empty() {
                return Some((Value::Array(quotes), Source::Evidence));
            }
            let words = leftover(ctx, used);
            (!words.is_empty() && (p.required || p.is(params::QUERY)))
                .then(|| (Value::Array(vec![Value::String(words)]), Source::Weak))
        }
        _ => None,
    }
}

/// The text after "saying", "that says", ":" … up to the end of the step.
fn saying(utt: &Utterance) -> Option<String> {
    let i = utt
        .words
        .iter()
        .position(|w| SAYING.contains(&w.raw.to_lowercase().as_str()))?;
    let w = &utt.words[i];
    let rest = utt.text[w.start + w.raw.len()..].trim();
    let rest = rest
        .trim_start_matches([':', ',', ' '])
        .trim_end_matches(['.', '!']);
    (!rest.is_empty()).then(|| rest.to_owned())
}

/// The request's content words that nothing else used: not the verb, not the words that chose
/// the tool, not a value, a key of a value or the cue of a quote. Marks them used.
fn leftover(ctx: &FillCtx, used: &mut Used) -> String {
    let utt = ctx.utt;
    let mut out: Vec<&str> = Vec::new();
    let cue = |stem: &str| utt.quotes.iter().any(|q| q.cue.as_deref() == Some(stem));
    for (i, w) in utt.words.iter().enumerate() {
        let term = ctx.tool_terms.contains(&w.stem) || cue(&w.stem);
        if w.is_content() && !used.words[i] && Some(i) != utt.verb && !term {
            used.words[i] = true;
            out.push(w.raw);
        }
    }
    out.join(" ")
}

/// A plausible value for a required parameter the request said nothing about.
fn guess(p: &Param, ctx: &FillCtx, used: &mut Used, depth: u8) -> Value {
    if let Some(d) = p.schema.get("default") {
        return d.clone();
    }
    if let Some(first) = p.enum_values().and_then(|v| v.first()) {
        return first.clone();
    }
    match p.ty() {
        "integer" | "number" => p.schema.get("minimum").cloned().unwrap_or(Value::from(1)),
        "boolean" => Value::Bool(false),
        "array" => Value::Array(Vec::new()),
        "object" if depth < 3 => Value::Object(fill_object(p.schema, ctx, used, depth + 1).args),
        "object" => Value::Object(Map::new()),
        _ => Value::String(guess_text(p, ctx)),
    }
}

fn guess_text(p: &Param, ctx: &FillCtx) -> String {
    let plain = |v: &&str| !is_stopword(&v.to_lowercase());
    if let Some(v) = x::described_default(p.desc).filter(plain) {
        return v.to_owned();
    }
    if let Some(v) = x::described_example(p.desc).filter(plain) {
        return v.to_owned();
    }
    let utt = ctx.utt;
    let content: Vec<&str> = utt
        .words
        .iter()
        .filter(|w| w.is_content() && w.concepts & VERBS == 0)
        .map(|w| w.raw)
        .collect();
    if content.is_empty() {
        utt.text.trim().to_owned()
    } else {
        content.join(" ")
    }
}
