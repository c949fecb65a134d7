use crate::DType;

/// Errors raised while building, inferring or verifying a graph. Every variant names the
/// node (or value) it is about so that the user can find it in the model.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum IrError {
    #[error("node '{node}' ({op}): {msg}")]
    Node {
        node: String,
        op: String,
        msg: String,
    },
    #[error("node '{node}' ({op}): input {index} has shape {got:?}, expected {expected}")]
    Shape {
        node: String,
        op: String,
        index: usize,
        got: Vec<usize>,
        expected: String,
    },
    #[error("node '{node}' ({op}): input {index} has dtype {got}, expected {expected}")]
    DType {
        node: String,
        op: String,
        index: usize,
        got: DType,
        expected: String,
    },
    #[error("value '{value}': {msg}")]
    Value { value: String, msg: String },
    #[error("{}", verify_message(.0))]
    Verify(Vec<String>),
    #[error("{0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, IrError>;

/// The first problem on the first line; a few more on short lines after it.
fn verify_message(problems: &[String]) -> String {
    let mut s = problems.first().cloned().unwrap_or_default();
    if problems.len() > 1 {
        s.push_str(&format!(" (and {} more problem(s))", problems.len() - 1));
        for p in problems.iter().skip(1).take(4) {
            s.push_str("\n  ");
            s.push_str(p);
        }
        if problems.len() > 5 {
            s.push_str(&format!("\n  ... {} more", problems.len() - 5));
        }
    }
    s
}

/// `s` cut to at most `max` characters (on a char boundary) with a note of how much was
/// left out: messages quote user input (a header, a name) that may be kilobytes long.
pub fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((cut, _)) => format!(
            "{}... ({} more characters)",
            &s[..cut],
            s[cut..].chars().count()
        ),
    }
}

/// A parser's error at byte `offset` of `text` on one line: `line L, column C: message`
/// (TOML and JSON errors otherwise quote the source over several lines).
pub fn at_offset(text: &str, offset: Option<usize>, message: &str) -> String {
    let message = clip(message.lines().next().unwrap_or("").trim(), 200);
    let Some(off) = offset.filter(|&o| o <= text.len()) else {
        return message;
    };
    let before = &text.as_bytes()[..off];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let col = off
        - before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    format!("line {line}, column {col}: {message}")
}

#[cfg(test)]
mod tests {
    #[test]
    fn parser_errors_get_line_and_column_on_one_line() {
        let text = "a = 1\nb = = 2\n";
        assert_eq!(
            super::at_offset(text, Some(10), "expected a value\n  |\n2 | b = = 2"),
            "line 2, column 5: expected a value"
        );
        assert_eq!(super::at_offset(text, None, "bad"), "bad");
        let long = "x".repeat(500);
        assert!(super::at_offset("", Some(0), &long).len() < 260);
    }
}
