//! The float op of each quantized op (module doc of `dequant`).

use super::builder::{Builder, QParams};
use pimkit_ir::operand::{
    qgemm as qg, qlinear_concat as qcat, qlinear_conv as qc, qlinear_matmul as qm,
    qlinear_unary as qu, qlinear_where as qw, quantize_linear as ql,
};
use pimkit_ir::{BinaryOp, Node, Op, PoolKind, Tensor, UnaryOp, ValueId};

impl Builder<'_> {
    pub(super) fn node(&mut self, n: &Node) -> Result<(), String> {
        use Op as O;
        let g = self.g;
        let rank = |v: Option<ValueId>| v.map_or(0, |v| g.ty(v).rank());
        let r = |b: &mut Self, x, s, z, axis| b.real(n, x, s, z, axis);
        match &n.op {
            O::QuantizeLinear { axis, to } => {
                let x = n.input(ql::X).ok_or("QuantizeLinear without input")?;
                let sx = self.value(x)?;
                if self.s.ty(sx).dtype.is_float()
                    && let Some(scale) = n.input(ql::SCALE)
                {
                    let p = QParams {
                        scale,
                        zp: n.input(ql::ZERO_POINT),
                        axis: *axis,
                        to: *to,
                    };
                    let sv = self.saturate(n.outputs[0], sx, &p)?;
                    self.map.insert(n.outputs[0], sv);
                    self.q.insert(n.outputs[0], p);
                    self.converted += 1;
                    return Ok(());
                }
                self.keep(n)
            }
            O::DequantizeLinear { axis } => {
                let v = r(self, ql::X, ql::SCALE, ql::ZERO_POINT, *axis)?;
                self.map.insert(n.outputs[0], v);
                self.converted += 1;
                Ok(())
            }
            O::QLinearConv(a) => {
                let x = r(self, qc::X, qc::X_SCALE, qc::X_ZERO_POINT, 0)?;
                let w = r(self, qc::W, qc::W_SCALE, qc::W_ZERO_POINT, 0)?;
                let b = match n.input(qc::B) {
                    None => None,
                    Some(_) => Some(self.bias(n, qc::B, &[qc::X_SCALE, qc::W_SCALE], 1.0, 0)?),
                };
                self.float(
                    n,
                    O::Conv(a.clone()),
                    vec![Some(x), Some(w), b],
                    qc::Y_SCALE,
                    qc::Y_ZERO_POINT,
                )
            }
            O::QLinearMatMul => {
                let a_axis = rank(n.input(qm::A)).saturating_sub(2);
                let b_axis = rank(n.input(qm::B)).saturating_sub(1);
                let a = r(self, qm::A, qm::A_SCALE, qm::A_ZERO_POINT, a_axis)?;
                let b = r(self, qm::B, qm::B_SCALE, qm::B_ZERO_POINT, b_axis)?;
                self.float(
                    n,
                    O::MatMul,
                    vec![Some(a), Some(b)],
                    qm::Y_SCALE,
                    qm::Y_ZERO_POINT,
                )
            }
            O::QGemm {
                alpha,
                trans_a,
                trans_b,
            } => {
                let a = r(self, qg::A, qg::A_SCALE, qg::A_ZERO_POINT, 0)?;
                let b = r(
                    self,
                    qg::B,
                    qg::B_SCALE,
                    qg::B_ZERO_POINT,
                    usize::from(!*trans_b),
                )?;
                // Y = alpha·(A−a_zp)(B−b_zp)·a_s·b_s + C·alpha·a_s·b_s (the interpreter's qgemm).
                let c = match n.input(qg::C) {
                    None => None,
                    Some(c) => {
                        let axis = self.g.ty(c).rank().saturating_sub(1);
                        Some(self.bias(n, qg::C, &[qg::A_SCALE, qg::B_SCALE], *alpha, axis)?)
                    }
                };
                let op = O::Gemm {
                    alpha: *alpha,
                    beta: 1.0,
                    trans_a: *trans_a,
                    trans_b: *trans_b,
                };
                self.float(
                    n,
                    op,
                    vec![Some(a), Some(b), c],
                    qg::Y_SCALE,
                    qg::Y_ZERO_POINT,
                )
            }
            O::QLinearAdd | O::QLinearMul => {
                let a = r(self, qm::A, qm::A_SCALE, qm::A_ZERO_POINT, 0)?;
                let b = r(self, qm::B, qm::B_SCALE, qm::B_ZERO_POINT, 0)?;
                let op = if matches!(n.op, O::QLinearAdd) {
                    BinaryOp::Add
                } else {
                    BinaryOp::Mul
                };
                self.float(
                    n,
                    O::Binary(op),
                    vec![Some(a), Some(b)],
                    qm::Y_SCALE,
                    qm::Y_ZERO_POINT,
                )
            }
            O::QLinearConcat { axis } => {
                let mut ins = Vec::new();
                for x in (qcat::FIRST..n.inputs.len()).step_by(qcat::STRIDE) {
                    let (s, z) = (x + qcat::SCALE_OFFSET, x + qcat::ZERO_POINT_OFFSET);
                    ins.push(Some(r(self, x, s, z, 0)?));
                }
                self.float(
                    n,
                    O::Concat { axis: *axis },
                    ins,
                    qcat::Y_SCALE,
                    qcat::Y_ZERO_POINT,
                )
            }
            O::QLinearWhere => {
                let c = self.opt(n.input(qw::CONDITION))?;
                let x = r(self, qw::X, qw::X_SCALE, qw::X_ZERO_POINT, 0)?;
                let y = r(self, qw::Y, qw::Y_SCALE, qw::Y_ZERO_POINT, 0)?;
                self.float(
                    n,
                    O::Where,
                    vec![c, Some(x), Some(y)],
                    qw::Z_SCALE,
                    qw::Z_ZERO_POINT,
                )
            }
            O::QLinearGlobalAveragePool {
                channels_last: false,
            } => self.unary(n, O::GlobalPool(PoolKind::Avg)),
            O::QLinearAveragePool(a) => self.unary(n, O::Pool(a.clone())),
            O::QLinearSigmoid => self.unary(n, O::Unary(UnaryOp::Sigmoid)),
            O::QLinearLeakyRelu { alpha } => {
                self.unary(n, O::Unary(UnaryOp::LeakyRelu { alpha: *alpha }))
            }
            O::QLinearSoftmax { axis, flatten }
                if !*flatten || *axis + 1 == rank(n.input(qu::X)) =>
            {
                self.unary(n, O::Softmax { axis: *axis })
            }
            op if commutes(op) && self.reads_quantized(n) => {
                let mut ins = Vec::with_capacity(n.inputs.len());
                for i in &n.inputs {
                    ins.push(match i {
                        Some(v) if self.q.contains_key(v) => Some(self.map[v]),
                        Some(v) => Some(self.value(*v)?),
                        None => None,
                    });
                }
                let p = n
                    .inputs
                    .iter()
                    .flatten()
                    .find_map(|v| self.q.get(v))
                    .cloned();
                let outs = self.emit(&n.name, op.clone(), ins, self.names(n))?;
                for (&o, so) in n.outputs.iter().zip(outs) {
                    self.map.insert(o, so);
                    if let Some(p) = &p {
                        self.q.insert(o, p.clone());
                    }
                }
                Ok(())
            }
            _ => self.keep(n),
        }
    }

    /// A QLinear op of one quantized input (X, X_scale, X_zp, Y_scale, Y_zp).
    fn unary(&mut self, n: &Node, op: Op) -> Result<(), String> {
        let x = self.real(n, qu::X, qu::X_SCALE, qu::X_ZERO_POINT, 0)?;
        self.float(n, op, vec![Some(x)], qu::Y_SCALE, qu::Y_ZERO_POINT)
    }

    /// An int32 bias/C operand as floats: b · alpha · Π scales (per output channel).
    fn bias(
        &mut self,
        n: &Node,
        b: usize,
        scales: &[usize],
        alpha: f32,
        axis: usize,
    ) -> Result<ValueId, String> {
        let mut scale = self.value(n.input(scales[0]).ok_or("a scale is missing")?)?;
        for &s in &scales[1..] {
            let sv = self.value(n.input(s).ok_or("a scale is missing")?)?;
            let name = format!("{}_bias_scale", n.name);
            scale = self.emit(
                &name,
                Op::Binary(BinaryOp::Mul),
                vec![Some(scale), Some(sv)],
                vec![name.clone()],
            )?[0];
        }
        if alpha != 1.0 {
            let a = self
                .s
                .add_const(format!("{}_alpha", n.name), Tensor::scalar_f32(alpha));
            let name = format!("{}_bias_scale_alpha", n.name);
            scale = self.emit(
                &name,
                Op::Binary(BinaryOp::Mul),
                vec![Some(scale), Some(a)],
                vec![name.clone()],
            )?[0];
        }
        let bv = self.value(n.input(b).ok_or("the bias is missing")?)?;
        let name = format!(
            "{}_dequantized",
            self.g.value(n.input(b).unwrap_or(n.outputs[0])).name
        );
        Ok(self.emit(
            &name,
            Op::DequantizeLinear { axis },
            vec![Some(bv), Some(scale), None],
            vec![name.clone()],
        )?[0])
    }

    /// The float op replacing quantized node `n`; its output is the real value of `n`'s
    /// (quantized with operands `y_scale`, `y_zp` when `n`'s output is an integer).
    fn float(
        &mut self,
        n: &Node,
        op: Op,
        ins: Vec<Option<ValueId>>,
        y_scale: usize,
        y_zp: usize,
    ) -> Result<(), String> {
        let o = n.outputs[0];
        let mut so = self.emit(&n.name, op, ins, self.names(n))?[0];
        let to = self.g.ty(o).dtype;
        if !to.is_float()
            && let Some(scale) = n.input(y_scale)
        {
            let p = QParams {
                scale,
                zp: n.input(y_zp),
                axis: 0,
                to,
            };
            so = self.saturate(o, so, &p)?;
            self.q.insert(o, p);
        }
        self.map.insert(o, so);
        self.converted += 1;
        Ok(())
    }
}

/// Ops that commute with a positive affine map applied to their data operand: run on
/// the real values they give the real value of their quantized result.
fn commutes(op: &Op) -> bool {
    matches!(
        op,
        Op::Identity
            | Op::Reshape { .. }
            | Op::Transpose { .. }
            | Op::Concat { .. }
            | Op::Split { .. }
            | Op::Slice { .. }
            | Op::Gather { .. }
            | Op::Expand { .. }
            | Op::Tile { .. }
            | Op::Resize(_)
            | Op::GlobalPool(PoolKind::Max)
    ) || matches!(op, Op::Pool(a) if a.kind == PoolKind::Max)
}
