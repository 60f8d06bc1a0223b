//! Replaying a server's own requests: the sampling and elicitation requests a recorded call made
//! of its client are sent to the replaying client again, in order, and its answers checked
//! against the recorded ones; a different answer makes the call unmatched (the recorded result
//! followed from the recorded answers).

use rmcp::model::ServerRequest;
use rmcp::service::RoleServer;
use rmcp::{Peer, ServiceError};
use serde_json::Value;

use crate::cassette::{canonical, Answer, Ask, ErrorAnswer, NO_RECORD};

/// Why a replayed call's requests to the client did not go as recorded.
#[derive(Debug, thiserror::Error)]
pub enum AskAgainError {
    #[error("the recorded {method} is not such a request: {reason}")]
    NotARequest { method: String, reason: String },
    #[error("the client did not answer: {0}")]
    NoAnswer(String),
    #[error(
        "the client answered the recorded {method} differently (recorded {recorded}, got {got})"
    )]
    Differently {
        method: String,
        recorded: String,
        got: String,
    },
}

/// Sends each recorded ask to the client and compares its answer with the recorded one;
/// `Err` says the first that differs.
pub async fn ask_again(peer: &Peer<RoleServer>, asks: &[Ask]) -> Result<(), AskAgainError> {
    for ask in asks {
        let request = serde_json::json!({"method": ask.method, "params": ask.params});
        let request: ServerRequest =
            serde_json::from_value(request).map_err(|e| AskAgainError::NotARequest {
                method: ask.method.clone(),
                reason: e.to_string(),
            })?;
        let got = answer_of(peer.send_request(request).await)?;
        if comparable(&got) != comparable(&ask.answer) {
            return Err(AskAgainError::Differently {
                method: ask.method.clone(),
                recorded: shown(&ask.answer),
                got: shown(&got),
            });
        }
    }
    Ok(())
}

/// What the client answered, as a cassette answer.
fn answer_of(answer: Result<impl serde::Serialize, ServiceError>) -> Result<Answer, AskAgainError> {
    match answer {
        Ok(result) => {
            let mut value = serde_json::to_value(result).unwrap_or_default();
            if let Some(map) = value.as_object_mut() {
                map.remove("_meta");
            }
            Ok(Answer::Result(value))
        }
        Err(ServiceError::McpError(e)) => Ok(Answer::Error(ErrorAnswer {
            code: i64::from(e.code.0),
            message: e.message.to_string(),
            data: None,
        })),
        Err(e) => Err(AskAgainError::NoAnswer(crate::error::chain(&e))),
    }
}

/// An answer as compared: canonical JSON, an error's code and message only.
fn comparable(answer: &Answer) -> Value {
    match answer {
        Answer::Result(value) => canonical(value),
        Answer::Error(e) => serde_json::json!({"code": e.code, "message": e.message}),
        Answer::Asked(_) => Value::Null,
    }
}

fn shown(answer: &Answer) -> String {
    comparable(answer).to_string()
}

/// The text of a call's answer when its asks were answered differently: the call is unmatched.
pub fn differently(what: &str, why: &AskAgainError) -> String {
    format!("{NO_RECORD}{what} after its requests to the client: {why}")
}
