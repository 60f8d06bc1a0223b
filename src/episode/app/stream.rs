//! What the three apps' stream readers share: the trial's opening record, a call's arguments as
//! text, and a called tool's name as the episode records it.

use serde_json::Value;

use crate::episode::{AppFacts, TrialOutput};
use crate::host::Message;

/// A trial's record before the app's first event: the task's prompt as the user's message.
pub fn opening(prompt: &str) -> TrialOutput {
    TrialOutput {
        messages: vec![Message::User {
            content: prompt.to_owned(),
        }],
        ..TrialOutput::default()
    }
}

/// A call's arguments as the apps report them (an object, a JSON string, or nothing) as text.
pub fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        None | Some(Value::Null) => "{}".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
    }
}

/// The tool a call names, as the episode records it: the server's bare name (`bare`, what is
/// left of the app's `name` once its prefix for the server is taken off), or else one of the
/// app's own tools, kept under its name and counted in `facts.builtin_calls`.
pub fn called_tool(facts: &mut AppFacts, bare: Option<&str>, name: &str) -> String {
    match bare {
        Some(bare) => bare.to_owned(),
        None => {
            facts.builtin_calls.push(name.to_owned());
            name.to_owned()
        }
    }
}
