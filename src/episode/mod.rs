//! One trial: the agent loop between a model and an MCP server's tools, and its record.

mod agent;
pub mod app;
mod conversation;
mod direct;
mod driver;
mod exposed;
mod facts;
mod record;
mod recover;
mod redact;
mod search;
mod sim_user;
pub mod text_calls;
mod tokens;
mod tools;

pub use agent::{recorded_result, run_trial, TrialInput, TrialOutput};
pub use conversation::{
    grade_calls, messages_sent, user_turns_json, Author, TurnFacts, UserTurnRecord,
};
pub use direct::{answer_text, check_after, run_call, run_fixtures, FixtureError, DIRECT_HOST};
pub use driver::Driver;
pub use facts::{server_error_line, EpisodeFacts};
pub use record::{AppFacts, Episode, ModelTurn, Side, ToolCallRecord, Transcript};
pub use redact::Redactor;
pub use search::{found_rank, SearchLog, ToolSearchFacts, SEARCH_LABEL};
pub use sim_user::{Reply, UserPlayer, DONE};
pub use text_calls::TextToolCalls;
pub use tools::{system_prompt, HostTool, Offer, ToolView};

#[cfg(test)]
mod agent_tests;
#[cfg(test)]
mod conversation_tests;
