//! QLinearMatMul on the VPUs: matrix-matrix with the OS/IS/WS loop orders of quinn
//! §4.3.1 and the VRF partitions of Table 2, and the double-buffered vector-matrix kernel.
//!
//! Outer product: one scalar of the A tile (read by xvmv.x.s from V31) is broadcast
//! and multiplied with a B row register, accumulating into an int32 output row.
//! Multiple VPUs split the N axis (each holds `vlen` columns); the A scalar is shared.
//! The B zero point is corrected algebraically per tile: acc_j -= zb_j * sum_k(a_k - za)
//! (one instruction per output row and K-tile, the sum is accumulated by the host from the
//! scalars it reads anyway), so B rows need no per-element subtraction.

use super::{Dataflow, OutQuant, Spill, zp_at};
use crate::error::{Result, kerr};
use crate::machine::{Elem, Machine, OpsMemo, Xfer};

mod compute_batched;

/// Operands already placed in simulated memory. `b` is K x N row-major (weights are staged
/// offline in this layout). `bias` is i32[N]. `b_zp` has 1 or N entries.
#[derive(Clone, Debug)]
pub struct MatMulJob {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub a: u64,
    pub a_elem: Elem,
    pub a_zp: i32,
    pub b: u64,
    pub b_elem: Elem,
    pub b_zp: Vec<i32>,
    pub bias: Option<u64>,
    pub y: u64,
    pub out: OutQuant,
}

const A_REG: usize = 31;
const AUX_REG: usize = 30;

struct Plan {
    mt: usize,
    kt: usize,
    acc0: usize,
    v: usize,
    p: usize,
    spill: Option<u64>,
    zb_vec: Option<u64>,
}

impl Plan {
    fn n_tile(&self) -> usize {
        self.p * self.v
    }
    /// The partial sums of rows `r0..r0+nr`, columns `c0..c0+nc` on VPU `q`.
    fn spill_at(
        &self,
        j: &MatMulJob,
        q: usize,
        r0: usize,
        nr: usize,
        c0: usize,
        nc: usize,
    ) -> Spill {
        Spill {
            buf: self.spill,
            vpu: q,
            reg: self.acc0,
            at: r0 * j.n + c0,
            rows: nr,
            cols: nc,
            row_elems: j.n,
        }
    }
    /// Columns of VPU `q` inside N-tile starting at `n0`.
    fn cols(&self, j: &MatMulJob, n0: usize, q: usize) -> (usize, usize) {
        let c0 = n0 + q * self.v;
        if c0 >= j.n {
            (c0, 0)
        } else {
            (c0, self.v.min(j.n - c0))
        }
    }
}

/// Run QLinearMatMul (M x K) @ (K x N) with dataflow `df` (M = 1 with `Os` is the general
/// kernel constrained to one row; use [`vecmat`] for the dedicated VM kernel).
pub fn matmul(m: &mut Machine, j: &MatMulJob, df: Dataflow) -> Result<()> {
    check(j)?;
    let v = m.vlen;
    // quinn Table 2: OS: B V0-V14, out V15-V29; IS/WS: B V0-V21, out V22-V29; A in V31.
    let (kt0, mt0, acc0) = match df {
        Dataflow::Os => (15, 15, 15),
        Dataflow::Is | Dataflow::Ws => (22, 8, 22),
    };
    let mt = mt0.min(j.m).min(v);
    let kt = kt0.min(j.k).min((v / mt).max(1));
    let k_tiles = j.k.div_ceil(kt);
    let spill = if df != Dataflow::Os && k_tiles > 1 {
        Some(m.alloc(j.m * j.n * 4))
    } else {
        None
    };
    let zb_vec = if j.b_zp.len() > 1 {
        Some(m.put(Elem::I32, &j.b_zp))
    } else {
        None
    };
    let pl = Plan {
        mt,
        kt,
        acc0,
        v,
        p: m.vpus(),
        spill,
        zb_vec,
    };
    let m_tiles = j.m.div_ceil(mt);
    let n_tiles = j.n.div_ceil(pl.n_tile());
    let mut memo = OpsMemo::default();
    match df {
        Dataflow::Os => {
            for tm in 0..m_tiles {
                for tn in 0..n_tiles {
                    m.host_loop(1);
                    load_zb(m, j, &pl, tn)?;
                    init(m, j, &pl, tm, tn, 0)?;
                    for tk in 0..k_tiles {
                        m.host_loop(1);
                        load_a(m, j, &pl, tm, tk)?;
                        load_b(m, j, &pl, tk, tn)?;
                        compute(m, j, &pl, tm, tk, tn, &mut memo);
                    }
                    finalize(m, j, &pl, tm, tn, k_tiles - 1, k_tiles)?;
                }
            }
        }
        Dataflow::Is => {
            for tm in 0..m_tiles {
                for tk in 0..k_tiles {
                    m.host_loop(1);
                    load_a(m, j, &pl, tm, tk)?;
                    for tn in 0..n_tiles {
                        m.host_loop(1);
                        load_zb(m, j, &pl, tn)?;
                        load_b(m, j, &pl, tk, tn)?;
                        init(m, j, &pl, tm, tn, tk)?;
                        compute(m, j, &pl, tm, tk, tn, &mut memo);
                        finalize(m, j, &pl, tm, tn, tk, k_tiles)?;
                    }
                }
            }
        }
        Dataflow::Ws => {
            for tn in 0..n_tiles {
                load_zb(m, j, &pl, tn)?;
                for tk in 0..k_tiles {
                    m.host_loop(1);
                    load_b(m, j, &pl, tk, tn)?;
                    for tm in 0..m_tiles {
                        m.host_loop(1);
                        load_a(m, j, &pl, tm, tk)?;
                        init(m, j, &pl, tm, tn, tk)?;
                        compute(m, j, &pl, tm, tk, tn, &mut memo);
                        finalize(m, j, &pl, tm, tn, tk, k_tiles)?;
                    }
                }
            }
        }
    }
    m.finish();
    Ok(())
}

fn check(j: &MatMulJob) -> Result<()> {
    if j.m == 0 || j.k == 0 || j.n == 0 {
        return Err(kerr(
            "QLinearMatMul",
            format!("empty shape {}x{}x{}", j.m, j.k, j.n),
        ));
    }
    if j.b_zp.len() != 1 && j.b_zp.len() != j.n {
        return Err(kerr(
            "QLinearMatMul",
            format!(
                "b_zero_point has {} entries, expected 1 or N={}",
                j.b_zp.len(),
                j.n
            ),
        ));
    }
    if j.out.rq.len() != 1 && j.out.rq.len() != j.n {
        return Err(kerr(
            "QLinearMatMul",
            format!("{} output scales, expected 1 or N={}", j.out.rq.len(), j.n),
        ));
    }
    Ok(())
}

fn rows_of(total: usize, t: usize, tile: usize) -> (usize, usize) {
    let r0 = t * tile;
    (r0, tile.min(total - r0))
}

fn load_zb(m: &mut Machine, j: &MatMulJob, pl: &Plan, tn: usize) -> Result<()> {
    if let Some(zb) = pl.zb_vec {
        for q in 0..pl.p {
            let (c0, nc) = pl.cols(j, tn * pl.n_tile(), q);
            if nc > 0 {
                m.dma_in(&Xfer::row(
                    q,
                    AUX_REG,
                    0,
                    pl.v,
                    zb + 4 * c0 as u64,
                    Elem::I32,
                    nc,
                ))?;
            }
        }
    }
    Ok(())
}

fn load_a(m: &mut Machine, j: &MatMulJob, pl: &Plan, tm: usize, tk: usize) -> Result<()> {
    let (r0, nr) = rows_of(j.m, tm, pl.mt);
    let (k0, nk) = rows_of(j.k, tk, pl.kt);
    let es = j.a_elem.size();
    m.dma_in(&Xfer {
        vpu: 0,
        addr: j.a + ((r0 * j.k + k0) * es) as u64,
        elem: j.a_elem,
        rows: nr,
        cols: nk,
        col_stride: es,
        row_stride: j.k * es,
        vrf_off: A_REG * pl.v,
        vrf_row_stride: nk,
    })?;
    if j.a_zp != 0 {
        m.vadd_vx(0, A_REG, A_REG, -j.a_zp, nr * nk);
    }
    Ok(())
}

fn load_b(m: &mut Machine, j: &MatMulJob, pl: &Plan, tk: usize, tn: usize) -> Result<()> {
    let (k0, nk) = rows_of(j.k, tk, pl.kt);
    let es = j.b_elem.size();
    for q in 0..pl.p {
        let (c0, nc) = pl.cols(j, tn * pl.n_tile(), q);
        if nc == 0 {
            continue;
        }
        m.dma_in(&Xfer::rows(
            q,
            0,
            pl.v,
            j.b + ((k0 * j.n + c0) * es) as u64,
            j.b_elem,
            nk,
            nc,
            j.n * es,
        ))?;
    }
    Ok(())
}

/// Accumulators start from the bias (first K-tile) or the spilled partial sums.
fn init(m: &mut Machine, j: &MatMulJob, pl: &Plan, tm: usize, tn: usize, tk: usize) -> Result<()> {
    let (r0, nr) = rows_of(j.m, tm, pl.mt);
    for q in 0..pl.p {
        let (c0, nc) = pl.cols(j, tn * pl.n_tile(), q);
        if nc == 0 {
            continue;
        }
        if tk > 0 {
            pl.spill_at(j, q, r0, nr, c0, nc).reload(m)?;
        } else if let Some(b) = j.bias {
            // Row stride 0 replicates the bias row into every accumulator register.
            m.dma_in(&Xfer::rows(
                q,
                pl.acc0,
                pl.v,
                b + 4 * c0 as u64,
                Elem::I32,
                nr,
                nc,
                0,
            ))?;
        } else {
            for i in 0..nr {
                m.vmv_vx(q, pl.acc0 + i, 0, nc);
            }
        }
    }
    Ok(())
}

fn compute(
    m: &mut Machine,
    j: &MatMulJob,
    pl: &Plan,
    tm: usize,
    tk: usize,
    tn: usize,
    memo: &mut OpsMemo,
) {
    let (_, nr) = rows_of(j.m, tm, pl.mt);
    let (_, nk) = rows_of(j.k, tk, pl.kt);
    let cols: Vec<usize> = (0..pl.p)
        .map(|q| pl.cols(j, tn * pl.n_tile(), q).1)
        .collect();
    if compute_batched::compute_batched(m, j, pl, (nr, nk), &cols, memo) {
        return;
    }
    for i in 0..nr {
        let mut sum_a: i32 = 0;
        for kk in 0..nk {
            let x = m.vmv_x_s(0, A_REG, i * nk + kk);
            sum_a = sum_a.wrapping_add(x);
            for (q, &nc) in cols.iter().enumerate() {
                if nc > 0 {
                    m.vmacc_vx(q, pl.acc0 + i, x, kk, nc);
                }
            }
        }
        // B zero-point correction for this K-tile.
        for (q, &nc) in cols.iter().enumerate() {
            if nc == 0 {
                continue;
            }
            if pl.zb_vec.is_some() {
                m.vmacc_vx(q, pl.acc0 + i, sum_a.wrapping_neg(), AUX_REG, nc);
            } else if j.b_zp[0] != 0 {
                m.vadd_vx(
                    q,
                    pl.acc0 + i,
                    pl.acc0 + i,
                    j.b_zp[0].wrapping_mul(sum_a).wrapping_neg(),
                    nc,
                );
            }
        }
    }
}

/// Last K-tile: requantize and store; otherwise spill the int32 partial sums.
fn finalize(
    m: &mut Machine,
    j: &MatMulJob,
    pl: &Plan,
    tm: usize,
    tn: usize,
    tk: usize,
    k_tiles: usize,
) -> Result<()> {
    let (r0, nr) = rows_of(j.m, tm, pl.mt);
    let last = tk + 1 == k_tiles;
    for q in 0..pl.p {
        let (c0, nc) = pl.cols(j, tn * pl.n_tile(), q);
        if nc == 0 {
            continue;
        }
        if last {
            let rq = |_| j.out.slice(c0, nc);
            j.out
                .store_rows(m, q, pl.acc0, nr, nc, rq, j.y, r0 * j.n + c0, j.n)?;
        } else {
            pl.spill_at(j, q, r0, nr, c0, nc).store(m)?;
        }
    }
    Ok(())
}

/// The dedicated vector-matrix kernel (M = 1, quinn §4.3.1 / Table 2 VM row): B tiles in
/// V0-V29, accumulator V30, A slice V31. K-tiles are double-buffered: across VPUs
/// (round-robin, each VPU a 30-row buffer) or, with one VPU, across the two halves of its
/// weight window (V0-V13 + A slice in V14, V15-V28 + A slice in V29). The next tile is
/// prefetched while the current one computes; partial accumulators are reduced on chip.
pub fn vecmat(m: &mut Machine, j: &MatMulJob) -> Result<()> {
    check(j)?;
    if j.m != 1 {
        return Err(kerr(
            "QLinearMatMul-VM",
            format!("vector-matrix kernel needs M = 1, got M = {}", j.m),
        ));
    }
    let v = m.vlen;
    let p = m.vpus();
    // Buffer slots: (vpu, first B register, A register, rows).
    // Paper style (quinn Table 2 VM row, §4.3.1 "while one VPU computes, the next one is
    // prefetched"): one VPU has a single 30-row window and no prefetch.
    let paper = m.arch.kernels.is_paper();
    let slots: Vec<(usize, usize, usize, usize)> = if p == 1 && paper {
        vec![(0, 0, A_REG, 30)]
    } else if p == 1 {
        vec![(0, 0, 14, 14), (0, 15, 29, 14)]
    } else {
        (0..p).map(|q| (q, 0, A_REG, 30)).collect()
    };
    // A K-tile's slice of A must also fit its one register (VLEN can be below 30).
    let kt = slots[0].3.min(j.k).min(v);
    let k_tiles = j.k.div_ceil(kt);
    let acc = 30;
    let zb_vec = if j.b_zp.len() > 1 {
        Some(m.put(Elem::I32, &j.b_zp))
    } else {
        None
    };
    for n0 in (0..j.n).step_by(v) {
        let nc = v.min(j.n - n0);
        let used = p.min(k_tiles);
        m.host_loop(1);
        for q in 0..used {
            if q == 0
                && let Some(b) = j.bias
            {
                m.dma_in(&Xfer::row(0, acc, 0, v, b + 4 * n0 as u64, Elem::I32, nc))?;
            } else {
                m.vmv_vx(q, acc, 0, nc);
            }
        }
        let load = |m: &mut Machine, t: usize| -> Result<()> {
            let (q, b0, ar, _) = slots[t % slots.len()];
            let k0 = t * kt;
            let nk = kt.min(j.k - k0);
            let ea = j.a_elem.size();
            m.dma_in(&Xfer::row(
                q,
                ar,
                0,
                v,
                j.a + (k0 * ea) as u64,
                j.a_elem,
                nk,
            ))?;
            let eb = j.b_elem.size();
            m.dma_in(&Xfer::rows(
                q,
                b0,
                v,
                j.b + ((k0 * j.n + n0) * eb) as u64,
                j.b_elem,
                nk,
                nc,
                j.n * eb,
            ))
        };
        // Prefetching needs a second buffer; with one, each tile loads after the last.
        let prefetch = slots.len() > 1;
        if prefetch {
            load(m, 0)?;
        }
        let mut sums = vec![0i32; p];
        for t in 0..k_tiles {
            m.host_loop(1);
            if !prefetch {
                load(m, t)?;
            } else if t + 1 < k_tiles {
                load(m, t + 1)?;
            }
            let (q, b0, ar, _) = slots[t % slots.len()];
            let nk = kt.min(j.k - t * kt);
            if j.a_zp != 0 {
                m.vadd_vx(q, ar, ar, -j.a_zp, nk);
            }
            for kk in 0..nk {
                let x = m.vmv_x_s(q, ar, kk);
                sums[q] = sums[q].wrapping_add(x);
                m.vmacc_vx(q, acc, x, b0 + kk, nc);
            }
        }
        // Reduce partial accumulators into VPU 0 (on-chip copies), then correct zb.
        for q in 1..used {
            m.vrf_copy(q, acc, 0, A_REG, nc);
            m.vacc_vv(0, acc, A_REG, 1, nc);
        }
        let s = sums.iter().fold(0i32, |a, &b| a.wrapping_add(b));
        if let Some(zb) = zb_vec {
            m.dma_in(&Xfer::row(
                0,
                A_REG,
                0,
                v,
                zb + 4 * n0 as u64,
                Elem::I32,
                nc,
            ))?;
            m.vmacc_vx(0, acc, s.wrapping_neg(), A_REG, nc);
        } else if zp_at(&j.b_zp, 0) != 0 {
            m.vadd_vx(0, acc, acc, j.b_zp[0].wrapping_mul(s).wrapping_neg(), nc);
        }
        j.out
            .store_rows(m, 0, acc, 1, nc, |_| j.out.slice(n0, nc), j.y, n0, 0)?;
    }
    m.finish();
    Ok(())
}
