//! Reuse checker: replays the shared-memory trace word by word and proves, for every
//! tile, that
//! 1. a write to a word comes after every read of the word's previous value in the
//!    global order (so the write's wait for "invalid" ends: deadlock freedom);
//! 2. every read of a word happens after every read of the word's previous value in
//!    every execution (vector clocks over the tile's agents, the edges of `shm.rs`), so
//!    it cannot consume the previous value: no reused word is read after being
//!    overwritten, and none before;
//! 3. reader counts are exact: each value is read exactly `count` times, and no word of
//!    a compute tile is left valid;
//! 4. a write happens after the write of the word's previous value in every execution
//!    (it cannot overtake it);
//!
//! and that the trace is what the program does: each agent's loads, stores, sends and
//! receives, replayed from the code (control flow and address registers), equal its
//! events in the trace.
//!
//! The checker keeps its own per-word state (the allocator keeps per-value summaries),
//! so it re-derives the result rather than trusting the allocator's bookkeeping.

use super::trace::{Event, EventKind, Trace};
use crate::isa::{CoreInstr, IntOp, TileInstr};
use crate::program::{PERSISTENT, Program};
use std::collections::HashMap;

#[derive(Debug, Clone, PartialEq)]
pub struct CheckError(pub String);

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

type Vc = Vec<u32>;

fn join(a: &mut [u32], b: &[u32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

#[derive(Clone, PartialEq)]
struct WState {
    /// Reads left of the current value (`PERSISTENT`: never decremented).
    remaining: u32,
    /// Clock of the writer after the chunk that wrote the word.
    version: Vc,
    /// Last read instruction per agent of the previous value's reads of the word.
    rq_old: Vc,
    rq_cur: Vc,
    /// Write instruction (per agent) of the current value.
    wq_cur: Vc,
    /// Join of the readers' clocks before their reads of the current value.
    k_cur: Vc,
    /// (global position, agent) of the write of the current value (for messages).
    by: (u32, u16),
}

/// Statistics of a successful check.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckStats {
    pub events: usize,
    /// Writes that overwrote a word holding an earlier value (reuse).
    pub reused_writes: usize,
}

fn who(agent: u16, cores: usize) -> String {
    if agent == u16::MAX {
        "host".into()
    } else if agent as usize == cores {
        "unit".into()
    } else {
        format!("core {agent}")
    }
}

/// Check one tile's events (rules 1–4), chunk by chunk as the hardware runs them.
/// `compute`: the tile must end with no valid non-persistent word.
pub fn check_tile(
    tile: usize,
    events: &[Event],
    cores: usize,
    words: usize,
    compute: bool,
) -> Result<CheckStats, CheckError> {
    let agents = cores + 1;
    let zero = vec![0u32; agents];
    let blank = WState {
        remaining: 0,
        version: zero.clone(),
        rq_old: zero.clone(),
        rq_cur: zero.clone(),
        wq_cur: zero.clone(),
        k_cur: zero.clone(),
        by: (0, u16::MAX),
    };
    let mut states: Vec<WState> = vec![blank.clone()];
    let mut word: Vec<u32> = vec![0; words];
    let mut clock: Vec<Vc> = vec![zero.clone(); agents];
    let mut stats = CheckStats::default();
    let err = |e: &Event, w: usize, msg: String| {
        CheckError(format!(
            "tile {tile} {} (global position {}) word {w}: {msg}",
            who(e.agent, cores),
            e.pos
        ))
    };
    for e in events {
        stats.events += 1;
        if (e.addr + e.len()) as usize > words {
            return Err(err(
                e,
                (e.addr + e.len()) as usize - 1,
                format!("beyond the tile's {words} words"),
            ));
        }
        if e.kind == EventKind::Init {
            let id = states.len() as u32;
            states.push(WState {
                remaining: e.count,
                ..blank.clone()
            });
            for w in e.addr as usize..(e.addr + e.len()) as usize {
                if states[word[w] as usize].remaining != 0 {
                    return Err(err(e, w, "preloaded over a valid word".into()));
                }
                word[w] = id;
            }
            continue;
        }
        let a = e.agent as usize;
        for chunk in 0..e.vec {
            let lo = (e.addr + chunk * e.width) as usize;
            let hi = lo + e.width as usize;
            let before = clock[a].clone();
            let k = before[a] + 1;
            let mut mine = before.clone();
            mine[a] = k;
            let mut learned = zero.clone();
            let mut cache: Vec<(u32, u32)> = Vec::new();
            for w in lo..hi {
                let old = word[w];
                if let Some(c) = cache.iter().find(|c| c.0 == old) {
                    word[w] = c.1;
                    continue;
                }
                let s = &states[old as usize];
                let ns = if e.kind == EventKind::Write {
                    if s.remaining != 0 {
                        return Err(err(
                            e,
                            w,
                            if s.remaining == PERSISTENT {
                                "writes a persistent (constant) word".to_string()
                            } else {
                                format!(
                                    "overwritten while {} read(s) of its previous value come later in the global order (the write could wait forever)",
                                    s.remaining
                                )
                            },
                        ));
                    }
                    if let Some(q) = (0..agents).find(|&q| before[q] < s.wq_cur[q]) {
                        return Err(err(
                            e,
                            w,
                            format!(
                                "may run before {}'s write (chunk #{}) of the word's previous value and be overwritten by it",
                                who(q as u16, cores),
                                s.wq_cur[q]
                            ),
                        ));
                    }
                    if s.rq_cur.iter().any(|&x| x > 0) || s.wq_cur.iter().any(|&x| x > 0) {
                        stats.reused_writes += 1;
                    }
                    join(&mut learned, &s.k_cur);
                    let mut wq = zero.clone();
                    wq[a] = k;
                    WState {
                        remaining: e.count,
                        // A read of the word follows this chunk and what preceded it.
                        version: mine.clone(),
                        rq_old: s.rq_cur.clone(),
                        rq_cur: zero.clone(),
                        wq_cur: wq,
                        k_cur: zero.clone(),
                        by: (e.pos, e.agent),
                    }
                } else {
                    if s.remaining == 0 {
                        return Err(err(
                            e,
                            w,
                            "read when no value is pending there (its writer comes later, or the count is exhausted)".into(),
                        ));
                    }
                    if s.remaining == PERSISTENT {
                        cache.push((old, old));
                        continue;
                    }
                    if let Some(q) = (0..agents).find(|&q| before[q] < s.rq_old[q]) {
                        return Err(err(
                            e,
                            w,
                            format!(
                                "may run before {}'s read (chunk #{}) of the word's previous value and consume it (stale read)",
                                who(q as u16, cores),
                                s.rq_old[q]
                            ),
                        ));
                    }
                    join(&mut learned, &s.version);
                    let mut ns = s.clone();
                    ns.remaining -= 1;
                    ns.rq_cur[a] = ns.rq_cur[a].max(k);
                    join(&mut ns.k_cur, &mine);
                    ns
                };
                states.push(ns);
                let id = states.len() as u32 - 1;
                cache.push((old, id));
                word[w] = id;
            }
            let c = &mut clock[a];
            join(c, &learned);
            c[a] = k;
        }
        // Keep the state table bounded: compact when it is much larger than the words.
        if states.len() > 4 * words + 1024 {
            let mut remap: HashMap<u32, u32> = HashMap::new();
            let mut fresh = Vec::new();
            for w in word.iter_mut() {
                let id = *remap.entry(*w).or_insert_with(|| {
                    fresh.push(states[*w as usize].clone());
                    fresh.len() as u32 - 1
                });
                *w = id;
            }
            states = fresh;
        }
    }
    if compute {
        for (w, &id) in word.iter().enumerate() {
            let st = &states[id as usize];
            let r = st.remaining;
            if r != 0 && r != PERSISTENT {
                return Err(CheckError(format!(
                    "tile {tile} word {w}: {r} read(s) never happen (reader count too high) of the value {} wrote at global position {}",
                    who(st.by.1, cores),
                    st.by.0
                )));
            }
        }
    }
    Ok(stats)
}

/// One shared-memory access replayed from code: (is_write, addr, width, vec, count).
type Access = (bool, u32, u32, u32, u32);

/// Replay core `code` (control flow and address registers only) and list its
/// shared-memory instructions. Registers written from data (loads, ALU results) are
/// unknown; using one as an address is an error.
fn replay_core(code: &[CoreInstr], regs: usize, limit: u64) -> Result<Vec<Access>, String> {
    let mut r: Vec<Option<i64>> = vec![None; regs];
    let mut out = Vec::new();
    let mut pc = 0usize;
    let mut steps = 0u64;
    let get = |r: &[Option<i64>], i: u32| -> Result<i64, String> {
        r.get(i as usize)
            .copied()
            .flatten()
            .ok_or_else(|| format!("register {i} used as an address holds data"))
    };
    let clobber = |r: &mut [Option<i64>], d: u32, n: u32| {
        for x in r.iter_mut().skip(d as usize).take(n as usize) {
            *x = None;
        }
    };
    while let Some(ins) = code.get(pc) {
        steps += 1;
        if steps > limit {
            return Err("does not terminate within the replay limit".into());
        }
        let mut next = pc + 1;
        match *ins {
            CoreInstr::Set { d1, imm, vec } => {
                for x in r.iter_mut().skip(d1 as usize).take(vec as usize) {
                    *x = Some(imm as i64);
                }
            }
            CoreInstr::Copy { d1, r1, vec } => {
                for k in 0..vec as usize {
                    let v = r.get(r1 as usize + k).copied().flatten();
                    if let Some(x) = r.get_mut(d1 as usize + k) {
                        *x = v;
                    }
                }
            }
            CoreInstr::Load { d1, r1, width, vec } => {
                out.push((false, get(&r, r1)? as u32, width, vec, 0));
                clobber(&mut r, d1, width * vec);
            }
            CoreInstr::Store {
                d1,
                counter,
                width,
                vec,
                ..
            } => out.push((true, get(&r, d1)? as u32, width, vec, counter)),
            CoreInstr::Alu { d1, vec, .. } | CoreInstr::Alui { d1, vec, .. } => {
                clobber(&mut r, d1, vec)
            }
            CoreInstr::AluInt { op, d1, r1, r2 } => {
                let (a, b) = (get(&r, r1)?, get(&r, r2)?);
                let v = match op {
                    IntOp::Add => a + b,
                    IntOp::Sub => a - b,
                    IntOp::Mul => a * b,
                    IntOp::Div => a.checked_div(b).unwrap_or(0),
                    IntOp::Mod => a.checked_rem(b).unwrap_or(0),
                    IntOp::EqChk => (a == b) as i64,
                };
                if let Some(x) = r.get_mut(d1 as usize) {
                    *x = Some(v);
                }
            }
            CoreInstr::Beq { r1, r2, target } => {
                if get(&r, r1)? == get(&r, r2)? {
                    next = target as usize;
                }
            }
            CoreInstr::Jmp { target } => next = target as usize,
            CoreInstr::Hlt => break,
            CoreInstr::Mvm { .. } | CoreInstr::Nop => {}
        }
        pc = next;
    }
    Ok(out)
}

fn replay_tile(code: &[TileInstr]) -> Vec<Access> {
    code.iter()
        .filter_map(|i| match *i {
            TileInstr::Send {
                addr, width, vec, ..
            } => Some((false, addr, width, vec, 0)),
            TileInstr::Receive {
                addr,
                width,
                counter,
                vec,
                ..
            } => Some((true, addr, width, vec, counter)),
            TileInstr::Halt => None,
        })
        .collect()
}

/// Check the whole program against its trace. `compute_tiles` lists tiles whose words
/// must all be consumed at the end.
pub fn check_program(p: &Program, trace: &Trace) -> Result<CheckStats, CheckError> {
    let cores = p.arch.tile.cores;
    let mut total = CheckStats::default();
    for (t, events) in trace.tiles.iter().enumerate() {
        let tp = &p.tiles[t];
        // Code consistency, agent by agent.
        let mut per_agent: Vec<Vec<Access>> = vec![Vec::new(); cores + 1];
        for e in events {
            if e.kind == EventKind::Init {
                continue;
            }
            let c = if e.kind == EventKind::Write {
                e.count
            } else {
                0
            };
            per_agent[e.agent as usize].push((
                e.kind == EventKind::Write,
                e.addr,
                e.width,
                e.vec,
                c,
            ));
        }
        for (c, code) in tp.cores.iter().enumerate() {
            let got = replay_core(code, p.arch.reg_space(), 1 << 34)
                .map_err(|m| CheckError(format!("tile {t} core {c}: {m}")))?;
            compare(t, &who(c as u16, cores), &got, &per_agent[c])?;
        }
        let got = replay_tile(&tp.tile_code);
        compare(t, "unit", &got, &per_agent[cores])?;
        let words = tp.shmem_words_used.max(
            events
                .iter()
                .map(|e| (e.addr + e.len()) as usize)
                .max()
                .unwrap_or(0),
        );
        let compute = t >= crate::program::FIRST_COMPUTE_TILE;
        let s = check_tile(t, events, cores, words, compute)?;
        total.events += s.events;
        total.reused_writes += s.reused_writes;
    }
    Ok(total)
}

fn compare(t: usize, who: &str, code: &[Access], trace: &[Access]) -> Result<(), CheckError> {
    let i = code.iter().zip(trace).position(|(a, b)| a != b);
    let i = match i {
        Some(i) => i,
        None if code.len() == trace.len() => return Ok(()),
        None => code.len().min(trace.len()),
    };
    let show = |x: Option<&Access>| match x {
        Some(&(w, a, wd, v, c)) => format!(
            "{} [{a}, {}) in {v} chunk(s){}",
            if w { "write" } else { "read" },
            a + wd * v,
            if w {
                format!(" count {c}")
            } else {
                String::new()
            }
        ),
        None => "nothing".into(),
    };
    Err(CheckError(format!(
        "tile {t} {who}: shared-memory access #{i} of the code is {}, the compiler's trace says {}",
        show(code.get(i)),
        show(trace.get(i))
    )))
}
