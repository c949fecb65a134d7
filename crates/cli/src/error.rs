//! Exit-status policy: 0 success, 2 bad input or usage (the user can fix it), 1 internal error.

use std::fmt;

/// An error the user caused and can fix (bad file, unknown op, wrong shape, bad flag).
/// Anything in an error chain marked with it exits with status 2.
#[derive(Debug)]
pub struct UserError(pub String);

impl fmt::Display for UserError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UserError {}

/// Mark any displayable error as the user's to fix.
pub fn user(e: impl fmt::Display) -> anyhow::Error {
    anyhow::Error::new(UserError(e.to_string()))
}

/// True when the chain holds a [`UserError`].
pub fn is_user_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<UserError>().is_some())
}
