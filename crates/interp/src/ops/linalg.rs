//! MatMul (numpy semantics: batched, broadcast batch dims, 1-D operands) and Gemm.

use crate::elem::{broadcast_map, float_tensor, floats, sgemm};
use crate::error::{OpResult, unsupported};
use crate::kernels::sgemm::sgemm_const_b;
use crate::prepared::Slot;
use pimkit_ir::{Tensor, TensorData, TensorType, broadcast_shapes};

/// Batched matmul plan: per output batch, the offsets of the a and b matrices.
pub(crate) struct MatmulPlan {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    /// (a offset, b offset) of every output matrix, in output order.
    pub batches: Vec<(usize, usize)>,
}

/// Resolve numpy matmul shapes (1-D a is [1,k], 1-D b is [k,1]).
pub(crate) fn plan(ash: &[usize], bsh: &[usize]) -> OpResult<MatmulPlan> {
    if ash.is_empty() || bsh.is_empty() {
        return unsupported("matmul operands must have rank >= 1");
    }
    let a2: Vec<usize> = if ash.len() == 1 {
        vec![1, ash[0]]
    } else {
        ash.to_vec()
    };
    let b2: Vec<usize> = if bsh.len() == 1 {
        vec![bsh[0], 1]
    } else {
        bsh.to_vec()
    };
    let (m, k) = (a2[a2.len() - 2], a2[a2.len() - 1]);
    let (k2, n) = (b2[b2.len() - 2], b2[b2.len() - 1]);
    if k != k2 {
        return unsupported(format!("inner dimensions differ ({k} vs {k2})"));
    }
    let (abat, bbat) = (&a2[..a2.len() - 2], &b2[..b2.len() - 2]);
    let Some(bat) = broadcast_shapes(abat, bbat) else {
        return unsupported("batch dimensions are not broadcastable");
    };
    let ia = broadcast_map(abat, &bat);
    let ib = broadcast_map(bbat, &bat);
    Ok(MatmulPlan {
        m,
        k,
        n,
        batches: ia
            .into_iter()
            .zip(ib)
            .map(|(i, j)| (i * m * k, j * k * n))
            .collect(),
    })
}

/// `prep`: the node's session slot when b is a constant of the graph (its packed panels
/// are kept there).
pub(crate) fn matmul(
    a: &Tensor,
    b: &Tensor,
    out_ty: &TensorType,
    prep: Option<&Slot>,
) -> OpResult<Tensor> {
    let p = plan(&a.shape, &b.shape)?;
    let (m, k, n) = (p.m, p.k, p.n);
    let shape = out_ty.shape.clone();
    match (&a.data, &b.data) {
        (
            TensorData::F32(_) | TensorData::F16(_) | TensorData::Bf16(_),
            TensorData::F32(_) | TensorData::F16(_) | TensorData::Bf16(_),
        ) if a.dtype() == b.dtype() => {
            let (af, bf) = (floats(a), floats(b));
            let mut out = vec![0f32; p.batches.len() * m * n];
            if b.shape.len() == 2 {
                // One b for every batch, and a's matrices are consecutive: one product
                // of all rows of a with b.
                let rows = p.batches.len() * m;
                let dims = (rows, k, n);
                sgemm_const_b(dims, 1.0, &af, (k, 1), &bf, (n, 1), prep, 0.0, &mut out);
                return Ok(float_tensor(a.dtype(), shape, out));
            }
            for (bi, &(oa, ob)) in p.batches.iter().enumerate() {
                sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    &af[oa..oa + m * k],
                    k,
                    1,
                    &bf[ob..ob + k * n],
                    n,
                    1,
                    0.0,
                    &mut out[bi * m * n..(bi + 1) * m * n],
                );
            }
            Ok(float_tensor(a.dtype(), shape, out))
        }
        (TensorData::F64(av), TensorData::F64(bv)) => {
            let mut out = vec![0f64; p.batches.len() * m * n];
            for (bi, &(oa, ob)) in p.batches.iter().enumerate() {
                for i in 0..m {
                    let orow = &mut out[(bi * m + i) * n..(bi * m + i + 1) * n];
                    for kk in 0..k {
                        let x = av[oa + i * k + kk];
                        let brow = &bv[ob + kk * n..ob + (kk + 1) * n];
                        for (o, &y) in orow.iter_mut().zip(brow) {
                            *o += x * y;
                        }
                    }
                }
            }
            Ok(Tensor::from_f64(shape, out))
        }
        (TensorData::I32(_) | TensorData::I64(_), _) if a.dtype() == b.dtype() => {
            let (av, bv) = (a.to_i64_vec(), b.to_i64_vec());
            let mut out = vec![0i64; p.batches.len() * m * n];
            for (bi, &(oa, ob)) in p.batches.iter().enumerate() {
                for i in 0..m {
                    for kk in 0..k {
                        let x = av[oa + i * k + kk];
                        let orow = &mut out[(bi * m + i) * n..(bi * m + i + 1) * n];
                        for (j, o) in orow.iter_mut().enumerate() {
                            *o = o.wrapping_add(x.wrapping_mul(bv[ob + kk * n + j]));
                        }
                    }
                }
            }
            Ok(match a.dtype() {
                pimkit_ir::DType::I32 => {
                    Tensor::from_i32(shape, out.into_iter().map(|v| v as i32).collect())
                }
                _ => Tensor::from_i64(shape, out),
            })
        }
        _ => unsupported(format!("MatMul on {} x {}", a.dtype(), b.dtype())),
    }
}

/// Y = alpha * A' * B' + beta * C (C unidirectionally broadcast to [M, N]).
pub(crate) fn gemm(
    a: &Tensor,
    b: &Tensor,
    c: Option<&Tensor>,
    alpha: f32,
    beta: f32,
    trans_a: bool,
    trans_b: bool,
    prep: Option<&Slot>,
) -> OpResult<Tensor> {
    if !a.dtype().is_float() || !b.dtype().is_float() {
        return unsupported(format!("Gemm on {} x {}", a.dtype(), b.dtype()));
    }
    let (m, k) = if trans_a {
        (a.shape[1], a.shape[0])
    } else {
        (a.shape[0], a.shape[1])
    };
    let n = if trans_b { b.shape[0] } else { b.shape[1] };
    let (af, bf) = (floats(a), floats(b));
    let (rsa, csa) = if trans_a { (1, m) } else { (k, 1) };
    let (rsb, csb) = if trans_b { (1, k) } else { (n, 1) };
    let mut out = vec![0f32; m * n];
    let mut beta_eff = 0.0;
    if let Some(c) = c
        && beta != 0.0
    {
        let cf = floats(c);
        let idx = broadcast_map(&c.shape, &[m, n]);
        for (o, &i) in out.iter_mut().zip(&idx) {
            *o = cf[i];
        }
        beta_eff = beta;
    }
    let (sa, sb) = ((rsa, csa), (rsb, csb));
    sgemm_const_b((m, k, n), alpha, &af, sa, &bf, sb, prep, beta_eff, &mut out);
    Ok(float_tensor(a.dtype(), vec![m, n], out))
}
