//! A whole graph with its weighted layers on crossbars and everything else in the
//! reference interpreter ([`pimkit_interp::run_substituted`]).
//!
//! [`Network::reference`] runs the ideal network on one input: it keeps the outputs, each
//! layer's output (for per-layer SQNR), lowers each layer's weights the first time it runs
//! and records the range of each float layer's inputs (its DAC quantizer). A profile pass
//! records the ideal partial sums (a calibrated ADC range). A trial programs every layer's
//! arrays from its seed and runs the inputs through them.

use crate::adc::{Adc, Profile, full_scale};
use crate::config::{Config, Geometry};
use crate::device::{Arrays, ProgramStats, program};
use crate::encode::FloatInputQuant;
use crate::error::{AnalogError, Result};
use crate::layer::{self, LayerMap, LayerRun, Lowered};
use crate::rng::mix;
use pimkit_ir::{Graph, NodeId, Op, Tensor, TensorType};
use rayon::prelude::*;
use std::collections::HashMap;
use std::sync::Mutex;

/// The inputs of one inference, keyed by graph input name.
pub type Inputs = HashMap<String, Tensor>;

/// A graph and the mapping of its weighted layers.
pub struct Network<'g> {
    pub g: &'g Graph,
    pub layers: Vec<LayerMap>,
    /// The arrays' geometry (the weights are lowered to its bits).
    pub geom: Geometry,
    index: Vec<Option<usize>>,
}

/// The ideal run of one input.
#[derive(Clone, Debug)]
pub struct Reference {
    pub outputs: Vec<Tensor>,
    /// First output of every mapped layer, in plan order.
    pub layers: Vec<Tensor>,
}

/// What the ideal runs established, shared by every trial and sweep point.
#[derive(Clone, Debug)]
pub struct Calibration {
    pub lowered: Vec<Lowered>,
    /// Per layer and activation operand: (min, max) over all inputs.
    pub ranges: Vec<Vec<(f64, f64)>>,
    /// Per layer: |ideal partial sums| (present after [`Network::profile`]).
    pub profiles: Option<Vec<Profile>>,
}

/// One input's run through a trial's arrays.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub outputs: Vec<Tensor>,
    /// Per layer: sum of squared reference values and of squared errors.
    pub signal: Vec<f64>,
    pub noise: Vec<f64>,
}

fn range_of(t: &Tensor, r: &mut (f64, f64)) {
    for v in t.to_f64_vec() {
        if v.is_finite() {
            r.0 = r.0.min(v);
            r.1 = r.1.max(v);
        }
    }
}

impl<'g> Network<'g> {
    /// Check that every mapped node exists and is a layer the model covers.
    pub fn new(g: &'g Graph, layers: Vec<LayerMap>, geom: Geometry) -> Result<Self> {
        let mut index = vec![None; g.nodes.len()];
        for (i, l) in layers.iter().enumerate() {
            let node = g.nodes.get(l.node.idx()).ok_or_else(|| {
                AnalogError::Input(format!(
                    "the mapping names node #{} of a graph with {} nodes",
                    l.node.idx(),
                    g.nodes.len()
                ))
            })?;
            if !layer::supported(&node.op) {
                return Err(AnalogError::Layer {
                    node: node.name.clone(),
                    op: node.op.name().into(),
                    msg: "not a weighted layer the analog model covers".into(),
                });
            }
            index[l.node.idx()] = Some(i);
        }
        Ok(Network {
            g,
            layers,
            geom,
            index,
        })
    }

    /// Plan index of a node, when it is a mapped layer.
    pub fn layer_of(&self, n: NodeId) -> Option<usize> {
        self.index.get(n.idx()).copied().flatten()
    }

    /// Ideal run of one input. `calib` collects the lowered weights (first input only)
    /// and the float layers' input ranges.
    pub fn reference(&self, input: &Inputs, calib: &mut Calibration) -> Result<Reference> {
        let n_l = self.layers.len();
        let geom_missing = calib.lowered.len() != n_l;
        let mut lowered: Vec<Option<Lowered>> = vec![None; n_l];
        let mut first_err: Option<AnalogError> = None;
        let ranges = &mut calib.ranges;
        if ranges.len() != n_l {
            *ranges = vec![Vec::new(); n_l];
        }
        let mut layer_out: Vec<Option<Tensor>> = vec![None; n_l];
        let mut out_range: Vec<(f64, f64)> = vec![(f64::INFINITY, f64::NEG_INFINITY); n_l];
        let geom = self.geom.clone();
        let outputs = run_substituted_exact(
            self.g,
            input,
            &mut |nid, ins| {
                let li = self.layer_of(nid)?;
                let node = self.g.node(nid);
                let map = &self.layers[li];
                if geom_missing && lowered[li].is_none() {
                    match layer::lower(node, ins, map, &geom) {
                        Ok(l) => lowered[li] = Some(l),
                        Err(e) => {
                            let msg = e.to_string();
                            first_err.get_or_insert(e);
                            return Some(Err(msg));
                        }
                    }
                }
                let ops = layer::activation_operands(node, ins, map.weight_left);
                if ranges[li].len() != ops.len() {
                    ranges[li] = vec![(f64::INFINITY, f64::NEG_INFINITY); ops.len()];
                }
                for (r, t) in ranges[li].iter_mut().zip(ops) {
                    if let Some(t) = t {
                        range_of(t, r);
                    }
                }
                None
            },
            &mut |nid, outs| {
                if let Some(li) = self.layer_of(nid)
                    && let Some(o) = outs.first()
                {
                    if matches!(self.g.node(nid).op, Op::Lstm(_) | Op::Gru(_)) {
                        range_of(o, &mut out_range[li]);
                    }
                    layer_out[li] = Some(o.clone());
                }
            },
        );
        if let Some(e) = first_err {
            return Err(e);
        }
        let outputs = outputs?;
        // An RNN's hidden states (its recurrent matrix's inputs) range over its outputs too.
        for (li, r) in out_range.iter().enumerate() {
            if r.0 <= r.1 && ranges[li].len() > 1 {
                let h = &mut ranges[li][1];
                h.0 = h.0.min(r.0);
                h.1 = h.1.max(r.1);
            }
        }
        if geom_missing {
            calib.lowered = lowered
                .into_iter()
                .enumerate()
                .map(|(i, l)| {
                    l.ok_or_else(|| {
                        AnalogError::Input(format!(
                            "layer '{}' never ran in the reference run",
                            self.g.nodes[self.layers[i].node.idx()].name
                        ))
                    })
                })
                .collect::<Result<_>>()?;
        }
        let layers = layer_out
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                t.ok_or_else(|| AnalogError::Input(format!("layer #{i} produced no output")))
            })
            .collect::<Result<_>>()?;
        Ok(Reference { outputs, layers })
    }
}

/// Input quantizers of every float layer from the calibrated ranges.
pub fn input_quantizers(calib: &Calibration, cfg: &Config) -> Vec<Vec<FloatInputQuant>> {
    calib
        .ranges
        .iter()
        .map(|ops| {
            ops.iter()
                .map(|&(lo, hi)| {
                    let (lo, hi) = if lo <= hi { (lo, hi) } else { (0.0, 0.0) };
                    FloatInputQuant::new(lo, hi, &cfg.geom)
                })
                .collect()
        })
        .collect()
}

/// Each layer's ADC under `cfg`.
pub fn layer_adcs(calib: &Calibration, cfg: &Config) -> Vec<Option<Adc>> {
    (0..calib.lowered.len())
        .map(|i| {
            let cal = calib
                .profiles
                .as_ref()
                .map(|p| p[i].percentile(cfg.analog.adc_percentile));
            let signed = calib.ranges[i].iter().any(|r| r.0 < 0.0)
                && calib.lowered[i].arith == crate::layer::Arith::Float;
            let level = calib.lowered[i]
                .mats
                .iter()
                .map(|m| m.max_level(&cfg.geom))
                .max()
                .unwrap_or(0);
            Adc::for_layer(cfg, cal, signed, level)
        })
        .collect()
}

/// A trial's arrays: per layer, per matrix.
pub struct Programmed {
    pub arrays: Vec<Vec<Arrays>>,
    pub stats: ProgramStats,
}

/// Program every layer for the trial whose stream is `trial_seed`.
pub fn program_all(calib: &Calibration, cfg: &Config, trial_seed: u64) -> Programmed {
    let arrays: Vec<Vec<Arrays>> = calib
        .lowered
        .par_iter()
        .enumerate()
        .map(|(li, lw)| {
            lw.mats
                .iter()
                .zip(&lw.maps)
                .enumerate()
                .map(|(mi, (w, m))| program(w, m, cfg, mix(trial_seed, &[li as u64, mi as u64])))
                .collect()
        })
        .collect();
    let mut stats = ProgramStats::default();
    for a in arrays.iter().flatten() {
        stats.add(&a.stats);
    }
    Programmed { arrays, stats }
}

/// How a run treats the layers.
pub struct RunSetup<'a> {
    pub cfg: &'a Config,
    pub calib: &'a Calibration,
    pub programmed: &'a Programmed,
    pub adcs: &'a [Option<Adc>],
    pub inq: &'a [Vec<FloatInputQuant>],
    /// Record ideal partial sums per layer (profile pass; outputs stay the reference's).
    pub profiles: Option<&'a [Mutex<Profile>]>,
}

impl Network<'_> {
    /// Run one input through the trial's arrays (`seed` = the trial's stream, `item` = the
    /// input's index); compare each layer's output with `reference` when given.
    pub fn run(
        &self,
        setup: &RunSetup,
        input: &Inputs,
        seed: u64,
        item: usize,
        reference: Option<&Reference>,
    ) -> Result<Outcome> {
        let n_l = self.layers.len();
        let mut signal = vec![0f64; n_l];
        let mut noise = vec![0f64; n_l];
        let mut first_err: Option<AnalogError> = None;
        let outputs = run_substituted_exact(
            self.g,
            input,
            &mut |nid, ins| {
                let li = self.layer_of(nid)?;
                let node = self.g.node(nid);
                let out_tys: Vec<&TensorType> =
                    node.outputs.iter().map(|&o| self.g.ty(o)).collect();
                let run = LayerRun {
                    cfg: setup.cfg,
                    lowered: &setup.calib.lowered[li],
                    arrays: &setup.programmed.arrays[li],
                    inq: &setup.inq[li],
                    adc: if setup.profiles.is_some() {
                        None
                    } else {
                        setup.adcs[li]
                    },
                    noise_seed: mix(seed, &[1 << 32 | li as u64, item as u64]),
                    profile: setup.profiles.map(|p| &p[li]),
                };
                match layer::eval(&run, node, ins, &out_tys) {
                    Ok(o) if setup.profiles.is_some() => {
                        drop(o);
                        None
                    }
                    Ok(o) => Some(Ok(o)),
                    Err(e) => {
                        let msg = e.to_string();
                        first_err.get_or_insert(e);
                        Some(Err(msg))
                    }
                }
            },
            &mut |nid, outs| {
                if let (Some(li), Some(r)) = (self.layer_of(nid), reference)
                    && let Some(o) = outs.first()
                {
                    let zp = setup.calib.lowered[li].out_zp;
                    let (s, e) = crate::metrics::signal_error(&r.layers[li], o, zp);
                    signal[li] += s;
                    noise[li] += e;
                }
            },
        );
        if let Some(e) = first_err {
            return Err(e);
        }
        Ok(Outcome {
            outputs: outputs?,
            signal,
            noise,
        })
    }

    /// Profile pass: record |ideal partial sums| of every layer over `inputs` into
    /// `calib.profiles`.
    pub fn profile(&self, calib: &mut Calibration, cfg: &Config, inputs: &[Inputs]) -> Result<()> {
        let ideal = Config::ideal(cfg.geom.clone());
        let programmed = program_all(calib, &ideal, 0);
        let fs = full_scale(cfg);
        let profiles: Vec<Mutex<Profile>> = (0..calib.lowered.len())
            .map(|_| Mutex::new(Profile::new(fs)))
            .collect();
        let inq = input_quantizers(calib, cfg);
        let adcs = vec![None; calib.lowered.len()];
        let setup = RunSetup {
            cfg: &ideal,
            calib,
            programmed: &programmed,
            adcs: &adcs,
            inq: &inq,
            profiles: Some(&profiles),
        };
        for (i, input) in inputs.iter().enumerate() {
            self.run(&setup, input, 0, i, None)?;
        }
        calib.profiles = Some(
            profiles
                .into_iter()
                .map(|m| m.into_inner().unwrap_or_else(|e| e.into_inner()))
                .collect(),
        );
        Ok(())
    }
}

/// The interpreter with the crossbar layers substituted. Integer sums are exact: the
/// crossbars compute exact integer products, not onnxruntime's AVX2 saturating pairs
/// (docs/interpreter.md, the `avx2` variant).
fn run_substituted_exact(
    g: &pimkit_ir::Graph,
    inputs: &std::collections::HashMap<String, Tensor>,
    substitute: &mut pimkit_interp::Substitute<'_>,
    observe: &mut dyn FnMut(pimkit_ir::NodeId, &[Tensor]),
) -> std::result::Result<Vec<Tensor>, pimkit_interp::InterpError> {
    pimkit_interp::with_exact_products(|| {
        pimkit_interp::run_substituted(g, inputs, substitute, observe)
    })
}
