//! Errors of the loop-nest stage. Every variant names what it is about (node, op,
//! compiler path) and says what to do.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum LoopsError {
    /// The lowering has no rule for this op (or this form of it).
    #[error("node '{node}' ({op}): cannot lower to loop nests: {msg}")]
    Unsupported {
        node: String,
        op: String,
        msg: String,
    },
    /// The graph is malformed in a way the lowering noticed (missing input, bad shape).
    #[error("node '{node}' ({op}): {msg}")]
    Node {
        node: String,
        op: String,
        msg: String,
    },
    /// The C compiler could not be started.
    #[error(
        "C compiler '{cc}' could not be run ({source}); install a C compiler (e.g. `apt-get install gcc`) or point PIMKIT_CC / NativeOptions::cc at one"
    )]
    CompilerMissing {
        cc: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The C compiler ran and failed.
    #[error("C compiler '{cc}' failed on {src}:\n{stderr}")]
    CompilerFailed {
        cc: PathBuf,
        src: PathBuf,
        stderr: String,
    },
    /// The compiled library could not be loaded or lacks a symbol.
    #[error("loading native library {path}: {msg}")]
    Load { path: PathBuf, msg: String },
    /// Bad input to a native run (missing input, wrong shape or dtype).
    #[error("native run: {0}")]
    Input(String),
    /// The program uses something the C backend cannot express.
    #[error("C code generation, nest {nest}: {msg}")]
    Codegen { nest: usize, msg: String },
    #[error("I/O on {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, LoopsError>;
