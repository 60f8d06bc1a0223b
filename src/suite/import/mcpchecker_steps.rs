//! mcpchecker's task steps as mcpeval fixtures: a tool call of an MCP server the task requires
//! (`ALIAS.TOOL: {args, expect}`) becomes a `setup` or `teardown` call or an `expect.after`
//! check; `script`, `http` and extension steps are listed as not converted, each with why; and
//! the `{steps.…}`, `{random.…}`, `{env.…}` placeholders mcpchecker fills at run time are found.
//!
//! The format: mcpchecker's docs/reference/task-format.md ("Step Format", "Using Extensions")
//! and pkg/steps/mcp.go, pkg/task/run.go (`spec.requires[].mcpServer`).

use serde_json::{Map, Value};

use super::case::{After, Case, Fixture};

/// The phase a step list belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Setup,
    Verify,
    Cleanup,
}

impl Phase {
    fn key(self) -> &'static str {
        match self {
            Self::Setup => "setup",
            Self::Verify => "verify",
            Self::Cleanup => "cleanup",
        }
    }

    /// The mcpeval key its tool calls become.
    fn target(self) -> &'static str {
        match self {
            Self::Setup => "`setup`",
            Self::Verify => "`expect.after`",
            Self::Cleanup => "`teardown`",
        }
    }
}

/// The aliases a task names its required servers and extensions by (`spec.requires`: `as`, or
/// the `mcpServer` / `extension` name); an extension's alias with its name.
#[derive(Debug, Default)]
pub struct Requires {
    pub servers: Vec<String>,
    pub extensions: Vec<(String, String)>,
}

impl Requires {
    pub fn of(body: &Map<String, Value>) -> Self {
        let mut requires = Self::default();
        for item in body
            .get("requires")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let text = |key| item.get(key).and_then(Value::as_str);
            match (text("mcpServer"), text("extension")) {
                (Some(server), None) => requires
                    .servers
                    .push(text("as").unwrap_or(server).to_owned()),
                (None, Some(extension)) => requires.extensions.push((
                    text("as").unwrap_or(extension).to_owned(),
                    extension.to_owned(),
                )),
                _ => {}
            }
        }
        requires
    }
}

/// The steps of one phase (`None`, `null` and `[]` say nothing); `judge` converts an
/// `llmJudge` step of `verify`.
pub fn steps(
    phase: Phase,
    value: Option<&Value>,
    requires: &Requires,
    case: &mut Case,
    judge: fn(&Value, &mut Case),
) {
    let steps = match value {
        None | Some(Value::Null) => return,
        Some(Value::Array(steps)) => steps,
        Some(other) => {
            case.not_converted(format!("`{}` {other}: not a list of steps", phase.key()));
            return;
        }
    };
    for step in steps {
        // A step is a one-key mapping (its type), with an optional `id`.
        let entries: Vec<(&String, &Value)> = step
            .as_object()
            .map(|o| o.iter().filter(|(k, _)| *k != "id").collect())
            .unwrap_or_default();
        let [(kind, body)] = entries.as_slice() else {
            case.not_converted(format!(
                "{} step {step}: expected one step type",
                phase.key()
            ));
            continue;
        };
        step_of(phase, kind, body, requires, case, judge);
    }
}

fn step_of(
    phase: Phase,
    kind: &str,
    body: &Value,
    requires: &Requires,
    case: &mut Case,
    judge: fn(&Value, &mut Case),
) {
    let what = format!("{} step `{kind}`", phase.key());
    let only_mcp = format!(
        "mcpeval's {} makes MCP tool calls on the trial's server only",
        phase.target()
    );
    match kind {
        "llmJudge" if phase == Phase::Verify => judge(body, case),
        "llmJudge" => case.not_converted(format!("{what} (a judge belongs in `verify`)")),
        "script" => case.not_converted(format!("{what} (a shell script; {only_mcp})")),
        "http" => case.not_converted(format!("{what} (an HTTP request; {only_mcp})")),
        _ => match kind.split_once('.') {
            Some((alias, tool)) if requires.servers.iter().any(|s| s == alias) => {
                tool_call(phase, kind, tool, body, requires, case)
            }
            Some((alias, _)) => {
                let extension = requires.extensions.iter().find(|(a, _)| a == alias);
                let whose = if let Some((_, name)) = extension {
                    let named = if name == alias {
                        format!("`{name}`")
                    } else {
                        format!("`{name}` (as `{alias}`)")
                    };
                    format!("an operation of the mcpchecker extension {named}")
                } else {
                    format!(
                        "`{alias}` is no MCP server the task requires (`spec.requires[].mcpServer`): \
                         an extension operation"
                    )
                };
                case.not_converted(format!(
                    "{what} ({whose}, run outside the MCP server; {only_mcp})"
                ))
            }
            None => case.not_converted(format!("{what} (a step type the importer does not know)")),
        },
    }
}

/// `ALIAS.TOOL: {args: {…}, expect: {isError, content}}`, a call of a required MCP server.
fn tool_call(
    phase: Phase,
    kind: &str,
    tool: &str,
    body: &Value,
    requires: &Requires,
    case: &mut Case,
) {
    let what = format!("{} step `{kind}`", phase.key());
    let args = match body.get("args") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(args)) => args.clone(),
        Some(other) => {
            case.not_converted(format!("{what}: `args` {other} is not a mapping"));
            return;
        }
    };
    let named = placeholders(&Value::Object(args.clone()).to_string());
    if !named.is_empty() {
        case.not_converted(format!(
            "{what}: its `args` name {}, filled by mcpchecker at run time (mcpeval sends \
             fixture arguments as written)",
            named.join(", ")
        ));
        return;
    }
    let expect = body.get("expect");
    let is_error = expect
        .and_then(|e| e.get("isError"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if expect.and_then(|e| e.get("content")).is_some() {
        case.not_converted(format!(
            "{what}: its `expect.content` (a match on the JSON of the result's content blocks; \
             mcpeval's `after` checks take `result_contains` or `structured`: add one by hand)"
        ));
    }
    if requires.servers.len() > 1 {
        case.note(format!(
            "the task requires {} MCP servers; mcpeval makes every fixture call on the one server \
             under test",
            requires.servers.len()
        ));
    }
    let call = Fixture {
        tool: tool.to_owned(),
        args,
    };
    match phase {
        Phase::Setup | Phase::Cleanup if is_error => case.not_converted(format!(
            "{what} (it expects an error; a {} call must succeed)",
            phase.target()
        )),
        Phase::Setup => case.setup.push(call),
        Phase::Cleanup => case.teardown.push(call),
        Phase::Verify => case.after.push(After { call, is_error }),
    }
}

/// The placeholders mcpchecker fills at run time (`{steps.NAME.OUTPUT}`, `{random.…}`,
/// `{env.NAME}`) in `text`, each once, in order.
pub fn placeholders(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let end = after
            .find(['}', '{'])
            .filter(|&e| after[e..].starts_with('}'));
        if let Some(end) = end {
            let inner = &after[..end];
            let source = ["steps.", "random.", "env."]
                .iter()
                .any(|s| inner.starts_with(s) && inner.len() > s.len());
            if source && !inner.contains(char::is_whitespace) {
                let whole = format!("`{{{inner}}}`");
                if !found.contains(&whole) {
                    found.push(whole);
                }
            }
        }
        rest = after;
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn converted(phase: Phase, steps_yaml: &str, requires: &str) -> Case {
        let body = crate::suite::import::source::parse(requires).unwrap();
        let requires = Requires::of(body.as_object().unwrap());
        let steps_value = crate::suite::import::source::parse(steps_yaml).unwrap();
        let mut case = Case::named("c");
        steps(
            phase,
            Some(&steps_value),
            &requires,
            &mut case,
            |_, case| case.rubrics.push("judged".into()),
        );
        case
    }

    #[test]
    fn tool_calls_of_required_servers_become_fixtures() {
        let requires = "requires: [{mcpServer: kubernetes, as: k8s}, {extension: kubernetes}]";
        let case = converted(
            Phase::Setup,
            "- k8s.namespaces_create: {args: {name: evals}}\n- script: {inline: x}\n",
            requires,
        );
        assert_eq!(case.setup.len(), 1);
        assert_eq!(case.setup[0].tool, "namespaces_create");
        assert_eq!(case.setup[0].args["name"], "evals");
        assert!(case.not_converted[0].contains(
            "setup step `script` (a shell script; mcpeval's `setup` makes MCP tool calls"
        ));

        let case = converted(
            Phase::Verify,
            "- id: got\n  k8s.pods_get: {args: {name: web}, expect: {isError: true}}\n\
             - kubernetes.listContexts:\n- llmJudge: {contains: x}\n- k8s.pods_list: {expect: {content: {match: web}}}\n",
            requires,
        );
        assert_eq!(case.after.len(), 2);
        assert!(case.after[0].is_error);
        assert_eq!(case.after[1].call.tool, "pods_list");
        assert_eq!(case.rubrics, ["judged"]);
        let missed = case.not_converted.join("\n");
        assert!(missed.contains("verify step `kubernetes.listContexts` (an operation of the mcpchecker extension `kubernetes`"), "{missed}");
        assert!(missed.contains("`expect.content`"), "{missed}");

        let case = converted(
            Phase::Cleanup,
            "- k8s.pods_delete: {args: {name: \"{steps.setup_0.name}\"}}\n- other.op: {}\n- k8s.x: {expect: {isError: true}}\n",
            requires,
        );
        assert!(case.teardown.is_empty());
        let missed = case.not_converted.join("\n");
        assert!(missed.contains("`{steps.setup_0.name}`"), "{missed}");
        assert!(
            missed.contains("`other` is no MCP server the task requires"),
            "{missed}"
        );
        assert!(missed.contains("it expects an error"), "{missed}");
    }

    #[test]
    fn empty_phases_say_nothing() {
        for yaml in ["null", "[]"] {
            let case = converted(Phase::Setup, yaml, "{}");
            assert!(
                case.not_converted.is_empty(),
                "{yaml}: {:?}",
                case.not_converted
            );
        }
    }

    #[test]
    fn placeholders_are_found_once_each() {
        assert_eq!(
            placeholders("{steps.kubernetes.listContexts.count} contexts, {env.HOME} {steps.kubernetes.listContexts.count}"),
            ["`{steps.kubernetes.listContexts.count}`", "`{env.HOME}`"]
        );
        assert!(placeholders("a {json: 1} {steps.} {other.x} {steps.a b}").is_empty());
        assert_eq!(placeholders("{{random.id}}"), ["`{random.id}`"]);
    }
}
