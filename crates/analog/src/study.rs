//! Monte-Carlo accuracy studies: ideal reference runs once, then trials of every sweep
//! point in parallel. Each trial's arrays come from a stream seeded by (seed, trial), so
//! the results do not depend on how rayon schedules the work. Points that differ only in
//! their read-out (ADC bits, range) share one programming per trial; a device with
//! nothing random runs one trial and reports it for all.

use crate::config::Config;
use crate::device::ProgramStats;
use crate::error::{AnalogError, Result};
use crate::metrics::{Stat, rel_error, sqnr_db, top1, wilson};
use crate::network::{
    Calibration, Inputs, Network, Reference, RunSetup, input_quantizers, layer_adcs, program_all,
};
use crate::rng::mix;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// A network with its inputs, labels and ideal runs.
pub struct Study<'g> {
    pub net: Network<'g>,
    pub inputs: Vec<Inputs>,
    /// One class per output row, over all inputs in order.
    pub labels: Option<Vec<usize>>,
    pub references: Vec<Reference>,
    pub calib: Calibration,
}

/// Per-layer SQNR over trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerSqnr {
    pub name: String,
    pub op: String,
    /// dB; +inf (null in JSON) when the layer's output equals the ideal one.
    pub sqnr_db: Stat,
}

/// Stuck cells realised against their rates, with 95 % Wilson intervals.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Faults {
    pub cells: u64,
    pub stuck_off: u64,
    pub stuck_on: u64,
    pub rate_off: f64,
    pub rate_on: f64,
    pub ci95_off: (f64, f64),
    pub ci95_on: (f64, f64),
}

/// One sweep point's result over its trials.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointResult {
    /// The swept parameters of this point (empty for a single run).
    pub params: Vec<(String, f64)>,
    pub trials: usize,
    /// True when nothing in the device is random (every trial is the same).
    pub deterministic: bool,
    /// Fraction of output rows whose top-1 class equals the ideal model's.
    pub agreement: Option<Stat>,
    /// Fraction of output rows whose top-1 class equals the label.
    pub accuracy: Option<Stat>,
    /// ||y - y_ideal|| / ||y_ideal|| of the first output, mean over inputs.
    pub rel_error: Stat,
    pub layers: Vec<LayerSqnr>,
    pub faults: Faults,
    pub remapped_cols: u64,
    pub ir_drop_max: f64,
}

/// One (point, trial).
struct TrialOut {
    agree: Option<f64>,
    correct: Option<f64>,
    rel: f64,
    sqnr: Vec<f64>,
    stats: ProgramStats,
}

impl<'g> Study<'g> {
    /// Run the ideal network on every input (lowering weights and recording ranges).
    pub fn new(net: Network<'g>, inputs: Vec<Inputs>, labels: Option<Vec<usize>>) -> Result<Self> {
        if inputs.is_empty() {
            return Err(AnalogError::Input("no inputs to evaluate".into()));
        }
        let mut calib = Calibration {
            lowered: Vec::new(),
            ranges: Vec::new(),
            profiles: None,
        };
        let references = inputs
            .iter()
            .map(|i| net.reference(i, &mut calib))
            .collect::<Result<Vec<_>>>()?;
        if let Some(l) = &labels {
            let rows: usize = references
                .iter()
                .map(|r| top1(&r.outputs[0]).map_or(0, |v| v.len()))
                .sum();
            if l.len() != rows {
                return Err(AnalogError::Input(format!(
                    "{} labels for {rows} output rows ({} inputs); give one class per row",
                    l.len(),
                    inputs.len()
                )));
            }
        }
        Ok(Study {
            net,
            inputs,
            labels,
            references,
            calib,
        })
    }

    /// Profile the ideal partial sums once when some point calibrates its ADC range.
    pub fn ensure_profile(&mut self, points: &[Config]) -> Result<()> {
        let needs = points.iter().any(|c| {
            c.analog.adc_bits > 0 && c.analog.adc_range == crate::config::AdcRange::Calibrated
        });
        if needs && self.calib.profiles.is_none() {
            let cfg = points[0].clone();
            self.net.profile(&mut self.calib, &cfg, &self.inputs)?;
        }
        Ok(())
    }

    /// Top-1 accuracy of the ideal model against the labels.
    pub fn ideal_accuracy(&self) -> Option<f64> {
        let labels = self.labels.as_ref()?;
        let pred: Vec<usize> = self
            .references
            .iter()
            .flat_map(|r| top1(&r.outputs[0]).unwrap_or_default())
            .collect();
        Some(
            pred.iter().zip(labels).filter(|(a, b)| a == b).count() as f64
                / labels.len().max(1) as f64,
        )
    }

    fn trial(
        &self,
        cfg: &Config,
        programmed: &crate::network::Programmed,
        seed: u64,
    ) -> Result<TrialOut> {
        let inq = input_quantizers(&self.calib, cfg);
        let adcs = layer_adcs(&self.calib, cfg);
        let setup = RunSetup {
            cfg,
            calib: &self.calib,
            programmed,
            adcs: &adcs,
            inq: &inq,
            profiles: None,
        };
        let n_l = self.net.layers.len();
        let (mut sig, mut err) = (vec![0f64; n_l], vec![0f64; n_l]);
        let (mut rows, mut same, mut right, mut rel) = (0usize, 0usize, 0usize, 0f64);
        let mut label_at = 0usize;
        let mut classified = true;
        for (ii, (input, r)) in self.inputs.iter().zip(&self.references).enumerate() {
            let o = self.net.run(&setup, input, seed, ii, Some(r))?;
            for l in 0..n_l {
                sig[l] += o.signal[l];
                err[l] += o.noise[l];
            }
            rel += rel_error(&o.outputs[0], &r.outputs[0]);
            match (top1(&o.outputs[0]), top1(&r.outputs[0])) {
                (Some(a), Some(b)) => {
                    rows += a.len();
                    same += a.iter().zip(&b).filter(|(x, y)| x == y).count();
                    if let Some(l) = &self.labels {
                        right += a.iter().zip(&l[label_at..]).filter(|(x, y)| x == y).count();
                        label_at += a.len();
                    }
                }
                // an output without a top-1 class
                _ => classified = false,
            }
        }
        let frac = |k: usize| (classified && rows > 0).then(|| k as f64 / rows as f64);
        Ok(TrialOut {
            agree: frac(same),
            correct: self.labels.as_ref().and(frac(right)),
            rel: rel / self.inputs.len() as f64,
            sqnr: sig.iter().zip(&err).map(|(&s, &e)| sqnr_db(s, e)).collect(),
            stats: programmed.stats.clone(),
        })
    }

    /// Evaluate every point with `trials` trials from `seed`; `done` is called after each
    /// programmed trial (progress).
    pub fn run(
        &mut self,
        points: &[(Vec<(String, f64)>, Config)],
        trials: usize,
        seed: u64,
        done: &(dyn Fn() + Sync),
    ) -> Result<Vec<PointResult>> {
        let trials = trials.max(1);
        let cfgs: Vec<Config> = points.iter().map(|p| p.1.clone()).collect();
        for c in &cfgs {
            c.validate()?;
            if c.geom != self.net.geom {
                return Err(AnalogError::Input(
                    "every point must keep the network's crossbar geometry".into(),
                ));
            }
        }
        self.ensure_profile(&cfgs)?;
        // Points that program the arrays the same way share each trial's programming.
        let key = |c: &Config| {
            serde_json::to_string(&(&c.device, c.analog.spare_cols, c.analog.redundancy))
                .unwrap_or_default()
        };
        let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
        for (i, c) in cfgs.iter().enumerate() {
            let k = key(c);
            match groups.iter_mut().find(|g| g.0 == k) {
                Some(g) => g.1.push(i),
                None => groups.push((k, vec![i])),
            }
        }
        let jobs: Vec<(usize, usize)> = groups
            .iter()
            .enumerate()
            .flat_map(|(gi, (_, members))| {
                let n = if cfgs[members[0]].device.is_random() {
                    trials
                } else {
                    1
                };
                (0..n).map(move |t| (gi, t))
            })
            .collect();
        let this = &*self;
        let outs: Vec<Result<Vec<(usize, usize, TrialOut)>>> = jobs
            .par_iter()
            .map(|&(gi, t)| {
                let members = &groups[gi].1;
                let tseed = mix(seed, &[t as u64]);
                let programmed = program_all(&this.calib, &cfgs[members[0]], tseed);
                let r = members
                    .iter()
                    .map(|&pi| Ok((pi, t, this.trial(&cfgs[pi], &programmed, tseed)?)))
                    .collect::<Result<Vec<_>>>();
                done();
                r
            })
            .collect();
        let mut per_point: Vec<Vec<TrialOut>> = (0..points.len()).map(|_| Vec::new()).collect();
        for o in outs {
            for (pi, _, t) in o? {
                per_point[pi].push(t);
            }
        }
        Ok(points
            .iter()
            .zip(per_point)
            .map(|((params, cfg), ts)| self.summarize(params.clone(), cfg, ts, trials))
            .collect())
    }

    fn summarize(
        &self,
        params: Vec<(String, f64)>,
        cfg: &Config,
        ts: Vec<TrialOut>,
        trials: usize,
    ) -> PointResult {
        let deterministic = !cfg.device.is_random();
        // A deterministic point ran once; its trials are all that run.
        let reps = if deterministic { trials } else { 1 };
        let expand = |f: &dyn Fn(&TrialOut) -> f64| -> Vec<f64> {
            ts.iter()
                .flat_map(|t| std::iter::repeat_n(f(t), reps))
                .collect()
        };
        let opt = |f: &dyn Fn(&TrialOut) -> Option<f64>| -> Option<Stat> {
            ts.iter().map(f).collect::<Option<Vec<f64>>>().map(|v| {
                Stat::of(
                    &v.iter()
                        .flat_map(|&x| std::iter::repeat_n(x, reps))
                        .collect::<Vec<_>>(),
                )
            })
        };
        let layers = self
            .calib
            .lowered
            .iter()
            .enumerate()
            .map(|(li, l)| LayerSqnr {
                name: l.name.clone(),
                op: l.op.clone(),
                sqnr_db: Stat::of(&expand(&|t| t.sqnr[li])),
            })
            .collect();
        let mut stats = ProgramStats::default();
        for t in &ts {
            stats.cells += t.stats.cells;
            stats.stuck_off += t.stats.stuck_off;
            stats.stuck_on += t.stats.stuck_on;
            stats.remapped_cols += t.stats.remapped_cols;
            stats.ir_drop_max = stats.ir_drop_max.max(t.stats.ir_drop_max);
        }
        let rate = |k: u64| {
            if stats.cells > 0 {
                k as f64 / stats.cells as f64
            } else {
                0.0
            }
        };
        PointResult {
            params,
            trials,
            deterministic,
            agreement: opt(&|t| t.agree),
            accuracy: opt(&|t| t.correct),
            rel_error: Stat::of(&expand(&|t| t.rel)),
            layers,
            faults: Faults {
                cells: stats.cells,
                stuck_off: stats.stuck_off,
                stuck_on: stats.stuck_on,
                rate_off: rate(stats.stuck_off),
                rate_on: rate(stats.stuck_on),
                ci95_off: wilson(stats.stuck_off, stats.cells, 1.96),
                ci95_on: wilson(stats.stuck_on, stats.cells, 1.96),
            },
            remapped_cols: stats.remapped_cols,
            ir_drop_max: stats.ir_drop_max,
        }
    }
}

/// Parse a sweep axis `name=v1,v2,...`.
pub fn parse_axis(s: &str) -> Result<(String, Vec<f64>)> {
    let bad = |m: String| AnalogError::Config {
        field: "sweep",
        msg: m,
    };
    let (name, vals) = s
        .split_once('=')
        .ok_or_else(|| bad(format!("'{s}': write NAME=V1,V2,... (e.g. adc_bits=4,6,8)")))?;
    let probe = Config::ideal(crate::config::Geometry {
        rows: 128,
        weight_bits: 8,
        cell_bits: 2,
        input_bits: 8,
        dac_bits: 1,
        differential: true,
    });
    if probe.get(name).is_none() {
        return Err(bad(format!(
            "unknown parameter '{name}'; one of {}",
            crate::config::PARAMS.join(", ")
        )));
    }
    let v = vals
        .split(',')
        .map(|x| {
            x.trim()
                .parse::<f64>()
                .map_err(|_| bad(format!("'{x}' in '{s}' is not a number")))
        })
        .collect::<Result<Vec<_>>>()?;
    if v.is_empty() {
        return Err(bad(format!("'{s}' has no values")));
    }
    Ok((name.to_string(), v))
}

/// Every combination of the axes' values (the first axis varies slowest), applied to `base`.
pub fn grid(
    base: &Config,
    axes: &[(String, Vec<f64>)],
) -> Result<Vec<(Vec<(String, f64)>, Config)>> {
    let mut points = vec![(Vec::new(), base.clone())];
    for (name, vals) in axes {
        let mut next = Vec::with_capacity(points.len() * vals.len());
        for (params, cfg) in &points {
            for &v in vals {
                let mut c = cfg.clone();
                c.set(name, v)?;
                let mut p: Vec<(String, f64)> = params.clone();
                p.push((name.clone(), v));
                next.push((p, c));
            }
        }
        points = next;
    }
    Ok(points)
}
