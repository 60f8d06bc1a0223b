//! MCP client on rmcp (stdio and Streamable HTTP, both protocol eras) and the embedded demo server.

pub mod client;
pub mod demo;
pub mod http;
pub mod proxy;
mod recording;
pub mod sandbox;

pub use client::{CallOutcome, HandshakeFacts, McpConnection, McpError, ServerInfo};
