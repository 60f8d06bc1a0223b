//! Server specs: how to reach one version of an MCP server (stdio command or Streamable HTTP URL).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use super::InvalidSetting;
use serde::{Deserialize, Serialize};

/// Which MCP lifecycle to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProtocolEra {
    /// `initialize` handshake (protocol 2025-11-25 and earlier).
    Legacy,
    /// `server/discover` and per-request `_meta` (protocol 2026-07-28).
    Modern,
    /// Probe with `server/discover`, fall back to `initialize`.
    #[default]
    Auto,
}

impl std::str::FromStr for ProtocolEra {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "legacy" => Ok(Self::Legacy),
            "modern" => Ok(Self::Modern),
            "auto" => Ok(Self::Auto),
            other => Err(format!(
                "unknown protocol era `{other}` (expected legacy, modern or auto)"
            )),
        }
    }
}

/// What the client declares in the handshake. A server may show a client that declares roots or
/// sampling other tools than one that declares nothing, so a contract snapshot records the
/// profile it was taken with and `mcpeval diff` compares only snapshots of one profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientProfile {
    /// No client capability (what a run's agent declares).
    #[default]
    Bare,
    /// `roots` (with `listChanged`).
    Roots,
    /// `roots`, `sampling` and `elicitation`: what a full-featured host declares.
    Full,
}

impl ClientProfile {
    pub const ALL: [Self; 3] = [Self::Bare, Self::Roots, Self::Full];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Bare => "bare",
            Self::Roots => "roots",
            Self::Full => "full",
        }
    }

    pub fn is_bare(&self) -> bool {
        *self == Self::Bare
    }
}

impl std::fmt::Display for ClientProfile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for ClientProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| format!("unknown client profile `{s}` (expected bare, roots or full)"))
    }
}

/// How to reach the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "transport", rename_all = "lowercase")]
pub enum Transport {
    /// A child process spoken to over stdin/stdout. Never run through a shell.
    Stdio { program: String, args: Vec<String> },
    /// A Streamable HTTP endpoint.
    Http { url: String },
}

/// One version of an MCP server, resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerSpec {
    /// Short name used in messages and in `mcp__<server>__<tool>` names.
    pub name: String,
    #[serde(flatten)]
    pub transport: Transport,
    /// Environment set for a stdio server (values may come from the environment; never written out).
    #[serde(default, skip_serializing)]
    pub env: BTreeMap<String, String>,
    /// HTTP headers for an HTTP server (never written out: they may carry tokens).
    #[serde(default, skip_serializing)]
    pub headers: BTreeMap<String, String>,
    /// The values of the variables that `env` and `headers` values name inside a longer text
    /// (`Bearer ${TOKEN}`): secrets on their own, redacted wherever they appear.
    #[serde(skip)]
    pub referenced_values: Vec<String>,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    pub protocol_era: ProtocolEra,
    /// What the client declares in the handshake (snapshots; a run's agent declares nothing).
    #[serde(default, skip_serializing_if = "ClientProfile::is_bare")]
    pub client: ClientProfile,
    /// How long the server may take to start and answer the handshake.
    #[serde(with = "duration_ms")]
    pub startup_timeout: Duration,
    /// How long one `tools/call` may take.
    #[serde(with = "duration_ms")]
    pub call_timeout: Duration,
}

impl ServerSpec {
    /// Parses a spec as given on the command line: an `http(s)://` URL, `demo:<release>` for the
    /// embedded demo server, or a command line split with shell quoting rules (no shell runs it).
    pub fn parse(name: &str, text: &str) -> Result<Self, InvalidSetting> {
        let text = text.trim();
        let transport = if text.starts_with("http://") || text.starts_with("https://") {
            Transport::Http {
                url: text.to_owned(),
            }
        } else if let Some(release) = text.strip_prefix("demo:") {
            let program = std::env::current_exe()
                .map_err(|e| InvalidSetting(format!("cannot find the mcpeval executable: {e}")))?
                .to_string_lossy()
                .into_owned();
            Transport::Stdio {
                program,
                args: vec!["demo-server".into(), "--release".into(), release.to_owned()],
            }
        } else {
            let words = shlex::split(text).ok_or_else(|| {
                InvalidSetting(format!(
                    "cannot split server command `{text}`: unbalanced quotes"
                ))
            })?;
            let (program, args) = words
                .split_first()
                .ok_or_else(|| InvalidSetting("empty server command".to_owned()))?;
            Transport::Stdio {
                program: program.clone(),
                args: args.to_vec(),
            }
        };
        Ok(Self {
            name: name.to_owned(),
            transport,
            env: BTreeMap::new(),
            headers: BTreeMap::new(),
            referenced_values: Vec::new(),
            cwd: None,
            protocol_era: ProtocolEra::Auto,
            client: ClientProfile::Bare,
            startup_timeout: Duration::from_secs(30),
            call_timeout: Duration::from_secs(60),
        })
    }

    /// True when each connection starts its own process (so isolation can apply).
    pub fn is_stdio(&self) -> bool {
        matches!(self.transport, Transport::Stdio { .. })
    }

    /// The spec as a user would write it, for messages and `run.json`.
    pub fn display(&self) -> String {
        match &self.transport {
            Transport::Http { url } => url.clone(),
            Transport::Stdio { program, args } => {
                let mut words = vec![program.as_str()];
                words.extend(args.iter().map(String::as_str));
                shlex::try_join(words).unwrap_or_else(|_| format!("{program} {}", args.join(" ")))
            }
        }
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(d.as_millis() as u64)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        Ok(Duration::from_millis(u64::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_is_split_like_a_shell_without_running_one() {
        let spec =
            ServerSpec::parse("b", r#"node "my dir/index.js" --flag 'a b' ; rm -rf x"#).unwrap();
        let Transport::Stdio { program, args } = spec.transport else {
            panic!("expected stdio")
        };
        assert_eq!(program, "node");
        assert_eq!(
            args,
            ["my dir/index.js", "--flag", "a b", ";", "rm", "-rf", "x"]
        );
    }

    #[test]
    fn urls_are_http_and_bad_quotes_are_errors() {
        assert!(!ServerSpec::parse("c", "http://127.0.0.1:3001/mcp")
            .unwrap()
            .is_stdio());
        assert!(ServerSpec::parse("c", "node 'unclosed").is_err());
        assert!(ServerSpec::parse("c", "   ").is_err());
    }
}
