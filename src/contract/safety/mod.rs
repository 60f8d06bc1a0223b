//! Description safety: what a server's tool, prompt and parameter descriptions and its
//! instructions tell the model beyond what the tools do (hidden characters, orders about other
//! tools or the user, files and secrets sent away, encoded blobs, outsized descriptions).
//! `mcpeval check`'s smoke stage reports the findings the baseline did not have. The rules and
//! their sources: docs/description-safety.md.

mod chars;
mod rules;
mod scan;
#[cfg(test)]
mod tests;

pub use scan::{new_findings, scan, texts_read, Finding, Listing, Rule};
