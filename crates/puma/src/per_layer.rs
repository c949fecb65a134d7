//! Layer-by-layer simulation: the original's official method for networks whose
//! feature maps do not fit (reference §5.3 and §6.2: ISS-38 simulates CNNs one layer at
//! a time and sums; ISS-65 simulates a large feature map at a smaller size X and scales
//! latency and energy by ((X_actual + 2p) / (X + 2p))²).
//!
//! The graph is cut before every weighted node (Conv, Gemm, MatMul); each segment (the
//! weighted node and the activations/pools after it) is compiled and simulated alone,
//! its inputs taken from the reference interpreter's run of the whole graph, and its
//! outputs compared with the interpreter. A convolutional segment whose shared memory
//! does not fit is simulated on the top-left window of its input, halving the height
//! and width until it compiles, and scaled as ISS-65 does. Latency and energy of the
//! segments are summed (no overlap between layers, as in the original's spreadsheet).

use crate::arch::Arch;
use crate::compile::{CompileError, CompileOptions, compile};
use crate::fixed::NumMode;
use crate::result::{RunError, compare};
use crate::sim::{SimOptions, simulate};
use pimkit_ir::{DType, Graph, Op, Tensor, ValueDef, ValueId};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};

/// One simulated segment.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct LayerResult {
    /// Name of the segment's first node.
    pub name: String,
    pub nodes: Vec<String>,
    /// Shape of the segment's (first) input in the full network.
    pub input_shape: Vec<usize>,
    /// Shape actually simulated (smaller when scaled).
    pub simulated_shape: Vec<usize>,
    /// Latency/energy factor applied (1 when simulated at full size).
    pub scale: f64,
    pub simulated_cycles: u64,
    pub simulated_energy_nj: f64,
    pub cycles: u64,
    pub energy_nj: f64,
    pub tiles: usize,
    pub mvmus: usize,
    /// Against the interpreter on the same (possibly cropped) input.
    pub max_abs_error: Option<f64>,
    pub wall_s: f64,
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
}

fn weighted(op: &Op) -> bool {
    matches!(op, Op::Conv(_) | Op::Gemm { .. } | Op::MatMul)
}

/// Ops that keep working on a smaller spatial size (NCHW, spatially local).
fn spatial(op: &Op) -> bool {
    matches!(
        op,
        Op::Conv(_)
            | Op::Pool(_)
            | Op::Unary(_)
            | Op::Clip { .. }
            | Op::Identity
            | Op::BatchNorm { .. }
    )
}

/// Node index ranges of the segments: cut before each weighted node; trailing Reshapes
/// (flatten) move to the next segment so conv segments stay spatial.
pub fn segments(g: &Graph) -> Vec<std::ops::Range<usize>> {
    let mut cuts = vec![0];
    for (i, n) in g.nodes.iter().enumerate() {
        if i > 0 && weighted(&n.op) {
            let mut c = i;
            let prev = *cuts.last().unwrap_or(&0);
            while c > prev + 1 && matches!(g.nodes[c - 1].op, Op::Reshape { .. }) {
                c -= 1;
            }
            if c > prev {
                cuts.push(c);
            }
        }
    }
    cuts.push(g.nodes.len());
    cuts.windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| w[0]..w[1])
        .collect()
}

/// A segment as a graph of its own; `shapes` overrides the external input shapes.
fn subgraph(
    g: &Graph,
    r: std::ops::Range<usize>,
    ext: &[ValueId],
    shapes: &[Vec<usize>],
    outs: &[ValueId],
) -> Result<Graph, String> {
    let mut s = Graph::new(format!("{}/{}", g.name, g.nodes[r.start].name));
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    for (&v, sh) in ext.iter().zip(shapes) {
        let val = g.value(v);
        let id = s.add_input(
            val.name.clone(),
            pimkit_ir::TensorType::new(val.ty.dtype, sh.clone()),
        );
        map.insert(v, id);
    }
    for n in &g.nodes[r] {
        let mut inputs = Vec::with_capacity(n.inputs.len());
        for i in &n.inputs {
            inputs.push(match i {
                None => None,
                Some(v) => Some(match map.get(v) {
                    Some(&m) => m,
                    None => {
                        let val = g.value(*v);
                        let ValueDef::Const(c) = &val.def else {
                            return Err(format!("value `{}` is not available", val.name));
                        };
                        let id = match c {
                            Some(t) => s.add_const(val.name.clone(), t.clone()),
                            None => s.add_const_shape(val.name.clone(), val.ty.clone()),
                        };
                        map.insert(*v, id);
                        id
                    }
                }),
            });
        }
        let names = n.outputs.iter().map(|&o| g.value(o).name.clone()).collect();
        let o = s
            .add_node_named(n.name.clone(), n.op.clone(), inputs, names)
            .map_err(|e| e.to_string())?;
        for (a, b) in n.outputs.iter().zip(o) {
            map.insert(*a, b);
        }
    }
    s.outputs = outs.iter().map(|o| map[o]).collect();
    Ok(s)
}

/// Top-left window of an NCHW f32 tensor.
fn crop(t: &Tensor, h: usize, w: usize) -> Tensor {
    let (n, c, hh, ww) = (t.shape[0], t.shape[1], t.shape[2], t.shape[3]);
    let v = t.to_f32_vec();
    let mut out = Vec::with_capacity(n * c * h * w);
    for b in 0..n * c {
        for y in 0..h {
            let row = b * hh * ww + y * ww;
            out.extend_from_slice(&v[row..row + w]);
        }
    }
    Tensor::from_f32(vec![n, c, h, w], out)
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
    let segs = segments(g);
    // External inputs and outputs of every segment.
    let producer: HashMap<ValueId, usize> = g
        .nodes
        .iter()
        .enumerate()
        .flat_map(|(i, n)| n.outputs.iter().map(move |&o| (o, i)))
        .collect();
    let graph_outs: HashSet<ValueId> = g.outputs.iter().copied().collect();
    let mut ext: Vec<Vec<ValueId>> = vec![Vec::new(); segs.len()];
    let mut outs: Vec<Vec<ValueId>> = vec![Vec::new(); segs.len()];
    for (si, r) in segs.iter().enumerate() {
        for n in &g.nodes[r.clone()] {
            for &v in n.inputs.iter().flatten() {
                let inside = producer.get(&v).is_some_and(|p| r.contains(p));
                if !inside && !g.is_const(v) && !ext[si].contains(&v) {
                    ext[si].push(v);
                }
            }
        }
    }
    for (si, r) in segs.iter().enumerate() {
        for n in &g.nodes[r.clone()] {
            for &o in &n.outputs {
                let used_later = ext
                    .iter()
                    .enumerate()
                    .any(|(sj, e)| sj != si && e.contains(&o));
                if (used_later || graph_outs.contains(&o)) && !outs[si].contains(&o) {
                    outs[si].push(o);
                }
            }
        }
    }
    // Values every segment reads, from one interpreter run of the whole graph.
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
    let mut layers = Vec::new();
    for (si, r) in segs.iter().enumerate() {
        on_layer(si, segs.len(), &g.nodes[r.start].name);
        let t0 = std::time::Instant::now();
        let full: Vec<Vec<usize>> = ext[si].iter().map(|&v| g.ty(v).shape.clone()).collect();
        let can_shrink = g.nodes[r.clone()].iter().all(|n| spatial(&n.op))
            && ext[si].len() == 1
            && full[0].len() == 4
            && g.ty(ext[si][0]).dtype == DType::F32;
        let pad = g.nodes[r.clone()]
            .iter()
            .find_map(|n| match &n.op {
                Op::Conv(c) => c.pads.first().copied(),
                _ => None,
            })
            .unwrap_or(0);
        let mut shapes = full.clone();
        // ISS-65: the next smaller window (height and width halved), if the layer still
        // builds at that size.
        let halved = |s: &[usize]| -> Option<Vec<usize>> {
            if !can_shrink || s[2] < 2 || s[3] < 2 {
                return None;
            }
            let n = vec![s[0], s[1], s[2] / 2, s[3] / 2];
            subgraph(g, r.clone(), &ext[si], std::slice::from_ref(&n), &outs[si])
                .is_ok()
                .then_some(n)
        };
        if can_shrink {
            // Skip compilations that cannot fit: the compute tile holds at least the
            // segment's input and every value it produces (words).
            let words = |sh: &[Vec<usize>]| -> usize {
                subgraph(g, r.clone(), &ext[si], sh, &outs[si])
                    .map(|s| {
                        s.values
                            .iter()
                            .filter(|v| !matches!(v.def, ValueDef::Const(_)))
                            .map(|v| v.ty.numel())
                            .sum()
                    })
                    .unwrap_or(0)
            };
            while words(&shapes) > arch.tile.shared_mem_words {
                let Some(next) = halved(&shapes[0]) else {
                    break;
                };
                shapes[0] = next;
            }
        }
        // The segment's true inputs (cropped to the simulated window) from the
        // reference run; they also calibrate its activation formats.
        let inputs_for = |shapes: &[Vec<usize>], sg: &Graph| -> HashMap<String, Tensor> {
            let m: HashMap<String, Tensor> = ext[si]
                .iter()
                .zip(shapes)
                .filter_map(|(&v, sh)| {
                    let t = vals.get(&v)?;
                    let t = if sh == &t.shape {
                        t.clone()
                    } else {
                        crop(t, sh[2], sh[3])
                    };
                    Some((g.value(v).name.clone(), t))
                })
                .collect();
            if m.len() == ext[si].len() {
                m
            } else {
                pimkit_interp::random_inputs(sg, 0)
            }
        };
        let (p, sg, seg_inputs) = loop {
            let sg = subgraph(g, r.clone(), &ext[si], &shapes, &outs[si]).map_err(|m| {
                RunError::Compile(CompileError::Graph {
                    graph: g.name.clone(),
                    msg: format!("layer `{}`: {m}", g.nodes[r.start].name),
                })
            })?;
            let seg_inputs = inputs_for(&shapes, &sg);
            let mut o = copts.clone();
            if o.calibration.is_empty() {
                o.calibration = vec![seg_inputs.clone()];
            }
            match compile(&sg, arch, &o) {
                Ok(p) => break (p, sg, seg_inputs),
                Err(CompileError::SharedMemory {
                    tile, need, have, ..
                }) => {
                    // ISS-65: simulate a smaller feature map and scale.
                    let next = shapes.first().and_then(|s| halved(s));
                    match next {
                        Some(n) => shapes[0] = n,
                        None => {
                            return Err(RunError::Compile(CompileError::SharedMemory {
                                tile,
                                layer: g.nodes[r.start].name.clone(),
                                need,
                                have,
                            }));
                        }
                    }
                }
                Err(e) => return Err(e.into()),
            }
        };
        let scale = if shapes == full {
            1.0
        } else {
            let f = |a: usize, b: usize| (a + 2 * pad) as f64 / (b + 2 * pad) as f64;
            f(full[0][2], shapes[0][2]) * f(full[0][3], shapes[0][3])
        };
        let out = simulate(&p, &seg_inputs, sopts)?;
        let max_abs_error = if p.shape_only {
            None
        } else {
            let reference = pimkit_interp::run(&sg, &seg_inputs)
                .map_err(|e| RunError::Reference(e.to_string()))?;
            Some(compare(&out.outputs, &reference))
        };
        let st = &out.stats;
        // f64 -> u64 casts saturate: refuse a scaled count that does not fit (2^62
        // leaves room for the sum below).
        let scaled = (st.cycles as f64 * scale).round();
        if !scaled.is_finite() || scaled >= (1u64 << 62) as f64 {
            return Err(RunError::CycleOverflow(format!(
                "layer `{}`: {} simulated cycles x scale {scale} = {scaled:e} cycles overflows the cycle counter",
                g.nodes[r.start].name, st.cycles
            )));
        }
        layers.push(LayerResult {
            name: g.nodes[r.start].name.clone(),
            nodes: g.nodes[r.clone()].iter().map(|n| n.name.clone()).collect(),
            input_shape: full.first().cloned().unwrap_or_default(),
            simulated_shape: shapes.first().cloned().unwrap_or_default(),
            scale,
            simulated_cycles: st.cycles,
            simulated_energy_nj: st.energy_nj,
            cycles: scaled as u64,
            energy_nj: st.energy_nj * scale,
            tiles: p.placement.tiles_used,
            mvmus: st.mvmus,
            max_abs_error,
            wall_s: t0.elapsed().as_secs_f64(),
        });
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
    Ok(PerLayerResult {
        model: g.name.clone(),
        mode: sopts.mode,
        scaled: layers.iter().any(|l| l.scale != 1.0),
        cycles,
        latency_ns: cycles as f64 * arch.ns_per_cycle(),
        energy_nj: layers.iter().map(|l| l.energy_nj).sum(),
        max_abs_error,
        layers,
    })
}
