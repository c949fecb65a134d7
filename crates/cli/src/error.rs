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

/// Lines longer than this have their long quoted parts clipped (below the 300 chars a
/// first line may have, with room for the `pimkit: error: ` prefix).
const LONG_LINE: usize = 200;
/// A quoted part longer than this (in chars) is clipped to its first `KEEP` chars.
const LONG_QUOTE: usize = 100;
const KEEP: usize = 60;

/// `text` with every quoted part ('...') of over 100 chars on a line of over 200 chars
/// clipped to its first 60 chars and its length, then, if the line is still long, every
/// word of over 100 chars: a command-line value or file name of 10,000 chars is quoted
/// in a message, never dumped.
pub fn clip_quoted(text: &str) -> String {
    text.split('\n')
        .map(|line| {
            if line.chars().count() <= LONG_LINE {
                return line.to_string();
            }
            let parts: Vec<&str> = line.split('\'').collect();
            let mut out = String::with_capacity(LONG_LINE);
            for (i, p) in parts.iter().enumerate() {
                if i > 0 {
                    out.push('\'');
                }
                // Odd parts lie between a pair of quotes (a last unpaired one is not).
                let quoted = i % 2 == 1 && i + 1 < parts.len();
                let n = p.chars().count();
                if quoted && n > LONG_QUOTE {
                    out.extend(p.chars().take(KEEP));
                    out.push_str(&format!("... ({n} chars)"));
                } else {
                    out.push_str(p);
                }
            }
            if out.chars().count() <= LONG_LINE {
                return out;
            }
            // Still long: an unquoted value (a file name of 2,000 chars).
            out.split(' ')
                .map(|w| {
                    let n = w.chars().count();
                    if n > LONG_QUOTE {
                        format!(
                            "{}... ({n} chars)",
                            w.chars().take(KEEP).collect::<String>()
                        )
                    } else {
                        w.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_quoted_values_are_clipped_short_lines_kept() {
        let short = "--sweep 'n=1': it's fine";
        assert_eq!(clip_quoted(short), short);
        let v = "x".repeat(5000);
        let m = clip_quoted(&format!(
            "invalid value '{v}' for '--runs <RUNS>': bad\nnext"
        ));
        assert!(m.len() < 200, "{m}");
        assert!(m.contains("(5000 chars)") && m.ends_with("'--runs <RUNS>': bad\nnext"));
        let m = clip_quoted(&format!("{v}.onnx: no such file; give a path"));
        assert_eq!(
            m,
            format!("{}... (5006 chars) no such file; give a path", &v[..60])
        );
    }

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
