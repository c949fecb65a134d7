//! pimkit-loops: the Torch-PIM candidate space. A graph is lowered to loop nests the way
//! Torch-MLIR lowers to linalg (no elementwise fusion), bufferized, analysed per nest,
//! compiled to C and timed natively on the host.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let g: pimkit_ir::Graph = unimplemented!();
//! let p = pimkit_loops::lower(&g)?;
//! println!("{}", p.dump());
//! let prof = pimkit_loops::profile(&p, 5)?;
//! let recs = pimkit_loops::records(&p, Some(&prof));
//! # Ok(()) }
//! ```

pub mod analysis;
mod bufferize;
pub mod codegen;
mod dump;
pub mod engine;
mod error;
mod fuse;
pub mod ir;
mod lower;
pub mod native;
pub mod profile;
mod records;
mod section;

pub use analysis::{AllocBytes, NestStats, analyze};
pub use dump::{dump, fmt_expr, fmt_index};
pub use engine::{Loops, LoopsOptions, LoopsOutput};
pub use error::{LoopsError, Result};
pub use ir::*;
pub use native::{NativeOptions, NativeProgram, Runner, compile, run};
pub use profile::{
    NestTiming, Profile, ProfileOptions, profile, profile_with, profile_with_progress,
};
pub use records::{AllocRecord, LowerReport, NestRecord, records, report};
pub use section::report_section;

/// Lower a graph to a bufferized loop-nest program, unfused as Torch-MLIR's pipeline
/// leaves it (one nest per linalg op).
pub fn lower(g: &pimkit_ir::Graph) -> Result<Program> {
    lower_with(g, &LowerOptions::default())
}

/// Lowering choices beyond Torch-PIM's pipeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LowerOptions {
    /// Inline single-use elementwise producers into their elementwise consumers, as
    /// MLIR's `linalg-fuse-elementwise-ops` would (silu: one nest instead of two).
    pub fuse_elementwise: bool,
}

/// Lower with options, then bufferize.
pub fn lower_with(g: &pimkit_ir::Graph, o: &LowerOptions) -> Result<Program> {
    let mut p = lower::lower_graph(g)?;
    if o.fuse_elementwise {
        fuse::fuse_elementwise(&mut p);
    }
    bufferize::bufferize(&mut p);
    Ok(p)
}

impl Program {
    /// The stable text form.
    pub fn dump(&self) -> String {
        dump::dump(self)
    }
    /// Static analysis of every nest.
    pub fn stats(&self) -> Vec<NestStats> {
        self.nests.iter().map(|n| analyze(self, n)).collect()
    }
}
