//! `mcpeval cassette check FILE...`: reads cassettes and says what each holds.

use std::collections::BTreeMap;

use super::args::CassetteAction;
use super::out::outln;
use crate::cassette::{Cassette, ListKind};
use crate::error::{Exit, Failure};

pub fn cassette(action: CassetteAction) -> Result<Exit, Failure> {
    match action {
        CassetteAction::Check { files } => {
            for file in &files {
                let cassette = Cassette::read(file).map_err(Failure::usage)?;
                for line in summary(&cassette) {
                    outln!("{}: {line}", file.display());
                }
            }
            Ok(Exit::Ok)
        }
    }
}

/// What a cassette holds, in a few lines.
fn summary(cassette: &Cassette) -> Vec<String> {
    let header = &cassette.header;
    let server = &header.server;
    let count = |kind| cassette.lists.get(&kind).map_or(0, Vec::len);
    let mut methods: BTreeMap<&str, usize> = BTreeMap::new();
    for entry in &cassette.entries {
        *methods.entry(entry.request.method.as_str()).or_default() += 1;
    }
    let methods: Vec<String> = methods.iter().map(|(m, n)| format!("{m} {n}")).collect();
    let several = (cassette.entries.iter())
        .filter(|e| e.answers.len() > 1)
        .count();
    vec![
        format!(
            "cassette {} of `{}` {} (protocol {}), recorded {}",
            header.cassette, server.name, server.version, server.protocol, header.recorded_at
        ),
        format!(
            "lists: {} tools, {} resources, {} resource templates, {} prompts",
            count(ListKind::Tools),
            count(ListKind::Resources),
            count(ListKind::ResourceTemplates),
            count(ListKind::Prompts)
        ),
        format!(
            "requests: {} ({}), answers: {}, requests with several answers: {several}",
            cassette.entries.len(),
            if methods.is_empty() {
                "none".to_owned()
            } else {
                methods.join(", ")
            },
            cassette.answers()
        ),
    ]
}
