//! The QOperator rewrite: walks the float graph in order and emits the quantized graph
//! with ORT's naming (`X_quantized`, `X_scale`, `X_zero_point`, `X_QuantizeLinear`,
//! `X_DequantizeLinear`, `node_quant`).

use super::{
    QResult, QuantError, QuantOptions, Ranges, activation_params, passes_through, qlinear_binary,
    quantize_weight_value, scale_ty, weight_scale,
};
use pimkit_ir::{
    DType, Graph, Node, NodeId, Op, PoolKind, Tensor, TensorType, UnaryOp, ValueDef, ValueId,
};
use std::collections::HashMap;

/// A quantized tensor in the new graph with its parameters (ids and values).
#[derive(Clone, Copy, Debug)]
struct QVal {
    q: ValueId,
    scale: ValueId,
    zp: ValueId,
    s: f32,
}

/// A quantized weight: data ids and per-channel (or single) scales when known.
#[derive(Clone, Debug)]
struct QWeight {
    q: ValueId,
    scale: ValueId,
    zp: ValueId,
    scales: Option<Vec<f32>>,
}

pub(super) struct Emitter<'a> {
    g: &'a Graph,
    ng: Graph,
    ranges: Ranges,
    opts: QuantOptions,
    data: bool,
    fmap: HashMap<ValueId, ValueId>,
    qmap: HashMap<ValueId, QVal>,
    wmap: HashMap<ValueId, QWeight>,
}

impl<'a> Emitter<'a> {
    pub(super) fn new(g: &'a Graph, ranges: Ranges, opts: QuantOptions) -> Self {
        let data = !ranges.is_empty() && !g.is_shape_only();
        let mut ng = Graph::new(g.name.clone());
        let mut fmap = HashMap::new();
        for &i in &g.inputs {
            let v = g.value(i);
            fmap.insert(i, ng.add_input(v.name.clone(), v.ty.clone()));
        }
        Emitter {
            g,
            ng,
            ranges,
            opts,
            data,
            fmap,
            qmap: HashMap::new(),
            wmap: HashMap::new(),
        }
    }

    fn name(&self, v: ValueId) -> String {
        self.g.value(v).name.clone()
    }

    fn konst(&mut self, name: String, ty: TensorType, t: impl FnOnce() -> Tensor) -> ValueId {
        if self.data {
            self.ng.add_const(name, t())
        } else {
            self.ng.add_const_shape(name, ty)
        }
    }

    fn zp_tensor(dt: DType, shape: Vec<usize>, z: i32) -> Tensor {
        let n = shape.iter().product();
        match dt {
            DType::I8 => Tensor::from_i8(shape, vec![z as i8; n]),
            _ => Tensor::from_u8(shape, vec![z as u8; n]),
        }
    }

    /// Scale and zero-point constants of activation `v` (from its calibrated range).
    fn act_params(&mut self, v: ValueId) -> (ValueId, ValueId, f32, i32) {
        let (lo, hi) = self.ranges.get(&v).copied().unwrap_or((0.0, 1.0));
        let (s, z) = activation_params(lo, hi, self.opts.act);
        let n = self.name(v);
        let act = self.opts.act;
        let sid = self.konst(format!("{n}_scale"), scale_ty(None), || {
            Tensor::scalar_f32(s)
        });
        let zid = self.konst(
            format!("{n}_zero_point"),
            TensorType::new(act, vec![]),
            || Self::zp_tensor(act, vec![], z),
        );
        (sid, zid, s, z)
    }

    /// The float form of old value `v` in the new graph (constants copied, quantized values
    /// dequantized under their original name).
    fn float_of(&mut self, v: ValueId) -> QResult<ValueId> {
        if let Some(&f) = self.fmap.get(&v) {
            return Ok(f);
        }
        let val = self.g.value(v);
        let f = match (&val.def, self.qmap.get(&v).copied()) {
            (ValueDef::Const(Some(t)), _) => self.ng.add_const(val.name.clone(), t.clone()),
            (ValueDef::Const(None), _) => self.ng.add_const_shape(val.name.clone(), val.ty.clone()),
            (_, Some(q)) => {
                let n = val.name.clone();
                self.ng.add_node_named(
                    format!("{n}_DequantizeLinear"),
                    Op::DequantizeLinear { axis: 1 },
                    vec![Some(q.q), Some(q.scale), Some(q.zp)],
                    vec![n],
                )?[0]
            }
            _ => {
                return Err(QuantError::Calibration(format!(
                    "value '{}' used before definition",
                    val.name
                )));
            }
        };
        self.fmap.insert(v, f);
        Ok(f)
    }

    /// The quantized form of old value `v` (QuantizeLinear inserted on first use; a
    /// constant becomes a quantized initializer over its own range).
    fn quant_of(&mut self, v: ValueId) -> QResult<QVal> {
        if let Some(&q) = self.qmap.get(&v) {
            return Ok(q);
        }
        let n = self.name(v);
        let act = self.opts.act;
        let q = if let Some(t) = self.g.const_data(v).filter(|_| self.data) {
            let d = t.to_f32_vec();
            let (lo, hi) = d
                .iter()
                .fold((0f32, 0f32), |(a, b), &x| (a.min(x), b.max(x)));
            self.ranges.insert(v, (lo, hi));
            let (scale, zp, s, z) = self.act_params(v);
            let (qlo, qhi) = act.quant_range().unwrap_or((0, 255));
            let vals: Vec<f64> = d
                .iter()
                .map(|&x| ((x / s).round_ties_even() as i32 + z).clamp(qlo, qhi) as f64)
                .collect();
            let qt = Tensor::from_f64_as(act, t.shape.clone(), &vals);
            let q = self.ng.add_const(format!("{n}_quantized"), qt);
            QVal { q, scale, zp, s }
        } else {
            let f = self.float_of(v)?;
            let (scale, zp, s, _) = self.act_params(v);
            let q = self.ng.add_node_named(
                format!("{n}_QuantizeLinear"),
                Op::QuantizeLinear { axis: 1, to: act },
                vec![Some(f), Some(scale), Some(zp)],
                vec![format!("{n}_quantized")],
            )?[0];
            QVal { q, scale, zp, s }
        };
        self.qmap.insert(v, q);
        Ok(q)
    }

    /// Symmetric i8 weight, per channel along `axis` when per-channel is on.
    fn weight(&mut self, w: ValueId, axis: usize) -> QWeight {
        if let Some(q) = self.wmap.get(&w) {
            return q.clone();
        }
        let n = self.name(w);
        let ty = self.g.ty(w).clone();
        let per = self.opts.per_channel && ty.rank() > axis && ty.shape[axis] > 1;
        let ch = if per { ty.shape[axis] } else { 1 };
        let inner: usize = if per {
            ty.shape[axis + 1..].iter().product()
        } else {
            1
        };
        let d = self
            .g
            .const_data(w)
            .map(|t| t.to_f32_vec())
            .filter(|_| self.data);
        // Element i is in channel (i / inner) % ch: runs of `inner` weights share a
        // channel (one run holds them all for a per-tensor scale).
        let run = |d: &[f32]| if per { inner.max(1) } else { d.len().max(1) };
        let scales = d.as_ref().map(|d| {
            let mut m = vec![0f32; ch];
            for (k, part) in d.chunks(run(d)).enumerate() {
                let c = &mut m[k % ch];
                *c = part.iter().fold(*c, |a, x| a.max(x.abs()));
            }
            m.into_iter().map(weight_scale).collect::<Vec<f32>>()
        });
        let q = if let (Some(d), Some(s)) = (&d, &scales) {
            let mut v: Vec<i8> = Vec::with_capacity(d.len());
            for (k, part) in d.chunks(run(d)).enumerate() {
                let sc = s[k % ch];
                v.extend(part.iter().map(|&x| quantize_weight_value(x, sc)));
            }
            self.ng.add_const(
                format!("{n}_quantized"),
                Tensor::from_i8(ty.shape.clone(), v),
            )
        } else {
            self.ng.add_const_shape(
                format!("{n}_quantized"),
                TensorType::new(DType::I8, ty.shape.clone()),
            )
        };
        let sshape = if per { vec![ch] } else { vec![] };
        let s2 = scales.clone();
        let scale = self.konst(format!("{n}_scale"), scale_ty(per.then_some(ch)), || {
            Tensor::from_f32(sshape.clone(), s2.unwrap_or_default())
        });
        let zshape = if per { vec![ch] } else { vec![] };
        let zp = self.konst(
            format!("{n}_zero_point"),
            TensorType::new(DType::I8, zshape.clone()),
            || Self::zp_tensor(DType::I8, zshape, 0),
        );
        let qw = QWeight {
            q,
            scale,
            zp,
            scales,
        };
        self.wmap.insert(w, qw.clone());
        qw
    }

    /// i32 bias with scale x_scale * w_scale[c] (ORT quantize_bias_static).
    fn bias(&mut self, b: ValueId, xs: f32, w: &QWeight) -> ValueId {
        let n = self.name(b);
        let shape = vec![self.g.ty(b).numel()];
        let d = self
            .g
            .const_data(b)
            .map(|t| t.to_f32_vec())
            .filter(|_| self.data);
        match (d, &w.scales) {
            (Some(d), Some(ws)) => {
                let v: Vec<i32> = d
                    .iter()
                    .enumerate()
                    .map(|(c, &x)| {
                        let bs = xs * ws[if ws.len() == 1 { 0 } else { c }];
                        (x / bs)
                            .round_ties_even()
                            .clamp(i32::MIN as f32, i32::MAX as f32) as i32
                    })
                    .collect();
                self.ng
                    .add_const(format!("{n}_quantized"), Tensor::from_i32(shape, v))
            }
            _ => self
                .ng
                .add_const_shape(format!("{n}_quantized"), TensorType::new(DType::I32, shape)),
        }
    }

    /// Emit a quantized node whose output is old value `out`.
    fn emit_q(
        &mut self,
        n: &Node,
        op: Op,
        inputs: Vec<Option<ValueId>>,
        out: ValueId,
        y: (ValueId, ValueId, f32, i32),
    ) -> QResult<()> {
        let name = self.name(out);
        let q = self.ng.add_node_named(
            format!("{}_quant", n.name),
            op,
            inputs,
            vec![format!("{name}_quantized")],
        )?[0];
        self.qmap.insert(
            out,
            QVal {
                q,
                scale: y.0,
                zp: y.1,
                s: y.2,
            },
        );
        Ok(())
    }

    fn is_const(&self, v: Option<ValueId>) -> bool {
        v.is_some_and(|v| self.g.is_const(v))
    }

    pub(super) fn node(&mut self, _id: NodeId, n: &Node, foldable: bool) -> QResult<()> {
        let i0 = n.inputs.first().copied().flatten();
        let out = n.outputs[0];
        if self.opts.exclude.iter().any(|e| e == n.op.name()) {
            return self.float_node(n);
        }
        match &n.op {
            Op::Conv(a) if self.is_const(n.inputs.get(1).copied().flatten()) => {
                let x = self.quant_of(i0.expect("conv input"))?;
                let w = self.weight(n.inputs[1].expect("conv weight"), 0);
                let b = match n.inputs.get(2).copied().flatten() {
                    Some(b) if self.g.is_const(b) => Some(self.bias(b, x.s, &w)),
                    Some(_) => return self.float_node(n),
                    None => None,
                };
                let y = self.act_params(out);
                let ins = vec![
                    Some(x.q),
                    Some(x.scale),
                    Some(x.zp),
                    Some(w.q),
                    Some(w.scale),
                    Some(w.zp),
                    Some(y.0),
                    Some(y.1),
                    b,
                ];
                self.emit_q(n, Op::QLinearConv(a.clone()), ins, out, y)
            }
            Op::Gemm {
                alpha,
                beta,
                trans_a: false,
                trans_b,
            } if *alpha == 1.0
                && *beta == 1.0
                && self.is_const(n.inputs.get(1).copied().flatten())
                && n.inputs
                    .get(2)
                    .copied()
                    .flatten()
                    .is_none_or(|c| self.g.is_const(c)) =>
            {
                let a = self.quant_of(i0.expect("gemm a"))?;
                let w = self.weight(n.inputs[1].expect("gemm b"), if *trans_b { 0 } else { 1 });
                let c = n
                    .inputs
                    .get(2)
                    .copied()
                    .flatten()
                    .map(|c| self.bias(c, a.s, &w));
                let y = self.act_params(out);
                let ins = vec![
                    Some(a.q),
                    Some(a.scale),
                    Some(a.zp),
                    Some(w.q),
                    Some(w.scale),
                    Some(w.zp),
                    c,
                    Some(y.0),
                    Some(y.1),
                ];
                self.emit_q(
                    n,
                    Op::QGemm {
                        alpha: 1.0,
                        trans_a: false,
                        trans_b: *trans_b,
                    },
                    ins,
                    out,
                    y,
                )
            }
            Op::MatMul => {
                let a = self.quant_of(i0.expect("matmul a"))?;
                let bv = n.inputs[1].expect("matmul b");
                let (bq, bs, bz) = if self.g.is_const(bv) {
                    let r = self.g.ty(bv).rank();
                    let w = self.weight(bv, r.saturating_sub(1));
                    (w.q, w.scale, w.zp)
                } else {
                    let b = self.quant_of(bv)?;
                    (b.q, b.scale, b.zp)
                };
                let y = self.act_params(out);
                let ins = vec![
                    Some(a.q),
                    Some(a.scale),
                    Some(a.zp),
                    Some(bq),
                    Some(bs),
                    Some(bz),
                    Some(y.0),
                    Some(y.1),
                ];
                self.emit_q(n, Op::QLinearMatMul, ins, out, y)
            }
            Op::Unary(UnaryOp::Relu) | Op::Clip { .. }
                if foldable && i0.is_some_and(|v| self.qmap.contains_key(&v)) =>
            {
                let q = self.qmap[&i0.expect("checked")];
                self.qmap.insert(out, q);
                Ok(())
            }
            op if qlinear_binary(op).is_some()
                && !n.inputs.iter().flatten().any(|v| self.g.is_const(*v)) =>
            {
                let a = self.quant_of(i0.expect("a"))?;
                let b = self.quant_of(n.inputs[1].expect("b"))?;
                let y = self.act_params(out);
                let ins = [a.q, a.scale, a.zp, b.q, b.scale, b.zp, y.0, y.1]
                    .map(Some)
                    .to_vec();
                self.emit_q(n, qlinear_binary(op).expect("checked"), ins, out, y)
            }
            Op::GlobalPool(PoolKind::Avg) => {
                let x = self.quant_of(i0.expect("x"))?;
                let y = self.act_params(out);
                let ins = [x.q, x.scale, x.zp, y.0, y.1].map(Some).to_vec();
                self.emit_q(
                    n,
                    Op::QLinearGlobalAveragePool {
                        channels_last: false,
                    },
                    ins,
                    out,
                    y,
                )
            }
            Op::Concat { axis } if !n.inputs.iter().flatten().any(|v| self.g.is_const(*v)) => {
                let y = self.act_params(out);
                let mut ins = vec![Some(y.0), Some(y.1)];
                for v in n.inputs.iter().flatten() {
                    let x = self.quant_of(*v)?;
                    ins.extend([Some(x.q), Some(x.scale), Some(x.zp)]);
                }
                self.emit_q(n, Op::QLinearConcat { axis: *axis }, ins, out, y)
            }
            Op::Pool(p) if p.kind == PoolKind::Avg => {
                let x = self.quant_of(i0.expect("x"))?;
                let y = self.act_params(out);
                let ins = [x.q, x.scale, x.zp, y.0, y.1].map(Some).to_vec();
                self.emit_q(n, Op::QLinearAveragePool(p.clone()), ins, out, y)
            }
            Op::Softmax { axis } => {
                // ORT's quantizer fixes the output range: scale 1/256, zero point 0 (u8)
                // or -128 (i8) (operators/softmax.py).
                let x = self.quant_of(i0.expect("x"))?;
                let z = if self.opts.act == DType::I8 { -128 } else { 0 };
                let name = self.name(out);
                let act = self.opts.act;
                let s = 1.0f32 / 256.0;
                let sid = self.konst(format!("{name}_scale"), scale_ty(None), || {
                    Tensor::scalar_f32(s)
                });
                let zid = self.konst(
                    format!("{name}_zero_point"),
                    TensorType::new(act, vec![]),
                    || Self::zp_tensor(act, vec![], z),
                );
                let ins = [x.q, x.scale, x.zp, sid, zid].map(Some).to_vec();
                let op = Op::QLinearSoftmax {
                    axis: *axis,
                    flatten: false,
                };
                self.emit_q(n, op, ins, out, (sid, zid, s, z))
            }
            Op::Where if n.inputs[1..].iter().flatten().all(|v| !self.g.is_const(*v)) => {
                let c = self.float_of(i0.expect("cond"))?;
                let x = self.quant_of(n.inputs[1].expect("x"))?;
                let yv = self.quant_of(n.inputs[2].expect("y"))?;
                let z = self.act_params(out);
                let ins = [c, x.q, x.scale, x.zp, yv.q, yv.scale, yv.zp, z.0, z.1]
                    .map(Some)
                    .to_vec();
                self.emit_q(n, Op::QLinearWhere, ins, out, z)
            }
            Op::Pad { pads, mode, value } if i0.is_some_and(|v| self.qmap.contains_key(&v)) => {
                // The pad value is quantized with the input's parameters (QPad).
                let x = self.qmap[&i0.expect("checked")];
                let (qlo, qhi) = self.opts.act.quant_range().unwrap_or((0, 255));
                let zp = self
                    .ng
                    .const_data(x.zp)
                    .map(|t| t.to_i64_vec()[0] as i32)
                    .unwrap_or(0);
                let code = ((value / x.s).round_ties_even() as i32 + zp).clamp(qlo, qhi);
                let name = self.name(out);
                let q = self.ng.add_node_named(
                    n.name.clone(),
                    Op::Pad {
                        pads: pads.clone(),
                        mode: *mode,
                        value: code as f32,
                    },
                    vec![Some(x.q)],
                    vec![format!("{name}_quantized")],
                )?[0];
                self.qmap.insert(out, QVal { q, ..x });
                Ok(())
            }
            Op::Unary(u @ (UnaryOp::Sigmoid | UnaryOp::LeakyRelu { .. })) => {
                let x = self.quant_of(i0.expect("x"))?;
                let y = self.act_params(out);
                let ins = [x.q, x.scale, x.zp, y.0, y.1].map(Some).to_vec();
                let op = match u {
                    UnaryOp::LeakyRelu { alpha } => Op::QLinearLeakyRelu { alpha: *alpha },
                    _ => Op::QLinearSigmoid,
                };
                self.emit_q(n, op, ins, out, y)
            }
            op if passes_through(op) && i0.is_some_and(|v| self.qmap.contains_key(&v)) => {
                let x = self.qmap[&i0.expect("checked")];
                // Extra inputs (Gather's indices) stay as they are.
                let mut ins = vec![Some(x.q)];
                for v in &n.inputs[1..] {
                    ins.push(match v {
                        Some(v) => Some(self.float_of(*v)?),
                        None => None,
                    });
                }
                let names = n
                    .outputs
                    .iter()
                    .map(|&o| format!("{}_quantized", self.name(o)))
                    .collect();
                let qs = self
                    .ng
                    .add_node_named(n.name.clone(), op.clone(), ins, names)?;
                for (&o, q) in n.outputs.iter().zip(qs) {
                    self.qmap.insert(o, QVal { q, ..x });
                }
                Ok(())
            }
            _ => self.float_node(n),
        }
    }

    /// Keep a node in float, dequantizing its quantized inputs.
    fn float_node(&mut self, n: &Node) -> QResult<()> {
        let mut ins = Vec::with_capacity(n.inputs.len());
        for v in &n.inputs {
            ins.push(match v {
                Some(v) => Some(self.float_of(*v)?),
                None => None,
            });
        }
        let names = n.outputs.iter().map(|o| self.name(*o)).collect();
        let outs = self
            .ng
            .add_node_named(n.name.clone(), n.op.clone(), ins, names)?;
        for (o, no) in n.outputs.iter().zip(outs) {
            self.fmap.insert(*o, no);
        }
        Ok(())
    }

    pub(super) fn finish(mut self) -> QResult<Graph> {
        let mut outs = Vec::new();
        for &o in &self.g.outputs {
            outs.push(self.float_of(o)?);
        }
        self.ng.outputs = outs;
        pimkit_ir::verify(&self.ng)?;
        Ok(self.ng)
    }
}
