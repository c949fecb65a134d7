//! LSTM (gates i, o, f, c in ONNX order) and GRU (gates z, r, h; linear_before_reset
//! both ways), forward / reverse / bidirectional, optional initial states, layout 0
//! ([seq, batch, feature]) or batch_first. Default activations (sigmoid, tanh, tanh),
//! no peepholes, no sequence_lens: what PyTorch exports. tanh is `kernels::vmath`'s
//! (f64, rounded once); the time loops run in the vector trampoline of `kernels::ewise`.

use crate::elem::{float_tensor, floats, sgemm};
use crate::error::{OpResult, unsupported};
use crate::exec::Ctx;
use crate::kernels::ewise::{logistic_in_place, simd, tanh_in_place};
use crate::kernels::fgemm::Panels;
use crate::kernels::fgemm_kernels::fk;
use crate::kernels::sgemm::{sgemm_packed_b, sgemm_rnn};
use crate::kernels::vmath::tanh_f32;
use crate::ops::elementwise::sigmoid_f32;
use crate::prepared::Prepared;
use pimkit_ir::{RnnAttrs, RnnDirection, Tensor};

struct Dims {
    seq: usize,
    batch: usize,
    feat: usize,
    hid: usize,
    dirs: usize,
}

/// X as [seq, batch, feat] contiguous.
fn seq_major(x: &[f32], d: &Dims, batch_first: bool) -> Vec<f32> {
    if !batch_first {
        return x.to_vec();
    }
    let mut out = vec![0f32; x.len()];
    for b in 0..d.batch {
        for t in 0..d.seq {
            let src = &x[(b * d.seq + t) * d.feat..][..d.feat];
            out[(t * d.batch + b) * d.feat..][..d.feat].copy_from_slice(src);
        }
    }
    out
}

/// Initial state for direction `dir` as [batch, hid] (zeros when absent).
fn init_state(t: Option<&Tensor>, d: &Dims, dir: usize, batch_first: bool) -> Vec<f32> {
    let mut s = vec![0f32; d.batch * d.hid];
    if let Some(t) = t {
        let v = floats(t);
        for b in 0..d.batch {
            let off = if batch_first {
                (b * d.dirs + dir) * d.hid
            } else {
                (dir * d.batch + b) * d.hid
            };
            s[b * d.hid..(b + 1) * d.hid].copy_from_slice(&v[off..off + d.hid]);
        }
    }
    s
}

/// Y in [seq, dirs, batch, hid] -> requested layout; states in [dirs, batch, hid] -> layout.
fn finish(x: &Tensor, d: &Dims, bf: bool, y: Vec<f32>, states: Vec<Vec<f32>>) -> Vec<Tensor> {
    let h = d.hid;
    let mut outs = Vec::new();
    if bf {
        let mut yb = vec![0f32; y.len()];
        for t in 0..d.seq {
            for dir in 0..d.dirs {
                for b in 0..d.batch {
                    let src = ((t * d.dirs + dir) * d.batch + b) * h;
                    let dst = ((b * d.seq + t) * d.dirs + dir) * h;
                    yb[dst..dst + h].copy_from_slice(&y[src..src + h]);
                }
            }
        }
        outs.push(float_tensor(x.dtype(), vec![d.batch, d.seq, d.dirs, h], yb));
    } else {
        outs.push(float_tensor(x.dtype(), vec![d.seq, d.dirs, d.batch, h], y));
    }
    for s in states {
        if bf {
            let mut sb = vec![0f32; s.len()];
            for dir in 0..d.dirs {
                for b in 0..d.batch {
                    let src = (dir * d.batch + b) * h;
                    let dst = (b * d.dirs + dir) * h;
                    sb[dst..dst + h].copy_from_slice(&s[src..src + h]);
                }
            }
            outs.push(float_tensor(x.dtype(), vec![d.batch, d.dirs, h], sb));
        } else {
            outs.push(float_tensor(x.dtype(), vec![d.dirs, d.batch, h], s));
        }
    }
    outs
}

fn dims(c: &Ctx, a: &RnnAttrs) -> OpResult<Dims> {
    let x = c.input(0)?;
    if !x.dtype().is_float() || x.rank() != 3 {
        return unsupported(format!(
            "RNN input must be a 3-D float tensor, got {}",
            x.ty()
        ));
    }
    if c.opt(4).is_some() {
        return unsupported("sequence_lens is not supported (static full-length sequences only)");
    }
    let (seq, batch) = if a.batch_first {
        (x.shape[1], x.shape[0])
    } else {
        (x.shape[0], x.shape[1])
    };
    Ok(Dims {
        seq,
        batch,
        feat: x.shape[2],
        hid: a.hidden_size,
        dirs: a.direction.num_directions(),
    })
}

/// `m` ([rows, cols] row-major) transposed to [cols, rows], 16 source rows at a time:
/// every write is a contiguous run of 16 and the 16 rows read stay in L1 (an
/// element-by-element transpose wrote a new cache line per element and took 40 % of a
/// 2-layer LSTM's run).
fn transpose(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    const T: usize = 16;
    let mut t = vec![0f32; rows * cols];
    for r0 in (0..rows).step_by(T) {
        let band = &m[r0 * cols..(r0 + T).min(rows) * cols];
        for c in 0..cols {
            let dst = &mut t[c * rows + r0..][..band.len() / cols];
            for (d, &v) in dst.iter_mut().zip(band[c..].iter().step_by(cols)) {
                *d = v;
            }
        }
    }
    t
}

/// Time steps of direction `dir` in processing order.
fn steps(a: &RnnAttrs, dir: usize, seq: usize) -> Vec<usize> {
    let reverse = a.direction == RnnDirection::Reverse || (dir == 1);
    if reverse {
        (0..seq).rev().collect()
    } else {
        (0..seq).collect()
    }
}

/// One direction's weights as the time loop reads them: W packed as the B operand of
/// the input projection `X·Wᵀ`, and R transposed to `[hid, gates·hid]`. Prepared once
/// per session when W and R are constants of the graph (the packing and the transpose
/// were 30 % of a 2-layer LSTM's run), otherwise per call; the same values either way.
pub(crate) struct RnnWeights {
    w: Panels,
    rt: Vec<f32>,
}

/// Every direction's [`RnnWeights`] for a node with `gh = gates·hid` rows per direction.
fn prepare(c: &Ctx, d: &Dims, gh: usize) -> OpResult<Prepared> {
    let (w, r) = (floats(c.input(1)?), floats(c.input(2)?));
    let (f, h) = (d.feat, d.hid);
    let fk = fk();
    Ok(Prepared::Rnn(
        (0..d.dirs)
            .map(|dir| RnnWeights {
                // X·Wᵀ: b(kk, j) = W[j][kk], so rows of B step by 1 and columns by feat.
                w: Panels::pack_b(fk, &w[dir * gh * f..(dir + 1) * gh * f], (1, f), f, gh),
                // R transposed to [h, gates * h]: for batch 1 each step's H Rᵀ is then a
                // sum of Rᵀ's rows scaled by H (`sgemm`'s row path, contiguous and
                // register-blocked) instead of a GEMM that would pack R every step.
                rt: transpose(&r[dir * gh * h..(dir + 1) * gh * h], gh, h),
            })
            .collect(),
    ))
}

/// The node's weights: from its session slot (prepared on first use), or prepared now.
fn with_weights<T>(
    c: &Ctx,
    d: &Dims,
    gh: usize,
    body: impl FnOnce(&[RnnWeights]) -> OpResult<T>,
) -> OpResult<T> {
    if let Some(slot) = c.prep {
        if slot.get().is_none() {
            let p = prepare(c, d, gh)?;
            let _ = slot.set(p);
        }
        if let Some(Prepared::Rnn(ws)) = slot.get()
            && ws.len() == d.dirs
        {
            return body(ws);
        }
    }
    match prepare(c, d, gh)? {
        Prepared::Rnn(ws) => body(&ws),
        _ => unreachable!("prepare() builds RNN weights"),
    }
}

/// Input projections of one direction: [seq*batch, gates*hid] = X Wᵀ + bias, with W
/// packed ahead where given (the bits of `sgemm` on W as stored either way).
fn project(
    xs: &[f32],
    w: &[f32],
    wp: Option<&Panels>,
    bias: &[f32],
    d: &Dims,
    gh: usize,
) -> Vec<f32> {
    let rows = d.seq * d.batch;
    let mut out = vec![0f32; rows * gh];
    for r in 0..rows {
        out[r * gh..(r + 1) * gh].copy_from_slice(bias);
    }
    let (sa, sb) = ((d.feat, 1), (1, d.feat));
    sgemm_packed_b((rows, d.feat, gh), 1.0, xs, sa, w, sb, wp, 1.0, &mut out);
    out
}

pub(crate) fn lstm(c: &Ctx, a: &RnnAttrs) -> OpResult<Vec<Tensor>> {
    let d = dims(c, a)?;
    let (h, gh) = (d.hid, 4 * d.hid);
    let x = c.input(0)?;
    let xs = seq_major(&floats(x), &d, a.batch_first);
    let w = floats(c.input(1)?);
    let b = c.opt(3).map(floats);
    let mut y = vec![0f32; d.seq * d.dirs * d.batch * h];
    let mut yh = vec![0f32; d.dirs * d.batch * h];
    let mut yc = vec![0f32; d.dirs * d.batch * h];
    with_weights(c, &d, gh, |ws| {
        for (dir, wts) in ws.iter().enumerate() {
            let wd = &w[dir * gh * d.feat..(dir + 1) * gh * d.feat];
            let rt = &wts.rt;
            // LSTM gates add Wb and Rb unconditionally: fold both into the projection.
            let bias: Vec<f32> = match &b {
                Some(b) => (0..gh)
                    .map(|i| b[dir * 2 * gh + i] + b[dir * 2 * gh + gh + i])
                    .collect(),
                None => vec![0.0; gh],
            };
            let xw = project(&xs, wd, Some(&wts.w), &bias, &d, gh);
            let mut hs = init_state(c.opt(5), &d, dir, a.batch_first);
            let mut cs = init_state(c.opt(6), &d, dir, a.batch_first);
            let mut g = vec![0f32; d.batch * gh];
            // The gate math runs with the host's vector instructions (and FMA, which the
            // MLAS logistic formula uses).
            simd(
                #[inline(always)]
                || {
                    for t in steps(a, dir, d.seq) {
                        g.copy_from_slice(&xw[t * d.batch * gh..(t + 1) * d.batch * gh]);
                        sgemm_rnn(d.batch, h, gh, 1.0, &hs, (h, 1), rt, (gh, 1), 1.0, &mut g);
                        for bi in 0..d.batch {
                            // Gates i, o, f are contiguous: one vector pass of the logistic,
                            // one of tanh for c, then the cell update (same formulas, in
                            // loops without branches, so each vectorizes).
                            let gb = &mut g[bi * gh..(bi + 1) * gh];
                            logistic_in_place(&mut gb[..3 * h]);
                            tanh_in_place(&mut gb[3 * h..]);
                            let (ig, og, fg, cg) =
                                (&gb[..h], &gb[h..2 * h], &gb[2 * h..3 * h], &gb[3 * h..]);
                            let (cb, hb) =
                                (&mut cs[bi * h..(bi + 1) * h], &mut hs[bi * h..(bi + 1) * h]);
                            for j in 0..h {
                                let cv = fg[j] * cb[j] + ig[j] * cg[j];
                                cb[j] = cv;
                                hb[j] = og[j] * tanh_f32(cv);
                            }
                        }
                        y[(t * d.dirs + dir) * d.batch * h..][..d.batch * h].copy_from_slice(&hs);
                    }
                },
            );
            yh[dir * d.batch * h..(dir + 1) * d.batch * h].copy_from_slice(&hs);
            yc[dir * d.batch * h..(dir + 1) * d.batch * h].copy_from_slice(&cs);
        }
        Ok(())
    })?;
    Ok(finish(x, &d, a.batch_first, y, vec![yh, yc]))
}

pub(crate) fn gru(c: &Ctx, a: &RnnAttrs) -> OpResult<Vec<Tensor>> {
    let d = dims(c, a)?;
    let (h, gh) = (d.hid, 3 * d.hid);
    let x = c.input(0)?;
    let xs = seq_major(&floats(x), &d, a.batch_first);
    let w = floats(c.input(1)?);
    let b = c.opt(3).map(floats);
    let mut y = vec![0f32; d.seq * d.dirs * d.batch * h];
    let mut yh = vec![0f32; d.dirs * d.batch * h];
    with_weights(c, &d, gh, |ws| {
        for (dir, wts) in ws.iter().enumerate() {
            let wd = &w[dir * gh * d.feat..(dir + 1) * gh * d.feat];
            let rt = &wts.rt;
            let (wb, rb): (Vec<f32>, Vec<f32>) = match &b {
                Some(b) => (
                    b[dir * 2 * gh..dir * 2 * gh + gh].to_vec(),
                    b[dir * 2 * gh + gh..(dir + 1) * 2 * gh].to_vec(),
                ),
                None => (vec![0.0; gh], vec![0.0; gh]),
            };
            let xw = project(&xs, wd, Some(&wts.w), &wb, &d, gh);
            let mut hs = init_state(c.opt(5), &d, dir, a.batch_first);
            let mut hr = vec![0f32; d.batch * gh];
            let mut rh = vec![0f32; d.batch * h];
            let mut rhr = vec![0f32; d.batch * h];
            // Rh^T is columns 2h..3h of R^T.
            simd(
                #[inline(always)]
                || {
                    for t in steps(a, dir, d.seq) {
                        // H_{t-1} R^T + Rb for all three gates.
                        for bi in 0..d.batch {
                            hr[bi * gh..(bi + 1) * gh].copy_from_slice(&rb);
                        }
                        sgemm_rnn(d.batch, h, gh, 1.0, &hs, (h, 1), rt, (gh, 1), 1.0, &mut hr);
                        let xt = &xw[t * d.batch * gh..(t + 1) * d.batch * gh];
                        let mut z = vec![0f32; d.batch * h];
                        for bi in 0..d.batch {
                            for j in 0..h {
                                let (xg, hg) = (&xt[bi * gh..], &hr[bi * gh..]);
                                z[bi * h + j] = sigmoid_f32(xg[j] + hg[j]);
                                rh[bi * h + j] = sigmoid_f32(xg[h + j] + hg[h + j]);
                            }
                        }
                        if !a.linear_before_reset {
                            // (r . H_{t-1}) Rh^T + Rbh
                            let rprod: Vec<f32> =
                                rh.iter().zip(&hs).map(|(r, hv)| r * hv).collect();
                            for bi in 0..d.batch {
                                rhr[bi * h..(bi + 1) * h].copy_from_slice(&rb[2 * h..3 * h]);
                            }
                            let rh_t = &rt[2 * h..];
                            sgemm_rnn(
                                d.batch,
                                h,
                                h,
                                1.0,
                                &rprod,
                                (h, 1),
                                rh_t,
                                (gh, 1),
                                1.0,
                                &mut rhr,
                            );
                        }
                        for bi in 0..d.batch {
                            for j in 0..h {
                                let xg = xt[bi * gh + 2 * h + j];
                                let pre = if a.linear_before_reset {
                                    xg + rh[bi * h + j] * hr[bi * gh + 2 * h + j]
                                } else {
                                    xg + rhr[bi * h + j]
                                };
                                let cand = tanh_f32(pre);
                                let zv = z[bi * h + j];
                                hs[bi * h + j] = (1.0 - zv) * cand + zv * hs[bi * h + j];
                            }
                        }
                        y[(t * d.dirs + dir) * d.batch * h..][..d.batch * h].copy_from_slice(&hs);
                    }
                },
            );
            yh[dir * d.batch * h..(dir + 1) * d.batch * h].copy_from_slice(&hs);
        }
        Ok(())
    })?;
    Ok(finish(x, &d, a.batch_first, y, vec![yh]))
}

/// Plain RNN with the default tanh: H_t = tanh(X_t Wᵀ + H_{t-1} Rᵀ + Wb + Rb).
pub(crate) fn rnn(c: &Ctx, a: &RnnAttrs) -> OpResult<Vec<Tensor>> {
    let d = dims(c, a)?;
    let h = d.hid;
    let x = c.input(0)?;
    let xs = seq_major(&floats(x), &d, a.batch_first);
    let (w, r) = (floats(c.input(1)?), floats(c.input(2)?));
    let b = c.opt(3).map(floats);
    let mut y = vec![0f32; d.seq * d.dirs * d.batch * h];
    let mut yh = vec![0f32; d.dirs * d.batch * h];
    for dir in 0..d.dirs {
        let wd = &w[dir * h * d.feat..(dir + 1) * h * d.feat];
        let rd = &r[dir * h * h..(dir + 1) * h * h];
        let bias: Vec<f32> = match &b {
            Some(b) => (0..h)
                .map(|j| b[dir * 2 * h + j] + b[dir * 2 * h + h + j])
                .collect(),
            None => vec![0.0; h],
        };
        let xw = project(&xs, wd, None, &bias, &d, h);
        let mut hs = init_state(c.opt(5), &d, dir, a.batch_first);
        let mut hr = vec![0f32; d.batch * h];
        for t in steps(a, dir, d.seq) {
            hr.copy_from_slice(&xw[t * d.batch * h..(t + 1) * d.batch * h]);
            sgemm(d.batch, h, h, 1.0, &hs, h, 1, rd, 1, h, 1.0, &mut hr);
            for (o, v) in hs.iter_mut().zip(&hr) {
                *o = v.tanh();
            }
            y[(t * d.dirs + dir) * d.batch * h..][..d.batch * h].copy_from_slice(&hs);
        }
        yh[dir * d.batch * h..(dir + 1) * d.batch * h].copy_from_slice(&hs);
    }
    Ok(finish(x, &d, a.batch_first, y, vec![yh]))
}
