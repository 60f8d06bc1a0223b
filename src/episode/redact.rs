//! Redaction of secrets (API keys, tokens in headers or server env) from anything written to disk.

/// Replaces every known secret value by `[REDACTED]`.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

/// Environment variables whose values are always treated as secrets.
const SECRET_VARS: [&str; 3] = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MCPEVAL_API_KEY"];

impl Redactor {
    /// Secrets from the well-known API-key variables plus the given values (server env and
    /// header values). Values shorter than 6 characters are not treated as secrets: redacting
    /// them would mangle ordinary text.
    pub fn new<'a>(extra: impl IntoIterator<Item = &'a str>) -> Self {
        let mut secrets: Vec<String> = SECRET_VARS
            .iter()
            .filter_map(|v| std::env::var(v).ok())
            .chain(extra.into_iter().map(str::to_owned))
            .filter(|s| s.len() >= 6)
            .collect();
        // Longest first, so a secret that contains another is replaced whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// True when there is no secret to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    pub fn redact(&self, text: &str) -> String {
        let mut out = text.to_owned();
        for s in &self.secrets {
            if out.contains(s.as_str()) {
                out = out.replace(s.as_str(), "[REDACTED]");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_and_short_values_left_alone() {
        let r = Redactor::new(["sk-abcdef123456", "abc"]);
        assert_eq!(
            r.redact("key sk-abcdef123456 and abc"),
            "key [REDACTED] and abc"
        );
    }
}
