//! Lowering of the weight-carrying and window ops: Gemm/MatMul, Conv, pooling, LSTM, GRU.

use super::lower::{
    LT, Lb, Val, bcast_index, const_f32, input, opt_input, runs, strides, unsupported,
};
use super::{CompileError, Kind, Piece, VId};
use crate::isa::AluOp;
use pimkit_ir::operand::{gemm, rnn, unary};
use pimkit_ir::{Op, PoolKind, RnnDirection};

pub(super) type Locs = Vec<(VId, u32)>;

/// A weight matrix of a layer: `rows × cols`, element (r, c) from `w`, cut into
/// `row_blocks` × `col_tiles` MVMU tiles, optional per-row bias.
pub(super) struct Dense<'w> {
    pub name: String,
    pub rows: usize,
    pub cols: usize,
    pub row_blocks: Vec<(usize, usize)>,
    pub col_tiles: Vec<(usize, usize)>,
    pub w: &'w dyn Fn(usize, usize) -> f32,
    pub bias: Option<&'w [f32]>,
}

impl Dense<'_> {
    /// Program `replicas` copies of the matrix on MVMUs, each needing `words` of its
    /// tiles' shared memory for its inputs (a line buffer): a copy starts on a fresh
    /// tile when the current one's memory is committed (`Lb::reserve`). Returns the
    /// MVMUs per copy.
    pub fn place(&self, lb: &mut Lb, replicas: usize, words: u32) -> Vec<Vec<Vec<u32>>> {
        (0..replicas)
            .map(|r| {
                lb.reserve(words);
                let name = if replicas > 1 {
                    format!("{}[replica {r}]", self.name)
                } else {
                    self.name.clone()
                };
                lb.add_matrix(
                    name,
                    self.rows,
                    self.cols,
                    &self.row_blocks,
                    &self.col_tiles,
                    self.w,
                )
            })
            .collect()
    }

    /// Multiply `nvec` input vectors (element locations from `vecs`), vector `i` on copy
    /// `rep(i)`. Returns the output element locations per vector.
    pub fn apply(
        &self,
        lb: &mut Lb,
        mvmus: &[Vec<Vec<u32>>],
        nvec: usize,
        rep: &dyn Fn(usize) -> usize,
        vecs: &mut dyn FnMut(&mut Lb, usize) -> Locs,
    ) -> Vec<Locs> {
        let mut out = Vec::with_capacity(nvec);
        for i in 0..nvec {
            let x = vecs(lb, i);
            let ct = &self.col_tiles;
            let vals = lb.matvec(
                &mvmus[rep(i)],
                &self.row_blocks,
                &mut |_, t| {
                    let (c0, cn) = ct[t];
                    runs(x[c0..c0 + cn].iter().copied())
                },
                self.bias,
            );
            let mut locs = vec![(0, 0); self.rows];
            for (b, &(r0, rn)) in self.row_blocks.iter().enumerate() {
                for k in 0..rn {
                    locs[r0 + k] = (vals[b], k as u32);
                }
            }
            out.push(locs);
        }
        out
    }
}

/// Dense layer: the replication plan's copies of its matrix (at most one per input
/// vector) take the vectors in turn.
#[allow(clippy::too_many_arguments)]
fn dense(
    lb: &mut Lb,
    name: String,
    rows: usize,
    cols: usize,
    row_blocks: Vec<(usize, usize)>,
    col_tiles: Vec<(usize, usize)>,
    w: &dyn Fn(usize, usize) -> f32,
    nvec: usize,
    vecs: &mut dyn FnMut(&mut Lb, usize) -> Locs,
    bias: Option<&[f32]>,
) -> Vec<Locs> {
    let d = Dense {
        name,
        rows,
        cols,
        row_blocks,
        col_tiles,
        w,
        bias,
    };
    let copies = lb
        .replicas(&lb.g.nodes[lb.node as usize].name.clone())
        .clamp(1, nvec.max(1));
    let mvmus = d.place(lb, copies, 0);
    d.apply(lb, &mvmus, nvec, &|i| i % copies, vecs)
}

pub(super) fn matmul(lb: &mut Lb, ni: usize) -> Result<LT, CompileError> {
    let g = lb.g;
    let node = &g.nodes[ni];
    let (alpha, beta, ta, tb) = match node.op {
        Op::Gemm {
            alpha,
            beta,
            trans_a,
            trans_b,
        } => (alpha, beta, trans_a, trans_b),
        // MatMul: no attributes
        _ => (1.0, 1.0, false, false),
    };
    let out_shape = g.ty(node.outputs[0]).shape.clone();
    let av = lb.val(input(lb, ni, gemm::A)?)?;
    let bv = lb.val(input(lb, ni, gemm::B)?)?;
    let a_shape = av.shape().to_vec();
    let b_shape = bv.shape().to_vec();
    let n_out: usize = out_shape.iter().product();
    let mut locs_out: Locs = vec![(0, 0); n_out];
    match (&av, &bv) {
        (Val::Dyn(a), Val::Const { data: b, .. }) if b_shape.len() == 2 => {
            // y[m, :] = W · a[m, :] with W = Bᵀ (rows = N outputs, cols = K).
            let (k, n) = if tb {
                (b_shape[1], b_shape[0])
            } else {
                (b_shape[0], b_shape[1])
            };
            let rank = a_shape.len();
            let (m_total, a_k) = if ta {
                (a_shape[1], a_shape[0])
            } else {
                (a.map.len() / a_shape[rank - 1], a_shape[rank - 1])
            };
            if a_k != k {
                return Err(unsupported(g, ni as u32, "inner dimensions differ"));
            }
            let b = b.clone();
            let w = move |r: usize, c: usize| alpha * if tb { b[r * k + c] } else { b[c * n + r] };
            let bias = gemm_bias(lb, ni, beta, n, m_total, true)?;
            let rb = lb.chunks(n);
            let ct = lb.chunks(k);
            let amap = a.map.clone();
            let outs = dense(
                lb,
                node.name.clone(),
                n,
                k,
                rb,
                ct,
                &w,
                m_total,
                &mut |_, m| {
                    (0..k)
                        .map(|c| {
                            if ta {
                                amap[c * m_total + m]
                            } else {
                                amap[m * k + c]
                            }
                        })
                        .collect()
                },
                bias.as_deref(),
            );
            for (m, o) in outs.into_iter().enumerate() {
                locs_out[m * n..(m + 1) * n].copy_from_slice(&o);
            }
        }
        (Val::Const { data: a, .. }, Val::Dyn(b)) if a_shape.len() == 2 && b_shape.len() == 2 => {
            // y[:, j] = A · b[:, j].
            let (m, k) = if ta {
                (a_shape[1], a_shape[0])
            } else {
                (a_shape[0], a_shape[1])
            };
            let (bk, n) = if tb {
                (b_shape[1], b_shape[0])
            } else {
                (b_shape[0], b_shape[1])
            };
            if bk != k {
                return Err(unsupported(g, ni as u32, "inner dimensions differ"));
            }
            let a = a.clone();
            let w = move |r: usize, c: usize| alpha * if ta { a[c * m + r] } else { a[r * k + c] };
            let bias = gemm_bias(lb, ni, beta, m, n, false)?;
            let rb = lb.chunks(m);
            let ct = lb.chunks(k);
            let bmap = b.map.clone();
            let outs = dense(
                lb,
                node.name.clone(),
                m,
                k,
                rb,
                ct,
                &w,
                n,
                &mut |_, j| {
                    (0..k)
                        .map(|c| if tb { bmap[j * k + c] } else { bmap[c * n + j] })
                        .collect()
                },
                bias.as_deref(),
            );
            for (j, o) in outs.into_iter().enumerate() {
                for r in 0..m {
                    locs_out[r * n + j] = o[r];
                }
            }
        }
        // a constant A (weights on the left) or two dynamic operands are handled below
        _ => {
            return Err(unsupported(
                g,
                ni as u32,
                "PUMA keeps weights in crossbars: one operand must be a 2-D constant, the other dynamic",
            ));
        }
    }
    let mut y = LT {
        shape: out_shape.clone(),
        map: locs_out,
    };
    // A dynamic C (or one that is not a per-output vector) is added separately.
    if let Some(cv) = opt_input(lb, ni, gemm::C)
        && !matches!(node.op, Op::MatMul)
    {
        let c = lb.val(cv)?;
        if !is_vector_bias(
            &c,
            &out_shape,
            lb.matrices.last().map(|m| m.rows).unwrap_or(0),
        ) {
            let c = match c {
                Val::Const { shape, data } => Val::Const {
                    shape,
                    data: data.iter().map(|x| x * beta).collect(),
                },
                d => d,
            };
            y = lb.binary(AluOp::Add, &Val::Dyn(y), &c, &out_shape);
        }
    }
    Ok(y)
}

fn is_vector_bias(c: &Val, out_shape: &[usize], rows: usize) -> bool {
    match c {
        Val::Const { shape, .. } => {
            let n: usize = shape.iter().product();
            n == rows
                && (shape.len() <= 1
                    || (out_shape.len() == 2 && (shape == &[1, rows] || shape == &[rows, 1])))
        }
        // a dynamic C is added by an ALU op
        _ => false,
    }
}

/// Gemm's C as a per-output bias vector when it broadcasts that way.
fn gemm_bias(
    lb: &mut Lb,
    ni: usize,
    beta: f32,
    rows: usize,
    other: usize,
    row_is_last: bool,
) -> Result<Option<Vec<f32>>, CompileError> {
    let node = &lb.g.nodes[ni];
    if matches!(node.op, Op::MatMul) {
        return Ok(None);
    }
    let Some(cv) = opt_input(lb, ni, gemm::C) else {
        return Ok(None);
    };
    let Val::Const { shape, data } = lb.val(cv)? else {
        return Ok(None);
    };
    let n: usize = shape.iter().product();
    let ok = n == rows
        && (shape.len() <= 1
            || (row_is_last && shape == [1, rows])
            || (!row_is_last && shape == [rows, 1]));
    let _ = other;
    Ok(ok.then(|| data.iter().map(|x| x * beta).collect()))
}

pub(super) fn pool(lb: &mut Lb, ni: usize) -> Result<LT, CompileError> {
    let g = lb.g;
    let node = &g.nodes[ni];
    let x = lb.dyn_val(input(lb, ni, unary::X)?, "the input")?;
    if x.shape.len() != 4 {
        return Err(unsupported(
            g,
            ni as u32,
            "only 2-D pooling (NCHW) is supported",
        ));
    }
    let out_shape = g.ty(node.outputs[0]).shape.clone();
    let (nb, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let (oh, ow) = (out_shape[2], out_shape[3]);
    let (kind, k, s, p, d, cip) = match &node.op {
        Op::Pool(a) => (
            a.kind,
            [a.kernel[0], a.kernel[1]],
            [a.strides[0], a.strides[1]],
            [a.pads[0], a.pads[1]],
            [a.dilations[0], a.dilations[1]],
            a.count_include_pad,
        ),
        Op::GlobalPool(kind) => (*kind, [h, w], [1, 1], [0, 0], [1, 1], false),
        // lower_node calls pool only for Pool and GlobalPool
        _ => unreachable!(),
    };
    let xs = strides(&x.shape);
    let os = strides(&out_shape);
    let mut map = vec![(0, 0); out_shape.iter().product()];
    let chunks = lb.chunks(c);
    for n in 0..nb {
        for oy in 0..oh {
            for ox in 0..ow {
                for &(c0, cn) in &chunks {
                    let mut acc: Option<Vec<Piece>> = None;
                    let mut count = 0usize;
                    for ky in 0..k[0] {
                        for kx in 0..k[1] {
                            let iy = (oy * s[0] + ky * d[0]) as isize - p[0] as isize;
                            let ix = (ox * s[1] + kx * d[1]) as isize - p[1] as isize;
                            if iy < 0 || ix < 0 || iy >= h as isize || ix >= w as isize {
                                continue;
                            }
                            count += 1;
                            let ps = runs((c0..c0 + cn).map(|ch| {
                                x.map[n * xs[0] + ch * xs[1] + iy as usize * xs[2] + ix as usize]
                            }));
                            acc = Some(match acc {
                                None => ps,
                                Some(a) => {
                                    let op = if kind == PoolKind::Max {
                                        AluOp::Max
                                    } else {
                                        AluOp::Add
                                    };
                                    Lb::whole(lb.alu(op, a, Some(ps)), cn as u32)
                                }
                            });
                        }
                    }
                    let acc = acc.ok_or_else(|| {
                        unsupported(
                            g,
                            ni as u32,
                            "a pooling window lies entirely in the padding",
                        )
                    })?;
                    let v = if kind == PoolKind::Avg {
                        let div = if cip { k[0] * k[1] } else { count };
                        lb.alui(AluOp::Mul, acc, 1.0 / div as f32)
                    } else if count == 1 {
                        let loc = lb.loc_of(&[&acc]);
                        lb.push(Kind::Gather(acc), cn as u32, loc)
                    } else {
                        acc[0].v
                    };
                    lb.ops[v as usize].shm = true;
                    for k2 in 0..cn {
                        map[n * os[0] + (c0 + k2) * os[1] + oy * os[2] + ox] = (v, k2 as u32);
                    }
                }
            }
        }
    }
    Ok(LT {
        shape: out_shape,
        map,
    })
}

struct Rnn {
    seq: usize,
    batch: usize,
    hidden: usize,
    dirs: usize,
    x: LT,
    w: Vec<f32>,
    r: Vec<f32>,
    b: Option<Vec<f32>>,
    h0: Option<Val>,
    c0: Option<Val>,
    input_size: usize,
    batch_first: bool,
    reverse_only: bool,
}

fn rnn_common(lb: &mut Lb, ni: usize, gates: usize) -> Result<Rnn, CompileError> {
    let g = lb.g;
    let node = &g.nodes[ni];
    let attrs = match &node.op {
        Op::Lstm(a) | Op::Gru(a) => a.clone(),
        // lower_node calls rnn_common only for Lstm and Gru
        _ => unreachable!(),
    };
    if opt_input(lb, ni, rnn::SEQUENCE_LENS).is_some() {
        return Err(unsupported(
            g,
            ni as u32,
            "sequence_lens is not supported (all sequences run to full length)",
        ));
    }
    let x = lb.dyn_val(input(lb, ni, rnn::X)?, "X")?;
    let mut so = false;
    let w = const_f32(g, input(lb, ni, rnn::W)?, &mut so)
        .ok_or_else(|| unsupported(g, ni as u32, "W must be constant"))?;
    let r = const_f32(g, input(lb, ni, rnn::R)?, &mut so)
        .ok_or_else(|| unsupported(g, ni as u32, "R must be constant"))?;
    let b = match opt_input(lb, ni, rnn::B) {
        Some(v) => Some(
            const_f32(g, v, &mut so)
                .ok_or_else(|| unsupported(g, ni as u32, "B must be constant"))?,
        ),
        None => None,
    };
    lb.shape_only |= so;
    let h0 = opt_input(lb, ni, rnn::INITIAL_H)
        .map(|v| lb.val(v))
        .transpose()?;
    let c0 = if gates == 4 {
        opt_input(lb, ni, rnn::INITIAL_C)
            .map(|v| lb.val(v))
            .transpose()?
    } else {
        None
    };
    let (seq, batch, input_size) = if attrs.batch_first {
        (x.shape[1], x.shape[0], x.shape[2])
    } else {
        (x.shape[0], x.shape[1], x.shape[2])
    };
    Ok(Rnn {
        seq,
        batch,
        hidden: attrs.hidden_size,
        dirs: attrs.direction.num_directions(),
        x,
        w,
        r,
        b,
        h0,
        c0,
        input_size,
        batch_first: attrs.batch_first,
        reverse_only: attrs.direction == RnnDirection::Reverse,
    })
}

impl Rnn {
    fn x_loc(&self, t: usize, b: usize, i: usize) -> (VId, u32) {
        let idx = if self.batch_first {
            (b * self.seq + t) * self.input_size + i
        } else {
            (t * self.batch + b) * self.input_size + i
        };
        self.x.map[idx]
    }
    /// Initial state [dirs, batch, hidden] as element locations (zeros when absent).
    fn init(&self, lb: &mut Lb, v: &Option<Val>, d: usize, b: usize) -> Locs {
        let h = self.hidden;
        match v {
            Some(v) => {
                let t = lb.as_lt(v);
                t.map[(d * self.batch + b) * h..(d * self.batch + b + 1) * h].to_vec()
            }
            None => {
                let mut out = Vec::with_capacity(h);
                for (s, n) in lb.chunks(h) {
                    let z = lb.const_vec(&vec![0.0; n]);
                    out.extend((0..n).map(|k| (z, k as u32)));
                    let _ = s;
                }
                out
            }
        }
    }
    /// Row blocks: `gates` consecutive groups of `hidden` rows, each chunked.
    fn gate_blocks(&self, lb: &Lb, gates: std::ops::Range<usize>) -> Vec<(usize, usize)> {
        let mut v = Vec::new();
        for gi in gates.clone() {
            for (s, n) in lb.chunks(self.hidden) {
                v.push(((gi - gates.start) * self.hidden + s, n));
            }
        }
        v
    }
    fn store_outputs(
        &self,
        lb: &mut Lb,
        ni: usize,
        ys: &[Vec<Vec<Locs>>],
        finals: &[(usize, Vec<Vec<Locs>>)],
    ) {
        // ys[d][t][b] = h locations; Y is [seq, dirs, batch, hidden] (or batch-first
        // [batch, seq, dirs, hidden]).
        let g = lb.g;
        let node = &g.nodes[ni];
        let h = self.hidden;
        let mut y = Vec::with_capacity(self.seq * self.dirs * self.batch * h);
        if self.batch_first {
            for b in 0..self.batch {
                for t in 0..self.seq {
                    for yd in ys {
                        y.extend_from_slice(&yd[t][b]);
                    }
                }
            }
        } else {
            for t in 0..self.seq {
                for yd in ys {
                    for b in 0..self.batch {
                        y.extend_from_slice(&yd[t][b]);
                    }
                }
            }
        }
        lb.vals[node.outputs[0].idx()] = Some(Val::Dyn(LT {
            shape: g.ty(node.outputs[0]).shape.clone(),
            map: y,
        }));
        for (oi, st) in finals {
            let mut m = Vec::new();
            for sd in st {
                for sb in sd {
                    m.extend_from_slice(sb);
                }
            }
            if let Some(&ov) = node.outputs.get(*oi) {
                lb.vals[ov.idx()] = Some(Val::Dyn(LT {
                    shape: g.ty(ov).shape.clone(),
                    map: m,
                }));
            }
        }
    }
}

fn ew(lb: &mut Lb, op: AluOp, a: &[(VId, u32)], b: &[(VId, u32)]) -> Locs {
    let mut out = Vec::with_capacity(a.len());
    let mut s = 0;
    while s < a.len() {
        let n = lb.seg.min(a.len() - s);
        let v = lb.alu(
            op,
            runs(a[s..s + n].iter().copied()),
            Some(runs(b[s..s + n].iter().copied())),
        );
        out.extend((0..n).map(|k| (v, k as u32)));
        s += n;
    }
    out
}

fn ew1(lb: &mut Lb, op: AluOp, a: &[(VId, u32)]) -> Locs {
    let mut out = Vec::with_capacity(a.len());
    let mut s = 0;
    while s < a.len() {
        let n = lb.seg.min(a.len() - s);
        let v = lb.alu(op, runs(a[s..s + n].iter().copied()), None);
        out.extend((0..n).map(|k| (v, k as u32)));
        s += n;
    }
    out
}

fn time_order(seq: usize, reverse: bool) -> Vec<usize> {
    if reverse {
        (0..seq).rev().collect()
    } else {
        (0..seq).collect()
    }
}

pub(super) fn lstm(lb: &mut Lb, ni: usize) -> Result<(), CompileError> {
    let rn = rnn_common(lb, ni, 4)?;
    let (hs, is) = (rn.hidden, rn.input_size);
    let name = lb.g.nodes[ni].name.clone();
    let mut ys = Vec::new();
    let mut hfin = Vec::new();
    let mut cfin = Vec::new();
    for d in 0..rn.dirs {
        let w = &rn.w[d * 4 * hs * is..(d + 1) * 4 * hs * is];
        let r = &rn.r[d * 4 * hs * hs..(d + 1) * 4 * hs * hs];
        let bias: Vec<f32> = match &rn.b {
            Some(b) => (0..4 * hs)
                .map(|k| b[d * 8 * hs + k] + b[d * 8 * hs + 4 * hs + k])
                .collect(),
            None => vec![0.0; 4 * hs],
        };
        let wf = |row: usize, c: usize| {
            if c < is {
                w[row * is + c]
            } else {
                r[row * hs + c - is]
            }
        };
        let blocks = rn.gate_blocks(lb, 0..4);
        let mut cols: Vec<(usize, usize)> = lb.chunks(is);
        cols.extend(lb.chunks(hs).into_iter().map(|(s, n)| (is + s, n)));
        let mvmus = lb.add_matrix(
            format!("{name}/dir{d}"),
            4 * hs,
            is + hs,
            &blocks,
            &cols,
            &wf,
        );
        let reverse = d == 1 || rn.reverse_only;
        let mut yd = vec![vec![Vec::new(); rn.batch]; rn.seq];
        let mut hd = Vec::new();
        let mut cd = Vec::new();
        for b in 0..rn.batch {
            let mut h = rn.init(lb, &rn.h0, d, b);
            let mut c: Option<Locs> = rn.c0.as_ref().map(|_| rn.init(lb, &rn.c0, d, b));
            for t in time_order(rn.seq, reverse) {
                let mut xv: Locs = (0..is).map(|i| rn.x_loc(t, b, i)).collect();
                xv.extend_from_slice(&h);
                let cl = cols.clone();
                let gv = lb.matvec(
                    &mvmus,
                    &blocks,
                    &mut |_, k| {
                        let (c0, cn) = cl[k];
                        runs(xv[c0..c0 + cn].iter().copied())
                    },
                    Some(&bias),
                );
                let per_gate = blocks.len() / 4;
                let gate = |gi: usize| -> Locs {
                    let mut v = Vec::with_capacity(hs);
                    for k in 0..per_gate {
                        let (_, n) = blocks[gi * per_gate + k];
                        v.extend((0..n).map(|e| (gv[gi * per_gate + k], e as u32)));
                    }
                    v
                };
                // ONNX gate order: i, o, f, c.
                let (gi, go, gf, gc) = (gate(0), gate(1), gate(2), gate(3));
                let i = ew1(lb, AluOp::Sig, &gi);
                let o = ew1(lb, AluOp::Sig, &go);
                let ct = ew1(lb, AluOp::Tanh, &gc);
                let ic = ew(lb, AluOp::Mul, &i, &ct);
                let cn = match &c {
                    Some(cprev) => {
                        let f = ew1(lb, AluOp::Sig, &gf);
                        let fc = ew(lb, AluOp::Mul, &f, cprev);
                        ew(lb, AluOp::Add, &fc, &ic)
                    }
                    None => ic,
                };
                let tc = ew1(lb, AluOp::Tanh, &cn);
                h = ew(lb, AluOp::Mul, &o, &tc);
                c = Some(cn);
                yd[t][b] = h.clone();
            }
            hd.push(h);
            cd.push(c.unwrap_or_else(|| rn.init(lb, &None, d, b)));
        }
        ys.push(yd);
        hfin.push(hd);
        cfin.push(cd);
    }
    rn.store_outputs(lb, ni, &ys, &[(1, hfin), (2, cfin)]);
    Ok(())
}

pub(super) fn gru(lb: &mut Lb, ni: usize) -> Result<(), CompileError> {
    let rn = rnn_common(lb, ni, 3)?;
    let lbr = match &lb.g.nodes[ni].op {
        Op::Gru(a) => a.linear_before_reset,
        // lower_node calls gru only for Gru
        _ => unreachable!(),
    };
    let (hs, is) = (rn.hidden, rn.input_size);
    let name = lb.g.nodes[ni].name.clone();
    let mut ys = Vec::new();
    let mut hfin = Vec::new();
    for d in 0..rn.dirs {
        let w = rn.w[d * 3 * hs * is..(d + 1) * 3 * hs * is].to_vec();
        let r = rn.r[d * 3 * hs * hs..(d + 1) * 3 * hs * hs].to_vec();
        let bb = |k: usize| rn.b.as_ref().map(|b| b[d * 6 * hs + k]).unwrap_or(0.0);
        // z and r gates: one matrix over [x | h].
        let zr_bias: Vec<f32> = (0..2 * hs).map(|k| bb(k) + bb(3 * hs + k)).collect();
        let wzr = |row: usize, c: usize| {
            if c < is {
                w[row * is + c]
            } else {
                r[row * hs + c - is]
            }
        };
        let zr_blocks = rn.gate_blocks(lb, 0..2);
        let mut zr_cols = lb.chunks(is);
        zr_cols.extend(lb.chunks(hs).into_iter().map(|(s, n)| (is + s, n)));
        let zr_m = lb.add_matrix(
            format!("{name}/dir{d}/zr"),
            2 * hs,
            is + hs,
            &zr_blocks,
            &zr_cols,
            &wzr,
        );
        let hx_bias: Vec<f32> = (0..hs).map(|k| bb(2 * hs + k)).collect();
        let hh_bias: Vec<f32> = (0..hs).map(|k| bb(5 * hs + k)).collect();
        let whx = |row: usize, c: usize| w[(2 * hs + row) * is + c];
        let whh = |row: usize, c: usize| r[(2 * hs + row) * hs + c];
        let hb = lb.chunks(hs);
        let hx_m = lb.add_matrix(
            format!("{name}/dir{d}/hx"),
            hs,
            is,
            &hb,
            &lb.chunks(is),
            &whx,
        );
        let hh_m = lb.add_matrix(
            format!("{name}/dir{d}/hh"),
            hs,
            hs,
            &hb,
            &lb.chunks(hs),
            &whh,
        );
        let reverse = d == 1 || rn.reverse_only;
        let mut yd = vec![vec![Vec::new(); rn.batch]; rn.seq];
        let mut hd = Vec::new();
        let flat = |vals: &[VId], blocks: &[(usize, usize)]| -> Locs {
            let mut v = Vec::new();
            for (k, &(_, n)) in blocks.iter().enumerate() {
                v.extend((0..n).map(|e| (vals[k], e as u32)));
            }
            v
        };
        for b in 0..rn.batch {
            let mut h = rn.init(lb, &rn.h0, d, b);
            for t in time_order(rn.seq, reverse) {
                let xv: Locs = (0..is).map(|i| rn.x_loc(t, b, i)).collect();
                let mut xh = xv.clone();
                xh.extend_from_slice(&h);
                let cl = zr_cols.clone();
                let zr = lb.matvec(
                    &zr_m,
                    &zr_blocks,
                    &mut |_, k| {
                        let (c0, cn) = cl[k];
                        runs(xh[c0..c0 + cn].iter().copied())
                    },
                    Some(&zr_bias),
                );
                let zr = flat(&zr, &zr_blocks);
                let z = ew1(lb, AluOp::Sig, &zr[..hs]);
                let rg = ew1(lb, AluOp::Sig, &zr[hs..]);
                let xc = lb.chunks(is);
                let hxv = lb.matvec(
                    &hx_m,
                    &hb,
                    &mut |_, k| {
                        let (c0, cn) = xc[k];
                        runs(xv[c0..c0 + cn].iter().copied())
                    },
                    Some(&hx_bias),
                );
                let hx = flat(&hxv, &hb);
                let hcn = lb.chunks(hs);
                let pre = if lbr {
                    let hin = h.clone();
                    let hhv = lb.matvec(
                        &hh_m,
                        &hb,
                        &mut |_, k| {
                            let (c0, cn) = hcn[k];
                            runs(hin[c0..c0 + cn].iter().copied())
                        },
                        Some(&hh_bias),
                    );
                    let hh = flat(&hhv, &hb);
                    let rh = ew(lb, AluOp::Mul, &rg, &hh);
                    ew(lb, AluOp::Add, &hx, &rh)
                } else {
                    let rh = ew(lb, AluOp::Mul, &rg, &h);
                    let hhv = lb.matvec(
                        &hh_m,
                        &hb,
                        &mut |_, k| {
                            let (c0, cn) = hcn[k];
                            runs(rh[c0..c0 + cn].iter().copied())
                        },
                        Some(&hh_bias),
                    );
                    let hh = flat(&hhv, &hb);
                    ew(lb, AluOp::Add, &hx, &hh)
                };
                let n = ew1(lb, AluOp::Tanh, &pre);
                // h' = n + z ⊙ (h − n)
                let dlt = ew(lb, AluOp::Sub, &h, &n);
                let zd = ew(lb, AluOp::Mul, &z, &dlt);
                h = ew(lb, AluOp::Add, &n, &zd);
                yd[t][b] = h.clone();
            }
            hd.push(h);
        }
        ys.push(yd);
        hfin.push(hd);
    }
    rn.store_outputs(lb, ni, &ys, &[(1, hfin)]);
    let _ = bcast_index;
    Ok(())
}
