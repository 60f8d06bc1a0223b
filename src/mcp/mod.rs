//! MCP client on rmcp (stdio and Streamable HTTP, both protocol eras) and the embedded demo server.

pub mod asks;
pub mod client;
pub mod demo;
mod discover;
mod era;
mod handshake;
pub mod http;
mod listing;
pub mod proxy;
mod recording;
pub mod sandbox;
mod stderr;

pub use asks::{
    misfit, AskPlan, AskRecord, ElicitedUser, Sampled, Sampler, SamplingFailed, SamplingRequest,
};
pub use client::{CallOutcome, HandshakeFacts, McpConnection, McpError, ServerInfo};
pub use listing::ListedTools;
