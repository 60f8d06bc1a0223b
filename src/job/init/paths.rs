//! The paths `mcpeval init` knows for path parameters of model tasks: absolute ones in the
//! server's command line and in its answers, and `{sandbox}` (or `{sandbox}/FILE`) where the
//! server runs on sandbox copies, so a task names the copy its trial runs on.

use serde_json::{Map, Value};

/// Adds the paths an answer names: absolute ones, and names with an extension under a
/// directory the call was asked about (`[FILE] notes.txt` of a listing of `/d`: `/d/notes.txt`).
pub fn learn_paths(args: &Map<String, Value>, text: &str, paths: &mut Vec<String>) {
    let dirs: Vec<&str> = (args.values())
        .filter_map(|v| v.as_str())
        .filter(|v| is_path(v))
        .collect();
    let mut found = known_words(text);
    for dir in &dirs {
        for word in known_words(text).into_iter().filter(|w| !is_path(w)) {
            let ext = word.rsplit_once('.').map(|(_, e)| e.len()).unwrap_or(0);
            if (1..=5).contains(&ext) && !word.contains("..") && !word.starts_with('.') {
                found.push(format!("{}/{word}", dir.trim_end_matches('/')));
            }
        }
    }
    for p in found.into_iter().filter(|p| is_path(p)) {
        if paths.len() < 40 && !paths.contains(&p) {
            paths.push(p);
        }
    }
}

/// An absolute path, or one under a sandbox copy (`{sandbox}`, `{sandbox.NAME}/x`).
fn is_path(word: &str) -> bool {
    (word.starts_with('/') && !word.starts_with("//")) || word.starts_with("{sandbox")
}

/// The words of `text`, split at white space and JSON punctuation, a `{sandbox}` placeholder
/// kept whole.
fn known_words(text: &str) -> Vec<String> {
    static PLACEHOLDER: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\{(sandbox(?:\.[A-Za-z0-9_-]+)?)\}").expect("a valid regex")
    });
    let hidden = PLACEHOLDER.replace_all(text, "\u{1}$1\u{2}");
    hidden
        .split(|c: char| c.is_whitespace() || "\"',[]{}()<>".contains(c))
        .map(|w| w.trim_end_matches(['.', ':', ';']))
        .map(|w| w.replace('\u{1}', "{").replace('\u{2}', "}"))
        .filter(|w| w.len() > 1 && !w.contains('*'))
        .collect()
}

/// The paths in the server's command line and in `texts` (the answers the call tasks got), for
/// path parameters, each once: absolute ones, and `{sandbox}` where the server runs on copies.
pub fn known_paths(spec: &crate::config::ServerSpec, texts: &[&str]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let args: &[String] = match &spec.transport {
        crate::config::Transport::Stdio { args, .. } => args,
        crate::config::Transport::Http { .. } => &[],
    };
    let words =
        (args.iter().flat_map(|a| known_words(a))).chain(texts.iter().flat_map(|t| known_words(t)));
    for w in words {
        // `--repository={sandbox}`: the value after `=`.
        let w = w.rsplit_once('=').map_or(w.as_str(), |(_, v)| v);
        if is_path(w) && !w.contains('*') && !out.iter().any(|p| p == w) {
            out.push(w.to_owned());
        }
    }
    out.truncate(20);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absolute_paths_and_sandbox_placeholders_are_known() {
        let spec =
            crate::config::ServerSpec::parse("s", "srv --repository={sandbox} /data").unwrap();
        let texts = [
            "{\"files\": [\"{sandbox}/notes.txt\", \"/etc/x\"]}",
            "see //host and *.md",
        ];
        assert_eq!(
            known_paths(&spec, &texts),
            ["{sandbox}", "/data", "{sandbox}/notes.txt", "/etc/x"]
        );
        let mut paths = Vec::new();
        let args = serde_json::json!({"path": "{sandbox}"});
        learn_paths(
            args.as_object().unwrap(),
            "[FILE] a.txt\n[DIR] sub",
            &mut paths,
        );
        assert_eq!(paths, ["{sandbox}/a.txt"]);
    }
}
