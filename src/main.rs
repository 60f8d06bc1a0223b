//! The `mcpeval` binary: parse arguments, call the library, map errors to exit codes.

fn main() {}
