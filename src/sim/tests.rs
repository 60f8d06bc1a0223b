//! Tests of the sim against the demo tracker's two releases, built from the catalogue's text.

use serde_json::{json, Value};

use super::{SimConfig, SimModel};
use crate::host::{Completion, CompletionRequest, Message, ToolCallRequest, ToolSpec};

pub(super) const SYSTEM: &str = "You are a helpful assistant with access to tools. Call a tool \
                                 only when it is needed to answer; otherwise answer directly.";
const INSTRUCTIONS_140: &str = "Issue tracker for the apollo, zephyr and hermes projects. Issues \
     are identified by number. Issues can never be deleted: close them instead. Search before \
     creating an issue to avoid duplicates.";
const INSTRUCTIONS_150: &str = "Issue tracker for the apollo, zephyr and hermes projects. Use \
     find_issues to look issues up. Issues are identified by number.";

pub(super) fn tool(name: &str, title: &str, description: &str, schema: Value) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        title: (!title.is_empty()).then(|| title.into()),
        description: Some(description.into()),
        input_schema: schema,
        deferred: false,
    }
}

fn search_issues(description: &str, query: &str) -> ToolSpec {
    tool(
        "search_issues",
        "Search issues",
        description,
        json!({"type": "object", "required": ["query"], "properties": {
            "query": {"type": "string", "description": query},
            "project": {"type": "string", "description": "Project key to search in, e.g. apollo"},
            "status": {"type": "string", "enum": ["open", "closed", "any"],
                       "description": "Only return issues with this status; default any"}
        }}),
    )
}

/// The tools of release 1.4.0, from `demo_catalogue.md`.
pub(super) fn tools_140() -> Vec<ToolSpec> {
    let priority = json!({"type": "string", "enum": ["low", "medium", "high", "critical"]});
    vec![
        tool(
            "list_projects",
            "List projects",
            "List every project in the tracker with its key, \
              name and number of open issues.",
            json!({"type": "object", "properties": {}}),
        ),
        search_issues(
            "Search issues by keywords in their title and description. Filter by \
             project key and by status (open or closed). Returns the id, title, status and \
             priority of each match.",
            "Keywords to look for in issue titles and descriptions",
        ),
        tool(
            "get_issue",
            "Get issue",
            "Get the full details of one issue by its numeric id: \
              description, status, priority, assignee and comments.",
            json!({"type": "object", "required": ["id"], "properties": {
                 "id": {"type": "integer", "description": "The issue number, e.g. 42"}}}),
        ),
        tool(
            "create_issue",
            "Create issue",
            "Create (file, open, report) a new issue in a \
              project. Returns the new issue's id.",
            json!({"type": "object", "required": ["project", "title"], "properties": {
                 "project": {"type": "string", "description": "Project key, e.g. apollo"},
                 "title": {"type": "string", "description": "One-line summary of the problem"},
                 "description": {"type": "string", "description": "Longer description of the problem"},
                 "priority": {"enum": ["low", "medium", "high", "critical"], "type": "string",
                              "description": "How urgent the issue is; default medium"}}}),
        ),
        tool(
            "update_issue",
            "Update issue",
            "Change an existing issue: close or reopen it, set \
              its priority, assign it to someone or rename it.",
            json!({"type": "object", "required": ["id"], "properties": {
                 "id": {"type": "integer", "description": "The issue number"},
                 "status": {"type": "string", "enum": ["open", "closed"],
                            "description": "New status: closed to close the issue, open to reopen it"},
                 "priority": priority,
                 "assignee": {"type": "string", "description": "User name to assign the issue to"},
                 "title": {"type": "string", "description": "New title"}}}),
        ),
        tool(
            "add_comment",
            "Add comment",
            "Add a comment to an issue.",
            json!({"type": "object", "required": ["id", "body"], "properties": {
                 "id": {"type": "integer", "description": "The issue number"},
                 "body": {"type": "string", "description": "The comment text"}}}),
        ),
    ]
}

/// The tools of release 1.5.0: vaguer `search_issues`, new `find_issues`.
pub(super) fn tools_150() -> Vec<ToolSpec> {
    let mut tools = tools_140();
    tools[1] = search_issues("Looks up issues.", "Query.");
    tools.push(tool(
        "find_issues",
        "Find issues",
        "Find issues that match a text, across all projects. Returns issue ids and titles.",
        json!({"type": "object", "required": ["text"], "properties": {
            "text": {"type": "string", "description": "Text to find in issues"},
            "limit": {"type": "integer", "description": "Maximum number of results; default 10"}}}),
    ));
    tools
}

pub(super) fn request(
    instructions: &str,
    tools: Vec<ToolSpec>,
    prompt: &str,
    seed: u64,
) -> CompletionRequest {
    let system = if instructions.is_empty() {
        SYSTEM.to_owned()
    } else {
        format!("{SYSTEM}\n\n{instructions}")
    };
    CompletionRequest {
        messages: vec![
            Message::System { content: system },
            Message::User {
                content: prompt.into(),
            },
        ],
        tools: tools.into(),
        seed,
        ..Default::default()
    }
}

pub(super) fn req_140(prompt: &str, seed: u64) -> CompletionRequest {
    request(INSTRUCTIONS_140, tools_140(), prompt, seed)
}

pub(super) fn req_150(prompt: &str, seed: u64) -> CompletionRequest {
    request(INSTRUCTIONS_150, tools_150(), prompt, seed)
}

pub(super) fn sim() -> SimModel {
    SimModel::new(SimConfig::default())
}

pub(super) fn only_call(c: &Completion) -> (String, Value) {
    assert_eq!(c.tool_calls.len(), 1, "expected one tool call, got {c:?}");
    let call = &c.tool_calls[0];
    let args = serde_json::from_str(&call.arguments).expect("arguments are JSON");
    (call.name.clone(), args)
}

/// How often, over `n` seeds, the first turn calls `tool` (and `check` accepts its arguments).
pub(super) fn rate(
    make: impl Fn(u64) -> CompletionRequest,
    tool: &str,
    check: impl Fn(&Value) -> bool,
) -> f64 {
    let sim = sim();
    let n = 200;
    let hits = (0..n)
        .filter(|&seed| {
            let c = sim.respond(&make(seed));
            c.tool_calls.first().is_some_and(|call| {
                call.name == tool && check(&serde_json::from_str(&call.arguments).unwrap())
            })
        })
        .count();
    hits as f64 / n as f64
}

const FIND_LOGIN: &str = "Find open issues about login in project apollo";

#[test]
fn the_same_seed_gives_the_same_completion() {
    let a = sim().respond(&req_150(FIND_LOGIN, 7));
    let b = sim().respond(&req_150(FIND_LOGIN, 7));
    assert_eq!(a, b);
    assert_eq!(a.model, "sim");
}

#[test]
fn different_seeds_vary_at_high_temperature() {
    let hot = SimModel::new(SimConfig {
        temperature: 5.0,
        ..SimConfig::default()
    });
    let names: std::collections::HashSet<String> = (0..50)
        .map(|seed| {
            hot.respond(&req_140(FIND_LOGIN, seed)).tool_calls[0]
                .name
                .clone()
        })
        .collect();
    assert!(names.len() >= 3, "{names:?}");
}

#[test]
fn greetings_and_general_knowledge_need_no_tool() {
    for prompt in [
        "Hello! How are you today?",
        "What is the capital of France?",
        "Thanks!",
    ] {
        for seed in 0..20 {
            let c = sim().respond(&req_140(prompt, seed));
            assert!(c.tool_calls.is_empty(), "{prompt}: {c:?}");
            assert!(c.content.as_deref().is_some_and(|t| !t.is_empty()));
        }
    }
}

#[test]
fn finds_open_issues_with_search_issues_in_140_much_less_in_150() {
    let good = |a: &Value| {
        a["project"] == "apollo"
            && a["status"] == "open"
            && a["query"].as_str().is_some_and(|q| q.contains("login"))
    };
    let old = rate(|s| req_140(FIND_LOGIN, s), "search_issues", good);
    let new = rate(|s| req_150(FIND_LOGIN, s), "search_issues", |_| true);
    let find = rate(
        |s| req_150(FIND_LOGIN, s),
        "find_issues",
        |a| a["text"].as_str().is_some_and(|t| t.contains("login")),
    );
    eprintln!("search_issues 1.4.0 {old:.3}, 1.5.0 {new:.3}; find_issues 1.5.0 {find:.3}");
    assert!(old >= 0.95, "1.4.0 rate {old}");
    assert!(new <= 0.5 && old - new >= 0.4, "1.5.0 rate {new}");
    assert!(find >= 0.5, "find_issues rate {find}");
}

#[test]
fn show_create_and_close() {
    let (name, args) = only_call(&sim().respond(&req_140("Show me issue 3", 1)));
    assert_eq!((name.as_str(), args), ("get_issue", json!({"id": 3})));
    let prompt = "Create an issue in zephyr titled 'App freezes on startup' with high priority";
    let (name, args) = only_call(&sim().respond(&req_140(prompt, 1)));
    assert_eq!(name, "create_issue");
    assert_eq!(
        args,
        json!({"project": "zephyr", "title": "App freezes on startup", "priority": "high"})
    );
    let (name, args) = only_call(&sim().respond(&req_140("Close issue 5", 1)));
    assert_eq!(
        (name, args),
        (
            "update_issue".to_owned(),
            json!({"id": 5, "status": "closed"})
        )
    );
    let assign = only_call(&sim().respond(&req_150("Assign issue 2 to maria", 3))).1;
    assert_eq!(assign, json!({"id": 2, "assignee": "maria"}));
}

#[test]
fn delete_is_declined_while_the_rule_exists() {
    let declined = (0..200)
        .filter(|&s| {
            let c = sim().respond(&req_140("Delete issue 4", s));
            c.tool_calls.is_empty()
                && c.content
                    .as_deref()
                    .is_some_and(|t| t.contains("can never be deleted"))
        })
        .count();
    let called = (0..200)
        .filter(|&s| {
            !sim()
                .respond(&req_150("Delete issue 4", s))
                .tool_calls
                .is_empty()
        })
        .count();
    eprintln!("delete: declined {declined}/200 with 1.4.0, called a tool {called}/200 with 1.5.0");
    assert_eq!(declined, 200);
    assert!(called >= 150, "{called}");
}

/// Plays the agent loop with canned tool results.
pub(super) fn play(mut req: CompletionRequest, results: &[&str]) -> Vec<Completion> {
    let mut out = Vec::new();
    for turn in 0..6 {
        let c = sim().respond(&req);
        req.messages.push(Message::Assistant {
            reasoning: None,
            content: c.content.clone(),
            tool_calls: c.tool_calls.clone(),
            server_blocks: Vec::new(),
        });
        let done = c.tool_calls.is_empty();
        for call in &c.tool_calls {
            let content = results.get(turn).copied().unwrap_or("{}").to_owned();
            req.messages.push(Message::Tool {
                tool_call_id: call.id.clone(),
                content,
            });
        }
        out.push(c);
        if done {
            break;
        }
    }
    out
}

#[test]
fn a_two_step_request_calls_twice_then_answers_with_the_results() {
    let prompt = "Search for issues about login in project apollo, then show me issue 1";
    let turns = play(
        req_140(prompt, 11),
        &[
            r#"{"issues":[{"id":1,"title":"Login page times out on slow networks"}]}"#,
            r#"{"id":1,"title":"Login page times out on slow networks","status":"open"}"#,
        ],
    );
    assert_eq!(turns.len(), 3, "{turns:#?}");
    assert_eq!(only_call(&turns[0]).0, "search_issues");
    assert_eq!(only_call(&turns[1]), ("get_issue".into(), json!({"id": 1})));
    let answer = turns[2].content.as_deref().unwrap();
    assert!(
        answer.contains("Login page times out on slow networks"),
        "{answer}"
    );
    assert_ne!(turns[0].tool_calls[0].id, turns[1].tool_calls[0].id);
}

#[test]
fn a_tool_error_is_retried_once_with_corrected_arguments_then_given_up() {
    let prompt = "Create an issue in zeph titled 'Crash' ";
    let error = "unknown project `zeph`; known projects: apollo, hermes, zephyr";
    let turns = play(req_140(prompt, 2), &[error, error, error]);
    assert_eq!(turns.len(), 3, "{turns:#?}");
    assert_eq!(only_call(&turns[0]).1["project"], "zeph");
    assert_eq!(only_call(&turns[1]).1["project"], "zephyr");
    let answer = turns[2].content.as_deref().unwrap();
    assert!(
        answer.starts_with("Sorry") && answer.contains("unknown project"),
        "{answer}"
    );
}

#[test]
fn tokens_count_what_was_sent() {
    let short = sim().respond(&req_150(FIND_LOGIN, 1)).usage;
    let long = sim().respond(&req_140(FIND_LOGIN, 1)).usage;
    // 1.4.0 has the longer search_issues description but one tool fewer; compare like for like.
    let mut tools = tools_140();
    tools[1].description = Some(format!(
        "{} {}",
        tools[1].description.clone().unwrap(),
        "More words. ".repeat(20)
    ));
    let longer = sim()
        .respond(&request(INSTRUCTIONS_140, tools, FIND_LOGIN, 1))
        .usage;
    assert!(
        longer.input_tokens >= long.input_tokens + 40,
        "{long:?} {longer:?}"
    );
    assert!(
        short.input_tokens > 300 && short.output_tokens > 5,
        "{short:?}"
    );
    let mut more = req_140(FIND_LOGIN, 1);
    more.messages.push(Message::Assistant {
        reasoning: None,
        content: None,
        tool_calls: vec![ToolCallRequest {
            id: "c".into(),
            name: "search_issues".into(),
            arguments: "{}".into(),
        }],
        server_blocks: Vec::new(),
    });
    assert!(sim().respond(&more).usage.input_tokens > long.input_tokens);
}

#[test]
fn config_reads_partial_toml_and_rejects_unknown_keys() {
    let c: SimConfig = toml::from_str("temperature = 1.5\ncall_threshold = 3.0").unwrap();
    assert_eq!((c.temperature, c.call_threshold), (1.5, 3.0));
    assert_eq!(c.name_weight, SimConfig::default().name_weight);
    assert!(toml::from_str::<SimConfig>("temprature = 1.0").is_err());
    let sim = SimModel::new(c);
    assert!(crate::host::Model::is_simulated(&sim));
    assert_eq!(crate::host::Model::id(&sim), "sim");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(200))]
    /// Any request text, history and instructions: an answer or a call with JSON arguments.
    #[test]
    fn never_panics_and_always_answers(
        prompt in "(?s).{0,120}",
        system in "(?s).{0,80}",
        result in "(?s).{0,60}",
        seed: u64,
    ) {
        let mut req = request(&system, tools_150(), &prompt, seed);
        for _ in 0..4 {
            let c = sim().respond(&req);
            for call in &c.tool_calls {
                let args: Value = serde_json::from_str(&call.arguments).unwrap();
                proptest::prop_assert!(args.is_object());
            }
            proptest::prop_assert!(c.content.is_some() == c.tool_calls.is_empty());
            let calls = c.tool_calls.clone();
            req.messages.push(Message::Assistant {
                content: c.content,
                tool_calls: calls.clone(),
                reasoning: None,
                server_blocks: Vec::new(),
            });
            for call in calls {
                req.messages.push(Message::Tool { tool_call_id: call.id, content: result.clone() });
            }
        }
    }
}

/// Two tools a request scores within `near_tie` of each other: which one is listed first.
fn near_twins(first: &str) -> Vec<ToolSpec> {
    let twin = |name: &str| {
        tool(
            name,
            "",
            "Search issues by keywords in their title and description.",
            json!({"type": "object", "required": ["query"], "properties": {
                "query": {"type": "string", "description": "Keywords to look for"}}}),
        )
    };
    let mut tools = vec![twin("find_issues"), twin("search_issues")];
    if tools[0].name != first {
        tools.reverse();
    }
    tools
}

#[test]
fn position_bias_makes_near_ties_follow_the_list_order_and_is_off_by_default() {
    let ask =
        |first: &str, seed| request("", near_twins(first), "Look up issues about login", seed);
    let scores = {
        let r = ask("find_issues", 0);
        let utt = super::request::Utterance::parse("Look up issues about login");
        let rules = super::rules::Rules::parse(SYSTEM, &r.tools);
        super::score::score_all(&utt, &r.tools, &rules, None, &SimConfig::default())
    };
    let gap = scores[0].score - scores[1].score;
    assert!(
        gap <= SimConfig::default().near_tie,
        "not a near tie: {gap}"
    );
    let picks = |sim: &SimModel, first: &str| -> Vec<String> {
        (0..40)
            .map(|seed| only_call(&sim.respond(&ask(first, seed))).0)
            .collect()
    };
    let biased = SimModel::new(SimConfig {
        position_bias: 1.0,
        ..SimConfig::default()
    });
    for first in ["find_issues", "search_issues"] {
        let got = picks(&biased, first);
        assert!(
            got.iter().all(|p| p == first),
            "{first} listed first: {got:?}"
        );
    }
    // Off (the default): the scores' softmax chooses, and neither order takes every call.
    for first in ["find_issues", "search_issues"] {
        let got = picks(&sim(), first);
        let taken = got.iter().filter(|p| *p == first).count();
        assert!((8..=32).contains(&taken), "{first} listed first: {got:?}");
    }
}
