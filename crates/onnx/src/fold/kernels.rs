//! Element kernels of the constant folder: index maps over flat tensor data.

use pimkit_ir::{DType, Tensor, TensorData, broadcast_shapes, numel};

pub(super) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// For each element of `out`, the flat index of the element of `inp` broadcast to it.
pub(super) fn broadcast_index(out: &[usize], inp: &[usize]) -> Vec<usize> {
    let r = out.len();
    let off = r - inp.len().min(r);
    let is = strides(inp);
    let os = strides(out);
    (0..numel(out))
        .map(|k| {
            let mut src = 0;
            for d in off..r {
                let c = (k / os[d]) % out[d].max(1);
                if inp[d - off] != 1 {
                    src += c * is[d - off];
                }
            }
            src
        })
        .collect()
}

/// New tensor whose elements are `t`'s elements at flat indices `idx`.
pub(super) fn take(t: &Tensor, idx: &[usize], shape: Vec<usize>) -> Tensor {
    fn pick<T: Copy>(v: &[T], idx: &[usize]) -> Vec<T> {
        idx.iter().map(|&i| v[i]).collect()
    }
    let data = match &t.data {
        TensorData::F32(v) => TensorData::F32(pick(v, idx)),
        TensorData::F16(v) => TensorData::F16(pick(v, idx)),
        TensorData::I64(v) => TensorData::I64(pick(v, idx)),
        TensorData::I32(v) => TensorData::I32(pick(v, idx)),
        TensorData::I8(v) => TensorData::I8(pick(v, idx)),
        TensorData::U8(v) => TensorData::U8(pick(v, idx)),
        TensorData::Bool(v) => TensorData::Bool(pick(v, idx)),
    };
    Tensor { shape, data }
}

pub(super) fn gather(
    data: &Tensor,
    idx: &[i64],
    idx_shape: &[usize],
    axis: usize,
) -> Option<Tensor> {
    let dim = *data.shape.get(axis)? as i64;
    let outer = numel(&data.shape[..axis]);
    let inner = numel(&data.shape[axis + 1..]);
    let mut flat = Vec::with_capacity(outer * idx.len() * inner);
    for o in 0..outer {
        for &i in idx {
            let i = if i < 0 { i + dim } else { i };
            if !(0..dim).contains(&i) {
                return None;
            }
            let base = (o * dim as usize + i as usize) * inner;
            flat.extend(base..base + inner);
        }
    }
    let mut shape = data.shape[..axis].to_vec();
    shape.extend(idx_shape);
    shape.extend(&data.shape[axis + 1..]);
    Some(take(data, &flat, shape))
}

pub(super) fn concat(ins: &[Tensor], axis: usize) -> Option<Tensor> {
    let first = ins.first()?;
    let mut shape = first.shape.clone();
    *shape.get_mut(axis)? = 0;
    for t in ins {
        if t.dtype() != first.dtype() || t.rank() != first.rank() {
            return None;
        }
        shape[axis] += t.shape[axis];
    }
    let outer = numel(&first.shape[..axis]);
    // Index into the virtual concatenation of all inputs' flat data.
    let mut base = 0;
    let mut offsets = Vec::new();
    for t in ins {
        offsets.push(base);
        base += t.numel();
    }
    let mut idx = Vec::with_capacity(base);
    for o in 0..outer {
        for (t, &off) in ins.iter().zip(&offsets) {
            let chunk = numel(&t.shape[axis..]);
            idx.extend(off + o * chunk..off + (o + 1) * chunk);
        }
    }
    let all = TensorData::concat(ins)?;
    Some(take(
        &Tensor {
            shape: vec![base],
            data: all,
        },
        &idx,
        shape,
    ))
}

trait ConcatData {
    fn concat(ins: &[Tensor]) -> Option<TensorData>;
}
impl ConcatData for TensorData {
    fn concat(ins: &[Tensor]) -> Option<TensorData> {
        macro_rules! cat {
            ($v:ident) => {{
                let mut out = Vec::new();
                for t in ins {
                    match &t.data {
                        TensorData::$v(x) => out.extend_from_slice(x),
                        _ => return None,
                    }
                }
                TensorData::$v(out)
            }};
        }
        Some(match ins.first()?.data {
            TensorData::F32(_) => cat!(F32),
            TensorData::F16(_) => cat!(F16),
            TensorData::I64(_) => cat!(I64),
            TensorData::I32(_) => cat!(I32),
            TensorData::I8(_) => cat!(I8),
            TensorData::U8(_) => cat!(U8),
            TensorData::Bool(_) => cat!(Bool),
        })
    }
}

pub(super) fn slice(x: &Tensor, axes: &[pimkit_ir::SliceAxis]) -> Tensor {
    let r = x.rank();
    // Per axis: the list of source coordinates.
    let mut coords: Vec<Vec<usize>> = x.shape.iter().map(|&d| (0..d).collect()).collect();
    for sa in axes {
        let mut v = Vec::new();
        let mut i = sa.start;
        while (sa.step > 0 && i < sa.end) || (sa.step < 0 && i > sa.end) {
            v.push(i as usize);
            i += sa.step;
        }
        coords[sa.axis] = v;
    }
    let shape: Vec<usize> = coords.iter().map(|c| c.len()).collect();
    let st = strides(&x.shape);
    let os = strides(&shape);
    let idx: Vec<usize> = (0..numel(&shape))
        .map(|k| {
            (0..r)
                .map(|d| coords[d][(k / os[d]) % shape[d]] * st[d])
                .sum()
        })
        .collect();
    take(x, &idx, shape)
}

/// Cast preserving exact 64-bit integers between integer types.
pub(super) fn cast(t: &Tensor, to: DType) -> Tensor {
    let int = |d: DType| matches!(d, DType::I64 | DType::I32 | DType::I8 | DType::U8);
    if int(t.dtype()) && int(to) {
        let v = t.to_i64_vec();
        let data = match to {
            DType::I64 => TensorData::I64(v),
            DType::I32 => TensorData::I32(v.iter().map(|&x| x as i32).collect()),
            DType::I8 => TensorData::I8(v.iter().map(|&x| x as i8).collect()),
            _ => TensorData::U8(v.iter().map(|&x| x as u8).collect()),
        };
        return Tensor {
            shape: t.shape.clone(),
            data,
        };
    }
    Tensor::from_f64_as(to, t.shape.clone(), &t.to_f64_vec())
}

pub(super) fn binary(op: &str, a: &Tensor, b: &Tensor) -> std::result::Result<Tensor, String> {
    if a.dtype() != b.dtype() {
        return Err(format!(
            "operands differ in dtype ({} vs {})",
            a.dtype(),
            b.dtype()
        ));
    }
    let shape = broadcast_shapes(&a.shape, &b.shape).ok_or("operands do not broadcast")?;
    let (ai, bi) = (
        broadcast_index(&shape, &a.shape),
        broadcast_index(&shape, &b.shape),
    );
    let cmp = matches!(op, "Equal" | "Less" | "Greater");
    if op == "Mod" && !matches!(a.dtype(), DType::I64 | DType::I32) {
        return Err("Mod on floats needs fmod = 1".into());
    }
    if matches!(op, "And" | "Or") && a.dtype() != DType::Bool {
        return Err(format!("{op} needs bool operands"));
    }
    if matches!(a.dtype(), DType::I64 | DType::I32) {
        let (x, y) = (a.to_i64_vec(), b.to_i64_vec());
        let mut out = Vec::with_capacity(ai.len());
        for k in 0..ai.len() {
            let (p, q) = (x[ai[k]], y[bi[k]]);
            out.push(match op {
                "Add" => p.wrapping_add(q),
                "Sub" => p.wrapping_sub(q),
                "Mul" => p.wrapping_mul(q),
                "Div" => p.checked_div(q).ok_or("integer division by zero")?,
                "Mod" | "FMod" => {
                    let r = p.checked_rem(q).ok_or("integer modulo by zero")?;
                    if op == "Mod" && r != 0 && (r < 0) != (q < 0) {
                        r + q
                    } else {
                        r
                    }
                }
                "Max" => p.max(q),
                "Min" => p.min(q),
                "Equal" => (p == q) as i64,
                "Less" => (p < q) as i64,
                _ => (p > q) as i64,
            });
        }
        return Ok(if cmp {
            Tensor::from_bool(shape, out.iter().map(|&v| v != 0).collect())
        } else {
            cast(&Tensor::from_i64(shape, out), a.dtype())
        });
    }
    let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
    let out: Vec<f64> = (0..ai.len())
        .map(|k| {
            let (p, q) = (x[ai[k]], y[bi[k]]);
            match op {
                "Add" => p + q,
                "Sub" => p - q,
                "Mul" => p * q,
                "Div" => p / q,
                "FMod" => p % q,
                "And" => (p != 0.0 && q != 0.0) as u8 as f64,
                "Or" => (p != 0.0 || q != 0.0) as u8 as f64,
                "Max" => p.max(q),
                "Min" => p.min(q),
                "Equal" => (p == q) as u8 as f64,
                "Less" => (p < q) as u8 as f64,
                _ => (p > q) as u8 as f64,
            }
        })
        .collect();
    Ok(Tensor::from_f64_as(
        if cmp { DType::Bool } else { a.dtype() },
        shape,
        &out,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_mod_takes_the_divisors_sign_fmod_the_dividends() {
        let a = Tensor::from_i64(vec![4], vec![7, -7, 7, -7]);
        let b = Tensor::from_i64(vec![4], vec![3, 3, -3, -3]);
        let m = binary("Mod", &a, &b).unwrap();
        assert_eq!(m.to_i64_vec(), [1, 2, -2, -1]);
        let f = binary("FMod", &a, &b).unwrap();
        assert_eq!(f.to_i64_vec(), [1, -1, 1, -1]);
        let z = Tensor::from_i64(vec![1], vec![0]);
        assert!(binary("Mod", &a, &z).is_err());
        let x = Tensor::from_f32(vec![1], vec![1.5]);
        assert!(binary("Mod", &x, &x).is_err(), "float Mod needs fmod = 1");
    }

    #[test]
    fn and_or_on_bools() {
        let a = Tensor::from_bool(vec![4], vec![true, true, false, false]);
        let b = Tensor::from_bool(vec![4], vec![true, false, true, false]);
        let and = binary("And", &a, &b).unwrap();
        let or = binary("Or", &a, &b).unwrap();
        assert_eq!(and.dtype(), DType::Bool);
        assert_eq!(and.to_i64_vec(), [1, 0, 0, 0]);
        assert_eq!(or.to_i64_vec(), [1, 1, 1, 0]);
        assert!(
            binary(
                "And",
                &Tensor::from_i64(vec![1], vec![1]),
                &Tensor::from_i64(vec![1], vec![1])
            )
            .is_err()
        );
    }
}
