//! The response cache: each successful model answer stored as one JSON file under
//! `<results>/.cache/`, so that a rerun or a `--resume`d run replays it instead of asking again.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::{Completion, CompletionRequest, HostError, Message, Model, RequestContext, ToolSpec};

/// The folder of the results directory that holds the cache (`results/.cache`).
pub const CACHE_DIR: &str = ".cache";
/// Version of the entry format and of what the key is made of: other versions are misses.
pub const FORMAT_VERSION: u32 = 1;

/// What a cache answered over its lifetime.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Requests answered from the cache.
    pub hits: u64,
    /// Requests passed on to the model (answered or not).
    pub misses: u64,
    /// Answers that could not be stored (the trial still got them).
    pub write_errors: u64,
}

impl CacheCounts {
    /// Every model request that went through the cache.
    pub fn requests(&self) -> u64 {
        self.hits + self.misses
    }
}

/// One folder of cached answers, shared by every cached model of a run.
#[derive(Debug)]
pub struct ResponseCache {
    dir: PathBuf,
    hits: AtomicU64,
    misses: AtomicU64,
    write_errors: AtomicU64,
    first_write_error: Mutex<Option<String>>,
}

/// One cache file. The model id is kept to check the entry against the model that reads it.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    format: u32,
    model: String,
    /// The trial that asked (for people reading the folder; the key already holds it).
    context: RequestContext,
    /// How long the model took to answer; a hit does not wait it out.
    latency_ms: f64,
    created_at: String,
    completion: Completion,
}

/// What the key is a hash of. Serialized with serde_json, which writes struct fields in
/// declaration order and JSON objects (tool schemas) with sorted keys, so the bytes are canonical.
#[derive(Serialize)]
struct KeyMaterial<'a> {
    format: u32,
    model: &'a str,
    scope: &'a str,
    context: &'a RequestContext,
    seed: u64,
    messages: &'a [Message],
    tools: &'a [ToolSpec],
}

/// The cache key of `request` to model `model_id` (`openai:gpt-4.1-mini`, which names provider
/// and model) within `scope` (what else shapes the answer: endpoint, sampling settings): xxh3-128
/// of the canonical JSON of all of them, the trial's context included.
pub fn key(model_id: &str, scope: &str, request: &CompletionRequest) -> u128 {
    let material = KeyMaterial {
        format: FORMAT_VERSION,
        model: model_id,
        scope,
        context: &request.context,
        seed: request.seed,
        messages: &request.messages,
        tools: &request.tools,
    };
    let mut hasher = HashWriter(xxhash_rust::xxh3::Xxh3Default::new());
    // Writing into a hasher cannot fail, and these types always serialize.
    let _ = serde_json::to_writer(&mut hasher, &material);
    hasher.0.digest128()
}

/// Streams serde_json's output into the hasher, without building the text.
struct HashWriter(xxhash_rust::xxh3::Xxh3Default);

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl ResponseCache {
    /// A cache in `dir` (created when the first answer is stored).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            hits: AtomicU64::default(),
            misses: AtomicU64::default(),
            write_errors: AtomicU64::default(),
            first_write_error: Mutex::new(None),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn counts(&self) -> CacheCounts {
        CacheCounts {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            write_errors: self.write_errors.load(Ordering::Relaxed),
        }
    }

    /// Why the first answer that could not be stored was not, if one was not.
    pub fn first_write_error(&self) -> Option<String> {
        self.first_write_error.lock().ok().and_then(|e| e.clone())
    }

    /// `<dir>/<first 2 hex digits>/<32 hex digits>.json`.
    pub fn entry_path(&self, key: u128) -> PathBuf {
        let hex = format!("{key:032x}");
        self.dir.join(&hex[..2]).join(format!("{hex}.json"))
    }

    /// The stored answer of `key` for `model_id`, if a readable entry of this format holds one.
    /// Anything else (no file, a torn or foreign file) is a miss, never an error.
    fn load(&self, key: u128, model_id: &str) -> Option<Completion> {
        let bytes = std::fs::read(self.entry_path(key)).ok()?;
        let entry: Entry = serde_json::from_slice(&bytes).ok()?;
        (entry.format == FORMAT_VERSION && entry.model == model_id).then_some(entry.completion)
    }

    /// Writes the entry of `key` atomically: a temporary file in the same folder, renamed over
    /// the entry, so a reader (or a killed run) never sees half an entry, and concurrent writers
    /// of one key each leave a whole one.
    fn store(&self, key: u128, entry: &Entry) -> std::io::Result<()> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let path = self.entry_path(key);
        let folder = path.parent().unwrap_or(&self.dir);
        std::fs::create_dir_all(folder)?;
        let tmp = folder.join(format!(
            ".{key:032x}.{}.{}.tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let written = serde_json::to_vec(entry)
            .map_err(std::io::Error::from)
            .and_then(|bytes| std::fs::write(&tmp, bytes))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }

    fn note_write_error(&self, path: &Path, error: &std::io::Error) {
        self.write_errors.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut first) = self.first_write_error.lock() {
            first.get_or_insert_with(|| format!("cannot write `{}`: {error}", path.display()));
        }
    }
}

/// A model behind the response cache. The key holds the model id, the cache scope, the exact
/// request (messages, tools, seed) and the trial's context (task, side, trial index):
/// - the trial index, so that trials stay independent samples of the model rather than one
///   cached answer repeated;
/// - the side, on purpose: in an A/A run both sides send identical requests, and one shared
///   answer would make the sides perfectly correlated, hiding the variation the test measures.
///
/// Only successful completions are stored; a hit returns the stored completion unchanged, its
/// recorded usage included, so a replayed run has the same token figures.
pub struct CachedModel {
    inner: Arc<dyn Model>,
    cache: Arc<ResponseCache>,
    scope: String,
}

impl CachedModel {
    /// `scope` names what else shapes the answers of `inner` (endpoint, sampling settings):
    /// answers cached under one scope are never served under another.
    pub fn new(inner: Arc<dyn Model>, cache: Arc<ResponseCache>, scope: impl Into<String>) -> Self {
        Self {
            inner,
            cache,
            scope: scope.into(),
        }
    }
}

#[async_trait::async_trait]
impl Model for CachedModel {
    fn id(&self) -> &str {
        self.inner.id()
    }

    fn is_simulated(&self) -> bool {
        self.inner.is_simulated()
    }

    fn notes(&self) -> Vec<String> {
        self.inner.notes()
    }

    async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
        let key = key(self.inner.id(), &self.scope, request);
        let cache = self.cache.clone();
        let model_id = self.inner.id().to_owned();
        // File access off the async workers; a failed task is a miss like any unreadable entry.
        let stored = tokio::task::spawn_blocking(move || cache.load(key, &model_id))
            .await
            .ok()
            .flatten();
        if let Some(completion) = stored {
            self.cache.hits.fetch_add(1, Ordering::Relaxed);
            return Ok(completion);
        }
        self.cache.misses.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let completion = self.inner.complete(request).await?;
        // An answer cut at the timeout says how fast the provider was that day, not what the
        // model answers: it is not replayed.
        if completion.timed_out {
            return Ok(completion);
        }
        let entry = Entry {
            format: FORMAT_VERSION,
            model: self.inner.id().to_owned(),
            context: request.context.clone(),
            latency_ms: started.elapsed().as_secs_f64() * 1e3,
            created_at: chrono::Utc::now().to_rfc3339(),
            completion: completion.clone(),
        };
        let cache = self.cache.clone();
        let written = tokio::task::spawn_blocking(move || {
            if let Err(e) = cache.store(key, &entry) {
                cache.note_write_error(&cache.entry_path(key), &e);
            }
        })
        .await;
        if written.is_err() {
            let stopped = std::io::Error::other("the writing task stopped");
            self.cache
                .note_write_error(&self.cache.entry_path(key), &stopped);
        }
        Ok(completion)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{ToolCallRequest, Usage};

    /// A model that counts its calls and answers with the call's number (or fails).
    struct Counting {
        id: String,
        calls: AtomicU64,
        fail: bool,
    }

    impl Counting {
        fn new(id: &str) -> Arc<Self> {
            Arc::new(Self {
                id: id.into(),
                calls: AtomicU64::new(0),
                fail: false,
            })
        }

        fn calls(&self) -> u64 {
            self.calls.load(Ordering::SeqCst)
        }
    }

    #[async_trait::async_trait]
    impl Model for Counting {
        fn id(&self) -> &str {
            &self.id
        }

        async fn complete(&self, request: &CompletionRequest) -> Result<Completion, HostError> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
            if self.fail {
                return Err(HostError::Other(format!("failure {n}")));
            }
            Ok(answer(n, request.seed))
        }
    }

    fn answer(n: u64, seed: u64) -> Completion {
        Completion {
            content: Some(format!("answer {n} (seed {seed})")),
            tool_calls: vec![ToolCallRequest {
                id: format!("call_{n}"),
                name: "search_issues".into(),
                arguments: r#"{"query":"crash"}"#.into(),
            }],
            usage: Usage {
                reasoning_tokens: 0,
                input_tokens: 100 + n,
                output_tokens: 7,
                cache_read_tokens: 3,
                cache_write_tokens: 2,
            },
            model: "gpt-test-2026-01-01".into(),
            ..Completion::default()
        }
    }

    fn request(task: &str, side: &str, trial: u32, seed: u64) -> CompletionRequest {
        CompletionRequest {
            messages: vec![
                Message::System {
                    content: "You have tools.".into(),
                },
                Message::User {
                    content: "Find crash issues in zephyr".into(),
                },
            ],
            tools: vec![ToolSpec {
                name: "search_issues".into(),
                title: None,
                description: Some("Search issues".into()),
                input_schema: serde_json::json!({
                    "type": "object",
                    "properties": {"query": {"type": "string"}}
                }),
                deferred: false,
            }]
            .into(),
            seed,
            context: RequestContext {
                task_id: task.into(),
                side: side.into(),
                trial,
            },
        }
    }

    fn cached(dir: &Path, inner: Arc<Counting>, scope: &str) -> (CachedModel, Arc<ResponseCache>) {
        let cache = Arc::new(ResponseCache::new(dir.join(CACHE_DIR)));
        (CachedModel::new(inner, cache.clone(), scope), cache)
    }

    #[tokio::test]
    async fn a_repeated_request_is_answered_from_the_cache_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        let inner = Counting::new("openai:gpt-test");
        let (model, cache) = cached(dir.path(), inner.clone(), "");
        let req = request("search", "baseline", 0, 7);
        let first = model.complete(&req).await.unwrap();
        assert_eq!(inner.calls(), 1);
        assert!(cache.entry_path(key(model.id(), "", &req)).is_file());
        let again = model.complete(&req).await.unwrap();
        assert_eq!(inner.calls(), 1, "the model was asked again");
        assert_eq!(again, first, "usage included");
        assert_eq!(
            cache.counts(),
            CacheCounts {
                hits: 1,
                misses: 1,
                write_errors: 0
            }
        );
        // A second run (a new cache over the same folder) replays it too.
        let (model, cache) = cached(dir.path(), inner.clone(), "");
        assert_eq!(model.complete(&req).await.unwrap(), first);
        assert_eq!((inner.calls(), cache.counts().hits), (1, 1));
        // Another trial of the same task is its own sample.
        let other = model
            .complete(&request("search", "baseline", 1, 7))
            .await
            .unwrap();
        assert_eq!(inner.calls(), 2);
        assert_ne!(other.content, first.content);
    }

    #[test]
    fn the_key_differs_by_trial_side_task_seed_model_and_scope() {
        let base = key("openai:m", "", &request("t", "baseline", 0, 1));
        assert_eq!(base, key("openai:m", "", &request("t", "baseline", 0, 1)));
        let others = [
            (
                "trial",
                key("openai:m", "", &request("t", "baseline", 1, 1)),
            ),
            (
                "side",
                key("openai:m", "", &request("t", "candidate", 0, 1)),
            ),
            ("task", key("openai:m", "", &request("u", "baseline", 0, 1))),
            ("seed", key("openai:m", "", &request("t", "baseline", 0, 2))),
            (
                "model",
                key("openai:n", "", &request("t", "baseline", 0, 1)),
            ),
            (
                "provider",
                key("anthropic:m", "", &request("t", "baseline", 0, 1)),
            ),
            (
                "scope",
                key("openai:m", "x", &request("t", "baseline", 0, 1)),
            ),
        ];
        for (what, k) in others {
            assert_ne!(k, base, "the key ignores the {what}");
        }
        let mut longer = request("t", "baseline", 0, 1);
        longer.messages.push(Message::Tool {
            tool_call_id: "call_1".into(),
            content: "[]".into(),
        });
        assert_ne!(
            key("openai:m", "", &longer),
            base,
            "the key ignores messages"
        );
        let mut described = request("t", "baseline", 0, 1);
        let mut tools = described.tools.to_vec();
        tools[0].description = Some("Search the issues".into());
        described.tools = tools.into();
        assert_ne!(
            key("openai:m", "", &described),
            base,
            "the key ignores tools"
        );
    }

    #[test]
    fn the_key_does_not_depend_on_the_order_of_schema_keys() {
        let with_schema = |schema: &str| {
            let mut request = request("t", "baseline", 0, 1);
            let mut tools = request.tools.to_vec();
            tools[0].input_schema = serde_json::from_str(schema).unwrap();
            request.tools = tools.into();
            request
        };
        let a = with_schema(r#"{"type":"object","required":["q"],"properties":{}}"#);
        let b = with_schema(r#"{"properties":{},"required":["q"],"type":"object"}"#);
        assert_eq!(key("openai:m", "", &a), key("openai:m", "", &b));
    }

    #[tokio::test]
    async fn a_corrupt_or_foreign_entry_is_a_miss_and_is_overwritten() {
        let dir = tempfile::tempdir().unwrap();
        let inner = Counting::new("openai:gpt-test");
        let (model, cache) = cached(dir.path(), inner.clone(), "");
        let req = request("t", "candidate", 3, 9);
        let path = cache.entry_path(key(model.id(), "", &req));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let first = answer(1, 9);
        let whole = serde_json::to_string(&Entry {
            format: FORMAT_VERSION,
            model: "openai:gpt-test".into(),
            context: req.context.clone(),
            latency_ms: 1.0,
            created_at: "2026-11-30T00:00:00Z".into(),
            completion: first.clone(),
        })
        .unwrap();
        let torn = &whole[..whole.len() / 2];
        let other_format =
            whole.replacen(&format!("\"format\":{FORMAT_VERSION}"), "\"format\":999", 1);
        let other_model = whole.replacen("openai:gpt-test", "openai:other", 1);
        for (i, bad) in ["", "not json", torn, &other_format, &other_model]
            .into_iter()
            .enumerate()
        {
            std::fs::write(&path, bad).unwrap();
            let got = model.complete(&req).await.unwrap();
            assert_eq!(inner.calls(), i as u64 + 1, "entry {bad:?} was a hit");
            assert_eq!(got, answer(i as u64 + 1, 9));
            // Overwritten with a whole entry: the next request is a hit.
            assert_eq!(model.complete(&req).await.unwrap(), got);
            assert_eq!(inner.calls(), i as u64 + 1);
        }
        assert_eq!(cache.counts().write_errors, 0);
        // A whole entry of this model and format is read back.
        std::fs::write(&path, &whole).unwrap();
        assert_eq!(model.complete(&req).await.unwrap(), first);
    }

    #[tokio::test]
    async fn failed_completions_are_not_stored() {
        let dir = tempfile::tempdir().unwrap();
        let inner = Arc::new(Counting {
            id: "openai:gpt-test".into(),
            calls: AtomicU64::new(0),
            fail: true,
        });
        let cache = Arc::new(ResponseCache::new(dir.path().join(CACHE_DIR)));
        let model = CachedModel::new(inner.clone(), cache.clone(), "");
        let req = request("t", "baseline", 0, 1);
        assert!(model.complete(&req).await.is_err());
        assert!(model.complete(&req).await.is_err());
        assert_eq!(inner.calls(), 2);
        assert_eq!(cache.counts().misses, 2);
        assert!(!cache.dir().exists(), "something was stored");
    }

    #[tokio::test]
    async fn an_unwritable_cache_still_answers_and_counts_the_failure() {
        let dir = tempfile::tempdir().unwrap();
        // A file where the cache folder should be.
        std::fs::write(dir.path().join(CACHE_DIR), "").unwrap();
        let inner = Counting::new("openai:gpt-test");
        let (model, cache) = cached(dir.path(), inner.clone(), "");
        let got = model.complete(&request("t", "baseline", 0, 1)).await;
        assert_eq!(got.unwrap(), answer(1, 1));
        assert_eq!(cache.counts().write_errors, 1);
        let error = cache.first_write_error().unwrap();
        assert!(error.contains(".cache"), "{error}");
    }

    #[test]
    fn concurrent_writers_of_one_key_leave_a_whole_entry() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Arc::new(ResponseCache::new(dir.path().join(CACHE_DIR)));
        let req = request("t", "baseline", 0, 1);
        let key = key("openai:m", "", &req);
        let entry = |n: u64| Entry {
            format: FORMAT_VERSION,
            model: "openai:m".into(),
            context: req.context.clone(),
            latency_ms: n as f64,
            // Large enough that a torn write would show.
            created_at: "x".repeat(64 * 1024),
            completion: answer(n, 1),
        };
        let readers_saw_torn = Arc::new(AtomicU64::new(0));
        std::thread::scope(|s| {
            for w in 0..4u64 {
                let cache = cache.clone();
                let entry = entry(w + 1);
                s.spawn(move || {
                    for _ in 0..50 {
                        cache.store(key, &entry).unwrap();
                    }
                });
            }
            for _ in 0..2 {
                let (cache, torn) = (cache.clone(), readers_saw_torn.clone());
                s.spawn(move || {
                    for _ in 0..200 {
                        let path = cache.entry_path(key);
                        if path.exists() && cache.load(key, "openai:m").is_none() {
                            torn.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                });
            }
        });
        assert_eq!(readers_saw_torn.load(Ordering::SeqCst), 0);
        let stored = cache.load(key, "openai:m").expect("a whole entry");
        assert!((1..=4).any(|n| stored == answer(n, 1)), "{stored:?}");
        let folder = cache.entry_path(key).parent().unwrap().to_path_buf();
        let names: Vec<_> = std::fs::read_dir(folder)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "temporary files left: {names:?}");
    }
}
