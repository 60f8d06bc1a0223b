//! Server connections for trials, shared or not as the isolation setting says.

use std::collections::HashMap;
use std::sync::Arc;

use tokio::sync::{Mutex, OnceCell};

use crate::cassette::Recorder;
use crate::config::ToolOrder;
use crate::config::{Isolation, ServerSpec};
use crate::episode::{Offer, Side, ToolView};
use crate::host::HostProfile;
use crate::mcp::{McpConnection, McpError, ServerInfo};
use crate::suite::AskCapabilities;

/// A live server with what it listed once at connection time.
pub struct Server {
    pub connection: McpConnection,
    pub tools: Vec<rmcp::model::Tool>,
    /// The `ttlMs` its `tools/list` answer advertised (`None`: none).
    pub tools_ttl_ms: Option<u64>,
    pub info: ServerInfo,
    /// How long its start took: the process started, the handshake and the listing.
    pub started_in: std::time::Duration,
    views: Views,
}

/// The tools of one list as each host shows them (by host index), made on a host's first trial
/// and shared by its later ones: a trial copies no schema.
#[derive(Default)]
pub struct Views(std::sync::Mutex<HashMap<usize, Arc<ToolView>>>);

impl Views {
    /// `tools` as the host with this index and profile shows them to its model in a trial
    /// `offer` describes; made once per host unless the profile shuffles them per trial.
    pub fn of(
        &self,
        tools: &[rmcp::model::Tool],
        host: usize,
        profile: &HostProfile,
        offer: &Offer<'_>,
    ) -> Arc<ToolView> {
        if profile.tool_order == ToolOrder::Shuffle {
            return Arc::new(ToolView::new(tools, profile, offer));
        }
        let mut views = self.0.lock().unwrap_or_else(|e| e.into_inner());
        views
            .entry(host)
            .or_insert_with(|| Arc::new(ToolView::new(tools, profile, offer)))
            .clone()
    }
}

impl Server {
    /// Connects and lists the tools: one process start, one listing, for all the trial's calls.
    /// With a `recorder` (`run --record`), the connection's answers are recorded into it.
    pub async fn connect(
        spec: &ServerSpec,
        recorder: Option<&Arc<Recorder>>,
    ) -> Result<Self, McpError> {
        let start = std::time::Instant::now();
        let mut connection = McpConnection::connect(spec).await?;
        if let Some(recorder) = recorder {
            connection.record_into(recorder).await?;
        }
        let listed = connection.list_tools_with_ttl().await?;
        let info = connection.server_info().clone();
        Ok(Self {
            connection,
            tools: listed.tools,
            tools_ttl_ms: listed.ttl_ms,
            info,
            started_in: start.elapsed(),
            views: Views::default(),
        })
    }

    /// The tools as the host with this index and profile shows them to its model in a trial
    /// `offer` describes; made once per host unless the profile shuffles them per trial.
    pub fn view(&self, host: usize, profile: &HostProfile, offer: &Offer<'_>) -> Arc<ToolView> {
        self.views.of(&self.tools, host, profile, offer)
    }
}

/// Which trials share a server: none (`trial`), those of one task and side (`task`), or all of one
/// side (`run`). HTTP servers are run by the user and so are always shared; each connection is its
/// own session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct PoolKey {
    side: Side,
    task: Option<usize>,
    /// What the connection declares besides its profile: a trial is never handed a connection
    /// that declares other capabilities than its task needs.
    asks: AskCapabilities,
}

type Slot = Arc<OnceCell<Arc<Server>>>;

/// The key trials share a server under, or `None` when each trial has its own.
fn pool_key(
    isolation: Isolation,
    side: Side,
    task: usize,
    asks: AskCapabilities,
) -> Option<PoolKey> {
    match isolation {
        Isolation::Trial => None,
        Isolation::Task => Some(PoolKey {
            side,
            task: Some(task),
            asks,
        }),
        Isolation::Run => Some(PoolKey {
            side,
            task: None,
            asks,
        }),
    }
}

/// Hands out servers to trials and closes shared ones when their last trial is done.
///
/// With `isolation = "trial"` the pool keeps one server per side started ahead ("warm"): the
/// next trial's server starts while the models of the running trials think, so a server's
/// start-up is off the critical path of all but the first trial.
pub struct ServerPool {
    baseline: ServerSpec,
    candidate: ServerSpec,
    isolation: Isolation,
    slots: Mutex<HashMap<PoolKey, (Slot, usize)>>,
    warm: Mutex<WarmServers>,
    /// Servers started before the run (the preflight's), used before any new one is started:
    /// none of their tools has been called, so they are as fresh as a new process.
    ready: Mutex<[Option<Server>; 2]>,
    /// Per side, where its servers' answers are recorded (`run --record`).
    recorders: [Option<Arc<Recorder>>; 2],
    /// The server processes the trials will start, the `ready` ones not counted.
    starts: usize,
    /// Per task (by index), the capabilities its trials declare (`sampling:`, `elicitation:`).
    task_asks: Vec<AskCapabilities>,
}

type Starting = tokio::task::JoinHandle<Result<Server, McpError>>;

/// Per side: the server started ahead, and how many trials will still ask for one.
#[derive(Default)]
struct WarmServers {
    /// Per side, the server started ahead and the capabilities it declares.
    starting: [Option<(AskCapabilities, Starting)>; 2],
    remaining: [usize; 2],
}

/// A server lent to one trial; give it back with [`ServerPool::release`].
pub struct Lease {
    pub server: Arc<Server>,
    key: Option<PoolKey>,
}

impl ServerPool {
    /// `uses` lists (side, task) for every trial that will run, to know when a shared server is
    /// no longer needed. `ready`: a server per side already started and listed, whose tools have
    /// not been called (the preflight's), handed to the first trial of its side that needs a new
    /// one — so the run does not start every server twice.
    pub fn new(
        baseline: ServerSpec,
        candidate: ServerSpec,
        isolation: Isolation,
        uses: impl IntoIterator<Item = (Side, usize)>,
        ready: [Option<Server>; 2],
        task_asks: Vec<AskCapabilities>,
    ) -> Self {
        let mut slots = HashMap::new();
        let mut remaining = [0; 2];
        let asks_of = |task: usize| task_asks.get(task).copied().unwrap_or_default();
        for (side, task) in uses {
            remaining[side as usize] += 1;
            if let Some(key) = pool_key(isolation, side, task, asks_of(task)) {
                slots.entry(key).or_insert_with(|| (Slot::default(), 0)).1 += 1;
            }
        }
        let needed = match isolation {
            Isolation::Trial => remaining.iter().sum(),
            Isolation::Task | Isolation::Run => slots.len(),
        };
        // A ready server serves its side's first trial (or shared key), when the side has one.
        let readies = (ready.iter().zip(remaining))
            .filter(|(server, uses)| server.is_some() && *uses > 0)
            .count();
        Self {
            baseline,
            candidate,
            isolation,
            slots: Mutex::new(slots),
            warm: Mutex::new(WarmServers {
                starting: [None, None],
                remaining,
            }),
            ready: Mutex::new(ready),
            recorders: [None, None],
            starts: needed.saturating_sub(readies),
            task_asks,
        }
    }

    /// The capabilities trials of `task` declare.
    fn asks_of(&self, task: usize) -> AskCapabilities {
        self.task_asks.get(task).copied().unwrap_or_default()
    }

    /// The side's server spec as a trial declaring `asks` connects with it.
    fn spec_for(&self, side: Side, asks: AskCapabilities) -> ServerSpec {
        let mut spec = self.spec(side).clone();
        spec.asks = asks;
        spec
    }

    /// Records each side's new servers into its recorder (baseline, candidate).
    pub fn recording(mut self, recorders: [Option<Arc<Recorder>>; 2]) -> Self {
        self.recorders = recorders;
        self
    }

    /// The server processes the trials will start, as the pool was told of them (a retry or an
    /// adaptive task's early stop changes it): the ready servers are not counted.
    pub fn planned_starts(&self) -> usize {
        self.starts
    }

    fn recorder(&self, side: Side) -> Option<&Arc<Recorder>> {
        self.recorders[side as usize].as_ref()
    }

    /// A server no trial has used, declaring `asks`: the one started before the run if it
    /// declares them, else a new one.
    async fn fresh(&self, side: Side, asks: AskCapabilities) -> Result<Server, McpError> {
        let ready = {
            let mut ready = self.ready.lock().await;
            let slot = &mut ready[side as usize];
            match slot {
                Some(server) if server.connection.declared_asks() == asks => slot.take(),
                _ => None,
            }
        };
        match ready {
            Some(server) => Ok(server),
            None => Server::connect(&self.spec_for(side, asks), self.recorder(side)).await,
        }
    }

    pub fn spec(&self, side: Side) -> &ServerSpec {
        match side {
            Side::Baseline => &self.baseline,
            Side::Candidate => &self.candidate,
        }
    }

    pub async fn acquire(&self, side: Side, task: usize) -> Result<Lease, McpError> {
        let asks = self.asks_of(task);
        let Some(key) = pool_key(self.isolation, side, task, asks) else {
            return Ok(Lease {
                server: Arc::new(self.take_warm(side, asks).await?),
                key: None,
            });
        };
        let slot = {
            let mut slots = self.slots.lock().await;
            slots
                .entry(key)
                .or_insert_with(|| (Slot::default(), 1))
                .0
                .clone()
        };
        let server = slot
            .get_or_try_init(|| async { self.fresh(side, asks).await.map(Arc::new) })
            .await?
            .clone();
        Ok(Lease {
            server,
            key: Some(key),
        })
    }

    /// Gives a server back. A trial's own server is closed now; a shared one when its last trial
    /// is done, or now if it `failed` (so the next trial or retry starts a fresh one).
    pub async fn release(&self, lease: Lease, failed: bool) {
        let Lease { server, key } = lease;
        let Some(key) = key else {
            close(server).await;
            return;
        };
        let last = {
            let mut slots = self.slots.lock().await;
            let entry = slots.get_mut(&key);
            match entry {
                Some((slot, remaining)) => {
                    *remaining = remaining.saturating_sub(1);
                    if failed {
                        *slot = Slot::default();
                    }
                    *remaining == 0 || failed
                }
                None => true,
            }
        };
        if last {
            close(server).await;
        }
    }

    /// The server started ahead for this side (or a new one), and starts the next one ahead if
    /// more trials of the side are to come. A server started ahead that declares other
    /// capabilities than `asks` is closed, and the next one is started declaring `asks`.
    async fn take_warm(&self, side: Side, asks: AskCapabilities) -> Result<Server, McpError> {
        let (ready, other) = {
            let mut warm = self.warm.lock().await;
            let i = side as usize;
            warm.remaining[i] = warm.remaining[i].saturating_sub(1);
            let (ready, other) = match warm.starting[i].take() {
                Some((declared, handle)) if declared == asks => (Some(handle), None),
                Some((_, handle)) => (None, Some(handle)),
                None => (None, None),
            };
            if warm.remaining[i] > 0 {
                let spec = self.spec_for(side, asks);
                let recorder = self.recorder(side).cloned();
                warm.starting[i] = Some((
                    asks,
                    tokio::spawn(async move { Server::connect(&spec, recorder.as_ref()).await }),
                ));
            }
            (ready, other)
        };
        if let Some(Ok(Ok(server))) = match other {
            Some(handle) => Some(handle.await),
            None => None,
        } {
            server.connection.close().await;
        }
        match ready {
            Some(handle) => match handle.await {
                Ok(result) => result,
                Err(_) => Server::connect(&self.spec_for(side, asks), self.recorder(side)).await,
            },
            None => self.fresh(side, asks).await,
        }
    }

    /// Closes servers started ahead that no trial will use (a run cut short, or a resumed run
    /// with nothing left to do).
    pub async fn shutdown(&self) {
        let ready = std::mem::take(&mut *self.ready.lock().await);
        for server in ready.into_iter().flatten() {
            server.connection.close().await;
        }
        let mut warm = self.warm.lock().await;
        for slot in &mut warm.starting {
            if let Some((_, handle)) = slot.take() {
                handle.abort();
                if let Ok(Ok(server)) = handle.await {
                    server.connection.close().await;
                }
            }
        }
    }

    /// `n` trials of this side and task will not run after all (an adaptive task settled): a
    /// shared server closes once no remaining trial needs it, and none is started ahead for them.
    pub async fn forget_uses(&self, side: Side, task: usize, n: usize) {
        if n == 0 {
            return;
        }
        {
            let mut warm = self.warm.lock().await;
            let i = side as usize;
            warm.remaining[i] = warm.remaining[i].saturating_sub(n);
        }
        let Some(key) = pool_key(self.isolation, side, task, self.asks_of(task)) else {
            return;
        };
        let idle = {
            let mut slots = self.slots.lock().await;
            match slots.get_mut(&key) {
                Some((slot, remaining)) => {
                    *remaining = remaining.saturating_sub(n);
                    (*remaining == 0).then(|| std::mem::take(slot))
                }
                None => None,
            }
        };
        if let Some(server) = idle.and_then(|slot| slot.get().cloned()) {
            close(server).await;
        }
    }

    /// A retry will use the key again: count it.
    pub async fn add_use(&self, side: Side, task: usize) {
        self.warm.lock().await.remaining[side as usize] += 1;
        if let Some(key) = pool_key(self.isolation, side, task, self.asks_of(task)) {
            let mut slots = self.slots.lock().await;
            slots.entry(key).or_insert_with(|| (Slot::default(), 0)).1 += 1;
        }
    }
}

/// Closes a server once no trial holds it any more.
async fn close(server: Arc<Server>) {
    if let Ok(server) = Arc::try_unwrap(server) {
        server.connection.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(isolation: Isolation) -> ServerPool {
        let spec = ServerSpec::parse("s", "demo:1.4.0").expect("a demo spec");
        // Three tasks, two trials each, both sides.
        let uses = (0..3).flat_map(|task| {
            (0..2).flat_map(move |_| Side::BOTH.into_iter().map(move |side| (side, task)))
        });
        ServerPool::new(
            spec.clone(),
            spec,
            isolation,
            uses,
            [None, None],
            Vec::new(),
        )
    }

    #[test]
    fn trials_that_declare_other_capabilities_never_share_a_server() {
        let spec = ServerSpec::parse("s", "demo:1.4.0").expect("a demo spec");
        let uses = (0..3).flat_map(|task| {
            (0..2).flat_map(move |_| Side::BOTH.into_iter().map(move |side| (side, task)))
        });
        let sampling = AskCapabilities {
            sampling: true,
            elicitation: false,
        };
        let asks = vec![
            AskCapabilities::default(),
            sampling,
            AskCapabilities::default(),
        ];
        let pool = |isolation| {
            ServerPool::new(
                spec.clone(),
                spec.clone(),
                isolation,
                uses.clone(),
                [None, None],
                asks.clone(),
            )
        };
        // Under `run`, a side's trials share a server per set of capabilities: two per side.
        assert_eq!(pool(Isolation::Run).planned_starts(), 4);
        assert_eq!(pool(Isolation::Task).planned_starts(), 6);
        let run = pool(Isolation::Run);
        assert_ne!(
            pool_key(Isolation::Run, Side::Baseline, 0, run.asks_of(0)),
            pool_key(Isolation::Run, Side::Baseline, 1, run.asks_of(1))
        );
        assert_eq!(
            pool_key(Isolation::Run, Side::Baseline, 0, run.asks_of(0)),
            pool_key(Isolation::Run, Side::Baseline, 2, run.asks_of(2))
        );
        assert!(run.spec_for(Side::Candidate, sampling).asks.sampling);
    }

    #[test]
    fn a_trial_starts_a_server_a_task_side_or_run_shares_one() {
        assert_eq!(pool(Isolation::Trial).planned_starts(), 12);
        assert_eq!(pool(Isolation::Task).planned_starts(), 6);
        assert_eq!(pool(Isolation::Run).planned_starts(), 2);
    }
}
