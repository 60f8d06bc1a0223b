//! What a tool list costs in tokens: each tool's definition, the whole list and the server's
//! instructions counted as a host sends them, with OpenAI's real BPE tokenizers (`o200k_base`,
//! `cl100k_base`, from the `tiktoken-rs` crate, whose ranks are compiled in: no download); the
//! snapshot's `tokens.json`.
//!
//! A tool is counted as the entry of an OpenAI chat request's `tools` array,
//! `{"type":"function","function":{"name","description","parameters"}}`, serialized compactly
//! (`description` left out when the tool has none, as the OpenAI host sends it); the list as the
//! JSON array of those entries; the instructions as plain text. See docs/tokens.md.

use std::path::Path;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tiktoken_rs::CoreBPE;

use super::model::Snapshot;

/// The file beside `tools.json` that holds the counts.
pub const TOKENS_JSON: &str = "tokens.json";
/// The version of what `tokens.json` counts and how; a stored file of another version is not
/// compared with a fresh count (the counts are computed again from `tools.json`).
pub const TOKENS_FORMAT: u32 = 1;
/// The crate and version the counts come from (a unit test holds it to `Cargo.lock`).
pub const TOKENIZER_CRATE: &str = "tiktoken-rs 0.12.1";
/// What is counted, in words, for the file's readers.
const COUNTED_AS: &str = "each tool as an OpenAI chat `tools` entry \
     {\"type\":\"function\",\"function\":{\"name\",\"description\",\"parameters\"}} serialized \
     compactly; the list as the JSON array of those entries; the instructions as plain text";

/// A real tokenizer mcpeval counts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Encoding {
    /// OpenAI's GPT-4o, GPT-4.1, o-series and GPT-5 models.
    O200k,
    /// OpenAI's GPT-4 and GPT-3.5 models.
    Cl100k,
}

static O200K: LazyLock<CoreBPE> = LazyLock::new(|| {
    // The ranks are compiled into the crate; a unit test builds both encodings.
    tiktoken_rs::o200k_base().expect("tiktoken-rs' embedded o200k_base ranks")
});
static CL100K: LazyLock<CoreBPE> =
    LazyLock::new(|| tiktoken_rs::cl100k_base().expect("tiktoken-rs' embedded cl100k_base ranks"));

impl Encoding {
    /// Every encoding, the one the check's threshold reads first.
    pub const ALL: [Self; 2] = [Self::O200k, Self::Cl100k];

    /// The name tiktoken gives it (`o200k_base`).
    pub fn name(self) -> &'static str {
        match self {
            Self::O200k => "o200k_base",
            Self::Cl100k => "cl100k_base",
        }
    }

    /// The models whose tokenizer it is.
    pub fn models(self) -> &'static str {
        match self {
            Self::O200k => "OpenAI GPT-4o, GPT-4.1, o-series, GPT-5",
            Self::Cl100k => "OpenAI GPT-4, GPT-3.5",
        }
    }

    /// The encoding, built on first use (once per process: building one reads ~100k–200k ranks).
    fn bpe(self) -> &'static CoreBPE {
        match self {
            Self::O200k => &O200K,
            Self::Cl100k => &CL100K,
        }
    }

    /// The tokens of `text`, every part of it ordinary text (a `<|endoftext|>` in a description
    /// is counted as the characters it is, as a provider does with user content).
    pub fn count(self, text: &str) -> u64 {
        self.bpe().encode_ordinary(text).len() as u64
    }
}

/// A tool as the entry of an OpenAI chat request's `tools` array, serialized compactly.
pub fn tool_entry(tool: &Value) -> String {
    #[derive(Serialize)]
    struct Entry<'a> {
        #[serde(rename = "type")]
        kind: &'static str,
        function: Function<'a>,
    }
    #[derive(Serialize)]
    struct Function<'a> {
        name: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        description: Option<&'a str>,
        parameters: &'a Value,
    }
    let empty = serde_json::json!({"type": "object"});
    let entry = Entry {
        kind: "function",
        function: Function {
            name: tool.get("name").and_then(Value::as_str).unwrap_or_default(),
            description: tool.get("description").and_then(Value::as_str),
            parameters: tool.get("inputSchema").unwrap_or(&empty),
        },
    };
    serde_json::to_string(&entry).unwrap_or_default()
}

/// The whole list as a host sends it: the JSON array of the entries; nothing at all for no tool.
pub fn list_text(tools: &[Value]) -> String {
    if tools.is_empty() {
        return String::new();
    }
    let entries: Vec<String> = tools.iter().map(tool_entry).collect();
    format!("[{}]", entries.join(","))
}

/// Counts per encoding, by the encoding's name (`{"o200k_base": 812, "cl100k_base": 830}`).
pub type PerEncoding = std::collections::BTreeMap<String, u64>;

fn per_encoding(text: &str) -> PerEncoding {
    (Encoding::ALL.iter())
        .map(|e| (e.name().to_owned(), e.count(text)))
        .collect()
}

/// One tokenizer as `tokens.json` names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokenizer {
    pub name: String,
    /// The implementation and its version (`tiktoken-rs 0.12.1`).
    pub implementation: String,
    /// Whose tokenizer it is.
    pub models: String,
}

/// One tool's counts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolTokens {
    pub name: String,
    pub tokens: PerEncoding,
}

/// What `tokens.json` holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenCounts {
    pub format_version: u32,
    pub counted_as: String,
    pub tokenizers: Vec<Tokenizer>,
    /// The whole list (empty list: 0).
    pub list: PerEncoding,
    /// The server's instructions; `None` when it has none.
    pub instructions: Option<PerEncoding>,
    /// Per tool, in `tools.json`'s order.
    pub tools: Vec<ToolTokens>,
}

impl TokenCounts {
    /// The counts of a snapshot's tools and instructions.
    pub fn of(snapshot: &Snapshot) -> Self {
        let instructions = (snapshot.server.get("instructions"))
            .and_then(Value::as_str)
            .map(per_encoding);
        Self {
            format_version: TOKENS_FORMAT,
            counted_as: COUNTED_AS.to_owned(),
            tokenizers: (Encoding::ALL.iter())
                .map(|e| Tokenizer {
                    name: e.name().to_owned(),
                    implementation: TOKENIZER_CRATE.to_owned(),
                    models: e.models().to_owned(),
                })
                .collect(),
            list: per_encoding(&list_text(&snapshot.tools)),
            instructions,
            tools: (snapshot.tools.iter())
                .map(|t| ToolTokens {
                    name: (t.get("name").and_then(Value::as_str))
                        .unwrap_or_default()
                        .to_owned(),
                    tokens: per_encoding(&tool_entry(t)),
                })
                .collect(),
        }
    }

    /// The counts stored beside a snapshot when they were made the way this build makes them
    /// (same format and tokenizers), else the counts computed from the snapshot itself; and
    /// where they came from (`tokens.json` or `tools.json`).
    pub fn stored_or_computed(dir: &Path, snapshot: &Snapshot) -> (Self, &'static str) {
        let fresh = Self::of(snapshot);
        let stored = std::fs::read_to_string(dir.join(TOKENS_JSON))
            .ok()
            .and_then(|text| serde_json::from_str::<Self>(&text).ok())
            .filter(|s| s.format_version == fresh.format_version)
            .filter(|s| s.tokenizers == fresh.tokenizers);
        match stored {
            Some(stored) => (stored, TOKENS_JSON),
            None => (fresh, super::model::TOOLS_JSON),
        }
    }

    /// One tool's count in `encoding`, if the tool is listed.
    pub fn tool(&self, name: &str, encoding: Encoding) -> Option<u64> {
        let tool = self.tools.iter().find(|t| t.name == name)?;
        tool.tokens.get(encoding.name()).copied()
    }

    /// The list's count in `encoding` (0 when not recorded).
    pub fn list_in(&self, encoding: Encoding) -> u64 {
        self.list.get(encoding.name()).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn known_texts_count_as_tiktoken_counts_them() {
        // Counts from OpenAI's tokenizer page / tiktoken for these strings.
        assert_eq!(Encoding::O200k.count("hello world"), 2);
        assert_eq!(Encoding::Cl100k.count("hello world"), 2);
        assert_eq!(Encoding::O200k.count(""), 0);
        // A special token's text in a description is ordinary text, never one special token.
        assert!(Encoding::Cl100k.count("<|endoftext|>") > 1);
    }

    #[test]
    fn a_tool_is_the_openai_entry_without_title_or_annotations() {
        let tool = json!({"name": "t", "title": "T", "annotations": {"readOnlyHint": true},
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}}});
        assert_eq!(
            tool_entry(&tool),
            r#"{"type":"function","function":{"name":"t","parameters":{"properties":{"q":{"type":"string"}},"type":"object"}}}"#
        );
        let described = json!({"name": "t", "description": "Finds.", "inputSchema": {}});
        assert!(tool_entry(&described).contains(r#""description":"Finds.""#));
        assert_eq!(list_text(&[]), "");
        assert_eq!(
            list_text(&[tool.clone(), described.clone()]),
            format!("[{},{}]", tool_entry(&tool), tool_entry(&described))
        );
    }

    #[test]
    fn counts_of_a_snapshot_per_tool_list_and_instructions() {
        let snapshot = Snapshot {
            tools: vec![
                json!({"name": "a", "description": "Looks up an issue by number.",
                    "inputSchema": {"type": "object"}}),
                json!({"name": "b", "inputSchema": {"type": "object"}}),
            ],
            server: json!({"instructions": "Use a first."}),
            ..Snapshot::default()
        };
        let counts = TokenCounts::of(&snapshot);
        assert_eq!(counts.tools.len(), 2);
        let (a, b) = (
            counts.tool("a", Encoding::O200k).unwrap(),
            counts.tool("b", Encoding::O200k).unwrap(),
        );
        assert!(a > b && b > 5, "{a} {b}");
        let list = counts.list_in(Encoding::O200k);
        assert!(
            list + 2 >= a + b && list <= a + b + 3,
            "{list} vs {a} + {b}"
        );
        assert_eq!(counts.instructions.unwrap()["o200k_base"], 4);
        let none = TokenCounts::of(&Snapshot::default());
        assert_eq!(
            (none.list_in(Encoding::O200k), none.instructions),
            (0, None)
        );
    }

    #[test]
    fn a_stored_file_of_another_format_is_counted_again() {
        let dir = tempfile::tempdir().unwrap();
        let snapshot = Snapshot {
            tools: vec![json!({"name": "a", "inputSchema": {"type": "object"}})],
            ..Snapshot::default()
        };
        let (_, from) = TokenCounts::stored_or_computed(dir.path(), &snapshot);
        assert_eq!(from, "tools.json");
        let mut stored = TokenCounts::of(&snapshot);
        stored.list.insert("o200k_base".into(), 999);
        let write = |c: &TokenCounts| {
            let text = serde_json::to_string(c).unwrap();
            std::fs::write(dir.path().join(TOKENS_JSON), text).unwrap();
        };
        write(&stored);
        let (read, from) = TokenCounts::stored_or_computed(dir.path(), &snapshot);
        assert_eq!((read.list_in(Encoding::O200k), from), (999, "tokens.json"));
        stored.format_version = TOKENS_FORMAT + 1;
        write(&stored);
        let (read, from) = TokenCounts::stored_or_computed(dir.path(), &snapshot);
        assert_ne!(read.list_in(Encoding::O200k), 999);
        assert_eq!(from, "tools.json");
    }

    #[test]
    fn the_named_crate_version_is_the_locked_one() {
        let lock = include_str!("../../Cargo.lock");
        let version = TOKENIZER_CRATE.trim_start_matches("tiktoken-rs ");
        assert!(
            lock.contains(&format!("name = \"tiktoken-rs\"\nversion = \"{version}\"")),
            "Cargo.lock locks another tiktoken-rs than {TOKENIZER_CRATE}"
        );
    }

    #[test]
    fn building_both_encodings_takes_well_under_a_few_seconds() {
        let started = std::time::Instant::now();
        for e in Encoding::ALL {
            e.count("x");
        }
        // Measured (debug build, deps at opt-level 1): see docs/tokens.md. A loose bound: the
        // point is that it is built once, not per count.
        let built = started.elapsed();
        let again = std::time::Instant::now();
        for e in Encoding::ALL {
            e.count("x");
        }
        assert!(
            again.elapsed() < built,
            "{:?} vs {built:?}",
            again.elapsed()
        );
    }
}
