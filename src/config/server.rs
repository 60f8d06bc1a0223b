//! Server specs: how to reach one version of an MCP server (stdio command or Streamable HTTP URL).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::writes::{SandboxPath, ServerState};
use super::InvalidSetting;
use serde::{Deserialize, Serialize};

/// The environment variable in which an `overlay` server of a config hands its base's HTTP
/// headers to `mcpeval serve` (as JSON), so they never show on a command line.
pub const BASE_HEADERS_ENV: &str = "MCPEVAL_SERVE_BASE_HEADERS";

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
    /// Where its state lives (`[servers.NAME] state`): a server whose state may outlive the
    /// process is written to by trials only on a sandbox or with `--allow-writes`.
    #[serde(default, skip_serializing_if = "ServerState::is_external")]
    pub state: ServerState,
    /// Paths copied afresh for every start of its process (`--sandbox`, `[servers.NAME]
    /// sandbox`); `{sandbox}` / `{sandbox.NAME}` stand for the copies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sandboxes: Vec<SandboxPath>,
    /// Leave the copies on disk when the process ends (`--keep-sandboxes`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_sandboxes: bool,
    /// The capabilities declared on top of the profile's: those of the server's requests
    /// (`sampling`, `elicitation`) the tasks using this connection say how to answer. Set per
    /// connection by the run, never read from a config.
    #[serde(skip)]
    pub asks: crate::suite::AskCapabilities,
}

/// Whether the cassette at `path` holds a server's request to its client (an `asked` answer).
fn asks_in_cassette(path: &Path) -> bool {
    std::fs::read_to_string(path).is_ok_and(|text| text.contains("{\"asked\":"))
}

impl ServerSpec {
    /// Parses a spec as given on the command line: an `http(s)://` URL, `demo:<release>` for the
    /// embedded demo server, `overlay:FILE+SPEC` (an overlay file over any spec, split at the
    /// first `+`), or a command line split with shell quoting rules (no shell runs it).
    pub fn parse(name: &str, text: &str) -> Result<Self, InvalidSetting> {
        let text = text.trim();
        let transport = if text.starts_with("http://") || text.starts_with("https://") {
            Transport::Http {
                url: text.to_owned(),
            }
        } else if let Some(release) = text.strip_prefix("demo:") {
            Transport::Stdio {
                program: mcpeval_exe()?,
                args: vec!["demo-server".into(), "--release".into(), release.to_owned()],
            }
        } else if let Some(rest) = text.strip_prefix("overlay:") {
            let (file, base) = rest.split_once('+').ok_or_else(|| {
                InvalidSetting(format!(
                    "`{text}`: an overlay spec is `overlay:FILE+SPEC` (SPEC: the server under it)"
                ))
            })?;
            Self::overlay_transport(Path::new(file.trim()), base.trim())?
        } else if let Some(rest) = text.strip_prefix("replay:") {
            // `replay:CASSETTE` alone serves the recorded lists too.
            let (file, base) = rest.split_once('+').unwrap_or((rest, ""));
            if rest.ends_with('+') {
                return Err(InvalidSetting(format!(
                    "`{text}`: a replay spec is `replay:CASSETTE` or `replay:CASSETTE+SPEC` \
                     (SPEC: the server whose lists are served; the cassette answers its calls)"
                )));
            }
            let transport = Self::replay_transport(Path::new(file.trim()), base.trim())?;
            let mut spec = Self::parse(name, "replay-placeholder")?;
            spec.transport = transport;
            // A recorded server that asked its client something (sampling, elicitation) is
            // reached as it was recorded: in a session of `initialize` (2026-07-28 forbids
            // server-to-client requests).
            if asks_in_cassette(Path::new(file.trim())) {
                spec.protocol_era = ProtocolEra::Legacy;
            }
            return Ok(spec);
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
            state: ServerState::External,
            sandboxes: Vec::new(),
            keep_sandboxes: false,
            asks: Default::default(),
        })
    }

    /// `mcpeval serve --overlay FILE --base BASE` as a stdio server (FILE made absolute, so the
    /// spec works from any working directory).
    pub fn overlay_transport(file: &Path, base: &str) -> Result<Transport, InvalidSetting> {
        if file.as_os_str().is_empty() || base.is_empty() {
            return Err(InvalidSetting(
                "an overlay spec is `overlay:FILE+SPEC`: both FILE and SPEC are needed".to_owned(),
            ));
        }
        if !file.is_file() {
            return Err(InvalidSetting(format!(
                "overlay file `{}` not found",
                file.display()
            )));
        }
        let file = std::path::absolute(file)
            .map_err(|e| InvalidSetting(format!("overlay file `{}`: {e}", file.display())))?;
        Ok(Transport::Stdio {
            program: mcpeval_exe()?,
            args: vec![
                "serve".into(),
                "--overlay".into(),
                file.to_string_lossy().into_owned(),
                "--base".into(),
                base.to_owned(),
            ],
        })
    }

    /// `mcpeval serve --replay CASSETTE [--base BASE]` as a stdio server (CASSETTE made
    /// absolute); an empty `base` serves the cassette alone.
    pub fn replay_transport(file: &Path, base: &str) -> Result<Transport, InvalidSetting> {
        if file.as_os_str().is_empty() {
            return Err(InvalidSetting(
                "a replay spec is `replay:CASSETTE[+SPEC]`: the CASSETTE is needed".to_owned(),
            ));
        }
        if !file.is_file() {
            return Err(InvalidSetting(format!(
                "cassette `{}` not found",
                file.display()
            )));
        }
        let file = std::path::absolute(file)
            .map_err(|e| InvalidSetting(format!("cassette `{}`: {e}", file.display())))?;
        let mut args = vec![
            "serve".into(),
            "--replay".into(),
            file.to_string_lossy().into_owned(),
        ];
        if !base.is_empty() {
            args.extend(["--base".into(), base.to_owned()]);
        }
        Ok(Transport::Stdio {
            program: mcpeval_exe()?,
            args,
        })
    }

    /// Parses a spec given on the command line or as a config's `baseline`/`candidate` that
    /// names no `[servers.NAME]` of `known`. One word without a path separator that is no
    /// program on PATH either can only be a mistyped name: a usage error with "did you mean"
    /// among `known`, rather than a server that fails to start (exit 3). Paths and command
    /// lines of several words are parsed as [`ServerSpec::parse`] does.
    pub fn parse_given(name: &str, text: &str, known: &[&str]) -> Result<Self, InvalidSetting> {
        if let Some(word) = lone_word(text) {
            if !on_path(&word) {
                return Err(unknown_word(&word, known));
            }
        }
        Self::parse(name, text)
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

impl ServerSpec {
    /// The overlay file and the cassette this spec serves through this mcpeval's `serve`
    /// (`overlay:`, `replay:` specs and `[servers.NAME] overlay/replay`), to be read before the
    /// server starts: a mistake in them is the user's, not the server's.
    pub fn served_files(&self) -> Vec<(&'static str, &Path)> {
        let Transport::Stdio { program, args } = &self.transport else {
            return Vec::new();
        };
        if args.first().map(String::as_str) != Some("serve")
            || mcpeval_exe().ok().as_deref() != Some(program.as_str())
        {
            return Vec::new();
        }
        (args.windows(2))
            .filter_map(|pair| match pair[0].as_str() {
                "--overlay" => Some(("overlay", Path::new(&pair[1]))),
                "--replay" => Some(("replay", Path::new(&pair[1]))),
                _ => None,
            })
            .collect()
    }
}

/// The path of the running mcpeval, which `demo:` and `overlay:` specs run.
fn mcpeval_exe() -> Result<String, InvalidSetting> {
    std::env::current_exe()
        .map(|p| p.to_string_lossy().into_owned())
        .map_err(|e| InvalidSetting(format!("cannot find the mcpeval executable: {e}")))
}

/// The spec's one word when it is a single word without a path separator (and no URL or
/// `demo:` spec): what a program on PATH or a `[servers.NAME]` is written as.
fn lone_word(text: &str) -> Option<String> {
    let text = text.trim();
    if text.contains("://")
        || text.starts_with("demo:")
        || text.starts_with("overlay:")
        || text.starts_with("replay:")
    {
        return None;
    }
    match shlex::split(text)?.as_slice() {
        [word] if !word.is_empty() && !word.contains(['/', '\\']) && !word.contains(' ') => {
            Some(word.clone())
        }
        _ => None,
    }
}

/// Whether `program` names a file in a directory of PATH, as spawning it would look it up
/// (with the extensions of PATHEXT on Windows).
fn on_path(program: &str) -> bool {
    let Some(path) = std::env::var_os("PATH") else {
        return false;
    };
    let extensions: Vec<String> = match std::env::var("PATHEXT") {
        Ok(exts) if cfg!(windows) => std::iter::once(String::new())
            .chain(exts.split(';').map(str::to_owned))
            .collect(),
        _ => vec![String::new()],
    };
    std::env::split_paths(&path).any(|dir| {
        extensions
            .iter()
            .any(|ext| dir.join(format!("{program}{ext}")).is_file())
    })
}

/// Says that `word` is neither a `[servers.NAME]` nor a program, with the closest name.
fn unknown_word(word: &str, known: &[&str]) -> InvalidSetting {
    let hint = match crate::suite::suggestion(word, known) {
        hint if !hint.is_empty() => hint,
        _ if known.is_empty() => {
            " (no [servers.NAME] to pick from: pass --config FILE with [servers.NAME] tables, \
             a command line, or an http(s):// URL)"
                .to_owned()
        }
        _ => format!(" (the config's servers: {})", known.join(", ")),
    };
    InvalidSetting(format!(
        "`{word}` is neither a [servers.NAME] of the config nor a program on PATH{hint}"
    ))
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
    fn a_lone_word_that_is_no_program_is_a_mistyped_server_name() {
        let err = ServerSpec::parse_given("candidate", "newx", &["old", "new"]).unwrap_err();
        assert!(
            err.0
                .contains("`newx` is neither a [servers.NAME] of the config nor a program on PATH"),
            "{err}"
        );
        assert!(err.0.contains("(did you mean `new`?)"), "{err}");
        let far = ServerSpec::parse_given("candidate", "zzzzzz", &["old", "new"]).unwrap_err();
        assert!(far.0.contains("the config's servers: old, new"), "{far}");
        let none = ServerSpec::parse_given("candidate", "zzzzzz", &[]).unwrap_err();
        assert!(none.0.contains("pass --config FILE"), "{none}");
    }

    #[test]
    fn paths_commands_urls_and_programs_on_path_parse_as_before() {
        for text in [
            "/nonexistent/server --flag",
            "./server",
            "no-such-program --flag",
            "http://127.0.0.1:9/mcp",
            "demo:1.4.0",
        ] {
            let given = ServerSpec::parse_given("b", text, &["new"]).unwrap();
            assert_eq!(given, ServerSpec::parse("b", text).unwrap(), "{text}");
        }
        // A program every test machine has on PATH.
        let sh = if cfg!(windows) { "cmd" } else { "sh" };
        assert!(ServerSpec::parse_given("b", sh, &["new"]).is_ok());
        assert_eq!(lone_word(" 'a b' "), None);
        assert_eq!(lone_word("newx"), Some("newx".to_owned()));
    }

    #[test]
    fn an_overlay_spec_serves_its_base_through_mcpeval_serve() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("w.yaml");
        std::fs::write(&file, "overlay: 1\n").unwrap();
        let text = format!("overlay:{}+node 'my dir/x.js' a+b", file.display());
        let spec = ServerSpec::parse("c", &text).unwrap();
        let Transport::Stdio { args, .. } = spec.transport else {
            panic!("expected stdio")
        };
        assert_eq!(args[0], "serve");
        assert!(Path::new(&args[2]).is_absolute() && args[2].ends_with("w.yaml"));
        assert_eq!(args[3..], ["--base", "node 'my dir/x.js' a+b"]);
        assert!(ServerSpec::parse("c", "overlay:w.yaml").is_err());
        let missing = ServerSpec::parse("c", "overlay:/nonexistent/w.yaml+demo:1.4.0");
        assert!(missing
            .unwrap_err()
            .0
            .contains("overlay file `/nonexistent/w.yaml` not found"));
        assert!(ServerSpec::parse("c", "overlay:+demo:1.4.0").is_err());
        assert_eq!(lone_word("overlay:w.yaml+demo:1.4.0"), None);
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
