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
mod rnn;
mod shape;
mod upsample;

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
        Op::Conv(a) => one(conv::conv(c.input(0)?, c.input(1)?, c.opt(2), a)?),
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
        )?),
        Op::MatMul => one(linalg::matmul(c.input(0)?, c.input(1)?, c.out_ty(0))?),
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
    }
}
