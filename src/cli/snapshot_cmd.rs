//! `mcpeval snapshot` and `mcpeval diff`: a server's contract into a directory, two of them into
//! classified changes.

use std::path::Path;

use super::args::SnapshotArgs;
use super::out::outln;
use crate::config::resolve_server;
use crate::contract::{self, Snapshot};
use crate::error::{Exit, Failure};

/// Takes the snapshot (and one per auth profile, in `DIR/<profile>/`).
pub async fn snapshot(args: &SnapshotArgs) -> Result<Exit, Failure> {
    let mut profiles: Vec<Option<&String>> = vec![None];
    profiles.extend(args.auth_profile.iter().map(Some));
    for profile in profiles {
        let auth: Vec<String> = profile.into_iter().cloned().collect();
        let mut spec = resolve_server(args.config.as_deref(), &args.server, &auth)?;
        crate::job::read_served_files(&spec)?;
        if let Some(era) = args.protocol_era {
            spec.protocol_era = era;
        }
        spec.client = args.client_profile.unwrap_or_default();
        let dir = match profile {
            Some(name) => args.out.join(name),
            None => args.out.clone(),
        };
        let snapshot = contract::take(&spec)
            .await
            .map_err(|e| Failure::from(e).context(format!("`{}`", spec.display())))?;
        snapshot.write(&dir)?;
        outln!("{}", describe(&snapshot, &dir));
    }
    Ok(Exit::Ok)
}

fn describe(s: &Snapshot, dir: &Path) -> String {
    let version = s
        .server
        .pointer("/serverInfo/version")
        .and_then(|v| v.as_str())
        .unwrap_or("?");
    let name = s
        .server
        .pointer("/serverInfo/name")
        .and_then(|v| v.as_str())
        .unwrap_or("server");
    format!(
        "{name} {version}: {} tools, {} resources, {} templates, {} prompts → {}",
        s.tools.len(),
        s.resources.len(),
        s.resource_templates.len(),
        s.prompts.len(),
        dir.display()
    )
}
