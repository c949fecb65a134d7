//! Control flow: ONNX If, Loop and Scan with their subgraphs.
//!
//! A subgraph is an ordinary [`Graph`] whose inputs are the op's formal parameters
//! followed by the values it captures from the enclosing graph (outer-scope references
//! are lambda-lifted by the importer: each becomes an explicit input of the op and of the
//! body). Shapes stay static: both branches of an If produce the same types, a Scan's
//! length is its inputs' extent, and a Loop with scan outputs needs a constant trip count.

use crate::{DType, Graph, IrError, Result, TensorType};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A body graph owned by a control-flow op.
#[derive(Clone, Debug, PartialEq)]
pub struct Subgraph(pub Box<Graph>);

impl Subgraph {
    pub fn new(g: Graph) -> Self {
        Subgraph(Box::new(g))
    }
    pub fn graph(&self) -> &Graph {
        &self.0
    }
    /// Types of the subgraph's inputs, in order.
    pub fn input_types(&self) -> Vec<&TensorType> {
        self.0.inputs.iter().map(|&v| self.0.ty(v)).collect()
    }
    /// Types of the subgraph's outputs, in order.
    pub fn output_types(&self) -> Vec<&TensorType> {
        self.0.outputs.iter().map(|&v| self.0.ty(v)).collect()
    }
}

/// Serialized as its stable text form (`dump`); op attributes are written for reports,
/// never read back.
impl Serialize for Subgraph {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&crate::dump(&self.0))
    }
}

impl<'de> Deserialize<'de> for Subgraph {
    fn deserialize<D: Deserializer<'de>>(_: D) -> std::result::Result<Self, D::Error> {
        Err(serde::de::Error::custom(
            "subgraphs cannot be deserialized; import the model instead",
        ))
    }
}

/// ONNX Scan's per-input and per-output axes and directions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ScanAttrs {
    /// Number of state variables (the first inputs and outputs).
    pub n_state: usize,
    /// Number of scan inputs (after the states; the rest of the inputs are captures).
    pub n_scan_in: usize,
    pub in_axes: Vec<usize>,
    pub in_reverse: Vec<bool>,
    pub out_axes: Vec<usize>,
    pub out_reverse: Vec<bool>,
}

fn err(node: &str, op: &str, msg: impl Into<String>) -> IrError {
    IrError::Node {
        node: node.into(),
        op: op.into(),
        msg: msg.into(),
    }
}

fn get<'a>(
    ins: &[Option<&'a TensorType>],
    i: usize,
    node: &str,
    op: &str,
) -> Result<&'a TensorType> {
    ins.get(i)
        .copied()
        .flatten()
        .ok_or_else(|| err(node, op, format!("required input {i} is missing")))
}

/// The node's inputs from `from` on must have exactly the body's input types from
/// `body_from` on (the captured values).
fn check_passed(
    node: &str,
    op: &str,
    what: &str,
    ins: &[Option<&TensorType>],
    from: usize,
    body: &Subgraph,
    body_from: usize,
) -> Result<()> {
    let want = body.input_types();
    let got = ins.len().saturating_sub(from);
    if want.len() < body_from || want.len() - body_from != got {
        return Err(err(
            node,
            op,
            format!(
                "{what} takes {} values after its formal inputs, the node passes {got}",
                want.len().saturating_sub(body_from)
            ),
        ));
    }
    for (k, w) in want[body_from..].iter().enumerate() {
        let g = get(ins, from + k, node, op)?;
        if g != *w {
            return Err(err(
                node,
                op,
                format!("input {} is {g} but {what} expects {w}", from + k),
            ));
        }
    }
    Ok(())
}

fn one_element_bool(t: &TensorType) -> bool {
    t.dtype == DType::Bool && t.numel() == 1
}

/// If: 0 = cond (one bool), then both branches' captured values.
pub(crate) fn infer_if(
    node: &str,
    then_b: &Subgraph,
    else_b: &Subgraph,
    ins: &[Option<&TensorType>],
) -> Result<Vec<TensorType>> {
    let op = "If";
    let c = get(ins, 0, node, op)?;
    if !one_element_bool(c) {
        return Err(err(node, op, format!("the condition is {c}, not one bool")));
    }
    check_passed(node, op, "the then branch", ins, 1, then_b, 0)?;
    check_passed(node, op, "the else branch", ins, 1, else_b, 0)?;
    let (t, e) = (then_b.output_types(), else_b.output_types());
    if t != e {
        let show = |v: &[&TensorType]| {
            v.iter()
                .map(|t| t.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        };
        return Err(err(
            node,
            op,
            format!(
                "the branches produce different types (then: {}; else: {}); pimkit needs static \
                 shapes: bind the inputs the condition depends on (--bind) so the If folds",
                show(&t),
                show(&e)
            ),
        ));
    }
    Ok(t.into_iter().cloned().collect())
}

/// Loop: 0 = M (i64, optional), 1 = cond (bool, optional), then `n_carried` initial
/// values, then captures. Body: (iteration i64, cond bool, carried..., captures...) ->
/// (cond, carried..., scan slices...). Outputs: the final carried values, then each scan
/// output stacked along a new axis 0 of `scan_len` iterations.
pub(crate) fn infer_loop(
    node: &str,
    body: &Subgraph,
    n_carried: usize,
    scan_len: Option<usize>,
    ins: &[Option<&TensorType>],
) -> Result<Vec<TensorType>> {
    let op = "Loop";
    let bi = body.input_types();
    let bo = body.output_types();
    if bi.len() < 2 + n_carried || bo.len() < 1 + n_carried {
        return Err(err(
            node,
            op,
            format!(
                "the body has {} inputs and {} outputs; it needs at least {} and {} for {n_carried} carried values",
                bi.len(),
                bo.len(),
                2 + n_carried,
                1 + n_carried
            ),
        ));
    }
    if let Some(m) = ins.first().copied().flatten()
        && !(m.dtype == DType::I64 && m.numel() == 1)
    {
        return Err(err(node, op, format!("the trip count is {m}, not one i64")));
    }
    if let Some(c) = ins.get(1).copied().flatten()
        && !one_element_bool(c)
    {
        return Err(err(node, op, format!("the condition is {c}, not one bool")));
    }
    if !(bi[0].dtype == DType::I64 && bi[0].numel() == 1 && one_element_bool(bi[1])) {
        return Err(err(
            node,
            op,
            "the body's first inputs must be the iteration number (one i64) and the condition (one bool)",
        ));
    }
    if !one_element_bool(bo[0]) {
        return Err(err(
            node,
            op,
            "the body's first output must be the condition (one bool)",
        ));
    }
    for k in 0..n_carried {
        let init = get(ins, 2 + k, node, op)?;
        if init != bi[2 + k] || init != bo[1 + k] {
            return Err(err(
                node,
                op,
                format!(
                    "carried value {k} is {init} initially, {} in and {} out of the body; \
                     pimkit needs its shape to stay the same",
                    bi[2 + k],
                    bo[1 + k]
                ),
            ));
        }
    }
    check_passed(
        node,
        op,
        "the body",
        ins,
        2 + n_carried,
        body,
        2 + n_carried,
    )?;
    let mut out: Vec<TensorType> = bo[1..1 + n_carried].iter().map(|t| (*t).clone()).collect();
    let scans = &bo[1 + n_carried..];
    if !scans.is_empty() {
        let Some(len) = scan_len else {
            return Err(err(
                node,
                op,
                "its scan outputs have a length known only at run time (no constant trip count); \
                 bind the trip count (--bind) or export with a fixed number of iterations",
            ));
        };
        for t in scans {
            let mut s = vec![len];
            s.extend(&t.shape);
            out.push(TensorType::new(t.dtype, s));
        }
    }
    Ok(out)
}

/// Scan (opset 9+): states, then scan inputs sliced along their axes, then captures.
pub(crate) fn infer_scan(
    node: &str,
    body: &Subgraph,
    a: &ScanAttrs,
    ins: &[Option<&TensorType>],
) -> Result<Vec<TensorType>> {
    let op = "Scan";
    let bi = body.input_types();
    let bo = body.output_types();
    let n_scan_out = bo.len().saturating_sub(a.n_state);
    if bi.len() < a.n_state + a.n_scan_in
        || bo.len() < a.n_state
        || a.in_axes.len() != a.n_scan_in
        || a.in_reverse.len() != a.n_scan_in
        || a.out_axes.len() != n_scan_out
        || a.out_reverse.len() != n_scan_out
    {
        return Err(err(
            node,
            op,
            "the body does not match the scan's state/input/output counts",
        ));
    }
    let mut len = None;
    for k in 0..a.n_scan_in {
        let t = get(ins, a.n_state + k, node, op)?;
        let ax = a.in_axes[k];
        if ax >= t.rank() {
            return Err(err(
                node,
                op,
                format!("scan input {k} has rank {}, axis {ax}", t.rank()),
            ));
        }
        let n = t.shape[ax];
        if *len.get_or_insert(n) != n {
            return Err(err(node, op, "the scan inputs have different lengths"));
        }
        let mut slice = t.shape.clone();
        slice.remove(ax);
        if bi[a.n_state + k].shape != slice || bi[a.n_state + k].dtype != t.dtype {
            return Err(err(
                node,
                op,
                format!(
                    "scan input {k} slices to {:?}, the body expects {}",
                    slice,
                    bi[a.n_state + k]
                ),
            ));
        }
    }
    let len = len.ok_or_else(|| err(node, op, "a Scan needs at least one scan input"))?;
    for k in 0..a.n_state {
        let s = get(ins, k, node, op)?;
        if s != bi[k] || s != bo[k] {
            return Err(err(
                node,
                op,
                format!(
                    "state {k} is {s}, the body takes {} and gives {}",
                    bi[k], bo[k]
                ),
            ));
        }
    }
    check_passed(
        node,
        op,
        "the body",
        ins,
        a.n_state + a.n_scan_in,
        body,
        a.n_state + a.n_scan_in,
    )?;
    let mut out: Vec<TensorType> = bo[..a.n_state].iter().map(|t| (*t).clone()).collect();
    for (k, t) in bo[a.n_state..].iter().enumerate() {
        let ax = a.out_axes[k];
        if ax > t.rank() {
            return Err(err(
                node,
                op,
                format!("scan output {k} axis {ax} is past its rank {}", t.rank()),
            ));
        }
        let mut s = t.shape.clone();
        s.insert(ax, len);
        out.push(TensorType::new(t.dtype, s));
    }
    Ok(out)
}
