//! Errors that say whose fault they are.

use std::fmt;

/// Who can fix a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The user's input (model, option, architecture file): exit 2, `pimkit.InputError`.
    Input,
    /// A fault inside pimkit (a broken invariant, a simulator inconsistency): exit 1,
    /// `pimkit.InternalError`.
    Internal,
}

/// An engine's failure: a one-line message and whose it is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineError {
    pub kind: ErrorKind,
    pub msg: String,
}

impl EngineError {
    pub fn input(msg: impl fmt::Display) -> Self {
        EngineError {
            kind: ErrorKind::Input,
            msg: msg.to_string(),
        }
    }
    pub fn internal(msg: impl fmt::Display) -> Self {
        EngineError {
            kind: ErrorKind::Internal,
            msg: msg.to_string(),
        }
    }
    pub fn is_input(&self) -> bool {
        self.kind == ErrorKind::Input
    }
    /// The process exit status for this error (2: the user's, 1: a bug).
    pub fn exit_code(&self) -> u8 {
        match self.kind {
            ErrorKind::Input => 2,
            ErrorKind::Internal => 1,
        }
    }
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.msg)
    }
}

impl std::error::Error for EngineError {}

impl From<crate::ArchError> for EngineError {
    fn from(e: crate::ArchError) -> Self {
        EngineError::input(e)
    }
}
