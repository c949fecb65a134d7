//! The closed set of operators. Converters fold constant operands (shapes, axes, pads,
//! clip bounds) into attributes, so every op here has static semantics and every
//! remaining input is a tensor that flows through the graph.

use crate::DType;
pub use crate::control::{ScanAttrs, Subgraph};
pub use crate::op_ext::*;
use serde::{Deserialize, Serialize};

/// Elementwise one-input math.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum UnaryOp {
    Relu,
    Sigmoid,
    Tanh,
    Exp,
    Log,
    Sqrt,
    Neg,
    Abs,
    Reciprocal,
    Erf,
    Floor,
    Ceil,
    Round,
    Sign,
    Sin,
    Cos,
    Not,
    Softplus,
    /// ONNX HardSigmoid: max(0, min(1, alpha*x + beta)).
    HardSigmoid {
        alpha: f32,
        beta: f32,
    },
    HardSwish,
    LeakyRelu {
        alpha: f32,
    },
    Elu {
        alpha: f32,
    },
    /// ONNX Gelu (opset 20); `tanh` selects the tanh approximation.
    Gelu {
        tanh: bool,
    },
    IsNaN,
    Acos,
    Acosh,
    Asin,
    Asinh,
    Atan,
    Atanh,
    Cosh,
    Sinh,
    Tan,
    /// x / (1 + |x|)
    Softsign,
    /// x * tanh(softplus(x))
    Mish,
    /// max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
    Celu {
        alpha: f32,
    },
    /// gamma * (x > 0 ? x : alpha * (exp(x) - 1))
    Selu {
        alpha: f32,
        gamma: f32,
    },
    /// x > alpha ? x : 0
    ThresholdedRelu {
        alpha: f32,
    },
    /// x < -lambd ? x + bias : x > lambd ? x - bias : 0
    Shrink {
        bias: f32,
        lambd: f32,
    },
    /// Which infinities IsInf detects (output bool).
    IsInf {
        pos: bool,
        neg: bool,
    },
    BitwiseNot,
    /// x * sigmoid(alpha * x)
    Swish {
        alpha: f32,
    },
}

impl UnaryOp {
    pub fn name(&self) -> &'static str {
        match self {
            UnaryOp::Relu => "Relu",
            UnaryOp::Sigmoid => "Sigmoid",
            UnaryOp::Tanh => "Tanh",
            UnaryOp::Exp => "Exp",
            UnaryOp::Log => "Log",
            UnaryOp::Sqrt => "Sqrt",
            UnaryOp::Neg => "Neg",
            UnaryOp::Abs => "Abs",
            UnaryOp::Reciprocal => "Reciprocal",
            UnaryOp::Erf => "Erf",
            UnaryOp::Floor => "Floor",
            UnaryOp::Ceil => "Ceil",
            UnaryOp::Round => "Round",
            UnaryOp::Sign => "Sign",
            UnaryOp::Sin => "Sin",
            UnaryOp::Cos => "Cos",
            UnaryOp::Not => "Not",
            UnaryOp::Softplus => "Softplus",
            UnaryOp::HardSigmoid { .. } => "HardSigmoid",
            UnaryOp::HardSwish => "HardSwish",
            UnaryOp::LeakyRelu { .. } => "LeakyRelu",
            UnaryOp::Elu { .. } => "Elu",
            UnaryOp::Gelu { .. } => "Gelu",
            UnaryOp::IsNaN => "IsNaN",
            UnaryOp::Acos => "Acos",
            UnaryOp::Acosh => "Acosh",
            UnaryOp::Asin => "Asin",
            UnaryOp::Asinh => "Asinh",
            UnaryOp::Atan => "Atan",
            UnaryOp::Atanh => "Atanh",
            UnaryOp::Cosh => "Cosh",
            UnaryOp::Sinh => "Sinh",
            UnaryOp::Tan => "Tan",
            UnaryOp::Softsign => "Softsign",
            UnaryOp::Mish => "Mish",
            UnaryOp::Celu { .. } => "Celu",
            UnaryOp::Selu { .. } => "Selu",
            UnaryOp::ThresholdedRelu { .. } => "ThresholdedRelu",
            UnaryOp::Shrink { .. } => "Shrink",
            UnaryOp::IsInf { .. } => "IsInf",
            UnaryOp::BitwiseNot => "BitwiseNot",
            UnaryOp::Swish { .. } => "Swish",
        }
    }
}

/// Rounding of a cast to float8 e8m0 (ONNX `round_mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum E8M0Round {
    #[default]
    Up,
    Down,
    Nearest,
}

impl E8M0Round {
    pub fn name(self) -> &'static str {
        match self {
            E8M0Round::Up => "up",
            E8M0Round::Down => "down",
            E8M0Round::Nearest => "nearest",
        }
    }
}

impl Op {
    /// A plain saturating Cast to `to` (what every exporter writes).
    pub fn cast(to: DType) -> Op {
        Op::Cast {
            to,
            saturate: true,
            e8m0_round: E8M0Round::Up,
        }
    }
}

/// Elementwise two-input ops with numpy broadcasting.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Max,
    Min,
    /// ONNX Mod; `fmod` selects C fmod semantics (sign of the dividend).
    Mod {
        fmod: bool,
    },
    Equal,
    Less,
    LessOrEqual,
    Greater,
    GreaterOrEqual,
    And,
    Or,
    Xor,
    BitwiseAnd,
    BitwiseOr,
    BitwiseXor,
    /// ONNX BitShift: `left` shifts toward the most significant bit.
    BitShift {
        left: bool,
    },
}

impl BinaryOp {
    pub fn name(&self) -> &'static str {
        match self {
            BinaryOp::Add => "Add",
            BinaryOp::Sub => "Sub",
            BinaryOp::Mul => "Mul",
            BinaryOp::Div => "Div",
            BinaryOp::Pow => "Pow",
            BinaryOp::Max => "Max",
            BinaryOp::Min => "Min",
            BinaryOp::Mod { .. } => "Mod",
            BinaryOp::Equal => "Equal",
            BinaryOp::Less => "Less",
            BinaryOp::LessOrEqual => "LessOrEqual",
            BinaryOp::Greater => "Greater",
            BinaryOp::GreaterOrEqual => "GreaterOrEqual",
            BinaryOp::And => "And",
            BinaryOp::Or => "Or",
            BinaryOp::Xor => "Xor",
            BinaryOp::BitwiseAnd => "BitwiseAnd",
            BinaryOp::BitwiseOr => "BitwiseOr",
            BinaryOp::BitwiseXor => "BitwiseXor",
            BinaryOp::BitShift { .. } => "BitShift",
        }
    }
    /// Comparison and logic ops produce bool.
    pub fn yields_bool(&self) -> bool {
        matches!(
            self,
            BinaryOp::Equal
                | BinaryOp::Less
                | BinaryOp::LessOrEqual
                | BinaryOp::Greater
                | BinaryOp::GreaterOrEqual
                | BinaryOp::And
                | BinaryOp::Or
                | BinaryOp::Xor
        )
    }
}

/// Convolution geometry shared by Conv, QLinearConv and ConvInteger. Spatial rank is
/// `kernel.len()` (1 or 2 in practice; any rank is accepted). `pads` is ONNX order:
/// all begins then all ends. auto_pad is resolved by the importer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvAttrs {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub pads: Vec<usize>,
    pub dilations: Vec<usize>,
    pub group: usize,
}

impl ConvAttrs {
    /// Plain convolution with unit strides/dilations and symmetric padding `pad`.
    pub fn simple(kernel: Vec<usize>, stride: usize, pad: usize, group: usize) -> Self {
        let r = kernel.len();
        ConvAttrs {
            kernel,
            strides: vec![stride; r],
            pads: vec![pad; 2 * r],
            dilations: vec![1; r],
            group,
        }
    }
}

/// Transposed convolution (ONNX ConvTranspose) geometry. The weight is
/// [C_in, C_out/group, kernel...]. `output_shape` and auto_pad are resolved by the importer
/// into `pads` and `output_padding`, so the output extent of spatial axis i is
/// `strides[i]*(in[i]-1) + output_padding[i] + dilations[i]*(kernel[i]-1) + 1 - pads[i] - pads[i+r]`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvTransposeAttrs {
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    /// ONNX order: all begins then all ends (cropped from the full output).
    pub pads: Vec<usize>,
    pub dilations: Vec<usize>,
    /// Extra extent added at the end of each spatial axis.
    pub output_padding: Vec<usize>,
    pub group: usize,
}

impl ConvTransposeAttrs {
    /// Unit dilation, no output padding, symmetric padding `pad`.
    pub fn simple(kernel: Vec<usize>, stride: usize, pad: usize, group: usize) -> Self {
        let r = kernel.len();
        ConvTransposeAttrs {
            kernel,
            strides: vec![stride; r],
            pads: vec![pad; 2 * r],
            dilations: vec![1; r],
            output_padding: vec![0; r],
            group,
        }
    }
}

/// Resize interpolation (ONNX `mode`, with `nearest_mode` folded into `Nearest`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ResizeMode {
    Nearest(NearestMode),
    /// N-linear over every resized axis.
    Linear,
    /// Cubic convolution (Keys kernel with coefficient `cubic_coeff_a`).
    Cubic,
}

/// ONNX Resize `nearest_mode`: how a fractional source coordinate is rounded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum NearestMode {
    RoundPreferFloor,
    RoundPreferCeil,
    Floor,
    Ceil,
}

/// ONNX Resize `coordinate_transformation_mode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum CoordMode {
    HalfPixel,
    HalfPixelSymmetric,
    PytorchHalfPixel,
    AlignCorners,
    Asymmetric,
    TfCropAndResize,
}

/// Resolved Resize: the importer folds the constant `roi`/`scales`/`sizes` operands, `axes`
/// and `keep_aspect_ratio_policy` into one scale and one output extent per axis.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResizeAttrs {
    pub mode: ResizeMode,
    pub coord: CoordMode,
    /// Scale of each axis as used by the coordinate transform (the given `scales`, or
    /// `sizes[i] / in[i]` when sizes were given). f64 so that a scale derived from sizes is
    /// as exact as the ONNX reference implementation's.
    pub scales: Vec<f64>,
    /// Output extent of each axis.
    pub sizes: Vec<usize>,
    /// tf_crop_and_resize only: starts then ends, normalized, one pair per axis; else empty.
    pub roi: Vec<f32>,
    pub cubic_coeff_a: f32,
    pub exclude_outside: bool,
    pub extrapolation_value: f32,
    /// Linear/cubic only: widen the kernel by 1/scale when downsampling (opset 18).
    pub antialias: bool,
}

impl ResizeAttrs {
    /// Resize by `scales` (output extent `floor(in * scale)`), ONNX defaults otherwise.
    pub fn from_scales(
        in_shape: &[usize],
        scales: Vec<f64>,
        mode: ResizeMode,
        coord: CoordMode,
    ) -> Self {
        let sizes = in_shape
            .iter()
            .zip(&scales)
            .map(|(&d, &s)| (d as f64 * s).floor().max(0.0) as usize)
            .collect();
        ResizeAttrs {
            mode,
            coord,
            scales,
            sizes,
            roi: Vec::new(),
            cubic_coeff_a: -0.75,
            exclude_outside: false,
            extrapolation_value: 0.0,
            antialias: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PoolKind {
    Max,
    Avg,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PoolAttrs {
    pub kind: PoolKind,
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    pub pads: Vec<usize>,
    pub dilations: Vec<usize>,
    pub ceil_mode: bool,
    pub count_include_pad: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum ReduceKind {
    Mean,
    Sum,
    Max,
    Min,
    Prod,
    SumSquare,
    L2,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PadMode {
    Constant,
    Reflect,
    Edge,
    /// Periodic: index c reads c mod n (ONNX opset 19 `wrap`).
    Wrap,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum RnnDirection {
    Forward,
    Reverse,
    Bidirectional,
}

impl RnnDirection {
    pub fn num_directions(self) -> usize {
        if self == RnnDirection::Bidirectional {
            2
        } else {
            1
        }
    }
}

/// LSTM / GRU attributes (ONNX layout 0: [seq, batch, feature]); default activations only
/// (sigmoid, tanh, tanh), which is what PyTorch exports.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RnnAttrs {
    pub hidden_size: usize,
    pub direction: RnnDirection,
    /// GRU only: apply the reset gate after the recurrent matmul (PyTorch exports 1).
    pub linear_before_reset: bool,
    /// ONNX `layout` attribute: true for batch-first [batch, seq, feature].
    pub batch_first: bool,
}

/// Resolved Slice: one entry per sliced axis, already clamped to the input's extent.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceAxis {
    pub axis: usize,
    pub start: i64,
    pub end: i64,
    pub step: i64,
}

/// The operator set. Input conventions (index: meaning) follow ONNX after constant
/// operands have been folded into attributes; optional inputs are `None` in the node.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Op {
    /// 0: x
    Unary(UnaryOp),
    /// 0: a, 1: b (broadcast)
    Binary(BinaryOp),
    /// 0: condition (bool), 1: x, 2: y
    Where,
    /// 0: x
    Clip {
        min: Option<f32>,
        max: Option<f32>,
    },
    /// 0: x. `saturate` (ONNX 19+, float8 targets only): out-of-range values become the
    /// largest finite value instead of infinity/NaN. `e8m0_round`: float8 e8m0's
    /// rounding (ONNX 24+ `round_mode`).
    Cast {
        to: DType,
        saturate: bool,
        e8m0_round: E8M0Round,
    },
    Identity,
    /// 0: x, 1: w, 2: bias?
    Conv(ConvAttrs),
    /// 0: x, 1: w [C_in, C_out/group, kernel...], 2: bias?
    ConvTranspose(ConvTransposeAttrs),
    /// 0: x, 1: slope (unidirectionally broadcastable to x; PyTorch exports [C, 1, 1])
    PRelu,
    /// 0: x (roi, scales and sizes folded into the attributes)
    Resize(ResizeAttrs),
    /// 0: x
    Pool(PoolAttrs),
    /// 0: x; average or max over all spatial axes, keeping them as 1.
    GlobalPool(PoolKind),
    /// 0: a, 1: b, 2: c?
    Gemm {
        alpha: f32,
        beta: f32,
        trans_a: bool,
        trans_b: bool,
    },
    /// 0: a, 1: b (numpy matmul)
    MatMul,
    /// 0: x, 1: scale, 2: bias, 3: mean, 4: var
    BatchNorm {
        epsilon: f32,
    },
    /// 0: x, 1: scale, 2: bias?; normalizes axes [axis..rank)
    LayerNorm {
        axis: usize,
        epsilon: f32,
    },
    /// 0: x
    Softmax {
        axis: usize,
    },
    /// 0: x
    LogSoftmax {
        axis: usize,
    },
    /// 0: x; axes sorted, deduplicated, non-negative
    Reduce {
        kind: ReduceKind,
        axes: Vec<usize>,
        keepdims: bool,
    },
    /// 0: x
    ArgMax {
        axis: usize,
        keepdims: bool,
        /// Index of the last maximum instead of the first (ONNX select_last_index).
        select_last: bool,
    },
    /// 0: x; target shape fully resolved (no -1 or 0)
    Reshape {
        shape: Vec<usize>,
    },
    /// 0: x
    Transpose {
        perm: Vec<usize>,
    },
    /// 0..n: inputs
    Concat {
        axis: usize,
    },
    /// 0: x; one output per size
    Split {
        axis: usize,
        sizes: Vec<usize>,
    },
    /// 0: x
    Slice {
        axes: Vec<SliceAxis>,
    },
    /// 0: data, 1: indices (i64 or i32; negative indices allowed)
    Gather {
        axis: usize,
    },
    /// 0: x; output shape fully resolved
    Expand {
        shape: Vec<usize>,
    },
    /// 0: x; ONNX pads order (begins then ends)
    Pad {
        pads: Vec<usize>,
        mode: PadMode,
        value: f32,
    },
    /// 0: x
    Tile {
        repeats: Vec<usize>,
    },
    /// ONNX If. 0: cond (one bool), then the values both branches capture from the
    /// enclosing graph (each branch graph's inputs, in order). Outputs: the branch's.
    If {
        then_branch: Subgraph,
        else_branch: Subgraph,
    },
    /// ONNX Loop. 0: M (one i64)?, 1: cond (one bool)?, then `n_carried` initial values,
    /// then captures. Body: (iteration, cond, carried..., captures...) -> (cond,
    /// carried..., scan slices...). Outputs: final carried values, then each scan output
    /// stacked along a new axis 0 of `scan_len` iterations (a constant trip count).
    Loop {
        body: Subgraph,
        n_carried: usize,
        scan_len: Option<usize>,
    },
    /// ONNX Scan (opset 9+). Inputs: states, scan inputs, captures. Body: (states, one
    /// slice of each scan input, captures) -> (states, scan output slices).
    Scan {
        body: Subgraph,
        attrs: ScanAttrs,
    },
    /// 0: start, 1: limit, 2: delta (scalars of one dtype); `count` elements
    /// `start, start + delta, ...` (accumulated in the dtype, as onnxruntime does). The
    /// count depends on the operands' values, so the importer only creates it when they
    /// are constants (and then folds it).
    Range {
        count: usize,
    },
    /// 0: x, 1: w, 2: r, 3: b?, 4: sequence_lens? (unsupported), 5: initial_h?, 6: initial_c?
    /// outputs: y, y_h, y_c
    Lstm(RnnAttrs),
    /// 0: x, 1: w, 2: r, 3: b?, 4: sequence_lens?, 5: initial_h?; outputs: y, y_h
    Gru(RnnAttrs),
    /// 0: x (f32), 1: scale, 2: zero_point? (its dtype is the output dtype); per-axis when
    /// scale is 1-D
    QuantizeLinear {
        axis: usize,
        to: DType,
    },
    /// 0: x (i8/u8/i32), 1: scale, 2: zero_point?
    DequantizeLinear {
        axis: usize,
    },
    /// 0: a, 1: a_scale, 2: a_zp, 3: b, 4: b_scale, 5: b_zp, 6: y_scale, 7: y_zp
    QLinearMatMul,
    /// 0: x, 1: x_scale, 2: x_zp, 3: w, 4: w_scale, 5: w_zp, 6: y_scale, 7: y_zp, 8: bias? (i32)
    QLinearConv(ConvAttrs),
    /// 0: a, 1: b, 2: a_zp?, 3: b_zp?; output i32
    MatMulInteger,
    /// 0: x, 1: w, 2: x_zp?, 3: w_zp?; output i32
    ConvInteger(ConvAttrs),
    /// com.microsoft: 0: a, 1: a_scale, 2: a_zp, 3: b, 4: b_scale, 5: b_zp, 6: y_scale, 7: y_zp
    QLinearAdd,
    /// com.microsoft: same inputs as QLinearAdd
    QLinearMul,
    /// com.microsoft: 0: y_scale, 1: y_zp, then (x, x_scale, x_zp) triples
    QLinearConcat {
        axis: usize,
    },
    /// com.microsoft: 0: x, 1: x_scale, 2: x_zp, 3: y_scale, 4: y_zp
    QLinearGlobalAveragePool {
        channels_last: bool,
    },
    /// com.microsoft: 0: a, 1: a_scale, 2: a_zp, 3: b, 4: b_scale, 5: b_zp, 6: c? (i32),
    /// 7: y_scale?, 8: y_zp?; without y_scale the output is f32
    QGemm {
        alpha: f32,
        trans_a: bool,
        trans_b: bool,
    },
    /// com.microsoft: 0: x, 1: x_scale, 2: x_zp, 3: y_scale, 4: y_zp
    QLinearSigmoid,
    /// com.microsoft: same inputs as QLinearSigmoid
    QLinearLeakyRelu {
        alpha: f32,
    },
    /// com.microsoft: 0: x, 1: x_scale, 2: x_zp, 3: y_scale, 4: y_zp; NCHW average
    /// pooling (kind Avg) computed as onnxruntime does (dequantize, f32 window sums).
    QLinearAveragePool(PoolAttrs),
    /// com.microsoft: 0: x, 1: x_scale, 2: x_zp, 3: y_scale, 4: y_zp; softmax over
    /// `axis` (opset >= 13) or over the flattened axes [axis, rank) (`flatten`), by
    /// onnxruntime's 256-entry exp table.
    QLinearSoftmax {
        axis: usize,
        flatten: bool,
    },
    /// com.microsoft: 0: cond (bool), 1: x, 2: x_scale, 3: x_zp, 4: y, 5: y_scale,
    /// 6: y_zp, 7: z_scale, 8: z_zp (numpy broadcasting).
    QLinearWhere,

    // ---- ONNX node-suite coverage (issue #16 item 4): native ops ----
    /// 0: data, 1: indices (same rank as data, i64/i32, negative allowed); the output has
    /// the indices' shape.
    GatherElements {
        axis: usize,
    },
    /// 0: data, 1: indices [..., k] (i64); output indices.shape[..-1] ++ data.shape[batch_dims + k..]
    GatherNd {
        batch_dims: usize,
    },
    /// 0: data, 1: indices (shape of updates), 2: updates. ONNX ScatterElements and Scatter.
    ScatterElements {
        axis: usize,
        reduction: ScatterReduction,
    },
    /// 0: data, 1: indices [..., k] (i64), 2: updates
    ScatterNd {
        reduction: ScatterReduction,
    },
    /// 0: past_cache, 1: update, 2: write_indices? ([batch] i64). ONNX TensorScatter (24):
    /// update written along `axis` from write_indices[b] (modulo the extent when circular).
    TensorScatter {
        axis: usize,
        circular: bool,
    },
    /// 0: x. ONNX CumSum (`prod` false) and CumProd (true); the axis operand is folded.
    Cumulative {
        axis: usize,
        exclusive: bool,
        reverse: bool,
        prod: bool,
    },
    /// 0: x; outputs: values, indices (i64), `k` along `axis` (the k operand is folded).
    /// Ties keep the lower index first; the output is always sorted.
    TopK {
        axis: usize,
        k: usize,
        largest: bool,
        sorted: bool,
    },
    /// 0: x
    ArgMin {
        axis: usize,
        keepdims: bool,
        select_last: bool,
    },
    /// 0: x; the same bytes read as `to` (same bit width).
    BitCast {
        to: DType,
    },
    /// 0..n: operands; numpy einsum semantics (explicit or implicit output, ellipsis).
    Einsum {
        equation: String,
    },
    /// 0: x, 1: indices (i64, flat positions in the unpooled shape the kernel geometry
    /// gives); the output of `output_shape` holds that shape in its leading corner.
    MaxUnpool {
        kernel: Vec<usize>,
        strides: Vec<usize>,
        pads: Vec<usize>,
        output_shape: Vec<usize>,
    },
    /// 0: x, 1: sequence_lens ([batch] i64)
    ReverseSequence {
        batch_axis: usize,
        time_axis: usize,
    },
    /// 0: x [..., M, M]; determinant of each matrix
    Det,
    /// 0: x [..., n, 1|2] (real or complex); the transform of length `length` along `axis`
    /// gives [..., L, 2] ([..., length, 1] for an inverse onesided transform, whose input
    /// holds length/2 + 1 bins; L = length/2 + 1 for a forward onesided one).
    Dft {
        axis: usize,
        length: usize,
        inverse: bool,
        onesided: bool,
    },
    /// 0: signal [B, L, 1|2], 1: window? ([frame_length]); output [B, frames, bins, 2]
    Stft {
        frame_step: usize,
        frame_length: usize,
        onesided: bool,
    },
    /// 0: x [N, C·prod(block), blocks]; output [N, C, image...]
    Col2Im(Col2ImAttrs),
    /// 0: x [N, C, in...], 1: grid [N, out..., r] (normalized coordinates, x first)
    GridSample {
        mode: GridMode,
        padding: GridPadding,
        align_corners: bool,
    },
    /// 0: x [N, C, H, W], 1: rois [R, 4] (x1, y1, x2, y2), 2: batch_indices [R]
    RoiAlign(RoiAlignAttrs),
    /// 0: x, 1: w, 2: offset [N, offset_group·2·kh·kw, oh, ow], 3: bias?, 4: mask?
    DeformConv {
        conv: ConvAttrs,
        offset_group: usize,
    },
    /// Plain ONNX RNN with tanh: 0: x, 1: w, 2: r, 3: b?, 4: sequence_lens? (unsupported),
    /// 5: initial_h?; outputs y, y_h.
    Rnn(RnnAttrs),
    /// 0: x (f32); outputs: y (u8), y_scale (f32 scalar), y_zero_point (u8 scalar)
    DynamicQuantizeLinear,
    /// 0: x; output [rank, count] (i64). `count` depends on the data: the importer creates
    /// this op only when x is a constant (and folds it).
    NonZero {
        count: usize,
    },
    /// 0: x; outputs y, indices, inverse_indices, counts (numpy unique). `count` unique
    /// elements (slices along `axis`); data-dependent like NonZero.
    Unique {
        axis: Option<usize>,
        sorted: bool,
        count: usize,
    },
    /// 0: x, 1: condition (bool, constant); the `count` selected slices along `axis`
    /// (of the flattened x when None).
    Compress {
        axis: Option<usize>,
        count: usize,
    },
    /// 0: boxes [B, N, 4], 1: scores [B, C, N], 2: max_output_boxes_per_class?,
    /// 3: iou_threshold?, 4: score_threshold?; output [count, 3] (i64)
    NonMaxSuppression {
        center_point_box: bool,
        count: usize,
    },
    /// 0: tokens [C] or [B, C] (i32/i64); output f32 [out] or [B, out]
    TfIdfVectorizer(TfIdfAttrs),
    /// 0: x; the i64 Indices output of ONNX MaxPool (the values are a separate `Pool`):
    /// the flat position of each window's first maximum in x, with the spatial axes
    /// row-major, or column-major when `column_major` (storage_order 1).
    MaxPoolIndices {
        pool: PoolAttrs,
        column_major: bool,
    },
}

impl Op {
    /// Positions of the quantization scale inputs among `n_inputs` (scales must be finite
    /// and positive: a zero or NaN scale turns every value into 0 or a saturated code).
    pub fn scale_inputs(&self, n_inputs: usize) -> Vec<usize> {
        match self {
            Op::QuantizeLinear { .. } | Op::DequantizeLinear { .. } => vec![1],
            Op::QLinearMatMul | Op::QLinearConv(_) | Op::QLinearAdd | Op::QLinearMul => {
                vec![1, 4, 6]
            }
            Op::QGemm { .. } => vec![1, 4, 7],
            Op::QLinearGlobalAveragePool { .. }
            | Op::QLinearSigmoid
            | Op::QLinearLeakyRelu { .. }
            | Op::QLinearAveragePool(_)
            | Op::QLinearSoftmax { .. } => vec![1, 3],
            Op::QLinearWhere => vec![2, 5, 7],
            Op::QLinearConcat { .. } => std::iter::once(0)
                .chain((2..n_inputs).step_by(3).map(|x| x + 1))
                .collect(),
            _ => vec![],
        }
    }

    /// (zero point input, input whose type it must have) of a quantized op: onnxruntime
    /// rejects a zero point of another type (an int32 zero point of 300 on QLinearConv).
    pub fn zero_point_inputs(&self, n_inputs: usize) -> Vec<(usize, usize)> {
        match self {
            Op::DequantizeLinear { .. } => vec![(2, 0)],
            Op::QLinearMatMul
            | Op::QLinearConv(_)
            | Op::QLinearAdd
            | Op::QLinearMul
            | Op::QGemm { .. } => vec![(2, 0), (5, 3)],
            Op::MatMulInteger | Op::ConvInteger(_) => vec![(2, 0), (3, 1)],
            Op::QLinearGlobalAveragePool { .. }
            | Op::QLinearSigmoid
            | Op::QLinearLeakyRelu { .. }
            | Op::QLinearAveragePool(_)
            | Op::QLinearSoftmax { .. } => vec![(2, 0)],
            Op::QLinearWhere => vec![(3, 1), (6, 4)],
            Op::QLinearConcat { .. } => (2..n_inputs).step_by(3).map(|x| (x + 2, x)).collect(),
            _ => vec![],
        }
    }

    /// The op's name as it appears in dumps (the ONNX op type where there is one).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Unary(u) => u.name(),
            Op::Binary(b) => b.name(),
            Op::Where => "Where",
            Op::Clip { .. } => "Clip",
            Op::Cast { .. } => "Cast",
            Op::Identity => "Identity",
            Op::Conv(_) => "Conv",
            Op::ConvTranspose(_) => "ConvTranspose",
            Op::PRelu => "PRelu",
            Op::Resize(_) => "Resize",
            Op::Pool(p) => match p.kind {
                PoolKind::Max => "MaxPool",
                PoolKind::Avg => "AveragePool",
            },
            Op::GlobalPool(PoolKind::Max) => "GlobalMaxPool",
            Op::GlobalPool(PoolKind::Avg) => "GlobalAveragePool",
            Op::Gemm { .. } => "Gemm",
            Op::MatMul => "MatMul",
            Op::BatchNorm { .. } => "BatchNormalization",
            Op::LayerNorm { .. } => "LayerNormalization",
            Op::Softmax { .. } => "Softmax",
            Op::LogSoftmax { .. } => "LogSoftmax",
            Op::Reduce { kind, .. } => match kind {
                ReduceKind::Mean => "ReduceMean",
                ReduceKind::Sum => "ReduceSum",
                ReduceKind::Max => "ReduceMax",
                ReduceKind::Min => "ReduceMin",
                ReduceKind::Prod => "ReduceProd",
                ReduceKind::SumSquare => "ReduceSumSquare",
                ReduceKind::L2 => "ReduceL2",
            },
            Op::ArgMax { .. } => "ArgMax",
            Op::Reshape { .. } => "Reshape",
            Op::Transpose { .. } => "Transpose",
            Op::Concat { .. } => "Concat",
            Op::Split { .. } => "Split",
            Op::Slice { .. } => "Slice",
            Op::Gather { .. } => "Gather",
            Op::Expand { .. } => "Expand",
            Op::Pad { .. } => "Pad",
            Op::Tile { .. } => "Tile",
            Op::Range { .. } => "Range",
            Op::If { .. } => "If",
            Op::Loop { .. } => "Loop",
            Op::Scan { .. } => "Scan",
            Op::Lstm(_) => "LSTM",
            Op::Gru(_) => "GRU",
            Op::QuantizeLinear { .. } => "QuantizeLinear",
            Op::DequantizeLinear { .. } => "DequantizeLinear",
            Op::QLinearMatMul => "QLinearMatMul",
            Op::QLinearConv(_) => "QLinearConv",
            Op::MatMulInteger => "MatMulInteger",
            Op::ConvInteger(_) => "ConvInteger",
            Op::QLinearAdd => "QLinearAdd",
            Op::QLinearMul => "QLinearMul",
            Op::QLinearConcat { .. } => "QLinearConcat",
            Op::QLinearGlobalAveragePool { .. } => "QLinearGlobalAveragePool",
            Op::QGemm { .. } => "QGemm",
            Op::QLinearSigmoid => "QLinearSigmoid",
            Op::QLinearLeakyRelu { .. } => "QLinearLeakyRelu",
            Op::QLinearAveragePool(_) => "QLinearAveragePool",
            Op::QLinearSoftmax { .. } => "QLinearSoftmax",
            Op::QLinearWhere => "QLinearWhere",
            // ---- ONNX node-suite coverage (issue #16 item 4) ----
            Op::GatherElements { .. } => "GatherElements",
            Op::GatherNd { .. } => "GatherND",
            Op::ScatterElements { .. } => "ScatterElements",
            Op::ScatterNd { .. } => "ScatterND",
            Op::TensorScatter { .. } => "TensorScatter",
            Op::Cumulative { prod: false, .. } => "CumSum",
            Op::Cumulative { prod: true, .. } => "CumProd",
            Op::TopK { .. } => "TopK",
            Op::ArgMin { .. } => "ArgMin",
            Op::BitCast { .. } => "BitCast",
            Op::Einsum { .. } => "Einsum",
            Op::MaxUnpool { .. } => "MaxUnpool",
            Op::ReverseSequence { .. } => "ReverseSequence",
            Op::Det => "Det",
            Op::Dft { .. } => "DFT",
            Op::Stft { .. } => "STFT",
            Op::Col2Im(_) => "Col2Im",
            Op::GridSample { .. } => "GridSample",
            Op::RoiAlign(_) => "RoiAlign",
            Op::DeformConv { .. } => "DeformConv",
            Op::Rnn(_) => "RNN",
            Op::DynamicQuantizeLinear => "DynamicQuantizeLinear",
            Op::NonZero { .. } => "NonZero",
            Op::Unique { .. } => "Unique",
            Op::Compress { .. } => "Compress",
            Op::NonMaxSuppression { .. } => "NonMaxSuppression",
            Op::TfIdfVectorizer(_) => "TfIdfVectorizer",
            Op::MaxPoolIndices { .. } => "MaxPoolIndices",
        }
    }

    /// Number of outputs the op produces given its attributes.
    pub fn num_outputs(&self) -> usize {
        match self {
            Op::If { then_branch, .. } => then_branch.graph().outputs.len(),
            Op::Loop { body, .. } => body.graph().outputs.len().saturating_sub(1),
            Op::Scan { body, .. } => body.graph().outputs.len(),
            Op::Split { sizes, .. } => sizes.len(),
            Op::Lstm(_) => 3,
            Op::Gru(_) => 2,
            // ---- ONNX node-suite coverage (issue #16 item 4) ----
            Op::TopK { .. } | Op::Rnn(_) => 2,
            Op::DynamicQuantizeLinear => 3,
            Op::Unique { .. } => 4,
            _ => 1,
        }
    }
}
