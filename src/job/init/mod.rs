//! `mcpeval init`: a starter suite drafted from a live server. This first part drafts call
//! tasks (no model) that pin today's answers; see docs/init.md.

mod args_from_schema;
mod calls;
mod ci;
mod ci_update;
mod ci_workflow;
mod draft;
pub mod model_tasks;
pub mod models;
mod models_write;
mod templates;
mod verify;
mod write;
mod writer;
mod writer_parse;
mod writer_prompt;

pub use ci::{CiError, CiFiles, CiReport};
pub use ci_update::nothing_new;
pub use draft::{init, writes, InitError, InitOutcome, InitRequest};
pub use write::{Files, LeftOut, Report};
