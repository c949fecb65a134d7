//! `pimkit.nas`: the crossbar-aware NAS (crates/nas). `nas_search` is `pimkit xbar nas`
//! (built-in evaluators: proxy, table:, cmd:). `Search` is the same NSGA-II driven from
//! Python by ask/tell: the Rust search runs on its own thread and, once per generation,
//! hands the new candidates that fit the budget to `ask()` and waits for `tell()`'s
//! accuracies (`pimkit_nas::search_with_oracle`), so the same seed and the same
//! accuracies give the same front as the CLI.

use crate::common::json;
use crate::errors::{InputError, bug, detached, to_py, user};
use crate::progress::PyProgress;
use pimkit_engine::EngineError;
use pimkit_nas::{
    AccuracySpec, Candidate, GenStats, HwObjective, NasError, NsgaConfig, SearchConfig,
    SearchResult, Space,
};
use pimkit_xbar::{Arch, Budget};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, Sender, channel};

/// The CLI's `xbar nas` options (defaults as there).
#[derive(Clone)]
pub struct NasOptions {
    pub space: String,
    pub budget: f64,
    pub crossbars: Option<usize>,
    pub pop: usize,
    pub gens: usize,
    pub objective: String,
    pub seed: u64,
    pub mutation_prob: f64,
    pub parent_ratio: f64,
    pub mutation_ratio: f64,
    pub samples: usize,
    pub sdw: usize,
    pub arch: Option<PathBuf>,
    pub base: String,
    pub proxy_batch: usize,
    /// Component library of energy/area objectives.
    pub components: String,
}

fn nas_err(e: NasError) -> EngineError {
    match e {
        NasError::Option { .. }
        | NasError::Evaluator { .. }
        | NasError::Space { .. }
        | NasError::UnknownSpace(..)
        | NasError::Config { .. }
        | NasError::Io { .. }
        | NasError::Ir(_)
        | NasError::Zoo(_) => user(e),
        e => bug(e),
    }
}

impl NasOptions {
    fn config(&self, budget: Budget, accuracy: AccuracySpec) -> Result<SearchConfig, EngineError> {
        let space = Space::load(&self.space).map_err(nas_err)?;
        // One hardware objective, or the CLI's --objectives list ("accuracy,energy").
        let objectives: Vec<HwObjective> = if self.objective.contains(',') {
            pimkit_nas::parse_objectives(&self.objective).map_err(nas_err)?
        } else {
            vec![self.objective.parse().map_err(nas_err)?]
        };
        let components = if objectives.iter().any(|o| o.is_cost()) {
            Some(pimkit_xbar::cost::load_components(&self.components).map_err(user)?)
        } else {
            None
        };
        let arch = match &self.arch {
            Some(p) => Arch::from_file(p).map_err(user)?,
            None => {
                let mut arch = Arch::default();
                arch.packing.restarts = 1;
                arch
            }
        };
        let nsga = NsgaConfig {
            pop: self.pop,
            gens: self.gens,
            mutation_prob: self.mutation_prob,
            parent_ratio: self.parent_ratio,
            mutation_ratio: self.mutation_ratio,
            seed: self.seed,
        };
        nsga.validate().map_err(nas_err)?;
        if !(1..=256).contains(&self.proxy_batch) {
            return Err(user("proxy_batch: use 1..=256"));
        }
        if !(1..=1 << 20).contains(&self.samples) {
            return Err(user("samples: use 1..=1048576"));
        }
        Ok(SearchConfig {
            space,
            arch,
            budget,
            samples: self.samples,
            sdw: self.sdw,
            nsga,
            accuracy,
            objectives,
            components,
            base_model: self.base.clone(),
            proxy_batch: self.proxy_batch,
        })
    }

    fn budgets(&self, many: Option<Vec<f64>>) -> Result<Vec<Budget>, EngineError> {
        if let Some(n) = self.crossbars {
            if !(1..=100000).contains(&n) {
                return Err(user("crossbars: use 1..=100000"));
            }
            return Ok(vec![Budget::Crossbars(n)]);
        }
        let list = many.unwrap_or_else(|| vec![self.budget]);
        if list.is_empty() || list.iter().any(|b| !(*b > 0.0 && *b <= 1000.0)) {
            return Err(user("budget: give multiples in (0, 1000]"));
        }
        Ok(list.into_iter().map(Budget::Relative).collect())
    }
}

/// `pimkit xbar nas`: one search per budget with a built-in evaluator; writes the CLI's
/// files to `out` when given; returns the results as a JSON list.
#[pyfunction]
#[pyo3(signature = (space=String::from("mbv3-small"), budget=None, crossbars=None, pop=50, gens=100,
    accuracy="proxy", objective=String::from("latency"), seed=1, mutation_prob=0.1, parent_ratio=0.25,
    mutation_ratio=0.5, samples=8, sdw=1, arch=None, base=String::from("rnc_mobilenet_v3_small"),
    proxy_batch=4, out=None, progress=None, components=String::from("isaac")))]
pub fn nas_search(
    py: Python<'_>,
    space: String,
    budget: Option<Vec<f64>>,
    crossbars: Option<usize>,
    pop: usize,
    gens: usize,
    accuracy: &str,
    objective: String,
    seed: u64,
    mutation_prob: f64,
    parent_ratio: f64,
    mutation_ratio: f64,
    samples: usize,
    sdw: usize,
    arch: Option<PathBuf>,
    base: String,
    proxy_batch: usize,
    out: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
    components: String,
) -> PyResult<String> {
    let o = NasOptions {
        space,
        budget: 1.0,
        crossbars,
        pop,
        gens,
        objective,
        seed,
        mutation_prob,
        parent_ratio,
        mutation_ratio,
        samples,
        sdw,
        arch,
        base,
        proxy_batch,
        components,
    };
    let accuracy = accuracy.to_string();
    let mut prog = PyProgress::new(progress);
    let r = detached(py, || {
        let acc: AccuracySpec = accuracy.parse().map_err(nas_err)?;
        let mut results = vec![];
        let mut space = None;
        for b in o.budgets(budget)? {
            let cfg = o.config(b, acc.clone())?;
            let r = pimkit_nas::search(&cfg, &mut |s: &GenStats| {
                prog.step(s.generation + 1, o.gens + 1, &format!("front {}", s.front))
            })
            .map_err(nas_err)?;
            results.push(r);
            space = Some(cfg.space);
        }
        if let (Some(dir), Some(space)) = (&out, &space) {
            pimkit_nas::write_outputs(&results, space, dir)
                .map_err(|e| user(format!("writing the results to {}: {e}", dir.display())))?;
        }
        json(&results)
    });
    prog.finish(r)
}

enum Msg {
    Gen(GenStats),
    Ask(Vec<Candidate>),
    Done(Box<Result<SearchResult, NasError>>),
}

/// NSGA-II with accuracies from the caller: `ask()` the candidates, `tell()` their
/// accuracies, until `ask()` returns nothing.
#[pyclass(module = "pimkit.nas", name = "Search")]
pub struct Search {
    from_search: Mutex<Receiver<Msg>>,
    to_search: Sender<Result<Vec<Option<f64>>, String>>,
    pending: Option<Vec<Candidate>>,
    result: Option<SearchResult>,
    history: Vec<GenStats>,
    space: Space,
    progress: Option<Py<PyAny>>,
    gens: usize,
}

#[pymethods]
impl Search {
    #[new]
    #[pyo3(signature = (space=String::from("mbv3-small"), budget=1.0, crossbars=None, pop=50, gens=100,
        objective=String::from("latency"), seed=1, mutation_prob=0.1, parent_ratio=0.25, mutation_ratio=0.5,
        samples=8, sdw=1, arch=None, base=String::from("rnc_mobilenet_v3_small"), progress=None,
        components=String::from("isaac")))]
    fn new(
        space: String,
        budget: f64,
        crossbars: Option<usize>,
        pop: usize,
        gens: usize,
        objective: String,
        seed: u64,
        mutation_prob: f64,
        parent_ratio: f64,
        mutation_ratio: f64,
        samples: usize,
        sdw: usize,
        arch: Option<PathBuf>,
        base: String,
        progress: Option<Py<PyAny>>,
        components: String,
    ) -> PyResult<Self> {
        let o = NasOptions {
            space,
            budget,
            crossbars,
            pop,
            gens,
            objective,
            seed,
            mutation_prob,
            parent_ratio,
            mutation_ratio,
            samples,
            sdw,
            arch,
            base,
            proxy_batch: 4,
            components,
        };
        let b = o.budgets(None).map_err(to_py)?;
        let cfg = o.config(b[0], AccuracySpec::Proxy).map_err(to_py)?;
        let space = cfg.space.clone();
        let (tx, from_search) = channel::<Msg>();
        let (to_search, rx) = channel::<Result<Vec<Option<f64>>, String>>();
        let rx = Mutex::new(rx);
        std::thread::spawn(move || {
            let oracle = |c: &[Candidate]| -> pimkit_nas::Result<Vec<Option<f64>>> {
                let gone = || NasError::Evaluator {
                    spec: "ask/tell".into(),
                    msg: "the Search object was dropped".into(),
                };
                tx.send(Msg::Ask(c.to_vec())).map_err(|_| gone())?;
                let told = rx.lock().expect("lock").recv().map_err(|_| gone())?;
                told.map_err(|msg| NasError::Evaluator {
                    spec: "ask/tell".into(),
                    msg,
                })
            };
            let r = pimkit_nas::search_with_oracle(
                &cfg,
                "ask/tell: accuracies told by the caller",
                &oracle,
                &mut |s| drop(tx.send(Msg::Gen(s.clone()))),
            );
            let _ = tx.send(Msg::Done(Box::new(r)));
        });
        Ok(Search {
            from_search: Mutex::new(from_search),
            to_search,
            pending: None,
            result: None,
            history: vec![],
            space,
            progress,
            gens,
        })
    }

    /// The next candidates to evaluate (JSON list of candidates with their hardware
    /// figures); `"[]"` once the search is finished.
    fn ask_json(&mut self, py: Python<'_>) -> PyResult<String> {
        if let Some(p) = &self.pending {
            return json(p).map_err(to_py);
        }
        if self.result.is_some() {
            return Ok("[]".into());
        }
        loop {
            let rx = &self.from_search;
            let msg = detached(py, || {
                rx.lock()
                    .expect("lock")
                    .recv()
                    .map_err(|_| bug("the search thread ended without a result"))
            })?;
            match msg {
                Msg::Gen(s) => {
                    if let Some(cb) = &self.progress {
                        cb.call1(
                            py,
                            (
                                s.generation + 1,
                                self.gens + 1,
                                format!("front {}", s.front),
                            ),
                        )?;
                    }
                    self.history.push(s);
                }
                Msg::Ask(c) => {
                    let j = json(&c).map_err(to_py)?;
                    self.pending = Some(c);
                    return Ok(j);
                }
                Msg::Done(r) => {
                    self.result = Some((*r).map_err(|e| to_py(nas_err(e)))?);
                    return Ok("[]".into());
                }
            }
        }
    }

    /// Accuracies (None: not measured) for the candidates of the last `ask`, same order.
    fn tell(&mut self, configs: Vec<String>, accuracies: Vec<Option<f64>>) -> PyResult<()> {
        let Some(p) = &self.pending else {
            return Err(InputError::new_err(
                "tell() without a pending ask(): call ask() first",
            ));
        };
        let want: Vec<&str> = p.iter().map(|c| c.config.as_str()).collect();
        if configs.len() != accuracies.len() || configs != want {
            return Err(InputError::new_err(format!(
                "tell(): give the {} candidates of the last ask() in its order with one accuracy each ({} configs and {} accuracies given)",
                want.len(),
                configs.len(),
                accuracies.len()
            )));
        }
        if let Some(a) = accuracies.iter().flatten().find(|a| !a.is_finite()) {
            return Err(InputError::new_err(format!(
                "tell(): accuracy {a} is not a finite number (use None for unmeasured)"
            )));
        }
        self.pending = None;
        self.to_search
            .send(Ok(accuracies))
            .map_err(|_| bug("the search thread has ended"))
            .map_err(to_py)
    }

    /// Whether the search has finished.
    #[getter]
    fn done(&self) -> bool {
        self.result.is_some()
    }

    /// Statistics of the generations so far (JSON list).
    fn history_json(&self) -> PyResult<String> {
        json(&self.history).map_err(to_py)
    }

    /// The search's result, as `pimkit xbar nas` writes it to front.json.
    fn result_json(&self) -> PyResult<String> {
        json(self.finished()?).map_err(to_py)
    }

    /// Write the CLI's front.csv, summary.csv, front.json, front.svg and the optimal
    /// subnets as ONNX; returns the files written.
    fn save(&self, py: Python<'_>, dir: PathBuf) -> PyResult<Vec<PathBuf>> {
        let r = self.finished()?;
        let space = &self.space;
        detached(py, || {
            pimkit_nas::write_outputs(std::slice::from_ref(r), space, &dir)
                .map_err(|e| user(format!("writing the results to {}: {e}", dir.display())))
        })
    }
}

impl Search {
    fn finished(&self) -> PyResult<&SearchResult> {
        self.result.as_ref().ok_or_else(|| {
            InputError::new_err(
                "the search has not finished: ask() and tell() until ask() returns []",
            )
        })
    }
}
