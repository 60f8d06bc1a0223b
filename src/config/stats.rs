//! `[stats]`: the metrics compared, the significance level, margins and correction behind a verdict.

use serde::{Deserialize, Serialize};

use crate::stats::Adjustment;

/// A quantity compared between the sides: a column of `comparison.csv`'s `metric`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    Success,
    ToolCalls,
    ToolErrors,
    InputTokens,
    OutputTokens,
    TotalTokens,
    Turns,
    LatencyMs,
    /// Unbiased pass@k: the chance that at least one of k trials succeeds.
    PassAtK,
    /// Unbiased pass^k: the chance that all k trials succeed.
    PassHatK,
    /// Suite only: share of no-tool episodes in which a tool was called.
    FalseCallRate,
    /// Suite only: share of tool episodes in which no tool was called.
    MissedCallRate,
}

impl Metric {
    /// The metrics compared task by task with a test, in report order.
    pub const TESTED: [Metric; 8] = [
        Metric::Success,
        Metric::ToolCalls,
        Metric::ToolErrors,
        Metric::InputTokens,
        Metric::OutputTokens,
        Metric::TotalTokens,
        Metric::Turns,
        Metric::LatencyMs,
    ];

    pub const ALL: [Metric; 12] = [
        Metric::Success,
        Metric::ToolCalls,
        Metric::ToolErrors,
        Metric::InputTokens,
        Metric::OutputTokens,
        Metric::TotalTokens,
        Metric::Turns,
        Metric::LatencyMs,
        Metric::PassAtK,
        Metric::PassHatK,
        Metric::FalseCallRate,
        Metric::MissedCallRate,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Success => "success",
            Metric::ToolCalls => "tool_calls",
            Metric::ToolErrors => "tool_errors",
            Metric::InputTokens => "input_tokens",
            Metric::OutputTokens => "output_tokens",
            Metric::TotalTokens => "total_tokens",
            Metric::Turns => "turns",
            Metric::LatencyMs => "latency_ms",
            Metric::PassAtK => "pass_at_k",
            Metric::PassHatK => "pass_hat_k",
            Metric::FalseCallRate => "false_call_rate",
            Metric::MissedCallRate => "missed_call_rate",
        }
    }

    /// Success and pass rates get better as they rise; every other metric as it falls.
    pub fn higher_is_better(self) -> bool {
        matches!(self, Metric::Success | Metric::PassAtK | Metric::PassHatK)
    }

    /// Rates in [0, 1], judged with the absolute success margin; the rest with the relative one.
    pub fn is_rate(self) -> bool {
        matches!(
            self,
            Metric::Success
                | Metric::PassAtK
                | Metric::PassHatK
                | Metric::FalseCallRate
                | Metric::MissedCallRate
        )
    }
}

impl std::fmt::Display for Metric {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Metric {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Metric::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Metric::ALL.iter().map(|m| m.as_str()).collect();
                format!(
                    "unknown metric `{s}` (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// How episodes become verdicts; stored in `run.json` so `mcpeval compare` repeats the run's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StatsConfig {
    /// Run-level significance: the chance that an A/A run (same server twice) reports a
    /// regression on a gated metric stays at or below it.
    pub alpha: f64,
    /// Smallest change of a success rate (absolute, 0.10 = ten points) that counts.
    pub success_margin: f64,
    /// Smallest change of a count metric that counts, relative to the baseline mean.
    pub relative_margin: f64,
    /// The suite rows' margin for rates (absolute): smaller than a task's, since a few broken
    /// tasks move a suite's rate only a little (4 of 30 tasks at 100 % → 50 % is 6.7 points).
    pub suite_success_margin: f64,
    /// The suite rows' margin for counts, relative to the pooled baseline mean.
    pub suite_relative_margin: f64,
    /// Multiple-comparison adjustment across the tasks of one metric and host.
    pub correction: Adjustment,
    /// k of pass@k and pass^k (at most the trials per side).
    pub pass_k: u32,
    /// Metrics whose regression fails the run (exit 1).
    pub gated: Vec<Metric>,
    /// Share of episodes with an infrastructure error above which the run fails (exit 3).
    pub max_infra_share: f64,
    /// Power that planning advice (trials needed, smallest detectable drop) aims for.
    pub power: f64,
    /// Resamples of each bootstrap interval.
    pub bootstrap_resamples: usize,
}

impl Default for StatsConfig {
    fn default() -> Self {
        Self {
            alpha: 0.05,
            success_margin: 0.10,
            relative_margin: 0.25,
            suite_success_margin: 0.02,
            suite_relative_margin: 0.10,
            correction: Adjustment::Holm,
            pass_k: 3,
            gated: vec![
                Metric::Success,
                Metric::ToolCalls,
                Metric::ToolErrors,
                Metric::TotalTokens,
            ],
            max_infra_share: 0.10,
            power: 0.8,
            bootstrap_resamples: crate::stats::DEFAULT_RESAMPLES,
        }
    }
}

impl StatsConfig {
    /// Checks every value's range; the message names the key.
    pub fn validate(&self) -> Result<(), String> {
        let open01 = |name: &str, v: f64| {
            if v > 0.0 && v < 1.0 {
                Ok(())
            } else {
                Err(format!("[stats] `{name}` must lie in (0, 1), got {v}"))
            }
        };
        open01("alpha", self.alpha)?;
        open01("success_margin", self.success_margin)?;
        open01("suite_success_margin", self.suite_success_margin)?;
        if !(0.5..1.0).contains(&self.power) {
            return Err(format!(
                "[stats] `power` must lie in [0.5, 1), got {}",
                self.power
            ));
        }
        if !(self.relative_margin > 0.0 && self.relative_margin.is_finite()) {
            return Err(format!(
                "[stats] `relative_margin` must be above 0, got {}",
                self.relative_margin
            ));
        }
        if !(self.suite_relative_margin > 0.0 && self.suite_relative_margin.is_finite()) {
            return Err(format!(
                "[stats] `suite_relative_margin` must be above 0, got {}",
                self.suite_relative_margin
            ));
        }
        if !(0.0..=1.0).contains(&self.max_infra_share) {
            return Err(format!(
                "[stats] `max_infra_share` must lie in [0, 1], got {}",
                self.max_infra_share
            ));
        }
        if self.pass_k == 0 {
            return Err("[stats] `pass_k` must be at least 1".into());
        }
        if let Some(m) = self
            .gated
            .iter()
            .find(|m| matches!(m, Metric::PassAtK | Metric::PassHatK))
        {
            return Err(format!(
                "[stats] `gated` lists `{m}`, which is descriptive (no test) and cannot be gated"
            ));
        }
        if self.bootstrap_resamples == 0 {
            return Err("[stats] `bootstrap_resamples` must be at least 1".into());
        }
        Ok(())
    }
}

/// `[stats]` as written: every key optional, laid over the layer below key by key.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StatsFile {
    pub alpha: Option<f64>,
    pub success_margin: Option<f64>,
    pub relative_margin: Option<f64>,
    pub suite_success_margin: Option<f64>,
    pub suite_relative_margin: Option<f64>,
    pub correction: Option<Adjustment>,
    pub pass_k: Option<u32>,
    pub gated: Option<Vec<Metric>>,
    pub max_infra_share: Option<f64>,
    pub power: Option<f64>,
    pub bootstrap_resamples: Option<usize>,
}

impl StatsFile {
    pub fn layer(self, over: StatsFile) -> StatsFile {
        StatsFile {
            alpha: over.alpha.or(self.alpha),
            success_margin: over.success_margin.or(self.success_margin),
            relative_margin: over.relative_margin.or(self.relative_margin),
            suite_success_margin: over.suite_success_margin.or(self.suite_success_margin),
            suite_relative_margin: over.suite_relative_margin.or(self.suite_relative_margin),
            correction: over.correction.or(self.correction),
            pass_k: over.pass_k.or(self.pass_k),
            gated: over.gated.or(self.gated),
            max_infra_share: over.max_infra_share.or(self.max_infra_share),
            power: over.power.or(self.power),
            bootstrap_resamples: over.bootstrap_resamples.or(self.bootstrap_resamples),
        }
    }

    /// The keys set here over the defaults.
    pub fn resolve(&self) -> StatsConfig {
        let d = StatsConfig::default();
        StatsConfig {
            alpha: self.alpha.unwrap_or(d.alpha),
            success_margin: self.success_margin.unwrap_or(d.success_margin),
            relative_margin: self.relative_margin.unwrap_or(d.relative_margin),
            suite_success_margin: self.suite_success_margin.unwrap_or(d.suite_success_margin),
            suite_relative_margin: self
                .suite_relative_margin
                .unwrap_or(d.suite_relative_margin),
            correction: self.correction.unwrap_or(d.correction),
            pass_k: self.pass_k.unwrap_or(d.pass_k),
            gated: self.gated.clone().unwrap_or(d.gated),
            max_infra_share: self.max_infra_share.unwrap_or(d.max_infra_share),
            power: self.power.unwrap_or(d.power),
            bootstrap_resamples: self.bootstrap_resamples.unwrap_or(d.bootstrap_resamples),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_names_round_trip() {
        for m in Metric::ALL {
            assert_eq!(m.as_str().parse::<Metric>().unwrap(), m);
            assert_eq!(serde_json::to_string(&m).unwrap(), format!("\"{m}\""));
        }
        let err = "calls".parse::<Metric>().unwrap_err();
        assert!(err.contains("tool_calls"), "{err}");
    }

    #[test]
    fn layers_and_validates() {
        let below: StatsFile = toml::from_str("alpha = 0.1\npass_k = 5").unwrap();
        let above: StatsFile = toml::from_str("alpha = 0.01\ncorrection = \"bh\"").unwrap();
        let cfg = below.layer(above).resolve();
        assert_eq!(cfg.alpha, 0.01);
        assert_eq!(cfg.pass_k, 5);
        assert_eq!(cfg.correction, Adjustment::BenjaminiHochberg);
        assert!(cfg.validate().is_ok());
        let bad = StatsConfig {
            alpha: 1.5,
            ..StatsConfig::default()
        };
        assert!(bad.validate().unwrap_err().contains("alpha"));
        assert!(toml::from_str::<StatsFile>("gated = [\"calls\"]").is_err());
    }
}
