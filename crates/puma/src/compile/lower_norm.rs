//! Normalizations and reductions: Softmax/LogSoftmax (the VFU's log_softmax over a
//! row), LayerNormalization and ReduceSum/Mean/SumSquare/L2/Max/Min.
//!
//! Sums run on the crossbars as MVMs against constant matrices (paper §3: the MVMU
//! is the efficient reducer; the VFU has no horizontal add): a segment-sum matrix (rows
//! sum disjoint groups of columns) for reductions, and for LayerNorm the centering
//! matrix I − J/n (x − mean(x) in one MVM) and J/n (the variance broadcast to every
//! element). Max/Min reduce on the VFU, one element position at a time.

use super::lower::{LT, Lb, const_f32, input, opt_input, runs, strides, unsupported};
use super::lower_nn::{Dense, Locs};
use super::{CompileError, VId};
use crate::isa::AluOp;
use pimkit_ir::operand::{layer_norm, unary};
use pimkit_ir::{Op, ReduceKind};

/// The elements of `x` grouped along the axes in `red` (reduced), one group per
/// position of the other axes (row-major): `(kept shape, groups of element locations)`.
fn groups(x: &LT, red: &[usize]) -> (Vec<usize>, Vec<Locs>) {
    let rank = x.shape.len();
    let keep: Vec<usize> = (0..rank).filter(|a| !red.contains(a)).collect();
    let st = strides(&x.shape);
    let outer: usize = keep.iter().map(|&a| x.shape[a]).product();
    let inner: usize = red.iter().map(|&a| x.shape[a]).product();
    let mut out = Vec::with_capacity(outer);
    for o in 0..outer {
        let mut base = 0;
        let mut r = o;
        for &a in keep.iter().rev() {
            base += (r % x.shape[a]) * st[a];
            r /= x.shape[a];
        }
        let mut g = Vec::with_capacity(inner);
        for i in 0..inner {
            let mut idx = base;
            let mut r = i;
            for &a in red.iter().rev() {
                idx += (r % x.shape[a]) * st[a];
                r /= x.shape[a];
            }
            g.push(x.map[idx]);
        }
        out.push(g);
    }
    (keep.iter().map(|&a| x.shape[a]).collect(), out)
}

/// Σ (times `scale`) of each group, on the crossbars: a segment-sum matrix packs
/// ⌊S/K⌋ groups of K elements per MVM (K ≤ S), or sums K > S elements over column
/// tiles. Returns one location per group.
fn segment_sums(lb: &mut Lb, name: String, groups: &[Locs], scale: f32) -> Locs {
    let k = groups.first().map_or(1, |g| g.len()).max(1);
    let per = (lb.seg / k).max(1);
    let rows = per.min(groups.len().max(1));
    let cols = rows * k;
    let w = move |r: usize, c: usize| if c / k == r { scale } else { 0.0 };
    let d = Dense {
        name,
        rows,
        cols,
        row_blocks: lb.chunks(rows),
        col_tiles: lb.chunks(cols),
        w: &w,
        bias: None,
    };
    let zero = lb.const_vec(&vec![0.0; lb.seg]);
    let nvec = groups.len().div_ceil(rows);
    let copies = lb
        .replicas(&lb.g.nodes[lb.node as usize].name.clone())
        .clamp(1, nvec.max(1));
    let mvmus = d.place(lb, copies, 0);
    let outs = d.apply(lb, &mvmus, nvec, &|i| i % copies, &mut |_, i| {
        let mut v: Locs = Vec::with_capacity(cols);
        for g in i * rows..(i + 1) * rows {
            match groups.get(g) {
                Some(x) => v.extend_from_slice(x),
                // A partial last vector: zeros (their sums are not used).
                None => v.extend((0..k).map(|j| (zero, j as u32))),
            }
        }
        v
    });
    let mut res = Vec::with_capacity(groups.len());
    for (i, o) in outs.into_iter().enumerate() {
        for r in 0..rows {
            if i * rows + r < groups.len() {
                res.push(o[r]);
            }
        }
    }
    res
}

/// Elementwise `op` over groups, position by position: the result's group holds op
/// applied along each group (a VFU reduction tree for Max/Min).
fn reduce_vfu(lb: &mut Lb, op: AluOp, groups: &[Locs]) -> Locs {
    let k = groups.first().map_or(0, |g| g.len());
    let mut out = Vec::with_capacity(groups.len());
    for chunk in groups.chunks(lb.seg) {
        let col = |j: usize| runs(chunk.iter().map(|g| g[j]));
        let mut acc = col(0);
        let n = chunk.len() as u32;
        for j in 1..k {
            acc = Lb::whole(lb.alu(op, acc, Some(col(j))), n);
        }
        if k == 1 {
            acc = Lb::whole(lb.alui(AluOp::Add, acc, 0.0), n);
        }
        let v = acc[0].v;
        out.extend((0..n).map(|i| (v, i)));
    }
    out
}

fn reduce(
    lb: &mut Lb,
    ni: usize,
    kind: ReduceKind,
    axes: &[usize],
    out_shape: &[usize],
) -> Result<LT, CompileError> {
    let x = lb.dyn_val(input(lb, ni, unary::X)?, "the input")?;
    let axes: Vec<usize> = if axes.is_empty() {
        (0..x.shape.len()).collect()
    } else {
        axes.to_vec()
    };
    let (_, gs) = groups(&x, &axes);
    let k = gs.first().map_or(1, |g| g.len());
    let name = lb.g.nodes[ni].name.clone();
    let sq = |lb: &mut Lb, gs: Vec<Locs>| -> Vec<Locs> {
        gs.into_iter()
            .map(|g| {
                let mut out = Vec::with_capacity(g.len());
                for c in g.chunks(lb.seg) {
                    let p = runs(c.iter().copied());
                    let v = lb.alu(AluOp::Mul, p.clone(), Some(p));
                    out.extend((0..c.len()).map(|i| (v, i as u32)));
                }
                out
            })
            .collect()
    };
    let map = match kind {
        ReduceKind::Sum => segment_sums(lb, name, &gs, 1.0),
        ReduceKind::Mean => segment_sums(lb, name, &gs, 1.0 / k as f32),
        ReduceKind::SumSquare => {
            let s = sq(lb, gs);
            segment_sums(lb, name, &s, 1.0)
        }
        ReduceKind::L2 => {
            let s = sq(lb, gs);
            let sums = segment_sums(lb, name, &s, 1.0);
            let t = LT {
                shape: vec![sums.len()],
                map: sums,
            };
            lb.map_unary(&t, |lb, p| lb.alu(AluOp::Sqrt, p, None)).map
        }
        ReduceKind::Max => reduce_vfu(lb, AluOp::Max, &gs),
        ReduceKind::Min => reduce_vfu(lb, AluOp::Min, &gs),
        ReduceKind::Prod => {
            return Err(unsupported(
                lb.g,
                ni as u32,
                "ReduceProd has no PUMA lowering",
            ));
        }
    };
    Ok(LT {
        shape: out_shape.to_vec(),
        map,
    })
}

/// Rows longer than this many words run as chunks (`chunked_log_softmax`): a core holds
/// the gathered row, the log_softmax result and the pieces it was gathered from, which
/// for a row of half the data memory (a 1000-class classifier on 2048 words) does not fit.
fn softmax_chunk_limit(lb: &Lb) -> usize {
    super::lower::arch_max_vec(lb.arch) / 2
}

/// log_softmax of a row given as element locations, in chunks of at most `seg` words:
/// each chunk's log-sum-exp (x − log_softmax(x), of its first element), the log_softmax
/// of those K values gives the row's log-sum-exp L the same way, and x − L per chunk.
fn chunked_log_softmax(lb: &mut Lb, row: &[(VId, u32)]) -> Vec<(VId, u32)> {
    use super::Piece;
    let one = |(v, off): (VId, u32)| vec![Piece { v, off, len: 1 }];
    let chunks: Vec<&[(VId, u32)]> = row.chunks(lb.seg.max(1)).collect();
    let mut lse = Vec::with_capacity(chunks.len());
    for c in &chunks {
        let ls = lb.alu(AluOp::LogSoftmax, runs(c.iter().copied()), None);
        lse.push(lb.alu(AluOp::Sub, one(c[0]), Some(one((ls, 0)))));
    }
    let lse_p: Vec<Piece> = lse.iter().map(|&v| Piece { v, off: 0, len: 1 }).collect();
    let ls2 = lb.alu(AluOp::LogSoftmax, lse_p, None);
    let total = lb.alu(AluOp::Sub, one((lse[0], 0)), Some(one((ls2, 0))));
    let mut out = Vec::with_capacity(row.len());
    for c in &chunks {
        let l = vec![
            Piece {
                v: total,
                off: 0,
                len: 1
            };
            c.len()
        ];
        let r = lb.alu(AluOp::Sub, runs(c.iter().copied()), Some(l));
        out.extend((0..c.len() as u32).map(|j| (r, j)));
    }
    out
}

/// Softmax / LogSoftmax along `axis`: each row along the axis is one log_softmax
/// (chunked when long, `chunked_log_softmax`).
fn softmax(
    lb: &mut Lb,
    ni: usize,
    axis: usize,
    log: bool,
    out_shape: &[usize],
) -> Result<LT, CompileError> {
    let x = lb.dyn_val(input(lb, ni, unary::X)?, "the input")?;
    let n = x.shape[axis];
    let chunked = n > softmax_chunk_limit(lb);
    if chunked && n.div_ceil(lb.seg.max(1)) > softmax_chunk_limit(lb) {
        return Err(unsupported(
            lb.g,
            ni as u32,
            format!("softmax over {n} elements exceeds the data memory"),
        ));
    }
    let (_, rows) = groups(&x, &[axis]);
    let rank = x.shape.len();
    let st = strides(&x.shape);
    let keep: Vec<usize> = (0..rank).filter(|&a| a != axis).collect();
    let mut map = vec![(0, 0); x.map.len()];
    for (o, row) in rows.iter().enumerate() {
        let locs: Vec<(VId, u32)> = if chunked {
            let ls = chunked_log_softmax(lb, row);
            if log {
                ls
            } else {
                let mut out = Vec::with_capacity(n);
                for c in ls.chunk_by(|a, b| a.0 == b.0) {
                    let e = lb.alu(AluOp::Exp, runs(c.iter().copied()), None);
                    out.extend((0..c.len() as u32).map(|j| (e, j)));
                }
                out
            }
        } else {
            let p = runs(row.iter().copied());
            let ls = lb.alu(AluOp::LogSoftmax, p, None);
            let r = if log {
                ls
            } else {
                lb.alu(AluOp::Exp, Lb::whole(ls, n as u32), None)
            };
            (0..n as u32).map(|j| (r, j)).collect()
        };
        let mut base = 0;
        let mut q = o;
        for &a in keep.iter().rev() {
            base += (q % x.shape[a]) * st[a];
            q /= x.shape[a];
        }
        for (j, loc) in locs.into_iter().enumerate() {
            map[base + j * st[axis]] = loc;
        }
    }
    Ok(LT {
        shape: out_shape.to_vec(),
        map,
    })
}

/// LayerNormalization over axes [axis, rank): centered = (I − J/n)·x, var = (J/n)·
/// centered², y = centered / √(var + ε) · scale + bias.
fn layer_norm(
    lb: &mut Lb,
    ni: usize,
    axis: usize,
    eps: f32,
    out_shape: &[usize],
) -> Result<LT, CompileError> {
    let g = lb.g;
    let x = lb.dyn_val(input(lb, ni, unary::X)?, "the input")?;
    let n: usize = x.shape[axis..].iter().product();
    let rows = x.map.len() / n.max(1);
    let mut so = false;
    let scale = const_f32(g, input(lb, ni, layer_norm::SCALE)?, &mut so)
        .ok_or_else(|| unsupported(g, ni as u32, "scale must be constant"))?;
    let bias = match opt_input(lb, ni, layer_norm::B) {
        Some(b) => Some(
            const_f32(g, b, &mut so)
                .ok_or_else(|| unsupported(g, ni as u32, "bias must be constant"))?,
        ),
        None => None,
    };
    lb.shape_only |= so;
    let name = g.nodes[ni].name.clone();
    let inv = 1.0 / n as f32;
    let center = move |r: usize, c: usize| if r == c { 1.0 - inv } else { -inv };
    let mean = move |_: usize, _: usize| inv;
    let copies = lb.replicas(&name).clamp(1, rows.max(1));
    let dc = Dense {
        name: format!("{name}/center"),
        rows: n,
        cols: n,
        row_blocks: lb.chunks(n),
        col_tiles: lb.chunks(n),
        w: &center,
        bias: None,
    };
    let mc = dc.place(lb, copies, 0);
    let xm = x.map.clone();
    let centered = dc.apply(lb, &mc, rows, &|i| i % copies, &mut |_, i| {
        xm[i * n..(i + 1) * n].to_vec()
    });
    // centered² per crossbar-wide block.
    let squares: Vec<Locs> = centered
        .iter()
        .map(|c| {
            let mut out = Vec::with_capacity(n);
            for chunk in c.chunks(lb.seg) {
                let p = runs(chunk.iter().copied());
                let v = lb.alu(AluOp::Mul, p.clone(), Some(p));
                out.extend((0..chunk.len()).map(|k| (v, k as u32)));
            }
            out
        })
        .collect();
    let dv = Dense {
        name: format!("{name}/variance"),
        rows: n,
        cols: n,
        row_blocks: lb.chunks(n),
        col_tiles: lb.chunks(n),
        w: &mean,
        bias: None,
    };
    let mv = dv.place(lb, copies, 0);
    let var = dv.apply(lb, &mv, rows, &|i| i % copies, &mut |_, i| {
        squares[i].clone()
    });
    let mut map = Vec::with_capacity(x.map.len());
    for (c, v) in centered.iter().zip(&var) {
        for (k, (cc, vv)) in c.chunks(lb.seg).zip(v.chunks(lb.seg)).enumerate() {
            let len = cc.len() as u32;
            let off = k * lb.seg;
            let ve = lb.alui(AluOp::Add, runs(vv.iter().copied()), eps);
            let sd = lb.alu(AluOp::Sqrt, Lb::whole(ve, len), None);
            let y = lb.alu(
                AluOp::Div,
                runs(cc.iter().copied()),
                Some(Lb::whole(sd, len)),
            );
            let sp = lb.const_pieces(&scale[off..off + len as usize]);
            let mut y: VId = lb.alu(AluOp::Mul, Lb::whole(y, len), Some(sp));
            if let Some(b) = &bias {
                let bp = lb.const_pieces(&b[off..off + len as usize]);
                y = lb.alu(AluOp::Add, Lb::whole(y, len), Some(bp));
            }
            map.extend((0..len).map(|j| (y, j)));
        }
    }
    Ok(LT {
        shape: out_shape.to_vec(),
        map,
    })
}

/// Lower a normalization or reduction node; `Ok(None)` when it is not one.
pub(super) fn lower(lb: &mut Lb, ni: usize) -> Result<Option<LT>, CompileError> {
    let g = lb.g;
    let node = &g.nodes[ni];
    let out_shape = g.ty(node.outputs[0]).shape.clone();
    Ok(Some(match &node.op {
        Op::Softmax { axis } => softmax(lb, ni, *axis, false, &out_shape)?,
        Op::LogSoftmax { axis } => softmax(lb, ni, *axis, true, &out_shape)?,
        Op::LayerNorm { axis, epsilon } => layer_norm(lb, ni, *axis, *epsilon, &out_shape)?,
        Op::Reduce { kind, axes, .. } => reduce(lb, ni, *kind, axes, &out_shape)?,
        // not a normalization or reduction: lower_node tries the next pass, whose last arm names it
        _ => return Ok(None),
    }))
}
