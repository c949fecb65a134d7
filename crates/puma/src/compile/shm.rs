//! Shared-memory allocation with liveness-based reuse that can never read stale data
//! or deadlock (docs/puma.md "Shared-memory reuse").
//!
//! A tile's shared memory is read by its agents (the cores with `load`, the send/receive
//! unit with `send`) and written by them (`store`, `receive`), one chunk of at most 16
//! words at a time. A word's reader count drops to 0 after its last reader, which lets
//! the next writer in; but a *reader* of the next value waits only for "valid", so if
//! it ran before the old value's last reader it would consume the old value, and a
//! writer that ran before the old value's writer would be overwritten by it. Words are
//! therefore reused only when, in every execution, the new value's writer follows the
//! old value's writes and each of its readers follows all of the old value's reads.
//!
//! That "follows" is a happens-before relation, tracked with vector clocks over the
//! tile's agents while code is emitted in the global order. Component `a` of a clock
//! counts the shared-memory chunks of agent `a` known to have completed. Edges:
//! * program order (an agent's own counter);
//! * write → read: a chunk that reads a value runs after the chunk that wrote it, hence
//!   after everything its writer had completed before that chunk;
//! * drain: a chunk that writes a word runs after every chunk that read the word's old
//!   value, and learns what those readers knew;
//! * sync: when an agent lacks the knowledge, another agent that has it stores a flag
//!   word that the first one loads (`Mem::sync` in `emit.rs`; one word per ordered pair
//!   of cores, written and read by that pair only, so it needs no further proof).
//!
//! A new value takes freed words only if its writer already follows the old writes
//! (or a core-to-core sync can make it) and every reader follows the old reads or can
//! be synced from cores; the unit, which cannot load a flag, must already follow. The
//! result is re-proved, word by word, by `check.rs`.

use super::trace::{Event, EventKind};

/// Vector clock over a tile's agents (cores, then the send/receive unit).
pub type Vc = Vec<u32>;

pub fn join(a: &mut [u32], b: &[u32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

pub fn covers(a: &[u32], b: &[u32]) -> bool {
    a.iter().zip(b).all(|(x, y)| x >= y)
}

/// When freed words are reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reuse {
    /// Never: every value gets fresh words (the original compiler).
    Off,
    /// Only once three quarters of the tile's words have been handed out: programs
    /// that fit in them are unchanged (a write into reused words may wait for the old
    /// readers); the last quarter stays for values whose readers cannot take freed words.
    #[default]
    WhenFull,
    /// Always prefer freed words (smallest footprint; tests of the checker).
    First,
}

/// A run of freed words that held one old value.
#[derive(Clone, Debug, PartialEq)]
struct Seg {
    start: u32,
    len: u32,
    /// Per agent: its last read chunk of the old value.
    rq: Vc,
    /// Per agent: its last write chunk of the old value.
    wq: Vc,
    /// What a writer that drains every word of the segment learns (`None` once the
    /// segment has been split: the knowledge may come from words outside it).
    know: Option<Vc>,
}

/// One allocated range (a value's or a spill's words on this tile); every word of a
/// slot is written (words nobody reads with count 0).
#[derive(Clone, Debug)]
pub struct Slot {
    pub addr: u32,
    pub len: u32,
    writer: usize,
    /// Writer's clock after its first write chunk.
    version: Option<Vc>,
    /// Learned by the writer once all its words are written (drain of old readers).
    drain: Vc,
    /// Old reads every reader of this slot must follow.
    pub need: Vc,
    /// Per agent: last read chunk / write chunk of this slot.
    rq: Vc,
    wq: Vc,
    /// Join of (clock before ⊔ own chunk) of the reads (drain knowledge once freed).
    know: Vc,
    pub freed: bool,
}

/// Shared memory of one tile.
pub struct TileShm {
    pub capacity: u32,
    /// Words `[0, bump)` have been handed out at least once.
    bump: u32,
    /// Flag words (syncs) live in `[top, capacity)`: one per ordered pair of cores,
    /// reserved when reuse is on.
    pub top: u32,
    /// Next flag word (grows down from `capacity`).
    flag_next: u32,
    pub high_water: u32,
    free: Vec<Seg>,
    reuse: Reuse,
    pub agents: usize,
    pub clock: Vec<Vc>,
    pub slots: Vec<Slot>,
    pub trace: Vec<Event>,
    record: bool,
}

/// Index of a slot in its tile.
pub type SlotId = u32;

/// A placement found for a new value.
struct Fit {
    start: u32,
    /// Free segments `i..j` are consumed (the last one possibly in part).
    i: usize,
    j: usize,
    syncs: usize,
}

impl TileShm {
    /// `agents` = cores + 1 (the unit is the last agent).
    pub fn new(capacity: u32, agents: usize, reuse: Reuse, record: bool) -> Self {
        let cores = agents as u32 - 1;
        let flags = if reuse == Reuse::Off {
            0
        } else {
            (cores * cores.saturating_sub(1)).min(capacity / 4)
        };
        TileShm {
            capacity,
            bump: 0,
            top: capacity - flags,
            flag_next: capacity,
            high_water: 0,
            free: Vec::new(),
            reuse,
            agents,
            clock: vec![vec![0; agents]; agents],
            slots: Vec::new(),
            trace: Vec::new(),
            record,
        }
    }

    fn unit(&self) -> usize {
        self.agents - 1
    }

    /// Words a value of `len` would need beyond what is handed out (for messages).
    pub fn need(&self, len: u32) -> u32 {
        self.bump + len + (self.capacity - self.top)
    }

    /// Syncs needed to reuse segments `i..j` for a value written by `writer` and read
    /// by `readers`; `None` if impossible (the unit would have to be synced).
    fn syncs_for(&self, i: usize, j: usize, writer: usize, readers: u128) -> Option<usize> {
        let n = self.agents;
        let mut rq = vec![0; n];
        let mut wq = vec![0; n];
        for s in &self.free[i..j] {
            join(&mut rq, &s.rq);
            join(&mut wq, &s.wq);
        }
        let unit = self.unit();
        let mut syncs = 0;
        let wl: Vec<usize> = (0..n).filter(|&a| self.clock[writer][a] < wq[a]).collect();
        if !wl.is_empty() {
            if writer == unit || wl.contains(&unit) {
                return None;
            }
            syncs += wl.len();
        }
        for r in (0..n).filter(|r| readers >> r & 1 == 1) {
            let lack: Vec<usize> = (0..n).filter(|&a| self.clock[r][a] < rq[a]).collect();
            if lack.is_empty() {
                continue;
            }
            if r == unit || lack.contains(&unit) {
                return None;
            }
            syncs += 1;
        }
        Some(syncs)
    }

    /// First fit over runs of contiguous freed segments (a run ending at the bump
    /// pointer may extend into fresh words); with `max_syncs = 0` only runs that need
    /// no sync.
    fn find(&self, len: u32, writer: usize, readers: u128, max_syncs: usize) -> Option<Fit> {
        let mut i = 0;
        while i < self.free.len() {
            let start = self.free[i].start;
            let mut end = start;
            let mut j = i;
            while end - start < len && j < self.free.len() && self.free[j].start == end {
                end += self.free[j].len;
                j += 1;
            }
            let fits = end - start >= len
                || (end == self.bump
                    && (self.bump as u64 + (len - (end - start)) as u64) <= self.top as u64);
            if fits
                && let Some(syncs) = self.syncs_for(i, j, writer, readers)
                && syncs <= max_syncs
            {
                return Some(Fit { start, i, j, syncs });
            }
            i += 1;
        }
        None
    }

    /// Allocate `len` words for a value that agent `writer` writes and `readers` (bit
    /// per agent) read. Returns the slot and the agents whose writes the writer must be
    /// synced with first (`Mem::sync`), or `None` when the tile is full.
    pub fn alloc(
        &mut self,
        len: u32,
        writer: usize,
        readers: u128,
    ) -> Option<(SlotId, Vec<usize>)> {
        let len = len.max(1);
        let reuse_first = self.reuse == Reuse::First;
        let fit = if self.reuse == Reuse::Off {
            None
        } else if reuse_first || (self.bump as u64 + len as u64) * 4 > self.top as u64 * 3 {
            self.find(len, writer, readers, 0)
                .or_else(|| self.find(len, writer, readers, usize::MAX))
        } else {
            None
        };
        let n = self.agents;
        let (addr, rq, wq, drain) = match fit {
            Some(f) => self.take(f, len),
            None => {
                if self.bump as u64 + len as u64 > self.top as u64 {
                    return None;
                }
                self.bump += len;
                (self.bump - len, vec![0; n], vec![0; n], vec![0; n])
            }
        };
        self.high_water = self.high_water.max(addr + len);
        let wsync: Vec<usize> = (0..n).filter(|&a| self.clock[writer][a] < wq[a]).collect();
        self.slots.push(Slot {
            addr,
            len,
            writer,
            version: None,
            drain,
            need: rq,
            rq: vec![0; n],
            wq: vec![0; n],
            know: vec![0; n],
            freed: false,
        });
        Some((self.slots.len() as SlotId - 1, wsync))
    }

    /// Consume the words of `f`: (address, old reads, old writes, drain knowledge).
    fn take(&mut self, f: Fit, len: u32) -> (u32, Vc, Vc, Vc) {
        let _ = f.syncs;
        let n = self.agents;
        let (mut rq, mut wq, mut drain) = (vec![0; n], vec![0; n], vec![0; n]);
        let stop = f.start + len;
        let mut k = f.i;
        for _ in f.i..f.j {
            let s = &mut self.free[k];
            join(&mut rq, &s.rq);
            join(&mut wq, &s.wq);
            let s_end = s.start + s.len;
            if s_end <= stop {
                if let Some(kn) = &s.know {
                    join(&mut drain, kn);
                }
                self.free.remove(k);
            } else {
                s.len = s_end - stop;
                s.start = stop;
                s.know = None;
                k += 1;
            }
        }
        if stop > self.bump {
            self.bump = stop;
        }
        (f.start, rq, wq, drain)
    }

    /// A flag word of the reserved area; `None` when it is used up.
    pub fn alloc_flag(&mut self) -> Option<u32> {
        if self.flag_next <= self.top {
            return None;
        }
        self.flag_next -= 1;
        Some(self.flag_next)
    }

    /// Words used, flags included (the simulator allocates this many).
    pub fn words_used(&self) -> u32 {
        if self.flag_next < self.capacity {
            self.capacity
        } else {
            self.high_water
        }
    }

    /// Agents that must sync to reader `r` before its first read of slot `s` (empty
    /// when `r` already follows the old reads). Prefers the slot's writer when it is a
    /// core that knows (after its last write it knows what the drain taught it).
    pub fn reader_syncs(&self, s: SlotId, r: usize) -> Vec<usize> {
        let slot = &self.slots[s as usize];
        let c = &self.clock[r];
        if covers(c, &slot.need) {
            return Vec::new();
        }
        let w = slot.writer;
        if w != self.unit() && w != r && covers(&self.clock[w], &slot.need) {
            return vec![w];
        }
        (0..self.agents)
            .filter(|&a| a != r && c[a] < slot.need[a])
            .collect()
    }

    /// `agent` writes `vec` chunks of `width` words at `addr` of slot `s` with reader
    /// count `count`; `last` when it is the slot's last write instruction.
    #[allow(clippy::too_many_arguments)]
    pub fn write(
        &mut self,
        pos: u32,
        agent: usize,
        s: SlotId,
        addr: u32,
        width: u32,
        vec: u32,
        count: u32,
        last: bool,
    ) {
        let slot = &mut self.slots[s as usize];
        if slot.version.is_none() {
            // Reading any word of the slot follows its first write chunk (the writer
            // writes its chunks in order) and what the writer did before.
            let mut v = self.clock[agent].clone();
            v[agent] += 1;
            slot.version = Some(v);
        }
        let c = &mut self.clock[agent];
        c[agent] += vec;
        slot.wq[agent] = c[agent];
        if last {
            let d = std::mem::take(&mut slot.drain);
            join(c, &d);
        }
        self.event(pos, agent, EventKind::Write, addr, width, vec, count);
    }

    /// `agent` reads `vec` chunks of `width` words at `addr` of slot `s`.
    pub fn read(&mut self, pos: u32, agent: usize, s: SlotId, addr: u32, width: u32, vec: u32) {
        let slot = &mut self.slots[s as usize];
        let c = &mut self.clock[agent];
        for _ in 0..vec {
            c[agent] += 1;
            join(&mut slot.know, c);
        }
        slot.rq[agent] = c[agent];
        if let Some(v) = &slot.version {
            let own = c[agent];
            join(c, v);
            c[agent] = own;
        }
        self.event(pos, agent, EventKind::Read, addr, width, vec, 0);
    }

    /// A read of persistent (preloaded constant) words: program order only.
    pub fn read_persistent(&mut self, pos: u32, agent: usize, addr: u32, width: u32, vec: u32) {
        self.clock[agent][agent] += vec;
        self.event(pos, agent, EventKind::Read, addr, width, vec, 0);
    }

    /// A flag write (`write`) or read (`!write`) of a sync: one chunk of one word.
    pub fn flag(&mut self, pos: u32, agent: usize, addr: u32, write: bool, version: Option<&Vc>) {
        let c = &mut self.clock[agent];
        c[agent] += 1;
        if let Some(v) = version {
            let own = c[agent];
            join(c, v);
            c[agent] = own;
        }
        let kind = if write {
            EventKind::Write
        } else {
            EventKind::Read
        };
        self.event(pos, agent, kind, addr, 1, 1, write as u32);
    }

    /// Preloaded words (inputs: `count` readers; constants: persistent).
    pub fn preload(&mut self, s: SlotId, addr: u32, len: u32, count: u32) {
        let n = self.agents;
        let slot = &mut self.slots[s as usize];
        if slot.version.is_none() {
            slot.version = Some(vec![0; n]);
        }
        self.event(0, u16::MAX as usize, EventKind::Init, addr, len, 1, count);
    }

    #[allow(clippy::too_many_arguments)]
    fn event(
        &mut self,
        pos: u32,
        agent: usize,
        kind: EventKind,
        addr: u32,
        width: u32,
        vec: u32,
        count: u32,
    ) {
        if self.record {
            self.trace.push(Event {
                pos,
                agent: agent as u16,
                kind,
                addr,
                width,
                vec,
                count,
            });
        }
    }

    /// The slot's value is dead on this tile: its words become reusable.
    pub fn free(&mut self, s: SlotId) {
        let slot = &mut self.slots[s as usize];
        if slot.freed || self.reuse == Reuse::Off {
            slot.freed = true;
            return;
        }
        slot.freed = true;
        let seg = Seg {
            start: slot.addr,
            len: slot.len,
            rq: std::mem::take(&mut slot.rq),
            wq: std::mem::take(&mut slot.wq),
            know: Some(std::mem::take(&mut slot.know)),
        };
        let i = self.free.partition_point(|x| x.start < seg.start);
        self.free.insert(i, seg);
        // Merge neighbours with identical tags (keeps the list short).
        for k in [i + 1, i] {
            if k == 0 || k >= self.free.len() {
                continue;
            }
            let (a, b) = (&self.free[k - 1], &self.free[k]);
            if a.start + a.len == b.start && a.rq == b.rq && a.wq == b.wq && a.know == b.know {
                self.free[k - 1].len += self.free[k].len;
                self.free.remove(k);
            }
        }
    }

    /// Why freed words cannot be used (debugging aid, `PUMA_DEBUG_SHM`).
    pub fn explain(&self, len: u32, writer: usize, readers: u128) -> String {
        let total: u32 = self.free.iter().map(|s| s.len).sum();
        let mut out = format!(
            "need {len} words; {} freed segments, {total} words; writer {writer} readers {readers:b}\n",
            self.free.len()
        );
        for (i, s) in self.free.iter().enumerate().take(12) {
            out.push_str(&format!(
                "  [{}, +{}) rq {:?} wq {:?} syncs {:?}\n",
                s.start,
                s.len,
                s.rq,
                s.wq,
                self.syncs_for(i, i + 1, writer, readers)
            ));
        }
        for a in 0..self.agents {
            out.push_str(&format!("  clock[{a}] = {:?}\n", self.clock[a]));
        }
        out
    }
}
