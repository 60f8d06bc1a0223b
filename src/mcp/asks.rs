//! The client's side of the server's own requests: `sampling/createMessage` and
//! `elicitation/create` answered during a trial as its task says (`sampling:`, `elicitation:`),
//! each request and answer kept for the episode and the cassette; a request the task did not
//! prepare for is answered as a client without the capability would (method not found).
//!
//! One handler per connection, one answer slot in it: the trial that leases the connection
//! installs its plan ([`McpConnection::install_asks`]) and takes the record back
//! ([`McpConnection::take_asks`]); trials that share a connection and answer requests take turns
//! ([`McpConnection::ask_turn`]), so a request is never answered by another trial's plan.
#![allow(deprecated)] // rmcp marks sampling deprecated (SEP-2577); servers still send it.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use rmcp::model::{
    ClientConfig, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ErrorCode,
};
use rmcp::service::{RequestContext, RoleClient};
use rmcp::{ClientHandler, ErrorData};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::client::McpConnection;
use crate::cassette::{Answer, Ask, ErrorAnswer};
use crate::suite::asks::{ElicitAction, Elicitation, Sampling, SIM_SAMPLING_TEXT};

/// The method names, as the protocol spells them.
pub const SAMPLING_METHOD: &str = "sampling/createMessage";
pub const ELICITATION_METHOD: &str = "elicitation/create";
/// The model name of a `sampling: {reply}` answer.
pub const REPLY_MODEL: &str = "mcpeval-reply";
/// The note of an elicitation `{user: true}` answered while no simulated user is wired in.
pub const NO_USER_NOTE: &str = "no simulated user in this task";

/// A sampling request as a model reads it: the system prompt, the messages (role, text) and the
/// cap on the answer's tokens.
#[derive(Debug, Clone, PartialEq)]
pub struct SamplingRequest {
    pub system: Option<String>,
    pub messages: Vec<(String, String)>,
    pub max_tokens: u32,
    pub temperature: Option<f32>,
}

/// A sampling model's answer, with its own tokens (apart from the task's model's).
#[derive(Debug, Clone, PartialEq)]
pub struct Sampled {
    pub text: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// Why a sampling model gave no answer (its provider's failure, in words).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct SamplingFailed(pub String);

/// A model that answers sampling requests (`sampling: {host: HOST}`), lent by the layer that
/// builds hosts: this module knows no provider.
#[async_trait::async_trait]
pub trait Sampler: Send + Sync {
    async fn sample(&self, request: &SamplingRequest) -> Result<Sampled, SamplingFailed>;
}

/// The simulated user of a trial, answering an elicitation (`elicitation: {user: true}`): the
/// request's message and `requestedSchema` in, the fields it fills out (`None`: it declines).
/// Lent by the layer that runs the simulated user: this module knows none.
#[async_trait::async_trait]
pub trait ElicitedUser: Send + Sync {
    async fn answer(
        &self,
        message: &str,
        schema: &Value,
    ) -> Result<Option<Map<String, Value>>, SamplingFailed>;
}

/// How one trial answers the server's requests.
#[derive(Clone, Default)]
pub struct AskPlan {
    pub sampling: Option<Sampling>,
    pub elicitation: Option<Elicitation>,
    /// The model of `sampling: {host}` (not `sim`, which answers a fixed text).
    pub sampler: Option<Arc<dyn Sampler>>,
    /// The simulated user of `elicitation: {user: true}`; `None`: there is none in this trial.
    pub user: Option<Arc<dyn ElicitedUser>>,
}

impl AskPlan {
    pub fn is_empty(&self) -> bool {
        self.sampling.is_none() && self.elicitation.is_none()
    }
}

/// One request the server made during a trial, and how it was answered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AskRecord {
    /// `sampling/createMessage` or `elicitation/create`.
    pub method: String,
    /// The request's params (without `_meta`).
    pub request: Value,
    /// The answer sent: the result, or `{"error": {code, message}}`.
    pub answer: Value,
    /// Whether the task said how to answer it (else: method not found, counted apart).
    pub prepared: bool,
    pub latency_ms: f64,
    /// The sampling model's tokens (apart from the task's model's).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub input_tokens: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub output_tokens: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The task's elicitation answers did not fit the request's `requestedSchema`: the
    /// schema's complaint (the answers were not sent; the request was declined).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misfit: Option<String>,
    /// The sampling host failed to answer (the trial is then an infrastructure error).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
    /// Anything else worth saying ("no simulated user in this task").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl AskRecord {
    /// A request of `method` with its params, not answered yet; `prepared`: the task said how.
    pub fn new(method: &str, request: Value, prepared: bool) -> Self {
        Self {
            method: method.into(),
            request,
            answer: Value::Null,
            prepared,
            latency_ms: 0.0,
            input_tokens: 0,
            output_tokens: 0,
            model: None,
            misfit: None,
            failed: None,
            note: None,
        }
    }

    pub fn is_sampling(&self) -> bool {
        self.method == SAMPLING_METHOD
    }
}

/// The answer slot of one connection.
#[derive(Default)]
pub(super) struct Slot {
    plan: AskPlan,
    log: Vec<AskRecord>,
    /// Asks since the last request this connection sent, for the cassette (`run --record`).
    pending: Vec<Ask>,
}

pub(super) type SharedSlot = Arc<Mutex<Slot>>;

fn lock(slot: &SharedSlot) -> MutexGuard<'_, Slot> {
    slot.lock().unwrap_or_else(|e| e.into_inner())
}

/// The rmcp client handler of a connection: its declared capabilities, and the answers.
#[derive(Clone)]
pub(super) struct AskHandler {
    pub config: ClientConfig,
    pub slot: SharedSlot,
}

impl AskHandler {
    fn plan(&self) -> AskPlan {
        lock(&self.slot).plan.clone()
    }

    fn keep(&self, record: AskRecord, answer: Answer) {
        let mut slot = lock(&self.slot);
        slot.pending.push(Ask {
            method: record.method.clone(),
            params: record.request.clone(),
            answer,
        });
        slot.log.push(record);
    }
}

/// The params as recorded: JSON without `_meta`.
fn params_json<T: Serialize>(params: &T) -> Value {
    let mut value = serde_json::to_value(params).unwrap_or_default();
    if let Some(map) = value.as_object_mut() {
        map.remove("_meta");
    }
    value
}

/// "Method not found": how a client without the capability answers.
fn not_found(method: &str) -> ErrorData {
    ErrorData::new(ErrorCode::METHOD_NOT_FOUND, method.to_owned(), None)
}

fn error_json(error: &ErrorData) -> (Value, Answer) {
    let value = json!({"error": {"code": error.code.0, "message": error.message}});
    let answer = Answer::Error(ErrorAnswer {
        code: i64::from(error.code.0),
        message: error.message.to_string(),
        data: None,
    });
    (value, answer)
}

fn ms(since: Instant) -> f64 {
    since.elapsed().as_secs_f64() * 1000.0
}

impl ClientHandler for AskHandler {
    fn get_info(&self) -> ClientConfig {
        self.config.clone()
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        let started = Instant::now();
        let plan = self.plan();
        let prepared = plan.sampling.is_some();
        let mut record = AskRecord::new(SAMPLING_METHOD, params_json(&params), prepared);
        let answered = match &plan.sampling {
            None => Err(not_found(SAMPLING_METHOD)),
            Some(Sampling::Reply(text)) => Ok(sampled_result(text, REPLY_MODEL)),
            Some(Sampling::Host(host)) if host == "sim" => {
                Ok(sampled_result(SIM_SAMPLING_TEXT, "sim"))
            }
            Some(Sampling::Host(host)) => match &plan.sampler {
                None => Err(SamplingFailed(format!(
                    "sampling host `{host}` is not built"
                ))),
                Some(sampler) => sampler.sample(&sampling_request(&params)).await.map(|s| {
                    record.input_tokens = s.input_tokens;
                    record.output_tokens = s.output_tokens;
                    sampled_result(&s.text, &s.model)
                }),
            }
            .map_err(|SamplingFailed(why)| {
                record.failed = Some(why.clone());
                ErrorData::internal_error(format!("sampling failed: {why}"), None)
            }),
        };
        record.latency_ms = ms(started);
        let (value, answer) = match &answered {
            Ok(result) => {
                let value = serde_json::to_value(result).unwrap_or_default();
                (value.clone(), Answer::Result(value))
            }
            Err(error) => error_json(error),
        };
        record.model = answered.as_ref().ok().map(|r| r.model.clone());
        record.answer = value;
        self.keep(record, answer);
        answered
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let started = Instant::now();
        let plan = self.plan();
        let params = params_json(&request);
        let (answered, misfit, note) = match &plan.elicitation {
            None => (Err(not_found(ELICITATION_METHOD)), None, None),
            Some(Elicitation::User) => {
                let (result, misfit, note) = answer_by_user(plan.user.as_deref(), &params).await;
                (Ok(result), misfit, note)
            }
            Some(how) => {
                let (result, misfit, note) = elicit_answer(how, &params);
                (Ok(result), misfit, note)
            }
        };
        let (value, answer) = match &answered {
            Ok(result) => (result.clone(), Answer::Result(result.clone())),
            Err(error) => error_json(error),
        };
        let record = AskRecord {
            answer: value,
            latency_ms: ms(started),
            misfit,
            note,
            ..AskRecord::new(ELICITATION_METHOD, params, plan.elicitation.is_some())
        };
        self.keep(record, answer);
        let result = answered?;
        serde_json::from_value(result)
            .map_err(|e| ErrorData::internal_error(format!("elicitation answer: {e}"), None))
    }
}

/// A sampling result with one text block.
fn sampled_result(text: &str, model: &str) -> CreateMessageResult {
    let value = json!({
        "role": "assistant",
        "content": {"type": "text", "text": text},
        "model": model,
        "stopReason": "endTurn",
    });
    serde_json::from_value(value).unwrap_or_else(|_| {
        CreateMessageResult::new(
            rmcp::model::SamplingMessage::assistant_text(text),
            model.to_owned(),
        )
    })
}

/// The request as a model reads it: each message's text blocks (other blocks as JSON).
pub fn sampling_request(params: &CreateMessageRequestParams) -> SamplingRequest {
    let value = params_json(params);
    let messages = (value["messages"].as_array().into_iter().flatten())
        .map(|m| {
            let role = m["role"].as_str().unwrap_or("user").to_owned();
            let blocks: Vec<Value> = match &m["content"] {
                Value::Array(items) => items.clone(),
                one => vec![one.clone()],
            };
            let text: Vec<String> = (blocks.iter())
                .map(|b| match b["text"].as_str() {
                    Some(text) => text.to_owned(),
                    None => b.to_string(),
                })
                .collect();
            (role, text.join("\n"))
        })
        .collect();
    SamplingRequest {
        system: params.system_prompt.clone(),
        messages,
        max_tokens: params.max_tokens,
        temperature: params.temperature,
    }
}

/// The answer to an elicitation (`{"action": …, "content": …}`), the schema's complaint when the
/// task's answers do not fit (then declined, not sent), and a note.
pub fn elicit_answer(how: &Elicitation, params: &Value) -> (Value, Option<String>, Option<String>) {
    let decline = json!({"action": "decline"});
    match how {
        Elicitation::Action(ElicitAction::Decline) => (decline, None, None),
        Elicitation::Action(ElicitAction::Cancel) => (json!({"action": "cancel"}), None, None),
        // The user's answers need the user: see `answer_by_user`.
        Elicitation::User => (decline, None, Some(NO_USER_NOTE.to_owned())),
        Elicitation::Answers(answers) => fitted(answers, params),
    }
}

/// Given answers, accepted if they fit the request's `requestedSchema`, else declined with the
/// schema's complaint; a URL elicitation (no form) is declined with a note.
fn fitted(answers: &Map<String, Value>, params: &Value) -> (Value, Option<String>, Option<String>) {
    let decline = json!({"action": "decline"});
    if params["mode"] == "url" || params.get("requestedSchema").is_none() {
        let note = "a URL elicitation has no form to fill: declined".to_owned();
        return (decline, None, Some(note));
    }
    match misfit(&params["requestedSchema"], answers) {
        None => (json!({"action": "accept", "content": answers}), None, None),
        Some(complaint) => (decline, Some(complaint), None),
    }
}

/// `elicitation: {user: true}`: the trial's simulated user answers the request (its message
/// and `requestedSchema`), and its answers are checked against the schema as a task's
/// `{answers: …}` are. With no user in the trial ([`AskPlan::user`] `None`, until the runner
/// lends one: `runner::asks::plan_of`), the request is declined with the note [`NO_USER_NOTE`].
/// Returns the answer, the schema's complaint, and a note.
pub async fn answer_by_user(
    user: Option<&dyn ElicitedUser>,
    params: &Value,
) -> (Value, Option<String>, Option<String>) {
    let decline = json!({"action": "decline"});
    let Some(user) = user else {
        return (decline, None, Some(NO_USER_NOTE.to_owned()));
    };
    let message = params["message"].as_str().unwrap_or_default();
    match user.answer(message, &params["requestedSchema"]).await {
        Ok(Some(answers)) => fitted(&answers, params),
        Ok(None) => (
            decline,
            None,
            Some("the simulated user declined".to_owned()),
        ),
        Err(SamplingFailed(why)) => (decline, None, Some(format!("the simulated user: {why}"))),
    }
}

/// Why `answers` do not fit the request's `requestedSchema`, in the schema's words (every
/// complaint, `; `-joined); `None` when they fit.
pub fn misfit(schema: &Value, answers: &Map<String, Value>) -> Option<String> {
    let validator = match jsonschema::validator_for(schema) {
        Ok(v) => v,
        Err(e) => {
            return Some(format!(
                "the request's requestedSchema is not a valid schema: {e}"
            ))
        }
    };
    let instance = Value::Object(answers.clone());
    let complaints: Vec<String> = validator
        .iter_errors(&instance)
        .map(|e| {
            let at = e.instance_path().to_string();
            match at.is_empty() {
                true => e.to_string(),
                false => format!("{at}: {e}"),
            }
        })
        .collect();
    (!complaints.is_empty()).then(|| complaints.join("; "))
}

impl McpConnection {
    /// Installs how the trial that now holds this connection answers the server's requests,
    /// and starts its record afresh.
    pub fn install_asks(&self, plan: AskPlan) {
        let mut slot = lock(&self.asks);
        slot.plan = plan;
        slot.log.clear();
    }

    /// The requests the server made since [`install_asks`](Self::install_asks), and how they
    /// were answered; the plan is removed (later requests are answered as unprepared).
    pub fn take_asks(&self) -> Vec<AskRecord> {
        let mut slot = lock(&self.asks);
        slot.plan = AskPlan::default();
        std::mem::take(&mut slot.log)
    }

    /// The turn of a trial that answers the server's requests on this connection: hold it from
    /// `install_asks` to `take_asks` (trials that share the connection wait for it).
    pub async fn ask_turn(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.ask_turn.lock().await
    }

    /// The asks made since the last request this connection sent (for its recording).
    pub(super) fn take_pending_asks(&self) -> Vec<Ask> {
        std::mem::take(&mut lock(&self.asks).pending)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn everything_schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "title": "String"},
                "check": {"type": "boolean"},
                "integer": {"type": "integer", "minimum": 1, "maximum": 100},
            },
            "required": ["name"],
        })
    }

    fn answers(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn answers_that_fit_are_accepted_and_misfits_say_why_and_decline() {
        let params = json!({"message": "m", "requestedSchema": everything_schema()});
        let how = Elicitation::Answers(answers(json!({"name": "Ada", "integer": 7})));
        let (answer, misfit, _) = elicit_answer(&how, &params);
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {"name": "Ada", "integer": 7}})
        );
        assert_eq!(misfit, None);
        let how = Elicitation::Answers(answers(json!({"integer": 700})));
        let (answer, misfit, _) = elicit_answer(&how, &params);
        assert_eq!(answer, json!({"action": "decline"}));
        let misfit = misfit.unwrap();
        assert!(
            misfit.contains("\"name\" is a required property"),
            "{misfit}"
        );
        assert!(
            misfit.contains("/integer: 700 is greater than the maximum of 100"),
            "{misfit}"
        );
    }

    #[test]
    fn actions_and_the_user_are_answered_as_said() {
        let params = json!({"message": "m", "requestedSchema": everything_schema()});
        let cancel = Elicitation::Action(ElicitAction::Cancel);
        assert_eq!(
            elicit_answer(&cancel, &params).0,
            json!({"action": "cancel"})
        );
        let (answer, _, note) = elicit_answer(&Elicitation::User, &params);
        assert_eq!(
            (answer, note.as_deref()),
            (json!({"action": "decline"}), Some(NO_USER_NOTE))
        );
    }

    /// A user who fills `name` with what it was told, or declines.
    struct FakeUser(Option<Value>);

    #[async_trait::async_trait]
    impl ElicitedUser for FakeUser {
        async fn answer(
            &self,
            _message: &str,
            _schema: &Value,
        ) -> Result<Option<Map<String, Value>>, SamplingFailed> {
            Ok(self.0.as_ref().map(|name| answers(json!({ "name": name }))))
        }
    }

    #[tokio::test]
    async fn the_simulated_user_answers_when_there_is_one_and_is_checked_like_answers() {
        let params = json!({"message": "m", "requestedSchema": everything_schema()});
        let ada = FakeUser(Some(json!("Ada")));
        let (answer, misfit, note) = answer_by_user(Some(&ada), &params).await;
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {"name": "Ada"}})
        );
        assert_eq!((misfit, note), (None, None));
        let (answer, misfit, _) = answer_by_user(Some(&FakeUser(Some(json!(3)))), &params).await;
        assert_eq!(answer, json!({"action": "decline"}));
        assert!(misfit.unwrap().contains("3 is not of type \"string\""));
        let (_, _, note) = answer_by_user(Some(&FakeUser(None)), &params).await;
        assert_eq!(note.as_deref(), Some("the simulated user declined"));
        let (_, _, note) = answer_by_user(None, &params).await;
        assert_eq!(note.as_deref(), Some(NO_USER_NOTE));
    }

    #[test]
    fn a_sampling_request_reads_as_messages() {
        let params: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "systemPrompt": "be brief",
            "maxTokens": 100,
        }))
        .unwrap();
        let request = sampling_request(&params);
        assert_eq!(request.messages, [("user".to_owned(), "hi".to_owned())]);
        assert_eq!(
            (request.system.as_deref(), request.max_tokens),
            (Some("be brief"), 100)
        );
        let result = serde_json::to_value(sampled_result("ok", REPLY_MODEL)).unwrap();
        assert_eq!(result["content"], json!({"type": "text", "text": "ok"}));
        assert_eq!(result["model"], REPLY_MODEL);
    }
}
