//! The sim's small, generic vocabulary: stopwords, action-verb and noun synonym groups, enum hints.
//!
//! Nothing here names a particular server: the groups are the everyday words with which people ask
//! for actions, and with which tool authors describe them.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::LazyLock;

use super::text::stem;

/// A set of concepts (synonym groups) as bits.
pub(super) type Concepts = u32;

pub(super) const FIND: Concepts = 1;
pub(super) const CREATE: Concepts = 1 << 1;
pub(super) const UPDATE: Concepts = 1 << 2;
pub(super) const GET: Concepts = 1 << 3;
pub(super) const LIST: Concepts = 1 << 4;
pub(super) const DELETE: Concepts = 1 << 5;
pub(super) const CONVERT: Concepts = 1 << 6;
pub(super) const SEND: Concepts = 1 << 7;
pub(super) const RUN: Concepts = 1 << 8;
/// All action-verb groups; the bits above are noun groups.
pub(super) const VERBS: Concepts = (1 << 9) - 1;
/// Verbs that only read: asking for one of them where a tool offers another is no contradiction.
pub(super) const READS: Concepts = FIND | GET | LIST;

const VERB_GROUPS: &[(Concepts, &[&str])] = &[
    (
        FIND,
        &[
            "find", "found", "search", "look", "lookup", "query", "locate", "seek", "discover",
            "grep", "filter",
        ],
    ),
    (
        CREATE,
        &[
            "create", "new", "add", "file", "open", "report", "make", "made", "insert", "register",
            "save", "store", "remember", "record", "write", "post", "submit", "draft", "generate",
        ],
    ),
    (
        UPDATE,
        &[
            "update", "change", "set", "edit", "modify", "close", "assign", "reassign", "rename",
            "reopen", "move", "mark", "patch", "adjust", "alter", "resolve", "replace",
        ],
    ),
    (
        GET,
        &[
            "get", "show", "fetch", "read", "detail", "view", "display", "see", "retrieve", "open",
            "describe", "inspect", "check", "give",
        ],
    ),
    (LIST, &["list", "enumerate", "browse"]),
    (
        DELETE,
        &[
            "delete",
            "remove",
            "erase",
            "destroy",
            "drop",
            "purge",
            "discard",
            "eliminate",
            "wipe",
        ],
    ),
    (CONVERT, &["convert", "translate", "transform"]),
    (SEND, &["send", "sent", "notify", "email", "mail"]),
    (RUN, &["run", "execute", "start", "launch", "trigger"]),
];

/// Nouns that people use interchangeably for the same kind of thing.
const NOUN_GROUPS: &[&[&str]] = &[
    &["issue", "bug", "ticket", "problem", "defect", "incident"],
    &["comment", "note", "remark", "reply"],
    &["project", "repo", "repository", "workspace"],
    &["user", "person", "people", "member", "account"],
    &["entity", "node", "item", "object"],
    &["document", "doc", "page"],
    &["detail", "info", "information"],
];

/// Words that carry no content of their own in a request or a description.
const STOPWORDS: &str =
    "a about above across after again against all also am an and any are as at be been before \
    being below between both but by can could d did do does doing don down during e each eg \
    either else etc ever every for from further g had has have having he her here hers him his \
    how i ie if in into is it its itself just kindly let like ll m may me might mine more most \
    must my need no nor not now of off on once one only or other our ours out over please pls re \
    s same shall she should so some such t than that the their theirs them then there these they \
    this those through to too under until up us ve very want was we were what when where which \
    while who whom whose why will with would you your yours yourself today thanks thank hello hi \
    hey good morning afternoon evening tell know wondering help ok okay yes sure there it's \
    whether via using use used return returns never cannot instead always rather given specific \
    whole entire optional default";

/// Greetings and thanks: a request made only of these gets a greeting back.
pub(super) const GREETINGS: &[&str] = &[
    "hello",
    "hi",
    "hey",
    "thanks",
    "thank",
    "morning",
    "afternoon",
    "evening",
    "greetings",
];

/// Request words that point at an enum value they do not spell (a tiny, generic map).
const ENUM_HINTS: &[(&str, &[&str])] = &[
    ("urgent", &["critical", "urgent", "high"]),
    ("asap", &["critical", "urgent", "high"]),
    ("severe", &["critical", "high"]),
    ("blocker", &["critical", "high"]),
    ("important", &["high"]),
    ("minor", &["low"]),
    ("trivial", &["low"]),
    ("normal", &["medium", "normal"]),
    ("moderate", &["medium"]),
    ("done", &["closed", "done", "resolved"]),
    ("resolve", &["closed", "resolved", "done"]),
    ("fix", &["closed", "resolved", "done"]),
    ("finish", &["closed", "done"]),
    ("reopen", &["open", "reopened"]),
    ("active", &["open", "active"]),
    ("pending", &["open", "pending"]),
];

/// FNV-1a: the keys are short, fixed words, so a fast hash beats a DoS-resistant one.
#[derive(Default)]
pub(super) struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for b in bytes {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

pub(super) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<Fnv>>;
pub(super) type FastSet<K> = HashSet<K, BuildHasherDefault<Fnv>>;

struct Lexicon {
    concepts: FastMap<String, Concepts>,
    stopwords: FastSet<&'static str>,
    enum_hints: FastMap<String, Vec<String>>,
}

static LEXICON: LazyLock<Lexicon> = LazyLock::new(|| {
    let mut concepts: FastMap<String, Concepts> = FastMap::default();
    for (bit, words) in VERB_GROUPS {
        for w in *words {
            *concepts.entry(stem(w)).or_default() |= bit;
        }
    }
    for (i, words) in NOUN_GROUPS.iter().enumerate() {
        for w in *words {
            *concepts.entry(stem(w)).or_default() |= 1 << (9 + i);
        }
    }
    let enum_hints = ENUM_HINTS
        .iter()
        .map(|(w, values)| (stem(w), values.iter().map(|v| stem(v)).collect()))
        .collect();
    Lexicon {
        concepts,
        stopwords: STOPWORDS.split_whitespace().collect(),
        enum_hints,
    }
});

/// The synonym groups a (stemmed) word belongs to.
pub(super) fn concepts(stemmed: &str) -> Concepts {
    LEXICON.concepts.get(stemmed).copied().unwrap_or(0)
}

/// The everyday words of the action-verb groups in `verbs`, in the groups' order.
pub(super) fn verb_words(verbs: Concepts) -> impl Iterator<Item = &'static str> {
    (VERB_GROUPS.iter())
        .filter(move |(bit, _)| verbs & bit != 0)
        .flat_map(|(_, words)| words.iter().copied())
}

/// True for a lower-case word without content of its own.
pub(super) fn is_stopword(lower: &str) -> bool {
    LEXICON.stopwords.contains(lower)
}

/// Stemmed enum values that a stemmed request word hints at, best first.
pub(super) fn enum_hints(stemmed: &str) -> &'static [String] {
    LEXICON
        .enum_hints
        .get(stemmed)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_share_groups_after_stemming() {
        assert_eq!(concepts(&stem("searching")) & FIND, FIND);
        assert_eq!(concepts(&stem("closed")) & UPDATE, UPDATE);
        assert_eq!(concepts(&stem("deleted")) & DELETE, DELETE);
        assert_eq!(concepts(&stem("open")), CREATE | GET);
        assert_eq!(concepts(&stem("bugs")), concepts(&stem("issue")));
        assert!(concepts(&stem("issues")) & VERBS == 0);
        assert!(is_stopword("please") && !is_stopword("login"));
    }
}
