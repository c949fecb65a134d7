//! LSTM and GRU, unrolled over the (static) sequence as torch-mlir sees an exported
//! recurrent layer after unrolling: per direction one input projection (bias init +
//! contraction over all steps), then per time step the recurrent GEMV (init + contraction),
//! the elementwise gate math and state update, and a copy of the new hidden state into Y.
//! Finally one copy per direction and state output. Nest counts: docs/loops.md.

use super::builder::dims_index;
use super::elementwise::sigmoid;
use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::*;
use pimkit_ir::operand::rnn;
use pimkit_ir::{DType, Node, RnnAttrs, RnnDirection};

const F: DType = DType::F32;

#[derive(Clone, Copy)]
struct Rnn {
    seq: usize,
    batch: usize,
    feat: usize,
    hid: usize,
    dirs: usize,
    bf: bool,
}

impl Rnn {
    /// Index of X at (t, b, f).
    fn x_ix(&self, t: Index, b: Index, f: Index) -> Vec<Index> {
        if self.bf {
            vec![b, t, f]
        } else {
            vec![t, b, f]
        }
    }
    /// Index of Y at (t, dir, b, j).
    fn y_ix(&self, t: Index, dir: Index, b: Index, j: Index) -> Vec<Index> {
        if self.bf {
            vec![b, t, dir, j]
        } else {
            vec![t, dir, b, j]
        }
    }
    /// Index of a state (initial or final) at (dir, b, j).
    fn s_ix(&self, dir: Index, b: Index, j: Index) -> Vec<Index> {
        if self.bf {
            vec![b, dir, j]
        } else {
            vec![dir, b, j]
        }
    }
}

fn setup(l: &mut Lowerer, a: &RnnAttrs) -> Result<Rnn> {
    let x = l.input(rnn::X)?;
    let (dt, xs) = l.ty(x);
    if dt != F || xs.len() != 3 {
        return Err(l.unsupported(format!("input must be 3-D f32, got {dt}{xs:?}")));
    }
    if l.opt_input(rnn::SEQUENCE_LENS)?.is_some() {
        return Err(l.unsupported("sequence_lens is not supported (full-length sequences only)"));
    }
    let (seq, batch) = if a.batch_first {
        (xs[1], xs[0])
    } else {
        (xs[0], xs[1])
    };
    Ok(Rnn {
        seq,
        batch,
        feat: xs[2],
        hid: a.hidden_size,
        dirs: a.direction.num_directions(),
        bf: a.batch_first,
    })
}

fn steps(a: &RnnAttrs, dir: usize, seq: usize) -> Vec<usize> {
    if a.direction == RnnDirection::Reverse || dir == 1 {
        (0..seq).rev().collect()
    } else {
        (0..seq).collect()
    }
}

/// `acc[rows.., g] (init) += Σ_k in[rows.., k] * w[dir, goff + g, k]`: one contraction.
#[allow(clippy::too_many_arguments)]
fn gemv(
    l: &mut Lowerer,
    label: &str,
    init: TensorId,
    input: TensorId,
    in_ix: impl Fn(&[usize], usize) -> Vec<Index>,
    w: TensorId,
    dir: usize,
    goff: usize,
    k: usize,
) -> TensorId {
    let shape = l.shape(init);
    let r = l.result_init(label, init);
    let mut nb = NB::new(NestKind::Contraction, label);
    let d = nb.pars(&shape);
    let kd = nb.red(k);
    let g = *d.last().expect("gemv output has a gate dim");
    let xv = nb.load(input, in_ix(&d, kd));
    let wv = nb.load(
        w,
        vec![
            Index::c(dir as i64),
            Index::affine(vec![(g, 1)], goff as i64),
            Index::dim(kd),
        ],
    );
    let oi = dims_index(&d);
    let old = nb.load(r, oi.clone());
    nb.store(r, oi, Expr::add(old, Expr::mul(xv, wv)));
    l.push(nb);
    r
}

/// A `[rows.., gates]` tensor initialised from bias row `dir` (sum of the slices at
/// `offs`, each `gates` long), or zeros without a bias.
fn bias_init(
    l: &mut Lowerer,
    label: &str,
    shape: &[usize],
    b: Option<TensorId>,
    dir: usize,
    offs: &[usize],
) -> TensorId {
    let Some(b) = b else {
        return l.fill(label, F, shape, 0.0);
    };
    let t = l.result(label, F, shape);
    let mut nb = NB::new(NestKind::Copy, label);
    let d = nb.pars(shape);
    let g = *d.last().expect("bias has a gate dim");
    let mut v: Option<Expr> = None;
    for &o in offs {
        let e = nb.load(
            b,
            vec![Index::c(dir as i64), Index::affine(vec![(g, 1)], o as i64)],
        );
        v = Some(match v {
            None => e,
            Some(p) => Expr::add(p, e),
        });
    }
    nb.store(t, dims_index(&d), v.expect("at least one bias slice"));
    l.push(nb);
    t
}

/// The initial state of direction `dir` as [batch, hid] (zeros when absent).
fn init_state(l: &mut Lowerer, r: &Rnn, s: Option<TensorId>, dir: usize, label: &str) -> TensorId {
    let shape = [r.batch, r.hid];
    match s {
        None => l.fill(label, F, &shape, 0.0),
        Some(s) => {
            let t = l.result(label, F, &shape);
            let mut nb = NB::new(NestKind::Copy, label);
            let d = nb.pars(&shape);
            let v = nb.load(
                s,
                r.s_ix(Index::c(dir as i64), Index::dim(d[0]), Index::dim(d[1])),
            );
            nb.store(t, dims_index(&d), v);
            l.push(nb);
            t
        }
    }
}

/// Copy a [batch, hid] state into `dst` (Y at step t, or a final-state output).
fn copy_into(
    l: &mut Lowerer,
    label: &str,
    src: TensorId,
    prev: Option<TensorId>,
    dst_shape: &[usize],
    dst_ix: impl Fn(Index, Index) -> Vec<Index>,
) -> TensorId {
    let out = match prev {
        None => l.result(label, F, dst_shape),
        Some(p) => l.result_init(label, p),
    };
    let shape = l.shape(src);
    let mut nb = NB::new(NestKind::Copy, label);
    let d = nb.pars(&shape);
    let v = nb.load(src, dims_index(&d));
    nb.store(out, dst_ix(Index::dim(d[0]), Index::dim(d[1])), v);
    l.push(nb);
    out
}

/// Input projection of all steps: [seq, batch, gates] = bias + X W[dir]^T.
fn project(
    l: &mut Lowerer,
    r: &Rnn,
    x: TensorId,
    w: TensorId,
    init: TensorId,
    dir: usize,
) -> TensorId {
    let rr = *r;
    gemv(
        l,
        "project",
        init,
        x,
        move |d, k| rr.x_ix(Index::dim(d[0]), Index::dim(d[1]), Index::dim(k)),
        w,
        dir,
        0,
        r.feat,
    )
}

/// `[batch, gates]` slice of the projection at step `t`, as an elementwise operand.
fn xw_at(nb: &mut NB, xw: TensorId, t: usize, b: usize, g: Index) -> Expr {
    nb.load(xw, vec![Index::c(t as i64), Index::dim(b), g])
}

fn gate(d: usize, off: usize) -> Index {
    Index::affine(vec![(d, 1)], off as i64)
}

/// Y, then the final states, from the per-step hidden states.
fn outputs(
    l: &mut Lowerer,
    r: &Rnn,
    order: &[(usize, usize, TensorId)],
    finals: &[Vec<TensorId>],
) -> Vec<TensorId> {
    let (_, ys) = l.out_ty(0);
    let mut y = None;
    for &(t, dir, h) in order {
        let rr = *r;
        y = Some(copy_into(l, "y", h, y, &ys, move |b, j| {
            rr.y_ix(Index::c(t as i64), Index::c(dir as i64), b, j)
        }));
    }
    let mut outs = vec![y.expect("non-empty sequence")];
    for (k, per_dir) in finals.iter().enumerate() {
        let (_, ss) = l.out_ty(k + 1);
        let mut s = None;
        for (dir, &h) in per_dir.iter().enumerate() {
            let rr = *r;
            let label = if k == 0 { "y_h" } else { "y_c" };
            s = Some(copy_into(l, label, h, s, &ss, move |b, j| {
                rr.s_ix(Index::c(dir as i64), b, j)
            }));
        }
        outs.push(s.expect("at least one direction"));
    }
    outs
}

pub(crate) fn lstm(l: &mut Lowerer, _n: &Node, a: &RnnAttrs) -> Result<Vec<TensorId>> {
    let r = setup(l, a)?;
    if r.seq == 0 {
        return Err(l.unsupported("empty sequence"));
    }
    let (x, w, rw, b) = (
        l.input(rnn::X)?,
        l.input(rnn::W)?,
        l.input(rnn::R)?,
        l.opt_input(rnn::B)?,
    );
    let (h0, c0) = (l.opt_input(rnn::INITIAL_H)?, l.opt_input(rnn::INITIAL_C)?);
    let (h, gh) = (r.hid, 4 * r.hid);
    let mut order = vec![];
    let (mut fh, mut fc) = (vec![], vec![]);
    for dir in 0..r.dirs {
        let init = bias_init(l, "bias", &[r.seq, r.batch, gh], b, dir, &[0, gh]);
        let xw = project(l, &r, x, w, init, dir);
        let mut hs = init_state(l, &r, h0, dir, "h0");
        let mut cs = init_state(l, &r, c0, dir, "c0");
        for t in steps(a, dir, r.seq) {
            let g0 = l.result("gates.init", F, &[r.batch, gh]);
            let mut nb = NB::new(NestKind::Copy, "gates.init");
            let d = nb.pars(&[r.batch, gh]);
            let v = xw_at(&mut nb, xw, t, d[0], Index::dim(d[1]));
            nb.store(g0, dims_index(&d), v);
            l.push(nb);
            let g = gemv(
                l,
                "gates",
                g0,
                hs,
                |d, k| vec![Index::dim(d[0]), Index::dim(k)],
                rw,
                dir,
                0,
                h,
            );
            // Gates in ONNX order i, o, f, c.
            let hn = l.result("h", F, &[r.batch, h]);
            let cn = l.result("c", F, &[r.batch, h]);
            let mut nb = NB::new(NestKind::Elementwise, "cell");
            let d = nb.pars(&[r.batch, h]);
            let mut gl = |k: usize| nb.load(g, vec![Index::dim(d[0]), gate(d[1], k * h)]);
            let (ig, og, fg, cg) = (
                sigmoid(gl(0), F),
                sigmoid(gl(1), F),
                sigmoid(gl(2), F),
                Expr::un(UFn::Tanh, gl(3)),
            );
            let cold = nb.load(cs, dims_index(&d));
            let cv = Expr::add(Expr::mul(fg, cold), Expr::mul(ig, cg));
            nb.store(cn, dims_index(&d), cv.clone());
            nb.store(hn, dims_index(&d), Expr::mul(og, Expr::un(UFn::Tanh, cv)));
            l.push(nb);
            hs = hn;
            cs = cn;
            order.push((t, dir, hn));
        }
        fh.push(hs);
        fc.push(cs);
    }
    Ok(outputs(l, &r, &order, &[fh, fc]))
}

pub(crate) fn gru(l: &mut Lowerer, _n: &Node, a: &RnnAttrs) -> Result<Vec<TensorId>> {
    let r = setup(l, a)?;
    if r.seq == 0 {
        return Err(l.unsupported("empty sequence"));
    }
    let (x, w, rw, b) = (
        l.input(rnn::X)?,
        l.input(rnn::W)?,
        l.input(rnn::R)?,
        l.opt_input(rnn::B)?,
    );
    let h0 = l.opt_input(rnn::INITIAL_H)?;
    let (h, gh) = (r.hid, 3 * r.hid);
    let mut order = vec![];
    let mut fh = vec![];
    for dir in 0..r.dirs {
        let init = bias_init(l, "bias", &[r.seq, r.batch, gh], b, dir, &[0]);
        let xw = project(l, &r, x, w, init, dir);
        let mut hs = init_state(l, &r, h0, dir, "h0");
        for t in steps(a, dir, r.seq) {
            // H R^T + Rb for the three gates.
            let i0 = bias_init(l, "recur.init", &[r.batch, gh], b, dir, &[gh]);
            let hr = gemv(
                l,
                "recur",
                i0,
                hs,
                |d, k| vec![Index::dim(d[0]), Index::dim(k)],
                rw,
                dir,
                0,
                h,
            );
            let z = l.result("z", F, &[r.batch, h]);
            let rg = l.result("r", F, &[r.batch, h]);
            let mut nb = NB::new(NestKind::Elementwise, "zr");
            let d = nb.pars(&[r.batch, h]);
            for (k, out) in [(0, z), (1, rg)] {
                let xv = xw_at(&mut nb, xw, t, d[0], gate(d[1], k * h));
                let hv = nb.load(hr, vec![Index::dim(d[0]), gate(d[1], k * h)]);
                nb.store(out, dims_index(&d), sigmoid(Expr::add(xv, hv), F));
            }
            l.push(nb);
            let rhr = if a.linear_before_reset {
                None
            } else {
                // (r . H) Rh^T + Rbh
                let rp = l.map("rh", NestKind::Elementwise, &[rg, hs], F, |v| {
                    Expr::mul(v[0].clone(), v[1].clone())
                })?;
                let i1 = bias_init(l, "recur_h.init", &[r.batch, h], b, dir, &[gh + 2 * h]);
                Some(gemv(
                    l,
                    "recur_h",
                    i1,
                    rp,
                    |d, k| vec![Index::dim(d[0]), Index::dim(k)],
                    rw,
                    dir,
                    2 * h,
                    h,
                ))
            };
            let hn = l.result("h", F, &[r.batch, h]);
            let mut nb = NB::new(NestKind::Elementwise, "update");
            let d = nb.pars(&[r.batch, h]);
            let xg = xw_at(&mut nb, xw, t, d[0], gate(d[1], 2 * h));
            let pre = match rhr {
                None => {
                    let rv = nb.load(rg, dims_index(&d));
                    let hv = nb.load(hr, vec![Index::dim(d[0]), gate(d[1], 2 * h)]);
                    Expr::add(xg, Expr::mul(rv, hv))
                }
                Some(t2) => Expr::add(xg, nb.load(t2, dims_index(&d))),
            };
            let zv = nb.load(z, dims_index(&d));
            let hold = nb.load(hs, dims_index(&d));
            let v = Expr::add(
                Expr::mul(
                    Expr::sub(Expr::f(1.0), zv.clone()),
                    Expr::un(UFn::Tanh, pre),
                ),
                Expr::mul(zv, hold),
            );
            nb.store(hn, dims_index(&d), v);
            l.push(nb);
            hs = hn;
            order.push((t, dir, hn));
        }
        fh.push(hs);
    }
    Ok(outputs(l, &r, &order, &[fh]))
}
