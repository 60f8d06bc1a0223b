//! `[stats]`: the metrics compared, the significance level, margins and correction behind a verdict.

use serde::{Deserialize, Serialize};

use super::InvalidSetting;
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
    /// Output tokens spent on reasoning (reasoning models); its rows are left out where no
    /// episode of the task (or suite) reported any.
    ReasoningTokens,
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
    /// Under tool search: share of episodes in which a search ranked one of the task's
    /// expected tools within `tool_search_k` (task rows; gated when `success` is).
    FoundAtK,
}

impl Metric {
    /// The metrics compared task by task with a test, in report order.
    pub const TESTED: [Metric; 9] = [
        Metric::Success,
        Metric::ToolCalls,
        Metric::ToolErrors,
        Metric::InputTokens,
        Metric::OutputTokens,
        Metric::TotalTokens,
        Metric::ReasoningTokens,
        Metric::Turns,
        Metric::LatencyMs,
    ];

    pub const ALL: [Metric; 14] = [
        Metric::Success,
        Metric::ToolCalls,
        Metric::ToolErrors,
        Metric::InputTokens,
        Metric::OutputTokens,
        Metric::TotalTokens,
        Metric::ReasoningTokens,
        Metric::Turns,
        Metric::LatencyMs,
        Metric::PassAtK,
        Metric::PassHatK,
        Metric::FalseCallRate,
        Metric::MissedCallRate,
        Metric::FoundAtK,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Metric::Success => "success",
            Metric::ToolCalls => "tool_calls",
            Metric::ToolErrors => "tool_errors",
            Metric::InputTokens => "input_tokens",
            Metric::OutputTokens => "output_tokens",
            Metric::TotalTokens => "total_tokens",
            Metric::ReasoningTokens => "reasoning_tokens",
            Metric::Turns => "turns",
            Metric::LatencyMs => "latency_ms",
            Metric::PassAtK => "pass_at_k",
            Metric::PassHatK => "pass_hat_k",
            Metric::FalseCallRate => "false_call_rate",
            Metric::MissedCallRate => "missed_call_rate",
            Metric::FoundAtK => "found_at_k",
        }
    }

    /// Success and pass rates get better as they rise; every other metric as it falls.
    pub fn higher_is_better(self) -> bool {
        matches!(
            self,
            Metric::Success | Metric::PassAtK | Metric::PassHatK | Metric::FoundAtK
        )
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
                | Metric::FoundAtK
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
    /// Adaptive trials: run each task in looks of `look_every` trials per side up to
    /// `max_trials`, and stop it once its verdict is settled (`analysis::adaptive`).
    pub adaptive: bool,
    /// Trials per side between two looks of an adaptive run.
    pub look_every: u32,
    /// Trials per side an adaptive run gives a task at most.
    pub max_trials: u32,
    /// Trials per side before an adaptive run first decides (default: `look_every`); rounded
    /// up to a look.
    pub min_trials: Option<u32>,
    /// An adaptive task stops for futility when the predictive power of each gated row that is
    /// not otherwise settled (the chance it would still end as a regression) is below this.
    pub futility: f64,
    /// An adaptive run's trials per side for the whole run (all tasks and hosts): each look
    /// goes to the tasks not yet settled, the likeliest regressions first, while it lasts.
    pub trial_budget: Option<u64>,
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
            adaptive: false,
            look_every: 5,
            max_trials: 30,
            min_trials: None,
            futility: 0.05,
            trial_budget: None,
        }
    }
}

impl StatsConfig {
    /// Checks every value's range; the message names the key.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        let open01 = |name: &str, v: f64| {
            if v > 0.0 && v < 1.0 {
                Ok(())
            } else {
                Err(InvalidSetting(format!(
                    "[stats] `{name}` must lie in (0, 1), got {v}"
                )))
            }
        };
        open01("alpha", self.alpha)?;
        open01("success_margin", self.success_margin)?;
        open01("suite_success_margin", self.suite_success_margin)?;
        if !(0.5..1.0).contains(&self.power) {
            return Err(InvalidSetting(format!(
                "[stats] `power` must lie in [0.5, 1), got {}",
                self.power
            )));
        }
        if !(self.relative_margin > 0.0 && self.relative_margin.is_finite()) {
            return Err(InvalidSetting(format!(
                "[stats] `relative_margin` must be above 0, got {}",
                self.relative_margin
            )));
        }
        if !(self.suite_relative_margin > 0.0 && self.suite_relative_margin.is_finite()) {
            return Err(InvalidSetting(format!(
                "[stats] `suite_relative_margin` must be above 0, got {}",
                self.suite_relative_margin
            )));
        }
        if !(0.0..=1.0).contains(&self.max_infra_share) {
            return Err(InvalidSetting(format!(
                "[stats] `max_infra_share` must lie in [0, 1], got {}",
                self.max_infra_share
            )));
        }
        if self.pass_k == 0 {
            return Err("[stats] `pass_k` must be at least 1".into());
        }
        if let Some(m) = self
            .gated
            .iter()
            .find(|m| matches!(m, Metric::PassAtK | Metric::PassHatK))
        {
            return Err(InvalidSetting(format!(
                "[stats] `gated` lists `{m}`, which is descriptive (no test) and cannot be gated"
            )));
        }
        if self.bootstrap_resamples == 0 {
            return Err("[stats] `bootstrap_resamples` must be at least 1".into());
        }
        if self.look_every == 0 {
            return Err("[stats] `look_every` must be at least 1".into());
        }
        if self.max_trials < self.look_every {
            return Err(InvalidSetting(format!(
                "[stats] `max_trials` ({}) must be at least `look_every` ({})",
                self.max_trials, self.look_every
            )));
        }
        if let Some(min) = self.min_trials.filter(|m| *m == 0 || *m > self.max_trials) {
            return Err(InvalidSetting(format!(
                "[stats] `min_trials` must lie in [1, max_trials = {}], got {min}",
                self.max_trials
            )));
        }
        open01("futility", self.futility)?;
        if self.trial_budget == Some(0) {
            return Err("[stats] `trial_budget` must be at least 1".into());
        }
        Ok(())
    }

    /// The trials per side of an adaptive run's first look (`min_trials` rounded up to a look,
    /// else `look_every`).
    pub fn first_look(&self) -> u32 {
        self.looks().first().copied().unwrap_or(self.max_trials)
    }

    /// The trials per side at each look of an adaptive run: every `look_every` up to
    /// `max_trials` (the last look at `max_trials` itself), none before `min_trials`.
    pub fn looks(&self) -> Vec<u32> {
        let every = self.look_every.max(1);
        let min = self.min_trials.unwrap_or(every).max(1);
        let mut looks: Vec<u32> = (1..)
            .map(|j| j * every)
            .take_while(|n| *n < self.max_trials)
            .filter(|n| *n >= min)
            .collect();
        looks.push(self.max_trials.max(1));
        looks
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
    pub adaptive: Option<bool>,
    pub look_every: Option<u32>,
    pub max_trials: Option<u32>,
    pub min_trials: Option<u32>,
    pub futility: Option<f64>,
    pub trial_budget: Option<u64>,
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
            adaptive: over.adaptive.or(self.adaptive),
            look_every: over.look_every.or(self.look_every),
            max_trials: over.max_trials.or(self.max_trials),
            min_trials: over.min_trials.or(self.min_trials),
            futility: over.futility.or(self.futility),
            trial_budget: over.trial_budget.or(self.trial_budget),
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
            adaptive: self.adaptive.unwrap_or(d.adaptive),
            look_every: self.look_every.unwrap_or(d.look_every),
            max_trials: self.max_trials.unwrap_or(d.max_trials),
            min_trials: self.min_trials.or(d.min_trials),
            futility: self.futility.unwrap_or(d.futility),
            trial_budget: self.trial_budget.or(d.trial_budget),
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
        assert!(bad.validate().unwrap_err().0.contains("alpha"));
        assert!(toml::from_str::<StatsFile>("gated = [\"calls\"]").is_err());
    }

    #[test]
    fn looks_of_an_adaptive_design() {
        let d = StatsConfig::default();
        assert_eq!(d.looks(), vec![5, 10, 15, 20, 25, 30]);
        let odd = StatsConfig {
            look_every: 4,
            max_trials: 10,
            min_trials: Some(6),
            ..d.clone()
        };
        assert_eq!(odd.looks(), vec![8, 10]);
        let late = StatsConfig {
            min_trials: Some(30),
            ..d.clone()
        };
        assert_eq!(late.looks(), vec![30]);
        let bad = StatsConfig {
            max_trials: 3,
            ..d.clone()
        };
        assert!(bad.validate().unwrap_err().0.contains("max_trials"));
        let bad = StatsConfig { futility: 1.0, ..d };
        assert!(bad.validate().unwrap_err().0.contains("futility"));
    }
}
