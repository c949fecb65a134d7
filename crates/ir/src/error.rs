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
