//! Products with a constant operand (MatMul, Gemm, MatMulInteger, QLinearMatMul, QGemm):
//! the crossbar holds the weight as k input rows by n outputs; a weight on the left
//! (y = W x) is held transposed and the activation's columns are the input vectors.

use super::conv::qparams;
use super::epilogue;
use super::{Arith, LayerRun, input, layer_err};
use crate::encode::encode_quantized;
use crate::error::Result;
use pimkit_ir::operand::{matmul_integer as mmi, qlinear_matmul as qmm};
use pimkit_ir::{Node, Op, Tensor, TensorType};

/// Outputs of the crossbar (columns of the stored matrix).
pub(super) fn weight_outputs(node: &Node, w: &Tensor, left: bool, trans: bool) -> Result<usize> {
    if w.rank() != 2 {
        return Err(layer_err(
            node,
            format!("the weight {:?} must be 2-D", w.shape),
        ));
    }
    // right: op(B) is [k, n]; left: op(A) is [m, k] and the crossbar holds its transpose.
    Ok(if left == trans {
        w.shape[1]
    } else {
        w.shape[0]
    })
}

/// The stored matrix (k x n, row-major) from the weight tensor.
fn stored<T: Copy>(
    node: &Node,
    w: &Tensor,
    left: bool,
    trans: bool,
    v: Vec<T>,
) -> Result<(usize, usize, Vec<T>)> {
    let n = weight_outputs(node, w, left, trans)?;
    let (r, c) = (w.shape[0], w.shape[1]);
    let k = r * c / n.max(1);
    // Stored as-is when its rows are the inputs: right and not transposed, or left and transposed.
    if left == trans {
        Ok((k, n, v))
    } else {
        let mut t = Vec::with_capacity(v.len());
        for i in 0..c {
            for j in 0..r {
                t.push(v[j * c + i]);
            }
        }
        Ok((k, n, t))
    }
}

pub(super) fn weight_mat_f(
    node: &Node,
    w: &Tensor,
    left: bool,
    trans: bool,
) -> Result<(usize, usize, Vec<f32>)> {
    stored(node, w, left, trans, w.to_f32_vec())
}

pub(super) fn weight_mat_i(
    node: &Node,
    w: &Tensor,
    left: bool,
    trans: bool,
    zp: &[i64],
) -> Result<(usize, usize, Vec<i64>)> {
    let (k, n, v) = stored(node, w, left, trans, w.to_i64_vec())?;
    Ok((
        k,
        n,
        v.iter().enumerate().map(|(i, &x)| x - zp[i % n]).collect(),
    ))
}

/// Input vectors (p x k) from the activation, and for each (p, j) of the crossbar result
/// its index in the output.
struct Vectors<T> {
    x: Vec<T>,
    p: usize,
    /// Columns of the activation per batch (left weight), 1 otherwise.
    cols: usize,
}

fn vectors<T: Copy>(
    node: &Node,
    act: &Tensor,
    v: Vec<T>,
    k: usize,
    left: bool,
    trans: bool,
) -> Result<Vectors<T>> {
    let bad = || {
        layer_err(
            node,
            format!("activation {:?} does not match {k} weight rows", act.shape),
        )
    };
    if !left {
        if trans {
            // Gemm with transA: A is [k, m]; the vectors are its columns.
            if act.rank() != 2 || act.shape[0] != k {
                return Err(bad());
            }
            let m = act.shape[1];
            let x = (0..m)
                .flat_map(|i| (0..k).map(move |j| (i, j)))
                .map(|(i, j)| v[j * m + i])
                .collect();
            return Ok(Vectors { x, p: m, cols: 1 });
        }
        if act.shape.last() != Some(&k) {
            return Err(bad());
        }
        let p = act.numel() / k.max(1);
        return Ok(Vectors { x: v, p, cols: 1 });
    }
    // Left weight: the activation is [..., k, nb] (or [nb, k] when transposed, or [k]).
    if act.rank() == 1 {
        if act.shape[0] != k {
            return Err(bad());
        }
        return Ok(Vectors {
            x: v,
            p: 1,
            cols: 1,
        });
    }
    let r = act.rank();
    let (kk, nb) = if trans {
        (act.shape[r - 1], act.shape[r - 2])
    } else {
        (act.shape[r - 2], act.shape[r - 1])
    };
    if kk != k {
        return Err(bad());
    }
    let batches = act.numel() / (k * nb).max(1);
    let mut x = Vec::with_capacity(act.numel());
    for b in 0..batches {
        let base = b * k * nb;
        for c in 0..nb {
            for i in 0..k {
                x.push(if trans {
                    v[base + c * k + i]
                } else {
                    v[base + i * nb + c]
                });
            }
        }
    }
    Ok(Vectors {
        x,
        p: batches * nb,
        cols: nb,
    })
}

pub(super) fn eval(
    run: &LayerRun,
    node: &Node,
    ins: &[Option<&Tensor>],
    out_tys: &[&TensorType],
) -> Result<Vec<Tensor>> {
    let lw = run.lowered;
    let left = lw.weight_left;
    let (ta, tb, alpha) = match node.op {
        Op::Gemm {
            trans_a,
            trans_b,
            alpha,
            ..
        }
        | Op::QGemm {
            trans_a,
            trans_b,
            alpha,
        } => (trans_a, trans_b, alpha),
        // MatMul, MatMulInteger, QLinearMatMul: no attributes
        _ => (false, false, 1.0),
    };
    let trans = if left { tb } else { ta };
    let (act_i, zp_i) = match node.op {
        Op::QLinearMatMul | Op::QGemm { .. } => {
            if left {
                (qmm::B, qmm::B_ZERO_POINT)
            } else {
                (qmm::A, qmm::A_ZERO_POINT)
            }
        }
        // MatMul, MatMulInteger, Gemm: activation and zero point as MatMulInteger orders them
        _ => {
            if left {
                (mmi::B, mmi::B_ZERO_POINT)
            } else {
                (mmi::A, mmi::A_ZERO_POINT)
            }
        }
    };
    let act = input(node, ins, act_i, "activation")?;
    let (k, n) = (lw.mats[0].k, lw.mats[0].n);
    let ty = out_tys[0];
    let (acc, nb) = if lw.arith == Arith::Float {
        let vx = vectors(node, act, act.to_f32_vec(), k, left, trans)?;
        let (codes, enc) = run.inq[0].encode(&vx.x);
        let d = run.float_error(0, &vx.x, &codes, vx.p, &enc, 0);
        (reorder(&d, vx.p, n, vx.cols, left), vx.cols)
    } else {
        let (qmin, bits, zp) = qparams(node, act, ins.get(zp_i).copied().flatten())?;
        let vx = vectors(node, act, act.to_i32_vec(), k, left, trans)?;
        let (codes, enc) = encode_quantized(&vx.x, bits, qmin, zp, &run.cfg.geom);
        let a = run.product(0, &codes, vx.p, &enc, 0);
        (reorder(&a, vx.p, n, vx.cols, left), vx.cols)
    };
    if acc.len() != ty.numel() {
        return Err(layer_err(
            node,
            format!(
                "the crossbar produced {} values for output {:?}",
                acc.len(),
                ty.shape
            ),
        ));
    }
    Ok(vec![match (lw.arith, &node.op) {
        (Arith::Float, _) => {
            epilogue::float_plus(super::reference(node, ins, out_tys)?, &acc, alpha as f64)
        }
        (Arith::Integer, _) => epilogue::integer(ty, &acc),
        (_, Op::QGemm { .. }) => epilogue::qgemm(node, ins, ty, &acc, alpha)?,
        // QLinearMatMul (the only other op dense::eval is called with)
        _ => epilogue::qlinear_matmul(node, ins, ty, &acc, left, n, |i| {
            if left { (i / nb) % n } else { i % n }
        })?,
    }])
}

/// The crossbar result (p x n) in the output's element order: unchanged for a right
/// weight; for a left weight vector (b, c) output j goes to [b, j, c].
fn reorder(a: &[f64], p: usize, n: usize, cols: usize, left: bool) -> Vec<f64> {
    if !left || cols == 1 && p == 1 {
        return a.to_vec();
    }
    let batches = p / cols.max(1);
    let mut out = vec![0f64; a.len()];
    for b in 0..batches {
        for c in 0..cols {
            for j in 0..n {
                out[(b * n + j) * cols + c] = a[(b * cols + c) * n + j];
            }
        }
    }
    out
}
