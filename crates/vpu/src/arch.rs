//! The target description: NM-Carus-like VPUs behind a DMA, a write-back cache and a
//! scalar cv32e40x host. Every number is configurable from `arch/nm-carus.toml`; the
//! defaults below cite where they come from (`quinn` = the QUINN paper,
//! `ref` = /work/shared/reference/quinn.md). Costs that no public source gives are
//! marked [unverified] and were chosen to land near the paper's measurements.

mod validate;
pub use validate::*;

use crate::error::{Result, VpuError};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The whole simulated system.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub struct RequantSeq {
    pub mul: u32,
    pub add: u32,
    pub shift: u32,
    pub minmax: u32,
}

/// Single-channel X-HEEP DMA (ref §1.5: one channel, no zero padding, no HW FIFO).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
#[serde(deny_unknown_fields)]
pub struct CacheParams {
    pub size_bytes: usize,
    pub ways: usize,
    pub line_bytes: usize,
}

/// Off-chip memory.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MemoryParams {
    /// Sustained bandwidth: 1.2 B/cycle (quinn §5.4; 0.8 and 0.5 in §5.9).
    pub bandwidth: f64,
    /// Extra response latency per DMA burst that misses (quinn §5.1 latency module; 0 = none).
    pub latency_cycles: u64,
}

/// cv32e40x host timings (ref §2.1) and the scalar baseline's per-op costs (ref §2.2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// Scalar MAC in the muRISCV-NN 2x2-blocked loop. Reading the loop gives 18 cycles per
    /// 4 MACs (4.5, ref §2.2) before load-use stalls and zero-point handling; the paper
    /// measured its host [unverified: calibrated so the host's MM 1024 runs at quinn
    /// §5.9's measured 0.33 Ops/cycle; `examples/calibrate.rs` redoes the fit].
    pub mac_cycles: f64,
    /// Scalar depthwise MAC: no register blocking, per-tap bounds checks and HWC address
    /// arithmetic [unverified: calibrated so the host's Table 3 depthwise runs at quinn
    /// §5.9's measured 0.09 Ops/cycle; `examples/calibrate.rs`].
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
#[serde(deny_unknown_fields)]
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
    /// The built-in `arch/nm-carus.toml` (its values cite their sources; no Rust copy).
    fn default() -> Self {
        pimkit_engine::arch::builtin().expect("the built-in arch/nm-carus.toml is valid")
    }
}

/// The built-in architecture file, compiled in.
pub const DEFAULT_TOML: &str = include_str!("../../../arch/nm-carus.toml");

impl pimkit_engine::ArchSpec for Arch {
    const DEFAULT_TOML: &'static str = DEFAULT_TOML;
    const DEFAULT_PATH: &'static str = "arch/nm-carus.toml";
    fn check(&self, c: &mut pimkit_engine::Checks) {
        if let Err(e) = self.validate() {
            match e {
                VpuError::BadArch { field, msg } => c.fail_field(field, msg),
                other => c.fail_field("architecture", other.to_string()),
            }
        }
    }
}

impl Arch {
    /// `text` laid over the built-in description (a file may set only what differs).
    pub fn from_toml(text: &str) -> Result<Arch> {
        pimkit_engine::arch::from_str(text, "architecture TOML").map_err(VpuError::ArchFile)
    }

    pub fn from_file(path: &Path) -> Result<Arch> {
        pimkit_engine::arch::load(Some(path)).map_err(VpuError::ArchFile)
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
