//! The token cost of a contract diff: the tool list's, the instructions' and each tool's count on
//! both sides, per tokenizer, with the change in tokens and per cent; `diff.json`'s `tokens` and
//! the lines `mcpeval diff` and `check` print.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::tokens::{Encoding, PerEncoding, TokenCounts};

/// A count on both sides and its change.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Counted {
    /// `None`: the side has no such item (a tool added or removed, no instructions).
    pub before: Option<u64>,
    pub after: Option<u64>,
    /// `after - before`, an absent side counting 0.
    pub change: i64,
    /// The change as a share of `before`, in per cent (2 decimals); `None` when `before` is 0
    /// or absent.
    pub percent: Option<f64>,
}

impl Counted {
    pub fn new(before: Option<u64>, after: Option<u64>) -> Self {
        let (b, a) = (before.unwrap_or(0), after.unwrap_or(0));
        let change = a as i64 - b as i64;
        let percent = (b > 0).then(|| (change as f64 * 10_000.0 / b as f64).round() / 100.0);
        Self {
            before,
            after,
            change,
            percent,
        }
    }

    /// `812 → 1050 (+238, +29.3 %)`; an added item `added, 120`; a removed one `removed, was 80`.
    pub fn words(&self) -> String {
        match (self.before, self.after) {
            (None, Some(a)) => format!("added, {a}"),
            (Some(b), None) => format!("removed, was {b}"),
            (b, a) => {
                let (b, a) = (b.unwrap_or(0), a.unwrap_or(0));
                format!("{b} → {a} ({})", self.change_words())
            }
        }
    }

    /// `tool list +238 tokens (+29.3 %)`, or `tool list +238 tokens` when there is no per cent.
    pub fn list_words(&self) -> String {
        match self.percent {
            Some(p) => format!("tool list {:+} tokens ({:+.1} %)", self.change, p),
            None => format!("tool list {:+} tokens", self.change),
        }
    }

    /// `+238, +29.3 %`, or `+238` when there is no per cent.
    pub fn change_words(&self) -> String {
        match self.percent {
            Some(p) => format!("{:+}, {:+.1} %", self.change, p),
            None => format!("{:+}", self.change),
        }
    }
}

/// One tool whose count changed (or that was added or removed), per tokenizer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolChange {
    pub name: String,
    #[serde(flatten)]
    pub tokens: BTreeMap<String, Counted>,
}

/// `diff.json`'s `tokens`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TokenDiff {
    /// Where each side's counts came from: `tokens.json`, or `tools.json` (counted for the diff:
    /// a snapshot without `tokens.json`, or one counted another way).
    pub sources: BTreeMap<String, String>,
    pub list: BTreeMap<String, Counted>,
    pub instructions: BTreeMap<String, Counted>,
    /// Tools whose count changed, the largest `o200k_base` change (either way) first.
    pub tools: Vec<ToolChange>,
}

fn counted(before: Option<&PerEncoding>, after: Option<&PerEncoding>) -> BTreeMap<String, Counted> {
    (Encoding::ALL.iter())
        .map(|e| {
            let get = |side: Option<&PerEncoding>| side.and_then(|m| m.get(e.name()).copied());
            (e.name().to_owned(), Counted::new(get(before), get(after)))
        })
        .collect()
}

impl TokenDiff {
    /// Compares two sides' counts; `sources` as [`TokenCounts::stored_or_computed`] said.
    pub fn of(
        (base, base_from): (&TokenCounts, &str),
        (cand, cand_from): (&TokenCounts, &str),
    ) -> Self {
        let by_name = |c: &TokenCounts| -> BTreeMap<String, PerEncoding> {
            (c.tools.iter())
                .map(|t| (t.name.clone(), t.tokens.clone()))
                .collect()
        };
        let (b, a) = (by_name(base), by_name(cand));
        let mut names: Vec<&String> = b.keys().chain(a.keys()).collect();
        names.sort();
        names.dedup();
        let mut tools: Vec<ToolChange> = names
            .into_iter()
            .filter(|n| b.get(*n) != a.get(*n))
            .map(|n| ToolChange {
                name: n.clone(),
                tokens: counted(b.get(n), a.get(n)),
            })
            .collect();
        let o200k = |t: &ToolChange| t.tokens.get(Encoding::O200k.name()).map_or(0, |c| c.change);
        tools.sort_by_key(|t| std::cmp::Reverse(o200k(t).abs()));
        Self {
            sources: BTreeMap::from([
                ("baseline".to_owned(), base_from.to_owned()),
                ("candidate".to_owned(), cand_from.to_owned()),
            ]),
            list: counted(Some(&base.list), Some(&cand.list)),
            instructions: counted(base.instructions.as_ref(), cand.instructions.as_ref()),
            tools,
        }
    }

    /// The list's count and change in `encoding`.
    pub fn list_in(&self, encoding: Encoding) -> Option<&Counted> {
        self.list.get(encoding.name())
    }

    /// The lines `mcpeval diff` prints under its table: the list and the instructions per
    /// tokenizer, then the largest per-tool changes (at most `top`) in `o200k_base`.
    pub fn lines(&self, top: usize) -> Vec<String> {
        let mut out = Vec::new();
        let per = |m: &BTreeMap<String, Counted>| -> String {
            (Encoding::ALL.iter())
                .filter_map(|e| Some(format!("{} {}", e.name(), m.get(e.name())?.words())))
                .collect::<Vec<_>>()
                .join("; ")
        };
        out.push(format!("tool list tokens: {}", per(&self.list)));
        let instructions = self.instructions.values().next();
        if instructions.is_some_and(|c| c.before.is_some() || c.after.is_some()) {
            out.push(format!("instructions tokens: {}", per(&self.instructions)));
        }
        if !self.tools.is_empty() {
            let shown: Vec<String> = (self.tools.iter().take(top))
                .filter_map(|t| {
                    let c = t.tokens.get(Encoding::O200k.name())?;
                    Some(format!("{} {}", t.name, c.words()))
                })
                .collect();
            let more = match self.tools.len().saturating_sub(top) {
                0 => String::new(),
                n => format!("; {n} more"),
            };
            out.push(format!(
                "tools whose tokens changed (o200k_base, largest first): {}{more}",
                shown.join("; ")
            ));
        }
        if self
            .sources
            .values()
            .any(|s| s != super::tokens::TOKENS_JSON)
        {
            let computed: Vec<&str> = (self.sources.iter())
                .filter(|(_, s)| *s != super::tokens::TOKENS_JSON)
                .map(|(side, _)| side.as_str())
                .collect();
            out.push(format!(
                "(counted from tools.json for the {}: no tokens.json of this format there)",
                computed.join(" and ")
            ));
        }
        out
    }

    /// The list's change in `encoding` in words: `tool list +238 tokens (+29.3 %)`.
    pub fn list_words(&self, encoding: Encoding) -> Option<String> {
        Some(self.list_in(encoding)?.list_words())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::contract::Snapshot;
    use serde_json::json;

    fn counts(tools: &[(&str, &str)], instructions: Option<&str>) -> TokenCounts {
        let snapshot = Snapshot {
            tools: (tools.iter())
                .map(|(n, d)| json!({"name": n, "description": d, "inputSchema": {"type": "object"}}))
                .collect(),
            server: json!({"instructions": instructions}),
            ..Snapshot::default()
        };
        TokenCounts::of(&snapshot)
    }

    #[test]
    fn changes_are_absolute_and_per_cent_with_added_and_removed_tools() {
        let c = Counted::new(Some(200), Some(250));
        assert_eq!((c.change, c.percent), (50, Some(25.0)));
        assert_eq!(c.words(), "200 → 250 (+50, +25.0 %)");
        assert_eq!(Counted::new(None, Some(9)).words(), "added, 9");
        assert_eq!(Counted::new(Some(9), None).words(), "removed, was 9");
        assert_eq!(Counted::new(Some(0), Some(3)).percent, None);

        let base = counts(&[("a", "Finds."), ("gone", "Old.")], Some("Be brief."));
        let long = "Finds issues by words in their title or body, in every project you can see. \
            Call it before creating an issue, so that no duplicate is made; it returns at most \
            twenty issues, the most recently updated first, with their numbers and states.";
        let cand = counts(&[("a", long), ("new", "New.")], Some("Be brief."));
        let diff = TokenDiff::of((&base, "tokens.json"), (&cand, "tools.json"));
        let names: Vec<&str> = diff.tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names[0], "a", "the largest change first: {names:?}");
        assert_eq!(names.len(), 3);
        let list = diff.list_in(Encoding::O200k).unwrap();
        assert_eq!(
            list.change,
            cand.list_in(Encoding::O200k) as i64 - base.list_in(Encoding::O200k) as i64
        );
        assert!(list.change > 10 && list.percent.unwrap() > 10.0, "{list:?}");
        assert_eq!(diff.instructions["o200k_base"].change, 0);
        let lines = diff.lines(5).join("\n");
        assert!(lines.contains("tool list tokens: o200k_base "), "{lines}");
        assert!(lines.contains("new added, ") && lines.contains("gone removed, was "));
        assert!(
            lines.contains("counted from tools.json for the candidate"),
            "{lines}"
        );
        let words = diff.list_words(Encoding::O200k).unwrap();
        assert!(
            words.starts_with("tool list +") && words.ends_with(" %)"),
            "{words}"
        );
    }

    #[test]
    fn the_json_names_each_tokenizer() {
        let base = counts(&[("a", "Finds.")], None);
        let diff = TokenDiff::of((&base, "tokens.json"), (&base, "tokens.json"));
        let v = serde_json::to_value(&diff).unwrap();
        assert_eq!(v["list"]["o200k_base"]["change"], 0);
        assert_eq!(
            v["instructions"]["cl100k_base"]["before"],
            serde_json::Value::Null
        );
        assert_eq!(v["tools"], json!([]));
        assert_eq!(diff.lines(5).len(), 1, "{:?}", diff.lines(5));
    }
}
