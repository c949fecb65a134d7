//! Energy accounting: access counts × per-access energies (ref §3.4), in pJ.

use crate::arch::{Arch, Energy as E};
use crate::isa::{AluClass, AluOp};
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct Energy {
    pub crossbar: f64,
    pub adc: f64,
    pub dac: f64,
    pub shift_add: f64,
    pub vfu: f64,
    pub register_file: f64,
    pub instruction_memory: f64,
    pub shared_memory: f64,
    pub network: f64,
    pub leakage: f64,
}

/// Register-access energy of one word at a core address.
pub fn reg_pj(arch: &Arch, e: &E, addr: u32, write: bool) -> f64 {
    if addr < arch.xbar_out_base() {
        if write {
            e.xbar_in_write_pj
        } else {
            e.xbar_in_read_pj / arch.mvmu.xbar_size as f64
        }
    } else if addr < arch.data_mem_base() {
        e.xbar_out_pj
    } else {
        e.data_mem_pj
    }
}

impl Energy {
    /// One MVM on one MVMU: per stream, every physical crossbar is read, each column
    /// converted by the ADC and combined by shift-and-add (ref §3.4 counts).
    pub fn mvm(&mut self, arch: &Arch, e: &E) {
        let s = arch.streams() as f64;
        let x = arch.xbars_per_mvmu() as f64;
        let n = arch.mvmu.xbar_size as f64;
        self.crossbar += s * x * e.xbar_pj;
        self.adc += s * n * x * e.adc_pj;
        self.dac += s * n * e.dac_pj + s * n * x * e.snh_pj;
        self.shift_add += s * n * (x + 1.0) * e.shift_add_pj;
        self.register_file += s * e.xbar_in_read_pj + 2.0 * s * n * e.xbar_out_pj;
    }

    pub fn alu(&mut self, e: &E, op: AluOp, n: u64) {
        let per = match op.class() {
            AluClass::Simple => e.alu_simple_pj,
            AluClass::Mul => e.alu_mul_pj,
            AluClass::Div => e.alu_div_pj,
            AluClass::Transcendental => e.alu_simple_pj + e.transcendental_pj,
        };
        self.vfu += per * (n * op.passes()) as f64;
    }

    /// One 256-bit shared-memory access (eDRAM + bus + controller + attribute counter).
    pub fn edram(&mut self, e: &E) {
        self.shared_memory += e.edram_pj + e.edram_bus_pj + e.edram_ctrl_pj + e.counter_pj;
    }

    pub fn total_pj(&self) -> f64 {
        self.crossbar
            + self.adc
            + self.dac
            + self.shift_add
            + self.vfu
            + self.register_file
            + self.instruction_memory
            + self.shared_memory
            + self.network
            + self.leakage
    }

    pub fn breakdown_nj(&self) -> BTreeMap<String, f64> {
        [
            ("crossbar", self.crossbar),
            ("adc", self.adc),
            ("dac", self.dac),
            ("shift_add", self.shift_add),
            ("vfu", self.vfu),
            ("register_file", self.register_file),
            ("instruction_memory", self.instruction_memory),
            ("shared_memory", self.shared_memory),
            ("network", self.network),
            ("leakage", self.leakage),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v / 1000.0))
        .collect()
    }
}
