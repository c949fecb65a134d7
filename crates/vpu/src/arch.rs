//! The target description: NM-Carus-like VPUs behind a DMA, a write-back cache and a
//! scalar cv32e40x host. Every number is configurable from `arch/nm-carus.toml`; the
//! defaults below cite where they come from (`quinn` = the QUINN paper,
//! `ref` = /work/shared/reference/quinn.md). Costs that no public source gives are
//! marked [unverified] and were chosen to land near the paper's measurements.

use crate::error::{Result, VpuError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The whole simulated system.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Arch {
    pub name: String,
    /// Cooperating VPUs: 1..=64 ([`MAX_VPUS`]; the kernels split work over any count);
    /// quinn §5.9 evaluates 1, 2 and 4.
    pub vpus: usize,
    /// Clock of the FPGA emulation, quinn §5.1 (80 MHz); used for latency and energy.
    pub clock_mhz: f64,
    pub vpu: VpuParams,
    pub dma: DmaParams,
    pub cache: CacheParams,
    pub memory: MemoryParams,
    pub host: HostParams,
    pub power: PowerParams,
    /// Kernel formulation: pimkit's (default) or the paper's strict Table 2 one.
    pub kernels: KernelStyle,
}

/// Which formulation the kernels follow where pimkit goes beyond the paper's text.
///
/// - `pimkit` (default): the depthwise kernel keeps a spare ring column and two
///   alternating accumulators and defers each pixel's store (overlap on one VPU); the
///   VM kernel double-buffers inside one VRF when it has a single VPU.
/// - `paper`: exactly the VRF partitions of quinn Table 2 (depthwise: input V0-V8,
///   one accumulator V15; VM: one 30-row weight window per VPU), loads issued as the
///   unit-stride transactions of quinn §5.9 (one per HWC pixel), and prefetching only
///   across cooperating VPUs (quinn §4.3.1 and §4.3.4: "software prefetching and double
///   buffering are preferred under multiple cooperating VPUs"; §5.9: the 1-VPU VM run
///   stalls 58 % of its time).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelStyle {
    #[default]
    Pimkit,
    Paper,
}

impl KernelStyle {
    pub fn parse(s: &str) -> Option<KernelStyle> {
        match s.to_ascii_lowercase().as_str() {
            "pimkit" => Some(KernelStyle::Pimkit),
            "paper" => Some(KernelStyle::Paper),
            _ => None,
        }
    }
    pub fn is_paper(self) -> bool {
        self == KernelStyle::Paper
    }
}

/// One NM-Carus VPU: the VRF is its local SRAM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VpuParams {
    /// Local SRAM = VRF bytes: 32 KiB per VPU (quinn Fig. 1; ref §1.2, ARCANE carus 8 x 4 KiB banks).
    pub vrf_bytes: usize,
    /// Architectural vector registers tiling the SRAM: 32 (ref §1.2, VLEN = size/32).
    pub vregs: usize,
    /// Lanes: 8 (quinn §5.1; ref §1.2 one lane per bank [unverified]).
    pub lanes: usize,
    /// Element width the kernels issue at: 32 (quinn §5.4, zero-point and requant at SEW=32).
    pub sew: usize,
    /// Cycles per 32-bit word per lane for each instruction class.
    pub cycles: ClassCycles,
    /// Fixed start-up cycles of every vector instruction [unverified].
    pub startup_cycles: u64,
    /// Instructions the offload interface can queue before the host stalls [unverified].
    pub queue_depth: usize,
    /// Vector instructions of the integer-only requantization sequence, per output register.
    pub requant: RequantSeq,
}

/// Cycles per 32-bit word per lane (an instruction on `vl` words costs
/// `startup + ceil(vl / lanes) * cycles`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ClassCycles {
    /// int32 MAC: 0.33 MAC/cycle/lane (quinn §5.4 citing NM-Carus [unverified]).
    pub mac: f64,
    /// Multiply: cheaper than MAC (ref §1.3, "xvmul is faster than xvmacc") [unverified].
    pub mul: f64,
    /// Add/sub: one 32-bit word per 2 cycles per lane (quinn §5.4).
    pub add: f64,
    /// Shifts (xvsra) [unverified, adder-class].
    pub shift: f64,
    /// Max/min (xvmax) [unverified, adder-class].
    pub minmax: f64,
    /// vmv.v.x / vmv.v.v [unverified].
    pub mv: f64,
    /// Slides (xvslidedown) [unverified].
    pub slide: f64,
    /// xvmv.x.s: fixed cycles to read one element into a host register [unverified].
    pub mv_x_s: f64,
}

/// The bit-exact requantization as vector instructions per output register (see
/// `quant::IntRequant`: round to 24 bits, 24x24 multiply, round, RNE shift, clamp, +zp).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RequantSeq {
    pub mul: u32,
    pub add: u32,
    pub shift: u32,
    pub minmax: u32,
}

/// Single-channel X-HEEP DMA (ref §1.5: one channel, no zero padding, no HW FIFO).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DmaParams {
    /// Host cycles to program one descriptor (address, size, strides, start) [unverified:
    /// about eight 1-cycle CSR/store writes plus address arithmetic on cv32e40x].
    pub program_cycles: u64,
    /// Channel cycles from start to the first element [unverified].
    pub setup_cycles: u64,
    /// Bytes per cycle on the VRF side: one 32-bit OBI beat per cycle (ref §1.5). Every
    /// VRF element is a 32-bit word, so 8-bit operands widened into (or narrowed from)
    /// int32 elements move one element per beat, i.e. 1 B/cycle of memory-side data
    /// [unverified: the X-HEEP DMA's data-type conversion; checked against quinn §5.9's
    /// 4-VPU VM run at "roughly 70 % of the 1.2 B/cycle roof"].
    pub bytes_per_cycle: f64,
}

/// The DMA-side cache (quinn §4.1: 128 KiB, 8-way, write-back, 64 B lines; ref §1.5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheParams {
    pub size_bytes: usize,
    pub ways: usize,
    pub line_bytes: usize,
}

/// Off-chip memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MemoryParams {
    /// Sustained bandwidth: 1.2 B/cycle (quinn §5.4; 0.8 and 0.5 in §5.9).
    pub bandwidth: f64,
    /// Extra response latency per DMA burst that misses (quinn §5.1 latency module; 0 = none).
    pub latency_cycles: u64,
}

/// cv32e40x host timings (ref §2.1) and the scalar baseline's per-op costs (ref §2.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostParams {
    /// Offload one vector instruction over CV-X-IF incl. packed-index update (ALU 1 + issue 1).
    pub issue_cycles: u64,
    /// One loop iteration: counter add (1) + taken branch (3), ref §2.1.
    pub loop_cycles: u64,
    /// Host control per scalar-broadcast step (xvmv.x.s result, packed-index and address
    /// update, loop branch) that cannot overlap the VPU because the next MAC needs the
    /// scalar [unverified: calibrated so QLinearMatMul-OS at n = 256 lands on quinn
    /// §5.5's 3.21 Ops/cycle; `examples/calibrate.rs` redoes the fit].
    pub scalar_step_cycles: u64,
    /// Scalar MAC in the muRISCV-NN 2x2-blocked loop: 18 cycles / 4 MACs (ref §2.2).
    pub mac_cycles: f64,
    /// Scalar depthwise MAC: no register blocking, per-tap bounds checks and HWC address
    /// arithmetic [unverified: calibrated to quinn §5.9's 0.09 Ops/cycle host depthwise].
    pub dw_mac_cycles: f64,
    /// Integer-only requantization of one output on the host (mul + mulh(5) + shifts; ref §2.2).
    pub requant_cycles: f64,
    /// Zero-point subtraction of one loaded element (load 1 + sub 1).
    pub zp_cycles: f64,
    /// Per element cycles of host-only quantized elementwise ops (QLinearAdd: 2 loads,
    /// 2 integer requants, add, clamp, store) [unverified].
    pub eltwise_cycles: f64,
    /// Per element cycles of data movement on the host (load + store + address), e.g. layout changes.
    pub copy_cycles: f64,
}

/// Dynamic power for energy (quinn Table 5: 0.108 W per VPU unit at 80 MHz).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PowerParams {
    pub vpu_dynamic_w: f64,
    /// Share of the VPU dynamic power that scales with the lane count (relative to 8
    /// lanes) and with the cache size (relative to 128 KiB), for the §5.10 sweep
    /// [unverified: shaped after quinn Table 4's trends].
    pub lane_share: f64,
    pub cache_share: f64,
    /// Host dynamic power for the scalar-baseline energy [unverified: calibrated so the
    /// OS MM256 saving at 8 lanes / 128 KiB equals quinn Table 4's 28.5x; the paper's
    /// CPU figure evidently covers more than the core].
    pub host_dynamic_w: f64,
}

impl Default for Arch {
    fn default() -> Self {
        Arch {
            name: "nm-carus".into(),
            vpus: 1,
            clock_mhz: 80.0,
            vpu: VpuParams::default(),
            dma: DmaParams::default(),
            cache: CacheParams::default(),
            memory: MemoryParams::default(),
            host: HostParams::default(),
            power: PowerParams::default(),
            kernels: KernelStyle::Pimkit,
        }
    }
}

impl Default for VpuParams {
    fn default() -> Self {
        VpuParams {
            vrf_bytes: 32 * 1024,
            vregs: 32,
            lanes: 8,
            sew: 32,
            cycles: ClassCycles::default(),
            startup_cycles: 2,
            queue_depth: 32,
            requant: RequantSeq::default(),
        }
    }
}

impl Default for ClassCycles {
    fn default() -> Self {
        ClassCycles {
            mac: 3.0,
            mul: 2.0,
            add: 2.0,
            shift: 2.0,
            minmax: 2.0,
            mv: 1.0,
            slide: 1.0,
            mv_x_s: 3.0,
        }
    }
}

impl Default for RequantSeq {
    fn default() -> Self {
        // Emulating f32 rounding with integers: normalise |acc| (2 shifts, 1 add),
        // 24x24 multiply as two 16-bit halves (2 mul, 2 add), RNE shift (2 shift, 2 add),
        // sign restore, +zp, clamp (2 add, 2 minmax).
        RequantSeq {
            mul: 2,
            add: 7,
            shift: 4,
            minmax: 2,
        }
    }
}

impl Default for DmaParams {
    fn default() -> Self {
        DmaParams {
            program_cycles: 24,
            setup_cycles: 4,
            bytes_per_cycle: 4.0,
        }
    }
}

impl Default for CacheParams {
    fn default() -> Self {
        CacheParams {
            size_bytes: 128 * 1024,
            ways: 8,
            line_bytes: 64,
        }
    }
}

impl Default for MemoryParams {
    fn default() -> Self {
        MemoryParams {
            bandwidth: 1.2,
            latency_cycles: 0,
        }
    }
}

impl Default for HostParams {
    fn default() -> Self {
        HostParams {
            issue_cycles: 2,
            loop_cycles: 4,
            scalar_step_cycles: 33,
            mac_cycles: 4.5,
            dw_mac_cycles: 18.0,
            requant_cycles: 16.0,
            zp_cycles: 2.0,
            eltwise_cycles: 40.0,
            copy_cycles: 4.0,
        }
    }
}

impl Default for PowerParams {
    fn default() -> Self {
        PowerParams {
            vpu_dynamic_w: 0.108,
            lane_share: 0.6,
            cache_share: 0.25,
            host_dynamic_w: 0.53,
        }
    }
}

impl Arch {
    /// Parse a TOML architecture description (missing fields take the defaults).
    pub fn from_toml(text: &str) -> Result<Arch> {
        let a: Arch = toml::from_str(text).map_err(|e| VpuError::ArchParse(e.to_string()))?;
        a.validate()?;
        Ok(a)
    }

    pub fn from_file(path: &Path) -> Result<Arch> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| VpuError::ArchParse(format!("{}: {e}", path.display())))?;
        Arch::from_toml(&text)
    }

    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_default()
    }

    /// 32-bit elements per vector register (256 for the defaults).
    pub fn vlen(&self) -> usize {
        self.vpu.vrf_bytes / self.vpu.vregs / 4
    }

    /// Dynamic power of one VPU unit at this lane count and cache size (W).
    pub fn vpu_power_w(&self) -> f64 {
        let p = &self.power;
        let lanes = self.vpu.lanes as f64 / 8.0;
        let cache = self.cache.size_bytes as f64 / (128.0 * 1024.0);
        p.vpu_dynamic_w
            * (1.0 - p.lane_share + p.lane_share * lanes)
            * (1.0 - p.cache_share + p.cache_share * cache)
    }

    /// A copy with another VPU count / bandwidth (the §5.9 sweep knobs).
    pub fn with(&self, vpus: usize, bandwidth: f64) -> Arch {
        let mut a = self.clone();
        a.vpus = vpus;
        a.memory.bandwidth = bandwidth;
        a
    }

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
        if ![8, 16, 32].contains(&v.sew) {
            return bad("vpu.sew", format!("{}; use 8, 16 or 32", v.sew));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_paper() {
        let a = Arch::default();
        a.validate().unwrap();
        assert_eq!(a.vlen(), 256);
        assert_eq!(a.cache.size_bytes / a.cache.ways / a.cache.line_bytes, 256);
    }

    #[test]
    fn toml_roundtrip_and_partial() {
        let a = Arch::from_toml("vpus = 4\n[memory]\nbandwidth = 0.5\n").unwrap();
        assert_eq!(a.vpus, 4);
        assert_eq!(a.memory.bandwidth, 0.5);
        assert_eq!(a.vpu.lanes, 8);
        let b = Arch::from_toml(&a.to_toml()).unwrap();
        assert_eq!(a, b);
    }

    #[test]
    fn bad_configs_are_clear() {
        let e = Arch::from_toml("[memory]\nbandwidth = 0.0\n").unwrap_err();
        assert!(e.to_string().contains("memory.bandwidth"), "{e}");
        let e = Arch::from_toml("[vpu]\nlanes = 0\n").unwrap_err();
        assert!(e.to_string().contains("vpu.lanes"), "{e}");
        let e = Arch::from_toml("[vpu]\nbogus = 1\n").unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
    }
}

#[cfg(test)]
mod file_tests {
    use super::*;

    /// arch/nm-carus.toml documents exactly the built-in defaults.
    #[test]
    fn shipped_arch_file_equals_defaults() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../arch/nm-carus.toml");
        assert_eq!(Arch::from_file(&p).unwrap(), Arch::default());
    }

    /// arch/nm-carus-paper.toml differs from the defaults only in the kernel style.
    #[test]
    fn shipped_paper_arch_only_switches_the_kernels() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../arch/nm-carus-paper.toml");
        let a = Arch::from_file(&p).unwrap();
        assert_eq!(a.kernels, KernelStyle::Paper);
        assert_eq!(
            Arch {
                name: Arch::default().name,
                kernels: KernelStyle::Pimkit,
                ..a
            },
            Arch::default()
        );
        let e = Arch::from_toml("kernels = \"fast\"\n").unwrap_err();
        assert!(
            e.to_string().contains("kernels") || e.to_string().contains("fast"),
            "{e}"
        );
    }
}
