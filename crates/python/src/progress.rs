//! `progress=` callbacks: engines report `(done, total, what)` from threads that do not hold
//! the GIL; each call takes the GIL for the callback. The first exception the callback
//! raises (KeyboardInterrupt included) stops further calls and is raised when the engine
//! returns.

use pyo3::prelude::*;

pub struct PyProgress {
    cb: Option<Py<PyAny>>,
    err: Option<PyErr>,
}

impl PyProgress {
    pub fn new(cb: Option<Py<PyAny>>) -> Self {
        PyProgress { cb, err: None }
    }

    pub fn step(&mut self, done: usize, total: usize, what: &str) {
        if self.err.is_some() {
            return;
        }
        let Some(cb) = &self.cb else { return };
        let r = Python::attach(|py| {
            py.check_signals()?;
            cb.call1(py, (done, total, what)).map(drop)
        });
        if let Err(e) = r {
            self.err = Some(e);
        }
    }

    /// `r`, or the callback's exception if it raised one.
    pub fn finish<T>(self, r: PyResult<T>) -> PyResult<T> {
        match self.err {
            Some(e) => Err(e),
            None => r,
        }
    }
}
