use super::NodeIn;
use crate::LoadOptions;
use crate::error::{OnnxError, Result};
use crate::proto::TensorProto;
use pimkit_ir::{Graph, Op, Tensor, TensorType, ValueDef, ValueId};
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// A constant known at import time: an initializer (data decoded lazily, so shape-only
/// loads never touch weight bytes) or the result of constant folding.
#[derive(Clone, Debug)]
pub(crate) struct ConstEntry {
    pub ty: TensorType,
    pub data: Option<Tensor>,
    /// Index into the graph initializers, for lazy decoding.
    pub init: Option<usize>,
}

pub(crate) struct Ctx<'m> {
    pub g: Graph,
    pub opts: &'m LoadOptions,
    pub base_dir: Option<&'m Path>,
    pub inits: &'m [TensorProto],
    /// ONNX names already bound to IR values.
    pub values: HashMap<String, ValueId>,
    pub consts: HashMap<String, ConstEntry>,
    /// Names read by some node or listed as graph outputs.
    pub used: HashSet<String>,
    /// Sort key of each IR constant (initializer order first), applied after import.
    pub const_order: HashMap<ValueId, usize>,
    pub init_index: HashMap<String, usize>,
    pub notes: Vec<String>,
    /// Why an ONNX value with constant inputs could not be folded (quoted when a later
    /// converter needs it as a constant).
    pub fold_failures: HashMap<String, String>,
    /// Opset version per domain ("" = ai.onnx) of the model.
    pub opsets: HashMap<String, i64>,
    /// The enclosing graph's context while a subgraph (If branch, Loop/Scan body) is
    /// converted: names the subgraph does not define are looked up there.
    pub parent: Option<&'m Ctx<'m>>,
    /// Outer values the subgraph reads (its captured inputs, in first-use order).
    pub captures: Vec<String>,
}

impl<'m> Ctx<'m> {
    pub fn err(&self, n: &NodeIn, msg: impl Into<String>) -> OnnxError {
        OnnxError::Node {
            node: n.name.to_string(),
            op: n.op_type.to_string(),
            msg: msg.into(),
        }
    }

    pub fn ir_err(n: &NodeIn, e: pimkit_ir::IrError) -> OnnxError {
        OnnxError::Ir {
            node: n.name.to_string(),
            source: Box::new(e),
        }
    }

    fn undefined(&self, n: &NodeIn, name: &str) -> OnnxError {
        self.err(
            n,
            format!(
                "input '{name}' is not defined by any earlier node, initializer or graph input \
                 (is the graph topologically sorted?)"
            ),
        )
    }

    /// Type of a named value or constant (of this graph or an enclosing one).
    pub fn type_of(&self, name: &str) -> Option<TensorType> {
        if let Some(v) = self.values.get(name) {
            return Some(self.g.ty(*v).clone());
        }
        if let Some(c) = self.consts.get(name) {
            return Some(c.ty.clone());
        }
        self.parent.and_then(|p| p.type_of(name))
    }

    /// The context (this one or an enclosing one) that defines constant `name`, unless a
    /// value of an inner graph shadows it.
    fn const_owner(&self, name: &str) -> Option<&Ctx<'m>> {
        if self.values.contains_key(name) {
            return None;
        }
        if self.consts.contains_key(name) {
            return Some(self);
        }
        self.parent.and_then(|p| p.const_owner(name))
    }

    /// Copy an enclosing graph's constant into this subgraph (so folding and attribute
    /// operands see it); true when `name` is now a local constant. An initializer of the
    /// enclosing graph is decoded here (its index refers to that graph's list), except a
    /// large one in shape-only mode, which comes over by type only.
    pub fn pull_outer_const(&mut self, name: &str) -> bool {
        if self.values.contains_key(name) {
            return false;
        }
        if self.consts.contains_key(name) {
            return true;
        }
        let Some(owner) = self.parent.and_then(|p| p.const_owner(name)) else {
            return false;
        };
        let Some(e) = owner.consts.get(name) else {
            return false;
        };
        let mut e = e.clone();
        if let (None, Some(i)) = (&e.data, e.init) {
            let small = e.ty.numel() <= 1 << 16;
            if !self.opts.shape_only || small {
                e.data = owner
                    .inits
                    .get(i)
                    .and_then(|tp| crate::tensor::decode(tp, owner.base_dir).ok());
            }
            e.init = None;
        }
        self.consts.insert(name.to_string(), e);
        true
    }

    /// Type of required input `i`.
    pub fn ty(&self, n: &NodeIn, i: usize) -> Result<TensorType> {
        let name = n
            .input(i)
            .ok_or_else(|| self.err(n, format!("required input {i} is missing")))?;
        self.type_of(name).ok_or_else(|| self.undefined(n, name))
    }

    pub fn is_const(&self, name: &str) -> bool {
        self.const_owner(name).is_some()
    }

    /// Data of a constant, decoding an initializer on first use.
    pub fn const_data(&mut self, name: &str) -> Result<Option<&Tensor>> {
        self.pull_outer_const(name);
        let Some(entry) = self.consts.get(name) else {
            return Ok(None);
        };
        if entry.data.is_none()
            && let Some(i) = entry.init
            && let Some(tp) = self.inits.get(i)
        {
            let t = crate::tensor::decode(tp, self.base_dir)?;
            if let Some(e) = self.consts.get_mut(name) {
                e.data = Some(t);
            }
        }
        Ok(self.consts.get(name).and_then(|e| e.data.as_ref()))
    }

    /// Data of input `i`, which must be a constant (it is folded into an attribute).
    /// `Ok(None)` when the optional input is absent.
    pub fn const_input(&mut self, n: &NodeIn, i: usize, what: &str) -> Result<Option<Tensor>> {
        let Some(name) = n.input(i) else {
            return Ok(None);
        };
        if !self.is_const(name) {
            if self.values.contains_key(name) {
                let why = match self.fold_failures.get(name) {
                    Some(r) => format!(" (its constant inputs could not be folded: {r})"),
                    None => String::new(),
                };
                return Err(self.err(
                    n,
                    format!(
                        "input {i} ('{name}', the {what}) is computed at run time{why}; pimkit \
                         needs it to be a constant: bind the inputs it depends on (--shape, \
                         --dim, --bind) or export the model with static shapes"
                    ),
                ));
            }
            return Err(self.undefined(n, name));
        }
        match self.const_data(name)? {
            Some(t) => Ok(Some(t.clone())),
            None => Err(self.err(n, format!("constant input {i} ('{name}') has no data"))),
        }
    }

    /// Constant input `i` as a list of i64 (shapes, axes, pads...).
    pub fn const_ints(&mut self, n: &NodeIn, i: usize, what: &str) -> Result<Option<Vec<i64>>> {
        Ok(self.const_input(n, i, what)?.map(|t| t.to_i64_vec()))
    }

    /// IR value of a named ONNX value, materializing constants on first use.
    pub fn lookup(&mut self, n: &NodeIn, name: &str) -> Result<ValueId> {
        if let Some(v) = self.values.get(name) {
            return Ok(*v);
        }
        if self.pull_outer_const(name) {
            return self.materialize(name);
        }
        // A value of an enclosing graph: the subgraph captures it as an extra input.
        if let Some(ty) = self.parent.and_then(|p| p.type_of(name)) {
            let id = self.g.add_input(name, ty);
            self.values.insert(name.to_string(), id);
            self.captures.push(name.to_string());
            return Ok(id);
        }
        Err(self.undefined(n, name))
    }

    /// Turn a known constant into an IR constant value (without data in shape-only mode).
    pub fn materialize(&mut self, name: &str) -> Result<ValueId> {
        let Some(entry) = self.consts.get(name) else {
            return Err(OnnxError::Internal(format!("constant '{name}' vanished")));
        };
        let ty = entry.ty.clone();
        let id = if self.opts.shape_only {
            self.g.add_const_shape(name, ty)
        } else {
            let t = self
                .const_data(name)?
                .cloned()
                .ok_or_else(|| OnnxError::Internal(format!("constant '{name}' has no data")))?;
            self.g.add_const(name, t)
        };
        let key = self
            .init_index
            .get(name)
            .copied()
            .unwrap_or(usize::MAX / 2 + id.idx());
        self.const_order.insert(id, key);
        self.values.insert(name.to_string(), id);
        Ok(id)
    }

    pub fn value(&mut self, n: &NodeIn, i: usize) -> Result<ValueId> {
        let name = n
            .input(i)
            .ok_or_else(|| self.err(n, format!("required input {i} is missing")))?;
        self.lookup(n, name)
    }

    pub fn opt_value(&mut self, n: &NodeIn, i: usize) -> Result<Option<ValueId>> {
        match n.input(i) {
            None => Ok(None),
            Some(name) => self.lookup(n, name).map(Some),
        }
    }

    /// All inputs as optional values, in order.
    pub fn all_values(&mut self, n: &NodeIn) -> Result<Vec<Option<ValueId>>> {
        (0..n.num_inputs()).map(|i| self.opt_value(n, i)).collect()
    }

    /// A constant created by a converter (e.g. the divisor of Mean).
    pub fn new_const(&mut self, name: String, t: Tensor) -> ValueId {
        let id = if self.opts.shape_only {
            self.g.add_const_shape(name.clone(), t.ty())
        } else {
            self.g.add_const(name.clone(), t)
        };
        self.const_order.insert(id, usize::MAX / 2 + id.idx());
        self.values.insert(name, id);
        id
    }

    /// Record a folded constant under an ONNX name.
    pub fn set_const(&mut self, name: &str, t: Tensor) {
        self.consts.insert(
            name.to_string(),
            ConstEntry {
                ty: t.ty(),
                data: Some(t),
                init: None,
            },
        );
    }

    /// Outputs from `from` on must not be read by anyone (ops whose extra outputs pimkit
    /// does not compute).
    pub fn require_unused(&self, n: &NodeIn, from: usize, what: &str) -> Result<()> {
        for (i, o) in n.outputs.iter().enumerate().skip(from) {
            if !o.is_empty() && self.used.contains(*o) {
                return Err(self.err(
                    n,
                    format!("output {i} ('{o}', {what}) is used, but pimkit does not compute it"),
                ));
            }
        }
        Ok(())
    }

    pub(crate) fn bind(&mut self, n: &NodeIn, name: &str, id: ValueId) -> Result<()> {
        if self.values.insert(name.to_string(), id).is_some() || self.consts.contains_key(name) {
            return Err(self.err(n, format!("value '{name}' is defined twice")));
        }
        Ok(())
    }

    /// Append the IR node that implements `n`; IR outputs take the ONNX output names.
    pub fn emit(
        &mut self,
        n: &NodeIn,
        op: Op,
        mut inputs: Vec<Option<ValueId>>,
    ) -> Result<Vec<ValueId>> {
        // Omitted trailing optionals are dropped so that every path yields one canonical form.
        while inputs.last() == Some(&None) {
            inputs.pop();
        }
        let count = op.num_outputs();
        self.require_unused(n, count, "not produced by the pimkit op")?;
        let names: Vec<String> = (0..count)
            .map(|i| match n.outputs.get(i) {
                Some(o) if !o.is_empty() => o.to_string(),
                _ => format!("{}:{i}", n.name),
            })
            .collect();
        let outs = self
            .g
            .add_node_named(n.name, op, inputs, names.clone())
            .map_err(|e| Self::ir_err(n, e))?;
        for (name, id) in names.iter().zip(&outs) {
            self.bind(n, name, *id)?;
        }
        Ok(outs)
    }

    /// Append an intermediate node of a multi-node expansion; its node and value are named
    /// after the ONNX node and first output with a `/suffix`.
    pub fn emit_tmp(
        &mut self,
        n: &NodeIn,
        suffix: &str,
        op: Op,
        inputs: &[ValueId],
    ) -> Result<ValueId> {
        let ins: Vec<Option<ValueId>> = inputs.iter().map(|&v| Some(v)).collect();
        self.emit_tmp_opt(n, suffix, op, ins)
    }

    /// [`Ctx::emit_tmp`] with optional (absent) inputs.
    pub fn emit_tmp_opt(
        &mut self,
        n: &NodeIn,
        suffix: &str,
        op: Op,
        inputs: Vec<Option<ValueId>>,
    ) -> Result<ValueId> {
        let base = n.outputs.first().copied().unwrap_or(n.name);
        let vname = format!("{base}/{suffix}");
        let outs = self
            .g
            .add_node_named(
                format!("{}/{suffix}", n.name),
                op,
                inputs,
                vec![vname.clone()],
            )
            .map_err(|e| Self::ir_err(n, e))?;
        self.bind(n, &vname, outs[0])?;
        Ok(outs[0])
    }

    pub fn is_input_value(&self, id: ValueId) -> bool {
        matches!(self.g.value(id).def, ValueDef::Input)
    }
}
