//! Compiler: graph IR → PUMA program.
//!
//! Passes (docs/puma.md "Compiler passes"):
//! 1. `lower`: every graph node becomes vector ops (VOps) on vectors of at most one
//!    crossbar width; weight matrices are partitioned into MVMU tiles, tiles feeding the
//!    same outputs are grouped on consecutive MVMUs/cores/tiles.
//! 2. `schedule`: one global linearization (post-order DFS from the outputs, i.e. each
//!    value is produced right before its consumers) and MVM coalescing.
//! 3. `codegen`: communication (store/load inside a tile, send/receive across tiles),
//!    shared-memory allocation, register allocation per class with spilling, code.
//! 4. `loops`: repeated instruction blocks (convolutions) rolled into loops.

mod alloc;
mod assemble;
pub mod check;
mod codegen;
mod emit;
mod fixed_point;
mod loops;
mod lower;
mod lower_attn;
mod lower_conv;
mod lower_ew;
mod lower_graph;
mod lower_nn;
mod lower_norm;
mod lower_shape;
mod plan;
mod regs;
pub mod replicate;
mod rows;
mod schedule;
mod shm;
pub mod trace;

use crate::arch::Arch;
use crate::isa::AluOp;
use crate::program::{MatrixInfo, Program};
use pimkit_ir::Graph;

pub use shm::Reuse;

/// Result of lowering.
pub struct Lowered {
    pub ops: Vec<VOp>,
    /// Weights of each used MVMU: (global MVMU index, `xbar²` raw values, their
    /// fraction bits).
    pub weights: Vec<(u32, Vec<i16>, u8)>,
    pub matrices: Vec<MatrixInfo>,
    /// Graph inputs: name, shape, logical element → (value, offset).
    pub inputs: Vec<(String, Vec<usize>, Vec<(VId, u32)>)>,
    /// Graph outputs: name, shape.
    pub outputs: Vec<(String, Vec<usize>)>,
    pub shape_only: bool,
    pub node_names: Vec<String>,
    /// Values whose calibrated magnitude no 16-bit word can hold (set by
    /// `fixed_point::assign`).
    pub out_of_range: Vec<crate::program::OutOfRange>,
}

#[derive(Debug, thiserror::Error)]
pub enum CompileError {
    #[error("node `{node}` ({op}): {msg}")]
    Unsupported {
        node: String,
        op: String,
        msg: String,
    },
    #[error("graph `{graph}`: {msg}")]
    Graph { graph: String, msg: String },
    #[error(
        "tile {tile}: shared memory overflows while placing a value of layer `{layer}`: it needs at least {need} words ({} bytes) but the architecture has {have} words ({} bytes) per tile; raise tile.shared_mem_words, use a smaller input, or simulate layer by layer (`pimkit puma run --per-layer`, docs/puma.md)",
        need * 2,
        have * 2
    )]
    SharedMemory {
        tile: usize,
        /// Graph node whose value did not fit (or "constants"/"inputs").
        layer: String,
        /// 16-bit words.
        need: usize,
        have: usize,
    },
    #[error(
        "tile {tile} core {core}: an operand of {words} words does not fit in the {have}-word data memory (raise core.data_mem_words)"
    )]
    Registers {
        tile: usize,
        core: usize,
        words: usize,
        have: usize,
    },
    #[error(
        "the program needs {tiles} tiles ({nodes} nodes of {per_node} tiles) but the architecture has node.count = {have} node(s); raise node.count in the architecture file (docs/puma.md \"Multi-node systems\")"
    )]
    Nodes {
        tiles: usize,
        nodes: usize,
        per_node: usize,
        have: usize,
    },
    #[error("internal compiler error: {0}")]
    Internal(String),
}

/// How values are represented in 16-bit words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fixed {
    /// Fraction bits chosen per tensor from its range: weights from their values,
    /// activations from calibration runs (docs/puma.md "Fixed point per tensor").
    #[default]
    PerTensor,
    /// Every word in the architecture's format (`fixed.frac_bits`, Q4.12): the
    /// original's arithmetic (`--fixed q4.12`).
    Uniform,
}

/// How grouped (depthwise) convolutions map onto crossbars.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Depthwise {
    /// Consecutive groups on the diagonal of one matrix (zeros between them): one MVM
    /// per output pixel (per column tile).
    #[default]
    BlockDiag,
    /// Each group's kernel as rows of a k·k·Cin/g-column matrix (the xbar engine's
    /// compact box): one MVM per group and output pixel, few MVMUs.
    Compact,
}

#[derive(Clone, Debug)]
pub struct CompileOptions {
    /// Merge independent MVMs of one core into one `mvm` (paper §5).
    pub coalesce: bool,
    /// Roll repeated instruction blocks into loops.
    pub loops: bool,
    /// Reuse of shared memory of dead values (docs/puma.md "Shared-memory reuse");
    /// `Off`: every value gets fresh words, as in the original compiler.
    pub reuse: Reuse,
    /// Prove the shared-memory schedule safe with the checker (`check.rs`) and fail
    /// with an internal error if it is not.
    pub check: bool,
    /// Weight copies per node name (replication; convolutions split their output
    /// columns among the copies). Missing nodes: one copy.
    pub replicas: std::collections::HashMap<String, usize>,
    pub fixed: Fixed,
    pub depthwise: Depthwise,
    /// Weight replication (`replicate.rs`); its plan adds to `replicas`.
    pub replicate: replicate::Replicate,
    /// Place at most this many MVMUs of a matrix on one tile (0: as many as fit), so
    /// that a layer's inputs and partial sums spread over more shared memories.
    pub spread: usize,
    /// Inputs whose value ranges choose the activation formats (`Fixed::PerTensor`);
    /// empty: the deterministic random inputs of `pimkit_interp::random_inputs(g, 0)`.
    pub calibration: Vec<std::collections::HashMap<String, pimkit_ir::Tensor>>,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            coalesce: true,
            loops: true,
            reuse: Reuse::WhenFull,
            check: true,
            replicas: Default::default(),
            fixed: Fixed::PerTensor,
            depthwise: Depthwise::BlockDiag,
            replicate: replicate::Replicate::Off,
            spread: 0,
            calibration: Vec::new(),
        }
    }
}

/// Id of a vector value (= the VOp that produces it).
pub type VId = u32;

/// A contiguous run of elements of a vector value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    pub v: VId,
    pub off: u32,
    pub len: u32,
}

/// Where a vector value lives / an op executes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Loc {
    /// Preloaded in the input tile's shared memory.
    InputTile,
    /// Preloaded (persistent) in every tile that reads it.
    Const,
    Core {
        tile: u32,
        core: u32,
    },
    OutputTile,
}

#[derive(Clone, Debug)]
pub enum Kind {
    Input,
    /// Real values, quantized in the op's format when preloaded.
    Const(Vec<f32>),
    /// MVM on global MVMU index `mvmu`; the input vector is the concatenation of pieces.
    Mvm {
        mvmu: u32,
        input: Vec<Piece>,
    },
    Alu {
        op: AluOp,
        a: Vec<Piece>,
        b: Option<Vec<Piece>>,
    },
    Alui {
        op: AluOp,
        a: Vec<Piece>,
        /// Real immediate (quantized with its own fraction bits, `fixed_point.rs`).
        imm: f32,
    },
    Gather(Vec<Piece>),
    /// Graph output `index` (pieces in logical order).
    Output {
        index: usize,
        pieces: Vec<Piece>,
    },
}

#[derive(Clone, Debug)]
pub struct VOp {
    pub kind: Kind,
    pub len: u32,
    pub loc: Loc,
    /// Graph node index (for messages).
    pub node: u32,
    /// Keep the value in shared memory even for readers on the producing core (feature
    /// maps: frees registers after every pixel so repeated blocks stay identical and can
    /// be rolled into loops).
    pub shm: bool,
    /// Feature-map row the op belongs to (`NO_ROW` for none): the unit of the
    /// row-streaming schedule (`rows.rs`).
    pub row: u32,
    /// Fraction bits of the value's 16-bit words (`fixed_point.rs`).
    pub frac: u8,
}

/// [`VOp::row`] of ops outside feature maps.
pub const NO_ROW: u32 = u32::MAX;

impl VOp {
    /// Operand piece lists.
    pub fn operands(&self) -> Vec<&[Piece]> {
        match &self.kind {
            Kind::Input | Kind::Const(_) => vec![],
            Kind::Mvm { input, .. } => vec![input],
            Kind::Alu { a, b, .. } => {
                let mut v = vec![a.as_slice()];
                if let Some(b) = b {
                    v.push(b);
                }
                v
            }
            Kind::Alui { a, .. } => vec![a],
            Kind::Gather(p) => vec![p],
            Kind::Output { pieces, .. } => vec![pieces],
        }
    }
}

/// Lowered + scheduled program before code generation (exposed for tests).
pub struct Schedule {
    pub ops: Vec<VOp>,
    /// Global linear order (op ids).
    pub order: Vec<VId>,
    /// Coalescing groups: op id of an Mvm → group leader.
    pub group_of: Vec<Option<VId>>,
    pub matrices: Vec<MatrixInfo>,
}

impl Schedule {
    /// Check that every value is produced before it is read in the global order and
    /// that every MVMU slot holds at most one weight (rows/cols of each matrix covered
    /// exactly once).
    pub fn verify(&self) -> Result<(), String> {
        let mut pos = vec![usize::MAX; self.ops.len()];
        for (i, &o) in self.order.iter().enumerate() {
            pos[o as usize] = i;
        }
        for (i, &o) in self.order.iter().enumerate() {
            for ps in self.ops[o as usize].operands() {
                for p in ps {
                    let pp = pos[p.v as usize];
                    let src = &self.ops[p.v as usize];
                    if pp == usize::MAX || pp >= i {
                        return Err(format!("op {o} reads value {} before it is produced", p.v));
                    }
                    if p.off + p.len > src.len {
                        return Err(format!("op {o} reads past the end of value {}", p.v));
                    }
                }
            }
        }
        check_matrices(&self.matrices)
    }
}

pub(crate) fn check_matrices(ms: &[MatrixInfo]) -> Result<(), String> {
    let mut slots = std::collections::HashSet::new();
    for m in ms {
        let mut cover = vec![0u8; m.rows * m.cols];
        for t in &m.tiles {
            if !slots.insert((t.tile, t.core, t.mvmu)) {
                return Err(format!(
                    "MVMU t{} c{} m{} holds two matrix tiles",
                    t.tile, t.core, t.mvmu
                ));
            }
            for r in t.row0..t.row0 + t.rows {
                for c in t.col0..t.col0 + t.cols {
                    cover[r * m.cols + c] += 1;
                }
            }
        }
        if let Some(i) = cover.iter().position(|&c| c != 1) {
            return Err(format!(
                "matrix {}: weight ({}, {}) is placed {} times",
                m.node,
                i / m.cols,
                i % m.cols,
                cover[i]
            ));
        }
    }
    Ok(())
}

/// `opts` with the replication plan's copies merged into `replicas`.
fn with_plan(
    g: &Graph,
    arch: &Arch,
    opts: &CompileOptions,
) -> Result<(CompileOptions, Option<replicate::Plan>), CompileError> {
    let plan = replicate::plan(g, arch, opts, opts.replicate)?;
    let mut o = opts.clone();
    if let Some(p) = &plan {
        for (k, v) in p.replicas() {
            let e = o.replicas.entry(k).or_insert(1);
            *e = (*e).max(v);
        }
    }
    Ok((o, plan))
}

/// With `PUMA_TIMINGS` set, each compiler pass's wall time on stderr (`puma timing:
/// PASS SECONDS`): the phases of `puma run` without a profiler (docs/puma.md
/// "Whole-run profile").
fn timed<T>(pass: &str, f: impl FnOnce() -> T) -> T {
    if std::env::var_os("PUMA_TIMINGS").is_none() {
        return f();
    }
    let t = std::time::Instant::now();
    let r = f();
    eprintln!("puma timing: {pass} {:.3}", t.elapsed().as_secs_f64());
    r
}

/// Lower and schedule (passes 1–2).
pub fn schedule(
    g: &Graph,
    arch: &Arch,
    opts: &CompileOptions,
) -> Result<(Schedule, Lowered), CompileError> {
    let mut lowered = timed("lower", || lower_graph::lower(g, arch, opts))?;
    if opts.fixed == Fixed::PerTensor {
        timed("fixed_point", || {
            fixed_point::assign(&mut lowered, g, arch, &opts.calibration)
        })?;
    }
    let sched = timed("linearize", || {
        schedule::linearize(&lowered, arch, opts.coalesce)
    });
    Ok((sched, lowered))
}

/// Compile a graph for `arch`.
pub fn compile(g: &Graph, arch: &Arch, opts: &CompileOptions) -> Result<Program, CompileError> {
    if let Some(v) = g.first_empty_value() {
        return Err(CompileError::Graph {
            graph: g.name.clone(),
            msg: format!(
                "value '{}' has a zero-size dimension {:?}; PUMA maps no empty tensors (remove the empty branch from the model)",
                v.name, v.ty.shape
            ),
        });
    }
    // Lowering keeps about 8 bytes of bookkeeping per tensor element; refuse graphs whose
    // bookkeeping cannot fit instead of aborting on the allocation.
    let elems = g
        .values
        .iter()
        .fold(0u64, |a, v| a.saturating_add(v.ty.numel() as u64));
    pimkit_ir::memory::check_fits(
        elems.saturating_mul(8),
        "compiling for PUMA (about 8 bytes per tensor element)",
    )
    .map_err(|msg| CompileError::Graph {
        graph: g.name.clone(),
        msg,
    })?;
    let (opts, plan) = with_plan(g, arch, opts)?;
    let (sched, lowered) = schedule(g, arch, &opts)?;
    sched.verify().map_err(CompileError::Internal)?;
    let mut p = compile_traced(g, arch, &opts, sched, lowered, opts.check)?.0;
    p.placement.replication = plan;
    Ok(p)
}

/// Code generation, loop rolling and the reuse check; also returns the trace.
fn compile_traced(
    g: &Graph,
    arch: &Arch,
    opts: &CompileOptions,
    sched: Schedule,
    lowered: Lowered,
    record: bool,
) -> Result<(Program, trace::Trace), CompileError> {
    let cg = codegen::CgOptions {
        reuse: opts.reuse,
        trace: record || opts.check,
    };
    let (mut prog, trace) = timed("codegen", || {
        codegen::generate(&sched, &lowered, arch, g, &cg)
    })?;
    if opts.loops {
        prog.placement.loops_rolled = timed("loops", || loops::roll_program(&mut prog));
    }
    if opts.check {
        timed("check", || check::check_program(&prog, &trace)).map_err(|e| {
            if std::env::var_os("PUMA_DEBUG_SHM").is_some()
                && let Some(pos) = e.0.split("global position ").nth(1)
                && let Ok(i) = pos
                    .split(|c: char| !c.is_ascii_digit())
                    .next()
                    .unwrap_or("")
                    .parse::<usize>()
                && let Some(&o) = sched.order.get(i)
            {
                eprintln!("op at position {i}: {:?}", sched.ops[o as usize]);
            }
            CompileError::Internal(format!("shared-memory schedule: {e}"))
        })?;
    }
    Ok((prog, trace))
}

/// Compile and return the shared-memory trace too (tests of the checker).
pub fn compile_with_trace(
    g: &Graph,
    arch: &Arch,
    opts: &CompileOptions,
) -> Result<(Program, trace::Trace), CompileError> {
    let (sched, lowered) = schedule(g, arch, opts)?;
    sched.verify().map_err(CompileError::Internal)?;
    compile_traced(g, arch, opts, sched, lowered, true)
}
