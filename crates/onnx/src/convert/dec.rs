//! A small builder for converters that decompose one ONNX node into several IR nodes
//! (Attention, the normalizations, DepthToSpace, ...). Intermediate nodes and values are
//! named `<node>/<op><k>` (values after the node's first output); the nodes that produce
//! the ONNX outputs carry the ONNX names, so every engine sees ordinary IR ops.

use super::{Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp, DType, Op, ReduceKind, Tensor, TensorType, UnaryOp, ValueId};

pub(crate) struct Dec<'c, 'm, 'a> {
    pub ctx: &'c mut Ctx<'m>,
    pub n: &'c NodeIn<'a>,
    k: usize,
}

impl<'c, 'm, 'a> Dec<'c, 'm, 'a> {
    pub fn new(ctx: &'c mut Ctx<'m>, n: &'c NodeIn<'a>) -> Self {
        Dec { ctx, n, k: 0 }
    }

    pub fn ty(&self, v: ValueId) -> TensorType {
        self.ctx.g.ty(v).clone()
    }
    pub fn shape(&self, v: ValueId) -> Vec<usize> {
        self.ctx.g.ty(v).shape.clone()
    }
    pub fn dtype(&self, v: ValueId) -> DType {
        self.ctx.g.ty(v).dtype
    }

    /// An intermediate node with one output.
    pub fn op(&mut self, op: Op, ins: &[ValueId]) -> Result<ValueId> {
        self.k += 1;
        let suffix = format!("{}{}", op.name().to_lowercase(), self.k);
        self.ctx.emit_tmp(self.n, &suffix, op, ins)
    }

    /// An intermediate node with one output and optional inputs.
    pub fn op_opt(&mut self, op: Op, ins: Vec<Option<ValueId>>) -> Result<ValueId> {
        self.k += 1;
        let suffix = format!("{}{}", op.name().to_lowercase(), self.k);
        self.ctx.emit_tmp_opt(self.n, &suffix, op, ins)
    }

    /// A constant made by the decomposition.
    pub fn konst(&mut self, t: Tensor) -> ValueId {
        self.k += 1;
        let name = format!("{}/c{}", self.n.name, self.k);
        self.ctx.new_const(name, t)
    }
    /// A scalar constant of `dtype`.
    pub fn scalar(&mut self, dtype: DType, v: f64) -> ValueId {
        self.konst(Tensor::from_f64_as(dtype, vec![], &[v]))
    }
    pub fn i64s(&mut self, shape: Vec<usize>, v: Vec<i64>) -> ValueId {
        self.konst(Tensor::from_i64(shape, v))
    }

    /// Whether ONNX output `i` is requested (present and non-empty).
    pub fn wants(&self, i: usize) -> bool {
        self.n.outputs.get(i).is_some_and(|o| !o.is_empty())
    }

    /// The node producing ONNX output `i` (named after the ONNX node for output 0).
    pub fn out(&mut self, i: usize, op: Op, ins: &[ValueId]) -> Result<ValueId> {
        self.out_node(i, i == 0, op, ins)
    }

    /// The node producing ONNX output `i`, named after the ONNX node when `main`.
    pub fn out_node(&mut self, i: usize, main: bool, op: Op, ins: &[ValueId]) -> Result<ValueId> {
        let vname = self.n.outputs[i].to_string();
        let node = if main {
            self.n.name.to_string()
        } else {
            format!("{}/out{i}", self.n.name)
        };
        let outs = self
            .ctx
            .g
            .add_node_named(
                node,
                op,
                ins.iter().map(|&v| Some(v)).collect(),
                vec![vname.clone()],
            )
            .map_err(|e| Ctx::ir_err(self.n, e))?;
        self.ctx.bind(self.n, &vname, outs[0])?;
        Ok(outs[0])
    }

    pub fn unary(&mut self, u: UnaryOp, x: ValueId) -> Result<ValueId> {
        self.op(Op::Unary(u), &[x])
    }
    pub fn bin(&mut self, b: BinaryOp, x: ValueId, y: ValueId) -> Result<ValueId> {
        self.op(Op::Binary(b), &[x, y])
    }
    pub fn reshape(&mut self, x: ValueId, shape: Vec<usize>) -> Result<ValueId> {
        if self.shape(x) == shape {
            return Ok(x);
        }
        self.op(Op::Reshape { shape }, &[x])
    }
    pub fn transpose(&mut self, x: ValueId, perm: Vec<usize>) -> Result<ValueId> {
        if perm.iter().enumerate().all(|(i, &p)| i == p) {
            return Ok(x);
        }
        self.op(Op::Transpose { perm }, &[x])
    }
    pub fn reduce(
        &mut self,
        kind: ReduceKind,
        x: ValueId,
        axes: Vec<usize>,
        keepdims: bool,
    ) -> Result<ValueId> {
        self.op(
            Op::Reduce {
                kind,
                axes,
                keepdims,
            },
            &[x],
        )
    }
    pub fn cast(&mut self, x: ValueId, to: DType) -> Result<ValueId> {
        if self.dtype(x) == to {
            return Ok(x);
        }
        self.op(Op::cast(to), &[x])
    }
}
