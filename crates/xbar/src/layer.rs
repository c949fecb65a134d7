//! Weight layers: the matrices a network stores in crossbars, extracted from a pimkit-ir
//! graph (or built directly, e.g. by a NAS loop that skips graph construction).

use crate::error::{Result, XbarError};
use pimkit_ir::operand::{
    conv, conv_integer, gemm, qgemm, qlinear_conv as qc, qlinear_matmul as qmm, rnn,
};
use pimkit_ir::{Graph, Node, NodeId, Op, ValueDef, ValueId};
use serde::{Deserialize, Serialize};

/// What a layer is, for the box rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LayerKind {
    /// Convolution with one group: box k*k*Cin x Cout, Hout*Wout cycles.
    Conv,
    /// Grouped convolution (1 < groups < Cin).
    Grouped,
    /// Depthwise convolution (groups == Cin).
    Depthwise,
    /// Gemm / MatMul with a constant operand: box in x out, one cycle per input vector.
    Dense,
    /// LSTM / GRU: input and recurrent gate matrices, one read per time step.
    Recurrent,
}

/// One weight layer. A layer holds `groups` independent copies of a `rows x cols` group
/// matrix (for convolutions) or the listed `mats` (dense and recurrent layers, groups = 1).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Layer {
    pub name: String,
    pub op: String,
    pub kind: LayerKind,
    /// Matrices of one group, (rows, cols): rows = k*k*Cin/g (the input side), cols = Cout/g.
    pub mats: Vec<(usize, usize)>,
    pub groups: usize,
    /// Input vectors per inference: N*Hout*Wout for a convolution, rows of the activation for
    /// a dense layer, seq*batch for a recurrent one.
    pub positions: u64,
}

impl Layer {
    /// Convolution with `groups` groups on a `hout x wout` output map.
    pub fn conv(
        name: impl Into<String>,
        cin: usize,
        cout: usize,
        k: usize,
        groups: usize,
        hout: usize,
        wout: usize,
    ) -> Layer {
        let g = groups.max(1);
        let kind = if g == 1 {
            LayerKind::Conv
        } else if g == cin {
            LayerKind::Depthwise
        } else {
            LayerKind::Grouped
        };
        Layer {
            name: name.into(),
            op: "Conv".into(),
            kind,
            mats: vec![(k * k * cin / g, cout / g)],
            groups: g,
            positions: (hout * wout) as u64,
        }
    }

    /// Fully connected layer (in x out) applied to `vectors` input vectors.
    pub fn dense(name: impl Into<String>, input: usize, output: usize, vectors: u64) -> Layer {
        Layer {
            name: name.into(),
            op: "Gemm".into(),
            kind: LayerKind::Dense,
            mats: vec![(input, output)],
            groups: 1,
            positions: vectors.max(1),
        }
    }

    /// Raw box of the whole layer as RNC builds it: (rows, cols) = (k*k*Cin/g, Cout) for
    /// convolutions; matrices of dense/recurrent layers stacked side by side.
    pub fn raw_box(&self) -> (usize, usize) {
        if self.groups > 1 {
            let (r, c) = self.mats[0];
            (r, c * self.groups)
        } else if self.mats.len() == 1 {
            self.mats[0]
        } else {
            let r = self.mats.iter().map(|m| m.0).max().unwrap_or(0);
            (r, self.mats.iter().map(|m| m.1).sum())
        }
    }

    /// Raw cycles (RNC rule): positions, times the group count for grouped/depthwise.
    pub fn raw_cycles(&self) -> u64 {
        self.positions * self.groups as u64
    }

    /// Number of weights (no bias).
    pub fn weights(&self) -> u64 {
        self.mats.iter().map(|&(r, c)| (r * c) as u64).sum::<u64>() * self.groups as u64
    }

    /// Multiply-accumulates per inference.
    pub fn macs(&self) -> u64 {
        self.weights() * self.positions
    }
}

/// A node that was not mapped, with the reason (reported, not an error).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Skipped {
    pub node: String,
    pub op: String,
    pub reason: String,
}

/// Layers of a graph in execution (topological) order, plus the weight-like nodes skipped.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Extraction {
    pub layers: Vec<Layer>,
    pub skipped: Vec<Skipped>,
}

/// True when `v` is a constant, possibly behind DequantizeLinear / Identity / Cast /
/// Reshape / Transpose (QDQ models keep weights behind a DequantizeLinear).
fn is_weight(g: &Graph, v: ValueId) -> bool {
    let mut v = v;
    for _ in 0..8 {
        match &g.value(v).def {
            ValueDef::Const(_) => return true,
            ValueDef::Input => return false,
            ValueDef::Node { node, .. } => {
                let n = g.node(*node);
                match n.op {
                    Op::DequantizeLinear { .. }
                    | Op::Identity
                    | Op::Cast { .. }
                    | Op::Reshape { .. }
                    | Op::Transpose { .. } => match n.inputs.first().copied().flatten() {
                        Some(i) => v = i,
                        None => return false,
                    },
                    // any other producer computes the value: not a weight
                    _ => return false,
                }
            }
        }
    }
    false
}

fn shape<'g>(g: &'g Graph, n: &Node, input: usize) -> Result<&'g [usize]> {
    match n.input(input) {
        Some(v) => Ok(&g.ty(v).shape),
        None => Err(XbarError::Layer {
            node: n.name.clone(),
            op: n.op.name().into(),
            msg: format!("input {input} is missing"),
        }),
    }
}

fn conv_layer(
    g: &Graph,
    n: &Node,
    x_idx: usize,
    w_idx: usize,
    group: usize,
) -> Result<Option<Layer>> {
    let w_id = n.input(w_idx);
    let Some(w_id) = w_id else { return Ok(None) };
    if !is_weight(g, w_id) {
        return Ok(None);
    }
    let x = shape(g, n, x_idx)?;
    let w = &g.ty(w_id).shape;
    let y = &g.ty(n.outputs[0]).shape;
    if w.len() < 3 || x.len() != w.len() || y.len() != w.len() {
        return Err(XbarError::Layer {
            node: n.name.clone(),
            op: n.op.name().into(),
            msg: format!("unexpected shapes x {x:?}, w {w:?}, y {y:?} for a convolution"),
        });
    }
    let g_ = group.max(1);
    let cout = w[0];
    let cin_g = w[1];
    let kk: usize = w[2..].iter().product();
    let positions = (y[0] * y[2..].iter().product::<usize>()) as u64;
    let cin = x[1];
    let kind = if g_ == 1 {
        LayerKind::Conv
    } else if g_ == cin {
        LayerKind::Depthwise
    } else {
        LayerKind::Grouped
    };
    Ok(Some(Layer {
        name: n.name.clone(),
        op: n.op.name().into(),
        kind,
        mats: vec![(kk * cin_g, cout / g_)],
        groups: g_,
        positions,
    }))
}

/// ConvTranspose in scatter form: each input pixel is one read of a crossbar holding the
/// weight `[C_in, C_out/g, k...]` as C_in/g rows by (C_out/g)·k columns; the partial
/// outputs of overlapping kernel windows are added outside the crossbar. (The gather form,
/// a conv over the zero-stuffed input, would need stride² times more reads, most of zeros.)
fn conv_transpose_layer(g: &Graph, n: &Node, group: usize) -> Result<Option<Layer>> {
    let Some(w_id) = n.input(conv::W) else {
        return Ok(None);
    };
    if !is_weight(g, w_id) {
        return Ok(None);
    }
    let x = shape(g, n, 0)?;
    let w = &g.ty(w_id).shape;
    let g_ = group.max(1);
    if w.len() < 3 || x.len() != w.len() || !w[0].is_multiple_of(g_) {
        return Err(XbarError::Layer {
            node: n.name.clone(),
            op: n.op.name().into(),
            msg: format!("unexpected shapes x {x:?}, w {w:?} for a transposed convolution"),
        });
    }
    let kk: usize = w[2..].iter().product();
    let positions = (x[0] * x[2..].iter().product::<usize>()) as u64;
    Ok(Some(Layer {
        name: n.name.clone(),
        op: n.op.name().into(),
        kind: if g_ == 1 {
            LayerKind::Conv
        } else {
            LayerKind::Grouped
        },
        mats: vec![(w[0] / g_, w[1] * kk)],
        groups: g_,
        positions,
    }))
}

/// Matrix product `a x b` where one operand is a weight.
fn matmul_layer(
    g: &Graph,
    n: &Node,
    a_idx: usize,
    b_idx: usize,
    trans_a: bool,
    trans_b: bool,
) -> Result<Option<Layer>> {
    let (Some(a), Some(b)) = (n.input(a_idx), n.input(b_idx)) else {
        return Ok(None);
    };
    let (sa, sb) = (&g.ty(a).shape, &g.ty(b).shape);
    let err = |msg: String| XbarError::Layer {
        node: n.name.clone(),
        op: n.op.name().into(),
        msg,
    };
    if is_weight(g, b) && sb.len() == 2 {
        let (k, out) = if trans_b {
            (sb[1], sb[0])
        } else {
            (sb[0], sb[1])
        };
        let total: usize = sa.iter().product();
        if k == 0 || !total.is_multiple_of(k) {
            return Err(err(format!(
                "activation {sa:?} does not match weight {sb:?}"
            )));
        }
        let _ = trans_a;
        return Ok(Some(Layer {
            name: n.name.clone(),
            op: n.op.name().into(),
            kind: LayerKind::Dense,
            mats: vec![(k, out)],
            groups: 1,
            positions: (total / k) as u64,
        }));
    }
    if is_weight(g, a) && sa.len() == 2 && !trans_a && !trans_b {
        // y = W x: the crossbar holds W^T (K rows, M columns), one read per column of x.
        let (m, k) = (sa[0], sa[1]);
        let total: usize = sb.iter().product();
        if k == 0 || !total.is_multiple_of(k) {
            return Err(err(format!(
                "weight {sa:?} does not match activation {sb:?}"
            )));
        }
        return Ok(Some(Layer {
            name: n.name.clone(),
            op: n.op.name().into(),
            kind: LayerKind::Dense,
            mats: vec![(k, m)],
            groups: 1,
            positions: (total / k) as u64,
        }));
    }
    Ok(None)
}

fn rnn_layer(g: &Graph, n: &Node, gates: usize) -> Result<Option<Layer>> {
    let (Some(w), Some(r)) = (n.input(rnn::W), n.input(rnn::R)) else {
        return Ok(None);
    };
    if !is_weight(g, w) || !is_weight(g, r) {
        return Ok(None);
    }
    let x = shape(g, n, 0)?;
    let (sw, sr) = (&g.ty(w).shape, &g.ty(r).shape);
    if sw.len() != 3 || sr.len() != 3 || x.len() != 3 || sw[1] % gates != 0 {
        return Err(XbarError::Layer {
            node: n.name.clone(),
            op: n.op.name().into(),
            msg: format!("unexpected recurrent shapes x {x:?}, W {sw:?}, R {sr:?}"),
        });
    }
    let dirs = sw[0];
    let mut mats = Vec::new();
    for _ in 0..dirs {
        mats.push((sw[2], sw[1])); // W^T: input -> all gates
        mats.push((sr[2], sr[1])); // R^T: hidden -> all gates
    }
    Ok(Some(Layer {
        name: n.name.clone(),
        op: n.op.name().into(),
        kind: LayerKind::Recurrent,
        mats,
        groups: 1,
        positions: (x[0] * x[1]) as u64,
    }))
}

/// Extract the crossbar layers of `g` in node order. Nodes with non-constant weights
/// (e.g. attention's activation x activation MatMul) are listed in `skipped`.
pub fn extract(g: &Graph) -> Result<Extraction> {
    let (layers, skipped) = extract_nodes(g)?;
    Ok(Extraction {
        layers: layers.into_iter().map(|l| l.layer).collect(),
        skipped,
    })
}

/// A layer with the node it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct NodeLayer {
    pub node: NodeId,
    pub layer: Layer,
    /// A product whose weight is its first operand (y = W x): the crossbar holds W^T.
    pub weight_left: bool,
}

/// [`extract`] with each layer's node.
pub fn extract_nodes(g: &Graph) -> Result<(Vec<NodeLayer>, Vec<Skipped>)> {
    let mut layers = Vec::new();
    let mut skipped = Vec::new();
    for (ni, n) in g.nodes.iter().enumerate() {
        // A zero-size operand has no weights or vectors to place.
        if let Some(v) = n
            .inputs
            .iter()
            .flatten()
            .chain(&n.outputs)
            .map(|&v| g.value(v))
            .find(|v| v.ty.shape.contains(&0))
        {
            return Err(XbarError::Layer {
                node: n.name.clone(),
                op: n.op.name().into(),
                msg: format!(
                    "value '{}' has a zero-size dimension {:?}; crossbars map no empty tensors",
                    v.name, v.ty.shape
                ),
            });
        }
        // The second operand of a product holds the weight unless only the first is one.
        let right_weight = |b: usize| {
            n.input(b)
                .is_some_and(|v| is_weight(g, v) && g.ty(v).shape.len() == 2)
        };
        let (layer, left) = match &n.op {
            Op::Conv(a) => (conv_layer(g, n, conv::X, conv::W, a.group)?, false),
            Op::ConvInteger(a) => (
                conv_layer(g, n, conv_integer::X, conv_integer::W, a.group)?,
                false,
            ),
            Op::QLinearConv(a) => (conv_layer(g, n, qc::X, qc::W, a.group)?, false),
            Op::ConvTranspose(a) => (conv_transpose_layer(g, n, a.group)?, false),
            Op::Gemm {
                trans_a, trans_b, ..
            } => (
                matmul_layer(g, n, gemm::A, gemm::B, *trans_a, *trans_b)?,
                !right_weight(gemm::B),
            ),
            Op::QGemm {
                trans_a, trans_b, ..
            } => (
                matmul_layer(g, n, qgemm::A, qgemm::B, *trans_a, *trans_b)?,
                !right_weight(qgemm::B),
            ),
            // MatMulInteger's A and B sit where MatMul's do.
            Op::MatMul | Op::MatMulInteger => (
                matmul_layer(g, n, gemm::A, gemm::B, false, false)?,
                !right_weight(gemm::B),
            ),
            Op::QLinearMatMul => (
                matmul_layer(g, n, qmm::A, qmm::B, false, false)?,
                !right_weight(qmm::B),
            ),
            Op::Lstm(_) => (rnn_layer(g, n, 4)?, false),
            Op::Gru(_) => (rnn_layer(g, n, 3)?, false),
            // every other op stores no weights in crossbars: not a layer
            _ => continue,
        };
        match layer {
            Some(l) if l.weights() > 0 => layers.push(NodeLayer {
                node: NodeId(ni as u32),
                layer: l,
                weight_left: left,
            }),
            _ => skipped.push(Skipped {
                node: n.name.clone(),
                op: n.op.name().into(),
                reason: "no constant weight operand (both operands are activations)".into(),
            }),
        }
    }
    Ok((layers, skipped))
}
