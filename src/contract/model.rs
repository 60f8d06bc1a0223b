//! The contract's data: a snapshot (four normalized lists, server facts, error probes) as stored in
//! a snapshot directory, and the classified changes of a diff.

use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const TOOLS_JSON: &str = "tools.json";
pub const RESOURCES_JSON: &str = "resources.json";
pub const RESOURCE_TEMPLATES_JSON: &str = "resource-templates.json";
pub const PROMPTS_JSON: &str = "prompts.json";
pub const SERVER_JSON: &str = "server.json";
pub const ERRORS_JSON: &str = "errors.json";

/// A server's contract at one moment. The four lists have the shape of the MCP Inspector CLI's
/// `--format json` output normalized with `jq -S '.result.tools | sort_by(.name)'` (and the like):
/// arrays of the spec's objects, sorted by `name` / `uri` / `uriTemplate`, keys sorted.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    pub tools: Vec<Value>,
    pub resources: Vec<Value>,
    pub resource_templates: Vec<Value>,
    pub prompts: Vec<Value>,
    /// `server.json`: [`ServerFacts`] as JSON (kept as a value so a hand-written or other
    /// tool's file with extra keys still reads); `Null` when the directory has none.
    pub server: Value,
    /// `errors.json`: [`ErrorProbes`] as JSON; `None` when the directory has no such file (a
    /// snapshot taken by another tool).
    pub errors: Option<Value>,
}

/// What `server.json` holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServerFacts {
    /// `legacy` (initialize) or `modern` (server/discover).
    pub protocol_era: String,
    /// The version agreed on.
    pub protocol_version: String,
    /// The versions of the session's era: from `server/discover` in the modern era; in the
    /// legacy era those `initialize` accepted, each offered over a fresh connection (else the
    /// one agreed on). `acceptedVersions` has both eras.
    pub supported_versions: Vec<String>,
    /// What the server accepts in each era, whichever era the session used; absent in snapshots
    /// taken before mcpeval recorded it (the diff then compares only the session's era).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_versions: Option<AcceptedVersions>,
    pub capabilities: Value,
    pub instructions: Option<String>,
    pub server_info: Value,
    /// What this client declared: a server may show a client with `roots` other tools.
    pub client_capabilities: Value,
    /// The client profile (`bare`, `roots`, `full`) whose capabilities were declared; absent
    /// in snapshots taken before profiles existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_profile: Option<String>,
    /// The lifecycle the client asked for (`legacy`, `modern`, `auto`); `protocolEra` is the
    /// one the handshake ended in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_era: Option<String>,
    /// What was snapshotted, to tell apart two releases that report the same
    /// `serverInfo.version`: the package and version the command names, else the command line
    /// or URL (without its query); absent in older snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<String>,
}

/// The protocol versions a server accepts, per era (`acceptedVersions` in `server.json`), each
/// list oldest first; an empty list: the server does not speak that era.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AcceptedVersions {
    /// The legacy versions an `initialize` offering each was answered with that version.
    pub legacy: Vec<String>,
    /// The versions a `server/discover` over a fresh connection listed (or the session's).
    pub modern: Vec<String>,
}

/// Two snapshots taken with different client profiles: their lists may differ for that reason
/// alone, so they are not diffed (an input error: exit 2).
#[derive(Debug, thiserror::Error)]
#[error(
    "the snapshots were taken with different client profiles: the baseline {baseline}, the \
     candidate {candidate}; a server may list other tools to a client that declares other \
     capabilities, so take both with the same `--client-profile` and `--protocol-era`"
)]
pub struct ProfileMismatch {
    pub baseline: String,
    pub candidate: String,
}

impl crate::error::Coded for ProfileMismatch {
    fn exit(&self) -> crate::error::Exit {
        crate::error::Exit::Usage
    }
}

impl Snapshot {
    /// Refuses two snapshots whose `server.json` record different client profiles: the
    /// declared capabilities, the profile's name, or the lifecycle asked for. What a side does
    /// not record (another tool's snapshot, an older one) is not compared.
    pub fn comparable(base: &Self, cand: &Self) -> Result<(), ProfileMismatch> {
        let keys = ["clientCapabilities", "clientProfile", "requestedEra"];
        let differs = keys
            .iter()
            .any(|k| match (base.server.get(*k), cand.server.get(*k)) {
                (Some(a), Some(b)) => a != b,
                _ => false,
            });
        if !differs {
            return Ok(());
        }
        Err(ProfileMismatch {
            baseline: profile_words(&base.server),
            candidate: profile_words(&cand.server),
        })
    }
}

fn profile_words(server: &Value) -> String {
    let name = server
        .get("clientProfile")
        .and_then(Value::as_str)
        .unwrap_or("(no profile recorded)");
    let era = server
        .get("requestedEra")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let caps = server
        .get("clientCapabilities")
        .map_or("?".to_owned(), Value::to_string);
    format!("`{name}` (capabilities {caps}, era {era})")
}

/// One probe of error semantics and how the server answered it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProbeOutcome {
    /// `unknown_tool`, `missing_argument`, `wrong_type`, `unknown_resource`,
    /// `unsupported_protocol_version`.
    pub probe: String,
    /// The protocol era the probe was made in (`legacy`, `modern`): the session's for the
    /// probes over its connection; the unsupported-version probe is made in each era the
    /// server speaks, the session's first. Absent in older snapshots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub era: Option<String>,
    /// What was sent, in words (`tools/call` of `x` without `y`).
    pub request: String,
    /// `jsonrpc_error`, `is_error` (a result with `isError: true`), `result` (a success),
    /// `skipped` (nothing to probe with, e.g. no tool has a required argument), `no_answer`.
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// What `errors.json` holds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ErrorProbes {
    pub probes: Vec<ProbeOutcome>,
}

/// A snapshot directory that cannot be read as one (an input error: exit 2).
#[derive(Debug, thiserror::Error)]
pub enum SnapshotReadError {
    #[error("cannot read `{}`", path.display())]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is not valid JSON", path.display())]
    NotJson {
        path: std::path::PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("`{}` must hold a JSON array, found {found}", path.display())]
    NotAnArray {
        path: std::path::PathBuf,
        found: &'static str,
    },
}

impl crate::error::Coded for SnapshotReadError {
    fn exit(&self) -> crate::error::Exit {
        match self {
            Self::Read { .. } | Self::NotJson { .. } | Self::NotAnArray { .. } => {
                crate::error::Exit::Usage
            }
        }
    }
}

impl Snapshot {
    /// Reads a snapshot directory. The four lists must be there; `server.json` and `errors.json`
    /// are optional, so the lists of another tool (the MCP Inspector CLI's, normalized with
    /// `jq -S`) diff too: what a side lacks is not compared.
    pub fn read(dir: &Path) -> Result<Self, SnapshotReadError> {
        let read = |name: &str| -> Result<Value, SnapshotReadError> {
            let path = dir.join(name);
            let text =
                std::fs::read_to_string(&path).map_err(|source| SnapshotReadError::Read {
                    path: path.clone(),
                    source,
                })?;
            serde_json::from_str(&text)
                .map_err(|source| SnapshotReadError::NotJson { path, source })
        };
        let list = |name: &str| -> Result<Vec<Value>, SnapshotReadError> {
            match read(name)? {
                Value::Array(items) => Ok(items),
                other => Err(SnapshotReadError::NotAnArray {
                    path: dir.join(name),
                    found: kind_of(&other),
                }),
            }
        };
        let optional = |name: &str| -> Result<Option<Value>, SnapshotReadError> {
            if dir.join(name).exists() {
                read(name).map(Some)
            } else {
                Ok(None)
            }
        };
        let errors = optional(ERRORS_JSON)?;
        Ok(Self {
            tools: list(TOOLS_JSON)?,
            resources: list(RESOURCES_JSON)?,
            resource_templates: list(RESOURCE_TEMPLATES_JSON)?,
            prompts: list(PROMPTS_JSON)?,
            server: optional(SERVER_JSON)?.unwrap_or(Value::Null),
            errors,
        })
    }

    /// Writes every file (and `tokens.json`, the list's token counts), pretty-printed with sorted keys (serde_json's maps are ordered).
    pub fn write(&self, dir: &Path) -> anyhow::Result<()> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("cannot create `{}`", dir.display()))?;
        let write = |name: &str, value: &Value| -> anyhow::Result<()> {
            let path = dir.join(name);
            let mut text = serde_json::to_string_pretty(value)?;
            text.push('\n');
            std::fs::write(&path, text)
                .with_context(|| format!("cannot write `{}`", path.display()))
        };
        write(TOOLS_JSON, &Value::Array(self.tools.clone()))?;
        write(RESOURCES_JSON, &Value::Array(self.resources.clone()))?;
        write(
            RESOURCE_TEMPLATES_JSON,
            &Value::Array(self.resource_templates.clone()),
        )?;
        write(PROMPTS_JSON, &Value::Array(self.prompts.clone()))?;
        write(SERVER_JSON, &self.server)?;
        if let Some(errors) = &self.errors {
            write(ERRORS_JSON, errors)?;
        }
        let tokens = super::tokens::TokenCounts::of(self);
        write(super::tokens::TOKENS_JSON, &serde_json::to_value(tokens)?)?;
        Ok(())
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// What kind of change a diff found; each kind has one classification (see [`ChangeKind::flags`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChangeKind {
    ToolRemoved,
    PromptRemoved,
    ResourceRemoved,
    ResourceTemplateRemoved,
    /// Removed + added with the same schemas: one change, still breaking.
    ToolRenamed,
    ToolAdded,
    PromptAdded,
    ResourceAdded,
    ResourceTemplateAdded,
    /// A new parameter (or prompt argument) that is required.
    RequiredParameterAdded,
    /// An optional parameter (or prompt argument) became required.
    ParameterMadeRequired,
    ParameterRemoved,
    /// Type changed, `enum` added or values removed, a maximum lowered, a minimum raised,
    /// `pattern` added or changed, `additionalProperties: false` added, `const` added.
    TypeNarrowed,
    /// The reverse of each of those.
    TypeWidened,
    OptionalParameterAdded,
    /// A parameter that was required became optional.
    ParameterMadeOptional,
    OutputSchemaRemoved,
    /// A property removed or renamed, its type changed, or dropped from `required`.
    OutputSchemaNarrowed,
    OutputSchemaAdded,
    OutputSchemaWidened,
    DescriptionChanged,
    TitleChanged,
    AnnotationsChanged,
    InstructionsChanged,
    ResourceUriChanged,
    ResourceTemplateChanged,
    MimeTypeChanged,
    ErrorSemanticsChanged,
    CapabilityRemoved,
    CapabilityAdded,
    /// An empty `experimental` or `extensions` object removed: it offered nothing.
    EmptyCapabilityRemoved,
    /// A version the baseline accepted in an era that the candidate refuses in that era.
    ProtocolVersionDropped,
    /// A version (or era) the candidate newly accepts.
    ProtocolVersionAdded,
    /// An era one snapshot does not record (it predates `acceptedVersions`): not compared.
    ProtocolVersionsNotCompared,
    /// A parameter's `x-mcp-header` annotation became invalid: HTTP clients must drop the tool.
    McpHeaderInvalid,
    /// A schema change no rule can decide (an `anyOf` rewritten…): treated as breaking.
    SchemaChanged,
    /// The baseline's tool declared no input schema (none, `{}`, only `$schema`) and the
    /// candidate's declares one: one change instead of one per property. It affects models;
    /// it breaks clients only when the schema requires a property (the diff decides).
    InputSchemaDeclared,
}

impl ChangeKind {
    /// The kind as `diff.json` spells it (`tool_removed`).
    pub fn as_str(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

impl ChangeKind {
    /// (breaks clients, affects models). One refinement is made by the diff: a description,
    /// title or undecidable change inside an `outputSchema` affects no model (models never see
    /// output schemas), so it carries `affects_models = false`.
    pub fn flags(self) -> (bool, bool) {
        use ChangeKind::*;
        match self {
            ToolRemoved | PromptRemoved | ToolRenamed => (true, true),
            ResourceRemoved | ResourceTemplateRemoved => (true, false),
            ToolAdded | PromptAdded => (false, true),
            ResourceAdded | ResourceTemplateAdded => (false, false),
            RequiredParameterAdded | ParameterMadeRequired | ParameterRemoved | TypeNarrowed => {
                (true, true)
            }
            TypeWidened | OptionalParameterAdded | ParameterMadeOptional => (false, true),
            OutputSchemaRemoved | OutputSchemaNarrowed => (true, false),
            OutputSchemaAdded | OutputSchemaWidened => (false, false),
            DescriptionChanged | TitleChanged | AnnotationsChanged | InstructionsChanged => {
                (false, true)
            }
            ResourceUriChanged | ResourceTemplateChanged | MimeTypeChanged => (true, false),
            ErrorSemanticsChanged | CapabilityRemoved | ProtocolVersionDropped => (true, false),
            CapabilityAdded | ProtocolVersionAdded => (false, false),
            EmptyCapabilityRemoved | ProtocolVersionsNotCompared => (false, false),
            McpHeaderInvalid => (true, true),
            SchemaChanged => (true, true),
            InputSchemaDeclared => (false, true),
        }
    }
}

/// One classified change, as written in the diff's `changes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Change {
    /// `tools`, `resources`, `resourceTemplates`, `prompts`, `server` or `errors`.
    pub list: String,
    /// The tool / prompt name, resource URI, template, server field or probe.
    pub name: String,
    /// Where inside the object, dotted (`inputSchema.properties.filter.properties.state.enum`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub kind: ChangeKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<Value>,
    pub breaks_clients: bool,
    pub affects_models: bool,
    /// Why, in words, where the kind alone does not say (`enum value "closed" removed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Change {
    /// A change classified by its kind.
    pub fn new(list: &str, name: &str, kind: ChangeKind) -> Self {
        let (breaks_clients, affects_models) = kind.flags();
        Self {
            list: list.to_owned(),
            name: name.to_owned(),
            path: None,
            kind,
            before: None,
            after: None,
            breaks_clients,
            affects_models,
            note: None,
        }
    }

    pub fn at(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    pub fn values(mut self, before: Option<Value>, after: Option<Value>) -> Self {
        self.before = before;
        self.after = after;
        self
    }

    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.note = Some(note.into());
        self
    }
}

/// The diff file: `{"baseline": …, "candidate": …, "changes": [ … ]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diff {
    pub baseline: Side,
    pub candidate: Side,
    pub changes: Vec<Change>,
    /// What the tool list, the instructions and each tool cost in tokens on both sides (absent
    /// in diffs written before token counts existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<super::token_diff::TokenDiff>,
}

/// Which snapshot a side of the diff is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Side {
    /// `--baseline-label` / `--candidate-label`, else the server's version.
    pub label: String,
    pub snapshot: String,
    pub server_info: Value,
}

impl Diff {
    pub fn breaks_clients(&self) -> bool {
        self.changes.iter().any(|c| c.breaks_clients)
    }

    pub fn affects_models(&self) -> bool {
        self.changes.iter().any(|c| c.affects_models)
    }
}
