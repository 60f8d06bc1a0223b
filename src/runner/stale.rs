//! The stale-list window (`run --stale-list`): the candidate's trials are offered the tool list
//! the baseline gave, as a client that listed the tools before a deploy still offers them until
//! its cached list expires, while every call goes to the candidate's server.

use std::sync::Arc;

use super::pool::Views;
use crate::episode::{Offer, ToolView};
use crate::host::HostProfile;

/// The baseline's tools, as the candidate's trials are offered them.
pub struct StaleList {
    /// The baseline's `tools/list`, as the pre-flight listed it.
    tools: Vec<rmcp::model::Tool>,
    views: Views,
}

impl StaleList {
    pub fn new(tools: Vec<rmcp::model::Tool>) -> Self {
        Self {
            tools,
            views: Views::default(),
        }
    }

    /// The baseline's tools as the host with this index and profile shows them in a candidate
    /// trial of `seed`: the very list its baseline trial is shown, in the same order. A name maps
    /// back to itself, so a call of a tool the candidate renamed or removed reaches the
    /// candidate under the old name, as a stale client sends it (`[renames]` are not followed).
    pub fn view(&self, host: usize, profile: &HostProfile, seed: u64) -> Arc<ToolView> {
        self.views
            .of(&self.tools, host, profile, &Offer::seeded(seed))
    }
}
