//! MatMul of two dynamic operands (attention's Q·Kᵀ and P·V).
//!
//! Crossbars hold constant weights, and writing them at run time costs ≈ 11 µs per
//! crossbar (ref §3.5: serial write 10,968.75 cycles) and wears the cells (RRAM
//! endurance is finite, and a decoder would rewrite its crossbars every token). So
//! products run on the VFU instead: for output (m, n) the VFU multiplies row m of A by
//! column n of B elementwise, and a constant segment-sum matrix on an MVMU adds each
//! K-element product (⌊S/K⌋ outputs per MVM). B's columns are first gathered into
//! contiguous vectors once per batch when they are not contiguous already (P·V reads V
//! by column).

use super::lower::{LT, Lb, bcast_index, input, runs, unsupported};
use super::lower_nn::{Dense, Locs};
use super::{CompileError, Kind};
use crate::isa::AluOp;
use pimkit_ir::operand::gemm;

/// Column `n` of every (batch) matrix of B as contiguous vectors: gathered in chunks of
/// up to S elements (whole columns when K ≤ S).
fn columns(lb: &mut Lb, b: &[(u32, u32)], k: usize, n: usize) -> Vec<Locs> {
    let cols: Vec<Locs> = (0..n)
        .map(|j| (0..k).map(|i| b[i * n + j]).collect())
        .collect();
    // Already contiguous runs (B = Kᵀ read from K's rows): use as they are.
    if cols
        .iter()
        .all(|c| runs(c.iter().copied()).len() <= k.div_ceil(lb.seg))
    {
        return cols;
    }
    let per = (lb.seg / k).max(1);
    let mut out = Vec::with_capacity(n);
    for group in cols.chunks(per) {
        let flat: Locs = group.iter().flatten().copied().collect();
        let mut locs = Vec::with_capacity(flat.len());
        for chunk in flat.chunks(lb.seg) {
            let ps = runs(chunk.iter().copied());
            let loc = lb.loc_of(&[&ps]);
            let len = chunk.len() as u32;
            let v = lb.push(Kind::Gather(ps), len, loc);
            locs.extend((0..len).map(|i| (v, i)));
        }
        for c in locs.chunks(k) {
            out.push(c.to_vec());
        }
    }
    out
}

pub(super) fn dynamic_matmul(lb: &mut Lb, ni: usize) -> Result<LT, CompileError> {
    let g = lb.g;
    let out_shape = g.ty(g.nodes[ni].outputs[0]).shape.clone();
    let a = lb.dyn_val(input(lb, ni, gemm::A)?, "A")?;
    let b = lb.dyn_val(input(lb, ni, gemm::B)?, "B")?;
    // numpy matmul: a 1-D operand is a row (A) or a column (B).
    let ash = if a.shape.len() == 1 {
        vec![1, a.shape[0]]
    } else {
        a.shape.clone()
    };
    let bsh = if b.shape.len() == 1 {
        vec![b.shape[0], 1]
    } else {
        b.shape.clone()
    };
    let (m, k) = (ash[ash.len() - 2], ash[ash.len() - 1]);
    let (k2, n) = (bsh[bsh.len() - 2], bsh[bsh.len() - 1]);
    if k != k2 {
        return Err(unsupported(g, ni as u32, "inner dimensions differ"));
    }
    let abatch = &ash[..ash.len() - 2];
    let bbatch = &bsh[..bsh.len() - 2];
    let rank = abatch.len().max(bbatch.len());
    let mut batch = vec![1; rank];
    for d in 0..rank {
        let x = if d + abatch.len() >= rank {
            abatch[d + abatch.len() - rank]
        } else {
            1
        };
        let y = if d + bbatch.len() >= rank {
            bbatch[d + bbatch.len() - rank]
        } else {
            1
        };
        batch[d] = x.max(y);
    }
    let nb: usize = batch.iter().product();
    let name = g.nodes[ni].name.clone();
    // Products, K elements each, in output order (batch, m, n).
    let mut products: Vec<Locs> = Vec::with_capacity(nb * m * n);
    let per = (lb.seg / k).max(1);
    for bi in 0..nb {
        let ab = bcast_index(bi, &batch, abatch);
        let bb = bcast_index(bi, &batch, bbatch);
        let amat = &a.map[ab * m * k..(ab + 1) * m * k];
        let bmat = &b.map[bb * k * n..(bb + 1) * k * n];
        let bcols = columns(lb, bmat, k, n);
        for mi in 0..m {
            let arow: Locs = amat[mi * k..(mi + 1) * k].to_vec();
            // ⌊S/K⌋ outputs per VFU multiply when K ≤ S; K > S: S-element pieces.
            for group in (0..n).collect::<Vec<_>>().chunks(per) {
                let mut av: Locs = Vec::new();
                let mut bv: Locs = Vec::new();
                for &nj in group {
                    av.extend_from_slice(&arow);
                    bv.extend_from_slice(&bcols[nj]);
                }
                let mut prod: Locs = Vec::with_capacity(av.len());
                for (ca, cb) in av.chunks(lb.seg).zip(bv.chunks(lb.seg)) {
                    let v = lb.alu(
                        AluOp::Mul,
                        runs(ca.iter().copied()),
                        Some(runs(cb.iter().copied())),
                    );
                    prod.extend((0..ca.len()).map(|i| (v, i as u32)));
                }
                for c in prod.chunks(k) {
                    products.push(c.to_vec());
                }
            }
        }
    }
    // Segment sums on the crossbars.
    let rows = per.min(products.len().max(1));
    let cols = rows * k;
    let w = move |r: usize, c: usize| if c / k == r { 1.0 } else { 0.0 };
    let d = Dense {
        name: format!("{name}/sum"),
        rows,
        cols,
        row_blocks: lb.chunks(rows),
        col_tiles: lb.chunks(cols),
        w: &w,
        bias: None,
    };
    let nvec = products.len().div_ceil(rows);
    let copies = lb.replicas(&name).clamp(1, nvec.max(1));
    let mvmus = d.place(lb, copies, 0);
    let zero = lb.const_vec(&vec![0.0; lb.seg]);
    let outs = d.apply(lb, &mvmus, nvec, &|i| i % copies, &mut |_, i| {
        let mut v: Locs = Vec::with_capacity(cols);
        for p in i * rows..(i + 1) * rows {
            match products.get(p) {
                Some(x) => v.extend_from_slice(x),
                None => v.extend((0..k).map(|j| (zero, j as u32))),
            }
        }
        v
    });
    let mut map = Vec::with_capacity(products.len());
    for (i, o) in outs.into_iter().enumerate() {
        for r in 0..rows {
            if i * rows + r < products.len() {
                map.push(o[r]);
            }
        }
    }
    Ok(LT {
        shape: out_shape,
        map,
    })
}
