//! Exit codes, and the error a subcommand ends with: a library error with
//! the context the command line adds (the flag or file it came from) and
//! the exit code it maps to.

/// Exit code: everything held.
pub const EXIT_OK: u8 = 0;
/// Exit code: an expectation failed (or a halt condition fired).
pub const EXIT_ASSERTION: u8 = 1;
/// Exit code: invalid input (file or arguments).
pub const EXIT_INVALID: u8 = 2;
/// Exit code: the run itself failed (port in use, upstream unresolvable).
pub const EXIT_RUNTIME: u8 = 3;
/// Exit code: the steady state did not hold before the first fault, so no
/// fault was injected.
pub const EXIT_NOT_HEALTHY: u8 = 4;
/// Exit code: the run completed, no expectation failed, and the evidence
/// gate found that the evidence cannot carry at least one verdict.
pub const EXIT_INCONCLUSIVE: u8 = 5;
/// Exit code: interrupted by Ctrl-C or SIGTERM.
pub const EXIT_INTERRUPTED: u8 = 130;

/// Any error a library layer returns.
type Source = Box<dyn std::error::Error + Send + Sync>;

/// A failure of a subcommand: what went wrong, where on the command line,
/// and the exit code.
#[derive(Debug)]
pub struct CliError {
    /// [`EXIT_INVALID`] or [`EXIT_RUNTIME`].
    code: u8,
    /// The flag or file at fault, e.g. `--listen 127.0.0.1:80: cannot bind`.
    context: Option<String>,
    /// The library's error, whose message ends the line.
    source: Source,
}

impl CliError {
    /// Bad input: exit 2.
    pub fn invalid(source: impl Into<Source>) -> CliError {
        CliError {
            code: EXIT_INVALID,
            context: None,
            source: source.into(),
        }
    }

    /// The run failed: exit 3.
    pub fn runtime(source: impl Into<Source>) -> CliError {
        CliError {
            code: EXIT_RUNTIME,
            context: None,
            source: source.into(),
        }
    }

    /// The same error, said to come from `context` (a flag and its value).
    pub fn context(mut self, context: impl Into<String>) -> CliError {
        self.context = Some(context.into());
        self
    }

    /// The process exit code for this error.
    pub fn exit_code(&self) -> u8 {
        self.code
    }
}

impl std::fmt::Display for CliError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.context {
            Some(context) => write!(f, "{context}: {}", self.source),
            None => write!(f, "{}", self.source),
        }
    }
}

impl std::error::Error for CliError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

impl From<crate::schema::LoadError> for CliError {
    fn from(e: crate::schema::LoadError) -> Self {
        CliError::invalid(e)
    }
}

impl From<crate::schema::SchemaError> for CliError {
    fn from(e: crate::schema::SchemaError) -> Self {
        CliError::invalid(e)
    }
}

impl From<crate::experiment::drill::RunError> for CliError {
    fn from(e: crate::experiment::drill::RunError) -> Self {
        CliError::runtime(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_comes_before_the_library_message_and_keeps_the_source() {
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "address in use");
        let err = CliError::runtime(io).context("--listen 127.0.0.1:80: cannot bind");
        assert_eq!(
            err.to_string(),
            "--listen 127.0.0.1:80: cannot bind: address in use"
        );
        assert_eq!(err.exit_code(), EXIT_RUNTIME);
        let source = std::error::Error::source(&err).expect("the library error is the source");
        assert_eq!(source.to_string(), "address in use");
    }

    #[test]
    fn invalid_input_maps_to_exit_two_and_reads_as_the_message_alone() {
        let err = CliError::invalid("--mode: applies to fault files");
        assert_eq!(err.to_string(), "--mode: applies to fault files");
        assert_eq!(err.exit_code(), EXIT_INVALID);
    }
}
