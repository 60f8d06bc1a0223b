//! The requests `mcpeval init` drafts call tasks from: what the server lists, and per tool a
//! valid call, one without a required argument and one with a wrong type; an unknown tool;
//! each listed resource and prompt. A tool that may change state is sent only where the guard
//! lets init call it (src/job/init/guard.rs); elsewhere its call is drafted unverified.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::args_from_schema::{picked_args, required, wrong_type_args};
use super::calls::Probe;
use super::draft::slug;
use super::guard::{change_words, Guard};
use super::teardown::derive;
use super::unverified::UnverifiedCall;
use super::values::Known;
use super::write::{LeftOut, Report};
use crate::contract::writes::is_read_only;
use crate::mcp::{McpConnection, McpError};
use crate::suite::CallSpec;

/// The name of a tool no server should list: the unknown-tool probe calls it.
const UNKNOWN_TOOL: &str = "mcpeval_no_such_tool";
/// How many listed resources get a task at most.
const MAX_RESOURCES: usize = 20;
/// What the server lists.
pub struct Listed {
    pub tools: Vec<rmcp::model::Tool>,
    resources: Vec<rmcp::model::Resource>,
    templates: usize,
    prompts: Vec<rmcp::model::Prompt>,
}

impl Listed {
    pub async fn read(conn: &McpConnection) -> Result<Self, McpError> {
        let mut tools = conn.list_tools().await?;
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        let mut resources = conn.list_resources().await?;
        resources.sort_by(|a, b| a.uri.cmp(&b.uri));
        let templates = conn.list_resource_templates().await?.len();
        let mut prompts = conn.list_prompts().await?;
        prompts.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Self {
            tools,
            resources,
            templates,
            prompts,
        })
    }
}

/// The requests to send: per tool kept a valid call, a missing required argument and a wrong
/// type; one unknown tool; each listed resource; each prompt. Tools left out are noted. A tool
/// that may change state is left out without `--include-writes`; with it, its calls are sent
/// where `guard` lets init call it, and otherwise its valid call is drafted unverified (with a
/// teardown where one is derived). With `only`, the calls of those tools alone.
pub fn probes(
    listed: &Listed,
    include_writes: bool,
    guard: &Guard,
    only: Option<&BTreeSet<String>>,
    known: &Known,
    report: &mut Report,
) -> Vec<Probe> {
    let mut out = Vec::new();
    for tool in &listed.tools {
        let name = tool.name.to_string();
        if only.is_some_and(|o| !o.contains(&name)) {
            continue;
        }
        let writes = !is_read_only(tool);
        if writes && !include_writes {
            let why = format!(
                "writes ({}); --include-writes drafts its calls",
                change_words(tool)
            );
            report.left_out.push(LeftOut::tool(&name, why));
            continue;
        }
        let schema = Value::Object((*tool.input_schema).clone());
        let mut drafted = tool_probes(&name, &schema, writes, known);
        if writes && !guard.may_call(tool) {
            // Only the valid call: what a malformed one answers (an error result or a
            // JSON-RPC error) cannot be guessed without sending it.
            let probe = drafted.swap_remove(0);
            let teardown = match &probe.request {
                CallSpec::Tool { args, .. } => derive(&name, args, &listed.tools),
                _ => None,
            };
            report
                .unverified
                .calls
                .push(UnverifiedCall { probe, teardown });
            continue;
        }
        out.extend(drafted);
    }
    let left_out = &mut report.left_out;
    if only.is_some() {
        dedupe_ids(&mut out);
        return out;
    }
    out.push(Probe {
        id: "unknown-tool".into(),
        request: CallSpec::Tool {
            name: UNKNOWN_TOOL.into(),
            args: Default::default(),
        },
        why: format!("a tool the server does not list (`{UNKNOWN_TOOL}`)"),
        writes: false,
        malformed: true,
        chosen: Vec::new(),
    });
    for resource in listed.resources.iter().take(MAX_RESOURCES) {
        out.push(Probe {
            id: format!("resource-{}", slug(&resource.uri)),
            request: CallSpec::Resource {
                uri: resource.uri.clone(),
            },
            why: format!("reads the listed resource `{}`", resource.uri),
            writes: false,
            malformed: false,
            chosen: Vec::new(),
        });
    }
    if listed.resources.len() > MAX_RESOURCES {
        let n = listed.resources.len() - MAX_RESOURCES;
        let why = format!("only the first {MAX_RESOURCES} resources (by URI) get a task");
        left_out.push(LeftOut::new(&format!("{n} more resource(s)"), why));
    }
    if listed.templates > 0 {
        let what = format!("{} resource template(s)", listed.templates);
        let why = "a template needs values for its URI that its listing does not give";
        left_out.push(LeftOut::new(&what, why.into()));
    }
    out.extend(listed.prompts.iter().map(|p| prompt_probe(p, known)));
    dedupe_ids(&mut out);
    out
}

/// A tool's probes: a valid call (its values as [`super::values`] picks them), one without its
/// first required argument, one with a wrong type.
fn tool_probes(name: &str, schema: &Value, writes: bool, known: &Known) -> Vec<Probe> {
    let slug = slug(name);
    let probe = |id: String, args, why: String, malformed| Probe {
        id,
        request: CallSpec::Tool {
            name: name.to_owned(),
            args,
        },
        why,
        writes,
        malformed,
        chosen: Vec::new(),
    };
    let picked = picked_args(schema, known);
    let args: serde_json::Map<String, Value> = (picked.iter())
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect();
    let shown = match args.is_empty() {
        true => "no arguments".to_owned(),
        false => format!("arguments from {}", sources_words(&picked)),
    };
    let mut valid = probe(format!("call-{slug}"), args.clone(), shown, false);
    valid.chosen = (picked.into_iter())
        .filter(|(_, _, s)| s.chosen())
        .map(|(k, v, _)| (k, v))
        .collect();
    let mut out = vec![valid];
    if let Some(first) = required(schema).first() {
        let mut without = args.clone();
        without.remove(*first);
        let why = format!("without `{first}`, which the input schema requires");
        out.push(probe(
            format!("call-{slug}-without-{}", self::slug(first)),
            without,
            why,
            true,
        ));
    }
    if let Some((param, wrong)) = wrong_type_args(schema, known) {
        let why = format!("`{param}` of the wrong type");
        out.push(probe(format!("call-{slug}-wrong-type"), wrong, why, false));
    }
    out
}

/// Where a call's values came from, in words: `its input schema, the descriptions and the
/// server's command line`.
fn sources_words(picked: &[(String, Value, super::values::Source)]) -> String {
    use super::values::Source;
    let mut words: Vec<&str> = Vec::new();
    for (_, _, source) in picked {
        let word = match source {
            Source::Default | Source::Example | Source::Enum => "its input schema",
            Source::Description => "the parameters' descriptions",
            Source::Format => "their formats",
            Source::CommandLine => "the server's command line",
            Source::Neutral => "neutral values of their types",
        };
        if !words.contains(&word) {
            words.push(word);
        }
    }
    match words.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// The listed prompt with its required arguments, each drafted as a tool's string parameter of
/// that name and description would be (prompt arguments are strings: a number is written out).
fn prompt_probe(prompt: &rmcp::model::Prompt, known: &Known) -> Probe {
    let args: BTreeMap<String, String> = (prompt.arguments.iter().flatten())
        .filter(|a| a.required == Some(true))
        .map(|a| {
            let lower = a.name.to_ascii_lowercase();
            let numeric = ["id", "number", "count", "limit", "page"]
                .iter()
                .any(|w| lower == *w || lower.ends_with(&format!("_{w}")));
            let schema = serde_json::json!({
                "type": if numeric { "integer" } else { "string" },
                "description": a.description.clone().unwrap_or_default(),
            });
            let value = match super::values::value_for(&a.name, &schema, known) {
                serde_json::Value::String(text) => text,
                other => other.to_string(),
            };
            (a.name.clone(), value)
        })
        .collect();
    let why = match args.is_empty() {
        true => "the listed prompt without arguments".to_owned(),
        false => "the listed prompt, its required arguments filled".to_owned(),
    };
    Probe {
        id: format!("prompt-{}", slug(&prompt.name)),
        request: CallSpec::Prompt {
            name: prompt.name.clone(),
            args,
        },
        why,
        writes: false,
        malformed: false,
        chosen: Vec::new(),
    }
}

/// Makes the ids unique (`-2`, `-3` after a repeat).
fn dedupe_ids(probes: &mut [Probe]) {
    let mut seen = std::collections::BTreeSet::new();
    for probe in probes {
        let mut id = probe.id.clone();
        let mut n = 2;
        while !seen.insert(id.clone()) {
            id = format!("{}-{n}", probe.id);
            n += 1;
        }
        probe.id = id;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn a_tool_gets_a_valid_call_a_missing_argument_and_a_wrong_type() {
        let schema = serde_json::json!({"type": "object",
            "properties": {"id": {"type": "integer"}}, "required": ["id"]});
        let probes = tool_probes("get_issue", &schema, false, &Known::default());
        let ids: Vec<&str> = probes.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "call-get-issue",
                "call-get-issue-without-id",
                "call-get-issue-wrong-type"
            ]
        );
        assert!(probes[1].malformed && !probes[0].malformed && !probes[2].malformed);
        let mut twice = vec![probes[0].clone(), probes[0].clone()];
        dedupe_ids(&mut twice);
        assert_eq!(twice[1].id, "call-get-issue-2");
    }
}
