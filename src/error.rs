//! The documented exit codes, the trait by which every library error says which one it means,
//! and an error's chain of causes as one line. A leaf: it imports nothing of the crate.

use std::fmt;

/// The documented exit codes (docs/exit-codes.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// No regression (the run completed).
    Ok = 0,
    /// A regression was found (for `diff`: a change breaks clients).
    Regression = 1,
    /// Usage or input error: flags, config, task files, a run directory.
    Usage = 2,
    /// Infrastructure failure: a server would not start, too many infrastructure errors, a file
    /// that cannot be written.
    Infra = 3,
    /// Interrupted (Ctrl-C, SIGTERM); finish with `--resume DIR`.
    Interrupted = 130,
}

impl Exit {
    /// The process exit code.
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// A library error that knows which documented exit code it means. Each implementation is one
/// `match` over the error's kinds, so the mapping is read in one place per error type.
pub trait Coded: std::error::Error + Send + Sync + 'static {
    fn exit(&self) -> Exit;
}

/// An error on its way to `main`: what failed, and the exit code it means.
#[derive(Debug)]
pub struct Failure {
    pub exit: Exit,
    pub error: anyhow::Error,
}

impl Failure {
    /// A usage or input error found by the command line itself (a flag that contradicts
    /// another, a value out of range).
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Usage,
            error: error.into(),
        }
    }

    /// An infrastructure failure found by the command line itself.
    pub fn infra(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Infra,
            error: error.into(),
        }
    }

    /// The same failure, with what was being done said first.
    pub fn context(self, context: impl fmt::Display + Send + Sync + 'static) -> Self {
        Self {
            exit: self.exit,
            error: self.error.context(context),
        }
    }
}

impl<E: Coded> From<E> for Failure {
    fn from(error: E) -> Self {
        Self {
            exit: error.exit(),
            error: error.into(),
        }
    }
}

/// An error with no kind of its own (a file that could not be written on the way) is an
/// infrastructure failure.
impl From<anyhow::Error> for Failure {
    fn from(error: anyhow::Error) -> Self {
        Self::infra(error)
    }
}

/// An error with its sources, on one line; a cause whose text the line already holds is not
/// repeated.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] std::io::Error);

    #[test]
    fn a_chain_names_every_cause_once() {
        let e = Outer(std::io::Error::other("inner"));
        assert_eq!(chain(&e), "outer: inner");
        let repeated = Outer(std::io::Error::other("outer"));
        assert_eq!(chain(&repeated), "outer");
    }
}
