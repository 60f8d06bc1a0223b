//! Exit codes and the error type that carries one to `main`.

/// The documented exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// No regression (the run completed).
    Ok = 0,
    /// A regression was found.
    Regression = 1,
    /// Usage or input error: flags, config or task files.
    Usage = 2,
    /// Infrastructure failure: a server would not start, too many infrastructure errors.
    Infra = 3,
    /// Interrupted by Ctrl-C.
    Interrupted = 130,
}

/// An error with the exit code it maps to.
#[derive(Debug)]
pub struct CliError {
    pub exit: Exit,
    pub error: anyhow::Error,
}

impl CliError {
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Usage,
            error: error.into(),
        }
    }

    pub fn infra(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Infra,
            error: error.into(),
        }
    }
}

/// Any other error is an infrastructure failure (a file that cannot be written, …).
impl From<anyhow::Error> for CliError {
    fn from(error: anyhow::Error) -> Self {
        Self::infra(error)
    }
}
