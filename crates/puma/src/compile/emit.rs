//! Emission of shared-memory instructions (load, store, send, receive), each recorded
//! with the allocator's clocks and in the trace.

use super::shm::{SlotId, TileShm};
use super::{CompileError, VId};
use crate::arch::Arch;
use crate::isa::{CoreInstr, TileInstr};
use crate::program::TileProgram;
use std::collections::HashMap;

/// Shared memory of every tile plus where each value lives there.
pub struct Mem {
    pub tiles: Vec<TileShm>,
    /// Per tile: value → its slot and the value's first word held there (a slot holds
    /// the span of the words read on that tile).
    pub addr_of: Vec<HashMap<VId, (SlotId, u32)>>,
    /// Agent index of the tile's send/receive unit (= cores per tile).
    pub unit: usize,
    /// Position in the global order of the operation being emitted.
    pub pos: u32,
    /// Flag word of each ordered pair of cores of a tile: (tile, from, to) → address.
    pub flags: HashMap<(u32, usize, usize), u32>,
    /// Flag stores of syncs, to append to (tile, core)'s code at the end of the step.
    pub pending: Vec<(u32, u32, [CoreInstr; 2])>,
    /// Syncs emitted.
    pub syncs: usize,
}

impl Mem {
    /// Make core `to` of tile `t` follow everything core `from` has done so far: `from`
    /// stores the pair's flag word (count 1) and `to` loads it, right here in the
    /// global order. The word is written only by `from` and read only by `to`, in
    /// program order, so each load takes the store just before it.
    pub fn sync(
        &mut self,
        arch: &Arch,
        t: u32,
        from: usize,
        to: usize,
        to_code: &mut Vec<CoreInstr>,
    ) -> Result<(), CompileError> {
        if from == self.unit || to == self.unit || from == to {
            return Err(CompileError::Internal(format!(
                "tile {t}: a sync from agent {from} to agent {to} was requested (only core-to-core syncs exist)"
            )));
        }
        let ts = &mut self.tiles[t as usize];
        let addr = match self.flags.get(&(t, from, to)) {
            Some(&a) => a,
            None => {
                let a = ts.alloc_flag().ok_or_else(|| CompileError::SharedMemory {
                    tile: t as usize,
                    layer: "synchronisation flags".into(),
                    need: ts.need(1) as usize,
                    have: arch.tile.shared_mem_words,
                })?;
                self.flags.insert((t, from, to), a);
                a
            }
        };
        let ar = addr_reg(arch);
        let version = ts.clock[from].clone();
        ts.flag(self.pos, from, addr, true, None);
        self.pending.push((
            t,
            from as u32,
            [
                CoreInstr::Set {
                    d1: ar,
                    imm: addr as i32,
                    vec: 1,
                },
                CoreInstr::Store {
                    d1: ar,
                    r1: ar,
                    counter: 1,
                    width: 1,
                    vec: 1,
                },
            ],
        ));
        to_code.push(CoreInstr::Set {
            d1: ar,
            imm: addr as i32,
            vec: 1,
        });
        to_code.push(CoreInstr::Load {
            d1: ar,
            r1: ar,
            width: 1,
            vec: 1,
        });
        ts.flag(self.pos, to, addr, false, Some(&version));
        self.syncs += 1;
        Ok(())
    }

    pub fn addr(&self, t: u32, s: SlotId) -> u32 {
        self.tiles[t as usize].slots[s as usize].addr
    }
    pub fn slot_of(&self, t: u32, v: VId) -> Option<SlotId> {
        self.addr_of[t as usize].get(&v).map(|x| x.0)
    }
    /// Shared-memory address of word `off` of value `v` on tile `t`.
    pub fn word(&self, t: u32, v: VId, off: u32) -> Option<u32> {
        let &(s, lo) = self.addr_of[t as usize].get(&v)?;
        Some(self.addr(t, s) + off - lo)
    }
    /// Append the flag stores of this step's syncs to their cores' code.
    pub fn take_pending(&mut self) -> Vec<(u32, u32, [CoreInstr; 2])> {
        std::mem::take(&mut self.pending)
    }
}

/// Register holding shared-memory addresses for loads and stores.
pub(crate) fn addr_reg(arch: &Arch) -> u32 {
    arch.data_mem_base() + arch.core.data_mem_words as u32 - 1
}

/// Split `len` words into (offset, width, vec) transfers of at most `w` words.
fn transfers(len: u32, w: u32, max_vec: u32) -> Vec<(u32, u32, u32)> {
    let mut out = Vec::new();
    let full = len / w;
    let mut done = 0;
    while done < full {
        let v = (full - done).min(max_vec);
        out.push((done * w, w, v));
        done += v;
    }
    if !len.is_multiple_of(w) {
        out.push((full * w, len % w, 1));
    }
    out
}

/// How a load reads its slot.
#[derive(Clone, Copy)]
pub enum Src {
    Slot(SlotId),
    /// A preloaded constant (persistent words: no synchronisation).
    Persistent,
}

/// Core `core` of tile `t` loads `len` words at shared-memory `shm_addr` into `dst`.
#[allow(clippy::too_many_arguments)]
pub fn load(
    arch: &Arch,
    code: &mut Vec<CoreInstr>,
    mem: &mut Mem,
    t: u32,
    core: u32,
    src: Src,
    dst: u32,
    shm_addr: u32,
    len: u32,
) {
    let ar = addr_reg(arch);
    let pos = mem.pos;
    for (o, w, v) in transfers(len, arch.tile.max_transfer_words as u32, 4095) {
        code.push(CoreInstr::Set {
            d1: ar,
            imm: (shm_addr + o) as i32,
            vec: 1,
        });
        code.push(CoreInstr::Load {
            d1: dst + o,
            r1: ar,
            width: w,
            vec: v,
        });
        let ts = &mut mem.tiles[t as usize];
        match src {
            Src::Slot(s) => ts.read(pos, core as usize, s, shm_addr + o, w, v),
            Src::Persistent => ts.read_persistent(pos, core as usize, shm_addr + o, w, v),
        }
    }
}

/// Core `core` of tile `t` stores `len` words from `src` to slot `s` at `shm_addr`
/// with reader count `counter`; `last` when this is the slot's last store.
#[allow(clippy::too_many_arguments)]
pub fn store(
    arch: &Arch,
    code: &mut Vec<CoreInstr>,
    mem: &mut Mem,
    t: u32,
    core: u32,
    s: SlotId,
    shm_addr: u32,
    src: u32,
    len: u32,
    counter: u32,
    last: bool,
) {
    let ar = addr_reg(arch);
    let pos = mem.pos;
    let tr = transfers(len, arch.tile.max_transfer_words as u32, 4095);
    let n = tr.len();
    for (k, (o, w, v)) in tr.into_iter().enumerate() {
        code.push(CoreInstr::Set {
            d1: ar,
            imm: (shm_addr + o) as i32,
            vec: 1,
        });
        code.push(CoreInstr::Store {
            d1: ar,
            r1: src + o,
            counter,
            width: w,
            vec: v,
        });
        mem.tiles[t as usize].write(
            pos,
            core as usize,
            s,
            shm_addr + o,
            w,
            v,
            counter,
            last && k + 1 == n,
        );
    }
}

/// Tile `src` sends `len` words (slot `ss` at `sa`) to tile `dst` (slot `ds` at `da`),
/// received there with reader count `counter`; `last` for the slot's last receive.
#[allow(clippy::too_many_arguments)]
pub fn transfer(
    arch: &Arch,
    tiles: &mut [TileProgram],
    mem: &mut Mem,
    (src, ss, sa): (u32, SlotId, u32),
    (dst, ds, da): (u32, SlotId, u32),
    len: u32,
    counter: u32,
    last: bool,
) {
    let pos = mem.pos;
    let unit = mem.unit;
    let tr = transfers(len, arch.tile.max_transfer_words as u32, 255);
    let n = tr.len();
    for (k, (o, w, v)) in tr.into_iter().enumerate() {
        tiles[src as usize].tile_code.push(TileInstr::Send {
            addr: sa + o,
            fifo: src,
            width: w,
            target: dst,
            vec: v,
        });
        mem.tiles[src as usize].read(pos, unit, ss, sa + o, w, v);
        tiles[dst as usize].tile_code.push(TileInstr::Receive {
            addr: da + o,
            fifo: src,
            width: w,
            counter,
            vec: v,
        });
        mem.tiles[dst as usize].write(pos, unit, ds, da + o, w, v, counter, last && k + 1 == n);
    }
}

/// Runs of equal counts over the span of the non-zero ones: (start, len, count). Gaps
/// inside the span are written too, with count 0 (invalid), so that every word of a
/// slot is written and a reused slot drains all its words.
pub fn equal_runs(c: &[u32]) -> Vec<(u32, u32, u32)> {
    let mut out: Vec<(u32, u32, u32)> = Vec::new();
    let lo = c.iter().position(|&x| x > 0).unwrap_or(c.len());
    let hi = c.iter().rposition(|&x| x > 0).map_or(0, |i| i + 1);
    for (i, &x) in c.iter().enumerate().take(hi).skip(lo) {
        if let Some(last) = out.last_mut()
            && last.2 == x
        {
            last.1 += 1;
            continue;
        }
        out.push((i as u32, 1, x));
    }
    out
}
