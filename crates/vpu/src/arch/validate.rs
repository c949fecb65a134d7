//! Range checks for every field of [`Arch`]: finite, physical, and far enough from the
//! limits of the integer cycle arithmetic that nothing can overflow.

use super::Arch;
use crate::error::{Result, VpuError};

impl Arch {
    /// Check every field of the description; errors name the field, the bad value and
    /// the allowed range. The bounds (the `MAX_*`/`MIN_*` constants, docs/vpu.md) keep
    /// every value physical and keep the integer cycle arithmetic far from overflow.
    pub fn validate(&self) -> Result<()> {
        let bad = |field: &'static str, msg: String| Err(VpuError::BadArch { field, msg });
        if self.vpus == 0 || self.vpus > MAX_VPUS {
            return bad(
                "vpus",
                format!(
                    "{} VPUs; use 1..={MAX_VPUS} (the paper evaluates 1, 2 and 4)",
                    self.vpus
                ),
            );
        }
        real(
            "clock_mhz",
            self.clock_mhz,
            Lo::Incl(MIN_CLOCK_MHZ),
            MAX_CLOCK_MHZ,
            "MHz",
        )?;
        let v = &self.vpu;
        if v.vregs < 32 || v.vregs > MAX_VREGS {
            return bad(
                "vpu.vregs",
                format!(
                    "{} registers; use 32..={MAX_VREGS} (the kernels' partitions, quinn Table 2, need 32)",
                    v.vregs
                ),
            );
        }
        if v.vrf_bytes > MAX_VRF_BYTES
            || !v.vrf_bytes.is_multiple_of(v.vregs * 4)
            || self.vlen() < 16
        {
            return bad(
                "vpu.vrf_bytes",
                format!(
                    "{} bytes gives {} int32 elements per register; use a multiple of vregs*4 \
                     with at least 16 elements per register, at most {MAX_VRF_BYTES} bytes \
                     (32768 in quinn)",
                    v.vrf_bytes,
                    self.vlen()
                ),
            );
        }
        if v.lanes == 0 || v.lanes > MAX_LANES {
            return bad(
                "vpu.lanes",
                format!("{} lanes; use 1..={MAX_LANES} (8 in quinn)", v.lanes),
            );
        }
        // NM-Carus encodes 8/16/32-bit elements (ref §1.2), but every QUINN kernel issues
        // at 32: ONNX's QLinear ops accumulate in int32 and quinn §5.4 issues zero-point
        // and requantization at SEW=32; 8-bit operands are widened by the DMA. A narrower
        // width would change costs without a kernel that could compute at it.
        if v.sew != 32 {
            return bad(
                "vpu.sew",
                format!(
                    "{}; use 32: the kernels accumulate in int32 (quinn §5.4) and the DMA \
                     widens 8-bit operands, so no kernel issues at 8 or 16 bits",
                    v.sew
                ),
            );
        }
        int(
            "vpu.startup_cycles",
            v.startup_cycles,
            0,
            MAX_COST as u64,
            "cycles",
        )?;
        if v.queue_depth == 0 || v.queue_depth > MAX_QUEUE_DEPTH {
            return bad(
                "vpu.queue_depth",
                format!(
                    "{} instructions; use 1..={MAX_QUEUE_DEPTH} (32 by default)",
                    v.queue_depth
                ),
            );
        }
        let c = &v.cycles;
        for (f, x) in [
            ("vpu.cycles.mac", c.mac),
            ("vpu.cycles.mul", c.mul),
            ("vpu.cycles.add", c.add),
            ("vpu.cycles.shift", c.shift),
            ("vpu.cycles.minmax", c.minmax),
            ("vpu.cycles.mv", c.mv),
            ("vpu.cycles.slide", c.slide),
            ("vpu.cycles.mv_x_s", c.mv_x_s),
        ] {
            real(f, x, Lo::Excl(0.0), MAX_COST, "cycles")?;
        }
        let q = &v.requant;
        for (f, x) in [
            ("vpu.requant.mul", q.mul),
            ("vpu.requant.add", q.add),
            ("vpu.requant.shift", q.shift),
            ("vpu.requant.minmax", q.minmax),
        ] {
            int(f, x as u64, 0, MAX_REQUANT_INSTRS, "instructions")?;
        }
        if q.mul + q.add + q.shift + q.minmax == 0 {
            return bad(
                "vpu.requant",
                "0 instructions in all; the requantization needs at least one (defaults: mul 2, add 7, shift 4, minmax 2)".into(),
            );
        }
        let d = &self.dma;
        int(
            "dma.program_cycles",
            d.program_cycles,
            0,
            MAX_COST as u64,
            "cycles",
        )?;
        int(
            "dma.setup_cycles",
            d.setup_cycles,
            0,
            MAX_COST as u64,
            "cycles",
        )?;
        real(
            "dma.bytes_per_cycle",
            d.bytes_per_cycle,
            Lo::Incl(MIN_BANDWIDTH),
            MAX_BANDWIDTH,
            "B/cycle",
        )?;
        let cp = &self.cache;
        if cp.line_bytes == 0 || !cp.line_bytes.is_power_of_two() || cp.line_bytes > MAX_LINE_BYTES
        {
            return bad(
                "cache.line_bytes",
                format!(
                    "{}; use a power of two up to {MAX_LINE_BYTES} (64 in quinn)",
                    cp.line_bytes
                ),
            );
        }
        if cp.ways == 0 || cp.ways > MAX_WAYS {
            return bad(
                "cache.ways",
                format!("{}; use 1..={MAX_WAYS} (8 in quinn)", cp.ways),
            );
        }
        if cp.size_bytes == 0
            || cp.size_bytes > MAX_CACHE_BYTES
            || !cp.size_bytes.is_multiple_of(cp.ways * cp.line_bytes)
        {
            return bad(
                "cache.size_bytes",
                format!(
                    "{} bytes; use a positive multiple of ways x line ({} x {}) up to \
                     {MAX_CACHE_BYTES} (131072 in quinn)",
                    cp.size_bytes, cp.ways, cp.line_bytes
                ),
            );
        }
        real(
            "memory.bandwidth",
            self.memory.bandwidth,
            Lo::Incl(MIN_BANDWIDTH),
            MAX_BANDWIDTH,
            "B/cycle (the paper uses 1.2, 0.8, 0.5)",
        )?;
        int(
            "memory.latency_cycles",
            self.memory.latency_cycles,
            0,
            MAX_COST as u64,
            "cycles",
        )?;
        let h = &self.host;
        int(
            "host.issue_cycles",
            h.issue_cycles,
            1,
            MAX_COST as u64,
            "cycles",
        )?;
        int(
            "host.loop_cycles",
            h.loop_cycles,
            0,
            MAX_COST as u64,
            "cycles",
        )?;
        int(
            "host.scalar_step_cycles",
            h.scalar_step_cycles,
            0,
            MAX_COST as u64,
            "cycles",
        )?;
        for (f, x) in [
            ("host.mac_cycles", h.mac_cycles),
            ("host.dw_mac_cycles", h.dw_mac_cycles),
            ("host.requant_cycles", h.requant_cycles),
            ("host.eltwise_cycles", h.eltwise_cycles),
            ("host.copy_cycles", h.copy_cycles),
        ] {
            real(f, x, Lo::Excl(0.0), MAX_COST, "cycles")?;
        }
        real(
            "host.zp_cycles",
            h.zp_cycles,
            Lo::Incl(0.0),
            MAX_COST,
            "cycles",
        )?;
        let p = &self.power;
        real(
            "power.vpu_dynamic_w",
            p.vpu_dynamic_w,
            Lo::Incl(0.0),
            MAX_POWER_W,
            "W",
        )?;
        real(
            "power.host_dynamic_w",
            p.host_dynamic_w,
            Lo::Incl(0.0),
            MAX_POWER_W,
            "W",
        )?;
        real(
            "power.lane_share",
            p.lane_share,
            Lo::Incl(0.0),
            1.0,
            "(a share)",
        )?;
        real(
            "power.cache_share",
            p.cache_share,
            Lo::Incl(0.0),
            1.0,
            "(a share)",
        )?;
        Ok(())
    }
}

/// Most cooperating VPUs (the kernels split work over any count; quinn evaluates 1, 2, 4).
pub const MAX_VPUS: usize = 64;
/// Clock range in MHz (80 in quinn).
pub const MIN_CLOCK_MHZ: f64 = 1e-3;
pub const MAX_CLOCK_MHZ: f64 = 1e5;
/// Largest VRF (local SRAM) per VPU: 4 MiB (32 KiB in quinn).
pub const MAX_VRF_BYTES: usize = 4 << 20;
pub const MAX_VREGS: usize = 256;
pub const MAX_LANES: usize = 1024;
pub const MAX_QUEUE_DEPTH: usize = 65536;
/// Largest count of one instruction class in the requantization sequence.
pub const MAX_REQUANT_INSTRS: u64 = 1000;
/// Largest cost of any single operation (per word per lane, per host op, per descriptor,
/// fixed start-up or latency): a million cycles.
pub const MAX_COST: f64 = 1e6;
/// Off-chip bandwidth and DMA rate in B/cycle. The lower bound keeps one 64 B line under
/// 64,000 cycles, so cycle counts of whole networks stay far below 2^64.
pub const MIN_BANDWIDTH: f64 = 1e-3;
pub const MAX_BANDWIDTH: f64 = 1e6;
pub const MAX_CACHE_BYTES: usize = 64 << 20;
pub const MAX_WAYS: usize = 1024;
pub const MAX_LINE_BYTES: usize = 4096;
pub const MAX_POWER_W: f64 = 1e3;

/// Check a bandwidth given outside the arch file (e.g. a command-line flag).
pub fn check_bandwidth(b: f64) -> std::result::Result<(), String> {
    if b.is_finite() && (MIN_BANDWIDTH..=MAX_BANDWIDTH).contains(&b) {
        Ok(())
    } else {
        Err(format!(
            "{} B/cycle; use a finite value in [{MIN_BANDWIDTH}, {MAX_BANDWIDTH}] B/cycle (the paper uses 1.2, 0.8, 0.5)",
            num(b)
        ))
    }
}

/// A number as written in a TOML file: plain when moderate, scientific otherwise
/// (1e-20 rather than 0.00000000000000000001).
fn num(x: f64) -> String {
    if x == 0.0 || !x.is_finite() || (1e-3..1e7).contains(&x.abs()) {
        format!("{x}")
    } else {
        format!("{x:e}")
    }
}

/// Lower bound of a real-valued field: inclusive or exclusive.
#[derive(Clone, Copy)]
enum Lo {
    Incl(f64),
    Excl(f64),
}

fn real(field: &'static str, x: f64, lo: Lo, hi: f64, unit: &str) -> Result<()> {
    let (ok_lo, range) = match lo {
        Lo::Incl(l) => (x >= l, format!("[{l}, {hi}]")),
        Lo::Excl(l) => (x > l, format!("({l}, {hi}]")),
    };
    if x.is_finite() && ok_lo && x <= hi {
        return Ok(());
    }
    Err(VpuError::BadArch {
        field,
        msg: format!("{}; use a finite value in {range} {unit}", num(x)),
    })
}

fn int(field: &'static str, x: u64, lo: u64, hi: u64, unit: &str) -> Result<()> {
    if (lo..=hi).contains(&x) {
        return Ok(());
    }
    Err(VpuError::BadArch {
        field,
        msg: format!("{x}; use {lo}..={hi} {unit}"),
    })
}
