//! One trial: the agent loop between a model and an MCP server's tools, and its record.

mod record;

pub use record::{Episode, Side, ToolCallRecord};
