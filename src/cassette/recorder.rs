//! Recording a side's server traffic into a cassette, shared by the concurrent trials of a run.
//!
//! Each connection records into its own session; a request's answers are kept per session in
//! order, identical consecutive answers once. When the cassette is made, a request's answers are
//! the longest sequence one session saw (the first such session), followed by any answer other
//! sessions saw that it lacks: a stateful server's order survives, and no distinct answer is lost.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use super::format::{
    canonical, Answer, Cassette, Entry, Handshake, ListKind, Request, ServerFacts,
};

/// One side's recording: the lists (once) and every session's answers.
#[derive(Debug, Default)]
pub struct Recorder {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The server, its handshake and lists, from the first connection that gave them.
    facts: Option<(ServerFacts, Handshake, BTreeMap<ListKind, Vec<Value>>)>,
    /// Every distinct answer, once; sessions refer to them by index.
    answers: Vec<Answer>,
    interned: HashMap<String, usize>,
    /// Canonical key → the request.
    requests: HashMap<String, Request>,
    /// Per session (by id): canonical key → the indexes of its answers, in order.
    sessions: Vec<HashMap<String, Vec<usize>>>,
}

impl Recorder {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether no connection has given the lists yet.
    pub fn needs_lists(&self) -> bool {
        self.lock().facts.is_none()
    }

    /// The server's facts and lists; the first call's are kept.
    pub fn set_lists(
        &self,
        server: ServerFacts,
        handshake: Handshake,
        lists: BTreeMap<ListKind, Vec<Value>>,
    ) {
        let mut state = self.lock();
        if state.facts.is_none() {
            state.facts = Some((server, handshake, lists));
        }
    }

    /// A new session (one connection) recording into this recorder.
    pub fn session(self: &Arc<Self>) -> SessionRecorder {
        let mut state = self.lock();
        state.sessions.push(HashMap::new());
        SessionRecorder {
            recorder: self.clone(),
            id: state.sessions.len() - 1,
        }
    }

    /// Requests recorded so far (distinct), and sessions.
    pub fn counts(&self) -> (usize, usize) {
        let state = self.lock();
        (state.requests.len(), state.sessions.len())
    }

    /// The cassette of everything recorded so far, in canonical order.
    pub fn cassette(&self, recorded_at: String) -> Cassette {
        let state = self.lock();
        let (server, handshake, lists) = state.facts.clone().unwrap_or_default();
        let mut cassette = Cassette::new(server, recorded_at);
        cassette.handshake = handshake;
        cassette.lists.extend(lists);
        for (key, request) in &state.requests {
            let seen: Vec<&Vec<usize>> = state.sessions.iter().filter_map(|s| s.get(key)).collect();
            let answers = merged(&seen)
                .into_iter()
                .map(|i| state.answers[i].clone())
                .collect();
            cassette.entries.push(Entry {
                request: request.clone(),
                answers,
            });
        }
        cassette.normalize();
        cassette
    }

    fn record(&self, session: usize, request: Request, answer: Answer) {
        let key = request.key();
        let text = serde_json::to_string(&canonical(
            &serde_json::to_value(&answer).unwrap_or_default(),
        ))
        .unwrap_or_default();
        let mut state = self.lock();
        let index = match state.interned.get(&text) {
            Some(&i) => i,
            None => {
                state.answers.push(answer);
                let i = state.answers.len() - 1;
                state.interned.insert(text, i);
                i
            }
        };
        state
            .requests
            .entry(key.clone())
            .or_insert_with(|| request.normalized());
        let sequence = state.sessions[session].entry(key).or_default();
        if sequence.last() != Some(&index) {
            sequence.push(index);
        }
    }
}

/// The answers of one request over the sessions that asked it (in session order): the longest
/// sequence (the first of equals), then each other answer not in it, in order of appearance.
fn merged(sequences: &[&Vec<usize>]) -> Vec<usize> {
    let Some(longest) = sequences.iter().rev().max_by_key(|s| s.len()) else {
        return Vec::new();
    };
    let mut out: Vec<usize> = longest.to_vec();
    for &i in sequences.iter().flat_map(|s| s.iter()) {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// One connection's recording.
#[derive(Debug, Clone)]
pub struct SessionRecorder {
    recorder: Arc<Recorder>,
    id: usize,
}

impl SessionRecorder {
    /// Records `answer` as this session's next answer to `request`.
    pub fn record(&self, request: Request, answer: Answer) {
        self.recorder.record(self.id, request, answer);
    }

    /// The recorder this session records into.
    pub fn recorder(&self) -> &Arc<Recorder> {
        &self.recorder
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn result(n: i64) -> Answer {
        Answer::Result(json!({ "n": n }))
    }

    #[test]
    fn sessions_keep_their_order_and_duplicates_collapse() {
        let recorder = Recorder::new();
        let (a, b) = (recorder.session(), recorder.session());
        let get = || Request::tool("get", json!({"id": 1}).as_object().cloned());
        // Interleaved, as concurrent trials are: each session's own order is what counts.
        a.record(get(), result(0));
        b.record(get(), result(0));
        a.record(get(), result(1));
        a.record(get(), result(1));
        b.record(get(), result(1));
        b.record(get(), result(2));
        let list = Request::tool("list", None);
        a.record(list.clone(), result(5));
        b.record(list, result(6));
        let cassette = recorder.cassette("t".into());
        assert_eq!(cassette.entries.len(), 2);
        assert_eq!(
            cassette.entries[0].answers,
            vec![result(0), result(1), result(2)]
        );
        assert_eq!(cassette.entries[1].answers, vec![result(5), result(6)]);
        assert_eq!(recorder.counts(), (2, 2));
    }

    #[test]
    fn merged_keeps_the_longest_sequence_then_the_rest() {
        let (s1, s2, s3) = (vec![3], vec![1, 2, 1], vec![4, 1, 2]);
        assert_eq!(merged(&[&s1, &s2, &s3]), vec![1, 2, 1, 3, 4]);
        assert!(merged(&[]).is_empty());
    }

    #[test]
    fn the_first_lists_are_kept() {
        let recorder = Recorder::new();
        assert!(recorder.needs_lists());
        let lists = |name: &str| BTreeMap::from([(ListKind::Tools, vec![json!({"name": name})])]);
        recorder.set_lists(ServerFacts::default(), Handshake::default(), lists("a"));
        recorder.set_lists(ServerFacts::default(), Handshake::default(), lists("b"));
        assert!(!recorder.needs_lists());
        let cassette = recorder.cassette("t".into());
        assert_eq!(cassette.lists[&ListKind::Tools], vec![json!({"name": "a"})]);
        assert_eq!(cassette.lists[&ListKind::Prompts], Vec::<Value>::new());
    }
}
