//! Cassettes: a server's lists and answers recorded into a versioned JSON Lines file, read back
//! with `file:line` errors, and answered from by the replay matcher. Data only: nothing a
//! cassette holds is ever executed (docs/replay-overlay.md).

mod format;
mod matcher;
mod read;
mod recorder;

pub use format::{
    canonical, Answer, Ask, Asked, Cassette, Entry, ErrorAnswer, Handshake, Header, ListKind,
    Method, Request, ServerFacts, VERSION,
};
pub use matcher::{Matcher, Reply, Session, Unmatched, NO_RECORD};
pub use read::CassetteError;
pub use recorder::{Recorder, SessionRecorder};
