//! The vector instructions the kernels use (an xvnmc / Zve32x subset, ref §1.3, quinn
//! §4.2), at SEW=32. Each call charges the host issue, schedules the instruction on the
//! VPU and computes the real values. Operands are register indices; every instruction
//! works on elements `0..vl` of its registers. On a timing-only copy
//! ([`Machine::timing_copy_into`]) only the timing is simulated.

use crate::machine::Machine;
use crate::quant::IntRequant;

impl Machine {
    fn reg(&self, r: usize) -> std::ops::Range<usize> {
        r * self.vlen..(r + 1) * self.vlen
    }

    /// (mutable vd, shared vs) views of two distinct registers of VPU `p`.
    #[inline(always)]
    fn two(&mut self, p: usize, vd: usize, vs: usize) -> (&mut [i32], &[i32]) {
        two_regs(&mut self.vrf[p], self.vlen, vd, vs)
    }

    /// vmv.v.x: vd[i] = x.
    pub fn vmv_vx(&mut self, p: usize, vd: usize, x: i32, vl: usize) {
        let c = self.vcost(self.arch.vpu.cycles.mv, vl);
        self.issue(p, &[], Some(vd), c);
        if !self.has_data() {
            return;
        }
        let r = self.reg(vd);
        self.vrf[p][r][..vl].fill(x);
    }

    /// vmv.v.v: vd[i] = vs[i].
    pub fn vmv_vv(&mut self, p: usize, vd: usize, vs: usize, vl: usize) {
        let c = self.vcost(self.arch.vpu.cycles.mv, vl);
        self.issue(p, &[vs], Some(vd), c);
        if vd != vs && self.has_data() {
            let (d, s) = self.two(p, vd, vs);
            d[..vl].copy_from_slice(&s[..vl]);
        }
    }

    /// vadd.vx: vd[i] = vs[i] + x (zero-point correction uses x = -zp).
    pub fn vadd_vx(&mut self, p: usize, vd: usize, vs: usize, x: i32, vl: usize) {
        let c = self.vcost(self.arch.vpu.cycles.add, vl);
        self.issue(p, &[vs], Some(vd), c);
        if !self.has_data() {
            return;
        }
        if vd == vs {
            let r = self.reg(vd);
            self.vrf[p][r][..vl]
                .iter_mut()
                .for_each(|e| *e = e.wrapping_add(x));
        } else {
            let (d, s) = self.two(p, vd, vs);
            for i in 0..vl {
                d[i] = s[i].wrapping_add(x);
            }
        }
    }

    /// vadd.vv / vsub.vv: vd[i] += sign * vs[i] (vd is also the first source).
    pub fn vacc_vv(&mut self, p: usize, vd: usize, vs: usize, sign: i32, vl: usize) {
        let c = self.vcost(self.arch.vpu.cycles.add, vl);
        self.issue(p, &[vd, vs], Some(vd), c);
        if !self.has_data() {
            return;
        }
        let (d, s) = self.two(p, vd, vs);
        for i in 0..vl {
            d[i] = d[i].wrapping_add(sign.wrapping_mul(s[i]));
        }
    }

    /// vmacc.vx: vd[i] += x * vs2[i] (int32, wrapping as ONNX allows).
    pub fn vmacc_vx(&mut self, p: usize, vd: usize, x: i32, vs2: usize, vl: usize) {
        let c = self.vcost(self.arch.vpu.cycles.mac, vl);
        self.issue(p, &[vd, vs2], Some(vd), c);
        if !self.has_data() {
            return;
        }
        let (d, s) = self.two(p, vd, vs2);
        macc(&mut d[..vl], &s[..vl], x);
    }

    /// vmacc.vx into several registers from one source, in order: for each `(vd, x)` of
    /// `to`, vd[i] += x * vs2[i]. The same instructions as one `vmacc_vx` per target
    /// (their cost computed once).
    pub fn vmacc_vx_each(&mut self, p: usize, vs2: usize, vl: usize, to: &[(usize, i32)]) {
        let c = self.vcost(self.arch.vpu.cycles.mac, vl);
        self.vmacc_vx_each_costing(p, vs2, vl, to, c);
    }

    /// [`Machine::vmacc_vx_each`] with its per-instruction cost `c` (the MAC class's
    /// [`Machine::vcost`] at `vl`) computed once by a caller that issues many groups.
    #[inline]
    pub(crate) fn vmacc_vx_each_costing(
        &mut self,
        p: usize,
        vs2: usize,
        vl: usize,
        to: &[(usize, i32)],
        c: u64,
    ) {
        debug_assert_eq!(c, self.vcost(self.arch.vpu.cycles.mac, vl));
        // The timing of the whole group first (no instruction's timing depends on a
        // value), then the values in the same order.
        self.issue_each(p, vs2, to.iter().map(|&(vd, _)| vd), c);
        if !self.has_data() {
            return;
        }
        for &(vd, x) in to {
            let (d, s) = self.two(p, vd, vs2);
            macc(&mut d[..vl], &s[..vl], x);
        }
    }

    /// vmacc.vv: vd[i] += vs1[i] * vs2[i].
    pub fn vmacc_vv(&mut self, p: usize, vd: usize, vs1: usize, vs2: usize, vl: usize) {
        let c = self.vcost(self.arch.vpu.cycles.mac, vl);
        self.issue(p, &[vd, vs1, vs2], Some(vd), c);
        if !self.has_data() {
            return;
        }
        let v = self.vlen;
        let f = &mut self.vrf[p];
        for i in 0..vl {
            let prod = f[vs1 * v + i].wrapping_mul(f[vs2 * v + i]);
            f[vd * v + i] = f[vd * v + i].wrapping_add(prod);
        }
    }

    /// vslidedown.vx: vd[i] = vs[i + off] (0 past the end of the register).
    pub fn vslidedown(&mut self, p: usize, vd: usize, vs: usize, off: usize, vl: usize) {
        let c = self.vcost(self.arch.vpu.cycles.slide, vl);
        self.vslidedown_costing(p, vd, vs, off, vl, c);
    }

    /// [`Machine::vslidedown`] with its cost `c` (the slide class's [`Machine::vcost`]
    /// at `vl`) computed once by the caller.
    #[inline]
    pub(crate) fn vslidedown_costing(
        &mut self,
        p: usize,
        vd: usize,
        vs: usize,
        off: usize,
        vl: usize,
        c: u64,
    ) {
        debug_assert_eq!(c, self.vcost(self.arch.vpu.cycles.slide, vl));
        self.issue(p, &[vs], Some(vd), c);
        if !self.has_data() {
            return;
        }
        let v = self.vlen;
        let (d, s) = self.two(p, vd, vs);
        slide_down(d, s, off, vl, v);
    }

    /// xvmv.x.s: the host reads element `idx` of `vs` (waits for the VPU).
    pub fn vmv_x_s(&mut self, p: usize, vs: usize, idx: usize) -> i32 {
        self.sync_read(p, vs);
        if !self.has_data() {
            return 0;
        }
        self.vrf[p][vs * self.vlen + idx]
    }

    /// Cycles of the integer-only requantization sequence on `vl` elements.
    pub fn requant_cycles(&self, vl: usize) -> u64 {
        let q = &self.arch.vpu.requant;
        let c = &self.arch.vpu.cycles;
        q.mul as u64 * self.vcost(c.mul, vl)
            + q.add as u64 * self.vcost(c.add, vl)
            + q.shift as u64 * self.vcost(c.shift, vl)
            + q.minmax as u64 * self.vcost(c.minmax, vl)
    }

    /// Requantize `vd[0..vl]` in place to [lo, hi] with zero point `zp`; `rq` holds one
    /// requantizer (per-tensor / per-register channel) or `vl` of them (per element).
    pub fn vrequant(
        &mut self,
        p: usize,
        vd: usize,
        rq: &[IntRequant],
        zp: i32,
        lo: i32,
        hi: i32,
        vl: usize,
    ) {
        let q = &self.arch.vpu.requant;
        let n = (q.mul + q.add + q.shift + q.minmax) as usize;
        // Issued as its instruction sequence: charge the host once per instruction.
        let total = self.requant_cycles(vl);
        for i in 0..n.saturating_sub(1) {
            let _ = i;
            self.host(self.arch.host.issue_cycles);
        }
        self.issue(p, &[vd], Some(vd), total);
        if !self.has_data() {
            return;
        }
        let r = self.reg(vd);
        let d = &mut self.vrf[p][r][..vl];
        if rq.len() == 1 {
            rq[0].apply_slice(d, zp, lo, hi);
        } else {
            IntRequant::apply_each(rq, d, zp, lo, hi);
        }
    }
}

/// (mutable vd, shared vs) views of two distinct registers of the register file `f`
/// (registers of `v` elements).
#[inline(always)]
pub(crate) fn two_regs(f: &mut [i32], v: usize, vd: usize, vs: usize) -> (&mut [i32], &[i32]) {
    if vd < vs {
        let (a, b) = f.split_at_mut(vs * v);
        (&mut a[vd * v..(vd + 1) * v], &b[..v])
    } else {
        let (a, b) = f.split_at_mut(vd * v);
        (&mut b[..v], &a[vs * v..(vs + 1) * v])
    }
}

/// vslidedown.vx's values: d[i] = s[i + off] inside a register of `v` elements, 0 past
/// its end, for `i < vl`.
#[inline(always)]
pub(crate) fn slide_down(d: &mut [i32], s: &[i32], off: usize, vl: usize, v: usize) {
    let n = vl.min(v.saturating_sub(off));
    d[..n].copy_from_slice(&s[off..off + n]);
    d[n..vl].fill(0);
}

/// `d[i] += x * s[i]` (int32, wrapping): the MAC data path, with AVX2's 8-lane 32-bit
/// multiply where the CPU has it (the baseline x86-64 build emulates it with two
/// 64-bit multiplies per pair of lanes). Wrapping integer arithmetic: the same values
/// on every path.
#[inline]
pub(crate) fn macc(d: &mut [i32], s: &[i32], x: i32) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked just above).
        unsafe { macc_avx2(d, s, x) };
        return;
    }
    macc_portable(d, s, x);
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn macc_avx2(d: &mut [i32], s: &[i32], x: i32) {
    macc_portable(d, s, x);
}

#[inline(always)]
pub(crate) fn macc_portable(d: &mut [i32], s: &[i32], x: i32) {
    for (d, &s) in d.iter_mut().zip(s) {
        *d = d.wrapping_add(x.wrapping_mul(s));
    }
}
