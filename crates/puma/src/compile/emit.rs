//! Emission of shared-memory instructions (load, store, send, receive), each recorded
//! with the allocator's clocks and in the trace.

use super::VId;
use super::shm::{SlotId, TileShm};
use crate::arch::Arch;
use crate::isa::{CoreInstr, TileInstr};
use crate::program::TileProgram;
use std::collections::HashMap;

/// Shared memory of every tile plus where each value lives there.
pub struct Mem {
    pub tiles: Vec<TileShm>,
    /// Per tile: value → its slot.
    pub addr_of: Vec<HashMap<VId, SlotId>>,
    /// Agent index of the tile's send/receive unit (= cores per tile).
    pub unit: usize,
    /// Position in the global order of the operation being emitted.
    pub pos: u32,
}

impl Mem {
    pub fn addr(&self, t: u32, s: SlotId) -> u32 {
        self.tiles[t as usize].slots[s as usize].addr
    }
    pub fn slot_of(&self, t: u32, v: VId) -> Option<SlotId> {
        self.addr_of[t as usize].get(&v).copied()
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
            Src::Slot(s) => ts.read(pos, core as usize, s, shm_addr + o, w * v),
            Src::Persistent => ts.read_persistent(pos, core as usize, shm_addr + o, w * v),
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
            w * v,
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
        mem.tiles[src as usize].read(pos, unit, ss, sa + o, w * v);
        tiles[dst as usize].tile_code.push(TileInstr::Receive {
            addr: da + o,
            fifo: src,
            width: w,
            counter,
            vec: v,
        });
        mem.tiles[dst as usize].write(pos, unit, ds, da + o, w * v, counter, last && k + 1 == n);
    }
}

/// Runs of equal non-zero counts: (start, len, count).
pub fn equal_runs(c: &[u32]) -> Vec<(u32, u32, u32)> {
    let mut out: Vec<(u32, u32, u32)> = Vec::new();
    for (i, &x) in c.iter().enumerate() {
        if x == 0 {
            continue;
        }
        if let Some(last) = out.last_mut()
            && last.2 == x
            && last.0 + last.1 == i as u32
        {
            last.1 += 1;
            continue;
        }
        out.push((i as u32, 1, x));
    }
    out
}
