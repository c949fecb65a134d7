//! One-call compile + simulate + compare, and the serializable result.

use crate::arch::Arch;
use crate::compile::{CompileOptions, compile};
use crate::fixed::NumMode;
use crate::program::Program;
use crate::sim::{SimOptions, SimStats, simulate};
use pimkit_ir::{Graph, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The JSON result of `pimkit puma sim/run`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PumaResult {
    pub model: String,
    pub mode: NumMode,
    /// Constant set of the architecture ("head" or "paper").
    pub constants: String,
    #[serde(flatten)]
    pub stats: SimStats,
    /// Largest |PUMA − reference interpreter| over all outputs (None when the graph has
    /// no weights or no reference was run).
    pub max_abs_error: Option<f64>,
    /// `max_abs_error` divided by the range of the reference outputs and 0
    /// (`outcome::output_range`).
    pub relative_error: Option<f64>,
    /// Values whose magnitude no 16-bit word holds (their results saturate in any
    /// format: the error is genuine).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_of_range: Vec<crate::program::OutOfRange>,
    /// Whether every output row's arg-max (last axis) equals the reference's.
    pub top1_agree: Option<bool>,
    /// The relative error above which a warning is given (docs/puma.md).
    pub tolerance: f64,
    /// True when the relative error exceeds the tolerance or a result saturated.
    pub accuracy_warning: bool,
    /// Human-readable warnings (printed on stderr as `warning:` lines).
    pub warnings: Vec<String>,
    /// Notes (printed on stderr as `note:` lines): nodes run on the host, a quantized
    /// model run as its float equivalent.
    #[serde(default)]
    pub notes: Vec<String>,
    /// For a quantized model (run as its float equivalent, `dequant`): the largest
    /// |difference| between PUMA's outputs and the quantized model's own (reference
    /// interpreter); `max_abs_error` is against the float equivalent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantized_model_max_abs_diff: Option<f64>,
    /// The weight-replication plan (`--replicate`), with its MVMU budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<crate::plan::Plan>,
    /// Nodes of the system the program uses (chip-to-chip network).
    #[serde(default)]
    pub nodes: usize,
    pub static_instructions: usize,
    pub shape_only: bool,
    pub wall_s: f64,
    /// Area, power and TOPS/W from the `puma` component library (pimkit-cost).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<crate::hardware::Hardware>,
}

pub use crate::fixed::DEFAULT_TOLERANCE;
pub(crate) use crate::outcome::output_range;
pub use crate::outcome::{RunError, compare};

/// Whether the arg-max over the last axis agrees in every row of every output.
pub fn top1_agree(a: &[Tensor], r: &[Tensor]) -> Option<bool> {
    let mut any = false;
    for (x, y) in a.iter().zip(r) {
        let k = *y.shape.last()?;
        if k < 2 {
            continue;
        }
        any = true;
        let (x, y) = (x.to_f32_vec(), y.to_f32_vec());
        let am = |v: &[f32]| {
            v.iter()
                .enumerate()
                .fold(
                    (0, f32::NEG_INFINITY),
                    |b, (i, &x)| if x > b.1 { (i, x) } else { b },
                )
                .0
        };
        for (rx, ry) in x.chunks(k).zip(y.chunks(k)) {
            if am(rx) != am(ry) {
                return Some(false);
            }
        }
    }
    any.then_some(true)
}

impl PumaResult {
    /// Compare with the reference outputs (if any) and set the accuracy fields and
    /// warnings (`tolerance`: relative to the reference outputs' range).
    pub fn assess(&mut self, outs: &[Tensor], reference: Option<&[Tensor]>, tolerance: f64) {
        self.tolerance = tolerance;
        self.warnings.clear();
        if let Some(r) = reference {
            let e = compare(outs, r);
            self.max_abs_error = Some(e);
            let rel = e / output_range(r);
            self.relative_error = Some(rel);
            self.top1_agree = top1_agree(outs, r);
            // NaN is above any tolerance.
            if rel.is_nan() || rel > tolerance {
                self.warnings.push(format!(
                    "{}: output error {e:.4} is {:.2} % of the outputs' range (with 0), above the {:.2} % tolerance (docs/puma.md \"Fixed point per tensor\"; try calibration inputs or --fixed)",
                    self.model,
                    100.0 * rel,
                    100.0 * tolerance
                ));
            }
            if self.top1_agree == Some(false) {
                self.warnings.push(format!(
                    "{}: the top-1 class differs from the reference interpreter's",
                    self.model
                ));
            }
        }
        if let Some(w) = crate::outcome::out_of_range_warning(&self.model, &self.out_of_range) {
            self.warnings.push(w);
        }
        if self.stats.saturations > 0 {
            self.warnings.push(format!(
                "{}: {} result(s) did not fit their 16-bit word and {} (values beyond the format's range)",
                self.model,
                self.stats.saturations,
                if self.mode == NumMode::BitSerial { "wrapped" } else { "saturated" }
            ));
        }
        self.accuracy_warning = !self.warnings.is_empty();
    }
}

/// Simulate a compiled program; `reference` outputs (if any) give `max_abs_error`.
pub fn run_program(
    p: &Program,
    inputs: &HashMap<String, Tensor>,
    opts: &SimOptions,
    reference: Option<&[Tensor]>,
) -> Result<(PumaResult, Vec<Tensor>), RunError> {
    let t0 = std::time::Instant::now();
    let out = simulate(p, inputs, opts)?;
    let wall_s = t0.elapsed().as_secs_f64();
    let mut res = PumaResult {
        model: p.name.clone(),
        mode: opts.mode,
        constants: format!("{:?}", p.arch.constants).to_lowercase(),
        stats: out.stats,
        max_abs_error: None,
        relative_error: None,
        out_of_range: p.placement.out_of_range.clone(),
        top1_agree: None,
        tolerance: DEFAULT_TOLERANCE,
        accuracy_warning: false,
        warnings: Vec::new(),
        notes: Vec::new(),
        quantized_model_max_abs_diff: None,
        replication: p.placement.replication.clone(),
        nodes: p.placement.nodes_used,
        static_instructions: p.num_core_instructions(),
        shape_only: p.shape_only,
        wall_s,
        hardware: None,
    };
    res.hardware = crate::hardware::hardware(
        res.stats.tiles,
        res.nodes,
        res.stats.mvm_ops,
        p.arch.mvmu.xbar_size,
        res.stats.energy_nj,
        res.stats.latency_ns,
    );
    res.assess(&out.outputs, reference, opts.tolerance);
    Ok((res, out.outputs))
}

/// Compile `g`, simulate it on `inputs` (deterministic random inputs when `None`) and
/// compare with the reference interpreter (skipped for shape-only graphs). Nodes with
/// integer inputs or outputs (embedding lookups) run on the host first, with a note. A
/// quantized model runs as its float equivalent ([`crate::dequant`]), with a note.
pub fn run_graph(
    g: &Graph,
    arch: &Arch,
    copts: &CompileOptions,
    sopts: &SimOptions,
    inputs: Option<HashMap<String, Tensor>>,
) -> Result<(PumaResult, Vec<Tensor>, Program), RunError> {
    let inputs = match inputs {
        Some(i) => i,
        None => {
            pimkit_interp::check_memory(g).map_err(|e| RunError::Reference(e.to_string()))?;
            pimkit_interp::random_inputs(g, 0)
        }
    };
    let graph_error = |msg| {
        RunError::Compile(crate::compile::CompileError::Graph {
            graph: g.name.clone(),
            msg,
        })
    };
    let fg = if crate::dequant::has_quantized(g) {
        crate::dequant::float_equivalent(g).map_err(graph_error)?
    } else {
        None
    };
    if let Some(f) = fg.filter(|f| f.quantized()) {
        let (mut res, outs, p) = run_split(&f.graph, arch, copts, sopts, inputs.clone())?;
        let diff =
            crate::dequant::quantized_difference(g, &inputs, &outs).map_err(RunError::Reference)?;
        res.model = g.name.clone();
        res.notes.insert(0, f.note(diff));
        res.quantized_model_max_abs_diff = diff;
        return Ok((res, outs, p));
    }
    run_split(g, arch, copts, sopts, inputs)
}

/// [`run_graph`] of a graph without quantized nodes: the host part first, if any.
fn run_split(
    g: &Graph,
    arch: &Arch,
    copts: &CompileOptions,
    sopts: &SimOptions,
    inputs: HashMap<String, Tensor>,
) -> Result<(PumaResult, Vec<Tensor>, Program), RunError> {
    let split = crate::per_layer::split_host(g).map_err(|msg| {
        RunError::Compile(crate::compile::CompileError::Graph {
            graph: g.name.clone(),
            msg,
        })
    })?;
    let Some(split) = split else {
        return run_float(g, arch, copts, sopts, inputs);
    };
    // The host part: one reference run gives the PUMA part's inputs and outputs.
    let want: std::collections::HashSet<pimkit_ir::ValueId> =
        split.inputs.iter().chain(&g.outputs).copied().collect();
    let mut vals: HashMap<pimkit_ir::ValueId, Tensor> = HashMap::new();
    for &i in &g.inputs {
        if want.contains(&i)
            && let Some(t) = inputs.get(&g.value(i).name)
        {
            vals.insert(i, t.clone());
        }
    }
    pimkit_interp::run_observed(g, &inputs, &mut |node, ts| {
        for (o, t) in g.nodes[node.idx()].outputs.iter().zip(ts) {
            if want.contains(o) {
                vals.insert(*o, t.clone());
            }
        }
    })
    .map_err(|e| RunError::Reference(e.to_string()))?;
    let pin: HashMap<String, Tensor> = split
        .inputs
        .iter()
        .map(|&v| (g.value(v).name.clone(), vals[&v].clone()))
        .collect();
    let (mut res, outs, p) = run_float(&split.graph, arch, copts, sopts, pin)?;
    res.model = g.name.clone();
    res.notes.push(split.note);
    Ok((res, outs, p))
}

/// [`run_graph`] of a graph PUMA computes entirely.
fn run_float(
    g: &Graph,
    arch: &Arch,
    copts: &CompileOptions,
    sopts: &SimOptions,
    inputs: HashMap<String, Tensor>,
) -> Result<(PumaResult, Vec<Tensor>, Program), RunError> {
    if g.inputs.iter().all(|&v| g.ty(v).dtype.is_float()) {
        crate::sim::check_graph_inputs(g, &inputs)?;
    }
    // Activation formats from the reference run's inputs unless calibration is given.
    let p = if copts.calibration.is_empty() && copts.fixed == crate::compile::Fixed::PerTensor {
        let mut o = copts.clone();
        o.calibration = vec![inputs.clone()];
        compile(g, arch, &o)?
    } else {
        compile(g, arch, copts)?
    };
    crate::sim::check_inputs(&p, &inputs)?;
    let reference = if p.shape_only {
        None
    } else {
        Some(pimkit_interp::run(g, &inputs).map_err(|e| RunError::Reference(e.to_string()))?)
    };
    let (res, outs) = run_program(&p, &inputs, sopts, reference.as_deref())?;
    Ok((res, outs, p))
}
