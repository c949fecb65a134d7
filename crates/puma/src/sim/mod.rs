//! Event-driven simulator: functional 16-bit fixed point, timing and energy.
//!
//! Each core and each tile's send/receive unit is an agent with its own clock. Local
//! instructions (set, copy, alu, mvm, branches) only advance the agent's clock; idle
//! cycles are never stepped. Instructions touching shared state (load/store on the
//! tile's shared memory, send/receive) run as events in global time order, so shared
//! memory arbitration, valid/count blocking, network delivery and receive FIFOs are
//! resolved causally. An agent that cannot proceed parks until the state it waits on
//! changes; when no event is left and some agent is not halted, that is a deadlock,
//! reported with every blocked instruction.

mod alu;
mod energy;
mod exec;
mod nonideal;
mod packet;
mod pool;
mod wait;

pub use alu::erf;
pub use energy::Energy;

use crate::fixed::NumMode;
use crate::program::Program;
use pimkit_ir::Tensor;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Default cycle limit of a simulation ([`SimOptions::max_cycles`]): 10^9 cycles (1 s
/// of simulated time at 1 GHz). Real programs stay far below: the longest whole-network
/// run in docs/puma.md takes 5.9 M cycles (VGG16 at 32x32), and even VGG16's first
/// 224x224 convolution on one MVMU (50,176 sequential MVMs) takes about 90 M. A runaway
/// one-instruction loop reaches it in about 8 s of wall time (release build).
pub const DEFAULT_MAX_CYCLES: u64 = 1_000_000_000;

/// Largest accepted [`SimOptions::max_cycles`] (2^50): keeps every cycle sum of the
/// simulator far from u64 overflow (per-instruction latencies are bounded by the
/// architecture validation).
pub const MAX_CYCLES_LIMIT: u64 = 1 << 50;

#[derive(Clone, Debug)]
pub struct SimOptions {
    pub mode: NumMode,
    /// Stop with [`SimError::Timeout`] when an agent would run past this many cycles
    /// (a program that does not halt, e.g. an infinite loop). Default
    /// [`DEFAULT_MAX_CYCLES`]; at most [`MAX_CYCLES_LIMIT`]; CLI `--max-cycles`.
    pub max_cycles: u64,
    /// Return the final register file of this (tile, core) (tests, debugging).
    pub dump_core: Option<(usize, usize)>,
    /// Run every MVM through pimkit-analog's crossbar model (CLI `--nonideal`).
    pub nonideal: Option<pimkit_analog::mvmu::NonIdeal>,
    /// Relative output error (of the reference outputs' range) above which results
    /// carry a warning (`PumaResult::assess`).
    pub tolerance: f64,
    /// Timing noise for tests of synchronisation: (seed, max): every core instruction
    /// takes 0..=max extra cycles, drawn from a seeded generator. Outputs must not
    /// change, and no program may deadlock, whatever the seed.
    pub jitter: Option<(u64, u64)>,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            mode: NumMode::Exact,
            max_cycles: DEFAULT_MAX_CYCLES,
            dump_core: None,
            nonideal: None,
            tolerance: crate::fixed::DEFAULT_TOLERANCE,
            jitter: None,
        }
    }
}

/// One instruction that could not proceed at a deadlock.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Blocked {
    pub tile: usize,
    /// `None` for the tile's send/receive unit.
    pub core: Option<usize>,
    pub pc: usize,
    pub instr: String,
    pub reason: String,
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error("missing input `{0}` (the program's inputs: {1})")]
    MissingInput(String, String),
    /// An input tensor whose element type or shape differs from the program's.
    #[error(
        "input `{name}`: the program expects {expected}, got {got}; pass a tensor of exactly that type and shape (e.g. np.save(path, x.astype(np.float32).reshape(shape)))"
    )]
    InputShape {
        name: String,
        /// e.g. `f32[1, 16]`
        expected: String,
        got: String,
    },
    /// An input element that 16-bit fixed point cannot represent.
    #[error("input `{name}`: element {index} is NaN; PUMA's fixed-point words cannot hold NaN")]
    InputNaN { name: String, index: usize },
    /// A program whose manifest contradicts itself (e.g. an edited program directory).
    #[error("inconsistent program: {0}")]
    Program(String),
    #[error("invalid simulator option: {0}")]
    Options(String),
    #[error("deadlock at cycle {cycle}: {} blocked instruction(s): {}", blocked.len(), blocked.iter().map(|b| format!("tile {} {} pc {} `{}` ({})", b.tile, b.core.map(|c| format!("core {c}")).unwrap_or("unit".into()), b.pc, b.instr, b.reason)).collect::<Vec<_>>().join("; "))]
    Deadlock { cycle: u64, blocked: Vec<Blocked> },
    #[error("tile {tile} {who} pc {pc}: {msg}")]
    Fault {
        tile: usize,
        who: String,
        pc: usize,
        msg: String,
    },
    /// The program did not halt within `SimOptions::max_cycles`.
    #[error(
        "the program did not halt within {limit} cycles{}: {at}{}; if it really needs longer, raise the limit (`pimkit puma sim/run --max-cycles N`, library `SimOptions::max_cycles`, at most 2^50)",
        // Only past the default limit is a loop the likely cause; a lower limit was set
        // by the user and may simply be too low.
        if *limit >= DEFAULT_MAX_CYCLES { " (likely an infinite loop)" } else { " (an infinite loop, or a --max-cycles limit set too low)" },
        if others.is_empty() { String::new() } else { format!("; still running: {}", others.join("; ")) }
    )]
    Timeout {
        limit: u64,
        /// Where execution was when the limit was hit: tile, core (or unit), pc and
        /// instruction of the agent that crossed it.
        at: String,
        /// The other agents that had not halted (at most 8 listed).
        others: Vec<String>,
    },
}

/// Statistics of one simulated inference.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct SimStats {
    pub cycles: u64,
    pub latency_ns: f64,
    pub energy_nj: f64,
    pub energy_breakdown_nj: BTreeMap<String, f64>,
    /// Executed instructions per class (core and tile classes).
    pub instructions: BTreeMap<String, u64>,
    pub simulated_instructions: u64,
    pub tiles: usize,
    pub cores: usize,
    pub mvmus: usize,
    /// Mean fraction of the run each used MVMU spent computing.
    pub mvmu_utilization: f64,
    pub mvm_ops: u64,
    pub packets: u64,
    /// Results (MVM outputs, ALU results, input conversions) that did not fit their
    /// 16-bit word: saturated in exact mode, wrapped in bit-serial mode.
    #[serde(default)]
    pub saturations: u64,
    /// Initiation interval of a stream of inferences: the busy cycles per inference of
    /// the most loaded resource (core, MVMU, shared memory, send/receive unit, chip link).
    #[serde(default)]
    pub steady_state_cycles: u64,
    /// Inferences per second in the steady state (clock / `steady_state_cycles`); the
    /// latency of one inference is `latency_ns`.
    #[serde(default)]
    pub throughput_per_s: f64,
    /// The resource that sets the steady state.
    #[serde(default)]
    pub bottleneck: String,
}

pub struct SimOutput {
    pub outputs: Vec<Tensor>,
    pub stats: SimStats,
    /// Final registers of `SimOptions::dump_core`, with the core's halt cycle.
    pub core_dump: Option<(Vec<i32>, u64)>,
}

/// Check that `inputs` holds every input of `p` with the program's element type and
/// shape (what [`simulate`] checks first; `run_graph` calls it before the reference
/// interpreter so that both commands report a mismatch the same way).
pub fn check_inputs(p: &Program, inputs: &HashMap<String, Tensor>) -> Result<(), SimError> {
    for io in &p.inputs {
        let t = inputs.get(&io.name).ok_or_else(|| {
            SimError::MissingInput(
                io.name.clone(),
                p.inputs
                    .iter()
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        })?;
        exec::check_input(io, t)?;
    }
    Ok(())
}

/// Check `inputs` against the graph's inputs (element type and exact shape), as
/// [`check_inputs`] does against a program's: `run_graph` calls it before compiling,
/// since calibration runs the graph on the same inputs.
pub fn check_graph_inputs(
    g: &pimkit_ir::Graph,
    inputs: &HashMap<String, Tensor>,
) -> Result<(), SimError> {
    let names: Vec<&str> = g.inputs.iter().map(|&v| g.value(v).name.as_str()).collect();
    for &v in &g.inputs {
        let val = g.value(v);
        let t = inputs
            .get(&val.name)
            .ok_or_else(|| SimError::MissingInput(val.name.clone(), names.join(", ")))?;
        let io = crate::program::IoMap {
            name: val.name.clone(),
            shape: val.ty.shape.clone(),
            dtype: val.ty.dtype,
            tile: 0,
            addrs: vec![],
            counts: vec![],
            fracs: vec![],
        };
        exec::check_input(&io, t)?;
    }
    Ok(())
}

/// Run `p` on `inputs` (by graph input name).
pub fn simulate(
    p: &Program,
    inputs: &HashMap<String, Tensor>,
    opts: &SimOptions,
) -> Result<SimOutput, SimError> {
    let prof = std::env::var_os("PUMA_PROFILE").is_some();
    let t0 = std::time::Instant::now();
    let mut m = exec::Machine::new(p, opts, true)?;
    m.load_inputs(inputs)?;
    let t1 = std::time::Instant::now();
    let mut r = m.run();
    if m.inexact() {
        // Lazy waking could not be shown to match wake-all mode: run that instead.
        if prof {
            eprintln!("lazy waking inexact: re-running in wake-all mode");
        }
        drop(m);
        m = exec::Machine::new(p, opts, false)?;
        m.load_inputs(inputs)?;
        r = m.run();
    }
    r?;
    let t2 = std::time::Instant::now();
    let out = m.finish(opts.dump_core);
    if prof {
        eprintln!(
            "setup {:?} run {:?} finish {:?}",
            t1 - t0,
            t2 - t1,
            t2.elapsed()
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Arch, CompileOptions, compile};

    /// Run `p` with lazy or wake-all waking; (outputs as bits, stats, exactness flag).
    fn run(
        p: &Program,
        inputs: &HashMap<String, Tensor>,
        opts: &SimOptions,
        lazy: bool,
    ) -> (Vec<Vec<u32>>, SimStats, bool) {
        let mut m = exec::Machine::new(p, opts, lazy).unwrap();
        m.load_inputs(inputs).unwrap();
        m.run().unwrap();
        let inexact = m.inexact();
        let o = m.finish(None);
        let bits = o
            .outputs
            .iter()
            .map(|t| t.to_f32_vec().iter().map(|x| x.to_bits()).collect())
            .collect();
        (bits, o.stats, inexact)
    }

    /// Lazy waking (only agents whose words changed) gives bit-identical statistics and
    /// outputs to waking every waiter, in both arithmetic modes and with non-blocking
    /// MVMs, and needs no fallback on these programs; a repeated run on the same thread
    /// (recycled, not fully zeroed register files) gives the same result again.
    #[test]
    fn lazy_waking_matches_wake_all() {
        let cases: &[(&str, &[(&str, &str)])] = &[
            (
                "puma_lstm",
                &[
                    ("input", "32"),
                    ("hidden", "32"),
                    ("out", "16"),
                    ("seq", "3"),
                ],
            ),
            ("lenet5", &[]),
            // Full size: its instruction-memory energy depends on the replayed roundings
            // of skipped retries (`Waiters::settle_energy`) in the last bit.
            ("puma_lstm", &[]),
        ];
        for &(name, params) in cases {
            let params: Vec<(String, String)> = params
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            let g = pimkit_zoo::build(name, &params).unwrap();
            let inputs = pimkit_interp::random_inputs(&g, 0);
            for blocking in [true, false] {
                let mut arch = Arch::default();
                arch.core.mvm_blocking = blocking;
                let p = compile(&g, &arch, &CompileOptions::default()).unwrap();
                // Bit-serial MVMs are slow in debug builds: full-size models run exact only.
                let modes: &[NumMode] = if params.is_empty() {
                    &[NumMode::Exact]
                } else {
                    &[NumMode::Exact, NumMode::BitSerial]
                };
                for &mode in modes {
                    let opts = SimOptions {
                        mode,
                        ..SimOptions::default()
                    };
                    let all = run(&p, &inputs, &opts, false);
                    let lazy = run(&p, &inputs, &opts, true);
                    assert!(!lazy.2, "{name}: lazy waking fell back");
                    assert_eq!(
                        lazy.0, all.0,
                        "{name} {mode:?} blocking={blocking}: outputs"
                    );
                    assert_eq!(lazy.1, all.1, "{name} {mode:?} blocking={blocking}: stats");
                    let again = simulate(&p, &inputs, &opts).unwrap();
                    assert_eq!(again.stats, all.1, "{name}: repeated run");
                }
            }
        }
    }
}
