//! Errors that say whose fault they are, as Python exceptions: `pimkit.InputError` for what
//! the CLI reports with exit status 2 (the user can fix it), `pimkit.InternalError` for
//! exit status 1 (a bug). The message is the CLI's one line.

use pimkit_engine::{EngineError, ErrorKind};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use std::fmt::Display;
use std::panic::{AssertUnwindSafe, catch_unwind};

pyo3::create_exception!(
    pimkit,
    InputError,
    PyException,
    "Bad input the caller can fix (a model, option or architecture file); the CLI exits 2."
);
pyo3::create_exception!(
    pimkit,
    InternalError,
    PyException,
    "A fault inside pimkit (please report it); the CLI exits 1."
);

/// The user's error (exit 2).
pub fn user(e: impl Display) -> EngineError {
    EngineError::input(e)
}

/// A bug (exit 1).
pub fn bug(e: impl Display) -> EngineError {
    EngineError::internal(e)
}

/// The Python exception for an engine error.
pub fn to_py(e: EngineError) -> PyErr {
    match e.kind {
        ErrorKind::Input => InputError::new_err(e.msg),
        ErrorKind::Internal => InternalError::new_err(e.msg),
    }
}

/// `InputError` with this message.
pub fn input_err(e: impl Display) -> PyErr {
    InputError::new_err(e.to_string())
}

/// Run engine work with the GIL released; a panic becomes `InternalError`, never a crash.
pub fn detached<T: Send>(
    py: Python<'_>,
    f: impl FnOnce() -> Result<T, EngineError> + Send,
) -> PyResult<T> {
    py.detach(|| catch_unwind(AssertUnwindSafe(f)))
        .map_err(|p| {
            let msg = p
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| p.downcast_ref::<&str>().copied())
                .unwrap_or("panic");
            InternalError::new_err(format!(
                "internal error (this is a bug, please report it): {msg}"
            ))
        })?
        .map_err(to_py)
}
