//! The command line's error type. Every failure ends as one `error: <message>` line on
//! stderr and a non-zero exit code (see [`crate::cli::main`]).

use std::io;

/// A command failed. Device errors keep the device's message, which names the rule broken.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error(transparent)]
    Device(#[from] zkv_zns::ZnsError),

    /// Input the parser accepted but the command refuses (e.g. `--device mem` for `zone`).
    #[error("{0}")]
    Invalid(String),

    /// A file the command reads or writes itself (not the device).
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },

    /// Writing to stdout failed (e.g. the reader of a pipe went away).
    #[error("writing output: {0}")]
    Output(#[source] io::Error),
}

impl CliError {
    pub fn invalid(message: impl Into<String>) -> CliError {
        CliError::Invalid(message.into())
    }

    pub fn io(context: impl Into<String>, source: io::Error) -> CliError {
        CliError::Io {
            context: context.into(),
            source,
        }
    }

    /// Exit code: 1 for every runtime failure (usage errors exit with 2 before running).
    pub fn exit_code(&self) -> u8 {
        1
    }

    /// True when stdout's reader closed the pipe (`zkv zone report | head -1`): not worth
    /// an error message.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, CliError::Output(e) if e.kind() == io::ErrorKind::BrokenPipe)
    }
}

pub type CliResult<T = ()> = Result<T, CliError>;
