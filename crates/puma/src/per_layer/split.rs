//! A single weighted node that fits no placement and no window (issue #17 (a), item 7):
//! its channels are split in two and each part runs as a layer of its own,
//! recursively, so per-layer mode never fails for memory while the part's working set
//! shrinks with its channels.
//!
//! * **By output channels** (Conv with one group, Gemm/MatMul by output features): each
//!   part computes its output channels from the whole input with its rows of the
//!   weights and its bias; the parts' outputs are concatenated (no work: they are
//!   different channels of the result). A layer's working set at one output pixel
//!   grows with its outputs; its inputs stream through the MVMUs' tiles by crossbar
//!   columns.
//! * **Grouped convolutions** split between groups (both channel ranges at once).
//! * **By input channels** when one output channel is left (one group): two partial
//!   sums over halves of the reduction axis (the bias in the first only) and a third
//!   part that adds them; the node's error is bounded by the three parts' errors
//!   added. A node whose fixed working set exceeds the tile (a padded convolution's
//!   zero row) fits at no split and keeps its own error.
//! * **Channel-wise nodes** (elementwise ops, pools: a layer's tail) split by channels.
//!
//! The parts run one after the other (cycles and energy add up, as between layers),
//! each on its reference inputs (the input's channel slice for grouped parts).

use super::LayerResult;
use super::cut::{Weighted, slice};
use super::layer::{Failure, Layer, add};
use crate::outcome::{RunError, output_range};
use pimkit_ir::{BinaryOp, DType, Graph, Op, Tensor, TensorType, ValueId};
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
        } else if cin >= 2 {
            return self
                .split_inputs(ni, &wt, why, notes, input_shape)
                .map(Some);
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
                .part(&pname, ci, co, gr, true)
                .map_err(|m| Failure::Other(RunError::Layer(format!("layer `{name}`: {m}"))))?;
            results.push(self.run_part(&pg, vec![px], &copts, &mut sub)?);
        }
        let r = self.combine(results, name, input_shape);
        notes.push(format!(
            "`{name}` split {how}, the parts simulated one after the other{}",
            self.why(why)
        ));
        dedup_into(notes, sub);
        Ok(Some(r))
    }

    /// A weighted node with one output channel (one group) split along its reduction
    /// axis: two parts over halves of the input channels, each the whole output's partial
    /// sum (the bias in the first part only), and a third part that adds the two on
    /// PUMA (as the compiler adds the partial sums of a matrix taller than a crossbar).
    /// Each part runs on its reference inputs (the partial sums from the interpreter);
    /// the error of the sum is bounded by the parts' errors added (an Add is 1-Lipschitz
    /// in each operand), reported against the whole node's output range.
    fn split_inputs(
        &self,
        ni: usize,
        wt: &Weighted,
        why: &RunError,
        notes: &mut Vec<String>,
        input_shape: Vec<usize>,
    ) -> Result<LayerResult, Failure> {
        let name = &self.g.nodes[ni].name;
        let (cin, cout, _) = wt.channels();
        let h = cin / 2;
        let copts = crate::compile::CompileOptions {
            calibration: Vec::new(),
            ..self.copts.clone()
        };
        let layer_err = |m: String| Failure::Other(RunError::Layer(format!("layer `{name}`: {m}")));
        // A part that fits nowhere either (down to one input channel: the tile is
        // smaller than the node's fixed working set) leaves the node's own error.
        let own = |f: Failure| match f {
            Failure::Memory(_) if self.depth == 0 => Failure::Memory(RunError::Layer(format!(
                "{why} (split by input channels down to one, it does not fit either)"
            ))),
            Failure::Memory(_) => Failure::Memory(RunError::Layer(why.to_string())),
            other => other,
        };
        let mut sub = Vec::new();
        let mut results = Vec::new();
        let mut partials = Vec::new();
        for (k, ci) in [(0, h), (h, cin)].into_iter().enumerate() {
            let pname = format!("{name}/ic{}-{}", ci.0, ci.1);
            let (pg, px) = wt
                .part(&pname, ci, (0, cout), 1, k == 0)
                .map_err(layer_err)?;
            let ins = HashMap::from([("x".to_string(), px.clone())]);
            let mut y = pimkit_interp::run(&pg, &ins)
                .map_err(|e| Failure::Other(RunError::Reference(e.to_string())))?;
            partials.push(y.remove(0));
            results.push(
                self.run_part(&pg, vec![px], &copts, &mut sub)
                    .map_err(own)?,
            );
        }
        // The partial sums added by a part of their own (channel-wise: it windows and
        // splits like any elementwise node).
        let sname = format!("{name}/sum");
        let mut sg = Graph::new(sname.clone());
        let ty = TensorType::new(DType::F32, partials[0].shape.clone());
        let a = sg.add_input("p0", ty.clone());
        let b = sg.add_input("p1", ty);
        let y = sg
            .op(&sname, Op::Binary(BinaryOp::Add), &[a, b])
            .map_err(|e| layer_err(e.to_string()))?;
        sg.outputs.push(y);
        let whole: Vec<f32> = partials[0]
            .to_f32_vec()
            .iter()
            .zip(partials[1].to_f32_vec())
            .map(|(p, q)| p + q)
            .collect();
        let whole = Tensor::from_f32(partials[0].shape.clone(), whole);
        results.push(
            self.run_part(&sg, partials, &copts, &mut sub)
                .map_err(own)?,
        );
        let bound = results
            .iter()
            .map(|r| r.max_abs_error)
            .try_fold(0.0, |a, e| e.map(|e| a + e));
        let mut r = self.combine(results, name, input_shape);
        r.max_abs_error = bound;
        r.relative_error = bound.map(|e| e / output_range(&[whole]));
        notes.push(if self.depth == 0 {
            format!(
                "`{name}` split by input channels ({h} + {} of {cin}) into two partial sums (the bias in the first) added by a third part `{sname}`, the parts simulated one after the other; its error is bounded by the parts' errors added{}",
                cin - h,
                self.why(why)
            )
        } else {
            format!("`{name}` split by input channels ({h} + {} of {cin})", cin - h)
        });
        dedup_into(notes, sub);
        Ok(r)
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
        let input_shape = ins
            .iter()
            .flatten()
            .next()
            .map(|t| t.shape.clone())
            .unwrap_or_default();
        let r = self.combine(results, name, input_shape);
        notes.push(format!(
            "`{name}` split by channels ({h} + {} of {c}), the parts simulated one after the other{}",
            c - h,
            self.why(why)
        ));
        dedup_into(notes, sub);
        Ok(Some(r))
    }

    /// `pg` run as a layer of its own on `inputs` (in `pg.inputs` order).
    /// The parts' results summed (cycles, energy, errors: `add`) and labelled as the split
    /// node: its name, the layer's first node, the node's input shape, and the first part's
    /// simulated shape.
    fn combine(
        &self,
        results: Vec<LayerResult>,
        name: &str,
        input_shape: Vec<usize>,
    ) -> LayerResult {
        let mut it = results.into_iter();
        let first = it.next().expect("a split has at least two parts");
        let simulated_shape = first.simulated_shape.clone();
        let mut r = it.fold(first, add);
        r.name = self.g.nodes[self.all.start].name.clone();
        r.nodes = vec![name.to_string()];
        r.input_shape = input_shape;
        r.simulated_shape = simulated_shape;
        r
    }

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
