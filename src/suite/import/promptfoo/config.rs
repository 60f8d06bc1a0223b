//! A promptfoo config as a whole: its tests (with `defaultTest`), each run with each prompt,
//! and its providers as hints for `mcpeval run`.

use serde_json::{Map, Value};

use super::assertions::answer_or_tools;
use super::prompts::{fill, fill_value, prompts, resolve_vars, user_messages, Prompt, Unfilled};
use super::providers;
use crate::suite::import::case::{Case, Converted};
use crate::suite::import::source::{parse, BadInput, Sources};

/// Converts a promptfoo config (`root`); the files it names (`file://` prompts, vars and
/// tests) are read through `sources`.
pub fn convert(root: &Value, sources: &dyn Sources) -> Result<Converted, BadInput> {
    let Some(config) = root.as_object() else {
        return Err(BadInput::new(
            "not a promptfoo config: expected a mapping with `prompts` and `tests`",
        ));
    };
    if config.contains_key("kind") && !config.contains_key("tests") {
        return Err(BadInput::new(
            "not a promptfoo config (it has a `kind`); an mcpchecker file? use --from mcpchecker",
        ));
    }
    if !config.contains_key("tests") && !config.contains_key("prompts") {
        return Err(BadInput::new(
            "not a promptfoo config: no `tests` and no `prompts`",
        ));
    }
    let mut converted = Converted::default();
    let notes = &mut converted.notes;
    providers::notes(
        config.get("providers"),
        config.get("evaluateOptions"),
        notes,
    );
    let prompts = prompts(config.get("prompts"), sources, notes);
    if config.contains_key("scenarios") {
        notes.push("`scenarios` not converted: write their tests out under `tests`".to_owned());
    }
    let default = default_test(config.get("defaultTest"), sources, notes)?;
    let tests = tests(config.get("tests"), sources, notes)?;
    let context = Context {
        templates: config.get("assertionTemplates"),
        default: &default,
    };
    let label = |name: String, j: usize, prompt: &Prompt| match (&prompt.label, prompts.len()) {
        (_, 1) => name,
        (Some(label), _) => format!("{name} {label}"),
        (None, _) => format!("{name} prompt {}", j + 1),
    };
    for (i, test) in tests.iter().enumerate() {
        let name = test
            .get("description")
            .and_then(Value::as_str)
            .map_or_else(|| format!("test {}", i + 1), str::to_owned);
        for (j, prompt) in prompts.iter().enumerate() {
            if !prompt.conversation {
                let name = label(name.clone(), j, prompt);
                converted
                    .cases
                    .push(context.case(test, prompt, sources, name));
            }
        }
    }
    // A prompt that names `_conversation` runs the tests of one conversation id one after
    // another, each seeing the earlier ones: the turns of one task.
    for (j, prompt) in prompts.iter().enumerate() {
        if !prompt.conversation {
            continue;
        }
        for (id, members) in conversations(&tests, &default) {
            let name = label(id.unwrap_or_else(|| "conversation".to_owned()), j, prompt);
            let mut turns = Vec::new();
            for test in members {
                let mut more = context.turns(test, prompt, sources, &name);
                let options = test.get("options").and_then(Value::as_object);
                let alone = options.and_then(|o| o.get("disableConversationVar"));
                if let (Some(Value::Bool(true)), Some(turn)) = (alone, more.last_mut()) {
                    turn.note(
                        "`options.disableConversationVar`: promptfoo sends this test without the \
                         earlier turns; an mcpeval turn sees the conversation so far",
                    );
                }
                turns.append(&mut more);
            }
            let case = match turns.len() {
                1 => turns.remove(0),
                _ => Case::conversation(name, turns),
            };
            converted.cases.push(case);
        }
    }
    Ok(converted)
}

/// `defaultTest`: a mapping, or a `file://` YAML or JSON file holding one.
fn default_test(
    value: Option<&Value>,
    sources: &dyn Sources,
    notes: &mut Vec<String>,
) -> Result<Map<String, Value>, BadInput> {
    let file = match value {
        None => return Ok(Map::new()),
        Some(Value::Object(default)) => return Ok(default.clone()),
        Some(Value::String(s)) => s.strip_prefix("file://"),
        Some(_) => None,
    };
    let yaml = file.filter(|f| [".yaml", ".yml", ".json"].iter().any(|e| f.ends_with(e)));
    let Some(path) = yaml else {
        let shown = value.map(Value::to_string).unwrap_or_default();
        notes.push(format!(
            "`defaultTest` {shown} not converted: not a mapping or a YAML or JSON file"
        ));
        return Ok(Map::new());
    };
    let text = sources
        .read(std::path::Path::new(path))
        .map_err(|e| BadInput::new(format!("cannot read the `defaultTest` file `{path}`: {e}")))?;
    match parse(&text) {
        Ok(Value::Object(default)) => Ok(default),
        Ok(_) => {
            notes.push(format!(
                "`defaultTest` `{path}` not converted: not a mapping"
            ));
            Ok(Map::new())
        }
        Err(e) => Err(BadInput::new(format!(
            "the `defaultTest` file `{path}`: {}",
            e.message
        ))),
    }
}

/// The config's `defaultTest` and assertion templates, shared by its tests.
struct Context<'a> {
    templates: Option<&'a Value>,
    default: &'a Map<String, Value>,
}

impl Context<'_> {
    /// The case of one test and one prompt: a conversation when the prompt is a chat of several
    /// user messages (the test's checks grade the last).
    fn case(
        &self,
        test: &Map<String, Value>,
        prompt: &Prompt,
        sources: &dyn Sources,
        name: String,
    ) -> Case {
        let mut turns = self.turns(test, prompt, sources, &name);
        match turns.len() {
            1 => turns.remove(0),
            _ => Case::conversation(name, turns),
        }
    }

    /// The user turns of one test and one prompt: the earlier user messages of a chat prompt,
    /// not graded, then the last with the test's checks.
    fn turns(
        &self,
        test: &Map<String, Value>,
        prompt: &Prompt,
        sources: &dyn Sources,
        name: &str,
    ) -> Vec<Case> {
        let mut case = Case::named(name);
        let earlier = self.fill_case(test, prompt, sources, &mut case);
        case.finish();
        if case.prompt.is_none() {
            return vec![case];
        }
        let mut turns: Vec<Case> = (earlier.into_iter())
            .map(|text| {
                let mut turn = Case::named(name);
                turn.prompt = Some(text);
                turn
            })
            .collect();
        turns.push(case);
        turns
    }

    /// Fills `case` from one test and one prompt; the earlier user messages of a chat prompt,
    /// filled in, are returned (the case's prompt is the last).
    fn fill_case(
        &self,
        test: &Map<String, Value>,
        prompt: &Prompt,
        sources: &dyn Sources,
        case: &mut Case,
    ) -> Vec<String> {
        let user = simulated_user(test).or_else(|| simulated_user(self.default));
        if user.unwrap_or(false) {
            // The user model writes every user message, the first too; the prompt is the
            // agent's system prompt, not a user's request.
            case.not_converted(
                "a conversation with promptfoo's simulated user (`promptfoo:simulated-user`): \
                 its model writes the user's messages, the first too, and the prompt is the \
                 agent's system prompt; write the task by hand as a `prompt` (the first \
                 message) with `user: {host, goal}` (the `instructions` as the goal)",
            );
            return Vec::new();
        }
        for note in &prompt.notes {
            case.note(note.clone());
        }
        let mut vars = Map::new();
        for source in [self.default, test] {
            if let Some(Value::Object(more)) = source.get("vars") {
                vars.extend(more.clone());
            }
        }
        let vars = match resolve_vars(vars, sources) {
            Ok(vars) => vars,
            Err(why) => {
                case.not_converted(why.message);
                return Vec::new();
            }
        };
        let mut earlier = Vec::new();
        for template in &prompt.earlier {
            match fill(template, &vars) {
                Ok(text) => earlier.push(text),
                Err(Unfilled(left)) => unfilled(case, &left),
            }
        }
        case.prompt = match &prompt.template {
            Some(_) if earlier.len() < prompt.earlier.len() => None,
            Some(template) => match fill(template, &vars) {
                Ok(text) => Some(text),
                Err(Unfilled(left)) => {
                    unfilled(case, &left);
                    None
                }
            },
            None => None,
        };
        // A template of a var's messages (`{{ messages | dump }}`): a chat, filled in.
        let filled = case.prompt.as_deref().and_then(|p| parse(p).ok());
        if let Some(Value::Array(messages)) = filled {
            if let Some(mut users) = user_messages(&messages).filter(|u| !u.is_empty()) {
                if users.len() < messages.len() {
                    case.note(
                        "the chat's messages other than the user's were dropped: mcpeval sends the \
                         user's messages only, each a turn the model answers itself",
                    );
                }
                case.prompt = users.pop();
                earlier.extend(users);
            }
        }
        for source in [self.default, test] {
            if let Some(threshold) = source.get("threshold").and_then(Value::as_f64) {
                if threshold < 1.0 {
                    case.not_converted(format!(
                        "test `threshold: {threshold}` (a weighted score decides; every mcpeval \
                         check must pass)"
                    ));
                }
            }
            let options = source.get("options").and_then(Value::as_object);
            for key in ["transform", "postprocess"] {
                if options.is_some_and(|o| o.contains_key(key)) {
                    case.not_converted(format!(
                        "`options.{key}` (the checks below read the answer as it is)"
                    ));
                }
            }
            if let Some(asserts) = source.get("assert").and_then(Value::as_array) {
                for assertion in asserts {
                    self.assertion(assertion, &vars, case, 0);
                }
            }
        }
        earlier
    }

    fn assertion(
        &self,
        assertion: &Value,
        vars: &Map<String, Value>,
        case: &mut Case,
        depth: usize,
    ) {
        let Some(a) = assertion.as_object() else {
            case.not_converted(format!("assertion {assertion}: not a mapping"));
            return;
        };
        if let Some(reference) = a.get("$ref").and_then(Value::as_str) {
            let name = reference.strip_prefix("#/assertionTemplates/");
            let found = name.and_then(|n| self.templates?.get(n));
            match found {
                Some(template) if depth < 8 => self.assertion(template, vars, case, depth + 1),
                _ => case.not_converted(format!("assertion `$ref: {reference}` (not found)")),
            }
            return;
        }
        let Some(kind) = a.get("type").and_then(Value::as_str) else {
            case.not_converted(format!("assertion {assertion} without a `type`"));
            return;
        };
        if a.get("weight").and_then(Value::as_f64) == Some(0.0) {
            case.note(format!(
                "`{kind}` with `weight: 0` left out: it always passes in promptfoo"
            ));
            return;
        }
        if a.contains_key("transform") {
            case.not_converted(format!(
                "`{kind}` with a `transform` (mcpeval checks the answer as it is)"
            ));
            return;
        }
        let value = match a.get("value").map(|v| fill_value(v, vars)) {
            Some(Ok(value)) => Some(value),
            Some(Err(Unfilled(left))) => {
                case.not_converted(format!(
                    "`{kind}`: its value names {}, which no var fills (no such var, or a \
                     template expression); the check is left out",
                    left.join(", ")
                ));
                return;
            }
            None => None,
        };
        if value
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|s| s.starts_with("file://"))
        {
            case.not_converted(format!("`{kind}` with its value in a file"));
            return;
        }
        let threshold = a.get("threshold").and_then(Value::as_f64);
        match kind {
            "assert-set" if threshold.is_none_or(|t| t >= 1.0) => {
                for inner in a
                    .get("assert")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    self.assertion(inner, vars, case, depth + 1);
                }
            }
            _ => answer_or_tools(kind, value.as_ref(), threshold, a, case),
        }
    }
}

/// Whether a test (or `defaultTest`) runs with promptfoo's simulated user as its provider;
/// `None` when it names no provider.
fn simulated_user(source: &Map<String, Value>) -> Option<bool> {
    let provider = source.get("provider")?;
    let id = provider.as_str().or_else(|| provider.get("id")?.as_str());
    Some(id == Some("promptfoo:simulated-user"))
}

fn unfilled(case: &mut Case, left: &[String]) {
    case.not_converted(format!(
        "the prompt: {} not filled in (no such var, or a template expression)",
        left.join(", ")
    ));
}

/// One conversation: its id (`None`: the tests without one) and its tests, in order.
type Conversation<'t> = (Option<String>, Vec<&'t Map<String, Value>>);

/// The tests grouped by their `metadata.conversationId` (`defaultTest`'s when a test has none;
/// no id is a conversation of its own), in the order each id first comes.
fn conversations<'t>(
    tests: &'t [Map<String, Value>],
    default: &Map<String, Value>,
) -> Vec<Conversation<'t>> {
    let id = |source: &Map<String, Value>| {
        let id = source.get("metadata")?.get("conversationId")?;
        Some(id.as_str().map_or_else(|| id.to_string(), str::to_owned))
    };
    let mut groups: Vec<Conversation<'t>> = Vec::new();
    for test in tests {
        let key = id(test).or_else(|| id(default));
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(test),
            None => groups.push((key, vec![test])),
        }
    }
    groups
}

/// The tests: a list, a `file://` YAML/JSON file (or glob) of them, or a mix.
fn tests(
    value: Option<&Value>,
    sources: &dyn Sources,
    notes: &mut Vec<String>,
) -> Result<Vec<Map<String, Value>>, BadInput> {
    let items = match value {
        None => return Ok(Vec::new()),
        Some(Value::Array(items)) => items.clone(),
        Some(one) => vec![one.clone()],
    };
    let mut out = Vec::new();
    for item in items {
        match item {
            Value::Object(test) => out.push(test),
            Value::String(s) if s.starts_with("file://") => {
                let path = &s["file://".len()..];
                let yaml = [".yaml", ".yml", ".json"].iter().any(|e| path.ends_with(e));
                if !yaml {
                    notes.push(format!(
                        "tests in `{s}` not converted (only YAML or JSON test files do)"
                    ));
                    continue;
                }
                for file in sources.files(path) {
                    let shown = file.display().to_string();
                    let text = sources.read(&file).map_err(|e| {
                        BadInput::new(format!("cannot read the tests file `{shown}`: {e}"))
                    })?;
                    let tests = parse(&text).map_err(|e| {
                        BadInput::new(format!("the tests file `{shown}`: {}", e.message))
                    })?;
                    match tests {
                        Value::Array(tests) => {
                            out.extend(tests.into_iter().filter_map(|t| match t {
                                Value::Object(t) => Some(t),
                                _ => None,
                            }))
                        }
                        Value::Object(test) => out.push(test),
                        _ => notes.push(format!("`{shown}` holds no tests")),
                    }
                }
            }
            other => notes.push(format!("test {other} not converted")),
        }
    }
    Ok(out)
}
