//! Shared-memory allocation with liveness-based reuse that can never read stale data
//! (docs/puma.md "Shared-memory reuse").
//!
//! A tile's shared memory is read by its agents (the cores with `load`, the send/receive
//! unit with `send`) and written by them (`store`, `receive`). A word's reader count
//! drops to 0 after its last reader, which lets the next writer in, but a *reader* of
//! the next value waits only for "valid": if it ran before the old value's last reader,
//! it would consume the old value. Reuse is therefore allowed only when every reader of
//! the new value provably runs after every read of the old one.
//!
//! "Provably" is a happens-before relation tracked with vector clocks over the tile's
//! agents while code is emitted in the global order. Component `a` of an agent's clock
//! counts the shared-memory instructions of agent `a` known to have completed. Edges:
//! * program order (an agent's own counter);
//! * write → read: a read of a value has completed only after the value's first write
//!   instruction started, hence after everything its writer had completed before it;
//! * drain: a write to a word waits until the word's old readers are done, so after its
//!   last write instruction the writer knows what each old reader knew before its read.
//!
//! Freed words keep, per old value, `rq` (the last read instruction of each agent) and
//! `k` (for every word, the join of the clocks its readers had before reading; `k` is
//! the componentwise minimum over the value's words, so it holds whichever word is
//! drained). A new value may take freed words only if the clock of every agent that
//! will read it already covers `rq` of every old value there. Other values get fresh
//! words. The result is re-proved, word by word, by `check.rs`.

use super::trace::{Event, EventKind};

/// Vector clock over a tile's agents (cores, then the send/receive unit).
pub type Vc = Vec<u32>;

fn join(a: &mut [u32], b: &[u32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x = (*x).max(*y);
    }
}

fn covers(a: &[u32], b: &[u32]) -> bool {
    a.iter().zip(b).all(|(x, y)| x >= y)
}

/// A run of freed words that held one old value.
#[derive(Clone, Debug, PartialEq)]
struct Seg {
    start: u32,
    len: u32,
    /// Per agent: index of its last read instruction of the old value.
    rq: Vc,
    /// Per agent: index of its last write instruction of the old value.
    wq: Vc,
    /// Clocks every drain of one of these words teaches the writer.
    k: Vc,
}

/// One allocated range (a value's or a spill's words on this tile).
#[derive(Clone, Debug)]
pub struct Slot {
    pub addr: u32,
    pub len: u32,
    /// Writer's clock before its first write instruction.
    version: Option<Vc>,
    /// Learned by the writer once all its words are written (drain of old readers).
    drain: Vc,
    /// Reads so far: (start, len, agent, index, clock before the read).
    reads: Vec<(u32, u32, usize, u32, Vc)>,
    /// Per agent: its last write instruction of this slot.
    wq: Vc,
    /// `rq`/`wq` of the freed words this slot took (words it never writes keep them).
    inherit_rq: Vc,
    inherit_wq: Vc,
    pub freed: bool,
}

/// Shared memory of one tile.
pub struct TileShm {
    pub capacity: u32,
    /// Words `[0, bump)` have been handed out at least once.
    bump: u32,
    pub high_water: u32,
    free: Vec<Seg>,
    reuse: Reuse,
    agents: usize,
    clock: Vec<Vc>,
    pub slots: Vec<Slot>,
    pub trace: Vec<Event>,
    record: bool,
}

/// Index of a slot in its tile.
pub type SlotId = u32;

/// When freed words are reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reuse {
    /// Never: every value gets fresh words (the original compiler).
    Off,
    /// Only when the tile has no fresh words left: programs that fit without reuse are
    /// unchanged (a write into reused words may wait for the old readers).
    #[default]
    WhenFull,
    /// Always prefer freed words (smallest footprint; tests of the checker).
    First,
}

impl TileShm {
    /// `agents` = cores + 1 (the unit is the last agent).
    pub fn new(capacity: u32, agents: usize, reuse: Reuse, record: bool) -> Self {
        TileShm {
            capacity,
            bump: 0,
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

    /// Words a value of `len` would need beyond what is handed out (for messages).
    pub fn need(&self, len: u32) -> u32 {
        self.bump + len
    }

    /// Freed words qualify for a value that `writer` writes and `readers` read: the
    /// writer already knows the old value's writes happened (so it cannot overtake
    /// them), every reader that all of the old value's reads happened.
    fn qualifies(&self, seg: &Seg, writer: usize, readers: u128) -> bool {
        covers(&self.clock[writer], &seg.wq)
            && (0..self.agents)
                .filter(|a| readers >> a & 1 == 1)
                .all(|a| covers(&self.clock[a], &seg.rq))
    }

    /// Allocate `len` words for a value that agent `writer` writes and `readers` (bit
    /// per agent) read. Returns `None` when the tile is full.
    pub fn alloc(&mut self, len: u32, writer: usize, readers: u128) -> Option<SlotId> {
        let len = len.max(1);
        let n = self.agents;
        let mut drain = vec![0; n];
        let mut inherit = (vec![0; n], vec![0; n]);
        let addr = if self.reuse == Reuse::First {
            self.alloc_reused(len, writer, readers, &mut drain, &mut inherit)
                .or_else(|| self.alloc_fresh(len))?
        } else {
            self.alloc_fresh(len)
                .or_else(|| self.alloc_reused(len, writer, readers, &mut drain, &mut inherit))?
        };
        self.high_water = self.high_water.max(addr + len);
        self.slots.push(Slot {
            addr,
            len,
            version: None,
            drain,
            reads: Vec::new(),
            wq: vec![0; n],
            inherit_rq: inherit.0,
            inherit_wq: inherit.1,
            freed: false,
        });
        Some(self.slots.len() as SlotId - 1)
    }

    fn alloc_fresh(&mut self, len: u32) -> Option<u32> {
        if self.bump as u64 + len as u64 > self.capacity as u64 {
            return None;
        }
        self.bump += len;
        Some(self.bump - len)
    }

    /// First fit over runs of contiguous qualifying freed segments; a run that ends at
    /// the bump pointer may extend into fresh words.
    fn alloc_reused(
        &mut self,
        len: u32,
        writer: usize,
        readers: u128,
        drain: &mut Vc,
        inherit: &mut (Vc, Vc),
    ) -> Option<u32> {
        if self.reuse == Reuse::Off {
            return None;
        }
        let mut i = 0;
        while i < self.free.len() {
            if !self.qualifies(&self.free[i], writer, readers) {
                i += 1;
                continue;
            }
            let start = self.free[i].start;
            let mut end = start + self.free[i].len;
            let mut j = i + 1;
            while end - start < len
                && j < self.free.len()
                && self.free[j].start == end
                && self.qualifies(&self.free[j], writer, readers)
            {
                end += self.free[j].len;
                j += 1;
            }
            let fits = end - start >= len
                || (end == self.bump
                    && self.bump as u64 + (len - (end - start)) as u64 <= self.capacity as u64);
            if !fits {
                i = j;
                continue;
            }
            // Take [start, start + len) from segments i..j.
            let stop = start + len;
            let mut k = i;
            while k < self.free.len() && self.free[k].start < stop {
                let s = &mut self.free[k];
                join(drain, &s.k);
                join(&mut inherit.0, &s.rq);
                join(&mut inherit.1, &s.wq);
                let s_end = s.start + s.len;
                if s_end <= stop {
                    self.free.remove(k);
                } else {
                    s.len = s_end - stop;
                    s.start = stop;
                    k += 1;
                }
            }
            if stop > self.bump {
                self.bump = stop;
            }
            return Some(start);
        }
        None
    }

    /// Agent `agent`'s write instruction of `[addr, addr + len)` in slot `s` with reader
    /// count `count`; `last` when it is the slot's last write instruction.
    pub fn write(
        &mut self,
        pos: u32,
        agent: usize,
        s: SlotId,
        addr: u32,
        len: u32,
        count: u32,
        last: bool,
    ) {
        let before = self.clock[agent].clone();
        let slot = &mut self.slots[s as usize];
        if slot.version.is_none() {
            slot.version = Some(before);
        }
        let c = &mut self.clock[agent];
        c[agent] += 1;
        slot.wq[agent] = c[agent];
        if last {
            let d = std::mem::take(&mut slot.drain);
            join(c, &d);
        }
        if self.record {
            self.trace.push(Event {
                pos,
                agent: agent as u16,
                kind: EventKind::Write,
                addr,
                len,
                count,
            });
        }
    }

    /// Agent `agent`'s read instruction of `[addr, addr + len)` in slot `s`.
    pub fn read(&mut self, pos: u32, agent: usize, s: SlotId, addr: u32, len: u32) {
        let before = self.clock[agent].clone();
        let slot = &mut self.slots[s as usize];
        let k = before[agent] + 1;
        let c = &mut self.clock[agent];
        if let Some(v) = &slot.version {
            join(c, v);
        }
        c[agent] = k;
        slot.reads.push((addr - slot.addr, len, agent, k, before));
        if self.record {
            self.trace.push(Event {
                pos,
                agent: agent as u16,
                kind: EventKind::Read,
                addr,
                len,
                count: 0,
            });
        }
    }

    /// A read of a persistent (preloaded constant) word: program order only.
    pub fn read_persistent(&mut self, pos: u32, agent: usize, addr: u32, len: u32) {
        self.clock[agent][agent] += 1;
        if self.record {
            self.trace.push(Event {
                pos,
                agent: agent as u16,
                kind: EventKind::Read,
                addr,
                len,
                count: 0,
            });
        }
    }

    /// Preloaded words (inputs: `count` readers; constants: persistent).
    pub fn preload(&mut self, s: SlotId, addr: u32, len: u32, count: u32) {
        let slot = &mut self.slots[s as usize];
        if slot.version.is_none() {
            slot.version = Some(vec![0; self.agents]);
        }
        if self.record {
            self.trace.push(Event {
                pos: 0,
                agent: u16::MAX,
                kind: EventKind::Init,
                addr,
                len,
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
        let reads = std::mem::take(&mut slot.reads);
        let (addr, len) = (slot.addr, slot.len);
        let mut rq = std::mem::take(&mut slot.inherit_rq);
        let mut wq = std::mem::take(&mut slot.inherit_wq);
        join(&mut wq, &slot.wq);
        let n = self.agents;
        for r in &reads {
            rq[r.2] = rq[r.2].max(r.3);
        }
        // k = min over words of the join of the clocks before the reads covering them.
        let mut cuts: Vec<u32> = vec![0, len];
        for r in &reads {
            cuts.push(r.0.min(len));
            cuts.push((r.0 + r.1).min(len));
        }
        cuts.sort_unstable();
        cuts.dedup();
        let mut k: Option<Vc> = None;
        for w in cuts.windows(2) {
            let mut part = vec![0; n];
            for r in &reads {
                if r.0 < w[1] && r.0 + r.1 > w[0] {
                    join(&mut part, &r.4);
                }
            }
            k = Some(match k {
                None => part,
                Some(mut m) => {
                    for (x, y) in m.iter_mut().zip(&part) {
                        *x = (*x).min(*y);
                    }
                    m
                }
            });
        }
        let seg = Seg {
            start: addr,
            len,
            rq,
            wq,
            k: k.unwrap_or_else(|| vec![0; n]),
        };
        let i = self.free.partition_point(|x| x.start < addr);
        self.free.insert(i, seg);
        // Merge neighbours with identical tags (keeps the list short).
        if i + 1 < self.free.len() {
            let (a, b) = (&self.free[i], &self.free[i + 1]);
            if a.start + a.len == b.start && a.rq == b.rq && a.wq == b.wq && a.k == b.k {
                self.free[i].len += self.free[i + 1].len;
                self.free.remove(i + 1);
            }
        }
        if i > 0 {
            let (a, b) = (&self.free[i - 1], &self.free[i]);
            if a.start + a.len == b.start && a.rq == b.rq && a.wq == b.wq && a.k == b.k {
                self.free[i - 1].len += self.free[i].len;
                self.free.remove(i);
            }
        }
    }
}
