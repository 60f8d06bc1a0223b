//! Connects to one MCP server (stdio child or Streamable HTTP), lists its tools, calls them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::config::ServerSpec;

/// What the server said about itself at connection time.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    pub name: String,
    pub version: String,
    /// The protocol version agreed on.
    pub protocol_version: String,
    /// `legacy` (initialize) or `modern` (server/discover), whichever was used.
    pub era: String,
    pub instructions: Option<String>,
}

/// The outcome of one `tools/call`.
#[derive(Debug, Clone, PartialEq)]
pub enum CallOutcome {
    /// The server answered with a result (which may have `isError: true`).
    Result {
        is_error: bool,
        /// The content as text for the model: text blocks joined, other blocks as JSON,
        /// or the structured content when there is no text.
        text: String,
    },
    /// The server answered with a JSON-RPC error.
    ProtocolError { code: i64, message: String },
    /// No answer within the call timeout.
    Timeout,
}

/// A failure that is not the model's: the server could not be reached, died, or broke protocol.
#[derive(Debug, thiserror::Error)]
pub enum McpError {
    #[error("failed to start server `{server}`: {reason}{}", stderr_tail(.stderr))]
    Start {
        server: String,
        reason: String,
        stderr: String,
    },
    #[error("server `{server}` connection failed: {reason}{}", stderr_tail(.stderr))]
    Connection {
        server: String,
        reason: String,
        stderr: String,
    },
}

fn stderr_tail(stderr: &str) -> String {
    if stderr.trim().is_empty() {
        String::new()
    } else {
        format!("\n--- last lines of its stderr ---\n{}", stderr.trim_end())
    }
}

/// An open connection to one server.
pub struct McpConnection {
    _private: (),
}

impl McpConnection {
    /// Starts (stdio) or reaches (HTTP) the server and completes the handshake of its era.
    pub async fn connect(spec: &ServerSpec) -> Result<Self, McpError> {
        let _ = spec;
        todo!("mcp client")
    }

    pub fn server_info(&self) -> &ServerInfo {
        todo!("mcp client")
    }

    /// All tools, following every page of `tools/list`, never from a cache.
    pub async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        todo!("mcp client")
    }

    /// Calls a tool; a JSON-RPC error or timeout is an outcome, a dead connection an error.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, serde_json::Value>>,
        timeout: Duration,
    ) -> Result<CallOutcome, McpError> {
        let _ = (name, arguments, timeout);
        todo!("mcp client")
    }

    /// The last lines the server wrote to stderr (stdio servers).
    pub fn stderr_tail(&self) -> String {
        String::new()
    }

    /// Closes the connection and, for stdio, ends the process.
    pub async fn close(self) {}
}
