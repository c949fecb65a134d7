//! A serving system: xPUs (GPUs or NPUs) with their memory, and optionally DRAM-PIM
//! devices with compute placed per bank, per bank group or on the buffer die (AttAcc's
//! three options). Described by TOML under `arch/llm/` (every value cites its source),
//! loaded by the one architecture loader; `--system NAME|FILE` names a built-in system or
//! a file laid over the system its `base` key names.

use pimkit_engine::{ArchError, ArchSpec, Checks};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Where the PIM compute sits in the DRAM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Placement {
    Bank,
    BankGroup,
    BufferDie,
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct System {
    /// The built-in system a user file is laid over (files only).
    #[serde(default)]
    pub base: Option<String>,
    pub name: String,
    pub description: String,
    pub xpu: Xpu,
    /// DRAM-PIM devices; absent: the xPUs do everything.
    #[serde(default)]
    pub pim: Option<Pim>,
}

/// The xPUs, identical devices running tensor-parallel.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Xpu {
    pub devices: u32,
    /// Peak dense FP16 throughput per device, TFLOP/s.
    pub tflops: f64,
    /// Memory per device, GiB.
    pub memory_gib: f64,
    /// Off-chip memory bandwidth per device, GB/s.
    pub memory_gbs: f64,
    /// Device-to-device / device-to-PIM link bandwidth per device, GB/s.
    pub link_gbs: f64,
    /// The fraction of peak compute and of memory bandwidth a kernel reaches.
    pub compute_util: f64,
    pub memory_util: f64,
    /// Tensor-parallel all-reduce, per ring step: a fixed latency and an effective
    /// bandwidth ((devices - 1) steps of (bytes / devices) each).
    pub allreduce_latency_us: f64,
    pub allreduce_gbs: f64,
    /// Fixed time of the element-wise kernels (norms, activation) of one decoder layer,
    /// on top of their bytes (kernel launch and synchronisation), microseconds.
    pub vector_us_per_layer: f64,
    /// Energy per operation, per byte read from memory (cell to xPU), per byte through the
    /// on-chip caches (each byte read passes them once), per byte over the link.
    pub pj_per_op: f64,
    pub pj_per_byte_memory: f64,
    pub pj_per_byte_cache: f64,
    pub pj_per_byte_link: f64,
}

/// DRAM-PIM devices (HBM stacks with compute units).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Pim {
    pub placement: Placement,
    pub devices: u32,
    /// Memory per device, GiB.
    pub memory_gib: f64,
    /// Bandwidth the PIM units see inside one device (all units together), GB/s.
    pub internal_gbs: f64,
    /// Peak throughput of one device's PIM units, TFLOP/s.
    pub tflops: f64,
    /// Bandwidth between one device and the xPUs, GB/s.
    pub link_gbs: f64,
    /// The fraction of internal bandwidth and compute a kernel reaches.
    pub util: f64,
    /// The same for attention (score, softmax, context), where it differs from the FC
    /// layers' (short rows, per-head passes); absent: `util`.
    #[serde(default)]
    pub attn_util: Option<f64>,
    /// Fixed latency of one transfer over a device's link (a pipeline stage's hop), µs.
    #[serde(default)]
    pub link_latency_us: f64,
    /// Energy per operation, per byte read by the PIM units (cell to unit), per byte over
    /// the link to the xPU.
    pub pj_per_op: f64,
    pub pj_per_byte_memory: f64,
    pub pj_per_byte_link: f64,
    /// AttAcc's head-level pipelining: the xPU's QKV and output projections of one head
    /// group overlap the PIM's attention of the previous one.
    #[serde(default)]
    pub head_pipelining: bool,
    /// AttAcc's FFN split: part of the FFN's GEMVs run in PIM (each sequence streams the
    /// weights there: PIM bandwidth / batch) so that both sides finish together.
    #[serde(default)]
    pub ffn_split: bool,
}

pub const DGX_A100: &str = include_str!("../../../arch/llm/dgx-a100.toml");
pub const DGX_A100X2: &str = include_str!("../../../arch/llm/dgx-a100x2.toml");
pub const DGX_A100_ATTACC: &str = include_str!("../../../arch/llm/dgx-a100-attacc.toml");
pub const DGX_H100: &str = include_str!("../../../arch/llm/dgx-h100.toml");
pub const DGX_H100_ATTACC_BANK: &str = include_str!("../../../arch/llm/dgx-h100-attacc-bank.toml");
pub const DGX_H100_ATTACC_BG: &str = include_str!("../../../arch/llm/dgx-h100-attacc-bg.toml");
pub const DGX_H100_ATTACC_BUFFER: &str =
    include_str!("../../../arch/llm/dgx-h100-attacc-buffer.toml");

pub const DGX_H100_AIM: &str = include_str!("../../../arch/llm/dgx-h100-aim.toml");
pub const DGX_H100_UPMEM: &str = include_str!("../../../arch/llm/dgx-h100-upmem.toml");
pub const CENT: &str = include_str!("../../../arch/llm/cent.toml");

/// (name, repository path, text) of every built-in system.
pub const SYSTEMS: [(&str, &str, &str); 10] = [
    ("dgx-a100", "arch/llm/dgx-a100.toml", DGX_A100),
    ("dgx-a100x2", "arch/llm/dgx-a100x2.toml", DGX_A100X2),
    (
        "dgx-a100-attacc",
        "arch/llm/dgx-a100-attacc.toml",
        DGX_A100_ATTACC,
    ),
    ("dgx-h100", "arch/llm/dgx-h100.toml", DGX_H100),
    (
        "dgx-h100-attacc-bank",
        "arch/llm/dgx-h100-attacc-bank.toml",
        DGX_H100_ATTACC_BANK,
    ),
    (
        "dgx-h100-attacc-bg",
        "arch/llm/dgx-h100-attacc-bg.toml",
        DGX_H100_ATTACC_BG,
    ),
    (
        "dgx-h100-attacc-buffer",
        "arch/llm/dgx-h100-attacc-buffer.toml",
        DGX_H100_ATTACC_BUFFER,
    ),
    ("dgx-h100-aim", "arch/llm/dgx-h100-aim.toml", DGX_H100_AIM),
    (
        "dgx-h100-upmem",
        "arch/llm/dgx-h100-upmem.toml",
        DGX_H100_UPMEM,
    ),
    ("cent", "arch/llm/cent.toml", CENT),
];

impl ArchSpec for System {
    const DEFAULT_TOML: &'static str = DGX_H100;
    const DEFAULT_PATH: &'static str = "arch/llm/dgx-h100.toml";
    fn check(&self, c: &mut Checks) {
        let x = &self.xpu;
        c.int_in("xpu.devices", x.devices as u64, 1, 4096);
        c.positive("xpu.tflops", x.tflops, 1e6);
        // 0: processors without memory of their own (CENT's accelerators beside the PIM).
        c.num_in("xpu.memory_gib", x.memory_gib, 0.0, 1e6);
        c.positive("xpu.memory_gbs", x.memory_gbs, 1e7);
        c.positive("xpu.link_gbs", x.link_gbs, 1e7);
        c.positive("xpu.compute_util", x.compute_util, 1.0);
        c.positive("xpu.memory_util", x.memory_util, 1.0);
        c.num_in("xpu.allreduce_latency_us", x.allreduce_latency_us, 0.0, 1e6);
        c.positive("xpu.allreduce_gbs", x.allreduce_gbs, 1e7);
        c.num_in("xpu.vector_us_per_layer", x.vector_us_per_layer, 0.0, 1e6);
        c.num_in("xpu.pj_per_byte_cache", x.pj_per_byte_cache, 0.0, 1e5);
        c.num_in("xpu.pj_per_op", x.pj_per_op, 0.0, 1e4);
        c.num_in("xpu.pj_per_byte_memory", x.pj_per_byte_memory, 0.0, 1e5);
        c.num_in("xpu.pj_per_byte_link", x.pj_per_byte_link, 0.0, 1e5);
        if let Some(p) = &self.pim {
            c.int_in("pim.devices", p.devices as u64, 1, 4096);
            c.positive("pim.memory_gib", p.memory_gib, 1e6);
            c.positive("pim.internal_gbs", p.internal_gbs, 1e8);
            c.positive("pim.tflops", p.tflops, 1e6);
            c.positive("pim.link_gbs", p.link_gbs, 1e7);
            c.positive("pim.util", p.util, 1.0);
            if let Some(a) = p.attn_util {
                c.positive("pim.attn_util", a, 1.0);
            }
            c.num_in("pim.link_latency_us", p.link_latency_us, 0.0, 1e6);
            c.num_in("pim.pj_per_op", p.pj_per_op, 0.0, 1e4);
            c.num_in("pim.pj_per_byte_memory", p.pj_per_byte_memory, 0.0, 1e5);
            c.num_in("pim.pj_per_byte_link", p.pj_per_byte_link, 0.0, 1e5);
        }
    }
}

const GIB: f64 = (1u64 << 30) as f64;

impl System {
    /// Memory of all xPUs, bytes.
    pub fn xpu_bytes(&self) -> f64 {
        self.xpu.devices as f64 * self.xpu.memory_gib * GIB
    }
    /// Memory of all PIM devices (0 without PIM), bytes.
    pub fn pim_bytes(&self) -> f64 {
        self.pim
            .as_ref()
            .map_or(0.0, |p| p.devices as f64 * p.memory_gib * GIB)
    }
}

/// The built-in system called `name`.
pub fn builtin(name: &str) -> Option<Result<System, ArchError>> {
    SYSTEMS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, path, text)| pimkit_engine::arch::over_base(text, path, None))
}

/// A system from TOML `text` (named `name` in errors), laid over the built-in system its
/// `base` key names (default `dgx-h100`).
pub fn load_str(text: &str, name: &str) -> Result<System, ArchError> {
    let base = text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| t.get("base").and_then(|b| b.as_str().map(str::to_string)))
        .unwrap_or_else(|| "dgx-h100".to_string());
    let Some((_, bpath, btext)) = SYSTEMS.iter().find(|(n, _, _)| *n == base) else {
        return Err(ArchError {
            file: name.to_string(),
            field: Some("base".into()),
            value: Some(base),
            msg: format!(
                "no such system; use one of {}",
                SYSTEMS.map(|p| p.0).join(", ")
            ),
        });
    };
    pimkit_engine::arch::over_base(btext, bpath, Some((text, name)))
}

/// `spec` is a built-in system's name or a TOML file laid over the system its `base` key
/// names (default `dgx-h100`).
pub fn load(spec: &str) -> Result<System, ArchError> {
    if let Some(s) = builtin(spec) {
        return s;
    }
    let names = || SYSTEMS.map(|p| p.0).join(", ");
    let err = |msg: String| ArchError {
        file: spec.to_string(),
        field: None,
        value: None,
        msg,
    };
    let path = Path::new(spec);
    if !path.exists() {
        return Err(err(format!(
            "no such file and no such system; give a system TOML file or one of {}",
            names()
        )));
    }
    if path.is_dir() {
        return Err(err("is a directory; give a system .toml file".into()));
    }
    let text = std::fs::read_to_string(path)
        .map_err(|e| err(format!("cannot read it ({e}); give a system .toml file")))?;
    load_str(&text, spec)
}
