//! Pass 4: roll repeated instruction blocks into loops.
//!
//! Convolutions and pooling repeat the same per-pixel instruction block; only the
//! shared-memory addresses materialized by `set` into the address register change, by a
//! constant stride per iteration. Such a run of n ≥ 3 blocks becomes
//!
//! ```text
//!   set B_p, first address (per strided set)   set S_p, stride
//!   set CNT, 0   set N, n   set ONE, 1
//! top:
//!   body, with `set ADDR, imm` replaced by `copy ADDR, B_p`
//!   alu_int add B_p, B_p, S_p ...   alu_int add CNT, CNT, ONE
//!   beq CNT, N, exit
//!   jmp top
//! exit:
//! ```
//! The loop registers live in the reserved top of the data memory.

use super::codegen::RESERVED_REGS;
use super::emit::addr_reg;
use crate::arch::Arch;
use crate::isa::{CoreInstr, IntOp};
use crate::program::Program;

const MAX_BODY: usize = 96;
const MIN_REPEATS: usize = 3;

/// Roll loops in every core program; returns the number of loops rolled.
pub fn roll_program(p: &mut Program) -> usize {
    let arch = p.arch.clone();
    let mut total = 0;
    for t in p.tiles.iter_mut() {
        for c in t.cores.iter_mut() {
            let (code, n) = roll(&arch, c);
            *c = code;
            total += n;
        }
    }
    total
}

fn delta(ar: u32, a: &CoreInstr, b: &CoreInstr) -> Option<i64> {
    match (a, b) {
        (
            CoreInstr::Set {
                d1: d,
                imm: x,
                vec: 1,
            },
            CoreInstr::Set {
                d1: e,
                imm: y,
                vec: 1,
            },
        ) if *d == ar && *e == ar => Some(*y as i64 - *x as i64),
        _ if a == b => Some(0),
        _ => None,
    }
}

/// Deltas between block at `i` and block at `i + k` (length k), if they match.
fn match_block(ar: u32, c: &[CoreInstr], i: usize, k: usize) -> Option<Vec<i64>> {
    if i + 2 * k > c.len() {
        return None;
    }
    (0..k)
        .map(|j| delta(ar, &c[i + j], &c[i + k + j]))
        .collect()
}

fn roll(arch: &Arch, code: &[CoreInstr]) -> (Vec<CoreInstr>, usize) {
    let ar = addr_reg(arch);
    let top = arch.data_mem_base() + arch.core.data_mem_words as u32;
    let loop_base = top - RESERVED_REGS;
    let (cnt, nreg, one) = (loop_base, loop_base + 1, loop_base + 2);
    let max_strided = ((RESERVED_REGS - 4) / 2) as usize;
    let mut out = Vec::with_capacity(code.len());
    let mut rolled = 0;
    let mut i = 0;
    while i < code.len() {
        let mut best: Option<(usize, usize, Vec<i64>)> = None;
        for k in 1..=MAX_BODY.min((code.len() - i) / 2) {
            if delta(ar, &code[i], &code[i + k]).is_none() {
                continue;
            }
            let Some(d) = match_block(ar, code, i, k) else {
                continue;
            };
            let mut n = 2;
            while match_block(ar, code, i + (n - 1) * k, k).as_ref() == Some(&d) {
                n += 1;
            }
            let strided = d.iter().filter(|&&x| x != 0).count();
            let body_ok = code[i..i + k].iter().all(|x| {
                !matches!(
                    x,
                    CoreInstr::Hlt | CoreInstr::Beq { .. } | CoreInstr::Jmp { .. }
                )
            });
            if n >= MIN_REPEATS && strided <= max_strided && body_ok {
                best = Some((k, n, d));
                break;
            }
        }
        let Some((k, n, d)) = best else {
            out.push(code[i].clone());
            i += 1;
            continue;
        };
        let strided: Vec<usize> = (0..k).filter(|&j| d[j] != 0).collect();
        let breg = |s: usize| loop_base + 3 + 2 * s as u32;
        for (s, &j) in strided.iter().enumerate() {
            let CoreInstr::Set { imm, .. } = code[i + j] else {
                unreachable!()
            };
            out.push(CoreInstr::Set {
                d1: breg(s),
                imm,
                vec: 1,
            });
            out.push(CoreInstr::Set {
                d1: breg(s) + 1,
                imm: d[j] as i32,
                vec: 1,
            });
        }
        out.push(CoreInstr::Set {
            d1: cnt,
            imm: 0,
            vec: 1,
        });
        out.push(CoreInstr::Set {
            d1: nreg,
            imm: n as i32,
            vec: 1,
        });
        out.push(CoreInstr::Set {
            d1: one,
            imm: 1,
            vec: 1,
        });
        let top_pc = out.len() as u32;
        for j in 0..k {
            match strided.iter().position(|&x| x == j) {
                Some(s) => out.push(CoreInstr::Copy {
                    d1: ar,
                    r1: breg(s),
                    vec: 1,
                }),
                None => out.push(code[i + j].clone()),
            }
        }
        for s in 0..strided.len() {
            out.push(CoreInstr::AluInt {
                op: IntOp::Add,
                d1: breg(s),
                r1: breg(s),
                r2: breg(s) + 1,
            });
        }
        out.push(CoreInstr::AluInt {
            op: IntOp::Add,
            d1: cnt,
            r1: cnt,
            r2: one,
        });
        let exit = out.len() as u32 + 2;
        out.push(CoreInstr::Beq {
            r1: cnt,
            r2: nreg,
            target: exit,
        });
        out.push(CoreInstr::Jmp { target: top_pc });
        rolled += 1;
        i += n * k;
    }
    (out, rolled)
}
