//! A small static quantizer that reproduces what onnxruntime's
//! `quantize_static(quant_format=QOperator)` emits for float CNN/MLP graphs:
//!
//! 1. BatchNormalization after a Conv is folded into the conv ([`fold_batchnorm`]).
//! 2. MinMax calibration: the reference interpreter runs a few inputs and records each
//!    float tensor's [min, max] over all of them ([`calibrate`]).
//! 3. Relu/Clip whose input has no other reader give that input their output range
//!    (ORT `adjust_tensor_ranges`); they are then dropped, their clamp living on in the
//!    producer's saturating output range.
//! 4. Rewrite ([`quantize`]): QuantizeLinear where float meets quantized, QLinearConv,
//!    QGemm, QLinearMatMul, QLinearAdd/Mul, QLinearGlobalAveragePool, QLinearConcat,
//!    QLinearSigmoid/LeakyRelu; MaxPool/Reshape/Transpose run on the 8-bit tensor with
//!    its input's parameters; everything else (HardSwish, HardSigmoid, Softmax, ...) stays
//!    float between DequantizeLinear and QuantizeLinear; DequantizeLinear at the outputs.
//!
//! Parameters follow ORT's `compute_scale_zp`: the range is widened to include 0;
//! activations are asymmetric (u8 [0, 255] or i8 [-128, 127]); weights are symmetric i8
//! over [-127, 127] with zero point 0, per tensor or per output channel; biases are i32
//! with scale x_scale * w_scale, rounded half to even. Not reproduced: ORT's
//! `_adjust_weight_scale_for_int32_bias` (only matters when a bias overflows i32).

mod emit;
mod fold;

use pimkit_ir::{
    BinaryOp, DType, Graph, IrError, NodeId, Op, PoolKind, Tensor, TensorType, UnaryOp, ValueDef,
    ValueId,
};
use rayon::prelude::*;
use std::collections::{HashMap, HashSet};

/// Quantizer errors, naming the node concerned.
#[derive(Debug, thiserror::Error)]
pub enum QuantError {
    #[error("calibration run failed: {0}")]
    Calibration(String),
    #[error("node '{node}' ({op}): {msg}")]
    Node {
        node: String,
        op: String,
        msg: String,
    },
    #[error(transparent)]
    Ir(Box<IrError>),
}

impl From<IrError> for QuantError {
    fn from(e: IrError) -> Self {
        QuantError::Ir(Box::new(e))
    }
}

type QResult<T> = std::result::Result<T, QuantError>;

/// Calibrated [min, max] per float value.
pub type Ranges = HashMap<ValueId, (f32, f32)>;

/// Options of [`quantize`], mirroring quantize_static's arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QuantOptions {
    /// Per-output-channel weight scales (`per_channel=True`).
    pub per_channel: bool,
    /// Activation type: U8 (QUInt8, the default) or I8 (QInt8, still asymmetric).
    pub act: DType,
    /// Op types (ONNX names, e.g. "Softmax") left in float (`op_types_to_quantize`'s
    /// complement).
    pub exclude: Vec<String>,
}

impl Default for QuantOptions {
    fn default() -> Self {
        QuantOptions {
            per_channel: false,
            act: DType::U8,
            exclude: Vec::new(),
        }
    }
}

/// ORT `compute_scale_zp` for an asymmetric activation range: (scale, zero point).
pub fn activation_params(rmin: f32, rmax: f32, act: DType) -> (f32, i32) {
    let (qmin, qmax) = act.quant_range().unwrap_or((0, 255));
    let rmin = (rmin as f64).min(0.0);
    let rmax = (rmax as f64).max(0.0);
    let scale = (rmax - rmin) / (qmax - qmin) as f64;
    if (scale as f32) < f32::MIN_POSITIVE {
        return (1.0, 0);
    }
    let zp = (qmin as f64 - rmin / scale).round_ties_even() as i32;
    (scale as f32, zp.clamp(qmin, qmax))
}

/// ORT symmetric i8 weight scale over [-127, 127] for a channel with largest |w| = `absmax`.
pub fn weight_scale(absmax: f32) -> f32 {
    let s = (2.0 * absmax as f64) / 254.0;
    if (s as f32) < f32::MIN_POSITIVE {
        1.0
    } else {
        s as f32
    }
}

/// ORT `quantize_nparray` for i8 weights: round_half_even(w / scale), clipped to [-127, 127].
///
/// Clipped before rounding (the same value: the bounds are integers), then rounded by
/// `round_half_even_small` (add and subtract 1.5 * 2^23): no libm call per weight
/// (x86-64's baseline has no rounding instruction), so a model's weights quantize in
/// vector registers. NaN gives 0, as the cast of the rounded NaN did.
pub fn quantize_weight_value(w: f32, scale: f32) -> i8 {
    let y = (w / scale).clamp(-127.0, 127.0);
    pimkit_interp::quant::round_half_even_small(y) as i8
}

/// Run the float graph through the reference interpreter on each input set and record
/// every f32 value's [min, max] (graph inputs and node outputs).
pub fn calibrate(g: &Graph, inputs: &[HashMap<String, Tensor>]) -> QResult<Ranges> {
    calibrate_iter(g, inputs.iter().cloned())
}

/// [`calibrate`] over samples made one at a time (a large sample count never holds more
/// than one sample in memory).
pub fn calibrate_iter(
    g: &Graph,
    inputs: impl IntoIterator<Item = HashMap<String, Tensor>>,
) -> QResult<Ranges> {
    let mut r: Ranges = HashMap::new();
    for set in inputs {
        merge_ranges(&mut r, sample_ranges(g, &set)?);
    }
    Ok(r)
}

/// [`calibrate_iter`] over `n` samples that `make(i)` builds, up to one per worker
/// thread at a time (a sample at a time when two interpreter runs might not fit in
/// memory). Min and max do not depend on the order they are taken in, so the ranges are
/// the sequential ones; an error is the first sample's in order.
pub fn calibrate_par(
    g: &Graph,
    n: usize,
    make: impl Fn(usize) -> HashMap<String, Tensor> + Sync,
) -> QResult<Ranges> {
    let threads = rayon::current_num_threads().min(n).max(1);
    // A run holds more than its lower bound (inputs plus the largest node output):
    // four times it per run at once is the margin asked for.
    let fits = |k: u64| {
        let bytes = pimkit_interp::min_run_bytes(g).saturating_mul(4 * k);
        pimkit_ir::memory::check_fits(bytes, "calibration").is_ok()
    };
    let at_once = if threads > 1 && fits(threads as u64) {
        threads
    } else {
        1
    };
    // The caller's exact-products setting holds on the workers too.
    let exact = pimkit_interp::exact_products_active();
    let one = |i: usize| {
        let run = || sample_ranges(g, &make(i));
        if exact {
            pimkit_interp::with_exact_products(run)
        } else {
            run()
        }
    };
    let mut r: Ranges = HashMap::new();
    for start in (0..n).step_by(at_once) {
        let batch: Vec<QResult<Ranges>> = (start..(start + at_once).min(n))
            .into_par_iter()
            .map(one)
            .collect();
        for part in batch {
            merge_ranges(&mut r, part?);
        }
    }
    Ok(r)
}

/// One sample's [min, max] of every f32 value (graph inputs and node outputs).
fn sample_ranges(g: &Graph, set: &HashMap<String, Tensor>) -> QResult<Ranges> {
    let mut r: Ranges = HashMap::new();
    let mut note = |v: ValueId, t: &Tensor| {
        if let Some(d) = t.as_f32() {
            let (lo, hi) = d
                .iter()
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(a, b), &x| {
                    (a.min(x), b.max(x))
                });
            widen(&mut r, v, (lo, hi));
        }
    };
    for &i in &g.inputs {
        if let Some(t) = set.get(&g.value(i).name) {
            note(i, t);
        }
    }
    pimkit_interp::run_observed(g, set, &mut |n: NodeId, outs: &[Tensor]| {
        for (o, t) in g.node(n).outputs.iter().zip(outs) {
            note(*o, t);
        }
    })
    .map_err(|e| QuantError::Calibration(e.to_string()))?;
    Ok(r)
}

/// Widen `into` by `part`'s ranges.
fn merge_ranges(into: &mut Ranges, part: Ranges) {
    for (v, range) in part {
        widen(into, v, range);
    }
}

/// Widen value `v`'s range in `r` to cover `(lo, hi)` (the range itself if it has none).
fn widen(r: &mut Ranges, v: ValueId, (lo, hi): (f32, f32)) {
    let e = r.entry(v).or_insert((lo, hi));
    *e = (e.0.min(lo), e.1.max(hi));
}

/// Relu/Clip nodes whose input may take their output range (the input is a node output
/// with no other reader); applies the adjustment and returns those nodes.
pub fn adjust_ranges(g: &Graph, ranges: &mut Ranges) -> HashSet<NodeId> {
    let cons = g.consumers();
    let mut out = HashSet::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if !matches!(n.op, Op::Unary(UnaryOp::Relu) | Op::Clip { .. }) {
            continue;
        }
        let Some(inp) = n.inputs[0] else { continue };
        if !matches!(g.value(inp).def, ValueDef::Node { .. })
            || cons.get(&inp).map_or(0, |c| c.len()) != 1
        {
            continue;
        }
        // ORT calibrates every tensor, so both ranges exist; without calibration
        // (shape-only graphs) the structure is the same and no range moves.
        if let Some(&r) = ranges.get(&n.outputs[0]) {
            ranges.insert(inp, r);
        }
        out.insert(NodeId(i as u32));
    }
    out
}

/// Fold every BatchNormalization that directly follows a Conv (sole reader, constant
/// weights) into that conv's weight and bias. Other BatchNorms are kept.
pub fn fold_batchnorm(g: &Graph) -> QResult<Graph> {
    fold::fold_batchnorm(g)
}

/// Quantize a (BN-folded) float graph given calibrated `ranges`. With `ranges = None` or
/// shape-only weights, the structure is produced with shape-only parameter constants.
pub fn quantize(g: &Graph, ranges: Option<&Ranges>, opts: &QuantOptions) -> QResult<Graph> {
    let mut ranges = ranges.cloned().unwrap_or_default();
    let foldable = adjust_ranges(g, &mut ranges);
    let mut q = emit::Emitter::new(g, ranges, opts.clone());
    for (i, n) in g.nodes.iter().enumerate() {
        q.node(NodeId(i as u32), n, foldable.contains(&NodeId(i as u32)))?;
    }
    q.finish()
}

/// The whole quantize_static flow: fold BN, calibrate on `calib` deterministic random
/// input sets (seeds `seed..seed+calib`) when the graph has weights, quantize.
pub fn quantize_static(g: &Graph, opts: &QuantOptions, calib: usize, seed: u64) -> QResult<Graph> {
    let f = fold_batchnorm(g)?;
    let ranges = if f.is_shape_only() {
        None
    } else {
        pimkit_interp::check_memory(&f).map_err(|e| QuantError::Calibration(e.to_string()))?;
        Some(calibrate_par(&f, calib, |i| {
            pimkit_interp::random_inputs(&f, seed.wrapping_add(i as u64))
        })?)
    };
    quantize(&f, ranges.as_ref(), opts)
}

/// quantize_static with the user's calibration input sets (MinMax over all of them,
/// up to one set per worker thread at a time): fold BN, calibrate, quantize.
pub fn quantize_calibrated(
    g: &Graph,
    opts: &QuantOptions,
    sets: &[HashMap<String, Tensor>],
) -> QResult<Graph> {
    quantize_calibrated_with(g, opts, sets.len(), |i| sets[i].clone())
}

/// [`quantize_calibrated`] over `n` input sets that `make(i)` builds when sample `i`
/// runs (a caller can count progress there, or read a sample from disk only then).
pub fn quantize_calibrated_with(
    g: &Graph,
    opts: &QuantOptions,
    n: usize,
    make: impl Fn(usize) -> HashMap<String, Tensor> + Sync,
) -> QResult<Graph> {
    let f = fold_batchnorm(g)?;
    let ranges = calibrate_par(&f, n, make)?;
    quantize(&f, Some(&ranges), opts)
}

/// Ops that run unchanged on 8-bit data with their input's parameters (ORT Direct8BitOp
/// for Reshape/Squeeze/Unsqueeze/Flatten/Transpose, QMaxPool, QResize, QSplit, QGather
/// on its data input).
pub(crate) fn passes_through(op: &Op) -> bool {
    matches!(
        op,
        Op::Reshape { .. }
            | Op::Transpose { .. }
            | Op::Identity
            | Op::Split { .. }
            | Op::Gather { .. }
            | Op::Resize(_)
    ) || matches!(op, Op::Pool(p) if p.kind == PoolKind::Max)
}

/// Binary ops with a QLinear form (both operands activations).
pub(crate) fn qlinear_binary(op: &Op) -> Option<Op> {
    match op {
        Op::Binary(BinaryOp::Add) => Some(Op::QLinearAdd),
        Op::Binary(BinaryOp::Mul) => Some(Op::QLinearMul),
        _ => None,
    }
}

/// Scalar or per-axis f32 scale tensor type.
pub(crate) fn scale_ty(n: Option<usize>) -> TensorType {
    match n {
        Some(c) => TensorType::new(DType::F32, vec![c]),
        None => TensorType::new(DType::F32, vec![]),
    }
}
