//! The search driver: candidates → crossbar mapping (hardware objective, budget
//! constraint) and accuracy evaluator → NSGA-II; results cached by configuration.

use crate::build::build_shape_only;
use crate::error::{NasError, Result};
use crate::eval::{AccuracySpec, Evaluator};
use crate::nsga::{self, Fitness, GenStats, NsgaConfig, Problem};
use crate::space::{Config, Space};
use pimkit_xbar::{Arch, Budget, MapOptions, XbarError};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// The hardware objective paired with accuracy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum HwObjective {
    /// Latency of `samples` streamed samples (the paper's "speed"; default).
    #[default]
    Latency,
    /// Samples per second (equivalent ranking to latency at a fixed sample count).
    Throughput,
    /// Crossbars the packing uses (fewer is better).
    Crossbars,
    /// Crossbar utilisation (box area / area of the crossbars used; higher is better).
    Utilization,
    /// Energy per inference from the cost engine (docs/cost.md; table counts).
    Energy,
    /// Chip area the mapping uses, from the cost engine.
    Area,
}

impl HwObjective {
    /// Whether the objective needs the cost engine.
    pub fn is_cost(self) -> bool {
        matches!(self, HwObjective::Energy | HwObjective::Area)
    }
}

/// Parse `--objectives`: `accuracy` and one or more hardware objectives, e.g.
/// `accuracy,energy` or `accuracy,latency,area` (accuracy is always maximised).
pub fn parse_objectives(s: &str) -> Result<Vec<HwObjective>> {
    let bad = |msg: String| NasError::Option {
        option: "objectives",
        msg,
    };
    let names: Vec<&str> = s.split(',').map(str::trim).collect();
    if !names.contains(&"accuracy") {
        return Err(bad(format!(
            "'{s}' has no 'accuracy': the search always maximises accuracy; write e.g. accuracy,energy"
        )));
    }
    let mut out: Vec<HwObjective> = Vec::new();
    for n in names.iter().filter(|n| **n != "accuracy") {
        let o: HwObjective = n.parse().map_err(|_| {
            bad(format!(
                "unknown objective '{n}'; use accuracy with latency, throughput, crossbars, utilization, energy or area"
            ))
        })?;
        if out.contains(&o) {
            return Err(bad(format!("'{n}' is given twice")));
        }
        out.push(o);
    }
    if out.is_empty() {
        return Err(bad(format!(
            "'{s}' has no hardware objective; write e.g. accuracy,energy"
        )));
    }
    Ok(out)
}

impl std::str::FromStr for HwObjective {
    type Err = NasError;
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "latency" | "speed" => Ok(HwObjective::Latency),
            "throughput" => Ok(HwObjective::Throughput),
            "crossbars" => Ok(HwObjective::Crossbars),
            "utilization" | "utilisation" => Ok(HwObjective::Utilization),
            "energy" => Ok(HwObjective::Energy),
            "area" => Ok(HwObjective::Area),
            _ => Err(NasError::Option {
                option: "objective",
                msg: format!(
                    "unknown hardware objective '{s}'; use latency, throughput, crossbars, utilization, energy or area"
                ),
            }),
        }
    }
}

/// Everything a search needs.
#[derive(Clone, Debug)]
pub struct SearchConfig {
    pub space: Space,
    pub arch: Arch,
    /// `Relative(f)`: f times the base network's ISAAC-like crossbar count; or absolute.
    pub budget: Budget,
    pub samples: usize,
    pub sdw: usize,
    pub nsga: NsgaConfig,
    pub accuracy: AccuracySpec,
    /// The hardware objectives beside accuracy (RNC: latency).
    pub objectives: Vec<HwObjective>,
    /// The component library energy and area objectives are priced with (`None`: isaac).
    pub components: Option<pimkit_cost::Components>,
    /// Zoo entry of the reference network (normalisation and the ISAAC-like point).
    pub base_model: String,
    /// Inputs in the proxy's batch.
    pub proxy_batch: usize,
}

impl SearchConfig {
    /// RNC's settings (reference rnc.md §1.2, §1.8): budget 1x, 8 samples, S_DW 1,
    /// duplication on, NSGA-II 50 x 100, proxy accuracy, base = RNC's MobileNetV3-small.
    /// The arch packs one box order per packing (`restarts = 1`), as RNC does, to keep the
    /// per-candidate work small.
    pub fn rnc_default(space: Space) -> SearchConfig {
        let mut arch = Arch::default();
        arch.packing.restarts = 1;
        SearchConfig {
            space,
            arch,
            budget: Budget::Relative(1.0),
            samples: 8,
            sdw: 1,
            nsga: NsgaConfig::default(),
            accuracy: AccuracySpec::Proxy,
            objectives: vec![HwObjective::Latency],
            components: None,
            base_model: "rnc_mobilenet_v3_small".into(),
            proxy_batch: 4,
        }
    }
}

/// One evaluated candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub config: String,
    /// None when a table does not list the configuration.
    pub accuracy: Option<f64>,
    pub fits: bool,
    pub crossbars_used: usize,
    pub crossbars_budget: usize,
    pub utilization: f64,
    pub utilization_budget: f64,
    pub latency_cycles: u64,
    /// ISAAC-like base latency / this latency (same samples).
    pub speedup: f64,
    pub throughput: f64,
    pub layers: usize,
    pub weights: u64,
    pub macs: u64,
    /// Energy per inference, µJ, and chip area used, mm² (cost engine; candidates that fit,
    /// when an objective needs them).
    #[serde(default)]
    pub energy_uj: Option<f64>,
    #[serde(default)]
    pub area_mm2: Option<f64>,
}

/// The reference network: ISAAC-like mapping and RNC compilation at the same budget.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaseInfo {
    pub model: String,
    pub isaac_crossbars: usize,
    pub isaac_latency_cycles: u64,
    pub isaac_utilization: f64,
    /// Whether the ISAAC-like mapping fits the budget.
    pub isaac_fits: bool,
    /// Compilation alone (no NAS) at the budget.
    pub compiled_fits: bool,
    pub compiled_speedup: Option<f64>,
    pub compiled_utilization: Option<f64>,
    pub accuracy: Option<f64>,
    pub weights: u64,
}

/// Outcome of one search.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    pub space: String,
    pub evaluator: String,
    pub proxy: bool,
    /// The first hardware objective (as before several could be given).
    pub objective: HwObjective,
    pub objectives: Vec<HwObjective>,
    /// The component library of energy/area objectives.
    #[serde(default)]
    pub components: Option<String>,
    pub budget_relative: f64,
    pub budget_crossbars: usize,
    pub samples: usize,
    pub sdw: usize,
    pub nsga: NsgaConfig,
    pub base: BaseInfo,
    /// Non-dominated feasible candidates among all evaluated, by increasing speedup.
    pub front: Vec<Candidate>,
    pub accuracy_optimal: Option<Candidate>,
    pub speed_optimal: Option<Candidate>,
    pub evaluations: usize,
    pub unique_evaluations: usize,
    pub feasible_evaluations: usize,
    pub history: Vec<GenStats>,
}

/// Accuracies for a batch of candidates that fit the budget (their hardware figures
/// filled in, `accuracy` None), in the same order; `None` = not measured. Drives searches
/// whose accuracy comes from outside (the Python package's ask/tell `pimkit.nas.Search`).
pub type AccuracyOracle<'a> = dyn Fn(&[Candidate]) -> Result<Vec<Option<f64>>> + Sync + 'a;

/// Where accuracies come from: a built-in evaluator, one candidate at a time, or an
/// oracle that takes each generation's new feasible candidates at once.
enum Accuracy<'a> {
    Builtin(&'a Evaluator),
    Oracle(&'a AccuracyOracle<'a>),
}

struct Ctx<'a> {
    cfg: &'a SearchConfig,
    eval: Accuracy<'a>,
    budget: usize,
    base_latency: u64,
    /// The library energy and area are priced with, resolved once per search (`None`
    /// when no objective needs it).
    lib: Option<pimkit_cost::Components>,
}

/// The component library of the cost objectives: the configured one, else isaac.
fn cost_library(cfg: &SearchConfig) -> Result<Option<pimkit_cost::Components>> {
    if !cfg.objectives.iter().any(|o| o.is_cost()) {
        return Ok(None);
    }
    Ok(Some(match &cfg.components {
        Some(l) => l.clone(),
        None => pimkit_xbar::cost::load_components("isaac")?,
    }))
}

/// Map a configuration under the budget (no accuracy).
fn hardware(ctx: &Ctx<'_>, c: &Config) -> Result<Candidate> {
    let g = build_shape_only(&ctx.cfg.space, c)?;
    let ex = pimkit_xbar::extract(&g)?;
    let opts = MapOptions {
        budget: Budget::Crossbars(ctx.budget),
        sdw: ctx.cfg.sdw,
        samples: ctx.cfg.samples,
        duplicate: true,
        baseline: false,
        ..MapOptions::from_arch(&ctx.cfg.arch)
    };
    let weights: u64 = ex.layers.iter().map(|l| l.weights()).sum();
    let macs: u64 = ex.layers.iter().map(|l| l.macs()).sum();
    match pimkit_xbar::map_layers(&g.name, &ex.layers, &ex.skipped, &ctx.cfg.arch, &opts) {
        Ok(r) => Ok(Candidate {
            config: c.to_string(),
            accuracy: None,
            fits: r.fits,
            crossbars_used: r.crossbars_used,
            crossbars_budget: r.crossbars_budget,
            utilization: r.utilization,
            utilization_budget: r.utilization_budget,
            latency_cycles: r.latency_cycles,
            speedup: ctx.base_latency as f64 / r.latency_cycles.max(1) as f64,
            throughput: r.throughput,
            layers: ex.layers.len(),
            weights,
            macs,
            energy_uj: None,
            area_mm2: None,
        }),
        // Fewer crossbars than layers: infeasible by construction.
        Err(XbarError::BudgetTooSmall { budget, layers }) => Ok(Candidate {
            config: c.to_string(),
            accuracy: None,
            fits: false,
            crossbars_used: layers.max(budget + 1),
            crossbars_budget: budget,
            utilization: 0.0,
            utilization_budget: 0.0,
            latency_cycles: u64::MAX,
            speedup: 0.0,
            throughput: 0.0,
            layers,
            weights,
            macs,
            energy_uj: None,
            area_mm2: None,
        }),
        Err(e) => Err(e.into()),
    }
}

/// Energy and area of a candidate that fits, from the cost engine on the same mapping
/// settings (budget, S_DW, samples, duplication) and table counts.
fn price(ctx: &Ctx<'_>, c: &Config, cand: &mut Candidate) -> Result<()> {
    use pimkit_engine::Engine;
    let Some(lib) = &ctx.lib else {
        return Ok(());
    };
    let g = build_shape_only(&ctx.cfg.space, c)?;
    let mut opts = pimkit_xbar::cost::CostOptions::new(lib.clone());
    opts.map.budget = Some(Budget::Crossbars(ctx.budget));
    opts.map.sdw = Some(ctx.cfg.sdw);
    opts.map.samples = Some(ctx.cfg.samples);
    let out =
        pimkit_xbar::cost::Cost::run(&g, &ctx.cfg.arch, &opts, &mut pimkit_engine::NoProgress)
            .map_err(|e| NasError::Option {
                option: "objectives",
                msg: format!("pricing '{}': {e}", cand.config),
            })?;
    cand.energy_uj = Some(out.totals.energy_uj);
    cand.area_mm2 = Some(out.totals.area_mm2);
    Ok(())
}

fn evaluate_one(ctx: &Ctx<'_>, c: &Config) -> Result<Candidate> {
    let mut cand = hardware(ctx, c)?;
    if cand.fits {
        price(ctx, c, &mut cand)?;
    }
    // Skip the (costly) accuracy of candidates that do not fit: constrained domination
    // ranks them by their violation alone.
    if let (true, Accuracy::Builtin(e)) = (cand.fits, &ctx.eval) {
        cand.accuracy = e.evaluate(&ctx.cfg.space, c)?;
    }
    Ok(cand)
}

/// Unmeasured candidates (not in the table) count as infeasible with this violation.
const UNMEASURED: f64 = 1e6;

fn fitness(c: &Candidate, objs: &[HwObjective]) -> Fitness {
    let hw = objs.iter().map(|o| match o {
        HwObjective::Latency => c.latency_cycles as f64,
        HwObjective::Throughput => -c.throughput,
        HwObjective::Crossbars => c.crossbars_used as f64,
        HwObjective::Utilization => -c.utilization,
        HwObjective::Energy => c.energy_uj.unwrap_or(f64::MAX),
        HwObjective::Area => c.area_mm2.unwrap_or(f64::MAX),
    });
    let violation = if !c.fits {
        (c.crossbars_used.saturating_sub(c.crossbars_budget)).max(1) as f64
    } else if c.accuracy.is_none() {
        UNMEASURED
    } else {
        0.0
    };
    Fitness {
        objectives: std::iter::once(-c.accuracy.unwrap_or(f64::NEG_INFINITY).max(-f64::MAX))
            .chain(hw)
            .collect(),
        violation,
    }
}

struct NasProblem<'a> {
    ctx: Ctx<'a>,
    cache: Mutex<HashMap<Vec<u8>, Candidate>>,
}

impl Problem for NasProblem<'_> {
    fn cardinalities(&self) -> Vec<usize> {
        self.ctx.cfg.space.cardinalities()
    }

    fn canonicalize(&self, genome: &mut [u8]) {
        self.ctx.cfg.space.canonicalize(genome);
    }

    fn evaluate(&self, genomes: &[Vec<u8>]) -> Result<Vec<Fitness>> {
        let mut todo: Vec<Vec<u8>> = {
            let cache = self.cache.lock().expect("lock");
            genomes
                .iter()
                .filter(|g| !cache.contains_key(*g))
                .cloned()
                .collect()
        };
        todo.sort();
        todo.dedup();
        let space = &self.ctx.cfg.space;
        let run = |g: &Vec<u8>| -> Result<(Vec<u8>, Candidate)> {
            let c = space.decode(g)?;
            Ok((g.clone(), evaluate_one(&self.ctx, &c)?))
        };
        let parallel = match &self.ctx.eval {
            Accuracy::Builtin(e) => e.parallel(),
            Accuracy::Oracle(_) => true,
        };
        // A generation's new candidates on `--jobs` threads (pimkit_engine::jobs), results
        // in genome order: the search does not depend on the number of threads.
        let done: Vec<Result<(Vec<u8>, Candidate)>> = if parallel {
            pimkit_engine::jobs::par_map(&todo, run)
        } else {
            todo.iter().map(run).collect()
        };
        let mut done = done.into_iter().collect::<Result<Vec<_>>>()?;
        if let Accuracy::Oracle(oracle) = &self.ctx.eval {
            let ask: Vec<usize> = (0..done.len()).filter(|&i| done[i].1.fits).collect();
            if !ask.is_empty() {
                let batch: Vec<Candidate> = ask.iter().map(|&i| done[i].1.clone()).collect();
                let acc = oracle(&batch)?;
                if acc.len() != ask.len() {
                    return Err(NasError::Option {
                        option: "accuracy",
                        msg: format!("{} accuracies told for {} candidates", acc.len(), ask.len()),
                    });
                }
                for (&i, a) in ask.iter().zip(acc) {
                    done[i].1.accuracy = a;
                }
            }
        }
        let mut cache = self.cache.lock().expect("lock");
        for (g, c) in done {
            cache.insert(g, c);
        }
        Ok(genomes
            .iter()
            .map(|g| fitness(&cache[g], &self.ctx.cfg.objectives))
            .collect())
    }
}

/// Base network figures at the budget.
fn base_info(cfg: &SearchConfig, eval: Option<&Evaluator>) -> Result<(BaseInfo, usize)> {
    let none = [("weights".to_string(), "none".to_string())];
    let g = pimkit_zoo::build(&cfg.base_model, &none)?;
    let ex = pimkit_xbar::extract(&g)?;
    let mode = cfg.arch.defaults.mode;
    let isaac = pimkit_xbar::isaac_crossbars(&ex.layers, &cfg.arch, mode);
    let budget = match cfg.budget {
        Budget::Crossbars(n) => n,
        Budget::Relative(f) => {
            if !(f.is_finite() && f > 0.0) {
                return Err(NasError::Option {
                    option: "budget",
                    msg: format!("{f} is not a positive multiple of the base network's crossbars"),
                });
            }
            ((f * isaac as f64).round() as usize).max(1)
        }
    };
    if budget == 0 {
        return Err(NasError::Option {
            option: "crossbars",
            msg: "must be at least 1".into(),
        });
    }
    let b = pimkit_xbar::baseline(&ex.layers, &cfg.arch, mode, cfg.samples, budget);
    let opts = MapOptions {
        budget: Budget::Crossbars(budget),
        sdw: cfg.sdw,
        samples: cfg.samples,
        duplicate: true,
        baseline: false,
        ..MapOptions::from_arch(&cfg.arch)
    };
    let compiled = match pimkit_xbar::map_layers(&g.name, &ex.layers, &ex.skipped, &cfg.arch, &opts)
    {
        Ok(r) => Some(r),
        Err(XbarError::BudgetTooSmall { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    let compiled_ok = compiled.as_ref().filter(|r| r.fits);
    let accuracy = match eval {
        Some(ev) => {
            let proxy_build = |res: usize, batch: usize| -> Result<pimkit_ir::Graph> {
                let p: Vec<(String, String)> = [
                    ("weights", "random"),
                    ("res", &res.to_string()),
                    ("batch", &batch.to_string()),
                ]
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
                Ok(pimkit_zoo::build(&cfg.base_model, &p)?)
            };
            let full = if ev.is_proxy() {
                g.clone()
            } else {
                pimkit_zoo::build(&cfg.base_model, &[("weights".into(), "random".into())])?
            };
            ev.evaluate_base(&full, &proxy_build)?
        }
        None => None,
    };
    Ok((
        BaseInfo {
            model: cfg.base_model.clone(),
            isaac_crossbars: isaac,
            isaac_latency_cycles: b.latency_cycles,
            isaac_utilization: b.utilization,
            isaac_fits: b.fits_budget,
            compiled_fits: compiled_ok.is_some(),
            compiled_speedup: compiled_ok
                .map(|r| b.latency_cycles as f64 / r.latency_cycles.max(1) as f64),
            compiled_utilization: compiled_ok.map(|r| r.utilization),
            accuracy,
            weights: ex.layers.iter().map(|l| l.weights()).sum(),
        },
        budget,
    ))
}

/// Non-dominated feasible candidates (accuracy up, hardware objectives down).
pub fn pareto_front(cands: &[Candidate], objs: &[HwObjective]) -> Vec<Candidate> {
    let ok: Vec<&Candidate> = cands
        .iter()
        .filter(|c| c.fits && c.accuracy.is_some())
        .collect();
    let fit: Vec<Fitness> = ok.iter().map(|c| fitness(c, objs)).collect();
    let mut front: Vec<Candidate> = match nsga::non_dominated_sort(&fit).first() {
        Some(f) => f.iter().map(|&i| ok[i].clone()).collect(),
        None => Vec::new(),
    };
    front.sort_by(|a, b| {
        a.speedup
            .total_cmp(&b.speedup)
            .then(a.config.cmp(&b.config))
    });
    front
}

/// Run the search. `progress` sees every generation's statistics.
pub fn search(cfg: &SearchConfig, progress: &mut dyn FnMut(&GenStats)) -> Result<SearchResult> {
    check_sizes(cfg)?;
    let eval = Evaluator::new(&cfg.accuracy, &cfg.space, cfg.nsga.seed, cfg.proxy_batch)?;
    let (label, proxy) = (eval.label(), eval.is_proxy());
    run_search(cfg, Accuracy::Builtin(&eval), label, proxy, progress)
}

/// Run the search with accuracies from `oracle` (`cfg.accuracy` is not used; `label`
/// names the source in the results). With the same accuracies for the same candidates
/// the search is the same as [`search`]'s: same seed, same generations, same front.
pub fn search_with_oracle(
    cfg: &SearchConfig,
    label: &str,
    oracle: &AccuracyOracle<'_>,
    progress: &mut dyn FnMut(&GenStats),
) -> Result<SearchResult> {
    check_sizes(cfg)?;
    run_search(
        cfg,
        Accuracy::Oracle(oracle),
        label.to_string(),
        false,
        progress,
    )
}

fn check_sizes(cfg: &SearchConfig) -> Result<()> {
    if cfg.samples == 0 || cfg.sdw == 0 {
        return Err(NasError::Option {
            option: "samples",
            msg: "samples and S_DW must be at least 1".into(),
        });
    }
    if cfg.objectives.is_empty() {
        return Err(NasError::Option {
            option: "objectives",
            msg: "give at least one hardware objective (e.g. accuracy,latency)".into(),
        });
    }
    Ok(())
}

fn run_search(
    cfg: &SearchConfig,
    eval: Accuracy<'_>,
    label: String,
    proxy: bool,
    progress: &mut dyn FnMut(&GenStats),
) -> Result<SearchResult> {
    let builtin = match &eval {
        Accuracy::Builtin(e) => Some(*e),
        Accuracy::Oracle(_) => None,
    };
    let (base, budget) = base_info(cfg, builtin)?;
    let lib = cost_library(cfg)?;
    let components = lib.as_ref().map(|l| l.name.clone());
    let prob = NasProblem {
        ctx: Ctx {
            cfg,
            eval,
            budget,
            base_latency: base.isaac_latency_cycles,
            lib,
        },
        cache: Mutex::new(HashMap::new()),
    };
    let res = nsga::run(&prob, &cfg.nsga, progress)?;
    let cache = prob.cache.into_inner().expect("lock");
    // Deterministic order (by genome) for the front computation.
    let all: BTreeMap<Vec<u8>, Candidate> = cache.into_iter().collect();
    let cands: Vec<Candidate> = all.into_values().collect();
    let front = pareto_front(&cands, &cfg.objectives);
    let acc_opt = front
        .iter()
        .max_by(|a, b| {
            a.accuracy
                .unwrap_or(f64::MIN)
                .total_cmp(&b.accuracy.unwrap_or(f64::MIN))
                .then(a.speedup.total_cmp(&b.speedup))
        })
        .cloned();
    let speed_opt = front
        .iter()
        .max_by(|a, b| {
            a.speedup.total_cmp(&b.speedup).then(
                a.accuracy
                    .unwrap_or(f64::MIN)
                    .total_cmp(&b.accuracy.unwrap_or(f64::MIN)),
            )
        })
        .cloned();
    let isaac = base.isaac_crossbars.max(1) as f64;
    Ok(SearchResult {
        space: cfg.space.name.clone(),
        evaluator: label,
        proxy,
        objective: cfg.objectives[0],
        objectives: cfg.objectives.clone(),
        components,
        budget_relative: budget as f64 / isaac,
        budget_crossbars: budget,
        samples: cfg.samples,
        sdw: cfg.sdw,
        nsga: cfg.nsga.clone(),
        base,
        front,
        accuracy_optimal: acc_opt,
        speed_optimal: speed_opt,
        evaluations: res.evaluations,
        unique_evaluations: cands.len(),
        feasible_evaluations: cands
            .iter()
            .filter(|c| c.fits && c.accuracy.is_some())
            .count(),
        history: res.history,
    })
}

/// Evaluate one configuration (hardware and accuracy) outside a search, e.g. to inspect a
/// front member.
pub fn evaluate_config(cfg: &SearchConfig, c: &Config) -> Result<Candidate> {
    let eval = Evaluator::new(&cfg.accuracy, &cfg.space, cfg.nsga.seed, cfg.proxy_batch)?;
    let (base, budget) = base_info(cfg, None)?;
    let ctx = Ctx {
        cfg,
        eval: Accuracy::Builtin(&eval),
        budget,
        base_latency: base.isaac_latency_cycles,
        lib: cost_library(cfg)?,
    };
    evaluate_one(&ctx, c)
}
