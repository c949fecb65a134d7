//! Layer-by-layer simulation: the original's method for CNNs (reference §5.3 and §6.2:
//! ISS-38 simulates CNNs one layer at a time and sums; ISS-65 simulates a large feature
//! map at a smaller size X and scales latency and energy by ((X_actual + 2p)/(X + 2p))²).
//!
//! The graph is cut before every weighted node (Conv, Gemm, MatMul); each layer (the
//! weighted node and the activations/pools after it) is compiled and simulated alone,
//! its inputs taken from the reference interpreter's run of the whole graph, and its
//! outputs compared with the interpreter. It never fails for want of memory or of an
//! operator after the weighted node (`layer.rs`): a layer that does not fit gets more
//! weight copies (stripes on their own tiles), then is simulated on a smaller window
//! (down to one output pixel) and scaled; a layer that still does not fit runs as two
//! parts, recursively down to single nodes; nodes PUMA cannot compute run on the host
//! with a note. Latency and energy of the layers are summed (no overlap between layers,
//! as in the original's spreadsheet).

mod cut;
mod graph;
mod layer;
mod split;

pub use graph::{HostSplit, crop, external_inputs, host_nodes, segments, split_host, subgraph};

use crate::arch::Arch;
use crate::compile::CompileOptions;
use crate::fixed::NumMode;
use crate::outcome::RunError;
use crate::sim::SimOptions;
use pimkit_ir::{Graph, Tensor, ValueId};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// One layer.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LayerResult {
    /// Name of the layer's first node.
    pub name: String,
    /// Nodes simulated on PUMA.
    pub nodes: Vec<String>,
    /// Nodes of the layer computed on the host instead (see `notes`).
    #[serde(default)]
    pub host_nodes: Vec<String>,
    /// Shape of the layer's (first) input in the full network.
    pub input_shape: Vec<usize>,
    /// Shape actually simulated (smaller when scaled).
    pub simulated_shape: Vec<usize>,
    /// Latency/energy factor applied (1 when simulated at full size).
    pub scale: f64,
    /// Weight copies per weighted node beyond the plan, for memory (1: none).
    #[serde(default = "one")]
    pub memory_copies: usize,
    pub simulated_cycles: u64,
    pub simulated_energy_nj: f64,
    pub cycles: u64,
    pub energy_nj: f64,
    /// `energy_nj` by component (scaled like it; keys as the whole run's
    /// `energy_breakdown_nj`).
    #[serde(default)]
    pub energy_breakdown_nj: std::collections::BTreeMap<String, f64>,
    pub tiles: usize,
    pub mvmus: usize,
    /// MVMU operations of the layer (scaled like `cycles`).
    #[serde(default)]
    pub mvm_ops: u64,
    /// Against the interpreter on the same (possibly cropped) input.
    pub max_abs_error: Option<f64>,
    /// `max_abs_error` relative to the range of the layer's reference outputs and 0
    /// (`outcome::output_range`).
    #[serde(default)]
    pub relative_error: Option<f64>,
    /// Results that did not fit their 16-bit word (saturated or wrapped).
    #[serde(default)]
    pub saturations: u64,
    /// Values of the layer beyond any 16-bit format (the error is then genuine).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_of_range: Vec<crate::program::OutOfRange>,
    pub wall_s: f64,
    /// Why nodes ran on the host, why the layer was scaled.
    #[serde(default)]
    pub notes: Vec<String>,
}

fn one() -> usize {
    1
}

/// The per-layer run of a whole network.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PerLayerResult {
    pub model: String,
    pub mode: NumMode,
    pub layers: Vec<LayerResult>,
    /// Sum over layers (scaled).
    pub cycles: u64,
    pub latency_ns: f64,
    pub energy_nj: f64,
    /// Largest per-layer error.
    pub max_abs_error: Option<f64>,
    /// True when some layer was simulated at a reduced size and scaled.
    pub scaled: bool,
    /// Notes for the whole run (nodes on the host, a quantized model run as its float
    /// equivalent).
    #[serde(default)]
    pub notes: Vec<String>,
    /// For a quantized model: the largest |difference| between its float equivalent's
    /// outputs and its own (reference interpreter; `crate::dequant`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quantized_model_max_abs_diff: Option<f64>,
    /// Layers whose error exceeds the tolerance (`SimOptions::tolerance`, relative to
    /// the layer's output range) or whose results saturated: never silent.
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Area, power and TOPS/W from the `puma` component library, with every layer's tiles
    /// resident at once (as the network would be deployed; docs/cost.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<crate::hardware::Hardware>,
}

/// Simulate `g` layer by layer (see the module doc). `inputs`: deterministic random
/// inputs when `None`.
pub fn run_per_layer(
    g: &Graph,
    arch: &Arch,
    copts: &CompileOptions,
    sopts: &SimOptions,
    inputs: Option<HashMap<String, Tensor>>,
) -> Result<PerLayerResult, RunError> {
    run_per_layer_with(g, arch, copts, sopts, inputs, &mut |_, _, _| {})
}

/// [`run_per_layer`], calling `on_layer(index, layers, name)` as each layer starts (a
/// progress display: large networks take seconds per layer).
pub fn run_per_layer_with(
    g: &Graph,
    arch: &Arch,
    copts: &CompileOptions,
    sopts: &SimOptions,
    inputs: Option<HashMap<String, Tensor>>,
    on_layer: &mut dyn FnMut(usize, usize, &str),
) -> Result<PerLayerResult, RunError> {
    let inputs = match inputs {
        Some(i) => i,
        None => {
            pimkit_interp::check_memory(g).map_err(|e| RunError::Reference(e.to_string()))?;
            pimkit_interp::random_inputs(g, 0)
        }
    };
    // Constant-only nodes folded (never a layer), quantized models as float ones.
    let fg = crate::dequant::float_equivalent(g).map_err(|msg| {
        RunError::Compile(crate::compile::CompileError::Graph {
            graph: g.name.clone(),
            msg,
        })
    })?;
    let Some(f) = fg else {
        return run_layers(g, arch, copts, sopts, inputs, on_layer);
    };
    let mut r = run_layers(&f.graph, arch, copts, sopts, inputs.clone(), on_layer)?;
    if f.quantized() {
        let outs = pimkit_interp::run(&f.graph, &inputs)
            .map_err(|e| RunError::Reference(e.to_string()))?;
        let diff =
            crate::dequant::quantized_difference(g, &inputs, &outs).map_err(RunError::Reference)?;
        r.notes.insert(0, f.note(diff));
        r.quantized_model_max_abs_diff = diff;
    }
    r.model = g.name.clone();
    Ok(r)
}

/// [`run_per_layer_with`] of a graph without constant-only nodes to fold.
fn run_layers(
    g: &Graph,
    arch: &Arch,
    copts: &CompileOptions,
    sopts: &SimOptions,
    inputs: HashMap<String, Tensor>,
    on_layer: &mut dyn FnMut(usize, usize, &str),
) -> Result<PerLayerResult, RunError> {
    let host = host_nodes(g);
    let segs = segments(g);
    let graph_outs: HashSet<ValueId> = g.outputs.iter().copied().collect();
    // Each layer's PUMA nodes, external inputs and the outputs something else reads.
    let nodes: Vec<Vec<usize>> = segs
        .iter()
        .map(|r| r.clone().filter(|i| !host.contains(i)).collect())
        .collect();
    let ext: Vec<Vec<ValueId>> = nodes.iter().map(|n| external_inputs(g, n)).collect();
    let mut readers: HashMap<ValueId, usize> = HashMap::new();
    for (si, e) in ext.iter().enumerate() {
        for &v in e {
            readers.entry(v).or_insert(si);
        }
    }
    let outs: Vec<Vec<ValueId>> = nodes
        .iter()
        .enumerate()
        .map(|(si, ns)| {
            let mut o = Vec::new();
            for &i in ns {
                for &v in &g.nodes[i].outputs {
                    let read_elsewhere = ext
                        .iter()
                        .enumerate()
                        .any(|(sj, e)| sj != si && e.contains(&v));
                    if (read_elsewhere || graph_outs.contains(&v)) && !o.contains(&v) {
                        o.push(v);
                    }
                }
            }
            o
        })
        .collect();
    // Values the layers read, from one interpreter run of the whole graph.
    let needed: HashSet<ValueId> = ext.iter().flatten().copied().collect();
    let mut vals: HashMap<ValueId, Tensor> = HashMap::new();
    for &i in &g.inputs {
        if let Some(t) = inputs.get(&g.value(i).name) {
            vals.insert(i, t.clone());
        }
    }
    if !g.is_shape_only() {
        pimkit_interp::run_observed(g, &inputs, &mut |node, ts| {
            for (o, t) in g.nodes[node.idx()].outputs.iter().zip(ts) {
                if needed.contains(o) {
                    vals.insert(*o, t.clone());
                }
            }
        })
        .map_err(|e| RunError::Reference(e.to_string()))?;
    }
    let mut notes = Vec::new();
    if !host.is_empty() {
        let mut names: Vec<String> = host
            .iter()
            .map(|&i| format!("`{}` ({})", g.nodes[i].name, g.nodes[i].op.name()))
            .collect();
        names.sort();
        notes.push(format!(
            "{} node(s) with integer inputs or outputs run on the host: {}",
            names.len(),
            names.join(", ")
        ));
    }
    let mut layers = Vec::new();
    for (si, r) in segs.iter().enumerate() {
        on_layer(si, segs.len(), &g.nodes[r.start].name);
        if ext[si].is_empty() && !nodes[si].is_empty() {
            // Only constants in (a shape-only graph's, which cannot be folded): the
            // compiler evaluates them where they are read.
            notes.push(format!(
                "layer `{}` computes only constants: nothing to simulate",
                g.nodes[r.start].name
            ));
            continue;
        }
        let lay = layer::Layer {
            g,
            arch,
            copts,
            sopts,
            nodes: &nodes[si],
            all: r.clone(),
            ext: &ext[si],
            outs: &outs[si],
            vals: &vals,
            inner: Default::default(),
            depth: 0,
        };
        if let Some(l) = lay.run()? {
            layers.push(l);
        }
    }
    let cycles = layers
        .iter()
        .try_fold(0u64, |a, l| a.checked_add(l.cycles))
        .ok_or_else(|| {
            RunError::CycleOverflow(
                "the summed cycles of the layers overflow the cycle counter".into(),
            )
        })?;
    let max_abs_error = layers
        .iter()
        .filter_map(|l| l.max_abs_error)
        .reduce(f64::max);
    let mut warnings = Vec::new();
    for l in &layers {
        if let Some(rel) = l.relative_error
            && (rel.is_nan() || rel > sopts.tolerance)
        {
            warnings.push(format!(
                "layer `{}`: output error {:.4} is {:.2} % of its outputs' range (with 0), above the {:.2} % tolerance",
                l.name,
                l.max_abs_error.unwrap_or(f64::NAN),
                100.0 * rel,
                100.0 * sopts.tolerance
            ));
        }
        if let Some(w) =
            crate::outcome::out_of_range_warning(&format!("layer `{}`", l.name), &l.out_of_range)
        {
            warnings.push(w);
        }
        if l.saturations > 0 {
            warnings.push(format!(
                "layer `{}`: {} result(s) did not fit their 16-bit word (values beyond the format's range)",
                l.name, l.saturations
            ));
        }
    }
    let latency_ns = cycles as f64 * arch.ns_per_cycle();
    let energy_nj: f64 = layers.iter().map(|l| l.energy_nj).sum();
    let tiles: usize = layers.iter().map(|l| l.tiles).sum();
    let hardware = crate::hardware::hardware(
        tiles,
        tiles.div_ceil(arch.node.tiles.max(1)),
        layers.iter().map(|l| l.mvm_ops).sum(),
        arch.mvmu.xbar_size,
        energy_nj,
        latency_ns,
    );
    Ok(PerLayerResult {
        model: g.name.clone(),
        mode: sopts.mode,
        scaled: layers.iter().any(|l| l.scale != 1.0),
        cycles,
        latency_ns,
        energy_nj,
        max_abs_error,
        notes,
        quantized_model_max_abs_diff: None,
        warnings,
        layers,
        hardware,
    })
}
