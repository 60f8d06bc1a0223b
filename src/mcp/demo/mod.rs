//! The demo MCP server: releases 1.4.0, 1.5.0 and 2.0.0 of a small issue tracker.

mod args;
mod catalogue;
mod data;
mod extras;
mod handler;
pub mod quirks;
mod serve;
mod settle;
#[cfg(test)]
mod tests;

pub use catalogue::{instructions, tool, tools, Release, UnknownRelease, RELEASES, SERVER_NAME};
pub use handler::{DemoServer, DENY_ALL_ENV};
pub use serve::{serve_http, serve_stdio, spawn_http, DemoHttpServer};
