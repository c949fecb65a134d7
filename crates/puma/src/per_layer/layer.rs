//! One layer of a per-layer run, made to work whatever it is:
//! 1. compiled at full size;
//! 2. if its shared memory does not fit, with 2, 4, 8 weight copies per convolution
//!    (output-column stripes, each on its own tiles with its share of the line buffer);
//! 3. then on a smaller window of its inputs (height and width halved, down to one
//!    output pixel), scaled by ISS-65's factor;
//! 4. if it still does not fit (an input that is not a feature map cannot be windowed,
//!    a data-movement tail such as ShuffleNet's 5-D channel shuffle does not build at a
//!    smaller window, an operand outgrows a core's data memory), its nodes are split in
//!    two parts, each run the same way on its reference inputs, recursively down to
//!    single nodes; the parts' cycles and energy add up (no overlap, as between layers);
//! 5. a node PUMA cannot compute ends the layer: it and the rest of the layer run on the
//!    host (their values come from the reference run anyway), with a note; a layer
//!    whose first node is such a node runs on the host entirely.

use super::LayerResult;
use super::graph::{crop, external_inputs, subgraph};
use crate::arch::Arch;
use crate::compile::{CompileError, CompileOptions, compile};
use crate::outcome::{RunError, compare, output_range};
use crate::sim::{SimOptions, simulate};
use pimkit_ir::{Graph, Op, Tensor, ValueId};
use std::cell::RefCell;
use std::collections::HashMap;

pub(super) struct Layer<'a> {
    pub g: &'a Graph,
    pub arch: &'a Arch,
    pub copts: &'a CompileOptions,
    pub sopts: &'a SimOptions,
    /// The layer's nodes that are not host nodes, in order.
    pub nodes: &'a [usize],
    /// All of the layer's nodes.
    pub all: std::ops::Range<usize>,
    pub ext: &'a [ValueId],
    /// Values of the layer read elsewhere (later layers, graph outputs).
    pub outs: &'a [ValueId],
    /// Values from the reference run.
    pub vals: &'a HashMap<ValueId, Tensor>,
    /// Reference values inside the layer, computed when the layer is split.
    pub inner: RefCell<HashMap<ValueId, Tensor>>,
    /// 0 for a layer of the graph, 1 + its parent's for a part of a split node.
    pub depth: usize,
}

pub(super) enum Failure {
    /// Node index PUMA cannot compile, and why.
    Unsupported(usize, String),
    /// No placement and no window fits the tiles' shared memory or a core's data memory.
    Memory(RunError),
    Other(RunError),
}

impl From<RunError> for Failure {
    fn from(e: RunError) -> Self {
        Failure::Other(e)
    }
}

/// Placements tried in turn: (weight copies per convolution, MVMUs per tile; 0 = full).
const CONV_PLACEMENTS: [(usize, usize); 6] = [(1, 0), (2, 0), (4, 0), (8, 0), (8, 4), (8, 1)];
const DENSE_PLACEMENTS: [(usize, usize); 3] = [(1, 0), (1, 4), (1, 1)];

impl Layer<'_> {
    fn name(&self) -> &str {
        &self.g.nodes[self.all.start].name
    }

    pub fn run(&self) -> Result<Option<LayerResult>, RunError> {
        let t0 = std::time::Instant::now();
        let g = self.g;
        let mut nodes = self.nodes.to_vec();
        let mut notes = Vec::new();
        let host: Vec<String> = self
            .all
            .clone()
            .filter(|i| !self.nodes.contains(i))
            .map(|i| g.nodes[i].name.clone())
            .collect();
        let mut on_host = host.clone();
        if !host.is_empty() {
            notes.push(format!(
                "{} on the host (integer inputs or outputs)",
                host.join(", ")
            ));
        }
        loop {
            if nodes.is_empty() {
                return Ok(Some(self.host_only(on_host, notes, t0)));
            }
            match self.fit(&nodes, &mut notes) {
                Ok(mut l) => {
                    l.host_nodes = on_host;
                    l.notes = notes;
                    l.wall_s = t0.elapsed().as_secs_f64();
                    return Ok(Some(l));
                }
                Err(Failure::Unsupported(ni, msg)) => {
                    let pos = nodes.iter().position(|&i| i == ni).unwrap_or(0);
                    let rest: Vec<String> = nodes[pos..]
                        .iter()
                        .map(|&i| g.nodes[i].name.clone())
                        .collect();
                    notes.push(format!(
                        "`{}` ({}) is not supported by the PUMA compiler ({msg}): {} run(s) on the host",
                        g.nodes[ni].name,
                        g.nodes[ni].op.name(),
                        rest.join(", ")
                    ));
                    on_host.extend(rest);
                    nodes.truncate(pos);
                }
                Err(Failure::Memory(e) | Failure::Other(e)) => return Err(e),
            }
        }
    }

    /// [`Self::attempt`]; when `nodes` do not fit however placed and windowed, the two
    /// halves of `nodes` in turn (recursively), summed.
    pub(super) fn fit(
        &self,
        nodes: &[usize],
        notes: &mut Vec<String>,
    ) -> Result<LayerResult, Failure> {
        let mut mine = Vec::new();
        match self.attempt(nodes, &mut mine) {
            Err(Failure::Memory(e)) if nodes.len() > 1 => {
                let mid = nodes.len() / 2;
                let mut sub = Vec::new();
                let a = self.fit(&nodes[..mid], &mut sub)?;
                self.remember(&nodes[..mid])?;
                let b = self.fit(&nodes[mid..], &mut sub)?;
                let names = |ns: &[usize]| {
                    let (f, l) = (ns[0], ns[ns.len() - 1]);
                    if f == l {
                        format!("`{}`", self.g.nodes[f].name)
                    } else {
                        format!("`{}`..`{}`", self.g.nodes[f].name, self.g.nodes[l].name)
                    }
                };
                notes.push(format!(
                    "{} and {} simulated one after the other (together they do not fit: {e})",
                    names(&nodes[..mid]),
                    names(&nodes[mid..])
                ));
                notes.extend(sub);
                Ok(add(a, b))
            }
            Err(Failure::Memory(e)) if nodes.len() == 1 => {
                match self.split_channels(nodes[0], &e, notes)? {
                    Some(r) => Ok(r),
                    None => {
                        notes.extend(mine);
                        Err(Failure::Memory(e))
                    }
                }
            }
            r => {
                notes.extend(mine);
                r
            }
        }
    }

    /// The reference values `nodes` produce for the layer's other nodes, from the
    /// interpreter run of `nodes` on their reference inputs.
    fn remember(&self, nodes: &[usize]) -> Result<(), Failure> {
        let g = self.g;
        let ext = external_inputs(g, nodes);
        let outs = self.outputs(nodes);
        let shapes: Vec<Vec<usize>> = ext.iter().map(|&v| g.ty(v).shape.clone()).collect();
        let sg = subgraph(g, self.name(), nodes, &ext, &shapes, &outs).map_err(|m| {
            Failure::Other(RunError::Layer(format!("layer `{}`: {m}", self.name())))
        })?;
        let ins = self.inputs_for(&ext, &shapes, &sg);
        let res = pimkit_interp::run(&sg, &ins).map_err(|e| RunError::Reference(e.to_string()))?;
        self.inner.borrow_mut().extend(outs.into_iter().zip(res));
        Ok(())
    }

    fn host_only(
        &self,
        on_host: Vec<String>,
        notes: Vec<String>,
        t0: std::time::Instant,
    ) -> LayerResult {
        let shape = self
            .ext
            .first()
            .map(|&v| self.g.ty(v).shape.clone())
            .unwrap_or_default();
        LayerResult {
            name: self.name().to_string(),
            nodes: Vec::new(),
            host_nodes: on_host,
            input_shape: shape.clone(),
            simulated_shape: shape,
            scale: 1.0,
            memory_copies: 1,
            simulated_cycles: 0,
            simulated_energy_nj: 0.0,
            cycles: 0,
            energy_nj: 0.0,
            energy_breakdown_nj: Default::default(),
            tiles: 0,
            mvmus: 0,
            mvm_ops: 0,
            max_abs_error: None,
            relative_error: None,
            saturations: 0,
            out_of_range: Vec::new(),
            wall_s: t0.elapsed().as_secs_f64(),
            notes,
        }
    }

    /// Outputs of `nodes`: what later layers and the layer's other nodes read, else
    /// its last node's outputs.
    fn outputs(&self, nodes: &[usize]) -> Vec<ValueId> {
        let mine: Vec<ValueId> = nodes
            .iter()
            .flat_map(|&i| self.g.nodes[i].outputs.iter().copied())
            .collect();
        let mut o: Vec<ValueId> = self
            .outs
            .iter()
            .copied()
            .filter(|v| mine.contains(v))
            .collect();
        for i in self.all.clone().filter(|i| !nodes.contains(i)) {
            for &v in self.g.nodes[i].inputs.iter().flatten() {
                if mine.contains(&v) && !o.contains(&v) {
                    o.push(v);
                }
            }
        }
        if o.is_empty() || nodes.last() != self.nodes.last() {
            let last = &self.g.nodes[*nodes.last().unwrap_or(&self.all.start)];
            let mut v = o;
            for &x in &last.outputs {
                if !v.contains(&x) {
                    v.push(x);
                }
            }
            v
        } else {
            o
        }
    }

    /// The layer's inputs from the reference run, cropped to `shapes`.
    fn inputs_for(
        &self,
        ext: &[ValueId],
        shapes: &[Vec<usize>],
        sg: &Graph,
    ) -> HashMap<String, Tensor> {
        let m: HashMap<String, Tensor> = ext
            .iter()
            .zip(shapes)
            .filter_map(|(&v, sh)| {
                let inner = self.inner.borrow();
                let t = self.vals.get(&v).or_else(|| inner.get(&v))?;
                let t = if sh == &t.shape {
                    t.clone()
                } else {
                    crop(t, sh[2], sh[3])
                };
                Some((self.g.value(v).name.clone(), t))
            })
            .collect();
        if m.len() == ext.len() {
            m
        } else {
            pimkit_interp::random_inputs(sg, 0)
        }
    }

    /// Compile options with `copies` weight copies per convolution of `nodes` and at
    /// most `spread` MVMUs per tile.
    fn options(
        &self,
        nodes: &[usize],
        (copies, spread): (usize, usize),
        calib: &HashMap<String, Tensor>,
    ) -> CompileOptions {
        let mut o = self.copts.clone();
        if spread > 0 {
            o.spread = spread;
        }
        for &i in nodes {
            let n = &self.g.nodes[i];
            if matches!(n.op, Op::Conv(_)) && copies > 1 {
                let e = o.replicas.entry(n.name.clone()).or_insert(1);
                *e = (*e).max(1) * copies;
            }
        }
        if o.calibration.is_empty() {
            o.calibration = vec![calib.clone()];
        }
        o
    }

    fn attempt(&self, nodes: &[usize], notes: &mut Vec<String>) -> Result<LayerResult, Failure> {
        let g = self.g;
        let ext = external_inputs(g, nodes);
        let outs = self.outputs(nodes);
        let full: Vec<Vec<usize>> = ext.iter().map(|&v| g.ty(v).shape.clone()).collect();
        let has_conv = nodes.iter().any(|&i| matches!(g.nodes[i].op, Op::Conv(_)));
        let pad = nodes
            .iter()
            .find_map(|&i| match &g.nodes[i].op {
                Op::Conv(c) => c.pads.first().copied(),
                // Only a convolution's padding shapes the window; other ops have none.
                _ => None,
            })
            .unwrap_or(0);
        let build = |shapes: &[Vec<usize>]| subgraph(g, self.name(), nodes, &ext, shapes, &outs);
        let mut shapes = full.clone();
        let placements: &[(usize, usize)] = if has_conv {
            &CONV_PLACEMENTS
        } else {
            &DENSE_PLACEMENTS
        };
        let mut ci = 0;
        let (p, sg, seg_inputs, (copies, spread)) = loop {
            let sg = build(&shapes).map_err(|m| {
                RunError::Compile(CompileError::Graph {
                    graph: g.name.clone(),
                    msg: format!("layer `{}`: {m}", self.name()),
                })
            })?;
            let seg_inputs = self.inputs_for(&ext, &shapes, &sg);
            let pl = placements[ci];
            match compile(&sg, self.arch, &self.options(nodes, pl, &seg_inputs)) {
                Ok(p) => break (p, sg, seg_inputs, pl),
                Err(CompileError::Unsupported { node, msg, .. }) => {
                    let ni = nodes
                        .iter()
                        .copied()
                        .find(|&i| g.nodes[i].name == node)
                        .unwrap_or(nodes[0]);
                    return Err(Failure::Unsupported(ni, msg));
                }
                Err(e @ (CompileError::SharedMemory { .. } | CompileError::Registers { .. })) => {
                    if ci + 1 < placements.len() {
                        ci += 1;
                        continue;
                    }
                    // ISS-65: a smaller window of every 4-D input, scaled afterwards.
                    match smaller(&shapes, &|s| build(s).is_ok()) {
                        Some(s) => shapes = s,
                        None => {
                            let what = match e {
                                CompileError::SharedMemory {
                                    tile, need, have, ..
                                } => format!(
                                    "tile {tile} needs at least {need} words of shared memory but has {have}"
                                ),
                                other => other.to_string(),
                            };
                            return Err(Failure::Memory(RunError::Layer(format!(
                                "layer `{}`: {what} even with {} weight copies, {} MVMU(s) per tile and a {:?} input window; raise tile.shared_mem_words or core.data_mem_words in the architecture file",
                                self.name(),
                                pl.0,
                                pl.1,
                                shapes
                                    .first()
                                    .map(|s| s.get(2..).unwrap_or(&[]))
                                    .unwrap_or(&[])
                            ))));
                        }
                    }
                }
                Err(e) => return Err(Failure::Other(e.into())),
            }
        };
        let scale = if shapes == full {
            1.0
        } else {
            let f = |a: usize, b: usize| (a + 2 * pad) as f64 / (b + 2 * pad) as f64;
            notes.push(format!(
                "simulated on a {}x{} window of its {}x{} input and scaled by ISS-65's factor",
                shapes[0][2], shapes[0][3], full[0][2], full[0][3]
            ));
            f(full[0][2], shapes[0][2]) * f(full[0][3], shapes[0][3])
        };
        if copies > 1 {
            notes.push(format!(
                "{copies} weight copies per convolution (output-column stripes) so that its line buffers fit the tiles' shared memory"
            ));
        }
        if spread > 0 {
            notes.push(format!(
                "at most {spread} MVMU(s) per tile so that its inputs fit the tiles' shared memory"
            ));
        }
        let out = simulate(&p, &seg_inputs, self.sopts).map_err(RunError::from)?;
        let (max_abs_error, relative_error) = if p.shape_only {
            (None, None)
        } else {
            let reference = pimkit_interp::run(&sg, &seg_inputs)
                .map_err(|e| RunError::Reference(e.to_string()))?;
            let e = compare(&out.outputs, &reference);
            (Some(e), Some(e / output_range(&reference)))
        };
        let st = &out.stats;
        // f64 -> u64 casts saturate: refuse a scaled count that does not fit (2^62
        // leaves room for the sum of the layers).
        let scaled = (st.cycles as f64 * scale).round();
        if !scaled.is_finite() || scaled >= (1u64 << 62) as f64 {
            return Err(Failure::Other(RunError::CycleOverflow(format!(
                "layer `{}`: {} simulated cycles x scale {scale} = {scaled:e} cycles overflows the cycle counter",
                self.name(),
                st.cycles
            ))));
        }
        Ok(LayerResult {
            name: self.name().to_string(),
            nodes: nodes.iter().map(|&i| g.nodes[i].name.clone()).collect(),
            host_nodes: Vec::new(),
            input_shape: full.first().cloned().unwrap_or_default(),
            simulated_shape: shapes.first().cloned().unwrap_or_default(),
            scale,
            memory_copies: copies,
            simulated_cycles: st.cycles,
            simulated_energy_nj: st.energy_nj,
            cycles: scaled as u64,
            energy_nj: st.energy_nj * scale,
            energy_breakdown_nj: st
                .energy_breakdown_nj
                .iter()
                .map(|(k, v)| (k.clone(), v * scale))
                .collect(),
            tiles: p.placement.tiles_used,
            mvmus: st.mvmus,
            mvm_ops: (st.mvm_ops as f64 * scale).round() as u64,
            max_abs_error,
            relative_error,
            saturations: st.saturations,
            out_of_range: p.placement.out_of_range.clone(),
            wall_s: 0.0,
            notes: Vec::new(),
        })
    }
}

/// The next smaller window of every 4-D input: height and width halved, or, where the
/// layer does not build at half (its kernel needs more), the smallest size in between
/// that builds; `None` at the smallest size that builds (one output pixel) or when an
/// input is not a feature map.
fn smaller(
    shapes: &[Vec<usize>],
    builds: &dyn Fn(&[Vec<usize>]) -> bool,
) -> Option<Vec<Vec<usize>>> {
    if shapes.iter().any(|s| s.len() != 4) {
        return None;
    }
    let at = |f: &dyn Fn(usize) -> usize| -> Vec<Vec<usize>> {
        shapes
            .iter()
            .map(|s| vec![s[0], s[1], f(s[2]).max(1), f(s[3]).max(1)])
            .collect()
    };
    let h = shapes[0][2].max(shapes[0][3]);
    for k in h.div_ceil(2)..h {
        // Scale every input like the first one's larger side: h -> k.
        let cand = at(&|x| (x * k).div_ceil(h));
        if cand != shapes && builds(&cand) {
            return Some(cand);
        }
    }
    None
}

/// Two parts of a layer simulated one after the other: cycles and energy add up (the
/// scaled figures and the simulated ones separately), the tiles are reused (the larger
/// count), the MVMUs add up, the error is the larger one.
pub(super) fn add(a: LayerResult, b: LayerResult) -> LayerResult {
    let simulated_cycles = a.simulated_cycles + b.simulated_cycles;
    let cycles = a.cycles + b.cycles;
    LayerResult {
        nodes: a.nodes.iter().chain(&b.nodes).cloned().collect(),
        host_nodes: a.host_nodes.iter().chain(&b.host_nodes).cloned().collect(),
        scale: if simulated_cycles == 0 {
            a.scale.max(b.scale)
        } else {
            cycles as f64 / simulated_cycles as f64
        },
        memory_copies: a.memory_copies.max(b.memory_copies),
        simulated_cycles,
        simulated_energy_nj: a.simulated_energy_nj + b.simulated_energy_nj,
        cycles,
        energy_nj: a.energy_nj + b.energy_nj,
        energy_breakdown_nj: {
            let mut m = a.energy_breakdown_nj.clone();
            for (k, v) in &b.energy_breakdown_nj {
                *m.entry(k.clone()).or_insert(0.0) += v;
            }
            m
        },
        tiles: a.tiles.max(b.tiles),
        mvm_ops: a.mvm_ops + b.mvm_ops,
        mvmus: a.mvmus + b.mvmus,
        max_abs_error: match (a.max_abs_error, b.max_abs_error) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        },
        relative_error: match (a.relative_error, b.relative_error) {
            (Some(x), Some(y)) => Some(x.max(y)),
            (x, y) => x.or(y),
        },
        saturations: a.saturations + b.saturations,
        out_of_range: {
            let mut o = a.out_of_range.clone();
            o.extend(b.out_of_range.iter().cloned());
            o.sort_by(|x, y| y.max_abs.total_cmp(&x.max_abs));
            o
        },
        wall_s: a.wall_s + b.wall_s,
        notes: Vec::new(),
        ..a
    }
}
