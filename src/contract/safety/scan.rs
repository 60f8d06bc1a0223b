//! Reads every text of a server's lists the model is shown (tool titles and descriptions, the
//! descriptions in input schemas, prompt and prompt-argument descriptions, the server
//! instructions) with the rules, and adds the rule that needs the whole list: a description far
//! longer than the server's others.

use serde::Serialize;
use serde_json::Value;

use super::chars::{invisible_name, shown};
use super::rules::{check, Hit};

/// What a finding is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Invisible characters: tag characters, zero-width characters and other format characters.
    HiddenCharacters,
    /// Bidi embeddings, overrides, isolates and stray directional marks.
    BidiControl,
    /// Words that mix Latin letters with look-alike Cyrillic or Greek ones (`ignоre`).
    Homoglyphs,
    /// Text addressed to the model about its other tools, the user or its instructions.
    ModelDirective,
    /// A file that holds keys, tokens or an MCP configuration (`~/.ssh`, `.env`, `mcp.json`…).
    SensitivePath,
    /// A verb of sending with a URL, e-mail address, IP address or phone number.
    Exfiltration,
    /// A base64 or hex run of 64 characters or more.
    EncodedBlob,
    /// Over 1,000 characters and over 4 × the median of the server's tool descriptions.
    Overlong,
}

impl Rule {
    pub fn name(self) -> &'static str {
        match self {
            Self::HiddenCharacters => "hidden_characters",
            Self::BidiControl => "bidi_control",
            Self::Homoglyphs => "homoglyphs",
            Self::ModelDirective => "model_directive",
            Self::SensitivePath => "sensitive_path",
            Self::Exfiltration => "exfiltration",
            Self::EncodedBlob => "encoded_blob",
            Self::Overlong => "overlong",
        }
    }
}

/// One rule's finding in one field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    /// `tool`, `prompt` or `instructions`.
    pub kind: &'static str,
    /// The tool's or prompt's name; empty for the instructions.
    pub name: String,
    /// Where in the item: `description`, `title`, `annotations.title`,
    /// `inputSchema.properties.query.description`, `arguments.id.description`, `instructions`.
    pub field: String,
    pub rule: Rule,
    /// The char offset of the first hit in the field.
    pub offset: usize,
    /// The text around it, one line, invisible characters shown as `<U+XXXX>`.
    pub excerpt: String,
    /// What the rule saw.
    pub message: String,
}

impl Finding {
    /// Who it is about, in words: "tool `x`", "prompt `y`", "the instructions".
    pub fn subject(&self) -> String {
        match self.kind {
            "instructions" => "the server instructions".to_owned(),
            kind => format!("{kind} `{}`", self.name),
        }
    }

    /// Whether `other` is the same finding for the comparison with the baseline: the same item,
    /// field and rule (the wording may move).
    pub fn same(&self, other: &Self) -> bool {
        (self.kind, &self.name, &self.field, self.rule)
            == (other.kind, &other.name, &other.field, other.rule)
    }
}

/// What a server lists, as a snapshot holds it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Listing<'a> {
    pub tools: &'a [Value],
    pub prompts: &'a [Value],
    pub instructions: Option<&'a str>,
}

/// How deep a schema is followed: deeper than any real tool's, shallow enough for a hostile one.
const MAX_DEPTH: usize = 12;
/// The `overlong` rule: longer than this many characters and this many times the median.
const OVERLONG_CHARS: usize = 1000;
const OVERLONG_TIMES: usize = 4;

/// Every finding on a server's lists, in list order.
pub fn scan(listing: &Listing) -> Vec<Finding> {
    let texts = texts(listing);
    let median = median_description(listing.tools);
    let mut out = Vec::new();
    for text in &texts {
        for hit in check(text.text) {
            out.push(text.finding(hit));
        }
        let long = text.text.chars().count();
        let is_description = text.field == "description" && text.kind != "instructions";
        if is_description && long > OVERLONG_CHARS && long > OVERLONG_TIMES * median {
            out.push(text.finding(Hit {
                rule: Rule::Overlong,
                offset: 0,
                len: 0,
                message: format!(
                    "{long} characters, {:.1} × the median of the server's tool descriptions \
                     ({median}): room for instructions a reader skims past",
                    long as f64 / median.max(1) as f64
                ),
            }));
        }
    }
    out
}

/// How many texts [`scan`] reads in `listing` (descriptions, titles, instructions).
pub fn texts_read(listing: &Listing) -> usize {
    texts(listing).len()
}

/// Every text of the lists the model is shown, with where it is.
fn texts<'a>(listing: &Listing<'a>) -> Vec<Text<'a>> {
    let mut texts: Vec<Text<'a>> = Vec::new();
    for tool in listing.tools {
        let name = str_of(tool, "name");
        let mut push =
            |field: String, text: &'a str| texts.push(Text::new("tool", name, field, text));
        for field in ["title", "description"] {
            if let Some(text) = tool.get(field).and_then(Value::as_str) {
                push(field.to_owned(), text);
            }
        }
        if let Some(text) = tool.pointer("/annotations/title").and_then(Value::as_str) {
            push("annotations.title".to_owned(), text);
        }
        if let Some(schema) = tool.get("inputSchema") {
            schema_texts(schema, "inputSchema", 0, &mut push);
        }
    }
    for prompt in listing.prompts {
        let name = str_of(prompt, "name");
        for field in ["title", "description"] {
            if let Some(text) = prompt.get(field).and_then(Value::as_str) {
                texts.push(Text::new("prompt", name, field.to_owned(), text));
            }
        }
        let arguments = prompt.get("arguments").and_then(Value::as_array);
        for arg in arguments.into_iter().flatten() {
            if let Some(text) = arg.get("description").and_then(Value::as_str) {
                let field = format!("arguments.{}.description", str_of(arg, "name"));
                texts.push(Text::new("prompt", name, field, text));
            }
        }
    }
    if let Some(text) = listing.instructions {
        texts.push(Text::new("instructions", "", "instructions".into(), text));
    }
    texts
}

/// The findings of `candidate` the baseline had not (same item, field and rule), each with
/// whether it is new.
pub fn new_findings<'a>(
    baseline: &[Finding],
    candidate: &'a [Finding],
) -> Vec<(&'a Finding, bool)> {
    (candidate.iter())
        .map(|f| (f, !baseline.iter().any(|b| b.same(f))))
        .collect()
}

/// One text the model reads, with where it is.
struct Text<'a> {
    kind: &'static str,
    name: &'a str,
    field: String,
    text: &'a str,
}

impl<'a> Text<'a> {
    fn new(kind: &'static str, name: &'a str, field: String, text: &'a str) -> Self {
        Self {
            kind,
            name,
            field,
            text,
        }
    }

    fn finding(&self, hit: Hit) -> Finding {
        Finding {
            kind: self.kind,
            name: self.name.to_owned(),
            field: self.field.clone(),
            rule: hit.rule,
            offset: hit.offset,
            excerpt: excerpt(self.text, hit.offset, hit.len),
            message: hit.message,
        }
    }
}

fn str_of<'a>(value: &'a Value, key: &str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The descriptions and titles inside a JSON Schema: its own, its properties' (nested), its
/// items', its combinators' and its definitions'.
fn schema_texts<'a>(
    schema: &'a Value,
    path: &str,
    depth: usize,
    push: &mut dyn FnMut(String, &'a str),
) {
    let Some(object) = schema.as_object() else {
        return;
    };
    if depth > MAX_DEPTH {
        return;
    }
    for field in ["title", "description"] {
        if let Some(text) = object.get(field).and_then(Value::as_str) {
            push(format!("{path}.{field}"), text);
        }
    }
    for key in ["properties", "$defs", "definitions", "patternProperties"] {
        for (name, sub) in object
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            schema_texts(sub, &format!("{path}.{key}.{name}"), depth + 1, push);
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(sub) = object.get(key) {
            schema_texts(sub, &format!("{path}.{key}"), depth + 1, push);
        }
    }
    for key in ["anyOf", "oneOf", "allOf", "prefixItems"] {
        let subs = object.get(key).and_then(Value::as_array);
        for (i, sub) in subs.into_iter().flatten().enumerate() {
            schema_texts(sub, &format!("{path}.{key}[{i}]"), depth + 1, push);
        }
    }
}

/// The median length in characters of the tools' descriptions (0 without any).
fn median_description(tools: &[Value]) -> usize {
    let mut lengths: Vec<usize> = (tools.iter())
        .filter_map(|t| t.get("description").and_then(Value::as_str))
        .map(|d| d.chars().count())
        .collect();
    lengths.sort_unstable();
    match lengths.len() {
        0 => 0,
        n if n % 2 == 1 => lengths[n / 2],
        n => (lengths[n / 2 - 1] + lengths[n / 2]) / 2,
    }
}

/// Up to 40 characters before the hit and 80 after its start, one line, invisible characters
/// shown (a run of more than four as its first three and a count), `…` where it was cut.
fn excerpt(text: &str, offset: usize, len: usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let start = offset.saturating_sub(40);
    let end = (offset + len.max(80)).min(offset + 160).min(chars.len());
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    let mut i = start;
    while i < end {
        let run = (chars[i..].iter())
            .take_while(|c| invisible_name(**c).is_some())
            .count();
        if run > 4 {
            chars[i..i + 3].iter().for_each(|&c| shown(c, &mut out));
            out.push_str(&format!("<…{} more>", run - 3));
            i += run;
            continue;
        }
        shown(chars[i], &mut out);
        i += 1;
    }
    if i < chars.len() {
        out.push('…');
    }
    out
}
