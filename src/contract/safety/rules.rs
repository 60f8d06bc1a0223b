//! The rules that read one text (a description, a title, the instructions) on its own: hidden
//! characters, orders addressed to the model, sensitive files, sending data away, encoded blobs.
//! Each reports its first hit in the text, with how many there were.

use std::sync::LazyLock;

use regex::Regex;

use super::chars::{flagged, mixed_words, tag_text, visible, Hidden};
use super::scan::Rule;

/// One rule's hit in one text: where (char offset and length in the original text) and what.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Hit {
    pub rule: Rule,
    pub offset: usize,
    pub len: usize,
    pub message: String,
}

/// Phrases that speak to the model about its other tools, the user, or its instructions, each
/// with what it does in words. Built from the published attacks (Invariant Labs' tool
/// poisoning and shadowing examples, MCPTox's templates, promptfoo's MCP plugin, mcp-scan's
/// rules) and kept narrow: every pattern needs an order *and* its object ("do not tell" and
/// "the user"), so a description that only mentions users or other tools does not match.
const DIRECTIVES: &[(&str, &str)] = &[
    (
        "tells the model to ignore its other instructions",
        r"\b(ignore|disregard|forget|override|bypass)\s+(all\s+|any\s+|the\s+|your\s+|of\s+)*(previous|prior|above|earlier|preceding|other|existing|system|safety|original)\s+(instructions?|prompts?|rules|directions|guidelines|directives|messages)\b",
    ),
    (
        "tells the model to ignore its other instructions",
        r"\b(ignore|disregard|forget)\s+(all|everything)\s+(instructions?|you\s+were\s+told|above|before|else)\b",
    ),
    (
        "gives the model new instructions",
        r"\bnew\s+(system\s+)?instructions\s*:",
    ),
    (
        "tells the model to keep something from the user",
        r"\b(do\s+not|don'?t|never|must\s+not)\s+(tell|inform|mention|notify|alert|reveal|show|disclose|say|explain)\b[^.!?\n]{0,40}?\b(to\s+)?(the\s+)?users?\b",
    ),
    (
        "tells the model to keep something from the user",
        r"\bwithout\s+(telling|informing|notifying|alerting|letting)\s+(the\s+)?users?\b",
    ),
    (
        "tells the model to keep something from the user",
        r"\b(the\s+)?users?\s+(must|should|shall|need|needs)\s+(not|never)\s+(know|see|notice|find\s+out|learn|be\s+(told|informed|aware|notified))\b",
    ),
    (
        "tells the model to keep something from the user",
        r"\b(hide|conceal|keep)\s+(this|it|that|these|them)\s+(secret\s+|hidden\s+)?from\s+(the\s+)?users?\b",
    ),
    (
        "tells the model to keep something from the user",
        r"\b(do\s+not|don'?t|never)\s+(mention|reveal|disclose)\s+(this|that|these|the\s+(previous|above|following|file|step|instructions?))\b",
    ),
    (
        "claims the user's consent",
        r"\busers?\s+(has|have)\s+already\s+(consented|agreed|approved|authori[sz]ed)\b",
    ),
    (
        "orders the model's use of its other tools",
        r"\bbefore\s+((using|calling|invoking|executing|running|selecting)\s+)?(any|every|all|each)\s+(other\s+)?(tools?|functions?)\b",
    ),
    (
        "orders the model's use of its other tools",
        r"\b(call|use|invoke|run)\s+this\s+tool\s+(first\s+)?(before|prior\s+to)\s+(any|every|all|each|using|calling)\b",
    ),
    (
        "orders the model's use of its other tools",
        r"\balways\s+(call|use|invoke|run)\s+this\s+tool\s+first\b",
    ),
    (
        "orders the model's use of its other tools",
        r"\b(for|on|with|in)\s+(any|every|each|all)\s+(user\s+)?(requests?|quer(y|ies)|tasks?|messages?|prompts?)\b[^.!?\n]{0,40}?\b(call|use|invoke|run)\s+this\s+tool\b",
    ),
    (
        "shadows another tool",
        r"\binstead\s+of\s+((using|calling|invoking)\s+)?(the\s+)?`?(?P<tool>[a-z0-9_.-]+)`?\s+tool\b",
    ),
    (
        "shadows another tool",
        r"\bwhen\s+this\s+tool\s+is\s+(available|present|loaded|installed|enabled)\b[^.!?\n]{0,80}?\b(must|should|always|never)\b",
    ),
    (
        "shadows another tool",
        r"\bwhen(ever)?\s+(calling|using|invoking|running)\s+(the\s+)?`?(?P<tool>[a-z0-9_.-]+)`?(\s+tool)?\b[^.!?\n]{0,80}?\b(must|always|never)\b",
    ),
    (
        "shadows another tool",
        r"\bthe\s+`?(?P<tool>[a-z0-9_.-]+)`?\s+tool\s+(must|should|shall)\s+(always|never|only|now|also)\b",
    ),
    (
        "changes where another call sends its data",
        r"\b(change|set|replace|redirect|switch)\s+the\s+(recipient|destination|receiver|to\s+address|email\s+address|phone\s+number|webhook|endpoint)s?\s+(to|with)\b",
    ),
    (
        "speaks as the system",
        r"<\s*/?\s*(important|system|instructions?|secret|hidden|admin|critical|sys)\b[^>]{0,40}>",
    ),
    ("speaks as the system", r"\[\s*(important|system)\b"),
    (
        "speaks as the system",
        r"\b(important|critical|mandatory)\s+system\s+(note|instructions?|message|notice|requirement)\b",
    ),
    (
        "speaks as the system",
        r"\bsystem\s+(override|instructions?|prompt)\s*:",
    ),
    (
        "tells the model to act whatever the user says",
        r"\b(regardless\s+of|no\s+matter)\s+what\s+the\s+user\b",
    ),
    (
        "tells the model to act whatever the user says",
        r"\beven\s+if\s+the\s+user\s+(asks|says|requests|tells|did\s+not|does\s+not|doesn'?t)\b",
    ),
    (
        "asks for the conversation or the system prompt",
        r"\b(include|pass|send|put|append|copy|provide)\b[^.!?\n]{0,40}?\b(entire|full|complete|whole|previous)\s+(conversation|chat|context|message\s+history|history)\b",
    ),
    (
        "asks for the conversation or the system prompt",
        r"\b(include|pass|send|put|append|copy|provide|reveal)\b[^.!?\n]{0,40}?\b(your|the)\s+system\s+prompt\b",
    ),
];

/// Words that stand where a directive names a tool but name none: "when using this tool,
/// always pass an absolute path" is advice about the tool itself.
const NOT_A_TOOL: [&str; 8] = ["this", "that", "it", "the", "a", "an", "any", "each"];

/// Files that hold keys, tokens or a host's MCP configuration: a description has no business
/// naming them.
const SENSITIVE_PATHS: &str = r"(?i)(~|\$home|%userprofile%)?/?\.ssh\b|\bid_(rsa|dsa|ecdsa|ed25519)\b|(^|[\s'`(/=:])\.env(\.[a-z]+)?\b|\.aws/(credentials|config)\b|\bmcp\.json\b|\bclaude_desktop_config\.json\b|/etc/(passwd|shadow|sudoers)\b|\.npmrc\b|\.pypirc\b|\.netrc\b|\.git-credentials\b|\.docker/config\.json\b|\.kube/config\b|\.gnupg\b|\bwallet\.dat\b|\.(bash|zsh)_history\b|\.config/gcloud\b";

/// A verb of sending, then (in the same sentence, within 120 characters) somewhere to send to:
/// a URL, an e-mail address, an IP address or a phone number. A URL alone ("docs:
/// https://…") is not a finding.
const SENDING: &str = r"(?i)\b(send|sends|sent|sending|post|posts|upload|uploads|forward|forwards|transmit|transmits|exfiltrate|leak|bcc|cc|relay|relays|mirror|beacon)\b(?:[^.!?;\n]|[.!?;]\S){0,120}?((https?|ftp|wss?)://[^\s<>`)\]]+|\b[a-z0-9._%+-]+@[a-z0-9.-]+\.[a-z]{2,}\b|\b(\d{1,3}\.){3}\d{1,3}\b|\+\d[\d -]{7,16}\d)";

/// Destinations that are examples or this machine, never somewhere data is sent away to.
const HARMLESS_DESTINATION: &str = r"(?i)(example\.(com|org|net)|\.example\b|\.test\b|\.invalid\b|localhost|127\.0\.0\.1|0\.0\.0\.0|\[::1\])";

static DIRECTIVE_RES: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    DIRECTIVES
        .iter()
        .map(|(what, re)| (Regex::new(&format!("(?i){re}")).expect("regex"), *what))
        .collect()
});
static SENSITIVE_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(SENSITIVE_PATHS).expect("regex"));
static SENDING_RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(SENDING).expect("regex"));
static HARMLESS_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(HARMLESS_DESTINATION).expect("regex"));
static BASE64_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/_-]{64,}={0,2}").expect("regex"));
static HEX_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(0x)?[0-9a-fA-F]{64,}\b").expect("regex"));

/// Every rule's first hit in `text`.
pub(super) fn check(text: &str) -> Vec<Hit> {
    let mut hits = hidden(text);
    let (seen, map) = visible(text);
    // Words that mix in look-alike letters are read as Latin by the rules below (char for
    // char, so offsets hold), and named by a rule of their own.
    let (mixed, seen) = mixed_words(&seen);
    hits.extend(homoglyphs(&mixed, &seen, &map));
    let at = |byte: usize, end: usize| -> (usize, usize) {
        let start = seen[..byte].chars().count();
        let len = seen[byte..end].chars().count();
        let offset = map.get(start).copied().unwrap_or(0);
        let last = map
            .get(start + len.saturating_sub(1))
            .copied()
            .unwrap_or(offset);
        (offset, last + 1 - offset)
    };
    let names_a_tool = |c: &regex::Captures| {
        c.name("tool")
            .is_none_or(|t| !NOT_A_TOOL.contains(&t.as_str().to_lowercase().as_str()))
    };
    let mut directives: Vec<_> = (DIRECTIVE_RES.iter())
        .filter_map(|(re, what)| {
            let c = re.captures_iter(&seen).find(|c| names_a_tool(c))?;
            Some((c.get(0)?, *what))
        })
        .collect();
    directives.sort_by_key(|(m, _)| m.start());
    if let Some(&(m, _)) = directives.first() {
        let (offset, len) = at(m.start(), m.end());
        let said: Vec<String> = (directives.iter().take(4))
            .map(|(m, what)| format!("{what}: \"{}\"", m.as_str().trim()))
            .collect();
        hits.push(Hit {
            rule: Rule::ModelDirective,
            offset,
            len,
            message: format!(
                "{}{}",
                said.join("; "),
                more(directives.len().saturating_sub(4), "other phrase")
            ),
        });
    }
    let paths: Vec<_> = SENSITIVE_RE.find_iter(&seen).collect();
    if let Some(m) = paths.first() {
        let (offset, len) = at(m.start(), m.end());
        hits.push(Hit {
            rule: Rule::SensitivePath,
            offset,
            len,
            message: format!(
                "names a file that holds keys, tokens or an MCP configuration: `{}`{}",
                m.as_str().trim(),
                more(paths.len() - 1, "other")
            ),
        });
    }
    let sends: Vec<_> = SENDING_RE
        .captures_iter(&seen)
        .filter(|c| !c.get(2).is_some_and(|d| HARMLESS_RE.is_match(d.as_str())))
        .collect();
    if let Some(c) = sends.first() {
        let whole = c.get(0).expect("a match");
        let (offset, len) = at(whole.start(), whole.end());
        hits.push(Hit {
            rule: Rule::Exfiltration,
            offset,
            len,
            message: format!(
                "tells the model to send something to `{}`{}",
                c.get(2).map_or("", |d| d.as_str()),
                more(sends.len() - 1, "other")
            ),
        });
    }
    if let Some(hit) = blob(&seen, &at) {
        hits.push(hit);
    }
    hits
}

/// The first word that mixes in look-alike letters, with the word read as Latin (from the
/// folded text `seen`) and the next few named; `map` takes a char of `seen` to the original's.
fn homoglyphs(mixed: &[(usize, String)], seen: &str, map: &[usize]) -> Option<Hit> {
    let (start, word) = mixed.first()?;
    let len = word.chars().count();
    let folded: String = seen.chars().skip(*start).take(len).collect();
    let names: Vec<String> = (mixed.iter().skip(1).take(3))
        .map(|(_, w)| format!("`{w}`"))
        .collect();
    Some(Hit {
        rule: Rule::Homoglyphs,
        offset: map.get(*start).copied().unwrap_or(0),
        len,
        message: format!(
            "{} word(s) mix Latin letters with look-alike Cyrillic or Greek ones, the first \
             `{word}` read as `{folded}`{}{}; the rules read the text as Latin",
            mixed.len(),
            if names.is_empty() { "" } else { ", then " },
            names.join(", ")
        ),
    })
}

fn more(n: usize, what: &str) -> String {
    match n {
        0 => String::new(),
        1 => format!(" (and 1 {what})"),
        n => format!(" (and {n} {what}s)"),
    }
}

/// Hidden and direction-changing characters: one hit for each kind of rule, the first one's
/// offset, every character counted by name, and what tag characters spell.
fn hidden(text: &str) -> Vec<Hit> {
    let found = flagged(text);
    let mut hits = Vec::new();
    for (rule, bidi) in [(Rule::HiddenCharacters, false), (Rule::BidiControl, true)] {
        let of_rule: Vec<_> = (found.iter())
            .filter(|(_, _, h)| matches!(h, Hidden::Bidi(_)) == bidi)
            .collect();
        let Some(&&(offset, c, _)) = of_rule.first() else {
            continue;
        };
        let mut names: Vec<(&str, usize)> = Vec::new();
        for (_, _, h) in &of_rule {
            let (Hidden::Invisible(name) | Hidden::Bidi(name)) = *h;
            match names.iter_mut().find(|(n, _)| *n == name) {
                Some((_, count)) => *count += 1,
                None => names.push((name, 1)),
            }
        }
        let counted: Vec<String> = (names.iter())
            .map(|(n, count)| format!("{count} × {n} "))
            .map(|s| s.trim_end().to_owned())
            .collect();
        let mut message = format!(
            "{} {} character(s), the first U+{:04X}: {}",
            of_rule.len(),
            if bidi {
                "direction-changing"
            } else {
                "invisible"
            },
            c as u32,
            counted.join(", ")
        );
        let spelled = tag_text(text);
        if !bidi && !spelled.is_empty() {
            message.push_str(&format!("; the tag characters spell \"{spelled}\""));
            // What they spell is plain ASCII: read by the other rules, one level down.
            let inside: Vec<&str> = check(&spelled).iter().map(|h| h.rule.name()).collect();
            if !inside.is_empty() {
                message.push_str(&format!(", which the rules read as {}", inside.join(", ")));
            }
        }
        hits.push(Hit {
            rule,
            offset,
            len: 1,
            message,
        });
    }
    hits
}

/// The first base64 or hex run of 64 characters or more. A base64 run must mix upper case,
/// lower case and digits (a long path or identifier does not), and one inside a URL is the
/// URL's business.
fn blob(seen: &str, at: &dyn Fn(usize, usize) -> (usize, usize)) -> Option<Hit> {
    let url_token = |start: usize| {
        let token_start = seen[..start]
            .rfind(char::is_whitespace)
            .map_or(0, |i| i + 1);
        seen[token_start..start].contains("://")
    };
    let hex = HEX_RE.find_iter(seen).find(|m| !url_token(m.start()));
    let base64 = BASE64_RE.find_iter(seen).find(|m| {
        let s = m.as_str();
        s.chars().any(|c| c.is_ascii_uppercase())
            && s.chars().any(|c| c.is_ascii_lowercase())
            && s.chars().any(|c| c.is_ascii_digit())
            && !url_token(m.start())
    });
    let (m, kind) = match (hex, base64) {
        (Some(h), Some(b)) if b.start() < h.start() => (b, "base64"),
        (Some(h), _) => (h, "hex"),
        (None, Some(b)) => (b, "base64"),
        (None, None) => return None,
    };
    let (offset, len) = at(m.start(), m.end());
    Some(Hit {
        rule: Rule::EncodedBlob,
        offset,
        len,
        message: format!(
            "a {kind} run of {len} characters: text a reader cannot check, which a model may decode"
        ),
    })
}
