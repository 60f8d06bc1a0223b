//! The simulated user of a conversation (`user:`): who writes the next user message after each
//! answer of the model, and when the conversation ends.
//!
//! A real model plays the user from the persona and the goal and sees only what a user sees:
//! its own messages and the model's answers, never tool calls or results. It ends the
//! conversation by answering `DONE`. The `sim` host plays a deterministic user instead: each
//! reply restates the goal as a request, until `done_when` holds or `max_turns` is reached;
//! without `done_when` it stops after the first user turn in which the model made a call.

use crate::host::{CompletionRequest, HostError, Message, Model, RequestContext, Usage};
use crate::suite::SimulatedUser;

use super::conversation::UserTurnRecord;

/// The word a user model answers with to end the conversation.
pub const DONE: &str = "DONE";

/// What plays the user of one trial.
pub struct UserPlayer<'a> {
    pub spec: &'a SimulatedUser,
    /// The user host's model; the deterministic sim user when it is the simulated model.
    pub model: &'a dyn Model,
    /// The baseline trial's user messages, sent again in their order (`--replay-user-turns`;
    /// the first is the task's `prompt`); empty otherwise.
    pub replay: &'a [String],
}

/// The next thing the user does.
#[derive(Debug, PartialEq)]
pub enum Reply {
    /// A message, and the user model's tokens for it (zero for the sim user).
    Says(String, Usage),
    /// The user ends the conversation, and the user model's tokens for saying so.
    Done(Usage),
}

impl UserPlayer<'_> {
    /// The user's reply after the turns so far (the last one just answered). `made_call`: the
    /// last turn made a tool call.
    pub async fn reply(
        &self,
        turns: &[UserTurnRecord],
        made_call: bool,
        seed: u64,
        context: &RequestContext,
    ) -> Result<Reply, HostError> {
        if self.model.is_simulated() {
            let stop = self.spec.done_when.is_none() && made_call;
            return Ok(match stop {
                true => Reply::Done(Usage::default()),
                false => Reply::Says(self.spec.goal.clone(), Usage::default()),
            });
        }
        let request = CompletionRequest {
            messages: vec![
                Message::System {
                    content: system(self.spec),
                },
                Message::User {
                    content: transcript(turns),
                },
            ],
            tools: Vec::new().into(),
            seed,
            context: context.clone(),
        };
        let completion = self.model.complete(&request).await?;
        let text = completion.content.unwrap_or_default();
        let text = text.trim();
        let said_done = text
            .trim_matches(|c: char| !c.is_alphanumeric())
            .eq_ignore_ascii_case(DONE);
        Ok(match text.is_empty() || said_done {
            true => Reply::Done(completion.usage),
            false => Reply::Says(text.to_owned(), completion.usage),
        })
    }
}

/// The user model's instructions: who it is, what it wants, how it ends.
fn system(spec: &SimulatedUser) -> String {
    let persona = spec
        .persona
        .as_deref()
        .map(|p| format!("Who you are: {p}\n"))
        .unwrap_or_default();
    format!(
        "You play a user talking to an AI assistant that can use tools. Stay in the role; never \
         say you are simulated.\n{persona}Your goal: {goal}\nYou see only your own messages and \
         the assistant's replies. Write your next message to the assistant: one or two \
         sentences, as this user would write them, to get the goal done (answer its questions, \
         correct it, or ask again). When the goal has been met, or clearly cannot be, answer \
         with exactly: {DONE}",
        goal = spec.goal
    )
}

/// The conversation as the user saw it.
fn transcript(turns: &[UserTurnRecord]) -> String {
    let mut text = String::from("The conversation so far:\n");
    for t in turns {
        text.push_str(&format!("\nYou: {}\n", t.message));
        let answer = t
            .answer
            .as_deref()
            .unwrap_or("(the assistant gave no answer)");
        text.push_str(&format!("Assistant: {answer}\n"));
    }
    text.push_str(&format!("\nYour next message (or {DONE}):"));
    text
}
