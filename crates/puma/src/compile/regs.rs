//! Register allocation per core (paper §5, "Register allocation": separate classes):
//! XbarIn is filled right before each `mvm`, XbarOut holds MVM results until the MVMU
//! runs again, general registers are allocated first-fit with liveness; when they run
//! out, the live value with the furthest next use is spilled to shared memory.

use super::alloc::RangeAlloc;
use super::emit::{self, Mem, Src};
use super::{CompileError, Loc, Piece, Schedule, VId};
use crate::arch::Arch;
use crate::isa::CoreInstr;
use std::collections::{HashMap, HashSet, VecDeque};

/// Registers reserved at the top of the data memory: the shared-memory address
/// register and registers for rolled loops.
pub const RESERVED_REGS: u32 = 24;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Res {
    Gen(u32),
    XOut(u32),
}

pub struct CoreState {
    pub code: Vec<CoreInstr>,
    pub regs: RangeAlloc,
    pub resident: HashMap<VId, Res>,
    /// Spilled value → its slot in the tile's shared memory.
    pub spilled: HashMap<VId, u32>,
    pub uses: HashMap<VId, VecDeque<usize>>,
    pub xout: Vec<Option<VId>>,
}

impl CoreState {
    pub fn new(arch: &Arch) -> Self {
        let gen_regs = arch.core.data_mem_words as u32 - RESERVED_REGS;
        CoreState {
            code: Vec::new(),
            regs: RangeAlloc::new(0, gen_regs),
            resident: HashMap::new(),
            spilled: HashMap::new(),
            uses: HashMap::new(),
            xout: vec![None; arch.core.mvmus],
        }
    }
}

/// The core being emitted for, at a position of the global order.
pub struct Gen<'a> {
    pub arch: &'a Arch,
    pub s: &'a Schedule,
    pub tile: u32,
    pub core: u32,
    pub pos: usize,
}

impl Gen<'_> {
    fn dm_base(&self) -> u32 {
        self.arch.data_mem_base()
    }

    fn me(&self) -> Loc {
        Loc::Core {
            tile: self.tile,
            core: self.core,
        }
    }

    pub fn reg_of(&self, cs: &CoreState, v: VId) -> u32 {
        match cs.resident[&v] {
            Res::Gen(a) => a,
            Res::XOut(m) => self.arch.xbar_out_base() + m * self.arch.mvmu.xbar_size as u32,
        }
    }

    fn next_use(&self, cs: &CoreState, v: VId) -> usize {
        cs.uses
            .get(&v)
            .and_then(|q| q.iter().find(|&&p| p >= self.pos).copied())
            .unwrap_or(usize::MAX)
    }

    /// Allocate `len` general registers, spilling the resident value with the furthest
    /// next use (not among `pinned`) to shared memory when full.
    pub fn alloc(
        &self,
        cs: &mut CoreState,
        len: u32,
        pinned: &[VId],
        mem: &mut Mem,
        spills: &mut usize,
    ) -> Result<u32, CompileError> {
        loop {
            if let Some(a) = cs.regs.alloc(len) {
                return Ok(self.dm_base() + a);
            }
            let mut best: Option<(usize, VId, u32)> = None;
            for (&v, &r) in &cs.resident {
                if let Res::Gen(a) = r
                    && !pinned.contains(&v)
                {
                    let nu = self.next_use(cs, v);
                    if best.is_none_or(|(b, bv, _)| nu > b || (nu == b && v < bv)) {
                        best = Some((nu, v, a));
                    }
                }
            }
            let Some((_, v, a)) = best else {
                if std::env::var_os("PUMA_DEBUG_REGS").is_some() {
                    let held: Vec<_> = cs
                        .resident
                        .iter()
                        .filter_map(|(v, r)| match r {
                            Res::Gen(a) => Some((*v, *a, self.s.ops[*v as usize].len)),
                            // only general registers are counted here
                            _ => None,
                        })
                        .collect();
                    eprintln!(
                        "registers full at position {}: need {len}; {} resident general values {:?}; pinned {:?}",
                        self.pos,
                        held.len(),
                        &held[..held.len().min(20)],
                        &pinned[..pinned.len().min(20)]
                    );
                }
                return Err(CompileError::Registers {
                    tile: self.tile as usize,
                    core: self.core as usize,
                    words: len as usize,
                    have: cs.regs.capacity as usize,
                });
            };
            let vlen = self.s.ops[v as usize].len;
            if self.next_use(cs, v) == usize::MAX {
                // Never read here again: free its registers, nothing to save.
                self.drop_value(cs, mem, v);
                continue;
            }
            let t = self.tile as usize;
            let (slot, wsync) = mem.tiles[t]
                .alloc(vlen, self.core as usize, 1u128 << self.core)
                .ok_or_else(|| CompileError::SharedMemory {
                    tile: t,
                    layer: format!(
                        "register spill (graph node #{})",
                        self.s.ops[v as usize].node
                    ),
                    need: mem.tiles[t].need(vlen) as usize,
                    have: self.arch.tile.shared_mem_words,
                })?;
            for from in wsync {
                mem.sync(self.arch, self.tile, from, self.core as usize, &mut cs.code)?;
            }
            let sa = mem.addr(self.tile, slot);
            emit::store(
                self.arch,
                &mut cs.code,
                mem,
                self.tile,
                self.core,
                slot,
                sa,
                a,
                vlen,
                1,
                true,
            );
            *spills += 1;
            cs.regs.free(a - self.dm_base(), vlen);
            cs.resident.remove(&v);
            cs.spilled.insert(v, slot);
        }
    }

    /// Bring a spilled local value back into registers.
    pub fn ensure_resident(
        &self,
        cs: &mut CoreState,
        v: VId,
        pinned: &[VId],
        mem: &mut Mem,
        spills: &mut usize,
    ) -> Result<u32, CompileError> {
        if cs.resident.contains_key(&v) {
            return Ok(self.reg_of(cs, v));
        }
        let slot = cs.spilled.remove(&v).ok_or_else(|| {
            CompileError::Internal(format!(
                "value {v} read on t{} c{} before it was computed there",
                self.tile, self.core
            ))
        })?;
        let len = self.s.ops[v as usize].len;
        let a = self.alloc(cs, len, pinned, mem, spills)?;
        let sa = mem.addr(self.tile, slot);
        self.follow(cs, mem, slot)?;
        emit::load(
            self.arch,
            &mut cs.code,
            mem,
            self.tile,
            self.core,
            Src::Slot(slot),
            a,
            sa,
            len,
        );
        mem.tiles[self.tile as usize].free(slot);
        cs.resident.insert(v, Res::Gen(a));
        Ok(a)
    }

    /// Move a live XbarOut value to general registers before its MVMU runs again.
    pub fn evict_xout(
        &self,
        cs: &mut CoreState,
        m: u32,
        pinned: &[VId],
        mem: &mut Mem,
        spills: &mut usize,
    ) -> Result<(), CompileError> {
        if let Some(v) = cs.xout[m as usize].take() {
            if cs.resident.get(&v) == Some(&Res::XOut(m)) && self.next_use(cs, v) != usize::MAX {
                let len = self.s.ops[v as usize].len;
                let a = self.alloc(cs, len, pinned, mem, spills)?;
                let src = self.reg_of(cs, v);
                cs.code.push(CoreInstr::Copy {
                    d1: a,
                    r1: src,
                    vec: len,
                });
                cs.resident.insert(v, Res::Gen(a));
            } else if cs.resident.get(&v) == Some(&Res::XOut(m)) {
                cs.resident.remove(&v);
            }
        }
        Ok(())
    }

    /// Fill registers from `ps` at `dst` (or fresh registers); returns the address.
    pub fn fill(
        &self,
        cs: &mut CoreState,
        ps: &[Piece],
        dst: Option<u32>,
        pinned: &[VId],
        mem: &mut Mem,
        spills: &mut usize,
    ) -> Result<u32, CompileError> {
        let total: u32 = ps.iter().map(|p| p.len).sum();
        let dst = match dst {
            Some(d) => d,
            None => self.alloc(cs, total, pinned, mem, spills)?,
        };
        let mut o = 0;
        for p in ps {
            let src = &self.s.ops[p.v as usize];
            if src.loc == self.me() && !src.shm {
                // Only this piece's value must stay while it is copied: an operand of
                // many pieces need not fit the registers at once.
                let mut pin = pinned.to_vec();
                pin.push(p.v);
                let a = self.ensure_resident(cs, p.v, &pin, mem, spills)?;
                cs.code.push(CoreInstr::Copy {
                    d1: dst + o,
                    r1: a + p.off,
                    vec: p.len,
                });
            } else {
                let missing = || {
                    CompileError::Internal(format!(
                        "value {} has no address on tile {}",
                        p.v, self.tile
                    ))
                };
                let slot = mem.slot_of(self.tile, p.v).ok_or_else(missing)?;
                let addr = mem.word(self.tile, p.v, p.off).ok_or_else(missing)?;
                let how = if src.loc == Loc::Const {
                    Src::Persistent
                } else {
                    self.follow(cs, mem, slot)?;
                    Src::Slot(slot)
                };
                emit::load(
                    self.arch,
                    &mut cs.code,
                    mem,
                    self.tile,
                    self.core,
                    how,
                    dst + o,
                    addr,
                    p.len,
                );
            }
            o += p.len;
        }
        Ok(dst)
    }

    /// Before reading `slot`, sync this core with the agents whose reads of the words'
    /// old value it does not yet follow (`TileShm::reader_syncs`).
    fn follow(&self, cs: &mut CoreState, mem: &mut Mem, slot: u32) -> Result<(), CompileError> {
        let from = mem.tiles[self.tile as usize].reader_syncs(slot, self.core as usize);
        for a in from {
            mem.sync(self.arch, self.tile, a, self.core as usize, &mut cs.code)?;
        }
        Ok(())
    }

    /// Register address of an operand; true when a temporary was allocated.
    pub fn operand(
        &self,
        cs: &mut CoreState,
        ps: &[Piece],
        pinned: &[VId],
        mem: &mut Mem,
        spills: &mut usize,
    ) -> Result<(u32, bool), CompileError> {
        if ps.len() == 1
            && self.s.ops[ps[0].v as usize].loc == self.me()
            && !self.s.ops[ps[0].v as usize].shm
        {
            let a = self.ensure_resident(cs, ps[0].v, pinned, mem, spills)?;
            return Ok((a + ps[0].off, false));
        }
        Ok((self.fill(cs, ps, None, pinned, mem, spills)?, true))
    }

    /// Consume one use of each local operand; free values with no further use.
    pub fn release_operands(&self, cs: &mut CoreState, mem: &mut Mem, operands: &[&[Piece]]) {
        let mut seen = HashSet::new();
        for ps in operands {
            for p in *ps {
                if !seen.insert(p.v) {
                    continue;
                }
                if let Some(q) = cs.uses.get_mut(&p.v) {
                    while q.front().is_some_and(|&x| x <= self.pos) {
                        q.pop_front();
                    }
                    if q.is_empty() {
                        self.drop_value(cs, mem, p.v);
                    }
                }
            }
        }
    }

    /// The value has no further use on this core: free its registers, or, when it sits
    /// spilled and was last read before the spill, drain its spill slot (a load into
    /// XbarIn scratch) so that the slot's reader count is consumed.
    pub fn drop_value(&self, cs: &mut CoreState, mem: &mut Mem, v: VId) {
        match cs.resident.remove(&v) {
            Some(Res::Gen(a)) => cs.regs.free(a - self.dm_base(), self.s.ops[v as usize].len),
            Some(Res::XOut(_)) | None => {}
        }
        if let Some(slot) = cs.spilled.remove(&v) {
            let len = self.s.ops[v as usize].len;
            let sa = mem.addr(self.tile, slot);
            let w = self.arch.tile.max_transfer_words as u32;
            let mut o = 0;
            while o < len {
                let n = w.min(len - o);
                emit::load(
                    self.arch,
                    &mut cs.code,
                    mem,
                    self.tile,
                    self.core,
                    Src::Slot(slot),
                    self.arch.xbar_in_base(),
                    sa + o,
                    n,
                );
                o += n;
            }
            mem.tiles[self.tile as usize].free(slot);
        }
        cs.uses.remove(&v);
    }
}
