//! One tile's MACs (`compute`) as one batch: per output row the host's reads of the A
//! slice (`xvmv.x.s`), the `vmacc.vx` of each B row and the zero-point correction,
//! scheduled on a [`crate::machine::Batch`] and remembered per relative start state
//! ([`OpsMemo`]: the tiles of a layer repeat them), then the values: each accumulator
//! plus its products, int32 wrapping, in any order (the same bits).

use super::{A_REG, AUX_REG, MatMulJob, Plan};
use crate::machine::{Machine, OpsMemo, ceil_u64};
use crate::vector::{macc, two_regs};

/// `compute` of tile (tm, tk, tn) with `nr` rows of `nk` K-elements and `cols[q]`
/// columns per VPU; `false` (nothing done) when a clock could saturate in it.
pub(super) fn compute_batched(
    m: &mut Machine,
    j: &MatMulJob,
    pl: &Plan,
    (nr, nk): (usize, usize),
    cols: &[usize],
    memo: &mut OpsMemo,
) -> bool {
    let read_c = ceil_u64(m.arch.vpu.cycles.mv_x_s);
    let step = m.arch.host.scalar_step_cycles;
    let mac_c: Vec<u64> = cols
        .iter()
        .map(|&nc| m.vcost(m.arch.vpu.cycles.mac, nc))
        .collect();
    let add_c: Vec<u64> = cols
        .iter()
        .map(|&nc| m.vcost(m.arch.vpu.cycles.add, nc))
        .collect();
    let zb = pl.zb_vec.is_some();
    let bzp = j.b_zp[0] != 0;
    let active = cols.iter().filter(|&&nc| nc > 0).count();
    let ops = (nr * (nk * (1 + active) + active)) as u64;
    let Some(cycles) = read_c
        .checked_add(step)
        .map(|c| mac_c.iter().chain(&add_c).fold(c, |a, &b| a.max(b)))
    else {
        return false;
    };
    let Ok((b, vrf)) = m.batch(ops, cycles, 0) else {
        return false;
    };
    if let Some(mut b) = b {
        let mut regs: Vec<usize> = (0..nk)
            .chain(pl.acc0..pl.acc0 + nr)
            .chain([A_REG, AUX_REG])
            .collect();
        regs.sort_unstable();
        regs.dedup();
        let mut name = vec![
            nr as u64,
            nk as u64,
            u64::from(zb),
            u64::from(bzp),
            read_c,
            step,
        ];
        name.extend(mac_c.iter().chain(&add_c));
        memo.run(&mut b, &name, &regs, ops, |b| {
            for i in 0..nr {
                let acc = pl.acc0 + i;
                for kk in 0..nk {
                    b.sync_read(0, A_REG, read_c, step);
                    for (q, &nc) in cols.iter().enumerate() {
                        if nc > 0 {
                            b.op(q, kk, acc, mac_c[q]);
                        }
                    }
                }
                for (q, &nc) in cols.iter().enumerate() {
                    if nc == 0 {
                        continue;
                    }
                    if zb {
                        b.op(q, AUX_REG, acc, mac_c[q]);
                    } else if bzp {
                        b.op(q, acc, acc, add_c[q]);
                    }
                }
            }
        });
        b.end();
    }
    if let Some(f) = vrf {
        let v = pl.v;
        for i in 0..nr {
            let at = A_REG * v + i * nk;
            let xs: Vec<i32> = f[0][at..at + nk].to_vec();
            let sum_a = xs.iter().fold(0i32, |s, &x| s.wrapping_add(x));
            let acc = pl.acc0 + i;
            for (fq, &nc) in f.iter_mut().zip(cols) {
                if nc == 0 {
                    continue;
                }
                for (kk, &x) in xs.iter().enumerate() {
                    let (d, s) = two_regs(fq, v, acc, kk);
                    macc(&mut d[..nc], &s[..nc], x);
                }
                if zb {
                    let (d, s) = two_regs(fq, v, acc, AUX_REG);
                    macc(&mut d[..nc], &s[..nc], sum_a.wrapping_neg());
                } else if bzp {
                    let x = j.b_zp[0].wrapping_mul(sum_a).wrapping_neg();
                    fq[acc * v..acc * v + nc]
                        .iter_mut()
                        .for_each(|e| *e = e.wrapping_add(x));
                }
            }
        }
    }
    true
}
