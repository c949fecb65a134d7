//! The float-graph builder of [`super::float_equivalent`]: one quantized node at a
//! time, each quantized value of the original graph mapped to its real value.

use pimkit_ir::{DType, Graph, Node, Op, Tensor, TensorType, ValueId, infer_types};
use std::collections::HashMap;

use super::{FloatGraph, is_quantized_op};

pub(super) fn build(g: &Graph) -> Result<Option<FloatGraph>, String> {
    let mut b = Builder {
        g,
        s: Graph::new(g.name.clone()),
        map: HashMap::new(),
        q: HashMap::new(),
        requantized: HashMap::new(),
        converted: 0,
        folded: 0,
        kept: Vec::new(),
    };
    for &i in &g.inputs {
        let v = g.value(i);
        let id = b.s.add_input(v.name.clone(), v.ty.clone());
        b.map.insert(i, id);
    }
    for n in &g.nodes {
        b.node(n)?;
    }
    if b.converted + b.folded + b.kept.len() == 0 {
        return Ok(None);
    }
    for &o in &g.outputs {
        let mut sv = b.value(o)?;
        let name = &g.value(o).name;
        if b.s.value(sv).name != *name {
            // An output that became an alias keeps its name.
            sv =
                b.s.add_node_named(
                    name.clone(),
                    Op::Identity,
                    vec![Some(sv)],
                    vec![name.clone()],
                )
                .map_err(|e| e.to_string())?[0];
        }
        b.s.outputs.push(sv);
    }
    Ok(Some(FloatGraph {
        graph: b.s,
        converted: b.converted,
        folded: b.folded,
        kept: b.kept,
    }))
}

/// How a quantized tensor of `g` maps to its real value (all ids in `g`).
#[derive(Clone)]
pub(super) struct QParams {
    pub(super) scale: ValueId,
    pub(super) zp: Option<ValueId>,
    pub(super) axis: usize,
    pub(super) to: DType,
}

pub(super) struct Builder<'a> {
    pub(super) g: &'a Graph,
    pub(super) s: Graph,
    /// Value of `g` → value of the float graph.
    pub(super) map: HashMap<ValueId, ValueId>,
    /// Quantized values of `g` whose float-graph value is their real value.
    pub(super) q: HashMap<ValueId, QParams>,
    pub(super) requantized: HashMap<ValueId, ValueId>,
    pub(super) converted: usize,
    pub(super) folded: usize,
    pub(super) kept: Vec<String>,
}

impl Builder<'_> {
    /// The float graph's value for `v` (constants copied on first use).
    pub(super) fn value(&mut self, v: ValueId) -> Result<ValueId, String> {
        if let Some(&m) = self.map.get(&v) {
            return Ok(m);
        }
        let val = self.g.value(v);
        let id = match &val.def {
            pimkit_ir::ValueDef::Const(Some(t)) => self.s.add_const(val.name.clone(), t.clone()),
            pimkit_ir::ValueDef::Const(None) => {
                self.s.add_const_shape(val.name.clone(), val.ty.clone())
            }
            _ => {
                return Err(format!(
                    "value `{}` is used before it is computed",
                    val.name
                ));
            }
        };
        self.map.insert(v, id);
        Ok(id)
    }

    pub(super) fn opt(&mut self, v: Option<ValueId>) -> Result<Option<ValueId>, String> {
        v.map(|v| self.value(v)).transpose()
    }

    /// Constant data of a float-graph value.
    pub(super) fn data(&self, sv: ValueId) -> Option<&Tensor> {
        self.s.const_data(sv)
    }

    /// A node of the float graph; evaluated into constants when its inputs all are.
    pub(super) fn emit(
        &mut self,
        name: &str,
        op: Op,
        inputs: Vec<Option<ValueId>>,
        names: Vec<String>,
    ) -> Result<Vec<ValueId>, String> {
        let ins: Option<Vec<Option<&Tensor>>> = inputs
            .iter()
            .map(|i| match i {
                None => Some(None),
                Some(v) => self.data(*v).map(Some),
            })
            .collect();
        if let Some(ins) = ins.filter(|i| i.iter().any(Option::is_some)) {
            let tys: Vec<Option<&TensorType>> =
                inputs.iter().map(|i| i.map(|v| self.s.ty(v))).collect();
            let out_tys = infer_types(name, &op, &tys).map_err(|e| e.to_string())?;
            let node = Node {
                name: name.to_string(),
                op,
                inputs: Vec::new(),
                outputs: Vec::new(),
                source: None,
            };
            let outs = pimkit_interp::eval_node(&node, ins, out_tys.iter().collect())
                .map_err(|e| e.to_string())?;
            self.folded += 1;
            return Ok(outs
                .into_iter()
                .zip(names)
                .map(|(t, n)| self.s.add_const(n, t))
                .collect());
        }
        self.s
            .add_node_named(name, op, inputs, names)
            .map_err(|e| e.to_string())
    }

    /// The real value of operand `x` of `n`, quantized with operands `scale`, `zp`.
    pub(super) fn real(
        &mut self,
        n: &Node,
        x: usize,
        scale: usize,
        zp: usize,
        axis: usize,
    ) -> Result<ValueId, String> {
        let v = n
            .input(x)
            .ok_or_else(|| format!("node `{}`: operand {x} is missing", n.name))?;
        if self.q.contains_key(&v) {
            return Ok(self.map[&v]);
        }
        let sv = self.value(v)?;
        let ss = self.opt(n.input(scale))?;
        let sz = self.opt(n.input(zp))?;
        let name = format!("{}_dequantized", self.g.value(v).name);
        Ok(self.emit(
            &name,
            Op::DequantizeLinear { axis },
            vec![Some(sv), ss, sz],
            vec![name.clone()],
        )?[0])
    }

    /// The quantized (integer) form of `v` for a node that is kept.
    pub(super) fn integer(&mut self, v: ValueId) -> Result<ValueId, String> {
        let Some(p) = self.q.get(&v).cloned() else {
            return self.value(v);
        };
        if let Some(&r) = self.requantized.get(&v) {
            return Ok(r);
        }
        let (sv, ss, sz) = (self.map[&v], self.value(p.scale)?, self.opt(p.zp)?);
        let name = format!("{}_requantized", self.g.value(v).name);
        let op = Op::QuantizeLinear {
            axis: p.axis,
            to: p.to,
        };
        let r = self.emit(&name, op, vec![Some(sv), Some(ss), sz], vec![name.clone()])?[0];
        self.requantized.insert(v, r);
        Ok(r)
    }

    pub(super) fn names(&self, n: &Node) -> Vec<String> {
        n.outputs
            .iter()
            .map(|&o| self.g.value(o).name.clone())
            .collect()
    }

    /// `sv` (the real value of `g`'s `o`) clipped to what `p` can represent, as the
    /// quantization saturates: onnxruntime fuses a Relu or Relu6 after a convolution
    /// into its output range (zero point at the type's minimum), so this is the fused
    /// activation. Unchanged when the scale or zero point is not a constant scalar.
    pub(super) fn saturate(
        &mut self,
        o: ValueId,
        sv: ValueId,
        p: &QParams,
    ) -> Result<ValueId, String> {
        let scalar = |b: &mut Self, v: Option<ValueId>| -> Result<Option<f32>, String> {
            let Some(v) = v else { return Ok(Some(0.0)) };
            let sv = b.value(v)?;
            Ok(b.data(sv)
                .map(|t| t.to_f32_vec())
                .filter(|x| x.len() == 1)
                .map(|x| x[0]))
        };
        let (Some(scale), Some(zp), Some((lo, hi))) = (
            scalar(self, Some(p.scale))?,
            scalar(self, p.zp)?,
            p.to.quant_range(),
        ) else {
            return Ok(sv);
        };
        // The real values of the type's extremes, by DequantizeLinear's formula.
        let real = |q: i32| (q as f32 - zp) * scale;
        let name = format!("{}_saturated", self.g.value(o).name);
        let op = Op::Clip {
            min: Some(real(lo)),
            max: Some(real(hi)),
        };
        Ok(self.emit(&name, op, vec![Some(sv)], vec![name.clone()])?[0])
    }

    pub(super) fn reads_quantized(&self, n: &Node) -> bool {
        n.inputs.iter().flatten().any(|v| self.q.contains_key(v))
    }

    /// `n` unchanged, on the integers it reads (re-quantized where needed).
    pub(super) fn keep(&mut self, n: &Node) -> Result<(), String> {
        let mut ins = Vec::with_capacity(n.inputs.len());
        for i in &n.inputs {
            ins.push(match i {
                Some(v) => Some(self.integer(*v)?),
                None => None,
            });
        }
        if is_quantized_op(&n.op) {
            self.kept.push(format!("`{}` ({})", n.name, n.op.name()));
        }
        let outs = self.emit(&n.name, n.op.clone(), ins, self.names(n))?;
        for (&o, so) in n.outputs.iter().zip(outs) {
            self.map.insert(o, so);
        }
        Ok(())
    }
}
