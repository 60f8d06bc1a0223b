//! Tests of verbatim values (paths, URLs, addresses, ids) against a filesystem-like tool list
//! (server-filesystem's read-only tools and `move_file`, their schemas as published) and small
//! made-up tools.

use serde_json::{json, Value};

use super::tests::{only_call, rate, request, sim, tool};
use crate::host::ToolSpec;

fn path_only() -> Value {
    json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}}})
}

fn fs_tools() -> Vec<ToolSpec> {
    let lines = |w: &str| json!({"type": "number", "description": format!("If provided, returns only the {w} N lines of the file")});
    vec![
        tool("read_file", "Read File (Deprecated)",
            "Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.",
            json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}, "head": lines("first"), "tail": lines("last")}})),
        tool("read_text_file", "Read Text File",
            "Read the complete contents of a file from the file system as text. Use this tool when you need to examine the contents of a single file. Only works within allowed directories.",
            json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}, "head": lines("first"), "tail": lines("last")}})),
        tool("read_media_file", "Read Media File",
            "Read a file and return it as a base64-encoded content block with its MIME type. Image and audio files are returned as image/audio content. Only works within allowed directories.",
            path_only()),
        tool("read_multiple_files", "Read Multiple Files",
            "Read the contents of multiple files simultaneously. Each file's content is returned with its path as a reference. Only works within allowed directories.",
            json!({"type": "object", "required": ["paths"], "properties": {"paths": {"type": "array", "items": {"type": "string"}, "description": "Array of file paths to read."}}})),
        tool("list_directory", "List Directory",
            "Get a detailed listing of all files and directories in a specified path. Only works within allowed directories.",
            path_only()),
        tool("directory_tree", "Directory Tree",
            "Get a recursive tree view of files and directories as a JSON structure. Only works within allowed directories.",
            json!({"type": "object", "required": ["path"], "properties": {"path": {"type": "string"}, "excludePatterns": {"type": "array", "items": {"type": "string"}}}})),
        tool("search_files", "Search Files",
            "Recursively search for files and directories matching a pattern. The patterns should be glob-style patterns.",
            json!({"type": "object", "required": ["path", "pattern"], "properties": {"path": {"type": "string"}, "pattern": {"type": "string"}, "excludePatterns": {"type": "array", "items": {"type": "string"}}}})),
        tool("list_allowed_directories", "List Allowed Directories",
            "Returns the list of directories that this server is allowed to access.",
            json!({"type": "object", "properties": {}})),
        tool("move_file", "Move File",
            "Move or rename files and directories. Both source and destination must be within allowed directories.",
            json!({"type": "object", "required": ["source", "destination"], "properties": {"source": {"type": "string"}, "destination": {"type": "string"}}})),
    ]
}

fn fs(prompt: &str) -> impl Fn(u64) -> crate::host::CompletionRequest + '_ {
    move |seed| request("", fs_tools(), prompt, seed)
}

#[test]
fn paths_reach_the_arguments_verbatim_and_pick_the_tool() {
    let cases: &[(&str, &str, Value)] = &[
        (
            "Read the file /tmp/fixture/notes/todo.txt",
            "read_text_file",
            json!({"path": "/tmp/fixture/notes/todo.txt"}),
        ),
        (
            "Show the directory tree of /tmp/fixture",
            "directory_tree",
            json!({"path": "/tmp/fixture"}),
        ),
        (
            "Read the image /tmp/fixture/logo.png",
            "read_media_file",
            json!({"path": "/tmp/fixture/logo.png"}),
        ),
        (
            "Search for files matching '**/*.txt' in ~/fixture",
            "search_files",
            json!({"path": "~/fixture", "pattern": "**/*.txt"}),
        ),
        (
            "Read the files /tmp/a.md and notes/b.txt",
            "read_multiple_files",
            json!({"paths": ["/tmp/a.md", "notes/b.txt"]}),
        ),
        (
            "Move /tmp/a.txt to /tmp/archive/a.txt",
            "move_file",
            json!({"source": "/tmp/a.txt", "destination": "/tmp/archive/a.txt"}),
        ),
        (
            "Rename 'draft.md' to 'final.md'",
            "move_file",
            json!({"source": "draft.md", "destination": "final.md"}),
        ),
    ];
    for (prompt, want, args) in cases {
        let r = rate(fs(prompt), want, |a| a == args);
        assert!(r >= 0.6, "{prompt}: {want} {args} in {r}");
    }
    // Without a path, the tool that needs none.
    let r = rate(
        fs("Which directories are you allowed to access?"),
        "list_allowed_directories",
        |a| a == &json!({}),
    );
    assert!(r >= 0.8, "{r}");
    for prompt in [
        "What is the capital of France?",
        "Thanks, that was helpful!",
        "Explain in one sentence what a glob pattern is.",
    ] {
        let c = sim().respond(&request("", fs_tools(), prompt, 3));
        assert!(c.tool_calls.is_empty(), "{prompt}: {c:?}");
    }
}

#[test]
fn urls_addresses_and_ids_stay_whole() {
    let tools = vec![
        tool(
            "fetch_page",
            "Fetch page",
            "Fetch a web page and return its text.",
            json!({"type": "object", "required": ["url"], "properties": {"url": {"type": "string", "format": "uri"}}}),
        ),
        tool(
            "send_invite",
            "Send invite",
            "Send an invitation e-mail to a person.",
            json!({"type": "object", "required": ["email"], "properties": {"email": {"type": "string"}}}),
        ),
        tool(
            "get_order",
            "Get order",
            "Get one order by its id.",
            json!({"type": "object", "required": ["order_id"], "properties": {"order_id": {"type": "string", "description": "The order's id"}}}),
        ),
    ];
    let call = |prompt: &str| only_call(&sim().respond(&request("", tools.clone(), prompt, 1)));
    assert_eq!(
        call("Fetch https://example.com/docs/a_b.html?x=1&y=2."),
        (
            "fetch_page".into(),
            json!({"url": "https://example.com/docs/a_b.html?x=1&y=2"})
        )
    );
    assert_eq!(
        call("Send an invite to maria.lopez+qa@example.co.uk"),
        (
            "send_invite".into(),
            json!({"email": "maria.lopez+qa@example.co.uk"})
        )
    );
    assert_eq!(
        call("Get the order INV-2024-001"),
        ("get_order".into(), json!({"order_id": "INV-2024-001"}))
    );
}
