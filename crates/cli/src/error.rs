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

/// An engine's error, exiting 2 when it is the user's input and 1 when it is a bug.
pub fn engine(e: pimkit_engine::EngineError) -> anyhow::Error {
    if e.is_input() {
        user(e)
    } else {
        anyhow::Error::new(e)
    }
}

/// True when the chain holds a [`UserError`].
pub fn is_user_error(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.downcast_ref::<UserError>().is_some())
}

/// The error and its causes joined by ": ", leaving out a cause whose text is already in
/// the message (library errors often print their source inside their own text).
pub fn chain_message(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for c in e.chain() {
        let s = c.to_string();
        if msg.contains(&s) {
            continue;
        }
        if !msg.is_empty() {
            msg.push_str(": ");
        }
        msg.push_str(&s);
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Outer(std::io::Error);
    impl fmt::Display for Outer {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "base network: {}", self.0)
        }
    }
    impl std::error::Error for Outer {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_printed_inside_its_parent_appears_once() {
        let io = std::io::Error::other("no such entry 'x'");
        let e = anyhow::Error::new(Outer(io)).context("searching");
        assert_eq!(
            chain_message(&e),
            "searching: base network: no such entry 'x'"
        );
    }
}
