//! If, Loop and Scan: their subgraphs run on the same executor, with inputs by position
//! (formal parameters, then the captured outer values the importer lifted into inputs).

use crate::error::{OpError, OpResult, invalid};
use crate::exec::{Ctx, run_positional};
use pimkit_ir::{Graph, ScanAttrs, Tensor, TensorData};

fn run_body(g: &Graph, what: &str, ins: &[&Tensor]) -> OpResult<Vec<Tensor>> {
    run_positional(g, ins).map_err(|e| OpError::Invalid(format!("{what}: {e}")))
}

fn truth(t: &Tensor) -> OpResult<bool> {
    match &t.data {
        TensorData::Bool(v) if v.len() == 1 => Ok(v[0]),
        _ => invalid(format!(
            "a condition must be one bool, got {}{:?}",
            t.dtype(),
            t.shape
        )),
    }
}

/// Inputs 1.. of the node, all present (captures are never omitted).
fn passed<'a>(c: &Ctx<'a>, from: usize) -> OpResult<Vec<&'a Tensor>> {
    (from..c.ins.len()).map(|i| c.input(i)).collect()
}

pub(crate) fn if_(c: &Ctx, then_b: &Graph, else_b: &Graph) -> OpResult<Vec<Tensor>> {
    let cond = truth(c.input(0)?)?;
    let caps = passed(c, 1)?;
    if cond {
        run_body(then_b, "then branch", &caps)
    } else {
        run_body(else_b, "else branch", &caps)
    }
}

/// A tensor of `dtype`'s scalar shape `like` (the body declares [] or [1]).
fn scalar_like(like: &pimkit_ir::TensorType, data: TensorData) -> Tensor {
    Tensor {
        shape: like.shape.clone(),
        data,
    }
}

pub(crate) fn loop_(
    c: &Ctx,
    body: &Graph,
    n_carried: usize,
    scan_len: Option<usize>,
) -> OpResult<Vec<Tensor>> {
    let trip = c.opt(0).map(|m| m.to_i64_vec()[0].max(0) as u64);
    let mut cond = match c.opt(1) {
        Some(t) => truth(t)?,
        None => true,
    };
    let mut carried: Vec<Tensor> = (0..n_carried)
        .map(|k| c.input(2 + k).cloned())
        .collect::<OpResult<_>>()?;
    let caps = passed(c, 2 + n_carried)?;
    let n_scan = body.outputs.len() - 1 - n_carried;
    let mut scans: Vec<Vec<Tensor>> = vec![Vec::new(); n_scan];
    let iter_ty = body.ty(body.inputs[0]).clone();
    let cond_ty = body.ty(body.inputs[1]).clone();
    let mut i: u64 = 0;
    while cond && trip.is_none_or(|m| i < m) {
        let it = scalar_like(&iter_ty, TensorData::I64(vec![i as i64]));
        let cd = scalar_like(&cond_ty, TensorData::Bool(vec![cond]));
        let mut ins: Vec<&Tensor> = vec![&it, &cd];
        ins.extend(carried.iter());
        ins.extend(caps.iter().copied());
        let mut outs = run_body(body, &format!("Loop body, iteration {i}"), &ins)?.into_iter();
        cond = truth(
            &outs
                .next()
                .ok_or_else(|| OpError::Invalid("Loop body produced nothing".into()))?,
        )?;
        carried = outs.by_ref().take(n_carried).collect();
        for (k, t) in outs.enumerate() {
            scans[k].push(t);
        }
        i += 1;
    }
    if n_scan > 0 && Some(i as usize) != scan_len {
        return invalid(format!(
            "the loop ran {i} iterations but its scan outputs were typed for {}; pimkit needs \
             a loop with scan outputs to run its full trip count",
            scan_len.unwrap_or(0)
        ));
    }
    let mut out = carried;
    for (k, parts) in scans.into_iter().enumerate() {
        let ty = c.out_ty(n_carried + k);
        out.push(stack(&parts, 0, false, ty)?);
    }
    Ok(out)
}

/// Stack equal-shaped slices along a new `axis` (in reverse order when `rev`).
fn stack(parts: &[Tensor], axis: usize, rev: bool, ty: &pimkit_ir::TensorType) -> OpResult<Tensor> {
    let mut order: Vec<&Tensor> = parts.iter().collect();
    if rev {
        order.reverse();
    }
    // Concatenate along `axis` of slices reshaped to have a unit axis there.
    let expanded: Vec<Tensor> = order
        .iter()
        .map(|t| {
            let mut s = t.shape.clone();
            s.insert(axis, 1);
            (*t).clone().reshaped(s).expect("same element count")
        })
        .collect();
    if expanded.is_empty() {
        return Ok(Tensor::zeros(ty.dtype, ty.shape.clone()));
    }
    let refs: Vec<&Tensor> = expanded.iter().collect();
    super::shape::concat(&refs, axis)
}

/// Slice `t` at index `i` along `axis`, dropping the axis.
fn slice_at(t: &Tensor, axis: usize, i: usize) -> Tensor {
    let s = pimkit_ir::SliceAxis {
        axis,
        start: i as i64,
        end: i as i64 + 1,
        step: 1,
    };
    let mut shape = t.shape.clone();
    shape[axis] = 1;
    let ty = pimkit_ir::TensorType::new(t.dtype(), shape.clone());
    let one = super::shape::slice(t, &[s], &ty);
    shape.remove(axis);
    one.reshaped(shape).expect("same element count")
}

pub(crate) fn scan(c: &Ctx, body: &Graph, a: &ScanAttrs) -> OpResult<Vec<Tensor>> {
    let mut states: Vec<Tensor> = (0..a.n_state)
        .map(|k| c.input(k).cloned())
        .collect::<OpResult<_>>()?;
    let inputs: Vec<&Tensor> = (0..a.n_scan_in)
        .map(|k| c.input(a.n_state + k))
        .collect::<OpResult<_>>()?;
    let caps = passed(c, a.n_state + a.n_scan_in)?;
    let len = inputs[0].shape[a.in_axes[0]];
    let n_out = body.outputs.len() - a.n_state;
    let mut outs: Vec<Vec<Tensor>> = vec![Vec::new(); n_out];
    for t in 0..len {
        let slices: Vec<Tensor> = inputs
            .iter()
            .enumerate()
            .map(|(k, x)| {
                let i = if a.in_reverse[k] { len - 1 - t } else { t };
                slice_at(x, a.in_axes[k], i)
            })
            .collect();
        let mut ins: Vec<&Tensor> = states.iter().collect();
        ins.extend(slices.iter());
        ins.extend(caps.iter().copied());
        let mut res = run_body(body, &format!("Scan body, step {t}"), &ins)?.into_iter();
        states = res.by_ref().take(a.n_state).collect();
        for (k, s) in res.enumerate() {
            outs[k].push(s);
        }
    }
    let mut out = states;
    for (k, parts) in outs.into_iter().enumerate() {
        let ty = c.out_ty(a.n_state + k);
        out.push(stack(&parts, a.out_axes[k], a.out_reverse[k], ty)?);
    }
    Ok(out)
}
