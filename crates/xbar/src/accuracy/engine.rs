//! The accuracy study behind the common contract ([`pimkit_engine::Engine`]): the CLI's
//! `xbar accuracy`, the report's section and the Python package's `pimkit.xbar.accuracy`
//! all go through [`Accuracy::run`].

use super::{AccuracyOptions, AccuracyResult, load_inputs_dir, random_inputs, run_accuracy};
use crate::Arch;
use crate::engine::engine_error;
use pimkit_analog::network::Inputs;
use pimkit_engine::{EngineError, Headline, Progress, Section};
use pimkit_ir::Graph;
use std::path::PathBuf;

/// The analog-accuracy engine.
pub struct Accuracy;

/// Where the study's inputs come from.
#[derive(Clone, Debug)]
pub enum InputSource {
    /// `n` deterministic random inputs (input i from seed `seed + i`).
    Random { n: usize, seed: u64 },
    /// `.npy` files in a directory (see [`load_inputs_dir`]).
    Dir(PathBuf),
    /// Inputs given in memory (the Python package's arrays).
    Given(Vec<Inputs>),
}

impl Default for InputSource {
    fn default() -> Self {
        InputSource::Random { n: 1, seed: 0 }
    }
}

impl InputSource {
    /// The inputs, checked against `g` (random ones are made for it).
    pub fn resolve(&self, g: &Graph) -> Result<Vec<Inputs>, EngineError> {
        Ok(match self {
            InputSource::Random { n, seed } => random_inputs(g, *n, *seed),
            InputSource::Dir(d) => load_inputs_dir(g, d).map_err(engine_error)?,
            InputSource::Given(v) => checked(g, v)?,
        })
    }

    /// How the inputs were given, for outputs.
    pub fn describe(&self) -> String {
        match self {
            InputSource::Random { n, seed } => format!("{n} random inputs (seed {seed})"),
            InputSource::Dir(d) => format!("the inputs in {}", d.display()),
            InputSource::Given(v) => format!("{} given inputs", v.len()),
        }
    }
}

/// A study: its settings, the inputs and, optionally, one class label per output row.
#[derive(Clone, Debug, Default)]
pub struct AccuracyRun {
    /// The model's name in results.
    pub label: String,
    pub options: AccuracyOptions,
    pub inputs: InputSource,
    pub labels: Option<Vec<usize>>,
}

/// Inputs given in memory, checked against the model (every input present, its dtype
/// and shape); float64 data for another float type is converted, as numpy's default.
fn checked(g: &Graph, given: &[Inputs]) -> Result<Vec<Inputs>, EngineError> {
    if given.is_empty() {
        return Err(EngineError::input("inputs: give at least one input set"));
    }
    let mut out = Vec::with_capacity(given.len());
    for (i, set) in given.iter().enumerate() {
        let mut fixed = Inputs::new();
        for &id in &g.inputs {
            let name = &g.value(id).name;
            let ty = g.ty(id);
            let Some(t) = set.get(name) else {
                return Err(EngineError::input(format!(
                    "inputs[{i}]: no array for the model's input '{name}' ({ty})"
                )));
            };
            let (t, _) = t.clone().float64_as(ty.dtype);
            if t.dtype() != ty.dtype || t.shape != ty.shape {
                return Err(EngineError::input(format!(
                    "inputs[{i}]: '{name}' is {}{:?}, the model expects {ty}",
                    t.dtype(),
                    t.shape
                )));
            }
            fixed.insert(name.clone(), t);
        }
        if let Some(extra) = set.keys().find(|k| !fixed.contains_key(*k)) {
            return Err(EngineError::input(format!(
                "inputs[{i}]: the model has no input '{extra}'"
            )));
        }
        out.push(fixed);
    }
    Ok(out)
}

impl pimkit_engine::Engine for Accuracy {
    const NAME: &'static str = "accuracy";
    type Arch = Arch;
    type Options = AccuracyRun;
    type Output = AccuracyResult;

    fn run(
        g: &Graph,
        arch: &Arch,
        run: &AccuracyRun,
        progress: &mut dyn Progress,
    ) -> Result<AccuracyResult, EngineError> {
        // Settings are checked before the (long) reference runs.
        super::base_config(arch, &run.options).map_err(engine_error)?;
        pimkit_interp::check_memory(g).map_err(EngineError::input)?;
        let inputs = run.inputs.resolve(g)?;
        let label = if run.label.is_empty() {
            g.name.clone()
        } else {
            run.label.clone()
        };
        // The study reports from its worker threads; `progress` lives on this one.
        let (tx, rx) = std::sync::mpsc::channel::<(usize, usize)>();
        std::thread::scope(|s| {
            let worker = s.spawn(move || {
                let report = move |done: usize, total: usize| {
                    // A closed receiver only means nobody listens any more.
                    let _ = tx.send((done, total));
                };
                run_accuracy(
                    &label,
                    g,
                    arch,
                    inputs,
                    run.labels.clone(),
                    &run.options,
                    &report,
                )
            });
            for (done, total) in rx {
                progress.step(done, total, "trials");
            }
            match worker.join() {
                Ok(r) => r.map_err(engine_error),
                Err(_) => Err(EngineError::internal(
                    "the accuracy study's worker thread panicked",
                )),
            }
        })
    }

    fn section(out: &AccuracyResult) -> Section {
        super::accuracy_section(out)
    }

    fn headline(out: &AccuracyResult) -> Headline {
        let mut h = Headline::default().with("points", out.points.len().to_string());
        // The worst point is what a reader looks for first.
        if let Some(w) = out.points.iter().map(|p| p.rel_error.mean).reduce(f64::max) {
            h = h.with("worst relative output error", format!("{w:.4}"));
        }
        if let Some(a) = out
            .points
            .iter()
            .filter_map(|p| p.agreement.as_ref().map(|s| s.mean))
            .reduce(f64::min)
        {
            h = h.with("worst top-1 agreement", format!("{:.1} %", 100.0 * a));
        }
        if let Some(a) = out.ideal_accuracy {
            h = h.with("ideal accuracy", format!("{:.1} %", 100.0 * a));
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimkit_engine::Engine;

    #[test]
    fn progress_reaches_the_caller_and_bad_settings_are_the_users() {
        let g = pimkit_zoo::build("mlp", &[]).unwrap();
        let mut run = AccuracyRun {
            options: AccuracyOptions {
                trials: 2,
                set: vec![("variation".into(), 0.05)],
                ..Default::default()
            },
            ..Default::default()
        };
        let mut calls = vec![];
        let out = Accuracy::run(
            &g,
            &Arch::default(),
            &run,
            &mut |d: usize, t: usize, _: &str| calls.push((d, t)),
        )
        .unwrap();
        assert_eq!(out.points.len(), 1);
        assert_eq!(calls.last(), Some(&(2, 2)), "{calls:?}");
        run.options.set = vec![("no_such_parameter".into(), 1.0)];
        let e =
            Accuracy::run(&g, &Arch::default(), &run, &mut pimkit_engine::NoProgress).unwrap_err();
        assert!(e.is_input(), "{e}");
    }
}
