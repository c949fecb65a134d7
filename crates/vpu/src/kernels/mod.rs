//! QUINN's kernel library written against the [`Machine`](crate::machine::Machine)'s
//! vector-instruction and DMA interface. Every kernel computes the real integer results
//! into simulated memory; the cycle and traffic counters come from the same run.

pub mod conv1d;
pub mod conv2d;
pub mod depthwise;
pub mod matmul;

use crate::error::{Result, VpuError};
use crate::machine::{Elem, Machine, Xfer};
use crate::quant::IntRequant;
use serde::{Deserialize, Serialize};

/// The three stationary dataflows of quinn §3.2.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dataflow {
    Os,
    Is,
    Ws,
}

impl Dataflow {
    pub const ALL: [Dataflow; 3] = [Dataflow::Os, Dataflow::Is, Dataflow::Ws];
    pub fn name(self) -> &'static str {
        match self {
            Dataflow::Os => "OS",
            Dataflow::Is => "IS",
            Dataflow::Ws => "WS",
        }
    }
    pub fn parse(s: &str) -> Option<Dataflow> {
        match s.to_ascii_lowercase().as_str() {
            "os" => Some(Dataflow::Os),
            "is" => Some(Dataflow::Is),
            "ws" => Some(Dataflow::Ws),
            _ => None,
        }
    }
}

/// Output quantization shared by all kernels.
#[derive(Clone, Debug)]
pub struct OutQuant {
    pub elem: Elem,
    pub zp: i32,
    /// One requantizer (per tensor) or one per output channel / column.
    pub rq: Vec<IntRequant>,
}

impl OutQuant {
    pub fn range(&self) -> (i32, i32) {
        self.elem.range()
    }
    /// Requantizers for channels `c0..c0+n` (a slice of length 1 when per-tensor).
    pub fn slice(&self, c0: usize, n: usize) -> &[IntRequant] {
        if self.rq.len() == 1 {
            &self.rq[..]
        } else {
            &self.rq[c0..c0 + n]
        }
    }
    pub fn at(&self, c: usize) -> &[IntRequant] {
        self.slice(c, 1)
    }
    /// Requantize `rows` int32 accumulator registers from `reg` on VPU `q` (`len`
    /// elements each, row r with `rq(r)`) and write them out in the output type: row r
    /// to elements `at + r * row_elems` of `y`.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn store_rows<'a>(
        &'a self,
        m: &mut Machine,
        q: usize,
        reg: usize,
        rows: usize,
        len: usize,
        rq: impl Fn(usize) -> &'a [IntRequant],
        y: u64,
        at: usize,
        row_elems: usize,
    ) -> Result<()> {
        let (lo, hi) = self.range();
        for r in 0..rows {
            m.vrequant(q, reg + r, rq(r), self.zp, lo, hi, len);
        }
        let es = self.elem.size();
        m.dma_out(&Xfer::rows(
            q,
            reg,
            m.vlen,
            y + (at * es) as u64,
            self.elem,
            rows,
            len,
            row_elems * es,
        ))
    }
}

/// A weight zero point: per tensor or per output channel/column.
pub(crate) fn zp_at(zp: &[i32], c: usize) -> i32 {
    if zp.len() == 1 { zp[0] } else { zp[c] }
}

/// Where a block of int32 partial sums goes between K/C_in tiles of the IS and WS
/// dataflows: `rows` x `cols` values at element `at` of the spill buffer (rows
/// `row_elems` apart), held in registers `reg..reg + rows` of VPU `vpu`.
pub(crate) struct Spill {
    pub buf: Option<u64>,
    pub vpu: usize,
    pub reg: usize,
    pub at: usize,
    pub rows: usize,
    pub cols: usize,
    pub row_elems: usize,
}

impl Spill {
    fn xfer(&self, m: &Machine) -> Result<Xfer> {
        let sp = self
            .buf
            .ok_or_else(|| VpuError::Other("missing spill buffer (a pimkit-vpu bug)".into()))?;
        Ok(Xfer::rows(
            self.vpu,
            self.reg,
            m.vlen,
            sp + (self.at * 4) as u64,
            Elem::I32,
            self.rows,
            self.cols,
            self.row_elems * 4,
        ))
    }
    /// Spill the registers to memory.
    pub fn store(&self, m: &mut Machine) -> Result<()> {
        let x = self.xfer(m)?;
        m.dma_out(&x)
    }
    /// Reload the partial sums into the registers.
    pub fn reload(&self, m: &mut Machine) -> Result<()> {
        let x = self.xfer(m)?;
        m.dma_in(&x)
    }
}

#[cfg(test)]
mod timing_only_tests;
