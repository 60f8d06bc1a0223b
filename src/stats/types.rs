//! Small result and input types shared by the tests in `stats`, and their error type.

use serde::Serialize;

/// A test statistic and its p-value.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TestResult {
    /// The statistic as the test defines it (see each test's doc comment).
    pub statistic: f64,
    /// The p-value, in [0, 1].
    pub p_value: f64,
}

/// A two-sided confidence interval, `low <= high`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Interval {
    pub low: f64,
    pub high: f64,
}

impl Interval {
    /// Whether `value` lies in the closed interval.
    pub fn contains(&self, value: f64) -> bool {
        self.low <= value && value <= self.high
    }
}

/// Successes out of trials on one side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Proportion {
    pub successes: u64,
    pub trials: u64,
}

impl Proportion {
    pub fn new(successes: u64, trials: u64) -> Self {
        Self { successes, trials }
    }

    /// The observed rate; checks `0 < trials` and `successes <= trials`.
    pub fn rate(&self) -> Result<f64, StatsError> {
        if self.trials == 0 || self.successes > self.trials {
            return Err(StatsError::InvalidProportion {
                successes: self.successes,
                trials: self.trials,
            });
        }
        Ok(self.successes as f64 / self.trials as f64)
    }
}

/// One stratum (a task) of a stratified comparison of success rates: a 2×2 table.
///
/// A side may have no trials; such a stratum carries no information about the difference.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Table2x2 {
    pub baseline: Proportion,
    pub candidate: Proportion,
}

impl Table2x2 {
    pub fn new(baseline: Proportion, candidate: Proportion) -> Self {
        Self {
            baseline,
            candidate,
        }
    }

    /// Whether both sides have trials.
    pub(crate) fn has_both_sides(&self) -> bool {
        self.baseline.trials > 0 && self.candidate.trials > 0
    }
}

/// Checks that no side of any table has more successes than trials (no trials is allowed).
pub(crate) fn check_tables(tables: &[Table2x2]) -> Result<(), StatsError> {
    for side in tables.iter().flat_map(|t| [t.baseline, t.candidate]) {
        if side.successes > side.trials {
            return Err(StatsError::InvalidProportion {
                successes: side.successes,
                trials: side.trials,
            });
        }
    }
    Ok(())
}

/// Why a statistic could not be computed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StatsError {
    #[error("sample `{0}` is empty")]
    EmptySample(&'static str),
    #[error("sample `{0}` holds a value that is not finite")]
    NonFinite(&'static str),
    #[error("invalid proportion: {successes} successes out of {trials} trials")]
    InvalidProportion { successes: u64, trials: u64 },
    #[error("`{name}` must lie in {range}, got {value}")]
    OutOfRange {
        name: &'static str,
        range: &'static str,
        value: f64,
    },
    #[error("the bootstrap needs at least one resample")]
    NoResamples,
    #[error("invalid looks of an adaptive design: {0}")]
    InvalidLooks(String),
}

impl crate::error::Coded for StatsError {
    /// The statistics fail only on values the user chose (a rate, a drop, a power) or on data
    /// given to `compare` and `plan`: an input error.
    fn exit(&self) -> crate::error::Exit {
        crate::error::Exit::Usage
    }
}

/// Checks that every value of the sample `name` is finite and that it is not empty.
pub(crate) fn check_sample(name: &'static str, values: &[f64]) -> Result<(), StatsError> {
    if values.is_empty() {
        return Err(StatsError::EmptySample(name));
    }
    if values.iter().any(|v| !v.is_finite()) {
        return Err(StatsError::NonFinite(name));
    }
    Ok(())
}

/// Checks `low <= value <= high` (closed) or `low < value < high` (open), NaN failing both.
pub(crate) fn check_range(
    name: &'static str,
    value: f64,
    (low, high): (f64, f64),
    open: bool,
) -> Result<(), StatsError> {
    let inside = if open {
        low < value && value < high
    } else {
        low <= value && value <= high
    };
    if inside {
        return Ok(());
    }
    let range = match (open, low, high) {
        (true, 0.0, 1.0) => "(0, 1)",
        (false, 0.0, 1.0) => "[0, 1]",
        (false, -1.0, 1.0) => "[-1, 1]",
        _ => "its valid range",
    };
    Err(StatsError::OutOfRange { name, range, value })
}

/// Checks a significance level `alpha` in (0, 1).
pub(crate) fn check_alpha(alpha: f64) -> Result<(), StatsError> {
    check_range("alpha", alpha, (0.0, 1.0), true)
}

/// The arithmetic mean of a non-empty sample.
pub(crate) fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}
