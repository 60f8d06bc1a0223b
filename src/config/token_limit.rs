//! `[check] max_tool_tokens_increase` and `check --max-tool-tokens-increase`: how far the tool
//! list's token count (`o200k_base`) may grow from the baseline before the contract stage fails,
//! as a per cent (`"10%"`) or a number of tokens (`500`).

use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};
use serde::Deserialize;

/// The key as written in the config file, for messages.
const KEY: &str = "max_tool_tokens_increase";

/// The largest growth of the tool list's tokens that passes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TokenIncrease {
    /// Per cent of the baseline's count (`"10%"`: 10.0).
    Percent(f64),
    /// Tokens.
    Tokens(u64),
}

impl TokenIncrease {
    /// Whether a list that went from `before` to `after` tokens grew past the limit. A list
    /// that had no tokens grew past any per cent once it has some.
    pub fn exceeded(self, before: u64, after: u64) -> bool {
        let grown = after.saturating_sub(before);
        match self {
            Self::Tokens(n) => grown > n,
            Self::Percent(_) if grown == 0 => false,
            Self::Percent(_) if before == 0 => true,
            Self::Percent(p) => grown as f64 * 100.0 / before as f64 > p,
        }
    }
}

impl fmt::Display for TokenIncrease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Percent(p) => write!(f, "{p}%"),
            Self::Tokens(n) => write!(f, "{n} tokens"),
        }
    }
}

fn invalid(given: &str) -> String {
    format!(
        "{KEY} must be a per cent such as \"10%\" or a number of tokens such as 500, not \
         `{given}`"
    )
}

impl FromStr for TokenIncrease {
    type Err = String;

    /// `10%`, `10 %`, `2.5%`, or a whole number of tokens (`500`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let text = s.trim();
        if let Some(number) = text.strip_suffix('%') {
            return match number.trim().parse::<f64>() {
                Ok(p) if p.is_finite() && p >= 0.0 => Ok(Self::Percent(p)),
                _ => Err(invalid(s)),
            };
        }
        text.parse::<u64>()
            .map(Self::Tokens)
            .map_err(|_| invalid(s))
    }
}

impl<'de> Deserialize<'de> for TokenIncrease {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Limit;
        impl Visitor<'_> for Limit {
            type Value = TokenIncrease;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a per cent such as \"10%\" or a number of tokens")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(TokenIncrease::Tokens(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
                u64::try_from(v)
                    .map(TokenIncrease::Tokens)
                    .map_err(|_| E::custom(invalid(&v.to_string())))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Err(E::custom(invalid(&v.to_string())))
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
                Err(E::custom(invalid(&v.to_string())))
            }
        }
        deserializer.deserialize_any(Limit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_cents_and_token_counts_parse_and_bad_values_name_the_key() {
        assert_eq!("10%".parse(), Ok(TokenIncrease::Percent(10.0)));
        assert_eq!(" 2.5 %".parse(), Ok(TokenIncrease::Percent(2.5)));
        assert_eq!("500".parse(), Ok(TokenIncrease::Tokens(500)));
        for bad in ["ten", "-5%", "%", "1e999%", "-3", "10 tokens"] {
            let err = bad.parse::<TokenIncrease>().unwrap_err();
            assert!(err.contains("max_tool_tokens_increase"), "{bad}: {err}");
        }
    }

    #[test]
    fn the_limit_is_passed_only_by_growing_past_it() {
        let ten = TokenIncrease::Percent(10.0);
        assert!(!ten.exceeded(1000, 1100) && ten.exceeded(1000, 1101));
        assert!(!ten.exceeded(1000, 500), "a shrinking list passes");
        assert!(ten.exceeded(0, 1) && !ten.exceeded(0, 0));
        let tokens = TokenIncrease::Tokens(50);
        assert!(!tokens.exceeded(100, 150) && tokens.exceeded(100, 151));
    }

    #[test]
    fn a_toml_string_or_integer_is_read() {
        #[derive(Deserialize)]
        struct T {
            max_tool_tokens_increase: TokenIncrease,
        }
        let t: T = toml::from_str("max_tool_tokens_increase = \"10%\"").unwrap();
        assert_eq!(t.max_tool_tokens_increase, TokenIncrease::Percent(10.0));
        let t: T = toml::from_str("max_tool_tokens_increase = 300").unwrap();
        assert_eq!(t.max_tool_tokens_increase, TokenIncrease::Tokens(300));
        let err = toml::from_str::<T>("max_tool_tokens_increase = 1.5")
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("max_tool_tokens_increase must be"), "{err}");
    }
}
