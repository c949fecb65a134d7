//! MaxPool / AveragePool (any spatial rank, pads, dilations, ceil_mode,
//! count_include_pad) and GlobalMaxPool / GlobalAveragePool.
//!
//! Average pooling divides by the number of window taps inside the input
//! (count_include_pad = false) or inside the padded input (true), as onnxruntime does;
//! with ceil_mode the taps past the end padding are never counted.

use crate::elem::{float_tensor, floats};
use crate::error::{OpResult, unsupported};
use crate::kernels::pool2d::{Pool2d, avg2d, max_f32, max2d, max2d_f32};
use pimkit_ir::{PoolAttrs, PoolKind, Tensor, TensorData, TensorType};

/// Window taps of one spatial axis for every output position: (input coordinate or -1
/// for padding, inside-padded-input flag).
fn axis_taps(p: &PoolAttrs, i: usize, inp: usize, out: usize) -> Vec<Vec<(isize, bool)>> {
    let r = p.kernel.len();
    (0..out)
        .map(|o| {
            (0..p.kernel[i])
                .map(|k| {
                    let c = (o * p.strides[i] + k * p.dilations[i]) as isize - p.pads[i] as isize;
                    let inside = c >= 0 && (c as usize) < inp;
                    let in_padded = c < (inp + p.pads[i + r]) as isize;
                    (if inside { c } else { -1 }, in_padded)
                })
                .collect()
        })
        .collect()
}

/// For each output position, the list of input offsets in the window plus the count of
/// taps inside the padded region.
fn windows(p: &PoolAttrs, in_sp: &[usize], out_sp: &[usize]) -> Vec<(Vec<usize>, usize)> {
    let r = in_sp.len();
    let taps: Vec<_> = (0..r)
        .map(|i| axis_taps(p, i, in_sp[i], out_sp[i]))
        .collect();
    let istr = crate::elem::strides(in_sp);
    let total: usize = out_sp.iter().product();
    let mut res = Vec::with_capacity(total);
    let mut oidx = vec![0usize; r];
    for _ in 0..total {
        // Cartesian product of the per-axis taps.
        let mut offs: Vec<(usize, bool)> = vec![(0, true)];
        let mut padded_count = 1usize;
        for i in 0..r {
            let t = &taps[i][oidx[i]];
            padded_count *= t.iter().filter(|x| x.1).count();
            let mut next = Vec::with_capacity(offs.len() * t.len());
            for &(base, ok) in &offs {
                for &(c, _) in t {
                    next.push((base + c.max(0) as usize * istr[i], ok && c >= 0));
                }
            }
            offs = next;
        }
        res.push((
            offs.into_iter().filter(|x| x.1).map(|x| x.0).collect(),
            padded_count,
        ));
        for d in (0..r).rev() {
            oidx[d] += 1;
            if oidx[d] < out_sp[d] {
                break;
            }
            oidx[d] = 0;
        }
    }
    res
}

macro_rules! max_pool_int {
    ($v:expr, $win:expr, $planes:expr, $ivol:expr, $variant:ident) => {{
        let mut out = Vec::with_capacity($planes * $win.len());
        for pl in 0..$planes {
            let x = &$v[pl * $ivol..(pl + 1) * $ivol];
            for (offs, _) in &$win {
                out.push(offs.iter().map(|&o| x[o]).max().unwrap_or_default());
            }
        }
        TensorData::$variant(out)
    }};
}

pub(crate) fn pool(x: &Tensor, p: &PoolAttrs, out_ty: &TensorType) -> OpResult<Tensor> {
    let r = p.kernel.len();
    let in_sp = &x.shape[2..];
    let out_sp = &out_ty.shape[2..];
    if in_sp.len() != r {
        return unsupported("input rank does not match the kernel rank");
    }
    let planes = x.shape[0] * x.shape[1];
    let shape = out_ty.shape.clone();
    if r == 2
        && let Some(t) = pool2d_fast(x, p, planes, out_sp, &shape)
    {
        return Ok(t);
    }
    let ivol: usize = in_sp.iter().product();
    let win = windows(p, in_sp, out_sp);
    match (&x.data, p.kind) {
        (TensorData::F32(_) | TensorData::F16(_), kind) => {
            let xf = floats(x);
            let mut out = Vec::with_capacity(planes * win.len());
            for pl in 0..planes {
                let xp = &xf[pl * ivol..(pl + 1) * ivol];
                for (offs, padded) in &win {
                    out.push(match kind {
                        PoolKind::Max => offs.iter().fold(f32::MIN, |m, &o| max_f32(m, xp[o])),
                        PoolKind::Avg => {
                            let s: f32 = offs.iter().map(|&o| xp[o]).sum();
                            let cnt = if p.count_include_pad {
                                *padded
                            } else {
                                offs.len()
                            };
                            if cnt == 0 { 0.0 } else { s / cnt as f32 }
                        }
                    });
                }
            }
            Ok(float_tensor(x.dtype(), shape, out))
        }
        (TensorData::U8(v), PoolKind::Max) => Ok(Tensor {
            shape,
            data: max_pool_int!(v, win, planes, ivol, U8),
        }),
        (TensorData::I8(v), PoolKind::Max) => Ok(Tensor {
            shape,
            data: max_pool_int!(v, win, planes, ivol, I8),
        }),
        (TensorData::I32(v), PoolKind::Max) => Ok(Tensor {
            shape,
            data: max_pool_int!(v, win, planes, ivol, I32),
        }),
        _ => unsupported(format!("{:?} pooling on {} tensors", p.kind, x.dtype())),
    }
}

/// 2-D pooling on the row-vectorized kernels (`kernels::pool2d`), same semantics.
fn pool2d_fast(
    x: &Tensor,
    p: &PoolAttrs,
    planes: usize,
    out_sp: &[usize],
    shape: &[usize],
) -> Option<Tensor> {
    let two = |v: &[usize]| [v[0], v[1]];
    let g = Pool2d {
        input: two(&x.shape[2..]),
        out: two(out_sp),
        kernel: two(&p.kernel),
        strides: two(&p.strides),
        dilations: two(&p.dilations),
        pad_begin: two(&p.pads[..2]),
        pad_end: two(&p.pads[2..]),
    };
    let n = planes * out_sp.iter().product::<usize>();
    if n == 0 {
        return None;
    }
    let shape = shape.to_vec();
    Some(match (&x.data, p.kind) {
        (TensorData::F32(_) | TensorData::F16(_), kind) => {
            let xf = floats(x);
            let mut out = vec![0f32; n];
            match kind {
                PoolKind::Max => max2d_f32(&xf, &g, &mut out),
                PoolKind::Avg => avg2d(&xf, &g, p.count_include_pad, &mut out),
            }
            float_tensor(x.dtype(), shape, out)
        }
        (TensorData::U8(v), PoolKind::Max) => {
            let mut out = vec![0u8; n];
            max2d(v, &g, (u8::MIN, 0), u8::max, &mut out);
            Tensor::from_u8(shape, out)
        }
        (TensorData::I8(v), PoolKind::Max) => {
            let mut out = vec![0i8; n];
            max2d(v, &g, (i8::MIN, 0), i8::max, &mut out);
            Tensor::from_i8(shape, out)
        }
        (TensorData::I32(v), PoolKind::Max) => {
            let mut out = vec![0i32; n];
            max2d(v, &g, (i32::MIN, 0), i32::max, &mut out);
            Tensor::from_i32(shape, out)
        }
        _ => return None,
    })
}

pub(crate) fn global_pool(x: &Tensor, kind: PoolKind) -> OpResult<Tensor> {
    let planes = x.shape[0] * x.shape[1];
    let vol: usize = x.shape[2..].iter().product();
    let mut shape = x.shape.clone();
    shape.iter_mut().skip(2).for_each(|d| *d = 1);
    match (&x.data, kind) {
        (TensorData::F32(_) | TensorData::F16(_), _) => {
            let xf = floats(x);
            let out = (0..planes)
                .map(|pl| {
                    let s = &xf[pl * vol..(pl + 1) * vol];
                    match kind {
                        PoolKind::Max => s.iter().fold(f32::MIN, |m, &v| max_f32(m, v)),
                        PoolKind::Avg => s.iter().sum::<f32>() / vol as f32,
                    }
                })
                .collect();
            Ok(float_tensor(x.dtype(), shape, out))
        }
        (TensorData::U8(v), PoolKind::Max) => Ok(Tensor::from_u8(
            shape,
            (0..planes)
                .map(|p| *v[p * vol..(p + 1) * vol].iter().max().unwrap_or(&0))
                .collect(),
        )),
        (TensorData::I8(v), PoolKind::Max) => Ok(Tensor::from_i8(
            shape,
            (0..planes)
                .map(|p| *v[p * vol..(p + 1) * vol].iter().max().unwrap_or(&0))
                .collect(),
        )),
        _ => unsupported(format!("global {kind:?} pooling on {} tensors", x.dtype())),
    }
}
