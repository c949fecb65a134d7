//! Standalone kernel runs: place a [`problem`](crate::problem) in simulated memory, run
//! one kernel on a fresh (cold-cache) machine, read the results back.

use crate::arch::Arch;
use crate::error::Result;
use crate::kernels::{Dataflow, conv1d, conv2d, depthwise, matmul};
// Re-exported: the conversions lived here before `layout.rs`.
pub use crate::layout::{chw_to_hwc, hwc_to_chw};
use crate::machine::{Elem, Machine, Stats};
use crate::problem::{QConv, QMatMul, out_quant};

/// Which matmul kernel to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmKernel {
    /// The general matrix-matrix kernel with a dataflow.
    Mm(Dataflow),
    /// The dedicated double-buffered vector-matrix kernel (M = 1).
    Vm,
}

/// Place the matmul operands in `m`'s memory and build the job.
pub fn place_matmul(m: &mut Machine, p: &QMatMul) -> matmul::MatMulJob {
    let a = m.put(p.a_elem, &p.a);
    let b = m.put(p.b_elem, &p.b);
    let bias = p.bias.as_ref().map(|b| m.put(Elem::I32, b));
    let y = m.alloc(p.m * p.n * p.y_elem.size());
    matmul::MatMulJob {
        m: p.m,
        k: p.k,
        n: p.n,
        a,
        a_elem: p.a_elem,
        a_zp: p.a_zp,
        b,
        b_elem: p.b_elem,
        b_zp: p.b_zp.clone(),
        bias,
        y,
        out: out_quant(p.y_elem, p.y_zp, &p.scales),
    }
}

pub fn run_matmul(arch: &Arch, p: &QMatMul, k: MmKernel) -> Result<(Vec<i32>, Stats)> {
    let mut m = Machine::new(arch)?;
    let job = place_matmul(&mut m, p);
    let s0 = m.counters();
    match k {
        MmKernel::Mm(df) => matmul::matmul(&mut m, &job, df)?,
        MmKernel::Vm => matmul::vecmat(&mut m, &job)?,
    }
    let st = m.checked_stats_since(&s0)?;
    Ok((m.get(job.y, p.y_elem, p.m * p.n)?, st))
}

/// Which convolution kernel family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConvKind {
    /// 2-D, CHW, group 1.
    Conv2d,
    /// Causal 1-D (H = 1, left padding only), CHW.
    Conv1d,
    /// Depthwise, HWC.
    Depthwise,
}

/// Run a convolution problem (given in NCHW) with the kernel family and dataflow.
/// Depthwise stages input and output in HWC (the layout the kernel needs) and converts
/// the result back to CHW for comparison.
pub fn run_conv(arch: &Arch, p: &QConv, kind: ConvKind, df: Dataflow) -> Result<(Vec<i32>, Stats)> {
    let mut m = Machine::new(arch)?;
    let (ho, wo) = p.out_hw();
    let s0;
    let y;
    match kind {
        ConvKind::Conv2d | ConvKind::Conv1d => {
            if p.group != 1 {
                return Err(crate::error::kerr(
                    "QLinearConv",
                    "grouped convolution: use the depthwise kernel (group = C)",
                ));
            }
            let job = conv2d::place(&mut m, p);
            s0 = m.counters();
            if kind == ConvKind::Conv2d {
                conv2d::conv2d(&mut m, &job, df)?;
            } else {
                conv1d::conv1d(&mut m, &job, df)?;
            }
            y = m.get(job.y, p.y_elem, p.c_out * ho * wo)?;
        }
        ConvKind::Depthwise => {
            if p.group != p.c_in || p.c_in != p.c_out {
                return Err(crate::error::kerr(
                    "QLinearConv-depthwise",
                    "needs group = C_in = C_out",
                ));
            }
            let job = depthwise::place(&mut m, p);
            s0 = m.counters();
            depthwise::depthwise(&mut m, &job, df)?;
            let hwc = m.get(job.y, p.y_elem, p.c_out * ho * wo)?;
            y = hwc_to_chw(&hwc, p.c_out, ho, wo);
        }
    }
    let st = m.checked_stats_since(&s0)?;
    Ok((y, st))
}
