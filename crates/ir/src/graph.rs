use crate::{IrError, Op, Result, Tensor, TensorType, infer_types};
use std::collections::HashMap;

/// Index of a value in [`Graph::values`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ValueId(pub u32);

/// Index of a node in [`Graph::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

impl ValueId {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}
impl NodeId {
    pub fn idx(self) -> usize {
        self.0 as usize
    }
}

/// Where a value comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueDef {
    /// A graph input the caller provides.
    Input,
    /// A constant (weight). `None` in shape-only mode: the type is known, the data is not.
    Const(Option<Tensor>),
    /// Output `index` of node `node`.
    Node { node: NodeId, index: usize },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    pub name: String,
    pub ty: TensorType,
    pub def: ValueDef,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    pub op: Op,
    /// Operands; `None` marks an omitted optional input.
    pub inputs: Vec<Option<ValueId>>,
    pub outputs: Vec<ValueId>,
    /// The source-framework operator this node implements part of, when one framework call
    /// became several nodes (PyTorch's dynamo exporter records the FX node in each ONNX
    /// node's `pkg.torch.onnx.fx_node` metadata: `scaled_dot_product_attention` exports as
    /// Transpose, MatMul, Mul, Softmax, MatMul). `None`: the node is its own operator.
    pub source: Option<String>,
}

impl Node {
    /// The operator this node belongs to: its `source`, else its own name.
    pub fn operator(&self) -> &str {
        self.source.as_deref().unwrap_or(&self.name)
    }

    /// Operand `i` (a position from [`crate::operand`]); `None` when the node has fewer
    /// inputs or the optional input is omitted.
    pub fn input(&self, i: usize) -> Option<ValueId> {
        self.inputs.get(i).copied().flatten()
    }
}

/// A dataflow graph with static shapes. Nodes are in topological order: every input of
/// node i is a graph input, a constant, or an output of a node before i.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Graph {
    pub name: String,
    pub values: Vec<Value>,
    pub nodes: Vec<Node>,
    pub inputs: Vec<ValueId>,
    pub outputs: Vec<ValueId>,
}

impl Graph {
    pub fn new(name: impl Into<String>) -> Self {
        Graph {
            name: name.into(),
            ..Default::default()
        }
    }

    pub fn value(&self, id: ValueId) -> &Value {
        &self.values[id.idx()]
    }
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.idx()]
    }
    pub fn ty(&self, id: ValueId) -> &TensorType {
        &self.values[id.idx()].ty
    }

    /// Constant data of a value, if it is a constant that carries data.
    pub fn const_data(&self, id: ValueId) -> Option<&Tensor> {
        match &self.values[id.idx()].def {
            ValueDef::Const(Some(t)) => Some(t),
            _ => None,
        }
    }
    pub fn is_const(&self, id: ValueId) -> bool {
        matches!(self.values[id.idx()].def, ValueDef::Const(_))
    }

    /// True when some constant carries no data (shape-only graph).
    pub fn is_shape_only(&self) -> bool {
        self.values
            .iter()
            .any(|v| matches!(v.def, ValueDef::Const(None)))
    }

    /// Value lookup by name (linear; build a map for repeated lookups).
    pub fn find_value(&self, name: &str) -> Option<ValueId> {
        self.values
            .iter()
            .position(|v| v.name == name)
            .map(|i| ValueId(i as u32))
    }

    fn push_value(&mut self, name: String, ty: TensorType, def: ValueDef) -> ValueId {
        let id = ValueId(self.values.len() as u32);
        self.values.push(Value { name, ty, def });
        id
    }

    /// Add a graph input.
    pub fn add_input(&mut self, name: impl Into<String>, ty: TensorType) -> ValueId {
        let id = self.push_value(name.into(), ty, ValueDef::Input);
        self.inputs.push(id);
        id
    }

    /// Add a constant with data.
    pub fn add_const(&mut self, name: impl Into<String>, t: Tensor) -> ValueId {
        let ty = t.ty();
        self.push_value(name.into(), ty, ValueDef::Const(Some(t)))
    }

    /// Add a shape-only constant (type known, data absent).
    pub fn add_const_shape(&mut self, name: impl Into<String>, ty: TensorType) -> ValueId {
        self.push_value(name.into(), ty, ValueDef::Const(None))
    }

    /// Append a node; output types come from shape inference, output names are
    /// `{node}` for a single output and `{node}:{i}` otherwise unless given.
    pub fn add_node(
        &mut self,
        name: impl Into<String>,
        op: Op,
        inputs: Vec<Option<ValueId>>,
    ) -> Result<Vec<ValueId>> {
        let name = name.into();
        let n = op.num_outputs();
        let names: Vec<String> = if n == 1 {
            vec![name.clone()]
        } else {
            (0..n).map(|i| format!("{name}:{i}")).collect()
        };
        self.add_node_named(name, op, inputs, names)
    }

    /// Append a node with explicit output names.
    pub fn add_node_named(
        &mut self,
        name: impl Into<String>,
        op: Op,
        inputs: Vec<Option<ValueId>>,
        output_names: Vec<String>,
    ) -> Result<Vec<ValueId>> {
        let name = name.into();
        for inp in inputs.iter().flatten() {
            if inp.idx() >= self.values.len() {
                return Err(IrError::Node {
                    node: name,
                    op: op.name().into(),
                    msg: format!("input value id {} does not exist", inp.0),
                });
            }
        }
        let tys: Vec<Option<&TensorType>> = inputs
            .iter()
            .map(|i| i.map(|v| &self.values[v.idx()].ty))
            .collect();
        let out_tys = infer_types(&name, &op, &tys)?;
        if output_names.len() != out_tys.len() {
            return Err(IrError::Node {
                node: name,
                op: op.name().into(),
                msg: format!(
                    "{} output names given, op produces {}",
                    output_names.len(),
                    out_tys.len()
                ),
            });
        }
        for (ty, oname) in out_tys.iter().zip(&output_names) {
            if ty.checked_bytes().is_none() {
                return Err(IrError::Node {
                    node: name,
                    op: op.name().into(),
                    msg: format!(
                        "output '{oname}': {}",
                        crate::tensor::too_large(&ty.shape, ty.dtype)
                    ),
                });
            }
        }
        let node_id = NodeId(self.nodes.len() as u32);
        let outputs: Vec<ValueId> = out_tys
            .into_iter()
            .zip(output_names)
            .enumerate()
            .map(|(index, (ty, oname))| {
                self.push_value(
                    oname,
                    ty,
                    ValueDef::Node {
                        node: node_id,
                        index,
                    },
                )
            })
            .collect();
        self.nodes.push(Node {
            name,
            op,
            inputs,
            outputs: outputs.clone(),
            source: None,
        });
        Ok(outputs)
    }

    /// Convenience: append a single-output node whose inputs are all present.
    pub fn op(&mut self, name: impl Into<String>, op: Op, inputs: &[ValueId]) -> Result<ValueId> {
        let outs = self.add_node(name, op, inputs.iter().map(|&v| Some(v)).collect())?;
        Ok(outs[0])
    }

    /// The first value with a zero-size dimension, if any: ONNX allows empty tensors and
    /// the interpreter runs them, but engines that map elements onto hardware reject them.
    pub fn first_empty_value(&self) -> Option<&Value> {
        self.values.iter().find(|v| v.ty.shape.contains(&0))
    }

    /// For each value, the nodes that read it.
    pub fn consumers(&self) -> HashMap<ValueId, Vec<NodeId>> {
        let mut m: HashMap<ValueId, Vec<NodeId>> = HashMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            for v in n.inputs.iter().flatten() {
                m.entry(*v).or_default().push(NodeId(i as u32));
            }
        }
        m
    }

    /// Drop the data of every constant (keep types): the shape-only form of the graph.
    pub fn strip_weights(&mut self) {
        for v in &mut self.values {
            if let ValueDef::Const(d) = &mut v.def {
                *d = None;
            }
        }
    }

    /// Remove nodes whose outputs reach no graph output and values nobody uses,
    /// renumbering ids. Keeps graph inputs.
    pub fn prune(&mut self) {
        let mut live_v = vec![false; self.values.len()];
        let mut live_n = vec![false; self.nodes.len()];
        for o in &self.outputs {
            live_v[o.idx()] = true;
        }
        for i in &self.inputs {
            live_v[i.idx()] = true;
        }
        for (ni, n) in self.nodes.iter().enumerate().rev() {
            if n.outputs.iter().any(|o| live_v[o.idx()]) {
                live_n[ni] = true;
                for v in n.inputs.iter().flatten() {
                    live_v[v.idx()] = true;
                }
            }
        }
        // Outputs of a live node stay (multi-output ops), even when unused.
        for (ni, n) in self.nodes.iter().enumerate() {
            if live_n[ni] {
                for o in &n.outputs {
                    live_v[o.idx()] = true;
                }
            }
        }
        let mut vmap = vec![None; self.values.len()];
        let mut nmap = vec![None; self.nodes.len()];
        let mut nv = 0u32;
        for (i, l) in live_v.iter().enumerate() {
            if *l {
                vmap[i] = Some(ValueId(nv));
                nv += 1;
            }
        }
        let mut nn = 0u32;
        for (i, l) in live_n.iter().enumerate() {
            if *l {
                nmap[i] = Some(NodeId(nn));
                nn += 1;
            }
        }
        let values = std::mem::take(&mut self.values);
        self.values = values
            .into_iter()
            .enumerate()
            .filter(|(i, _)| live_v[*i])
            .map(|(_, mut v)| {
                if let ValueDef::Node { node, .. } = &mut v.def {
                    *node = nmap[node.idx()].expect("live value from dead node");
                }
                v
            })
            .collect();
        let nodes = std::mem::take(&mut self.nodes);
        self.nodes = nodes
            .into_iter()
            .enumerate()
            .filter(|(i, _)| live_n[*i])
            .map(|(_, mut n)| {
                for v in n.inputs.iter_mut().flatten() {
                    *v = vmap[v.idx()].expect("live node reads dead value");
                }
                for v in n.outputs.iter_mut() {
                    *v = vmap[v.idx()].expect("live node output pruned");
                }
                n
            })
            .collect();
        for v in self.inputs.iter_mut().chain(self.outputs.iter_mut()) {
            *v = vmap[v.idx()].expect("graph io pruned");
        }
    }
}
