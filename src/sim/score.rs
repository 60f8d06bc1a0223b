//! Scoring tools against a request the way a model reads a tool list: name, title, description
//! and parameters, with synonyms, the request's main verb and how well the arguments fit.

use serde_json::Value;

use super::args::{self, FillCtx, Filled};
use super::lexicon::{Concepts, READS, VERBS};
use super::request::Utterance;
use super::rules::Rules;
use super::text::{bare_name, words, Word};
use super::SimConfig;
use crate::host::ToolSpec;

/// The words of one field of a tool (name, title, description or parameters).
#[derive(Debug, Default)]
struct Field {
    stems: Vec<String>,
    concepts: Concepts,
}

impl Field {
    fn from_words<'a>(ws: impl IntoIterator<Item = Word<'a>>) -> Self {
        let mut f = Field::default();
        for w in ws.into_iter().filter(Word::is_content) {
            f.concepts |= w.concepts;
            f.stems.push(w.stem);
        }
        f
    }

    /// 1 for the stem itself, `synonym` for a word of the same group, else 0.
    fn matches(&self, stem: &str, concepts: Concepts, synonym: f64) -> f64 {
        if self.stems.iter().any(|s| s == stem) {
            1.0
        } else if concepts & self.concepts != 0 {
            synonym
        } else {
            0.0
        }
    }
}

/// One tool, read.
#[derive(Debug)]
pub(super) struct ToolTerms {
    name: Field,
    title: Field,
    description: Field,
    params: Field,
    /// The action of the tool: the first verb of its name, else of its title or description.
    verb: Concepts,
    /// Stem of that verb when it is in the name.
    verb_stem: Option<String>,
    /// The other words of the name: what the tool acts on.
    nouns: Vec<(String, Concepts)>,
    /// Stems of name, title and description (words that are not argument values).
    pub terms: Vec<String>,
}

impl ToolTerms {
    pub fn read(tool: &ToolSpec) -> Self {
        let name_words = words(bare_name(&tool.name));
        let title = Field::from_words(words(tool.title.as_deref().unwrap_or("")));
        let description = Field::from_words(words(tool.description.as_deref().unwrap_or("")));
        let mut params = Field::default();
        param_words(&tool.input_schema, &mut params, 0);
        let name_verb = name_words.iter().find(|w| w.concepts & VERBS != 0);
        let verb_stem = name_verb.map(|w| w.stem.clone());
        let first_verb = |f: &Field| {
            f.stems
                .iter()
                .map(|s| super::lexicon::concepts(s) & VERBS)
                .find(|c| *c != 0)
        };
        let verb = name_verb
            .map(|w| w.concepts & VERBS)
            .or_else(|| first_verb(&title))
            .or_else(|| first_verb(&description))
            .unwrap_or(0);
        let nouns = name_words
            .iter()
            .filter(|w| w.is_content() && w.concepts & VERBS == 0)
            .map(|w| (w.stem.clone(), w.concepts))
            .collect();
        let name = Field::from_words(name_words);
        let mut terms = name.stems.clone();
        terms.extend(title.stems.iter().cloned());
        terms.extend(description.stems.iter().cloned());
        ToolTerms {
            name,
            title,
            description,
            params,
            verb,
            verb_stem,
            nouns,
            terms,
        }
    }
}

/// Names and descriptions of the parameters, nested ones included.
fn param_words(schema: &Value, out: &mut Field, depth: u8) {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        if let Some(items) = schema.get("items").filter(|_| depth < 4) {
            param_words(items, out, depth + 1);
        }
        return;
    };
    for (name, prop) in props {
        let desc = prop
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or("");
        let values = prop.get("enum").and_then(Value::as_array);
        let f = Field::from_words(words(name).into_iter().chain(words(desc)));
        out.concepts |= f.concepts;
        out.stems.extend(f.stems);
        for v in values.into_iter().flatten().filter_map(Value::as_str) {
            out.stems.extend(words(v).into_iter().map(|w| w.stem));
        }
        if depth < 4 {
            param_words(prop, out, depth + 1);
        }
    }
}

/// A tool's score for a request, and the arguments the sim would give it.
#[derive(Debug)]
pub(super) struct Scored {
    pub tool: usize,
    pub score: f64,
    pub filled: Filled,
}

/// Scores every tool for one step of a request; best first (ties in list order).
pub(super) fn score_all(
    utt: &Utterance,
    tools: &[ToolSpec],
    rules: &Rules,
    prior: Option<&str>,
    cfg: &SimConfig,
) -> Vec<Scored> {
    let read: Vec<ToolTerms> = tools.iter().map(ToolTerms::read).collect();
    let verb = utt.verb_concepts();
    let someone_has_verb = read.iter().any(|t| t.verb & verb != 0);
    let mut out: Vec<Scored> = read
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let ctx = FillCtx {
                utt,
                tool_terms: &t.terms,
                prior,
            };
            let filled = args::fill(&tools[i].input_schema, &ctx);
            let mut score = lexical(utt, t, cfg) + verb_term(utt, t, someone_has_verb, cfg);
            score += rules.boost(i, utt) * cfg.instruction_boost;
            // A path, URL or address the request spells out and a parameter takes is evidence
            // twice over: the value itself, and that it was written for a tool.
            score += cfg.param_fit * f64::from(filled.evidence.min(3));
            score += cfg.param_fit * filled.placed_literals as f64;
            score -= cfg.missing_arg_penalty * f64::from(filled.missing);
            score -= unfit_penalty(utt, &tools[i], &filled);
            score += kind_fit(utt, t, &filled, cfg);
            Scored {
                tool: i,
                score,
                filled,
            }
        })
        .collect();
    out.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.tool.cmp(&b.tool)));
    out
}

/// What a model holds against a tool regardless of its words: a title or description that calls
/// it deprecated, and each path, URL or address the request spells out that no parameter took.
fn unfit_penalty(utt: &Utterance, tool: &ToolSpec, filled: &Filled) -> f64 {
    let said = |t: &Option<String>| {
        t.as_deref()
            .is_some_and(|t| t.to_lowercase().contains("deprecated"))
    };
    let mut penalty = 0.0;
    if said(&tool.title) || said(&tool.description) {
        penalty += DEPRECATED_PENALTY;
    }
    let left = utt.literals.len().saturating_sub(filled.placed_literals);
    penalty += UNPLACED_LITERAL_PENALTY * left as f64;
    penalty
}

/// Points off a tool that says it is deprecated (a model takes its replacement).
const DEPRECATED_PENALTY: f64 = 2.0;
/// Points off a tool for each path, URL or address of the request it has nowhere to put.
const UNPLACED_LITERAL_PENALTY: f64 = 2.5;

/// The kind of file the request's paths name, for a tool that takes them all: fully when the
/// tool's name or title speaks of it, a little when only its description does.
fn kind_fit(utt: &Utterance, t: &ToolTerms, filled: &Filled, cfg: &SimConfig) -> f64 {
    let has = |f: &Field, k: &str| f.stems.iter().any(|s| s == k);
    if filled.placed_literals < utt.literals.len() {
        0.0
    } else if utt
        .kinds
        .iter()
        .any(|k| has(&t.name, k) || has(&t.title, k))
    {
        cfg.description_weight
    } else if utt.kinds.iter().any(|k| has(&t.description, k)) {
        cfg.param_fit
    } else {
        0.0
    }
}

/// Each content word of the request counts once, in the field where it weighs most; a name
/// that shares no word with the request counts against the tool.
fn lexical(utt: &Utterance, t: &ToolTerms, cfg: &SimConfig) -> f64 {
    let fields = [
        (&t.name, cfg.name_weight),
        (&t.title, cfg.title_weight),
        (&t.description, cfg.description_weight),
        (&t.params, cfg.param_weight),
    ];
    let content = utt.content_stems();
    let mut score = 0.0;
    for (stem, concepts) in content {
        let best = fields
            .iter()
            .map(|(f, w)| w * f.matches(stem, *concepts, cfg.synonym_factor))
            .fold(0.0, f64::max);
        score += best;
    }
    let object_named = t.nouns.iter().any(|(n, c)| {
        utt.kinds.contains(&n.as_str())
            || content
                .iter()
                .any(|(s, sc)| *s == n.as_str() || (sc & c & !VERBS) != 0)
    });
    if !t.nouns.is_empty() && !object_named {
        score -= cfg.object_penalty;
    }
    score
}

/// The request's main verb against the tool's action: a bonus when they agree, a penalty when
/// they clearly differ and another tool offers the asked-for action.
fn verb_term(utt: &Utterance, t: &ToolTerms, someone_has_verb: bool, cfg: &SimConfig) -> f64 {
    let asked = utt.verb_concepts();
    if asked == 0 {
        return 0.0;
    }
    if t.verb & asked != 0 {
        let said = utt.verb.map(|v| utt.words[v].stem.as_str());
        let exact = said.is_some() && t.verb_stem.as_deref() == said;
        return if exact {
            cfg.verb_bonus
        } else {
            cfg.verb_bonus * 0.75
        };
    }
    let both_read = asked & READS != 0 && t.verb & READS != 0;
    if t.verb != 0 && !both_read && someone_has_verb {
        return -cfg.verb_penalty;
    }
    0.0
}
