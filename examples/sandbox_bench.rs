//! What a sandbox costs per server start (`scripts/bench` section 13): `SandboxCopies::make` on
//! the path given (a git repository with its `.git`, say), as each stdio server start makes it,
//! then the copy dropped (removed) as when the process ends; the median, minimum and maximum of
//! each over the copies, the tree's size, and whether the filesystem cloned the files.
//!
//! Usage: `cargo run --release --example sandbox_bench -- PATH [COPIES]`

use std::time::{Duration, Instant};

use mcpeval::config::{SandboxPath, ServerSpec};
use mcpeval::mcp::sandbox::{copy_stats, tree_size, SandboxCopies};

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: sandbox_bench PATH [COPIES]");
    let copies: usize = args
        .next()
        .map_or(30, |n| n.parse().expect("COPIES is a number"));
    let mut spec = ServerSpec::parse("bench", "server --repository {sandbox}").unwrap();
    spec.sandboxes = vec![SandboxPath::new(None, path.as_ref()).expect("a sandbox")];
    let (files, bytes) = tree_size(path.as_ref());
    let mut made = Vec::new();
    let mut removed = Vec::new();
    for _ in 0..copies {
        let started = Instant::now();
        let copy = SandboxCopies::make(&spec).unwrap().unwrap();
        made.push(started.elapsed());
        let started = Instant::now();
        drop(copy);
        removed.push(started.elapsed());
    }
    let stats = copy_stats();
    println!(
        "sandbox of {path}: {files} files, {:.1} MB; {copies} copies, {}",
        bytes as f64 / 1e6,
        if stats.cloned {
            "cloned (copy-on-write)"
        } else {
            "copied byte for byte"
        }
    );
    println!("copy:   {}", spread(&mut made));
    println!("remove: {}", spread(&mut removed));
}

fn spread(times: &mut [Duration]) -> String {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    format!(
        "median {:.1} ms (min {:.1}, max {:.1})",
        ms(times[times.len() / 2]),
        ms(times[0]),
        ms(times[times.len() - 1])
    )
}
