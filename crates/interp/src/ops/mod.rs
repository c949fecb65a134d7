//! Op kernels, one file per family. [`eval`] is the single exhaustive match over
//! `pimkit_ir::Op`: adding a variant to the IR fails to compile here until it is
//! implemented.

mod control;
mod conv;
pub(crate) mod elementwise;
mod linalg;
mod norm;
mod pool;
mod qconv;
mod qelementwise;
mod qpool_softmax;
mod qresize;
mod quant;
mod reduce;
pub(crate) mod rnn;
mod shape;
mod upsample;

// ONNX node-suite coverage (issue #16 item 4).
mod index;
mod misc;
pub(crate) mod order;
mod sample;
mod signal;

use crate::error::OpResult;
use crate::exec::Ctx;
use pimkit_ir::{Op, Tensor};

pub(crate) fn eval(op: &Op, c: &Ctx) -> OpResult<Vec<Tensor>> {
    let one = |t: Tensor| Ok(vec![t]);
    match op {
        Op::Unary(u) => one(elementwise::unary(*u, c.input(0)?)?),
        Op::Binary(b) => one(elementwise::binary(*b, c.input(0)?, c.input(1)?)?),
        Op::Where => one(elementwise::where_(c.input(0)?, c.input(1)?, c.input(2)?)?),
        Op::Clip { min, max } => one(elementwise::clip(c.input(0)?, *min, *max)?),
        Op::Cast {
            to,
            saturate,
            e8m0_round,
        } => one(elementwise::cast(c.input(0)?, *to, *saturate, *e8m0_round)),
        Op::Identity => one(c.input(0)?.clone()),
        Op::Conv(a) => one(conv::conv(
            c.input(0)?,
            c.input(1)?,
            c.opt(2),
            a,
            c.prep,
            c.act,
        )?),
        Op::ConvTranspose(a) => one(upsample::conv_transpose(
            c.input(0)?,
            c.input(1)?,
            c.opt(2),
            a,
        )?),
        Op::PRelu => one(upsample::prelu(c.input(0)?, c.input(1)?)?),
        Op::Resize(a) if c.input(0)?.dtype().is_quant8() => {
            one(qresize::resize_q8(c.input(0)?, a)?)
        }
        Op::Resize(a) => one(upsample::resize(c.input(0)?, a)?),
        Op::Pool(p) => one(pool::pool(c.input(0)?, p, c.out_ty(0))?),
        Op::GlobalPool(kind) => one(pool::global_pool(c.input(0)?, *kind)?),
        Op::Gemm {
            alpha,
            beta,
            trans_a,
            trans_b,
        } => one(linalg::gemm(
            c.input(0)?,
            c.input(1)?,
            c.opt(2),
            *alpha,
            *beta,
            *trans_a,
            *trans_b,
            c.prep,
        )?),
        Op::MatMul => one(linalg::matmul(
            c.input(0)?,
            c.input(1)?,
            c.out_ty(0),
            c.prep,
        )?),
        Op::BatchNorm { epsilon } => one(norm::batch_norm(c, *epsilon)?),
        Op::LayerNorm { axis, epsilon } => one(norm::layer_norm(
            c.input(0)?,
            c.input(1)?,
            c.opt(2),
            *axis,
            *epsilon,
        )?),
        Op::Softmax { axis } => one(norm::softmax(c.input(0)?, *axis, false)?),
        Op::LogSoftmax { axis } => one(norm::softmax(c.input(0)?, *axis, true)?),
        Op::Reduce { kind, axes, .. } => {
            one(reduce::reduce(c.input(0)?, *kind, axes, c.out_ty(0))?)
        }
        Op::ArgMax {
            axis, select_last, ..
        } => one(shape::argmax(
            c.input(0)?,
            *axis,
            *select_last,
            c.out_ty(0),
        )?),
        Op::Reshape { shape } => one(shape::reshape(c.input(0)?, shape)?),
        Op::Transpose { perm } => one(shape::transpose(c.input(0)?, perm)),
        Op::Concat { axis } => {
            let ins: Vec<&Tensor> = (0..c.ins.len())
                .map(|i| c.input(i))
                .collect::<OpResult<_>>()?;
            one(shape::concat(&ins, *axis)?)
        }
        Op::Split { axis, sizes } => shape::split(c.input(0)?, *axis, sizes),
        Op::Slice { axes } => one(shape::slice(c.input(0)?, axes, c.out_ty(0))),
        Op::Gather { axis } => one(shape::gather(c.input(0)?, c.input(1)?, *axis)?),
        Op::Expand { .. } => one(shape::expand(c.input(0)?, c.out_ty(0))),
        Op::Pad { pads, mode, value } => one(shape::pad(c.input(0)?, pads, *mode, *value)?),
        Op::Tile { repeats } => one(shape::tile(c.input(0)?, repeats)),
        Op::If {
            then_branch,
            else_branch,
        } => control::if_(c, then_branch.graph(), else_branch.graph()),
        Op::Loop {
            body,
            n_carried,
            scan_len,
        } => control::loop_(c, body.graph(), *n_carried, *scan_len),
        Op::Scan { body, attrs } => control::scan(c, body.graph(), attrs),
        Op::Range { count } => one(shape::range(c.input(0)?, c.input(2)?, *count)?),
        Op::Lstm(a) => rnn::lstm(c, a),
        Op::Gru(a) => rnn::gru(c, a),
        Op::QuantizeLinear { axis, to } => one(quant::quantize_linear(c, *axis, *to)?),
        Op::DequantizeLinear { axis } => one(quant::dequantize_linear(c, *axis)?),
        Op::QLinearMatMul => one(quant::qlinear_matmul(c)?),
        Op::QLinearConv(a) => one(qconv::qlinear_conv(c, a)?),
        Op::MatMulInteger => one(quant::matmul_integer(c)?),
        Op::ConvInteger(a) => one(qconv::conv_integer(c, a)?),
        Op::QLinearAdd => one(qelementwise::qlinear_add(c)?),
        Op::QLinearMul => one(qelementwise::qlinear_mul(c)?),
        Op::QLinearConcat { axis } => one(qelementwise::qlinear_concat(c, *axis)?),
        Op::QLinearGlobalAveragePool { channels_last } => {
            one(qelementwise::qlinear_global_avg_pool(c, *channels_last)?)
        }
        Op::QGemm {
            alpha,
            trans_a,
            trans_b,
        } => one(quant::qgemm(c, *alpha, *trans_a, *trans_b)?),
        Op::QLinearAveragePool(p) => one(qpool_softmax::qlinear_avg_pool(c, p)?),
        Op::QLinearSoftmax { axis, flatten } => {
            one(qpool_softmax::qlinear_softmax(c, *axis, *flatten)?)
        }
        Op::QLinearWhere => one(qpool_softmax::qlinear_where(c)?),
        Op::QLinearSigmoid => one(qelementwise::qlinear_lookup(c, |x| {
            elementwise::sigmoid_f32(x)
        })?),
        Op::QLinearLeakyRelu { alpha } => {
            let a = *alpha;
            one(qelementwise::qlinear_lookup(c, move |x| {
                if x >= 0.0 { x } else { x * a }
            })?)
        }
        // ---- ONNX node-suite coverage (issue #16 item 4) ----
        Op::GatherElements { axis } => {
            one(index::gather_elements(c.input(0)?, c.input(1)?, *axis)?)
        }
        Op::GatherNd { batch_dims } => one(index::gather_nd(
            c.input(0)?,
            c.input(1)?,
            *batch_dims,
            c.out_ty(0),
        )?),
        Op::ScatterElements { axis, reduction } => one(index::scatter_elements(
            c.input(0)?,
            c.input(1)?,
            c.input(2)?,
            *axis,
            *reduction,
        )?),
        Op::ScatterNd { reduction } => one(index::scatter_nd(
            c.input(0)?,
            c.input(1)?,
            c.input(2)?,
            *reduction,
        )?),
        Op::TensorScatter { axis, circular } => one(index::tensor_scatter(
            c.input(0)?,
            c.input(1)?,
            c.opt(2),
            *axis,
            *circular,
        )?),
        Op::Cumulative {
            axis,
            exclusive,
            reverse,
            prod,
        } => one(order::cumulative(
            c.input(0)?,
            *axis,
            *exclusive,
            *reverse,
            *prod,
        )?),
        Op::TopK {
            axis, k, largest, ..
        } => order::topk(c.input(0)?, *axis, *k, *largest),
        Op::ArgMin {
            axis, select_last, ..
        } => one(order::argmin(
            c.input(0)?,
            *axis,
            *select_last,
            c.out_ty(0),
        )?),
        Op::BitCast { to } => one(misc::bitcast(c.input(0)?, *to)?),
        Op::Einsum { equation } => {
            let ins: Vec<&Tensor> = (0..c.ins.len())
                .map(|i| c.input(i))
                .collect::<OpResult<_>>()?;
            one(misc::einsum(&ins, equation, c.out_ty(0))?)
        }
        Op::MaxUnpool {
            kernel,
            strides,
            pads,
            output_shape,
        } => one(index::max_unpool(
            c.input(0)?,
            c.input(1)?,
            kernel,
            strides,
            pads,
            output_shape,
        )?),
        Op::ReverseSequence {
            batch_axis,
            time_axis,
        } => one(index::reverse_sequence(
            c.input(0)?,
            c.input(1)?,
            *batch_axis,
            *time_axis,
        )?),
        Op::Det => one(misc::det(c.input(0)?, c.out_ty(0))?),
        Op::Dft {
            axis,
            length,
            inverse,
            onesided,
        } => one(signal::dft(
            c.input(0)?,
            *axis,
            *length,
            *inverse,
            *onesided,
            c.out_ty(0),
        )?),
        Op::Stft {
            frame_step,
            frame_length,
            ..
        } => one(signal::stft(
            c.input(0)?,
            c.opt(1),
            *frame_step,
            *frame_length,
            c.out_ty(0),
        )?),
        Op::Col2Im(a) => one(sample::col2im(c.input(0)?, a, c.out_ty(0))?),
        Op::GridSample {
            mode,
            padding,
            align_corners,
        } => one(sample::grid_sample(
            c.input(0)?,
            c.input(1)?,
            *mode,
            *padding,
            *align_corners,
            c.out_ty(0),
        )?),
        Op::RoiAlign(a) => one(sample::roi_align(c.input(0)?, c.input(1)?, c.input(2)?, a)?),
        Op::DeformConv { conv, offset_group } => one(sample::deform_conv(
            c.input(0)?,
            c.input(1)?,
            c.input(2)?,
            c.opt(3),
            c.opt(4),
            conv,
            *offset_group,
            c.out_ty(0),
        )?),
        Op::Rnn(a) => rnn::rnn(c, a),
        Op::DynamicQuantizeLinear => misc::dynamic_quantize_linear(c.input(0)?),
        Op::NonZero { .. } => one(index::nonzero(c.input(0)?)?),
        Op::Unique { axis, sorted, .. } => order::unique(c.input(0)?, *axis, *sorted),
        Op::Compress { axis, .. } => one(index::compress(c.input(0)?, c.input(1)?, *axis)?),
        Op::NonMaxSuppression {
            center_point_box, ..
        } => one(order::non_max_suppression(
            c.input(0)?,
            c.input(1)?,
            c.opt(2),
            c.opt(3),
            c.opt(4),
            *center_point_box,
        )?),
        Op::TfIdfVectorizer(a) => one(misc::tfidf(c.input(0)?, a, c.out_ty(0))?),
        Op::MaxPoolIndices { pool, column_major } => one(index::max_pool_indices(
            c.input(0)?,
            pool,
            *column_major,
            c.out_ty(0),
        )?),
    }
}

/// The output extent of an op whose output size depends on its input data (NonZero,
/// Unique, Compress, NonMaxSuppression), computed by the op's own kernel so that the
/// importer can create the op with a static shape when those inputs are constants.
pub(crate) fn data_dependent_count(op: &Op, ins: &[Option<&Tensor>]) -> OpResult<usize> {
    let get = |i: usize| {
        ins.get(i)
            .copied()
            .flatten()
            .ok_or_else(|| crate::error::OpError::Invalid(format!("input {i} is missing")))
    };
    let opt = |i: usize| ins.get(i).copied().flatten();
    match op {
        Op::NonZero { .. } => Ok(index::nonzero(get(0)?)?.shape[1]),
        Op::Unique { axis, sorted, .. } => Ok(order::unique(get(0)?, *axis, *sorted)?[1].numel()),
        Op::Compress { axis, .. } => {
            let t = index::compress(get(0)?, get(1)?, *axis)?;
            Ok(t.shape[axis.unwrap_or(0)])
        }
        Op::NonMaxSuppression {
            center_point_box, ..
        } => Ok(order::non_max_suppression(
            get(0)?,
            get(1)?,
            opt(2),
            opt(3),
            opt(4),
            *center_point_box,
        )?
        .shape[0]),
        _ => crate::error::unsupported(format!("{} has a static output shape", op.name())),
    }
}
