//! `mcpeval init`: a starter suite drafted from a live server. This first part drafts call
//! tasks (no model) that pin today's answers; see docs/init.md.

mod args_from_schema;
mod calls;
mod draft;
mod write;

pub use draft::{init, writes, InitError, InitOutcome, InitRequest};
pub use write::{Files, LeftOut, Report};
