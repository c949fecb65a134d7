//! aarch64 NEON integer micro-kernel (u8 x s8 -> i32, exact): 4 rows x 4 columns.
//! B is zero-extended and A sign-extended to i16, multiplied and accumulated into
//! int32 lanes with `smlal` (one lane per k mod 4, summed across lanes at the end), all
//! with wrap-around.

use super::qgemm::{ColSource, Sink};
use super::qgemm_kernels::{MicroKernel, Prepared, TILE_LD, Task, by_shape, task_body};
use std::arch::aarch64::*;

/// NEON kernel family.
pub(crate) struct Neon;

impl MicroKernel for Neon {
    const MR: usize = 4;
    const VEC: usize = 4;
    const NV: usize = 1;

    unsafe fn tile(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
        // SAFETY: forwarded trait contract.
        unsafe { tile_neon(mr, nv, k4, a, b, out) }
    }
}

#[target_feature(enable = "neon")]
unsafe fn tile_neon(mr: usize, nv: usize, k4: usize, a: *const u8, b: *const u8, out: *mut i32) {
    // SAFETY: forwarded contract.
    unsafe { by_shape!(k_neon, mr, nv, [1, 2, 3, 4], [1], (k4, a, b, out)) }
}

#[target_feature(enable = "neon")]
#[inline]
unsafe fn k_neon<const MR: usize, const NV: usize>(
    k4: usize,
    a: *const u8,
    b: *const u8,
    out: *mut i32,
) {
    const BMR: usize = Neon::MR;
    // acc[r][c]: four partial sums (k mod 4) of row r, column c.
    let mut acc = [[vdupq_n_s32(0); 4]; MR];
    // SAFETY: a holds k4 groups of BMR x 4 bytes, b k4 groups of 16 bytes (NV = 1), out
    // a Tile (the MicroKernel contract).
    unsafe {
        for q in 0..k4 {
            let x = vld1q_u8(b.add(q * 16));
            // Columns 0-1 and 2-3, each as [k0 k1 k2 k3] i16.
            let x01 = vreinterpretq_s16_u16(vmovl_u8(vget_low_u8(x)));
            let x23 = vreinterpretq_s16_u16(vmovl_high_u8(x));
            let pa = a.add(q * BMR * 4);
            for (r, acc_r) in acc.iter_mut().enumerate() {
                let w4 = (pa.add(r * 4) as *const u32).read_unaligned();
                // [w0 w1 w2 w3 w0 w1 w2 w3] as i16
                let w8 = vmovl_s8(vreinterpret_s8_u32(vdup_n_u32(w4)));
                let w = vget_low_s16(w8);
                acc_r[0] = vmlal_s16(acc_r[0], vget_low_s16(x01), w);
                acc_r[1] = vmlal_high_s16(acc_r[1], x01, w8);
                acc_r[2] = vmlal_s16(acc_r[2], vget_low_s16(x23), w);
                acc_r[3] = vmlal_high_s16(acc_r[3], x23, w8);
            }
        }
        for (r, acc_r) in acc.iter().enumerate() {
            for (c, v) in acc_r.iter().enumerate() {
                *out.add(r * TILE_LD + c) = vaddvq_s32(*v);
            }
        }
    }
}

/// One GEMM task with NEON.
///
/// # Safety
/// The host supports NEON.
#[target_feature(enable = "neon")]
pub(crate) unsafe fn task_neon<C: ColSource, S: Sink>(
    p: &Prepared<C>,
    s: &S,
    t: Task,
    buf: &mut Vec<u8>,
) {
    task_body::<Neon, C, S>(p, s, t, buf)
}
