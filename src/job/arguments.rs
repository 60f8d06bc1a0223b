//! A call's arguments checked against its tool's input schema as each server lists it: the
//! names the schemas do not know (with the nearest one they do, and the list they take), and
//! the ones they require that a call mcpeval sends itself leaves out.

use std::collections::BTreeSet;

use rmcp::model::Tool;

use crate::suite::suggestion;

/// The most argument names a message lists before it says how many more there are.
const LISTED: usize = 12;

/// What the input schemas of one tool say about its arguments, on the baseline and the
/// candidate (a side that does not list the tool has no schema).
pub(super) struct Schema {
    /// Every property a schema names: required ones first (as written), then the others
    /// (sorted).
    known: Vec<String>,
    /// The properties each side's schema requires (baseline, candidate).
    required: [Option<BTreeSet<String>>; 2],
    /// A schema names no property, or takes more than it names (`additionalProperties` not
    /// `false`-or-absent): unknown names prove nothing.
    open: bool,
}

/// A required argument a call leaves out, and whether every side that lists the tool requires
/// it (else only `side` does).
pub(super) struct Missing {
    pub name: String,
    pub everywhere: bool,
    pub side: &'static str,
}

impl Schema {
    /// The schemas of the baseline's tools named one of `base_names` and the candidate's named
    /// one of `cand_names` (`None` when neither side lists any).
    pub fn of(
        baseline: &[Tool],
        candidate: &[Tool],
        base_names: &[&str],
        cand_names: &[&str],
    ) -> Option<Schema> {
        let pick = |tools: &[Tool], names: &[&str]| -> Vec<Tool> {
            (tools.iter())
                .filter(|t| names.contains(&t.name.as_ref()))
                .cloned()
                .collect()
        };
        let sides = [pick(baseline, base_names), pick(candidate, cand_names)];
        if sides.iter().all(Vec::is_empty) {
            return None;
        }
        let mut required_first: Vec<String> = Vec::new();
        let mut others = BTreeSet::new();
        let mut open = false;
        let mut required = [None, None];
        for (side, tools) in sides.iter().enumerate() {
            for tool in tools {
                let schema = &tool.input_schema;
                let props = schema.get("properties").and_then(|p| p.as_object());
                let closed = matches!(
                    schema.get("additionalProperties"),
                    None | Some(serde_json::Value::Bool(false))
                );
                open |= props.is_none_or(|p| p.is_empty()) || !closed;
                let needs: Vec<String> = (schema.get("required"))
                    .and_then(|r| r.as_array())
                    .map(|r| r.iter().filter_map(|v| v.as_str().map(str::to_owned)))
                    .into_iter()
                    .flatten()
                    .collect();
                for name in &needs {
                    if !required_first.contains(name) {
                        required_first.push(name.clone());
                    }
                }
                others.extend(props.into_iter().flat_map(|p| p.keys().cloned()));
                let set: &mut BTreeSet<String> = required[side].get_or_insert_with(BTreeSet::new);
                set.extend(needs);
            }
        }
        let rest = others.into_iter().filter(|n| !required_first.contains(n));
        let known = required_first.iter().cloned().chain(rest).collect();
        Some(Schema {
            known,
            required,
            open,
        })
    }

    /// The names of `given` the schemas do not know, each with what to say after it: " (did
    /// you mean `x`?)" when one is close, then "; `tool` takes `a`, `b`" (`label` names the
    /// tool).
    pub fn unknown<'a>(
        &self,
        given: impl IntoIterator<Item = &'a str>,
        label: &str,
    ) -> Vec<(&'a str, String)> {
        if self.open {
            return Vec::new();
        }
        let known: Vec<&str> = self.known.iter().map(String::as_str).collect();
        (given.into_iter())
            .filter(|name| !known.contains(name))
            .map(|name| {
                let hint = suggestion(name, &known);
                (name, format!("{hint}; {label} takes {}", self.takes()))
            })
            .collect()
    }

    /// The arguments a schema requires that `given` leaves out.
    pub fn missing(&self, given: &BTreeSet<&str>) -> Vec<Missing> {
        let listed: Vec<usize> = (0..2).filter(|&s| self.required[s].is_some()).collect();
        let mut out = Vec::new();
        for name in self.known.iter().filter(|n| !given.contains(n.as_str())) {
            let requiring: Vec<usize> = (listed.iter().copied())
                .filter(|&s| self.required[s].as_ref().is_some_and(|r| r.contains(name)))
                .collect();
            let Some(&first) = requiring.first() else {
                continue;
            };
            out.push(Missing {
                name: name.clone(),
                everywhere: requiring == listed,
                side: ["baseline", "candidate"][first],
            });
        }
        out
    }

    /// "`a`, `b`, `c`" (at most [`LISTED`] names, then how many more), or "no arguments".
    fn takes(&self) -> String {
        if self.known.is_empty() {
            return "no arguments".to_owned();
        }
        let mut names: Vec<String> = (self.known.iter().take(LISTED))
            .map(|n| format!("`{n}`"))
            .collect();
        if self.known.len() > LISTED {
            names.push(format!("and {} more", self.known.len() - LISTED));
        }
        names.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(name: &str, schema: serde_json::Value) -> Tool {
        serde_json::from_value(json!({"name": name, "inputSchema": schema})).unwrap()
    }

    fn read_text_file() -> Tool {
        tool(
            "read_text_file",
            json!({"type": "object", "required": ["path"],
                   "properties": {"tail": {}, "path": {}, "head": {}}}),
        )
    }

    #[test]
    fn unknown_names_get_the_nearest_and_the_list_required_first() {
        let tools = [read_text_file()];
        let schema = Schema::of(&tools, &tools, &["read_text_file"], &["read_text_file"]).unwrap();
        let found = schema.unknown(["filename", "pth", "head"], "`read_text_file`");
        let takes = "; `read_text_file` takes `path`, `head`, `tail`";
        assert_eq!(
            found,
            [
                ("filename", takes.to_owned()),
                ("pth", format!(" (did you mean `path`?){takes}")),
            ]
        );
    }

    #[test]
    fn a_schema_open_to_more_or_naming_nothing_refuses_no_name() {
        for schema in [
            json!({"type": "object"}),
            json!({"type": "object", "properties": {"a": {}}, "additionalProperties": true}),
        ] {
            let tools = [tool("t", schema)];
            let schema = Schema::of(&tools, &tools, &["t"], &["t"]).unwrap();
            assert!(schema.unknown(["zzz"], "`t`").is_empty());
        }
    }

    #[test]
    fn a_required_name_left_out_says_which_sides_require_it() {
        let base = [read_text_file()];
        let cand = [tool(
            "read_text_file",
            json!({"type": "object", "required": ["path", "encoding"],
                   "properties": {"path": {}, "encoding": {}}}),
        )];
        let schema = Schema::of(&base, &cand, &["read_text_file"], &["read_text_file"]).unwrap();
        let missing = schema.missing(&BTreeSet::new());
        let seen: Vec<(&str, bool, &str)> = (missing.iter())
            .map(|m| (m.name.as_str(), m.everywhere, m.side))
            .collect();
        assert_eq!(
            seen,
            [("path", true, "baseline"), ("encoding", false, "candidate")]
        );
        assert!(schema
            .missing(&BTreeSet::from(["path", "encoding"]))
            .is_empty());
        // Only one side lists the tool: what it requires is required everywhere it is.
        let schema = Schema::of(&[], &cand, &["read_text_file"], &["read_text_file"]).unwrap();
        assert!(schema
            .missing(&BTreeSet::new())
            .iter()
            .all(|m| m.everywhere));
        assert!(Schema::of(&[], &[], &["x"], &["x"]).is_none());
    }
}
