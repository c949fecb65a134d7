//! Convolutions: im2col matrices on MVMUs, one MVM (per column tile) per output pixel.
//!
//! Columns are ordered (ky, kx, c) so that a column tile holds whole kernel positions
//! and each tile's input is a few runs of contiguous channels. Grouped and depthwise
//! convolutions pack consecutive groups into one block-diagonal matrix.
//!
//! A layer whose output columns are split into stripes runs each stripe on its own copy
//! of the weights on its own tiles (weight replication): the copies work in parallel and
//! each keeps only its stripe of the input rows in shared memory. The number of stripes
//! is the larger of what the line buffer needs to fit a tile's memory and what the
//! replication plan (`--replicate`) asks for.

use super::CompileError;
use super::lower::{LT, Lb, const_f32, input, opt_input, strides, unsupported};
use super::lower_nn::Dense;
use pimkit_ir::{Op, operand};

pub(super) fn conv(lb: &mut Lb, ni: usize) -> Result<LT, CompileError> {
    let g = lb.g;
    let node = &g.nodes[ni];
    let Op::Conv(a) = &node.op else {
        unreachable!()
    };
    if a.kernel.len() != 2 {
        return Err(unsupported(
            g,
            ni as u32,
            "only 2-D convolutions are supported",
        ));
    }
    let x = lb.dyn_val(input(lb, ni, operand::conv::X)?, "the input")?;
    let mut so = false;
    let wv = input(lb, ni, operand::conv::W)?;
    let w = const_f32(g, wv, &mut so)
        .ok_or_else(|| unsupported(g, ni as u32, "weights must be constant"))?;
    let bias = match opt_input(lb, ni, operand::conv::B) {
        Some(b) => Some(
            const_f32(g, b, &mut so)
                .ok_or_else(|| unsupported(g, ni as u32, "bias must be constant"))?,
        ),
        None => None,
    };
    lb.shape_only |= so;
    let ws = g.ty(wv).shape.clone();
    let out_shape = g.ty(node.outputs[0]).shape.clone();
    let groups = a.group.max(1);
    let (co, ci_g) = (ws[0], ws[1]);
    let co_g = co / groups;
    // Grouped (depthwise) convolutions: `pack` consecutive groups share one weight matrix,
    // block-diagonal (zeros between groups), so a crossbar's rows fill with several
    // groups' outputs instead of one crossbar per group.
    let pack = (lb.seg / co_g.max(1)).clamp(1, groups);
    let mut map = vec![(0, 0); out_shape.iter().product()];
    let mut g0 = 0;
    while g0 < groups {
        let pg = pack.min(groups - g0);
        let name = if groups == 1 {
            node.name.clone()
        } else {
            format!("{}[groups {g0}..{}]", node.name, g0 + pg)
        };
        let blk = ConvBlock {
            c_off: g0 * ci_g,
            ci: pg * ci_g,
            ci_g,
            o_off: g0 * co_g,
            co: pg * co_g,
            co_g,
        };
        conv_block(
            lb,
            &x,
            a,
            &ws,
            &w,
            bias.as_deref(),
            &blk,
            name,
            &out_shape,
            &mut map,
        );
        g0 += pg;
    }
    Ok(LT {
        shape: out_shape,
        map,
    })
}

/// One weight matrix of a convolution: input channels `c_off..c_off+ci`, output channels
/// `o_off..o_off+co`, with groups of `ci_g` inputs / `co_g` outputs (block-diagonal).
pub(super) struct ConvBlock {
    pub c_off: usize,
    pub ci: usize,
    pub ci_g: usize,
    pub o_off: usize,
    pub co: usize,
    pub co_g: usize,
}

/// Words of shared memory a stripe layout must fit: the input rows the kernel window
/// spans plus the rows arriving (row-streaming keeps K + stride + 1 rows), over the
/// padded width and the block's channels.
fn line_buffer_words(kh: usize, sy: usize, w_in: usize, pad: usize, ci: usize) -> usize {
    (kh + sy + 1) * (w_in + 2 * pad) * ci
}

/// Stripes (weight copies) of a convolution block: enough that each copy's share of
/// the line buffer takes at most a third of a tile's shared memory, at least what the
/// replication plan asks for, at most the output width.
fn stripes(lb: &Lb, node: &str, need: usize, ow: usize) -> usize {
    let tile = lb.arch.tile.shared_mem_words;
    let mem = need.div_ceil((tile / 3).max(1));
    let plan = lb.replicas(node);
    mem.max(plan).clamp(1, ow.max(1))
}

#[allow(clippy::too_many_arguments)]
fn conv_block(
    lb: &mut Lb,
    x: &LT,
    a: &pimkit_ir::ConvAttrs,
    ws: &[usize],
    w: &[f32],
    bias: Option<&[f32]>,
    b: &ConvBlock,
    name: String,
    out_shape: &[usize],
    map: &mut [(u32, u32)],
) {
    let (nb, h, wd) = (x.shape[0], x.shape[2], x.shape[3]);
    let (kh, kw) = (ws[2], ws[3]);
    let (oh, ow) = (out_shape[2], out_shape[3]);
    let (ci, ci_g, co, co_g) = (b.ci, b.ci_g, b.co, b.co_g);
    let (c_off, o_off) = (b.c_off, b.o_off);
    let seg = lb.seg;
    let kpos = kh * kw;
    // Block-diagonal: columns span every group's channels; compact (several groups):
    // columns span one group's channels, one MVM per group and pixel.
    let compact = lb.depthwise == super::Depthwise::Compact && ci_g < ci;
    let cw = if compact { ci_g } else { ci };
    let per_vec = if compact { ci / ci_g } else { 1 };
    let cols = kpos * cw;
    let mut col_tiles = Vec::new();
    if cw <= seg {
        let per = seg / cw;
        let mut p = 0;
        while p < kpos {
            let n = per.min(kpos - p);
            col_tiles.push((p * cw, n * cw));
            p += n;
        }
    } else {
        for p in 0..kpos {
            for (c0, cn) in lb.chunks(cw) {
                col_tiles.push((p * cw + c0, cn));
            }
        }
    }
    let row_blocks = lb.chunks(co);
    let wf = move |r: usize, c: usize| {
        let (p, ch) = (c / cw, c % cw);
        if !compact && r / co_g != ch / ci_g {
            return 0.0;
        }
        let (ky, kx) = (p / kw, p % kw);
        w[(((o_off + r) * ci_g + ch % ci_g) * kh + ky) * kw + kx]
    };
    let bias = bias.map(|v| v[o_off..o_off + co].to_vec());
    let zeros = lb.const_vec(&vec![0.0; seg]);
    let xs = strides(&x.shape);
    let xmap = x.map.clone();
    let ct2 = col_tiles.clone();
    let (sy, sx) = (a.strides[0], a.strides[1]);
    let (py, px) = (a.pads[0] as isize, a.pads[1] as isize);
    let (dy, dx) = (a.dilations[0], a.dilations[1]);
    let npix = oh * ow;
    // A copy wider than a tile spreads its column tiles (kernel positions and channel
    // chunks) over several tiles, each holding only its columns' part of the rows.
    let per_tile = lb.arch.mvmus_per_tile();
    let need = line_buffer_words((kh - 1) * dy + 1, sy, wd, px as usize, ci)
        * per_tile.min(col_tiles.len())
        / col_tiles.len().max(1);
    let nrep = stripes(lb, &lb.g.nodes[lb.node as usize].name.clone(), need, ow);
    let d = Dense {
        name,
        rows: co,
        cols,
        row_blocks,
        col_tiles,
        w: &wf,
        bias: bias.as_deref(),
    };
    // Each copy keeps its stripe of the line buffer (plus the halo) in its tiles.
    let mvmus = d.place(lb, nrep, (need / nrep + need / ow.max(1) * kw) as u32);
    let outs = d.apply(
        lb,
        &mvmus,
        nb * npix * per_vec,
        // Stripe of output columns: copy r computes columns [r·ow/R, (r+1)·ow/R).
        &|i| (i / per_vec % npix % ow) * nrep / ow,
        &mut |_, i| {
            let (gi, i) = (i % per_vec, i / per_vec);
            let (n, pix) = (i / npix, i % npix);
            let (oy, ox) = (pix / ow, pix % ow);
            let mut v = Vec::with_capacity(cols);
            for c in 0..cols {
                let (p, ch) = (c / cw, gi * ci_g + c % cw);
                let (ky, kx) = (p / kw, p % kw);
                let iy = (oy * sy) as isize - py + (ky * dy) as isize;
                let ix = (ox * sx) as isize - px + (kx * dx) as isize;
                if iy < 0 || ix < 0 || iy >= h as isize || ix >= wd as isize {
                    // Offset within the column tile so that padding runs merge.
                    let t = ct2
                        .iter()
                        .position(|&(c0, cn)| c >= c0 && c < c0 + cn)
                        .unwrap_or(0);
                    v.push((zeros, (c - ct2[t].0) as u32));
                } else {
                    v.push(
                        xmap[n * xs[0] + (c_off + ch) * xs[1] + iy as usize * xs[2] + ix as usize],
                    );
                }
            }
            v
        },
    );
    let os = strides(out_shape);
    for o in &outs {
        for &(v, _) in o {
            lb.ops[v as usize].shm = true;
        }
    }
    for (i, o) in outs.into_iter().enumerate() {
        let (gi, i) = (i % per_vec, i / per_vec);
        let (n, pix) = (i / npix, i % npix);
        let (oy, ox) = (pix / ow, pix % ow);
        for (c, loc) in o.into_iter().enumerate() {
            // A compact MVM's other groups' rows are not outputs of this vector.
            if compact && c / co_g != gi {
                continue;
            }
            map[n * os[0] + (o_off + c) * os[1] + oy * os[2] + ox] = loc;
        }
    }
}
