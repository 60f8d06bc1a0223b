//! The servers mcpeval serves itself in front of another: a proxy that puts an overlay file over
//! a base server's lists and passes its calls through, over stdio or Streamable HTTP (with no
//! overlay, a bridge: any stdio server over HTTP).

mod asked;
mod handler;
pub mod overlay;
mod recorded;
mod replay;
mod serve;

pub use handler::{Calls, ProxyServer};
pub use overlay::{uri_template_matches, Overlay, OverlayError};
pub use recorded::{serve_recorded_stdio, RecordedServer};
pub use replay::{Replay, ReplaySession, UNMATCHED_META};
pub use serve::{serve_http, serve_stdio, spawn_http, start, ProxyError, ProxyHttpServer};
