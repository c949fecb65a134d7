//! The machine state and the event loop.

use super::energy::{Energy, reg_pj};
use super::packet::Packet;
use super::wait::Waiters;
use super::{Blocked, SimError, SimOptions, SimOutput, SimStats, alu, pool};
use crate::arch::Arch;
use crate::fixed::{self, Fmt, NumMode};
use crate::isa::{CORE_CLASSES, CoreInstr, IntOp, TILE_CLASSES, TileInstr};
use crate::program::{OUTPUT_TILE, PERSISTENT, Program};
use pimkit_ir::Tensor;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};

/// A core may run this many cycles of local instructions before yielding (keeps a
/// runaway loop from starving the event loop and lets max_cycles trigger).
const QUANTUM: u64 = 1 << 20;

/// Why an agent is parked (formatted only for deadlock reports).
#[derive(Clone, Copy)]
enum Park {
    Load(usize, usize),
    Store(usize, usize),
    Send(usize, usize),
    Fifo(u32),
    Drain(usize, usize),
}

impl Park {
    fn describe(self) -> String {
        match self {
            Park::Load(a, b) => format!("load waits for valid data at shared memory [{a}, {b})"),
            Park::Store(a, b) => {
                format!("store waits for readers to drain shared memory [{a}, {b})")
            }
            Park::Send(a, b) => format!("send waits for valid data at shared memory [{a}, {b})"),
            Park::Fifo(f) => format!("receive waits for a packet in FIFO {f}"),
            Park::Drain(a, b) => {
                format!("receive waits for readers to drain shared memory [{a}, {b})")
            }
        }
    }
}

struct CoreSt {
    regs: Vec<i32>,
    pc: usize,
    t: u64,
    chunk: u32,
    halted: bool,
    parked: Option<Park>,
    /// Per MVMU (at most 8, validated by the architecture): free time, busy cycles.
    mvmu_free: [u64; 8],
    mvmu_busy: [u64; 8],
    active: bool,
    /// Cycles the core advanced, and of them the cycles it waited for the shared
    /// memory: busy − waited is its share of a steady state.
    busy: u64,
    waited: u64,
}

struct TileSt {
    mem: Vec<i32>,
    count: Vec<u32>,
    edram_free: u64,
    /// Cycles the shared memory served accesses; cycles the unit sent or received.
    edram_busy: u64,
    unit_busy: u64,
    pc: usize,
    t: u64,
    chunk: u32,
    halted: bool,
    parked: Option<Park>,
    /// Receive FIFOs by id (= source tile), grown on first use.
    fifos: Vec<VecDeque<Packet>>,
    fifo_wait: Option<u32>,
}

struct NetQ {
    q: VecDeque<Packet>,
    last: u64,
}

pub struct Machine<'a> {
    p: &'a Program,
    arch: &'a Arch,
    fmt: Fmt,
    mode: NumMode,
    max_cycles: u64,
    ncores: usize,
    cores: Vec<CoreSt>,
    tiles: Vec<TileSt>,
    net: Vec<NetQ>,
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    /// Time at which the agent being stepped continues (it does not push itself).
    resched: Option<u64>,
    weights: Vec<Option<usize>>,
    /// Per weight block: the used (rows, cols) of the crossbar.
    used: Vec<(usize, usize)>,
    energy: Energy,
    core_counts: [u64; 12],
    tile_counts: [u64; 3],
    end: u64,
    packets: u64,
    mvm_ops: u64,
    /// Results that did not fit their word (saturated, or wrapped in bit-serial mode).
    unfit: u64,
    /// (xorshift state, largest delay) of `SimOptions::jitter`.
    jitter: Option<(u64, u64)>,
    /// Busy cycles of each directed chip-to-chip link (node × nodes + node) and the
    /// cycle each becomes free.
    link_busy: Vec<u64>,
    link_free: Vec<u64>,
    link_nodes: usize,
    trace: bool,
    split: fixed::Split,
    scratch: (Vec<i32>, Vec<i32>),
    /// Packet buffers returned after delivery, reused by later sends.
    pool: Vec<Vec<i32>>,
    /// Agents parked on shared memory (see `wait.rs`).
    waiters: Waiters,
    /// The event being processed: (time, agent).
    cur: (u64, u32),
    /// `--nonideal`: the MVMUs' crossbar model.
    analog: Option<super::nonideal::Analog>,
}

impl Drop for Machine<'_> {
    fn drop(&mut self) {
        let regs = self.cores.iter_mut().map(|c| std::mem::take(&mut c.regs));
        let (mem, count): (Vec<_>, Vec<_>) = self
            .tiles
            .iter_mut()
            .map(|t| (std::mem::take(&mut t.mem), std::mem::take(&mut t.count)))
            .unzip();
        pool::give_back(regs.chain(mem), count);
        // Packet queues and buffers (undelivered packets' too) for the next run.
        let queues = self.net.iter_mut().map(|n| std::mem::take(&mut n.q));
        let fifos = self
            .tiles
            .iter_mut()
            .flat_map(|t| std::mem::take(&mut t.fifos));
        pool::give_back_packets(std::mem::take(&mut self.pool), queues.chain(fifos));
    }
}

/// Zero every register the instructions of `code` can touch: the MVMU registers and,
/// per instruction, each register field with the instruction's longest range (an
/// over-estimate), in blocks of 16 words. Ranges past the register space fail
/// `check_regs` before any access.
fn zero_named(regs: &mut [i32], arch: &Arch, code: &[CoreInstr]) {
    const B: usize = 16;
    let n = regs.len();
    // One bit per block; the register field has 13 bits (≤ 8192 words, arch validation).
    let mut named = [0u64; 8192 / B / 64];
    if n > 8192 {
        regs.fill(0);
        return;
    }
    let mut mark = |lo: u64, hi: u64| {
        let hi = hi.min(n as u64) as usize;
        let lo = lo as usize;
        if lo < hi {
            for b in lo / B..hi.div_ceil(B) {
                named[b / 64] |= 1 << (b % 64);
            }
        }
    };
    mark(0, arch.data_mem_base() as u64);
    for ins in code {
        // Every register field with the instruction's longest range (an over-estimate).
        let (regs, len): (&[u32], u32) = match ins {
            CoreInstr::Set { d1, vec, .. } => (&[*d1], *vec),
            CoreInstr::Copy { d1, r1, vec } => (&[*d1, *r1], *vec),
            CoreInstr::Load {
                d1, r1, width, vec, ..
            }
            | CoreInstr::Store {
                d1, r1, width, vec, ..
            } => (&[*d1, *r1], width.saturating_mul(*vec)),
            CoreInstr::Alu {
                d1, r1, r2, vec, ..
            } => (&[*d1, *r1, *r2], *vec),
            CoreInstr::Alui { d1, r1, vec, .. } => (&[*d1, *r1], *vec),
            CoreInstr::AluInt { d1, r1, r2, .. } => (&[*d1, *r1, *r2], 1),
            CoreInstr::Beq { r1, r2, .. } => (&[*r1, *r2], 1),
            CoreInstr::Mvm { .. } | CoreInstr::Jmp { .. } | CoreInstr::Hlt | CoreInstr::Nop => {
                (&[], 0)
            }
        };
        for &r in regs {
            mark(r as u64, r as u64 + len.max(1) as u64);
        }
    }
    for b in 0..n.div_ceil(B) {
        if named[b / 64] >> (b % 64) & 1 == 1 {
            regs[b * B..((b + 1) * B).min(n)].fill(0);
        }
    }
}

/// Every counter > 0 (the words are valid): no early exit, so the compiler vectorizes
/// the 16-word chunks the ISA moves.
#[inline]
fn all_valid(counts: &[u32]) -> bool {
    counts.iter().fold(true, |ok, &n| ok & (n > 0))
}

/// Every counter 0 (all readers have read the words; a store may overwrite them).
#[inline]
fn all_drained(counts: &[u32]) -> bool {
    counts.iter().fold(0, |acc, &n| acc | n) == 0
}

/// One read of words whose counters are all > 0: each counter that is not
/// `PERSISTENT` drops by one (no branch per word); true when one reached 0 (the words
/// became invalid, which may wake a waiter).
#[inline]
fn read_once(counts: &mut [u32]) -> bool {
    debug_assert!(counts.iter().all(|&n| n > 0));
    let mut zero = false;
    for n in counts {
        *n -= (*n != PERSISTENT) as u32;
        zero |= *n == 0;
    }
    zero
}

/// The element type and shape of input `t` must be the program's (`io`).
pub(crate) fn check_input(io: &crate::program::IoMap, t: &Tensor) -> Result<(), SimError> {
    if t.dtype() != io.dtype || t.shape != io.shape {
        let ty = |d: pimkit_ir::DType, s: &[usize]| format!("{}{s:?}", d.name());
        return Err(SimError::InputShape {
            name: io.name.clone(),
            expected: ty(io.dtype, &io.shape),
            got: ty(t.dtype(), &t.shape),
        });
    }
    Ok(())
}

fn ins_fmt(i: &CoreInstr) -> Option<crate::isa::AluFmt> {
    match i {
        CoreInstr::Alu { fmt, .. } | CoreInstr::Alui { fmt, .. } => *fmt,
        // only ALU instructions carry a format
        _ => None,
    }
}

fn fault(tile: usize, who: Option<usize>, pc: usize, msg: impl Into<String>) -> SimError {
    SimError::Fault {
        tile,
        who: who
            .map(|c| format!("core {c}"))
            .unwrap_or_else(|| "tile unit".into()),
        pc,
        msg: msg.into(),
    }
}

/// Words of shared memory tile `t` of `p` has (what [`Machine::new`] allocates).
fn tile_words(p: &Program, t: usize) -> Option<usize> {
    let tp = p.tiles.get(t)?;
    Some(if tp.shmem_words_used > 0 {
        tp.shmem_words_used
    } else {
        p.arch.tile.shared_mem_words
    })
}

/// Every input and output map fits the program: one address per element, each inside
/// its tile's memory (outputs are read from the output tile). A program directory is a
/// file the user may have edited.
fn check_io(p: &Program) -> Result<(), SimError> {
    let maps = p.inputs.iter().map(|io| ("input", io, io.tile));
    let maps = maps.chain(p.outputs.iter().map(|io| ("output", io, OUTPUT_TILE)));
    for (kind, io, tile) in maps {
        let bad = |msg: String| SimError::Program(format!("{kind} `{}`: {msg}", io.name));
        let n = io
            .shape
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or_else(|| bad(format!("shape {:?} is too large", io.shape)))?;
        if n != io.addrs.len() {
            return Err(bad(format!(
                "shape {:?} has {n} elements but {} addresses are given",
                io.shape,
                io.addrs.len()
            )));
        }
        let words = tile_words(p, tile).ok_or_else(|| {
            bad(format!(
                "lives on tile {tile}, but the program has {} tiles",
                p.tiles.len()
            ))
        })?;
        if let Some(a) = io.addrs.iter().find(|&&a| a as usize >= words) {
            return Err(bad(format!(
                "address {a} is outside tile {tile}'s {words}-word memory"
            )));
        }
    }
    Ok(())
}

impl<'a> Machine<'a> {
    /// `lazy`: wake parked agents only when their words change (see `wait.rs`); the
    /// caller re-runs with `false` if [`Machine::inexact`] says that could differ.
    pub fn new(p: &'a Program, opts: &SimOptions, lazy: bool) -> Result<Self, SimError> {
        let arch = &p.arch;
        if opts.max_cycles == 0 {
            return Err(SimError::Options(
                "max_cycles (--max-cycles) = 0: no program finishes in 0 cycles; give at least 1 (default 10^9)".into(),
            ));
        }
        if opts.max_cycles > super::MAX_CYCLES_LIMIT {
            return Err(SimError::Options(format!(
                "max_cycles (--max-cycles) = {} exceeds the supported maximum {} (2^50)",
                opts.max_cycles,
                super::MAX_CYCLES_LIMIT
            )));
        }
        let nc = arch.tile.cores;
        let ntiles = p.tiles.len();
        check_io(p)?;
        let mut cores = Vec::with_capacity(ntiles * nc);
        for t in 0..ntiles {
            for c in 0..nc {
                let code = p.tiles[t].cores.get(c);
                let active = code.is_some_and(|c| c.len() > 1);
                cores.push(CoreSt {
                    regs: match code {
                        // Registers the code never names are never touched: only the
                        // named ones need zeroing (all of them for a dump).
                        Some(code) if active && opts.dump_core != Some((t, c)) => {
                            let mut r = pool::words_dirty(arch.reg_space());
                            zero_named(&mut r, arch, code);
                            r
                        }
                        _ if active => pool::words(arch.reg_space()),
                        _ => Vec::new(),
                    },
                    pc: 0,
                    t: 0,
                    chunk: 0,
                    halted: false,
                    parked: None,
                    mvmu_free: [0; 8],
                    mvmu_busy: [0; 8],
                    active,
                    busy: 0,
                    waited: 0,
                });
            }
        }
        let mut tiles = Vec::with_capacity(ntiles);
        for tp in &p.tiles {
            // Compiled programs record how much shared memory they use.
            let words = if tp.shmem_words_used > 0 {
                tp.shmem_words_used
            } else {
                arch.tile.shared_mem_words
            };
            let mut ts = TileSt {
                // Words are read only while valid (count > 0, set by the write that
                // stored them): old contents are never seen, no need to zero.
                mem: pool::words_dirty(words),
                // valid ⇔ count > 0 (a store or receive with counter 0 leaves the
                // words invalid; the last reader's decrement invalidates them).
                count: pool::counts(words),
                edram_free: 0,
                edram_busy: 0,
                unit_busy: 0,
                pc: 0,
                t: 0,
                chunk: 0,
                halted: false,
                parked: None,
                fifos: Vec::new(),
                fifo_wait: None,
            };
            for (a, data) in &tp.shmem_init {
                if *a as usize + data.len() > words {
                    return Err(SimError::Program(format!(
                        "tile {}: preloaded constants at shared memory [{a}, {}) lie beyond its {words} words",
                        tiles.len(),
                        *a as usize + data.len()
                    )));
                }
                for (k, &v) in data.iter().enumerate() {
                    let i = *a as usize + k;
                    ts.mem[i] = v as i32;
                    ts.count[i] = PERSISTENT;
                }
            }
            tiles.push(ts);
        }
        let mut weights = vec![None; ntiles * nc * arch.core.mvmus];
        for (i, w) in p.weights.iter().enumerate() {
            let k = (w.tile * nc + w.core) * arch.core.mvmus + w.mvmu;
            if k < weights.len() {
                weights[k] = Some(i);
            }
        }
        // Used block of each MVMU from the placement (the rest of a crossbar is zero).
        let xs = arch.mvmu.xbar_size;
        let mut used = vec![(xs, xs); p.weights.len()];
        for m in &p.placement.matrices {
            for t in &m.tiles {
                let k = (t.tile * nc + t.core) * arch.core.mvmus + t.mvmu;
                if let Some(&Some(i)) = weights.get(k) {
                    used[i] = (t.rows.min(xs), t.cols.min(xs));
                }
            }
        }
        let mut heap = BinaryHeap::new();
        let fill = arch.core.pipeline_fill_cycles;
        for (i, c) in cores.iter_mut().enumerate() {
            c.t = fill;
            if c.active {
                heap.push(Reverse((fill, i as u32)));
            } else {
                c.halted = true;
            }
        }
        for t in 0..ntiles {
            heap.push(Reverse((0, (ntiles * nc + t) as u32)));
        }
        let analog = match &opts.nonideal {
            Some(ni) => Some(super::nonideal::Analog::new(arch, ni, p.weights.len())?),
            None => None,
        };
        Ok(Machine {
            analog,
            p,
            arch,
            fmt: arch.fmt(),
            mode: opts.mode,
            max_cycles: opts.max_cycles,
            ncores: ntiles * nc,
            cores,
            tiles,
            net: (0..ntiles)
                .map(|_| NetQ {
                    q: pool::deque(),
                    last: 0,
                })
                .collect(),
            heap,
            resched: None,
            weights,
            used,
            energy: Energy::default(),
            core_counts: [0; 12],
            tile_counts: [0; 3],
            end: 0,
            packets: 0,
            mvm_ops: 0,
            unfit: 0,
            jitter: opts
                .jitter
                .map(|(seed, max)| (seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1, max)),
            link_busy: vec![0; ntiles.div_ceil(arch.node.tiles).pow(2)],
            link_free: vec![0; ntiles.div_ceil(arch.node.tiles).pow(2)],
            link_nodes: ntiles.div_ceil(arch.node.tiles),
            trace: std::env::var_os("PUMA_TRACE").is_some(),
            split: fixed::Split::new(),
            scratch: (Vec::new(), Vec::new()),
            pool: pool::packet_buffers(),
            // Lazy waking needs every wake-up to lie strictly after the change.
            waiters: Waiters::new(
                lazy && arch.tables().latency.edram_cycles > 0,
                ntiles,
                ntiles * nc + ntiles,
            ),
            cur: (0, 0),
        })
    }

    pub fn load_inputs(&mut self, inputs: &HashMap<String, Tensor>) -> Result<(), SimError> {
        let names = self
            .p
            .inputs
            .iter()
            .map(|i| i.name.clone())
            .collect::<Vec<_>>()
            .join(", ");
        for io in &self.p.inputs {
            let t = inputs
                .get(&io.name)
                .ok_or_else(|| SimError::MissingInput(io.name.clone(), names.clone()))?;
            check_input(io, t)?;
            let v = t.to_f32_vec();
            if v.len() != io.addrs.len() || io.counts.len() != io.addrs.len() {
                return Err(SimError::Program(format!(
                    "input `{}`: shape {:?} but {} addresses and {} reader counts",
                    io.name,
                    io.shape,
                    io.addrs.len(),
                    io.counts.len()
                )));
            }
            if let Some(i) = v.iter().position(|x| x.is_nan()) {
                return Err(SimError::InputNaN {
                    name: io.name.clone(),
                    index: i,
                });
            }
            let Some(ts) = self.tiles.get_mut(io.tile) else {
                return Err(SimError::Program(format!(
                    "input `{}` lives on tile {}, but the program has {} tiles",
                    io.name,
                    io.tile,
                    self.tiles.len()
                )));
            };
            if let Some(&a) = io.addrs.iter().find(|&&a| a as usize >= ts.mem.len()) {
                return Err(SimError::Program(format!(
                    "input `{}`: address {a} beyond tile {}'s {} shared-memory words",
                    io.name,
                    io.tile,
                    ts.mem.len()
                )));
            }
            for (i, ((&a, &c), &x)) in io.addrs.iter().zip(&io.counts).zip(&v).enumerate() {
                let a = a as usize;
                let f = match io.fracs.get(i) {
                    Some(&fr) => Fmt {
                        bits: self.fmt.bits,
                        frac: fr as u32,
                    },
                    None => self.fmt,
                };
                let s = (x as f64 * f.one() as f64).round();
                if s < f.min() as f64 || s > f.max() as f64 {
                    self.unfit += 1;
                }
                ts.mem[a] = f.from_f64(x as f64, self.mode);
                ts.count[a] = c;
            }
        }
        Ok(())
    }

    pub fn run(&mut self) -> Result<(), SimError> {
        let mut events = 0u64;
        let mut cur = self.heap.pop();
        let lazy = self.waiters.lazy();
        let c_imem = self.arch.tables().energy.core_imem_pj;
        while let Some(Reverse((now, a))) = cur {
            events += 1;
            if lazy {
                // Lazy waking relies on events running in key order.
                if (now, a) < self.cur {
                    self.waiters.inexact = true;
                }
                let x = &mut self.energy.instruction_memory;
                self.waiters.settle_energy(x, c_imem, self.cur, (now, a));
                if self.waiters.inexact {
                    return Ok(());
                }
            }
            self.cur = (now, a);
            if now > self.max_cycles {
                return Err(self.timeout(a as usize, now));
            }
            let i = a as usize;
            if i < self.ncores {
                self.step_core(i, now)?;
            } else {
                self.step_tile(i - self.ncores, now)?;
            }
            // An agent that rescheduled itself runs next without a heap round trip when
            // its event is the earliest: the order is exactly the heap's.
            cur = match self.resched.take() {
                Some(t) => match self.heap.peek_mut() {
                    Some(mut top) if top.0 < (t, a) => {
                        Some(std::mem::replace(&mut *top, Reverse((t, a))))
                    }
                    _ => Some(Reverse((t, a))),
                },
                None => self.heap.pop(),
            };
        }
        if std::env::var_os("PUMA_PROFILE").is_some() {
            eprintln!("events {events} mvms {}", self.mvm_ops);
        }
        let mut blocked = Vec::new();
        let nc = self.arch.tile.cores;
        for (i, c) in self.cores.iter().enumerate() {
            if !c.halted {
                let (t, k) = (i / nc, i % nc);
                blocked.push(Blocked {
                    tile: t,
                    core: Some(k),
                    pc: c.pc,
                    instr: self.p.tiles[t].cores[k]
                        .get(c.pc)
                        .map(|x| x.to_string())
                        .unwrap_or_default(),
                    reason: c
                        .parked
                        .map(Park::describe)
                        .unwrap_or_else(|| "not scheduled".into()),
                });
            }
        }
        for (t, u) in self.tiles.iter().enumerate() {
            if !u.halted {
                blocked.push(Blocked {
                    tile: t,
                    core: None,
                    pc: u.pc,
                    instr: self.p.tiles[t]
                        .tile_code
                        .get(u.pc)
                        .map(|x| x.to_string())
                        .unwrap_or_default(),
                    reason: u
                        .parked
                        .map(Park::describe)
                        .unwrap_or_else(|| "not scheduled".into()),
                });
            }
        }
        if !blocked.is_empty() {
            return Err(SimError::Deadlock {
                cycle: self.end,
                blocked,
            });
        }
        Ok(())
    }

    /// Where agent `i` is: "tile T core C pc P `instr`" (or "tile T unit pc P ...").
    fn locate(&self, i: usize) -> String {
        let nc = self.arch.tile.cores;
        let (who, pc, instr, parked) = if i < self.ncores {
            let (t, k) = (i / nc, i % nc);
            let c = &self.cores[i];
            let ins = self.p.tiles[t]
                .cores
                .get(k)
                .and_then(|code| code.get(c.pc))
                .map(|x| x.to_string());
            (format!("tile {t} core {k}"), c.pc, ins, c.parked)
        } else {
            let t = i - self.ncores;
            let u = &self.tiles[t];
            let ins = self.p.tiles[t].tile_code.get(u.pc).map(|x| x.to_string());
            (format!("tile {t} unit"), u.pc, ins, u.parked)
        };
        let mut s = format!("{who} pc {pc}");
        if let Some(ins) = instr {
            s.push_str(&format!(" `{ins}`"));
        }
        if let Some(p) = parked {
            s.push_str(&format!(" ({})", p.describe()));
        }
        s
    }

    /// The error for agent `a`'s event at `now` past `max_cycles`.
    fn timeout(&self, a: usize, now: u64) -> SimError {
        let at = format!("at cycle {now} {}", self.locate(a));
        let running: Vec<usize> = (0..self.ncores + self.tiles.len())
            .filter(|&i| i != a)
            .filter(|&i| {
                if i < self.ncores {
                    !self.cores[i].halted
                } else {
                    !self.tiles[i - self.ncores].halted
                }
            })
            .collect();
        let mut others: Vec<String> = running.iter().take(8).map(|&i| self.locate(i)).collect();
        if running.len() > 8 {
            others.push(format!("and {} more", running.len() - 8));
        }
        SimError::Timeout {
            limit: self.max_cycles,
            at,
            others,
        }
    }

    /// True when a lazy run may differ from wake-all mode: re-run with `lazy = false`.
    pub fn inexact(&self) -> bool {
        self.waiters.inexact
    }

    /// The counters of words `[lo, hi)` of `tile` changed; the change completes at `at`.
    fn wake_mem(&mut self, tile: usize, at: u64, lo: usize, hi: usize) {
        if at > self.max_cycles && self.waiters.lazy() {
            // A skipped wake-up past the limit would have raised Timeout.
            self.waiters.inexact = true;
        }
        self.waiters
            .wake(tile, at, lo, hi, self.cur, &mut self.heap);
    }

    #[inline]
    fn check_regs(&self, ci: usize, pc: usize, ranges: &[(u32, u32)]) -> Result<(), SimError> {
        let n = self.arch.reg_space() as u64;
        for &(a, len) in ranges {
            if a as u64 + len as u64 > n {
                return Err(self.reg_fault(ci, pc, a, len));
            }
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn reg_fault(&self, ci: usize, pc: usize, a: u32, len: u32) -> SimError {
        let n = self.arch.reg_space();
        let nc = self.arch.tile.cores;
        fault(
            ci / nc,
            Some(ci % nc),
            pc,
            format!("register range {a}+{len} outside the {n}-word register space"),
        )
    }

    /// Wait for MVMUs whose XbarIn/XbarOut a non-blocking instruction touches.
    #[inline]
    fn sync_mvmu(&mut self, ci: usize, addrs: &[u32]) {
        if self.arch.core.mvm_blocking {
            return;
        }
        let xs = self.arch.mvmu.xbar_size as u32;
        let m = self.arch.core.mvmus as u32;
        let c = &mut self.cores[ci];
        for &a in addrs {
            if a < self.arch.data_mem_base() {
                let k = ((a % (m * xs)) / xs) as usize;
                c.t = c.t.max(c.mvmu_free[k]);
            }
        }
    }

    /// Run core `ci` from `now`; its busy time grows by the cycles it advanced, less
    /// the cycles it waited for the shared memory (steady-state throughput).
    fn step_core(&mut self, ci: usize, now: u64) -> Result<(), SimError> {
        let c = &mut self.cores[ci];
        if c.halted {
            return Ok(());
        }
        c.t = c.t.max(now);
        let t_in = c.t;
        let r = self.step_core_inner(ci, now);
        let c = &mut self.cores[ci];
        c.busy += c.t.saturating_sub(t_in);
        r
    }

    fn step_core_inner(&mut self, ci: usize, now: u64) -> Result<(), SimError> {
        let p = self.p;
        let arch = self.arch;
        let nc = arch.tile.cores;
        let (tile, core) = (ci / nc, ci % nc);
        let code = &p.tiles[tile].cores[core];
        let tab = arch.tables();
        let (lat, e) = (&tab.latency, &tab.energy);
        {
            let c = &mut self.cores[ci];
            if c.halted {
                return Ok(());
            }
            c.t = c.t.max(now);
            c.parked = None;
        }
        loop {
            let pc = self.cores[ci].pc;
            let Some(ins) = code.get(pc) else {
                return Err(fault(
                    tile,
                    Some(core),
                    pc,
                    "ran past the end of the program (missing hlt)",
                ));
            };
            // Yield past the quantum, or past the cycle limit so that the event loop
            // stops a runaway loop at once (`now + QUANTUM` alone would let it run on).
            if self.cores[ci].t > now + QUANTUM || self.cores[ci].t > self.max_cycles {
                let t = self.cores[ci].t;
                self.resched = Some(t);
                return Ok(());
            }
            if self.cores[ci].chunk == 0 {
                self.core_counts[ins.class_index()] += 1;
                self.energy.instruction_memory += e.core_imem_pj;
            }
            let mut next = pc + 1;
            match *ins {
                CoreInstr::Load { d1, r1, width, vec }
                | CoreInstr::Store {
                    d1: r1,
                    r1: d1,
                    width,
                    vec,
                    ..
                } => {
                    let is_load = matches!(ins, CoreInstr::Load { .. });
                    // For a store, `r1` here is the address register and `d1` the source.
                    self.check_regs(ci, pc, &[(d1, width * vec), (r1, 1)])?;
                    self.sync_mvmu(ci, &[d1]);
                    if self.cores[ci].t > now {
                        let t = self.cores[ci].t;
                        self.resched = Some(t);
                        // Do not count the instruction twice.
                        if self.cores[ci].chunk == 0 {
                            self.core_counts[ins.class_index()] -= 1;
                            self.energy.instruction_memory -= e.core_imem_pj;
                        }
                        return Ok(());
                    }
                    let chunk = self.cores[ci].chunk;
                    let base = self.cores[ci].regs[r1 as usize];
                    let a = base as i64 + (chunk * width) as i64;
                    let ts = &self.tiles[tile];
                    if a < 0 || a as usize + width as usize > ts.mem.len() {
                        return Err(fault(
                            tile,
                            Some(core),
                            pc,
                            format!("shared-memory address {a} out of range"),
                        ));
                    }
                    let a = a as usize;
                    let w = width as usize;
                    let ok = if is_load {
                        all_valid(&ts.count[a..a + w])
                    } else {
                        all_drained(&ts.count[a..a + w])
                    };
                    if !ok {
                        let c = &mut self.cores[ci];
                        c.parked = Some(if is_load {
                            Park::Load(a, a + w)
                        } else {
                            Park::Store(a, a + w)
                        });
                        if chunk == 0 {
                            self.core_counts[ins.class_index()] -= 1;
                            self.energy.instruction_memory -= e.core_imem_pj;
                        }
                        self.waiters.park(tile, ci as u32, a, a + w, chunk == 0);
                        return Ok(());
                    }
                    let ts = &mut self.tiles[tile];
                    let start = now.max(ts.edram_free);
                    ts.edram_free = start + lat.edram_cycles;
                    ts.edram_busy += lat.edram_cycles;
                    let done = start + lat.edram_cycles;
                    self.cores[ci].waited += start - now;
                    if self.trace {
                        eprintln!(
                            "t={now} tile {tile} core {core} pc {pc} {} chunk {chunk} addr {a}",
                            if is_load { "load" } else { "store" }
                        );
                    }
                    let changed;
                    let dst = (d1 + chunk * width) as usize;
                    if is_load {
                        let c = &mut self.cores[ci];
                        c.regs[dst..dst + w].copy_from_slice(&ts.mem[a..a + w]);
                        // Every counter is > 0 here (checked above): one read each.
                        changed = read_once(&mut ts.count[a..a + w]);
                        self.energy.register_file += w as f64 * reg_pj(arch, e, d1, true);
                    } else {
                        let CoreInstr::Store { counter, .. } = *ins else {
                            unreachable!()
                        };
                        let c = &self.cores[ci];
                        for (m, &r) in ts.mem[a..a + w].iter_mut().zip(&c.regs[dst..dst + w]) {
                            *m = r as i16 as i32;
                        }
                        ts.count[a..a + w].fill(counter);
                        changed = true;
                        self.energy.register_file += w as f64 * reg_pj(arch, e, d1, false);
                    }
                    self.energy.edram(e);
                    if changed {
                        self.wake_mem(tile, done, a, a + w);
                    }
                    let c = &mut self.cores[ci];
                    c.t = done + lat.bus_cycles;
                    c.chunk += 1;
                    if c.chunk < vec {
                        continue;
                    }
                    c.chunk = 0;
                }
                CoreInstr::Set { d1, imm, vec } => {
                    self.check_regs(ci, pc, &[(d1, vec)])?;
                    if d1 < arch.data_mem_base() {
                        return Err(fault(
                            tile,
                            Some(core),
                            pc,
                            "set cannot write MVMU registers (ref §1.1)",
                        ));
                    }
                    let c = &mut self.cores[ci];
                    c.regs[d1 as usize..(d1 + vec) as usize].fill(imm);
                    c.t += lat.set_cycles_per_word * vec as u64;
                    self.energy.register_file += vec as f64 * e.data_mem_pj;
                }
                CoreInstr::Copy { d1, r1, vec } => {
                    self.check_regs(ci, pc, &[(d1, vec), (r1, vec)])?;
                    self.sync_mvmu(ci, &[d1, r1]);
                    let c = &mut self.cores[ci];
                    c.regs
                        .copy_within(r1 as usize..(r1 + vec) as usize, d1 as usize);
                    c.t += lat.copy_cycles;
                    self.energy.register_file +=
                        vec as f64 * (reg_pj(arch, e, r1, false) + reg_pj(arch, e, d1, true));
                }
                CoreInstr::Alu {
                    op, d1, r1, vec, ..
                }
                | CoreInstr::Alui {
                    op, d1, r1, vec, ..
                } => {
                    let (is_imm, r2v) = match *ins {
                        CoreInstr::Alu { r2, .. } => (false, r2 as i32),
                        CoreInstr::Alui { imm, .. } => (true, imm),
                        // the outer arm admits only Alu and Alui
                        _ => unreachable!(),
                    };
                    let unary = op.is_unary();
                    let r2 = if !is_imm && !unary { r2v as u32 } else { r1 };
                    self.check_regs(ci, pc, &[(d1, vec), (r1, vec), (r2, vec)])?;
                    self.sync_mvmu(ci, &[d1, r1]);
                    let c = &mut self.cores[ci];
                    // Operands may overlap the destination: copy them to scratch buffers
                    // (kept across instructions, no allocation).
                    let (a, b) = (&mut self.scratch.0, &mut self.scratch.1);
                    a.clear();
                    a.extend_from_slice(&c.regs[r1 as usize..(r1 + vec) as usize]);
                    b.clear();
                    if is_imm {
                        b.resize(vec as usize, r2v);
                    } else if !unary {
                        b.extend_from_slice(&c.regs[r2 as usize..(r2 + vec) as usize]);
                    }
                    let dst = &mut c.regs[d1 as usize..(d1 + vec) as usize];
                    let f = self.fmt.frac;
                    match ins_fmt(ins) {
                        Some(x) if (x.a as u32, x.b as u32, x.d as u32) != (f, f, f) => {
                            self.unfit += alu::apply_fmt(
                                self.fmt.bits,
                                self.mode,
                                op,
                                (x.a as u32, x.b as u32, x.d as u32),
                                a,
                                b,
                                dst,
                            );
                        }
                        _ => {
                            self.unfit += alu::count_unfit(self.fmt, op, a, b);
                            alu::apply(self.fmt, self.mode, op, a, b, dst);
                        }
                    }
                    c.t += (vec as u64).div_ceil(arch.core.alu_lanes).max(1)
                        * lat.alu_cycles
                        * op.passes();
                    self.energy.alu(e, op, vec as u64);
                    let reads = if unary || is_imm { 1.0 } else { 2.0 };
                    self.energy.register_file += vec as f64
                        * (reads * reg_pj(arch, e, r1, false) + reg_pj(arch, e, d1, true));
                }
                CoreInstr::AluInt { op, d1, r1, r2 } => {
                    self.check_regs(ci, pc, &[(d1, 1), (r1, 1), (r2, 1)])?;
                    let c = &mut self.cores[ci];
                    let (x, y) = (c.regs[r1 as usize], c.regs[r2 as usize]);
                    let v = match op {
                        IntOp::Add => x.wrapping_add(y),
                        IntOp::Sub => x.wrapping_sub(y),
                        IntOp::Mul => x.wrapping_mul(y),
                        IntOp::Div | IntOp::Mod if y == 0 => {
                            return Err(fault(tile, Some(core), pc, "alu_int division by zero"));
                        }
                        IntOp::Div => x.wrapping_div(y),
                        IntOp::Mod => x.wrapping_rem(y),
                        IntOp::EqChk => (x == y) as i32,
                    };
                    c.regs[d1 as usize] = v;
                    c.t += lat.scalar_cycles;
                    self.energy.register_file += 3.0 * e.data_mem_pj;
                }
                CoreInstr::Mvm { mask, shift, group } => {
                    let mv = arch.mvm_cycles();
                    let xs = arch.mvmu.xbar_size;
                    let mut start = self.cores[ci].t;
                    for m in 0..arch.core.mvmus {
                        if (mask >> m) & 1 == 1 {
                            start = start.max(self.cores[ci].mvmu_free[m]);
                        }
                    }
                    if mask >> arch.core.mvmus != 0 {
                        return Err(fault(
                            tile,
                            Some(core),
                            pc,
                            format!(
                                "mvm mask {mask:#b} names MVMUs beyond the {} of a core",
                                arch.core.mvmus
                            ),
                        ));
                    }
                    for m in 0..arch.core.mvmus {
                        if (mask >> m) & 1 == 0 {
                            continue;
                        }
                        let wi = self.weights[ci * arch.core.mvmus + m];
                        let c = &mut self.cores[ci];
                        let xin = m * xs;
                        let xout = arch.xbar_out_base() as usize + m * xs;
                        match wi {
                            Some(wi) => {
                                // Only the used top-left block of a crossbar is non-zero.
                                let (ru, cu) = self.used[wi];
                                let w = &p.weights[wi].data;
                                let shift = p.weights[wi].shift.unwrap_or(self.fmt.frac as i32);
                                // XbarIn lies below XbarOut; inputs are taken mod 2^16.
                                let (lo, hi) = c.regs.split_at_mut(xout);
                                self.unfit += super::nonideal::mvm_with(
                                    &mut self.analog,
                                    wi,
                                    &mut self.split,
                                    self.fmt,
                                    self.mode,
                                    shift,
                                    w,
                                    xs,
                                    ru,
                                    cu,
                                    &lo[xin..xin + xs],
                                    &mut hi[..ru],
                                );
                                c.regs[xout + ru..xout + xs].fill(0);
                            }
                            None => c.regs[xout..xout + xs].fill(0),
                        }
                        if shift > 0 && group > 0 {
                            let (s, g) = (shift as usize, group as usize);
                            for grp in c.regs[xin..xin + xs].chunks_mut(g) {
                                let n = grp.len();
                                for j in 0..n {
                                    grp[j] = if j + s < n { grp[j + s] } else { 0 };
                                }
                            }
                        }
                        c.mvmu_free[m] = start + mv;
                        c.mvmu_busy[m] += mv;
                        self.energy.mvm(arch, e);
                        self.mvm_ops += 1;
                    }
                    let c = &mut self.cores[ci];
                    c.t = if arch.core.mvm_blocking {
                        start + mv
                    } else {
                        start + 1
                    };
                }
                CoreInstr::Beq { r1, r2, target } => {
                    self.check_regs(ci, pc, &[(r1, 1), (r2, 1)])?;
                    let c = &mut self.cores[ci];
                    c.t += lat.scalar_cycles;
                    if c.regs[r1 as usize] == c.regs[r2 as usize] {
                        next = target as usize;
                        c.t += arch.core.branch_penalty_cycles;
                    }
                    self.energy.register_file += 2.0 * e.data_mem_pj;
                }
                CoreInstr::Jmp { target } => {
                    let c = &mut self.cores[ci];
                    c.t += lat.scalar_cycles;
                    next = target as usize;
                }
                CoreInstr::Nop => self.cores[ci].t += lat.scalar_cycles,
                CoreInstr::Hlt => {
                    let c = &mut self.cores[ci];
                    let done = c
                        .mvmu_free
                        .iter()
                        .copied()
                        .fold(c.t + lat.scalar_cycles, u64::max);
                    c.t = done;
                    c.halted = true;
                    self.end = self.end.max(done);
                    return Ok(());
                }
            }
            if let Some((state, max)) = &mut self.jitter {
                // Timing noise (tests): a random delay after each instruction.
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                self.cores[ci].t += *state % (*max + 1);
            }
            self.cores[ci].pc = next;
        }
    }

    fn try_deliver(&mut self, src: usize, now: u64) {
        let depth = self.arch.tile.receive_fifo_depth;
        let e = &self.arch.tables().energy;
        while let Some(pk) = self.net[src].q.front() {
            let (dst, fifo) = (pk.dst as usize, pk.fifo);
            let fifos = &mut self.tiles[dst].fifos;
            if fifos.len() <= fifo as usize {
                fifos.resize_with(fifo as usize + 1, pool::deque);
            }
            let f = &mut fifos[fifo as usize];
            if f.len() >= depth {
                break;
            }
            let mut pk = self.net[src].q.pop_front().unwrap();
            let arrival = pk.ready.max(self.net[src].last + 1).max(now);
            self.net[src].last = arrival;
            pk.arrival = arrival;
            f.push_back(pk);
            self.packets += 1;
            self.energy.network +=
                self.arch.network.flits_per_packet as f64 * e.router_flit_pj + e.receive_buffer_pj;
            self.end = self.end.max(arrival);
            if self.tiles[dst].fifo_wait == Some(fifo) {
                self.tiles[dst].fifo_wait = None;
                let a = (self.ncores + dst) as u32;
                self.heap.push(Reverse((arrival, a)));
            }
        }
    }

    fn step_tile(&mut self, t: usize, now: u64) -> Result<(), SimError> {
        let p = self.p;
        let arch = self.arch;
        let code = &p.tiles[t].tile_code;
        let tab = arch.tables();
        let (lat, e) = (&tab.latency, &tab.energy);
        if self.tiles[t].halted {
            return Ok(());
        }
        self.tiles[t].t = self.tiles[t].t.max(now);
        self.tiles[t].parked = None;
        loop {
            let pc = self.tiles[t].pc;
            let Some(ins) = code.get(pc) else {
                return Err(fault(
                    t,
                    None,
                    pc,
                    "ran past the end of the tile program (missing halt)",
                ));
            };
            if let TileInstr::Halt = ins {
                let u = &mut self.tiles[t];
                u.halted = true;
                self.tile_counts[2] += 1;
                self.energy.instruction_memory += e.tile_imem_pj;
                self.end = self.end.max(u.t);
                return Ok(());
            }
            if self.tiles[t].t > now {
                let tt = self.tiles[t].t;
                self.resched = Some(tt);
                return Ok(());
            }
            let chunk = self.tiles[t].chunk;
            match *ins {
                TileInstr::Send {
                    addr,
                    fifo,
                    width,
                    target,
                    vec,
                } => {
                    let a = (addr + chunk * width) as usize;
                    let w = width as usize;
                    let ntiles = self.tiles.len();
                    if target as usize >= ntiles || a + w > self.tiles[t].mem.len() {
                        return Err(fault(
                            t,
                            None,
                            pc,
                            "send target tile or address out of range",
                        ));
                    }
                    if !all_valid(&self.tiles[t].count[a..a + w]) {
                        self.tiles[t].parked = Some(Park::Send(a, a + w));
                        let me = (self.ncores + t) as u32;
                        self.waiters.park(t, me, a, a + w, false);
                        return Ok(());
                    }
                    let ts = &mut self.tiles[t];
                    let start = now.max(ts.edram_free);
                    ts.edram_free = start + lat.edram_cycles;
                    ts.edram_busy += lat.edram_cycles;
                    ts.unit_busy += lat.edram_cycles;
                    let done = start + lat.edram_cycles;
                    let mut data = self.pool.pop().unwrap_or_default();
                    data.clear();
                    data.extend_from_slice(&ts.mem[a..a + w]);
                    // Every counter is > 0 here (checked above): one read each.
                    let changed = read_once(&mut ts.count[a..a + w]);
                    ts.t = done;
                    let mut ready = done + arch.network.latency_cycles;
                    let (sn, dn) = (t / arch.node.tiles, target as usize / arch.node.tiles);
                    if sn != dn {
                        // The chip-to-chip link carries one packet at a time: it is busy
                        // for the packet's bytes at the link's bandwidth.
                        let k = sn * self.link_nodes + dn;
                        let start = done.max(self.link_free[k]);
                        let ser = arch.link_packet_cycles();
                        self.link_free[k] = start + ser;
                        self.link_busy[k] += ser;
                        ready = start
                            + arch.network.latency_cycles
                            + arch.network.inter_node_latency_cycles;
                        self.energy.network += e.inter_node_packet_pj;
                    }
                    self.energy.edram(e);
                    self.net[t].q.push_back(Packet {
                        dst: target,
                        fifo,
                        data,
                        ready,
                        arrival: 0,
                    });
                    self.try_deliver(t, now);
                    if changed {
                        self.wake_mem(t, done, a, a + w);
                    }
                    if chunk == 0 {
                        self.tile_counts[0] += 1;
                        self.energy.instruction_memory += e.tile_imem_pj;
                    }
                    let u = &mut self.tiles[t];
                    u.chunk += 1;
                    if u.chunk >= vec {
                        u.chunk = 0;
                        u.pc += 1;
                    }
                }
                TileInstr::Receive {
                    addr,
                    fifo,
                    width,
                    counter,
                    vec,
                } => {
                    let a = (addr + chunk * width) as usize;
                    let w = width as usize;
                    if a + w > self.tiles[t].mem.len() {
                        return Err(fault(t, None, pc, "receive address out of range"));
                    }
                    let front = self.tiles[t]
                        .fifos
                        .get(fifo as usize)
                        .and_then(|f| f.front())
                        .map(|pk| (pk.arrival, pk.data.len()));
                    let Some((arrival, plen)) = front else {
                        self.tiles[t].parked = Some(Park::Fifo(fifo));
                        self.tiles[t].fifo_wait = Some(fifo);
                        return Ok(());
                    };
                    if arrival > now {
                        self.tiles[t].t = arrival;
                        self.resched = Some(arrival);
                        return Ok(());
                    }
                    if plen != w {
                        return Err(fault(
                            t,
                            None,
                            pc,
                            format!("received a {plen}-word packet, instruction expects {w}"),
                        ));
                    }
                    if !all_drained(&self.tiles[t].count[a..a + w]) {
                        self.tiles[t].parked = Some(Park::Drain(a, a + w));
                        let me = (self.ncores + t) as u32;
                        self.waiters.park(t, me, a, a + w, false);
                        return Ok(());
                    }
                    let ts = &mut self.tiles[t];
                    let pk = ts.fifos[fifo as usize].pop_front().unwrap();
                    let start = now.max(ts.edram_free);
                    ts.edram_free = start + lat.edram_cycles;
                    ts.edram_busy += lat.edram_cycles;
                    ts.unit_busy += lat.edram_cycles;
                    let done = start + lat.edram_cycles;
                    ts.mem[a..a + w].copy_from_slice(&pk.data);
                    ts.count[a..a + w].fill(counter);
                    self.pool.push(pk.data);
                    ts.t = done;
                    self.energy.edram(e);
                    self.end = self.end.max(done);
                    self.try_deliver(fifo as usize, now);
                    self.wake_mem(t, done, a, a + w);
                    if chunk == 0 {
                        self.tile_counts[1] += 1;
                        self.energy.instruction_memory += e.tile_imem_pj;
                    }
                    let u = &mut self.tiles[t];
                    u.chunk += 1;
                    if u.chunk >= vec {
                        u.chunk = 0;
                        u.pc += 1;
                    }
                }
                TileInstr::Halt => unreachable!(),
            }
        }
    }

    pub fn finish(mut self, dump: Option<(usize, usize)>) -> SimOutput {
        let core_dump = dump.and_then(|(t, c)| {
            let i = t * self.arch.tile.cores + c;
            self.cores.get(i).map(|c| (c.regs.clone(), c.t))
        });
        let arch = self.arch;
        let tab = arch.tables();
        let nc = arch.tile.cores;
        let cycles = self.end;
        let mut cores_used = 0;
        let mut busy = 0u64;
        let mut mvmus = 0usize;
        for (i, c) in self.cores.iter().enumerate() {
            if c.active {
                cores_used += 1;
                self.energy.leakage += c.t as f64 * tab.leakage.core_pj_per_cycle;
            }
            for m in 0..arch.core.mvmus {
                if self.weights[i * arch.core.mvmus + m].is_some() {
                    mvmus += 1;
                    busy += c.mvmu_busy[m];
                }
            }
        }
        let ntiles = self.tiles.len();
        // Steady state: inferences stream through the pipeline one per initiation
        // interval, the busy time of its most loaded resource.
        let mut ii = (0u64, String::from("none"));
        let mut consider = |busy: u64, what: &dyn Fn() -> String| {
            if busy > ii.0 {
                ii = (busy, what());
            }
        };
        for (i, c) in self.cores.iter().enumerate() {
            let (t, k) = (i / nc, i % nc);
            if c.active {
                consider(c.busy.saturating_sub(c.waited), &|| {
                    format!("tile {t} core {k}")
                });
            }
            for m in 0..arch.core.mvmus {
                consider(c.mvmu_busy[m], &|| format!("tile {t} core {k} MVMU {m}"));
            }
        }
        for (t, ts) in self.tiles.iter().enumerate() {
            consider(ts.edram_busy, &|| format!("tile {t} shared memory"));
            consider(ts.unit_busy, &|| format!("tile {t} send/receive unit"));
        }
        for (k, &b) in self.link_busy.iter().enumerate() {
            let n = self.link_nodes;
            consider(b, &|| format!("link node {} -> node {}", k / n, k % n));
        }
        for t in 0..ntiles {
            let mut ht = self.tiles[t].t;
            for c in 0..nc {
                ht = ht.max(self.cores[t * nc + c].t.min(cycles));
            }
            self.energy.leakage += ht as f64 * tab.leakage.tile_pj_per_cycle;
        }
        self.energy.leakage += cycles as f64 * ntiles as f64 * tab.leakage.router_pj_per_cycle;
        let mut instructions = std::collections::BTreeMap::new();
        for (k, &n) in CORE_CLASSES.iter().zip(&self.core_counts) {
            instructions.insert(k.to_string(), n);
        }
        for (k, &n) in TILE_CLASSES.iter().zip(&self.tile_counts) {
            instructions.insert(k.to_string(), n);
        }
        let total_instr =
            self.core_counts.iter().sum::<u64>() + self.tile_counts.iter().sum::<u64>();
        let outputs = self
            .p
            .outputs
            .iter()
            .map(|io| {
                let ts = &self.tiles[OUTPUT_TILE];
                let v: Vec<f32> = io
                    .addrs
                    .iter()
                    .enumerate()
                    .map(|(i, &a)| {
                        let w = ts.mem[a as usize] as i16 as i32;
                        match io.fracs.get(i) {
                            Some(&f) => (w as f64 / (1u64 << f) as f64) as f32,
                            None => self.fmt.to_f64(w) as f32,
                        }
                    })
                    .collect();
                Tensor::from_f32(io.shape.clone(), v)
            })
            .collect();
        let stats = SimStats {
            cycles,
            latency_ns: cycles as f64 * arch.ns_per_cycle(),
            energy_nj: self.energy.total_pj() / 1000.0,
            energy_breakdown_nj: self.energy.breakdown_nj(),
            instructions,
            simulated_instructions: total_instr,
            tiles: self.p.placement.tiles_used,
            cores: cores_used,
            mvmus,
            mvmu_utilization: if mvmus > 0 && cycles > 0 {
                busy as f64 / (mvmus as f64 * cycles as f64)
            } else {
                0.0
            },
            mvm_ops: self.mvm_ops,
            packets: self.packets,
            saturations: self.unfit,
            steady_state_cycles: ii.0,
            throughput_per_s: if ii.0 > 0 {
                arch.clock_ghz * 1e9 / ii.0 as f64
            } else {
                0.0
            },
            bottleneck: ii.1,
        };
        SimOutput {
            outputs,
            stats,
            core_dump,
        }
    }
}
