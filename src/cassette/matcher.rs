//! The replay matcher: answers a session's requests from a cassette, with no I/O.
//!
//! Order rule: within one session (one connection; one trial, or the whole run under
//! `isolation = "run"`), the n-th identical request gets the request's n-th recorded answer, the
//! last one repeating after that. A request the cassette does not hold is answered as the
//! [`Unmatched`] policy says, and counted.

use std::collections::HashMap;

use serde_json::Value;

use super::format::{Answer, Cassette, ErrorAnswer, Method, Request};

/// What to do with a request the cassette does not hold.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unmatched {
    /// A tool error result (a JSON-RPC error for a resource or prompt) saying so: the default.
    #[default]
    Error,
    /// The recorded request of the same tool or prompt whose arguments share the most keys and
    /// values (ties: the first in the file).
    Nearest,
    /// Nothing: the caller passes the request to a live server.
    Live,
}

/// How the matcher answered.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply<'a> {
    /// The recorded answer to this very request.
    Recorded(&'a Answer),
    /// Unmatched, answered from the nearest recorded request (policy `nearest`).
    Nearest(&'a Answer),
    /// Unmatched, answered with an error that says so (policy `error`, or `nearest` with no
    /// request of that tool recorded).
    NoRecord(Answer),
    /// Unmatched: the caller asks a live server (policy `live`).
    Live,
}

impl Reply<'_> {
    /// Whether the cassette held the request itself.
    pub fn matched(&self) -> bool {
        matches!(self, Reply::Recorded(_))
    }
}

/// A cassette indexed for answering: built once, shared by every session.
#[derive(Debug)]
pub struct Matcher {
    cassette: Cassette,
    /// Canonical key → entry index.
    by_key: HashMap<String, usize>,
    /// (method, name) → entry indexes in file order, for `nearest`.
    by_name: HashMap<(Method, String), Vec<usize>>,
    policy: Unmatched,
}

impl Matcher {
    pub fn new(cassette: Cassette, policy: Unmatched) -> Self {
        let mut by_key = HashMap::new();
        let mut by_name: HashMap<(Method, String), Vec<usize>> = HashMap::new();
        for (i, entry) in cassette.entries.iter().enumerate() {
            by_key.insert(entry.request.key(), i);
            if let Some(name) = &entry.request.name {
                by_name
                    .entry((entry.request.method, name.clone()))
                    .or_default()
                    .push(i);
            }
        }
        Self {
            cassette,
            by_key,
            by_name,
            policy,
        }
    }

    pub fn cassette(&self) -> &Cassette {
        &self.cassette
    }

    pub fn policy(&self) -> Unmatched {
        self.policy
    }

    /// A new session: its own count of each request, starting at the first answers.
    pub fn session(&self) -> Session<'_> {
        Session {
            matcher: self,
            seen: HashMap::new(),
            unmatched: 0,
        }
    }

    /// The recorded request nearest to `request`: same method and name, the most argument keys
    /// and values in common (ties: the first in the file).
    fn nearest(&self, request: &Request) -> Option<usize> {
        let name = request.name.clone()?;
        let candidates = self.by_name.get(&(request.method, name))?;
        let wanted = request.arguments.as_ref().and_then(Value::as_object);
        let score = |i: &usize| -> usize {
            let recorded = self.cassette.entries[*i].request.arguments.as_ref();
            let (Some(wanted), Some(Value::Object(recorded))) = (wanted, recorded) else {
                return 0;
            };
            wanted
                .iter()
                .filter_map(|(k, v)| recorded.get(k).map(|r| 1 + usize::from(r == v)))
                .sum()
        };
        // `max_by_key` keeps the last of equal maxima: walk backwards so the first one wins.
        candidates.iter().rev().max_by_key(|i| score(i)).copied()
    }
}

/// One connection's view of the cassette: counts identical requests, and unmatched ones.
#[derive(Debug)]
pub struct Session<'m> {
    matcher: &'m Matcher,
    /// Canonical key → how many times this session has asked it.
    seen: HashMap<String, usize>,
    unmatched: usize,
}

impl<'m> Session<'m> {
    /// The answer to `request`, the n-th of its kind in this session.
    pub fn answer(&mut self, request: &Request) -> Reply<'m> {
        let matcher = self.matcher;
        let key = request.key();
        let recorded = matcher.by_key.get(&key).copied();
        let count = self.seen.entry(key).or_insert(0);
        let n = *count;
        *count += 1;
        let entries = &matcher.cassette.entries;
        if let Some(i) = recorded {
            return Reply::Recorded(nth(&entries[i].answers, n));
        }
        self.unmatched += 1;
        match matcher.policy {
            Unmatched::Live => Reply::Live,
            Unmatched::Nearest => match matcher.nearest(request) {
                Some(i) => Reply::Nearest(nth(&entries[i].answers, n)),
                None => Reply::NoRecord(no_record(request)),
            },
            Unmatched::Error => Reply::NoRecord(no_record(request)),
        }
    }

    /// How many of this session's requests the cassette did not hold.
    pub fn unmatched(&self) -> usize {
        self.unmatched
    }
}

/// The n-th answer (0-based), the last one repeating after the recorded ones run out.
fn nth(answers: &[Answer], n: usize) -> &Answer {
    &answers[n.min(answers.len() - 1)]
}

/// How the answer to a request the cassette does not hold begins: a run counts its calls by it.
pub const NO_RECORD: &str = "mcpeval replay: no recorded answer for ";

/// The answer to a request the cassette does not hold: a tool error result for a call, a
/// JSON-RPC error for a resource (-32002, resource not found) or a prompt (-32602).
fn no_record(request: &Request) -> Answer {
    let text = format!("{NO_RECORD}{}", request.describe());
    match request.method {
        Method::ToolsCall => Answer::tool_error(&text),
        Method::ResourcesRead => Answer::Error(ErrorAnswer {
            code: -32002,
            message: text,
            data: None,
        }),
        Method::PromptsGet => Answer::Error(ErrorAnswer {
            code: -32602,
            message: text,
            data: None,
        }),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map};

    use super::super::format::{Entry, ServerFacts};
    use super::*;

    fn args(value: Value) -> Option<Map<String, Value>> {
        value.as_object().cloned()
    }

    fn result(n: i64) -> Answer {
        Answer::Result(json!({ "n": n }))
    }

    fn cassette() -> Cassette {
        let mut cassette = Cassette::new(ServerFacts::default(), "t".into());
        cassette.entries = vec![
            Entry {
                request: Request::tool("get", args(json!({"id": 1}))),
                answers: vec![result(1), result(2)],
            },
            Entry {
                request: Request::tool("search", args(json!({"q": "a", "limit": 5, "open": true}))),
                answers: vec![result(10)],
            },
            Entry {
                request: Request::tool("search", args(json!({"q": "b", "limit": 5}))),
                answers: vec![result(20)],
            },
            Entry {
                request: Request::resource("demo://readme"),
                answers: vec![result(30)],
            },
        ];
        cassette
    }

    #[test]
    fn the_nth_identical_request_gets_the_nth_answer_then_the_last_repeats() {
        let matcher = Matcher::new(cassette(), Unmatched::Error);
        let get = Request::tool("get", args(json!({"id": 1})));
        let mut session = matcher.session();
        let answers: Vec<Reply> = (0..4).map(|_| session.answer(&get)).collect();
        let recorded = |n| Reply::Recorded(&matcher.cassette().entries[0].answers[n]);
        assert_eq!(
            answers,
            vec![recorded(0), recorded(1), recorded(1), recorded(1)]
        );
        // Another session starts again at the first answer; key order does not matter.
        let mut other = matcher.session();
        let reordered = Request::tool("get", args(json!({"id": 1})));
        assert_eq!(other.answer(&reordered), recorded(0));
        assert_eq!((session.unmatched(), other.unmatched()), (0, 0));
        let readme = Request::resource("demo://readme");
        assert_eq!(other.answer(&readme), Reply::Recorded(&result(30)));
    }

    #[test]
    fn unmatched_requests_are_errors_that_say_so_and_are_counted() {
        let matcher = Matcher::new(cassette(), Unmatched::Error);
        let mut session = matcher.session();
        let reply = session.answer(&Request::tool("get", args(json!({"id": 2}))));
        let text = "mcpeval replay: no recorded answer for tools/call `get` with {\"id\":2}";
        assert_eq!(reply, Reply::NoRecord(Answer::tool_error(text)));
        assert!(!reply.matched());
        let Reply::NoRecord(Answer::Error(error)) = session.answer(&Request::resource("demo://x"))
        else {
            panic!("a resource is answered with a JSON-RPC error");
        };
        assert_eq!(error.code, -32002);
        assert_eq!(
            error.message,
            "mcpeval replay: no recorded answer for resources/read `demo://x`"
        );
        assert_eq!(session.unmatched(), 2);
    }

    #[test]
    fn nearest_takes_the_most_shared_keys_and_values_and_the_first_of_ties() {
        let matcher = Matcher::new(cassette(), Unmatched::Nearest);
        let mut session = matcher.session();
        // Shares q=b and limit=5 with the second search (4 points), only keys with the first.
        let reply = session.answer(&Request::tool(
            "search",
            args(json!({"q": "b", "limit": 5, "x": 1})),
        ));
        assert_eq!(reply, Reply::Nearest(&result(20)));
        // Shares the key `q` (1 point) with both: the first in the file wins.
        let reply = session.answer(&Request::tool("search", args(json!({"q": "c"}))));
        assert_eq!(reply, Reply::Nearest(&result(10)));
        // No argument in common: still the first of the tool's.
        let reply = session.answer(&Request::tool("search", None));
        assert_eq!(reply, Reply::Nearest(&result(10)));
        // A tool never recorded: nothing is near it.
        let reply = session.answer(&Request::tool("find_issues", None));
        assert!(matches!(reply, Reply::NoRecord(_)), "{reply:?}");
        assert_eq!(session.unmatched(), 4);
        // The nearest's answers follow the order rule too.
        let mut session = matcher.session();
        let near_get = Request::tool("get", args(json!({"id": 9})));
        assert_eq!(session.answer(&near_get), Reply::Nearest(&result(1)));
        assert_eq!(session.answer(&near_get), Reply::Nearest(&result(2)));
    }

    #[test]
    fn live_leaves_the_request_to_the_caller() {
        let matcher = Matcher::new(cassette(), Unmatched::Live);
        let mut session = matcher.session();
        assert_eq!(session.answer(&Request::tool("nope", None)), Reply::Live);
        let get = Request::tool("get", args(json!({"id": 1})));
        assert_eq!(session.answer(&get), Reply::Recorded(&result(1)));
        assert_eq!(session.unmatched(), 1);
    }
}
