//! Shared machinery of the lowering: the tensor table, the nest builder and the
//! elementwise / fill / broadcast helpers every op rule uses.

use crate::error::{LoopsError, Result};
use crate::ir::*;
use pimkit_ir::{DType, Graph, Node, ValueDef, ValueId};
use std::sync::Arc;

/// Builds one nest.
pub(crate) struct NB {
    pub kind: NestKind,
    pub label: String,
    pub dims: Vec<Dim>,
    pub operands: Vec<Operand>,
    pub stores: Vec<Store>,
}

impl NB {
    pub fn new(kind: NestKind, label: impl Into<String>) -> NB {
        NB {
            kind,
            label: label.into(),
            dims: vec![],
            operands: vec![],
            stores: vec![],
        }
    }
    pub fn par(&mut self, extent: usize) -> usize {
        self.dims.push(Dim {
            kind: DimKind::Parallel,
            extent,
        });
        self.dims.len() - 1
    }
    pub fn red(&mut self, extent: usize) -> usize {
        self.dims.push(Dim {
            kind: DimKind::Reduction,
            extent,
        });
        self.dims.len() - 1
    }
    pub fn pars(&mut self, shape: &[usize]) -> Vec<usize> {
        shape.iter().map(|&e| self.par(e)).collect()
    }
    pub fn opnd(&mut self, t: TensorId, role: Role) -> usize {
        if let Some(i) = self.operands.iter().position(|o| o.tensor == t) {
            let o = &mut self.operands[i];
            if o.role != role {
                o.role = Role::InOut;
            }
            return i;
        }
        self.operands.push(Operand { tensor: t, role });
        self.operands.len() - 1
    }
    pub fn load(&mut self, t: TensorId, index: Vec<Index>) -> Expr {
        let operand = self.opnd(t, Role::In);
        Expr::Load { operand, index }
    }
    pub fn store(&mut self, t: TensorId, index: Vec<Index>, value: Expr) {
        let operand = self.opnd(t, Role::Out);
        self.stores.push(Store {
            operand,
            index,
            value,
        });
    }
}

pub(crate) fn dims_index(dims: &[usize]) -> Vec<Index> {
    dims.iter().map(|&d| Index::dim(d)).collect()
}

/// Index of an input broadcast (numpy rules, right-aligned) against output dims.
pub(crate) fn bcast_index(
    in_shape: &[usize],
    out_shape: &[usize],
    out_dims: &[usize],
) -> Vec<Index> {
    let off = out_shape.len() - in_shape.len();
    in_shape
        .iter()
        .enumerate()
        .map(|(k, &e)| {
            if e == 1 && out_shape[k + off] != 1 {
                Index::c(0)
            } else {
                Index::dim(out_dims[k + off])
            }
        })
        .collect()
}

/// The lowering state.
pub(crate) struct Lowerer<'g> {
    pub g: &'g Graph,
    pub p: Program,
    vmap: Vec<Option<TensorId>>,
    pub node_idx: usize,
    counter: usize,
}

impl<'g> Lowerer<'g> {
    pub fn new(g: &'g Graph) -> Self {
        let mut l = Lowerer {
            g,
            p: Program {
                name: g.name.clone(),
                tensors: vec![],
                nests: vec![],
                allocs: vec![],
                inputs: vec![],
                outputs: vec![],
            },
            vmap: vec![None; g.values.len()],
            node_idx: 0,
            counter: 0,
        };
        for (i, &v) in g.inputs.iter().enumerate() {
            let val = g.value(v);
            let t = l.new_tensor(
                &val.name,
                val.ty.dtype,
                &val.ty.shape,
                TensorDef::Input { index: i },
            );
            l.vmap[v.idx()] = Some(t);
            l.p.inputs.push(t);
        }
        l
    }

    pub fn node(&self) -> &'g Node {
        &self.g.nodes[self.node_idx]
    }
    pub fn begin_node(&mut self, ni: usize) {
        self.node_idx = ni;
        self.counter = 0;
    }

    pub fn err(&self, msg: impl Into<String>) -> LoopsError {
        let n = self.node();
        LoopsError::Node {
            node: n.name.clone(),
            op: n.op.name().into(),
            msg: msg.into(),
        }
    }
    pub fn unsupported(&self, msg: impl Into<String>) -> LoopsError {
        let n = self.node();
        LoopsError::Unsupported {
            node: n.name.clone(),
            op: n.op.name().into(),
            msg: msg.into(),
        }
    }

    pub fn new_tensor(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[usize],
        def: TensorDef,
    ) -> TensorId {
        self.p.tensors.push(TensorInfo {
            name: name.to_string(),
            dtype,
            shape: shape.to_vec(),
            def,
            offset: 0,
            strides: row_major(shape),
            alloc: None,
        });
        self.p.tensors.len() - 1
    }

    /// A fresh nest result named after the current node and `label`.
    pub fn result(&mut self, label: &str, dtype: DType, shape: &[usize]) -> TensorId {
        self.counter += 1;
        let name = format!("{}.{}", self.node().name, label);
        self.new_tensor(
            &name,
            dtype,
            shape,
            TensorDef::Result {
                nest: usize::MAX,
                init: None,
            },
        )
    }
    /// A result that updates `init`'s buffer (destination-passing style).
    pub fn result_init(&mut self, label: &str, init: TensorId) -> TensorId {
        let (dt, sh) = (
            self.p.tensors[init].dtype,
            self.p.tensors[init].shape.clone(),
        );
        let t = self.result(label, dt, &sh);
        self.p.tensors[t].def = TensorDef::Result {
            nest: usize::MAX,
            init: Some(init),
        };
        t
    }

    pub fn ty(&self, t: TensorId) -> (DType, Vec<usize>) {
        (self.p.tensors[t].dtype, self.p.tensors[t].shape.clone())
    }
    pub fn shape(&self, t: TensorId) -> Vec<usize> {
        self.p.tensors[t].shape.clone()
    }
    pub fn dtype(&self, t: TensorId) -> DType {
        self.p.tensors[t].dtype
    }
    /// Value of a one-element constant folded to a scalar.
    pub fn scalar(&self, t: TensorId) -> Option<f64> {
        match self.p.tensors[t].def {
            TensorDef::Scalar(v) => Some(v),
            // only folded scalars have a value here
            _ => None,
        }
    }

    /// The tensor of a graph value (constants are created on first use).
    pub fn value(&mut self, v: ValueId) -> Result<TensorId> {
        if let Some(t) = self.vmap[v.idx()] {
            return Ok(t);
        }
        let val = self.g.value(v);
        let t = match &val.def {
            ValueDef::Const(data) => {
                let def = match data {
                    Some(d) if d.numel() == 1 => TensorDef::Scalar(d.to_f64_vec()[0]),
                    Some(d) => {
                        // The nests hold their own copy: a model whose weights fill the
                        // memory is an error naming the constant, not an abort.
                        pimkit_ir::memory::check_fits(
                            val.ty.bytes() as u64,
                            &format!("copying constant '{}' {}", val.name, val.ty),
                        )
                        .map_err(|m| self.err(m))?;
                        TensorDef::Const {
                            data: Some(Arc::new(d.clone())),
                        }
                    }
                    None => TensorDef::Const { data: None },
                };
                self.new_tensor(&val.name, val.ty.dtype, &val.ty.shape, def)
            }
            // a node output not yet lowered
            _ => {
                return Err(self.err(format!(
                    "value '{}' is used before it is defined (graph not in topological order?)",
                    val.name
                )));
            }
        };
        self.vmap[v.idx()] = Some(t);
        Ok(t)
    }

    /// Tensor of required input `i` of the current node.
    pub fn input(&mut self, i: usize) -> Result<TensorId> {
        let n = self.node();
        match n.inputs.get(i).copied().flatten() {
            Some(v) => self.value(v),
            None => Err(self.err(format!("required input {i} is missing"))),
        }
    }
    pub fn opt_input(&mut self, i: usize) -> Result<Option<TensorId>> {
        let n = self.node();
        match n.inputs.get(i).copied().flatten() {
            Some(v) => Ok(Some(self.value(v)?)),
            None => Ok(None),
        }
    }
    /// Declared type of output `i` of the current node.
    pub fn out_ty(&self, i: usize) -> (DType, Vec<usize>) {
        let ty = self.g.ty(self.node().outputs[i]);
        (ty.dtype, ty.shape.clone())
    }

    /// Append a built nest; unit dims are dropped (they are not loops).
    pub fn push(&mut self, mut nb: NB) -> usize {
        drop_unit_dims(&mut nb);
        let id = self.p.nests.len();
        let node = self.node();
        for o in &nb.operands {
            if o.role != Role::In
                && let TensorDef::Result { nest, .. } = &mut self.p.tensors[o.tensor].def
                && *nest == usize::MAX
            {
                *nest = id;
            }
        }
        self.p.nests.push(Nest {
            id,
            op: node.op.name().to_string(),
            node: node.name.clone(),
            source: node.operator().to_string(),
            kind: nb.kind,
            label: nb.label,
            dims: nb.dims,
            operands: nb.operands,
            stores: nb.stores,
        });
        id
    }

    /// Fill a fresh tensor with a constant (`linalg.fill`).
    pub fn fill(&mut self, label: &str, dt: DType, shape: &[usize], v: f64) -> TensorId {
        let t = self.result(label, dt, shape);
        let mut nb = NB::new(NestKind::Fill, label);
        let d = nb.pars(shape);
        nb.store(t, dims_index(&d), Expr::k(v, dt));
        self.push(nb);
        t
    }

    /// One elementwise nest over the broadcast of `ins`; `f` gets one load per input.
    pub fn map(
        &mut self,
        label: &str,
        kind: NestKind,
        ins: &[TensorId],
        out_dt: DType,
        f: impl FnOnce(Vec<Expr>) -> Expr,
    ) -> Result<TensorId> {
        let mut shape: Vec<usize> = vec![];
        for &t in ins {
            shape = pimkit_ir::broadcast_shapes(&shape, &self.p.tensors[t].shape)
                .ok_or_else(|| self.err("operand shapes do not broadcast"))?;
        }
        self.map_to(label, kind, ins, out_dt, &shape, f)
    }

    /// Like [`Lowerer::map`] with an explicit output shape (inputs broadcast to it).
    pub fn map_to(
        &mut self,
        label: &str,
        kind: NestKind,
        ins: &[TensorId],
        out_dt: DType,
        shape: &[usize],
        f: impl FnOnce(Vec<Expr>) -> Expr,
    ) -> Result<TensorId> {
        let out = self.result(label, out_dt, shape);
        let mut nb = NB::new(kind, label);
        let d = nb.pars(shape);
        let loads = ins
            .iter()
            .map(|&t| {
                let ix = bcast_index(&self.p.tensors[t].shape, shape, &d);
                nb.load(t, ix)
            })
            .collect();
        nb.store(out, dims_index(&d), f(loads));
        self.push(nb);
        Ok(out)
    }

    /// Bind the node's outputs to tensors and name them after the graph values.
    pub fn bind_outputs(&mut self, node: &Node, outs: Vec<TensorId>) -> Result<()> {
        if outs.len() != node.outputs.len() {
            return Err(self.err(format!(
                "lowering produced {} outputs, the node has {}",
                outs.len(),
                node.outputs.len()
            )));
        }
        for (v, t) in node.outputs.iter().zip(outs) {
            let ty = self.g.ty(*v);
            let ti = &self.p.tensors[t];
            if ti.shape != ty.shape || ti.dtype != ty.dtype {
                return Err(self.err(format!(
                    "internal: lowered output is {}{:?}, graph says {}",
                    ti.dtype, ti.shape, ty
                )));
            }
            self.p.tensors[t].name = self.g.value(*v).name.clone();
            self.vmap[v.idx()] = Some(t);
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<Program> {
        for &o in &self.g.outputs {
            let t = match self.vmap[o.idx()] {
                Some(t) => t,
                None => self.value(o)?,
            };
            self.p.outputs.push(t);
        }
        Ok(self.p)
    }
}

/// Remove extent-1 dims: their index is 0 (they are not loops in scf either).
fn drop_unit_dims(nb: &mut NB) {
    if nb.dims.iter().all(|d| d.extent != 1) {
        return;
    }
    let mut map = vec![None; nb.dims.len()];
    let mut kept = vec![];
    for (i, d) in nb.dims.iter().enumerate() {
        if d.extent != 1 {
            map[i] = Some(kept.len());
            kept.push(d.clone());
        }
    }
    nb.dims = kept;
    for s in &mut nb.stores {
        remap_index(&mut s.index, &map);
        remap_expr(&mut s.value, &map);
    }
}

fn remap_index(ix: &mut [Index], map: &[Option<usize>]) {
    for i in ix {
        i.terms = i
            .terms
            .iter()
            .filter_map(|&(d, c)| map[d].map(|nd| (nd, c)))
            .collect();
        if let Some(e) = &mut i.dynamic {
            remap_expr(e, map);
        }
    }
}

fn remap_expr(e: &mut Expr, map: &[Option<usize>]) {
    match e {
        Expr::Load { index, .. } => remap_index(index, map),
        Expr::Const { .. } => {}
        Expr::DimIndex(d) => match map[*d] {
            Some(nd) => *d = nd,
            None => *e = Expr::i(0),
        },
        Expr::Unary(_, a) | Expr::Cast(_, a) => remap_expr(a, map),
        Expr::Binary(_, a, b) => {
            remap_expr(a, map);
            remap_expr(b, map);
        }
        Expr::Select(c, a, b) | Expr::Fma(c, a, b) => {
            remap_expr(c, map);
            remap_expr(a, map);
            remap_expr(b, map);
        }
    }
}
