//! QDQ node groups imported as the integer nodes onnxruntime runs them as.
//!
//! onnxruntime's quantizer writes QDQ models by default: float ops between
//! DequantizeLinear (DQ) and QuantizeLinear (Q). onnxruntime's default session does not
//! compute them in float: its QDQ transformer replaces each group by the QOperator node
//! (DQ→Conv→Q by QLinearConv, DQ→Add→Q by QLinearAdd, ...) and drops the DQ/Q pair
//! around data-movement ops whose scale and zero point do not change. The integer
//! results differ from the float reading by a step here and there, so the importer
//! does the same (`LoadOptions::qdq_float` keeps the float form): `pimkit exec` gives
//! onnxruntime's bits at integer speed and every engine sees QOperator nodes.
//!
//! The groups are onnxruntime's (qdq_selector_action_transformer.cc): scales are
//! constant scalars except the weights' (per output channel), activations and outputs
//! share one 8-bit type, the float op's output is read by its Q alone.

use pimkit_ir::{
    BinaryOp, DType, Graph, NodeId, Op, PoolKind, Tensor, UnaryOp, Value, ValueDef, ValueId,
};
use std::collections::BTreeMap;

/// The count key of DQ/Q pairs dropped around data-movement ops.
pub(crate) const DROPPED: &str = "dropped";

/// Rewrite the QDQ groups of `g`; returns how many of each op were fused (by the name of
/// the node that replaced the group), empty when the graph has none.
pub(crate) fn fuse(g: &mut Graph) -> BTreeMap<&'static str, usize> {
    let mut done = BTreeMap::new();
    // Relu / Clip in front of a Q that clamps at least as much: onnxruntime removes them
    // (ReluQuantFusion, ClipQuantFusion) so that the op before them forms a group.
    let cons = consumers(g);
    let mut bypassed = false;
    for ni in 0..g.nodes.len() {
        bypassed |= bypass_clamp(g, &cons, ni);
    }
    if bypassed {
        g.prune();
    }
    let cons = consumers(g);
    for ni in 0..g.nodes.len() {
        s8_to_u8(g, &cons, ni);
    }
    for ni in 0..g.nodes.len() {
        if let Some(name) = fuse_node(g, &cons, ni) {
            *done.entry(name).or_insert(0) += 1;
        }
    }
    if !done.is_empty() {
        g.prune();
    }
    done
}

/// For each value, the nodes reading it (a node reading it twice is listed twice).
fn consumers(g: &Graph) -> Vec<Vec<usize>> {
    let mut c = vec![Vec::new(); g.values.len()];
    for (ni, n) in g.nodes.iter().enumerate() {
        for v in n.inputs.iter().flatten() {
            c[v.idx()].push(ni);
        }
    }
    c
}

/// A DequantizeLinear output: the quantized value and its parameters.
struct Dq {
    q: ValueId,
    scale: ValueId,
    zp: Option<ValueId>,
    axis: usize,
}

/// One operand group of a QOperator node.
enum Slot {
    /// An input: (q, scale, zero point).
    In(Dq),
    /// The output's (scale, zero point).
    Out,
    /// An int32 bias (its scale is implied: input scale x weight scale); None omits it.
    Bias(Option<ValueId>),
}

/// The QuantizeLinear that alone reads a value.
struct Qz {
    node: usize,
    scale: ValueId,
    zp: Option<ValueId>,
    to: DType,
}

fn producer(g: &Graph, v: ValueId) -> Option<usize> {
    match g.value(v).def {
        ValueDef::Node { node, .. } => Some(node.idx()),
        _ => None,
    }
}

fn is_output(g: &Graph, v: ValueId) -> bool {
    g.outputs.contains(&v)
}

/// A constant of `dtype` (its data may be absent in a shape-only import: groups are
/// recognized by type, only the checks that compare values need the data).
fn constant(g: &Graph, v: ValueId, dtype: DType) -> bool {
    g.is_const(v) && g.ty(v).dtype == dtype
}

fn scalar(g: &Graph, v: ValueId, dtype: DType) -> bool {
    constant(g, v, dtype) && g.ty(v).numel() == 1
}

fn int8(d: DType) -> bool {
    matches!(d, DType::U8 | DType::I8)
}

fn dq(g: &Graph, v: ValueId) -> Option<Dq> {
    let p = producer(g, v)?;
    let n = &g.nodes[p];
    let Op::DequantizeLinear { axis } = n.op else {
        return None;
    };
    if is_output(g, v) || g.ty(v).dtype != DType::F32 {
        return None;
    }
    let q = n.input(0)?;
    let scale = n.input(1)?;
    let zp = n.input(2);
    let qt = g.ty(q).dtype;
    let zp_ok = zp.is_none_or(|z| constant(g, z, qt));
    (constant(g, scale, DType::F32) && zp_ok).then_some(Dq { q, scale, zp, axis })
}

/// A DQ of an 8-bit activation of type `dt` with scalar parameters.
fn dq_act(g: &Graph, v: Option<ValueId>, dt: DType) -> Option<Dq> {
    let d = dq(g, v?)?;
    let ok = g.ty(d.q).dtype == dt
        && g.ty(d.scale).numel() == 1
        && d.zp.is_none_or(|z| g.ty(z).numel() == 1);
    ok.then_some(d)
}

/// A DQ of constant 8-bit weights, per tensor or per `axis` (of length `len`).
fn dq_weight(g: &Graph, v: Option<ValueId>, axis: usize, len: usize) -> Option<Dq> {
    let d = dq(g, v?)?;
    let n = g.ty(d.scale).numel();
    let per = n == 1 || (d.axis == axis && n == len);
    let ok = g.is_const(d.q)
        && int8(g.ty(d.q).dtype)
        && per
        && d.zp.is_none_or(|z| g.ty(z).numel() == n);
    ok.then_some(d)
}

/// A DQ of a constant int32 bias.
fn dq_bias(g: &Graph, v: ValueId) -> Option<Dq> {
    let d = dq(g, v)?;
    constant(g, d.q, DType::I32).then_some(d)
}

/// The Q reading `v` alone, per tensor, to an 8-bit type.
fn q_after(g: &Graph, cons: &[Vec<usize>], v: ValueId) -> Option<Qz> {
    // Values added by earlier rewrites (past the end) have no readers.
    let &[qi] = cons.get(v.idx()).map_or(&[][..], |c| &c[..]) else {
        return None;
    };
    let n = &g.nodes[qi];
    let Op::QuantizeLinear { to, .. } = n.op else {
        return None;
    };
    if is_output(g, v) || n.input(0) != Some(v) || !int8(to) {
        return None;
    }
    let scale = n.input(1)?;
    let zp = n.input(2);
    let ok = scalar(g, scale, DType::F32) && zp.is_none_or(|z| scalar(g, z, to));
    ok.then_some(Qz {
        node: qi,
        scale,
        zp,
        to,
    })
}

/// The zero point as a value (ONNX defaults an omitted one to 0 of the type).
fn zp_value(g: &mut Graph, zp: Option<ValueId>, dt: DType, hint: &str) -> ValueId {
    zp.unwrap_or_else(|| {
        let z = Tensor::zeros(dt, Vec::<usize>::new());
        let name = format!("{hint}_zero_point_{}", g.values.len());
        g.add_const(name, z)
    })
}

fn first_f32(t: &Tensor) -> f32 {
    t.to_f32_vec()[0]
}

/// The values of a scalar (scale, zero point) pair, an omitted zero point being 0; None
/// when the data is absent (shape-only import), so no value comparison can pass.
fn param_values(g: &Graph, scale: ValueId, zp: Option<ValueId>) -> Option<(f32, i64)> {
    let s = first_f32(g.const_data(scale)?);
    let z = match zp {
        Some(z) => first_i64(g.const_data(z)?),
        None => 0,
    };
    Some((s, z))
}

fn first_i64(t: &Tensor) -> i64 {
    t.to_i64_vec().first().copied().unwrap_or(0)
}

/// onnxruntime's QDQS8ToU8Transformer (x86, where its QDQ fusions refuse s8
/// activations): a Q -> DQ pair with equal scalar s8 zero points, whose Q feeds that DQ
/// alone and whose DQ feeds at most one reader (onnxruntime first gives every reader its
/// own DQ), becomes u8 with zero point + 128. Exact: the codes shift by 128 and dequantize
/// to the same values. (Constant s8 weights stay s8, as in onnxruntime 1.32.)
fn s8_to_u8(g: &mut Graph, cons: &[Vec<usize>], qi: usize) {
    let n = &g.nodes[qi];
    let (
        Op::QuantizeLinear {
            axis,
            to: DType::I8,
        },
        [out],
    ) = (&n.op, &n.outputs[..])
    else {
        return;
    };
    let (axis, out) = (*axis, *out);
    let zp_of = |z: Option<ValueId>| {
        let t = g.const_data(z?)?;
        (t.dtype() == DType::I8 && t.numel() == 1).then(|| (first_i64(t), t.shape.clone()))
    };
    let Some((zp, shape)) = zp_of(n.input(2)) else {
        return;
    };
    let &[di] = cons.get(out.idx()).map_or(&[][..], |c| &c[..]) else {
        return;
    };
    let d = &g.nodes[di];
    if is_output(g, out)
        || !matches!(d.op, Op::DequantizeLinear { .. })
        || d.input(0) != Some(out)
        || zp_of(d.input(2)).map(|z| z.0) != Some(zp)
    {
        return;
    }
    let dq_out = d.outputs[0];
    if cons[dq_out.idx()].len() + usize::from(is_output(g, dq_out)) > 1 {
        return;
    }
    let name = format!("{}_zero_point_u8", g.nodes[qi].name);
    let z = g.add_const(name, Tensor::from_u8(shape, vec![(zp + 128) as u8]));
    g.nodes[qi].op = Op::QuantizeLinear {
        axis,
        to: DType::U8,
    };
    g.nodes[qi].inputs[2] = Some(z);
    g.nodes[di].inputs[2] = Some(z);
    g.values[out.idx()].ty.dtype = DType::U8;
}

/// Relu or Clip whose output only a Q reads, which saturates at least where they clamp:
/// the Q reads their input instead (exact: both give the Q's lowest/highest code there).
fn bypass_clamp(g: &mut Graph, cons: &[Vec<usize>], ni: usize) -> bool {
    let n = &g.nodes[ni];
    let (Some(x), [o]) = (n.input(0), &n.outputs[..]) else {
        return false;
    };
    let o = *o;
    let Some(q) = q_after(g, cons, o) else {
        return false;
    };
    let Some((scale, zp)) = param_values(g, q.scale, q.zp) else {
        return false;
    };
    let (qmin, qmax) = if q.to == DType::U8 {
        (0i64, 255i64)
    } else {
        (-128, 127)
    };
    let lo = (qmin - zp) as f32 * scale;
    let hi = (qmax - zp) as f32 * scale;
    let removable = match n.op {
        Op::Unary(UnaryOp::Relu) => zp == qmin,
        Op::Clip { min, max } => {
            min.is_none_or(|m| m <= lo) && max.is_none_or(|m| m >= hi) && scale > 0.0
        }
        _ => false,
    };
    if !removable || g.ty(x) != g.ty(o) {
        return false;
    }
    g.nodes[q.node].inputs[0] = Some(x);
    true
}

/// Replace node `ni` and the Q after it by one integer node, when they form a group.
fn fuse_node(g: &mut Graph, cons: &[Vec<usize>], ni: usize) -> Option<&'static str> {
    let n = &g.nodes[ni];
    let [o] = n.outputs[..] else {
        return None;
    };
    let q = q_after(g, cons, o)?;
    let dt = q.to;
    let hint = n.name.clone();
    use Slot::{Bias, In, Out};
    let (op, slots): (Op, Vec<Slot>) = match &n.op {
        // x86 onnxruntime has no s8 x s8 QLinearConv / QLinearMatMul kernels ("int8 not
        // allowed"): s8 activations stay float there, unless s8_to_u8 made them u8.
        Op::Conv(_) | Op::MatMul if dt == DType::I8 => return None,
        Op::Conv(a) => {
            let x = dq_act(g, n.input(0), dt)?;
            let c_out = g.ty(n.input(1)?).shape.first().copied()?;
            let w = dq_weight(g, n.input(1), 0, c_out)?;
            let mut slots = vec![In(x), In(w), Out];
            if let Some(b) = n.input(2) {
                slots.push(Bias(Some(dq_bias(g, b)?.q)));
            }
            (Op::QLinearConv(a.clone()), slots)
        }
        Op::MatMul => {
            let a = dq_act(g, n.input(0), dt)?;
            let bs = &g.ty(n.input(1)?).shape;
            let (axis, cols) = (bs.len().checked_sub(1)?, *bs.last()?);
            let b = dq_weight_or_act(g, n.input(1), axis, cols)?;
            (Op::QLinearMatMul, vec![In(a), In(b), Out])
        }
        &Op::Gemm {
            alpha,
            beta,
            trans_a,
            trans_b,
        } => {
            let a = dq_act(g, n.input(0), dt)?;
            let bs = &g.ty(n.input(1)?).shape;
            let axis = if trans_b { 0 } else { 1 };
            let b = dq_weight(g, n.input(1), axis, *bs.get(axis)?)?;
            // onnxruntime's QGemm takes an s8 A only with an s8 B.
            if dt == DType::I8 && g.ty(b.q).dtype != DType::I8 {
                return None;
            }
            let c = match n.input(2) {
                Some(c) if beta == 1.0 => Some(dq_bias(g, c)?.q),
                Some(_) => return None,
                None => None,
            };
            let op = Op::QGemm {
                alpha,
                trans_a,
                trans_b,
            };
            (op, vec![In(a), In(b), Bias(c), Out])
        }
        Op::Binary(BinaryOp::Add) | Op::Binary(BinaryOp::Mul) => {
            let a = dq_act(g, n.input(0), dt)?;
            let b = dq_act(g, n.input(1), dt)?;
            let op = if n.op == Op::Binary(BinaryOp::Add) {
                Op::QLinearAdd
            } else {
                Op::QLinearMul
            };
            (op, vec![In(a), In(b), Out])
        }
        Op::Concat { axis } => {
            let xs = n
                .inputs
                .iter()
                .map(|&v| dq_act(g, v, dt).map(In))
                .collect::<Option<Vec<_>>>()?;
            let mut slots = vec![Out];
            slots.extend(xs);
            (Op::QLinearConcat { axis: *axis }, slots)
        }
        Op::GlobalPool(PoolKind::Avg) if g.ty(o).rank() == 4 => {
            let x = dq_act(g, n.input(0), dt)?;
            let op = Op::QLinearGlobalAveragePool {
                channels_last: false,
            };
            (op, vec![In(x), Out])
        }
        Op::Pool(a) if a.kind == PoolKind::Avg && a.kernel.len() == 2 => {
            let x = dq_act(g, n.input(0), dt)?;
            (Op::QLinearAveragePool(a.clone()), vec![In(x), Out])
        }
        Op::Unary(UnaryOp::Sigmoid) => (
            Op::QLinearSigmoid,
            vec![In(dq_act(g, n.input(0), dt)?), Out],
        ),
        &Op::Unary(UnaryOp::LeakyRelu { alpha }) => {
            let x = dq_act(g, n.input(0), dt)?;
            (Op::QLinearLeakyRelu { alpha }, vec![In(x), Out])
        }
        &Op::Softmax { axis } => {
            let x = dq_act(g, n.input(0), dt)?;
            let op = Op::QLinearSoftmax {
                axis,
                flatten: false,
            };
            (op, vec![In(x), Out])
        }
        op if moves_data(op) => return drop_qdq(g, ni, &q).then_some(DROPPED),
        _ => return None,
    };
    let mut inputs = Vec::new();
    for s in slots {
        match s {
            In(d) => {
                let t = g.ty(d.q).dtype;
                inputs.extend([Some(d.q), Some(d.scale)]);
                inputs.push(Some(zp_value(g, d.zp, t, &hint)));
            }
            Out => inputs.extend([Some(q.scale), Some(zp_value(g, q.zp, dt, &hint))]),
            Bias(b) => inputs.push(b),
        }
    }
    let name = op.name();
    rewire(g, ni, &q, op, inputs);
    Some(name)
}

/// MatMul's B: constant weights (per column allowed) or another activation.
fn dq_weight_or_act(g: &Graph, v: Option<ValueId>, axis: usize, cols: usize) -> Option<Dq> {
    let d = dq(g, v?)?;
    if g.is_const(d.q) {
        dq_weight(g, v, axis, cols)
    } else {
        dq_act(g, v, g.ty(d.q).dtype)
    }
}

/// Ops whose output elements are copies of input elements (of input 0).
fn moves_data(op: &Op) -> bool {
    matches!(
        op,
        Op::Reshape { .. }
            | Op::Transpose { .. }
            | Op::Slice { .. }
            | Op::Gather { .. }
            | Op::Expand { .. }
            | Op::Pool(pimkit_ir::PoolAttrs {
                kind: PoolKind::Max,
                ..
            })
            | Op::GlobalPool(PoolKind::Max)
    )
}

/// DQ → data movement → Q with the same scale and zero point: the op runs on the
/// quantized input (exact: a copied code dequantizes and requantizes to itself, and max
/// pooling commutes with the monotonic quantization).
fn drop_qdq(g: &mut Graph, ni: usize, q: &Qz) -> bool {
    let n = &g.nodes[ni];
    let Some(x) = dq_act(g, n.input(0), q.to) else {
        return false;
    };
    if n.inputs[1..].iter().flatten().any(|&v| dq(g, v).is_some()) {
        return false;
    }
    let (Some((sx, zx)), Some((sq, zq))) = (
        param_values(g, x.scale, x.zp),
        param_values(g, q.scale, q.zp),
    ) else {
        return false;
    };
    if sx.to_bits() != sq.to_bits() || zx != zq {
        return false;
    }
    let mut inputs = g.nodes[ni].inputs.clone();
    inputs[0] = Some(x.q);
    let op = g.nodes[ni].op.clone();
    rewire(g, ni, q, op, inputs);
    true
}

/// Node `ni` becomes `op` on `inputs` and produces the Q's output; the Q node is left
/// writing a fresh unread value, so pruning removes it with the float intermediate.
fn rewire(g: &mut Graph, ni: usize, q: &Qz, op: Op, inputs: Vec<Option<ValueId>>) {
    let out = g.nodes[q.node].outputs[0];
    let dead = ValueId(g.values.len() as u32);
    g.values.push(Value {
        name: format!("{}:unfused", g.value(out).name),
        ty: g.ty(out).clone(),
        def: ValueDef::Node {
            node: NodeId(q.node as u32),
            index: 0,
        },
    });
    g.nodes[q.node].outputs[0] = dead;
    g.values[out.idx()].def = ValueDef::Node {
        node: NodeId(ni as u32),
        index: 0,
    };
    let node = &mut g.nodes[ni];
    node.op = op;
    node.inputs = inputs;
    node.outputs = vec![out];
}
