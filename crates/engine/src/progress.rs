//! Progress of long engine runs (the CLI draws a bar on a terminal, Python calls back).

/// Told about each step of a long run: `done` of `total` steps, `what` the current one.
pub trait Progress {
    fn step(&mut self, done: usize, total: usize, what: &str);
}

/// Ignores progress.
pub struct NoProgress;

impl Progress for NoProgress {
    fn step(&mut self, _: usize, _: usize, _: &str) {}
}

impl<F: FnMut(usize, usize, &str)> Progress for F {
    fn step(&mut self, done: usize, total: usize, what: &str) {
        self(done, total, what)
    }
}
