//! `mcpeval init`: a starter suite drafted from a live server: call
//! tasks (no model) that pin today's answers, and model tasks verified through a host. It calls
//! no tool that may change the server's real state (guard.rs); see docs/init.md.

mod args_from_schema;
mod calls;
mod ci;
mod ci_state;
mod ci_update;
mod ci_workflow;
mod conversation;
mod draft;
pub mod guard;
pub mod model_tasks;
pub mod models;
mod models_write;
mod paths;
mod phrasing;
mod probes;
mod settle;
mod teardown;
mod templates;
mod todo;
mod unverified;
mod values;
mod verify;
mod write;
mod writer;
mod writer_parse;
mod writer_prompt;

pub use ci::{CiError, CiFiles, CiReport};
pub use ci_update::nothing_new;
pub use draft::{init, InitError, InitOutcome, InitRequest};
pub use unverified::console_lines as state_lines;
pub use write::{refused_words, Files, LeftOut, Report};
