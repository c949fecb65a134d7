//! Scalar baseline: the same operators as muRISCV-NN-style scalar kernels on the
//! cv32e40x host (quinn §5.9, Table 3). Operands are staged into the on-chip SRAM (the
//! VRFs used as plain memory: vpus x 32 KiB) by the same DMA through the same cache, and
//! the host computes with blocked loops; the tiling uses whatever capacity the VPU count
//! provides, so a larger system gives the host more reuse, as in the paper. Values are the
//! reference integer results (the host computes exactly the operator).

use crate::arch::Arch;
use crate::error::Result;
use crate::machine::{Elem, Machine, Stats, Xfer};
use crate::problem::{QConv, QMatMul, ref_conv, ref_matmul};
use crate::run::ConvKind;

fn stage(
    m: &mut Machine,
    addr: u64,
    elem: Elem,
    rows: usize,
    cols: usize,
    row_stride: usize,
    out: bool,
) -> Result<()> {
    let x = Xfer {
        vpu: 0,
        addr,
        elem,
        rows,
        cols,
        col_stride: elem.size(),
        row_stride,
        vrf_off: 0,
        vrf_row_stride: 0,
    };
    m.dma_stage(&x, out)
}

fn capacity(a: &Arch) -> usize {
    a.vpus * a.vpu.vrf_bytes
}

/// Scalar QLinearMatMul: B column blocks stay resident while A streams by row blocks.
pub fn scalar_matmul(arch: &Arch, p: &QMatMul) -> Result<(Vec<i32>, Stats)> {
    let mut m = Machine::new(arch)?;
    let a = m.put(p.a_elem, &p.a);
    let b = m.put(p.b_elem, &p.b);
    let y = m.alloc(p.m * p.n);
    let s0 = m.counters();
    let cap = capacity(arch);
    let h = arch.host.clone();
    if p.m * p.n * 4 <= cap / 4 {
        // All int32 accumulators fit: stream B by contiguous row blocks (each weight read
        // once, unit stride) with the matching A columns.
        let kb = (cap / 2 / p.n).clamp(1, p.k);
        m.host((h.zp_cycles * (p.k * p.n) as f64) as u64);
        for k0 in (0..p.k).step_by(kb) {
            let nk = kb.min(p.k - k0);
            stage(
                &mut m,
                b + (k0 * p.n) as u64,
                p.b_elem,
                1,
                nk * p.n,
                0,
                false,
            )?;
            stage(&mut m, a + k0 as u64, p.a_elem, p.m, nk, p.k, false)?;
            m.host(((p.m * nk * p.n) as f64 * h.mac_cycles) as u64);
            m.host_loop((p.m * nk * p.n).div_ceil(4) as u64);
        }
        m.host(((p.m * p.n) as f64 * h.requant_cycles) as u64);
        stage(&mut m, y, p.y_elem, 1, p.m * p.n, 0, true)?;
        m.finish();
        return Ok((ref_matmul(p), m.checked_stats_since(&s0)?));
    }
    // Half the SRAM for the B block, a quarter for A rows, the rest for outputs.
    let nb = (cap / 2 / p.k).clamp(1, p.n);
    for j0 in (0..p.n).step_by(nb) {
        let nbj = nb.min(p.n - j0);
        stage(&mut m, b + j0 as u64, p.b_elem, p.k, nbj, p.n, false)?;
        // Per output column: the A-offset term sum_k(B) * a_zp and bias, precomputed.
        m.host((h.zp_cycles * (p.k * nbj) as f64) as u64);
        let mb = (cap / 4 / p.k).clamp(1, p.m).min((cap / 4 / nbj).max(1));
        for i0 in (0..p.m).step_by(mb) {
            let mbi = mb.min(p.m - i0);
            stage(
                &mut m,
                a + (i0 * p.k) as u64,
                p.a_elem,
                mbi,
                p.k,
                p.k,
                false,
            )?;
            let macs = (mbi * p.k * nbj) as f64;
            m.host((macs * h.mac_cycles + (mbi * nbj) as f64 * h.requant_cycles) as u64);
            m.host_loop((mbi * nbj).div_ceil(4) as u64);
            stage(
                &mut m,
                y + (i0 * p.n + j0) as u64,
                p.y_elem,
                mbi,
                nbj,
                p.n,
                true,
            )?;
        }
    }
    m.finish();
    Ok((ref_matmul(p), m.checked_stats_since(&s0)?))
}

/// Scalar convolution (2-D / 1-D in CHW, depthwise in HWC) with output-row tiling:
/// a block of filters stays resident while input row bands stream.
pub fn scalar_conv(arch: &Arch, p: &QConv, kind: ConvKind) -> Result<(Vec<i32>, Stats)> {
    let mut m = Machine::new(arch)?;
    let x = m.put(p.x_elem, &p.x);
    let w = m.put(p.w_elem, &p.w_data);
    let (ho, wo) = p.out_hw();
    let y = m.alloc(p.c_out * ho * wo);
    let s0 = m.counters();
    let cap = capacity(arch);
    let h = arch.host.clone();
    let cpg = p.c_in / p.group;
    let kk = p.kh * p.kw;
    let w_per_co = cpg * kk;
    let mac_cycles = if kind == ConvKind::Depthwise {
        h.dw_mac_cycles
    } else {
        h.mac_cycles
    };
    // Filter block: up to half the SRAM.
    let cob = (cap / 2 / w_per_co).clamp(1, p.c_out);
    let span_h = (p.kh - 1) * p.dil.0 + 1;
    for co0 in (0..p.c_out).step_by(cob) {
        let nco = cob.min(p.c_out - co0);
        stage(
            &mut m,
            w + (co0 * w_per_co) as u64,
            p.w_elem,
            1,
            nco * w_per_co,
            0,
            false,
        )?;
        // Output rows per band: input band (all channels of the group) in a quarter.
        let cin_band = if kind == ConvKind::Depthwise {
            nco
        } else {
            p.c_in
        };
        let row_bytes = cin_band * p.w;
        let rb =
            ((cap / 4 / row_bytes.max(1)).saturating_sub(span_h) / p.stride.0 + 1).clamp(1, ho);
        for r0 in (0..ho).step_by(rb) {
            let nr = rb.min(ho - r0);
            let ih0 = (r0 * p.stride.0).saturating_sub(p.pads[0]);
            let ih1 = ((r0 + nr - 1) * p.stride.0 + span_h)
                .saturating_sub(p.pads[0])
                .min(p.h);
            if ih1 > ih0 {
                let c0 = if kind == ConvKind::Depthwise { co0 } else { 0 };
                for c in c0..c0 + cin_band {
                    stage(
                        &mut m,
                        x + ((c * p.h + ih0) * p.w) as u64,
                        p.x_elem,
                        1,
                        (ih1 - ih0) * p.w,
                        0,
                        false,
                    )?;
                }
            }
            let outs = nco * nr * wo;
            m.host((outs as f64 * (w_per_co as f64 * mac_cycles + h.requant_cycles)) as u64);
            m.host_loop(outs as u64);
            stage(
                &mut m,
                y + ((co0 * ho + r0) * wo) as u64,
                p.y_elem,
                nco,
                nr * wo,
                ho * wo,
                true,
            )?;
        }
    }
    m.finish();
    Ok((ref_conv(p), m.checked_stats_since(&s0)?))
}
