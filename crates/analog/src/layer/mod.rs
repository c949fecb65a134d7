//! Weighted layers on crossbars. Each layer's weight operand becomes integer crossbar
//! matrices once ([`lower`]); on every call its activations become DAC codes, the arrays
//! of the trial compute the products ([`crate::mvm`]), and the result re-enters the op:
//!
//! * float ops (Conv, Gemm, MatMul, LSTM, GRU): the reference interpreter evaluates the
//!   node on its actual inputs and the crossbar's error against the exact float product,
//!   (decoded crossbar result) - x W, is added where the product enters the op;
//! * integer ops (ConvInteger, MatMulInteger) output the crossbar's int32 accumulators;
//! * QLinearConv, QLinearMatMul, QGemm requantize the crossbar's accumulators with
//!   pimkit-interp's own requantization ([`pimkit_interp::quant`]), as its kernels do.
//!
//! With ideal settings the integer paths are exact, so the outputs equal the interpreter's.

mod conv;
mod dense;
mod epilogue;
pub mod im2col;
mod rnn;

use crate::adc::{Adc, Profile};
use crate::config::{Config, Geometry};
use crate::device::{Arrays, MatMap};
use crate::encode::{FloatInputQuant, InputEnc, IntWeights};
use crate::error::{AnalogError, Result};
use crate::mvm::{Readout, mvm};
use crate::rng::mix;
use pimkit_ir::{Node, NodeId, Op, Tensor, TensorType, operand};
use serde::{Deserialize, Serialize};
use std::sync::Mutex;

/// What the mapping says about one weighted node.
#[derive(Clone, Debug, PartialEq)]
pub struct LayerMap {
    pub node: NodeId,
    /// The weight is the first operand of a product (y = W x); otherwise the second.
    pub weight_left: bool,
    /// One map per crossbar matrix: a convolution's group matrix (shared by all groups),
    /// a dense layer's matrix, or per direction an RNN's input and recurrent matrices.
    pub mats: Vec<MatMap>,
}

/// How a layer's numbers are represented.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arith {
    Float,
    /// ConvInteger / MatMulInteger: int32 accumulators out.
    Integer,
    /// QLinearConv / QLinearMatMul / QGemm: requantized outputs.
    Qlinear,
}

/// A layer's weights as crossbar matrices.
#[derive(Clone, Debug)]
pub struct Lowered {
    pub name: String,
    pub op: String,
    pub arith: Arith,
    pub mats: Vec<IntWeights>,
    /// Float layers: each matrix's per-column scale and its exact float values (k x n).
    pub wscale: Vec<Vec<f64>>,
    pub wf: Vec<Vec<f32>>,
    pub maps: Vec<MatMap>,
    pub weight_left: bool,
    /// Activation operands with their own input quantizer (1, or 2 for x and h of an RNN).
    pub operands: usize,
    /// Zero point of a quantized output (SQNR is taken on value - zero point).
    pub out_zp: f64,
}

/// One layer's evaluation in one trial.
pub struct LayerRun<'a> {
    pub cfg: &'a Config,
    pub lowered: &'a Lowered,
    /// The trial's programmed arrays, one per matrix.
    pub arrays: &'a [Arrays],
    /// Float layers: the input quantizer of each activation operand.
    pub inq: &'a [FloatInputQuant],
    pub adc: Option<Adc>,
    pub noise_seed: u64,
    pub profile: Option<&'a Mutex<Profile>>,
}

impl LayerRun<'_> {
    /// Float layers keep their exact interpreter result when nothing is non-ideal.
    fn exact_float(&self) -> bool {
        self.lowered.arith == Arith::Float && self.cfg.is_ideal() && self.profile.is_none()
    }

    /// Crossbar product of `p` input vectors (codes `x`) through matrix `mi`; returns the
    /// accumulators of sum x_int w_int, p x n. `call` separates read-noise streams.
    fn product(&self, mi: usize, x: &[u16], p: usize, enc: &InputEnc, call: u64) -> Vec<f64> {
        let ro = Readout {
            coding: enc.coding,
            adc: self.adc,
            noise_seed: mix(self.noise_seed, &[mi as u64, call]),
            profile: self.profile,
        };
        let w = &self.lowered.mats[mi];
        let mut acc = mvm(&self.arrays[mi], self.cfg, x, p, enc.bits, &ro);
        let f = (1u64 << (enc.shift + w.shift)) as f64;
        let b = enc.base as f64 * (1u64 << w.shift) as f64;
        for row in acc.chunks_mut(w.n.max(1)) {
            for (v, &cs) in row.iter_mut().zip(&w.colsum) {
                *v = *v * f + b * cs as f64;
            }
        }
        acc
    }

    /// Float layers: (decoded crossbar result) - (exact float product) for input vectors
    /// `xf` (p x k), given their codes; p x n.
    fn float_error(
        &self,
        mi: usize,
        xf: &[f32],
        x: &[u16],
        p: usize,
        enc: &InputEnc,
        call: u64,
    ) -> Vec<f64> {
        let acc = self.product(mi, x, p, enc, call);
        let w = &self.lowered.mats[mi];
        let (k, n) = (w.k, w.n);
        let mut exact = vec![0f32; p * n];
        crate::mvm::sgemm(p, k, n, xf, k, &self.lowered.wf[mi], n, &mut exact);
        let sc = &self.lowered.wscale[mi];
        acc.chunks(n.max(1))
            .zip(exact.chunks(n.max(1)))
            .flat_map(|(a, e)| {
                a.iter()
                    .zip(e)
                    .zip(sc)
                    .map(|((&a, &e), &s)| a * enc.scale * s - e as f64)
            })
            .collect()
    }
}

fn layer_err(node: &Node, msg: impl Into<String>) -> AnalogError {
    AnalogError::Layer {
        node: node.name.clone(),
        op: node.op.name().into(),
        msg: msg.into(),
    }
}

fn input<'t>(node: &Node, ins: &[Option<&'t Tensor>], i: usize, what: &str) -> Result<&'t Tensor> {
    ins.get(i)
        .copied()
        .flatten()
        .ok_or_else(|| layer_err(node, format!("input {i} ({what}) is missing")))
}

/// Per-output-channel integer parameter of length 1 or `m`, expanded.
fn per_out(node: &Node, t: Option<&Tensor>, m: usize, what: &str) -> Result<Vec<i64>> {
    let v: Vec<i64> = t.map(|t| t.to_i64_vec()).unwrap_or_else(|| vec![0]);
    match v.len() {
        1 => Ok(vec![v[0]; m]),
        l if l == m => Ok(v),
        l => Err(layer_err(
            node,
            format!("{what} has {l} values; expected 1 or {m}"),
        )),
    }
}

/// Index of the weight operand.
fn weight_input(op: &Op, left: bool) -> Option<usize> {
    Some(match op {
        // ConvInteger's and MatMulInteger's operands sit where Conv's and MatMul's do.
        Op::Conv(_) | Op::ConvInteger(_) => operand::conv::W,
        Op::QLinearConv(_) => operand::qlinear_conv::W,
        Op::MatMul | Op::MatMulInteger | Op::Gemm { .. } => {
            if left {
                operand::gemm::A
            } else {
                operand::gemm::B
            }
        }
        Op::QLinearMatMul | Op::QGemm { .. } => {
            if left {
                operand::qlinear_matmul::A
            } else {
                operand::qlinear_matmul::B
            }
        }
        Op::Lstm(_) | Op::Gru(_) => operand::rnn::W,
        // every other op has no weight operand: not a crossbar layer
        _ => return None,
    })
}

/// True for the ops the model covers.
pub fn supported(op: &Op) -> bool {
    weight_input(op, false).is_some()
}

/// Build the crossbar matrices of `node` from its inputs (the first time it runs).
pub fn lower(
    node: &Node,
    ins: &[Option<&Tensor>],
    map: &LayerMap,
    geom: &Geometry,
) -> Result<Lowered> {
    let widx = weight_input(&node.op, map.weight_left)
        .ok_or_else(|| layer_err(node, "not a weighted layer the analog model covers"))?;
    let w = input(node, ins, widx, "weight")?;
    let (arith, mats_f, mats_i): (
        Arith,
        Vec<(usize, usize, Vec<f32>)>,
        Vec<(usize, usize, Vec<i64>)>,
    ) = match &node.op {
        Op::Conv(a) => (Arith::Float, conv::weight_mats_f(node, w, a.group)?, vec![]),
        Op::ConvInteger(a) => {
            let zp = per_out(
                node,
                ins.get(operand::conv_integer::W_ZERO_POINT)
                    .copied()
                    .flatten(),
                w.shape[0],
                "w_zero_point",
            )?;
            (
                Arith::Integer,
                vec![],
                conv::weight_mats_i(node, w, a.group, &zp)?,
            )
        }
        Op::QLinearConv(a) => {
            let zp = per_out(
                node,
                ins.get(operand::qlinear_conv::W_ZERO_POINT)
                    .copied()
                    .flatten(),
                w.shape[0],
                "w_zero_point",
            )?;
            (
                Arith::Qlinear,
                vec![],
                conv::weight_mats_i(node, w, a.group, &zp)?,
            )
        }
        Op::Lstm(_) | Op::Gru(_) => {
            let r = input(node, ins, operand::rnn::R, "R")?;
            (Arith::Float, rnn::weight_mats(node, w, r)?, vec![])
        }
        op => {
            let (ta, tb) = match op {
                Op::Gemm {
                    trans_a, trans_b, ..
                }
                | Op::QGemm {
                    trans_a, trans_b, ..
                } => (*trans_a, *trans_b),
                // MatMul, MatMulInteger, QLinearMatMul: no transposes
                _ => (false, false),
            };
            let trans = if map.weight_left { ta } else { tb };
            match op {
                Op::MatMul | Op::Gemm { .. } => (
                    Arith::Float,
                    vec![dense::weight_mat_f(node, w, map.weight_left, trans)?],
                    vec![],
                ),
                // the integer and quantized products
                _ => {
                    let zp_idx = match op {
                        Op::MatMulInteger if map.weight_left => {
                            operand::matmul_integer::A_ZERO_POINT
                        }
                        Op::MatMulInteger => operand::matmul_integer::B_ZERO_POINT,
                        _ if map.weight_left => operand::qlinear_matmul::A_ZERO_POINT,
                        // QLinearMatMul, QGemm: the weight's zero point follows its operand
                        _ => operand::qlinear_matmul::B_ZERO_POINT,
                    };
                    let m = dense::weight_outputs(node, w, map.weight_left, trans)?;
                    let zp = per_out(
                        node,
                        ins.get(zp_idx).copied().flatten(),
                        m,
                        "weight zero point",
                    )?;
                    let arith = if matches!(op, Op::MatMulInteger) {
                        Arith::Integer
                    } else {
                        Arith::Qlinear
                    };
                    (
                        arith,
                        vec![],
                        vec![dense::weight_mat_i(node, w, map.weight_left, trans, &zp)?],
                    )
                }
            }
        }
    };
    let mut lw = Lowered {
        name: node.name.clone(),
        op: node.op.name().into(),
        arith,
        mats: Vec::new(),
        wscale: Vec::new(),
        wf: Vec::new(),
        maps: Vec::new(),
        weight_left: map.weight_left,
        operands: if matches!(node.op, Op::Lstm(_) | Op::Gru(_)) {
            2
        } else {
            1
        },
        out_zp: 0.0,
    };
    for (k, n, f) in mats_f {
        let (iw, sc) = IntWeights::quantize(k, n, &f, geom);
        lw.mats.push(iw);
        lw.wscale.push(sc);
        lw.wf.push(f);
    }
    for (k, n, v) in mats_i {
        lw.mats.push(IntWeights::fit(k, n, &v, geom));
    }
    // A convolution's groups share one map; RNN and dense layers have one map per matrix.
    let nm = lw.mats.len();
    lw.maps = if map.mats.len() == nm {
        map.mats.clone()
    } else if map.mats.len() == 1 {
        vec![map.mats[0].clone(); nm]
    } else {
        return Err(layer_err(
            node,
            format!(
                "the mapping has {} matrices, the layer {nm}",
                map.mats.len()
            ),
        ));
    };
    for (m, mm) in lw.mats.iter().zip(&lw.maps) {
        if mm.row_chunks.iter().sum::<usize>() != m.k {
            return Err(layer_err(
                node,
                format!(
                    "the mapping's row chunks {:?} do not cover the {} weight rows",
                    mm.row_chunks, m.k
                ),
            ));
        }
    }
    let zp_at = match node.op {
        Op::QLinearConv(_) => Some(operand::qlinear_conv::Y_ZERO_POINT),
        Op::QLinearMatMul => Some(operand::qlinear_matmul::Y_ZERO_POINT),
        Op::QGemm { .. } => Some(operand::qgemm::Y_ZERO_POINT),
        // the float and integer ops have no output zero point
        _ => None,
    };
    if let Some(t) = zp_at.and_then(|i| ins.get(i).copied().flatten()) {
        lw.out_zp = t.to_f64_vec().first().copied().unwrap_or(0.0);
    }
    Ok(lw)
}

/// The activation operands of `node` whose ranges set a float layer's input quantizers:
/// the input of a convolution or product; x and initial_h of an RNN (its hidden states'
/// range also includes the outputs, added by the caller).
pub fn activation_operands<'t>(
    node: &Node,
    ins: &[Option<&'t Tensor>],
    left: bool,
) -> Vec<Option<&'t Tensor>> {
    let at = |i: usize| ins.get(i).copied().flatten();
    match node.op {
        Op::Lstm(_) | Op::Gru(_) => vec![at(operand::rnn::X), at(operand::rnn::INITIAL_H)],
        Op::MatMul | Op::Gemm { .. } => vec![at(usize::from(left))],
        // convolutions: their x
        _ => vec![at(operand::conv::X)],
    }
}

/// The reference interpreter's first output of `node` on `ins`.
fn reference(node: &Node, ins: &[Option<&Tensor>], out_tys: &[&TensorType]) -> Result<Tensor> {
    pimkit_interp::eval_node(node, ins.to_vec(), out_tys.to_vec())?
        .into_iter()
        .next()
        .ok_or_else(|| layer_err(node, "the reference kernel produced no output"))
}

/// Evaluate `node` on the trial's arrays.
pub fn eval(
    run: &LayerRun,
    node: &Node,
    ins: &[Option<&Tensor>],
    out_tys: &[&TensorType],
) -> Result<Vec<Tensor>> {
    if run.exact_float() {
        return Ok(pimkit_interp::eval_node(
            node,
            ins.to_vec(),
            out_tys.to_vec(),
        )?);
    }
    match &node.op {
        Op::Conv(a) | Op::ConvInteger(a) | Op::QLinearConv(a) => {
            conv::eval(run, node, a, ins, out_tys)
        }
        Op::Lstm(a) | Op::Gru(a) => rnn::eval(run, node, a, ins, out_tys),
        // the products (weight_input admits no other op)
        _ => dense::eval(run, node, ins, out_tys),
    }
}
