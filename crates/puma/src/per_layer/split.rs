//! A single weighted node that fits no placement and no window (issue #17 (a)): its
//! channels are split in two and each part runs as a layer of its own, recursively, so
//! per-layer mode never fails for memory while a part has more than one channel.
//!
//! * **By output channels** (Conv with one group, Gemm/MatMul by output features): each
//!   part computes its output channels from the whole input with its rows of the
//!   weights and its bias; the parts' outputs are concatenated (no work: they are
//!   different channels of the result). A layer's working set at one output pixel
//!   grows with its outputs; its inputs stream through the MVMUs' tiles by crossbar
//!   columns.
//! * **Grouped convolutions** split between groups (both channel ranges at once).
//! * **Channel-wise nodes** (elementwise ops, pools: a layer's tail) split by channels.
//!
//! Splitting by input channels (partial sums and an add) is not built: no case needed
//! it — a layer's inputs stream through its MVMUs' tiles by crossbar columns, so a
//! 3×3 convolution of 4,096 input channels and one output channel fits 512-word tiles
//! at one output pixel (`tests/channel_split.rs`); a node with one output channel that
//! does not fit keeps the error.
//!
//! The parts run one after the other (cycles and energy add up, as between layers),
//! each on its reference inputs (the input's channel slice for grouped parts).

use super::LayerResult;
use super::cut::{Weighted, slice};
use super::layer::{Failure, Layer, add};
use crate::outcome::RunError;
use pimkit_ir::{DType, Graph, Op, Tensor, TensorType, ValueId};
use std::collections::HashMap;

/// `sub` appended to `notes` without repeats (every part of a split says how it was
/// placed and windowed).
fn dedup_into(notes: &mut Vec<String>, sub: Vec<String>) {
    for n in sub {
        if !notes.contains(&n) {
            notes.push(n);
        }
    }
}

impl Layer<'_> {
    /// Why a node was split, said once: for the node of the layer, not its parts.
    fn why(&self, why: &RunError) -> String {
        if self.depth == 0 {
            format!(" (it fits no placement and no window whole: {why})")
        } else {
            String::new()
        }
    }

    /// The reference value of `v` (from the whole run or the layer's inner runs).
    fn reference(&self, v: ValueId) -> Option<Tensor> {
        self.vals
            .get(&v)
            .cloned()
            .or_else(|| self.inner.borrow().get(&v).cloned())
    }

    /// Node `ni` (one that fits no placement and no window: `why`) split in two by
    /// channels, each part run as a layer, recursively; `None` when it cannot be split
    /// (one channel each way, weights without data, an unsupported form).
    pub(super) fn split_channels(
        &self,
        ni: usize,
        why: &RunError,
        notes: &mut Vec<String>,
    ) -> Result<Option<LayerResult>, Failure> {
        let g = self.g;
        let node = &g.nodes[ni];
        let Some(x) = node
            .inputs
            .first()
            .copied()
            .flatten()
            .and_then(|v| self.reference(v))
        else {
            return Ok(None);
        };
        let input_shape = x.shape.clone();
        let Some(wt) = Weighted::of(g, ni, x) else {
            return self.split_channelwise(ni, why, notes);
        };
        let (cin, cout, groups) = wt.channels();
        let name = &node.name;
        // Parts as (input range, output range, groups), and how.
        let (parts, how) = if groups > 1 {
            let h = groups / 2;
            let (ipg, opg) = (cin / groups, cout / groups);
            (
                vec![
                    ((0, h * ipg), (0, h * opg), h),
                    ((h * ipg, cin), (h * opg, cout), groups - h),
                ],
                format!("between its {groups} groups"),
            )
        } else if cout >= 2 {
            let h = cout / 2;
            (
                vec![((0, cin), (0, h), 1), ((0, cin), (h, cout), 1)],
                format!("by output channels ({h} + {} of {cout})", cout - h),
            )
        } else {
            return Ok(None);
        };
        let copts = crate::compile::CompileOptions {
            calibration: Vec::new(),
            ..self.copts.clone()
        };
        let mut sub = Vec::new();
        let mut results: Vec<LayerResult> = Vec::new();
        for &(ci, co, gr) in &parts {
            let pname = format!("{name}/oc{}-{}", co.0, co.1);
            let (pg, px) = wt
                .part(&pname, ci, co, gr)
                .map_err(|m| Failure::Other(RunError::Layer(format!("layer `{name}`: {m}"))))?;
            results.push(self.run_part(&pg, vec![px], &copts, &mut sub)?);
        }
        let mut it = results.into_iter();
        let first = it.next().expect("two parts");
        let simulated_shape = first.simulated_shape.clone();
        let mut r = it.fold(first, add);
        r.name = self.g.nodes[self.all.start].name.clone();
        r.nodes = vec![name.clone()];
        r.input_shape = input_shape;
        r.simulated_shape = simulated_shape;
        notes.push(format!(
            "`{name}` split {how}, the parts simulated one after the other{}",
            self.why(why)
        ));
        dedup_into(notes, sub);
        Ok(Some(r))
    }

    /// A node that works on each channel alone (elementwise ops, pools) split in two
    /// halves of its channels (axis 1, the last of a 2-D tensor); `None` for others.
    fn split_channelwise(
        &self,
        ni: usize,
        why: &RunError,
        notes: &mut Vec<String>,
    ) -> Result<Option<LayerResult>, Failure> {
        let g = self.g;
        let node = &g.nodes[ni];
        if node.outputs.len() != 1
            || !matches!(
                node.op,
                Op::Unary(_) | Op::Binary(_) | Op::Pool(_) | Op::GlobalPool(_)
            )
        {
            return Ok(None);
        }
        let out = g.ty(node.outputs[0]).shape.clone();
        let axis = if out.len() >= 3 {
            1
        } else {
            out.len().saturating_sub(1)
        };
        let c = out.get(axis).copied().unwrap_or(0);
        if c < 2 {
            return Ok(None);
        }
        // Every dynamic input has the output's channels; constants are scalars.
        // Constants: scalars (kept whole) or one value per channel (sliced on their
        // axis `k` that lines up with the channel axis, right-aligned broadcasting).
        let mut ins: Vec<Option<Tensor>> = Vec::new();
        let mut const_axis: Vec<Option<usize>> = Vec::new();
        for &v in node.inputs.iter().flatten() {
            if g.is_const(v) {
                let sh = &g.ty(v).shape;
                if g.const_data(v).is_none() {
                    return Ok(None);
                }
                let lead = out.len() as isize - sh.len() as isize;
                let k = axis as isize - lead;
                let per_channel = k >= 0
                    && sh.iter().enumerate().all(
                        |(i, &d)| {
                            if i as isize == k { d == c } else { d == 1 }
                        },
                    );
                if per_channel {
                    const_axis.push(Some(k as usize));
                } else if sh.iter().product::<usize>() == 1 {
                    const_axis.push(None);
                } else {
                    return Ok(None);
                }
                ins.push(None);
            } else {
                const_axis.push(None);
                let Some(t) = self.reference(v) else {
                    return Ok(None);
                };
                if t.shape.len() != out.len() || t.shape[axis] != c || !t.dtype().is_float() {
                    return Ok(None);
                }
                ins.push(Some(t));
            }
        }
        let h = c / 2;
        let copts = crate::compile::CompileOptions {
            calibration: Vec::new(),
            ..self.copts.clone()
        };
        let name = &node.name;
        let mut sub = Vec::new();
        let mut results = Vec::new();
        for (lo, hi) in [(0, h), (h, c)] {
            let pname = format!("{name}/c{lo}-{hi}");
            let mut pg = Graph::new(pname.clone());
            let mut ids = Vec::new();
            let mut vals = Vec::new();
            for (k, (&v, t)) in node.inputs.iter().flatten().zip(&ins).enumerate() {
                let data = g.const_data(v);
                ids.push(match t {
                    Some(t) => {
                        let x = slice(&t.to_f32_vec(), &t.shape, axis, lo, hi);
                        let id = pg.add_input(
                            format!("in{k}"),
                            TensorType::new(DType::F32, x.shape.clone()),
                        );
                        vals.push(x);
                        id
                    }
                    None => {
                        let d = data.expect("checked above");
                        let d = match const_axis[k] {
                            Some(a) => slice(&d.to_f32_vec(), &d.shape, a, lo, hi),
                            None => d.clone(),
                        };
                        pg.add_const(format!("{pname}/k{k}"), d)
                    }
                });
            }
            let y = pg
                .op(&pname, node.op.clone(), &ids)
                .map_err(|e| Failure::Other(RunError::Layer(e.to_string())))?;
            pg.outputs.push(y);
            results.push(self.run_part(&pg, vals, &copts, &mut sub)?);
        }
        let mut it = results.into_iter();
        let first = it.next().expect("two parts");
        let simulated_shape = first.simulated_shape.clone();
        let mut r = it.fold(first, add);
        r.name = g.nodes[self.all.start].name.clone();
        r.nodes = vec![name.clone()];
        r.input_shape = ins
            .iter()
            .flatten()
            .next()
            .map(|t| t.shape.clone())
            .unwrap_or_default();
        r.simulated_shape = simulated_shape;
        notes.push(format!(
            "`{name}` split by channels ({h} + {} of {c}), the parts simulated one after the other{}",
            c - h,
            self.why(why)
        ));
        dedup_into(notes, sub);
        Ok(Some(r))
    }

    /// `pg` run as a layer of its own on `inputs` (in `pg.inputs` order).
    fn run_part(
        &self,
        pg: &Graph,
        inputs: Vec<Tensor>,
        copts: &crate::compile::CompileOptions,
        notes: &mut Vec<String>,
    ) -> Result<LayerResult, Failure> {
        let vals: HashMap<ValueId, Tensor> = pg.inputs.iter().copied().zip(inputs).collect();
        let nodes: Vec<usize> = (0..pg.nodes.len()).collect();
        let lay = Layer {
            g: pg,
            arch: self.arch,
            copts,
            sopts: self.sopts,
            nodes: &nodes,
            all: 0..pg.nodes.len(),
            ext: &pg.inputs,
            outs: &pg.outputs,
            vals: &vals,
            inner: Default::default(),
            depth: self.depth + 1,
        };
        lay.fit(&nodes, notes)
    }
}
