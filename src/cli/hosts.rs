//! What the hosts of a run report at its end: how far their concurrency backed off, and what
//! the response cache answered.

use std::sync::Arc;

use super::out::{errln, outln};
use crate::host::aimd::Congestion;
use crate::host::cache::ResponseCache;

/// Hosts whose provider throttled requests (429): how far their concurrency backed off.
pub(super) fn print_congestion(hosts: &[(String, Arc<Congestion>)]) {
    for (name, congestion) in hosts {
        let r = congestion.report();
        if r.throttled > 0 {
            outln!(
                "host {name}: {} requests throttled (429/529); concurrency backed off {} time(s), \
                 to {} at the lowest (of {}), {} at the end",
                r.throttled,
                r.decreases,
                r.lowest.floor(),
                r.max,
                r.limit.floor()
            );
        }
    }
}

/// How many model requests the response cache answered, and whether it could store the rest.
pub(super) fn print_cache_note(cache: Option<&ResponseCache>) {
    let Some(cache) = cache else {
        return;
    };
    let counts = cache.counts();
    if counts.requests() > 0 {
        outln!(
            "response cache: {} of {} model requests answered from {}",
            counts.hits,
            counts.requests(),
            cache.dir().display()
        );
    }
    if let Some(error) = cache.first_write_error() {
        errln!(
            "warning: {} answers could not be stored in the response cache: {error}",
            counts.write_errors
        );
    }
}
