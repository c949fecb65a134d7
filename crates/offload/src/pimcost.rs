//! Cycles per innermost iteration of a nest body on the PIM core.
//!
//! The paper's PIM cores are simulated by PIMProf on Sniper (torch-pim.txt §5.1) with
//! `pimprof_pim.cfg`: in-order, dispatch width 1, **window 1** (torch-pim.md §1.3). With a
//! one-instruction window nothing overlaps, so every instruction costs its full latency,
//! not one cycle. The latencies are Sniper's static instruction costs (snipersim
//! `config/base.cfg` `[perf_model/core/static_instruction_costs]`: add 1, mul 3, div 18,
//! fadd 3, fmul 5, fdiv 6, generic/branch 1) and the L1D hit time of the PIMProf CPU
//! configuration the PIM file inherits (4 cycles); they live in `arch/pim-general.toml`.
//! The simulated core executes x86 code with a floating-point unit, so there is **no**
//! software FP emulation here (that is an UPMEM property, not the paper's PIM).
//!
//! A load or store whose address does not change along the innermost loop (a reduction's
//! accumulator, a broadcast operand) is kept in a register by the -O3 code the core runs
//! (the same C with `restrict`), so it is charged once per innermost loop, not per
//! iteration.
//!
//! PIMProf runs the *same* x86 binary under both Sniper configurations (torch-pim.md
//! §1.1-1.2: Sniper twice, CPU config and PIM config; its analytic config gives CPU and
//! PIM the same SIMD capability, 1/1, §1.3), so the PIM core executes the host's -O3
//! vector instructions, one instruction per cycle slot. A nest whose innermost loop the
//! compiler vectorizes therefore costs its scalar latency chain per *vector* of
//! `simd_bits / element bits` iterations. [`vector_lanes`] decides which nests gcc -O3
//! (no -ffast-math, as pimkit-loops compiles them) vectorizes: unit-stride or invariant
//! accesses along the innermost loop, no data-dependent index, no libm call (expf, logf,
//! tanhf, erff, sinf, cosf, powf, fmodf stay scalar without -ffast-math: glibc declares
//! their SIMD variants only under __FAST_MATH__), no integer division, and no
//! floating-point reduction along the innermost loop (that would reassociate).
//!
//! Transcendentals count pimkit-loops' expansion (`analysis::cost`: range reduction and
//! a Horner polynomial); each of those instructions is a dependent FP add or multiply, so
//! it costs the mean of the two latencies.

use crate::arch::PimArch;
use pimkit_ir::DType;
use pimkit_loops::analysis::cost;
use pimkit_loops::codegen::loop_order;
use pimkit_loops::{BFn, Expr, Index, Nest, Program, UFn};

/// In-order cycles of one innermost iteration: loads, body, stores and loop control,
/// divided by the vector lanes when the innermost loop vectorizes.
pub fn cycles_per_iter(p: &Program, n: &Nest, a: &PimArch) -> f64 {
    // No instruction takes less than one issue slot (1/ipc cycles).
    let slot = 1.0 / a.ipc;
    let mut q = a.clone();
    for l in [
        &mut q.lat_int,
        &mut q.lat_mul,
        &mut q.lat_div,
        &mut q.lat_fadd,
        &mut q.lat_fmul,
        &mut q.lat_fdiv,
        &mut q.lat_load,
        &mut q.lat_store,
    ] {
        *l = l.max(slot);
    }
    scalar_cycles_per_iter(p, n, &q) / vector_lanes(p, n, a)
}

/// Lanes of the innermost loop's vector code (1: scalar), per the rules above.
pub fn vector_lanes(p: &Program, n: &Nest, a: &PimArch) -> f64 {
    let order = loop_order(p, n);
    let Some(&d) = order.last() else {
        return 1.0;
    };
    let dts = p.operand_dtypes(n);
    let stride = |j: usize, index: &[Index]| -> i64 {
        let t = &p.tensors[n.operands[j].tensor];
        index
            .iter()
            .enumerate()
            .map(|(k, x)| t.strides.get(k).copied().unwrap_or(0) * x.coeff(d))
            .sum()
    };
    let mut ok = true;
    let mut widest = 1usize;
    for s in &n.stores {
        let dt = dts[s.operand];
        widest = widest.max(dt.size());
        if s.index.iter().any(|i| i.dynamic.is_some()) {
            ok = false;
        }
        match stride(s.operand, &s.index).abs() {
            // An accumulator along the innermost loop: a reduction.
            0 => ok &= !dt.is_float(),
            1 => {}
            _ => ok = false,
        }
        s.value.visit(&mut |e| match e {
            Expr::Load { operand, index } => {
                widest = widest.max(dts[*operand].size());
                if index.iter().any(|i| i.dynamic.is_some()) || stride(*operand, index).abs() > 1 {
                    ok = false;
                }
            }
            Expr::DimIndex(_) => widest = widest.max(8),
            Expr::Unary(UFn::Exp | UFn::Log | UFn::Tanh | UFn::Erf, _) => ok = false,
            Expr::Unary(f, _) if f.is_trig() => ok = false,
            Expr::Binary(BFn::Pow | BFn::Rem, ..) => ok = false,
            Expr::Binary(BFn::Div, x, _) if !x.dtype(&dts).is_float() => ok = false,
            // every other expression runs on the PIM cores' integer/FP units
            _ => {}
        });
    }
    if !ok {
        return 1.0;
    }
    let lanes = (a.simd_bits as usize / (8 * widest)).max(1) as f64;
    lanes.min(n.dims[d].extent.max(1) as f64)
}

fn scalar_cycles_per_iter(p: &Program, n: &Nest, a: &PimArch) -> f64 {
    let inner = loop_order(p, n).last().copied();
    let cx = Cx {
        dts: p.operand_dtypes(n),
        inner,
        extent: inner.map_or(1.0, |d| n.dims[d].extent.max(1) as f64),
    };
    let mut c = cost::LOOP * a.lat_int;
    for s in &n.stores {
        c += expr_cycles(&s.value, &cx, a) + a.lat_store * cx.per_iter(&s.index);
        for ix in &s.index {
            if let Some(d) = &ix.dynamic {
                c += expr_cycles(d, &cx, a) + a.lat_int;
            }
        }
    }
    c
}

struct Cx {
    dts: Vec<DType>,
    /// The innermost loop's dimension and extent.
    inner: Option<usize>,
    extent: f64,
}

impl Cx {
    /// 1 for an access that moves along the innermost loop, 1/extent for one that is
    /// invariant there (promoted to a register around the innermost loop).
    fn per_iter(&self, index: &[Index]) -> f64 {
        match self.inner {
            Some(d) if index.iter().all(|i| i.dynamic.is_none() && i.coeff(d) == 0) => {
                1.0 / self.extent
            }
            _ => 1.0,
        }
    }
}

fn expr_cycles(e: &Expr, cx: &Cx, a: &PimArch) -> f64 {
    let dts = &cx.dts[..];
    match e {
        Expr::Load { index, .. } => {
            let mut c = a.lat_load * cx.per_iter(index);
            for ix in index {
                if let Some(d) = &ix.dynamic {
                    // The data-dependent index is computed, then added to the address.
                    c += expr_cycles(d, cx, a) + a.lat_int;
                }
            }
            c
        }
        Expr::Const { .. } | Expr::DimIndex(_) => 0.0,
        Expr::Unary(f, x) => {
            let fp = x.dtype(dts).is_float();
            let poly = (a.lat_fadd + a.lat_fmul) / 2.0;
            let own = match f {
                UFn::Exp => cost::EXP * poly,
                UFn::Log => cost::LOG * poly,
                UFn::Tanh => cost::TANH * poly,
                UFn::Erf => cost::ERF * poly,
                f if f.is_trig() => cost::SINCOS * poly,
                // sqrt and a division: Sniper has no sqrt class, the divider serves both.
                UFn::Rsqrt => cost::RSQRT * a.lat_fdiv,
                UFn::Sqrt | UFn::Recip if fp => a.lat_fdiv,
                UFn::Sqrt | UFn::Recip => a.lat_div,
                // every other unary function is one integer-ALU operation
                _ => a.lat_int,
            };
            own + expr_cycles(x, cx, a)
        }
        Expr::Binary(f, x, y) => {
            let fp = x.dtype(dts).is_float();
            let own = match (f, fp) {
                (BFn::Add | BFn::Sub | BFn::Max | BFn::Min, true) => a.lat_fadd,
                (BFn::Mul, true) => a.lat_fmul,
                (BFn::Mul, false) => a.lat_mul,
                (BFn::Div, true) => a.lat_fdiv,
                (BFn::Div, false) => a.lat_div,
                (BFn::Pow, _) => cost::POW * (a.lat_fadd + a.lat_fmul) / 2.0,
                // fmod / integer remainder: a division, a multiply and a subtraction.
                (BFn::Rem, true) => a.lat_fdiv + a.lat_fmul + a.lat_fadd,
                (BFn::Rem, false) => a.lat_div + a.lat_mul + a.lat_int,
                // every other binary function is one integer-ALU operation
                _ => a.lat_int,
            };
            own + expr_cycles(x, cx, a) + expr_cycles(y, cx, a)
        }
        Expr::Select(c, x, y) => {
            a.lat_int + expr_cycles(c, cx, a) + expr_cycles(x, cx, a) + expr_cycles(y, cx, a)
        }
        Expr::Cast(_, x) => a.lat_int + expr_cycles(x, cx, a),
        Expr::Fma(x, y, z) => {
            a.lat_fmul + expr_cycles(x, cx, a) + expr_cycles(y, cx, a) + expr_cycles(z, cx, a)
        }
    }
}
