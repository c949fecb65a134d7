//! Pass 3: code generation. Walks the global order once; per operation it emits the
//! core's instructions (`mvm_group`, `vector_op`), then the stores and sends of what
//! other cores and tiles read (`publish`), and frees shared memory whose last reader
//! has been emitted. The read plan (`plan.rs`), shared memory (`shm.rs`, `emit.rs`),
//! registers (`regs.rs`) and the final program (`assemble.rs`) live in their own files.

use super::Lowered;
use super::emit::{self, Mem};
use super::plan::{Plan, plan, tile_of};
use super::regs::{CoreState, Gen, Res};
use super::shm::{Reuse, SlotId, TileShm};
use super::trace::Trace;
use super::{CompileError, Kind, Loc, Schedule, VId, VOp};
use crate::arch::Arch;
use crate::isa::CoreInstr;
use crate::program::{
    FIRST_COMPUTE_TILE, INPUT_TILE, OUTPUT_TILE, PERSISTENT, Program, TileProgram,
};
use pimkit_ir::Graph;
use std::collections::HashMap;

pub use super::regs::RESERVED_REGS;

/// Code generation state shared by the passes of this file.
struct Cg<'a> {
    arch: &'a Arch,
    s: &'a Schedule,
    l: &'a Lowered,
    plan: Plan,
    mem: Mem,
    tiles: Vec<TileProgram>,
    cores: HashMap<(u32, u32), CoreState>,
    spills: usize,
    coalesced: usize,
    done: Vec<bool>,
}

/// Graph node name of a value for messages.
fn layer_name(l: &Lowered, op: &VOp) -> String {
    match op.kind {
        Kind::Const(_) => "constants".into(),
        Kind::Input => "inputs".into(),
        // every computing kind belongs to the graph node that produced it
        _ => l
            .node_names
            .get(op.node as usize)
            .cloned()
            .unwrap_or_else(|| format!("node {}", op.node)),
    }
}

/// Options of code generation.
pub struct CgOptions {
    /// Reuse shared memory whose values are dead (docs/puma.md "Shared-memory reuse").
    pub reuse: Reuse,
    /// Record the shared-memory trace for the checker.
    pub trace: bool,
}

pub fn generate(
    s: &Schedule,
    l: &Lowered,
    arch: &Arch,
    g: &Graph,
    opts: &CgOptions,
) -> Result<(Program, Trace), CompileError> {
    let per_tile = arch.mvmus_per_tile();
    let mut max_tile = FIRST_COMPUTE_TILE;
    for op in &s.ops {
        if let Loc::Core { tile, .. } = op.loc {
            max_tile = max_tile.max(tile as usize);
        }
    }
    let mvmus = l
        .weights
        .iter()
        .map(|w| w.0 as usize + 1)
        .max()
        .unwrap_or(1);
    let ntiles = max_tile.max(FIRST_COMPUTE_TILE + mvmus.div_ceil(per_tile).max(1) - 1) + 1;
    if ntiles > arch.max_tiles() {
        return Err(CompileError::Nodes {
            tiles: ntiles,
            nodes: ntiles.div_ceil(arch.node.tiles),
            per_node: arch.node.tiles,
            have: arch.node.count,
        });
    }
    let big = u32::MAX / 4;
    let agents = arch.tile.cores + 1;
    let mem = Mem {
        tiles: (0..ntiles)
            .map(|t| {
                let io = t == INPUT_TILE || t == OUTPUT_TILE;
                let cap = if io {
                    big
                } else {
                    arch.tile.shared_mem_words as u32
                };
                TileShm::new(
                    cap,
                    agents,
                    if io { Reuse::Off } else { opts.reuse },
                    opts.trace,
                )
            })
            .collect(),
        addr_of: vec![HashMap::new(); ntiles],
        unit: arch.tile.cores,
        pos: 0,
        flags: HashMap::new(),
        pending: Vec::new(),
        syncs: 0,
    };
    let mut cg = Cg {
        arch,
        s,
        l,
        plan: plan(s, arch.tile.cores, &g.name)?,
        mem,
        tiles: (0..ntiles)
            .map(|_| TileProgram {
                cores: vec![Vec::new(); arch.tile.cores],
                ..Default::default()
            })
            .collect(),
        cores: HashMap::new(),
        spills: 0,
        coalesced: 0,
        done: vec![false; s.ops.len()],
    };
    cg.preload_constants()?;
    let inputs = cg.preload_inputs(g);
    for (&(loc, v), q) in &cg.plan.local_uses {
        if let Loc::Core { tile, core } = loc {
            cg.cores
                .entry((tile, core))
                .or_insert_with(|| CoreState::new(arch))
                .uses
                .insert(v, q.clone());
        }
    }
    for i in 0..s.order.len() {
        cg.step(i)?;
    }
    let trace = Trace {
        tiles: cg
            .mem
            .tiles
            .iter_mut()
            .map(|t| std::mem::take(&mut t.trace))
            .collect(),
    };
    let prog = super::assemble::assemble(
        arch,
        l,
        s,
        g,
        cg.tiles,
        cg.cores.into_iter().map(|(k, c)| (k, c.code)).collect(),
        &cg.mem,
        inputs,
        cg.spills,
        cg.coalesced,
    )?;
    Ok((prog, trace))
}

impl Cg<'_> {
    /// True when every word has the architecture's format (no `fmt=` anywhere).
    fn uniform(&self) -> bool {
        let f = self.arch.fixed.frac_bits as u8;
        self.s.ops.iter().all(|o| o.frac == f)
    }

    /// Fraction bits of an operand: of its pieces (all alike, `fixed_point.rs`), all-zero
    /// constants aside.
    fn frac_of(&self, ps: &[super::Piece]) -> u8 {
        let ops = &self.s.ops;
        ps.iter()
            .find(|p| !matches!(&ops[p.v as usize].kind, Kind::Const(d) if d.iter().all(|&x| x == 0.0)))
            .or(ps.first())
            .map_or(self.arch.fixed.frac_bits as u8, |p| ops[p.v as usize].frac)
    }

    fn alu_fmt(&self, a: u8, b: u8, d: u8) -> Option<crate::isa::AluFmt> {
        let f = self.arch.fixed.frac_bits as u8;
        (a != f || b != f || d != f).then_some(crate::isa::AluFmt { a, b, d })
    }

    fn shm_err(&self, t: u32, v: VId) -> CompileError {
        let op = &self.s.ops[v as usize];
        CompileError::SharedMemory {
            tile: t as usize,
            layer: layer_name(self.l, op),
            need: self.mem.tiles[t as usize].need(op.len) as usize,
            have: self.arch.tile.shared_mem_words,
        }
    }

    /// Allocate words `lo..hi` of value `v` on tile `t`, written by agent `writer`, for
    /// its readers there. Returns the slot and the agents the writer must be synced
    /// with before writing (`TileShm::alloc`).
    fn alloc_value(
        &mut self,
        t: u32,
        v: VId,
        writer: usize,
        (lo, hi): (u32, u32),
    ) -> Result<(SlotId, Vec<usize>), CompileError> {
        let readers = self.plan.readers.get(&(t, v)).copied().unwrap_or(0);
        let Some((slot, wsync)) = self.mem.tiles[t as usize].alloc(hi - lo, writer, readers) else {
            if std::env::var_os("PUMA_DEBUG_SHM").is_some() {
                eprintln!(
                    "tile {t} at position {}: {}",
                    self.mem.pos,
                    self.mem.tiles[t as usize].explain(hi - lo, writer, readers)
                );
            }
            return Err(self.shm_err(t, v));
        };
        self.mem.addr_of[t as usize].insert(v, (slot, lo));
        Ok((slot, wsync))
    }

    /// Constants are preloaded, persistent, into each tile that reads them.
    fn preload_constants(&mut self) -> Result<(), CompileError> {
        let uses: Vec<(u32, VId)> = self.plan.const_use.iter().copied().collect();
        for (t, v) in uses {
            let Kind::Const(data) = &self.s.ops[v as usize].kind else {
                continue;
            };
            let len = self.s.ops[v as usize].len;
            let (slot, _) = self.alloc_value(t, v, self.mem.unit, (0, len))?;
            let a = self.mem.addr(t, slot);
            self.mem.tiles[t as usize].preload(slot, a, data.len() as u32, PERSISTENT);
            let f = crate::fixed::Fmt {
                bits: self.arch.fixed.bits,
                frac: self.s.ops[v as usize].frac as u32,
            };
            let raw = data
                .iter()
                .map(|&x| f.from_f64(x as f64, crate::fixed::NumMode::Exact) as i16)
                .collect();
            self.tiles[t as usize].shmem_init.push((a, raw));
        }
        Ok(())
    }

    /// Graph inputs are preloaded into the input tile with their reader counts.
    fn preload_inputs(&mut self, g: &Graph) -> Vec<crate::program::IoMap> {
        let mut inputs = Vec::new();
        let it = INPUT_TILE as u32;
        for (name, shape, map) in &self.l.inputs {
            let mut base: HashMap<VId, u32> = HashMap::new();
            for &(v, _) in map {
                if let std::collections::hash_map::Entry::Vacant(e) = base.entry(v) {
                    let len = self.s.ops[v as usize].len;
                    let (slot, _) = self
                        .alloc_value(it, v, self.mem.unit, (0, len))
                        .unwrap_or((0, Vec::new()));
                    let a = self.mem.addr(it, slot);
                    e.insert(a);
                    if let Some(c) = self.plan.prod_counts.get(&v) {
                        for (r0, rl, n) in emit::equal_runs(c) {
                            self.mem.tiles[INPUT_TILE].preload(slot, a + r0, rl, n);
                        }
                    }
                }
            }
            let addrs = map.iter().map(|&(v, o)| base[&v] + o).collect();
            let counts = map
                .iter()
                .map(|&(v, o)| {
                    self.plan
                        .prod_counts
                        .get(&v)
                        .map(|c| c[o as usize])
                        .unwrap_or(0)
                })
                .collect();
            let dtype = g
                .inputs
                .iter()
                .find(|&&v| g.value(v).name == *name)
                .map(|&v| g.ty(v).dtype)
                .unwrap_or(pimkit_ir::DType::F32);
            let fracs = super::assemble::fracs(
                self.arch,
                map.iter().map(|&(v, _)| self.s.ops[v as usize].frac),
            );
            inputs.push(crate::program::IoMap {
                name: name.clone(),
                shape: shape.clone(),
                dtype,
                tile: INPUT_TILE,
                addrs,
                counts,
                fracs,
            });
        }
        inputs
    }

    /// Emit position `i` of the global order.
    fn step(&mut self, i: usize) -> Result<(), CompileError> {
        let o = self.s.order[i];
        self.mem.pos = i as u32;
        let op = &self.s.ops[o as usize];
        let skip = self.done[o as usize];
        self.done[o as usize] = true;
        let mut produced: Vec<VId> = Vec::new();
        if skip {
        } else if let Loc::Core { tile, core } = op.loc {
            let mut cs = self
                .cores
                .remove(&(tile, core))
                .unwrap_or_else(|| CoreState::new(self.arch));
            let r = match &op.kind {
                Kind::Mvm { .. } => self.mvm_group(&mut cs, i, tile, core, &mut produced),
                Kind::Alu { .. } | Kind::Alui { .. } | Kind::Gather(_) => {
                    self.vector_op(&mut cs, i, tile, core, &mut produced)
                }
                // Input, Const and Output emit no instructions here (placed by the memory layout)
                _ => Ok(()),
            }
            .and_then(|_| self.publish(&mut cs, i, tile, core, &produced));
            self.cores.insert((tile, core), cs);
            r?;
        } else if matches!(op.kind, Kind::Input) {
            produced.push(o);
        }
        self.send(&produced)?;
        for (t, c, code) in self.mem.take_pending() {
            self.cores
                .entry((t, c))
                .or_insert_with(|| CoreState::new(self.arch))
                .code
                .extend(code);
        }
        let frees = std::mem::take(&mut self.plan.frees_at[i]);
        for (t, v) in frees {
            if let Some(slot) = self.mem.slot_of(t, v)
                && t as usize != OUTPUT_TILE
            {
                self.mem.tiles[t as usize].free(slot);
            }
        }
        Ok(())
    }

    /// An MVM and the MVMs coalesced with it: one `mvm` instruction.
    fn mvm_group(
        &mut self,
        cs: &mut CoreState,
        i: usize,
        tile: u32,
        core: u32,
        produced: &mut Vec<VId>,
    ) -> Result<(), CompileError> {
        let (s, arch) = (self.s, self.arch);
        let ops = &s.ops;
        let o = s.order[i];
        let mut members = vec![o];
        if s.group_of[o as usize] == Some(o) {
            for &m in &s.order[i + 1..] {
                if s.group_of[m as usize] == Some(o) {
                    members.push(m);
                    self.done[m as usize] = true;
                } else {
                    break;
                }
            }
            self.coalesced += members.len() - 1;
        }
        let gx = Gen {
            arch,
            s,
            tile,
            core,
            pos: i,
        };
        // MVM inputs are copied into XbarIn piece by piece (`fill` pins each piece).
        let pinned: Vec<VId> = Vec::new();
        let mut mask = 0u32;
        for &m in &members {
            let Kind::Mvm { mvmu, input } = &ops[m as usize].kind else {
                unreachable!()
            };
            let lm = *mvmu % arch.core.mvmus as u32;
            mask |= 1 << lm;
            gx.evict_xout(cs, lm, &pinned, &mut self.mem, &mut self.spills)?;
            let dst = lm * arch.mvmu.xbar_size as u32;
            gx.fill(
                cs,
                input,
                Some(dst),
                &pinned,
                &mut self.mem,
                &mut self.spills,
            )?;
        }
        cs.code.push(CoreInstr::Mvm {
            mask,
            shift: 0,
            group: 0,
        });
        for &m in &members {
            let Kind::Mvm { mvmu, .. } = &ops[m as usize].kind else {
                unreachable!()
            };
            let lm = *mvmu % arch.core.mvmus as u32;
            cs.xout[lm as usize] = Some(m);
            cs.resident.insert(m, Res::XOut(lm));
            produced.push(m);
        }
        for &m in &members {
            let gm = Gen {
                arch,
                s,
                tile,
                core,
                pos: self.plan.pos[m as usize],
            };
            gm.release_operands(cs, &mut self.mem, &ops[m as usize].operands());
        }
        Ok(())
    }

    /// An ALU op, ALU-immediate op or gather (copy of pieces into one vector).
    fn vector_op(
        &mut self,
        cs: &mut CoreState,
        i: usize,
        tile: u32,
        core: u32,
        produced: &mut Vec<VId>,
    ) -> Result<(), CompileError> {
        let (s, arch) = (self.s, self.arch);
        let o = s.order[i];
        let op = &s.ops[o as usize];
        let gx = Gen {
            arch,
            s,
            tile,
            core,
            pos: i,
        };
        // Operands read in place (one local piece) must stay in registers until the
        // instruction; pieces copied into temporaries are pinned one at a time (`fill`).
        let me = Loc::Core { tile, core };
        let pinned: Vec<VId> = op
            .operands()
            .iter()
            .filter(|ps| {
                ps.len() == 1 && s.ops[ps[0].v as usize].loc == me && !s.ops[ps[0].v as usize].shm
            })
            .map(|ps| ps[0].v)
            .collect();
        let mut temps = Vec::new();
        let mut srcs = Vec::new();
        for ps in op.operands() {
            let (a, tmp) = gx.operand(cs, ps, &pinned, &mut self.mem, &mut self.spills)?;
            srcs.push(a);
            if tmp {
                temps.push((a, ps.iter().map(|p| p.len).sum::<u32>()));
            }
        }
        let d1 = match (&op.kind, temps.first()) {
            // A gather's materialized operand is its result.
            (Kind::Gather(_), Some(&(a, _))) => {
                temps.clear();
                a
            }
            // every other kind gets a fresh register range
            _ => gx.alloc(cs, op.len, &pinned, &mut self.mem, &mut self.spills)?,
        };
        match &op.kind {
            Kind::Alu { op: aop, a, b } => {
                let fa = self.frac_of(a);
                let fb = b.as_ref().map_or(fa, |b| self.frac_of(b));
                cs.code.push(CoreInstr::Alu {
                    op: *aop,
                    d1,
                    r1: srcs[0],
                    r2: if b.is_some() { srcs[1] } else { 0 },
                    vec: op.len,
                    fmt: self.alu_fmt(fa, fb, op.frac),
                })
            }
            Kind::Alui { op: aop, a, imm } => {
                let fa = self.frac_of(a);
                let fb = if self.uniform() {
                    self.arch.fixed.frac_bits as u8
                } else {
                    super::fixed_point::exact_frac(imm.abs()) as u8
                };
                let q = crate::fixed::Fmt {
                    bits: arch.fixed.bits,
                    frac: fb as u32,
                };
                cs.code.push(CoreInstr::Alui {
                    op: *aop,
                    d1,
                    r1: srcs[0],
                    imm: q.from_f64(*imm as f64, crate::fixed::NumMode::Exact),
                    vec: op.len,
                    fmt: self.alu_fmt(fa, fb, op.frac),
                })
            }
            // Gather: a copy (vector_op is called only for Alu, Alui and Gather)
            _ => {
                if srcs[0] != d1 {
                    cs.code.push(CoreInstr::Copy {
                        d1,
                        r1: srcs[0],
                        vec: op.len,
                    });
                }
            }
        }
        let base = arch.data_mem_base();
        for (a, len) in temps {
            cs.regs.free(a - base, len);
        }
        gx.release_operands(cs, &mut self.mem, &op.operands());
        cs.resident.insert(o, Res::Gen(d1));
        produced.push(o);
        Ok(())
    }

    /// Store what other cores of the tile (or its unit, for sends) read.
    fn publish(
        &mut self,
        cs: &mut CoreState,
        i: usize,
        tile: u32,
        core: u32,
        produced: &[VId],
    ) -> Result<(), CompileError> {
        let (s, arch) = (self.s, self.arch);
        let gx = Gen {
            arch,
            s,
            tile,
            core,
            pos: i,
        };
        for &v in produced {
            let len = s.ops[v as usize].len;
            if let Some(pc) = self.plan.prod_counts.get(&v).cloned()
                && pc.iter().any(|&c| c > 0)
            {
                let runs = emit::equal_runs(&pc);
                let lo = runs[0].0;
                let hi = runs.last().map_or(lo, |r| r.0 + r.1);
                let (slot, wsync) = self.alloc_value(tile, v, core as usize, (lo, hi))?;
                for a in wsync {
                    self.mem.sync(arch, tile, a, core as usize, &mut cs.code)?;
                }
                let a = self.mem.addr(tile, slot);
                let reg = gx.reg_of(cs, v);
                let n = runs.len();
                for (k, (r0, rl, c)) in runs.into_iter().enumerate() {
                    emit::store(
                        arch,
                        &mut cs.code,
                        &mut self.mem,
                        tile,
                        core,
                        slot,
                        a + r0 - lo,
                        reg + r0,
                        rl,
                        c,
                        k + 1 == n,
                    );
                }
                let _ = len;
            }
            if cs.uses.get(&v).is_none_or(|q| q.is_empty()) {
                gx.drop_value(cs, &mut self.mem, v);
            }
        }
        Ok(())
    }

    /// Inter-tile transfers of the values just produced.
    fn send(&mut self, produced: &[VId]) -> Result<(), CompileError> {
        for &v in produced {
            let Some(ds) = self.plan.dests.get(&v).cloned() else {
                continue;
            };
            let src_t = tile_of(self.s.ops[v as usize].loc).unwrap_or(0);
            let ss = self.mem.slot_of(src_t, v).ok_or_else(|| {
                CompileError::Internal(format!("value {v} is sent but not stored on tile {src_t}"))
            })?;
            for d in ds {
                let dc = self.plan.counts[&(d, v)].clone();
                let runs = emit::equal_runs(&dc);
                let lo = runs[0].0;
                let hi = runs.last().map_or(lo, |r| r.0 + r.1);
                let (dslot, _) = self.alloc_value(d, v, self.mem.unit, (lo, hi))?;
                let da = self.mem.addr(d, dslot);
                let n = runs.len();
                for (k, (r0, rl, c)) in runs.into_iter().enumerate() {
                    let sa = self.mem.word(src_t, v, r0).ok_or_else(|| {
                        CompileError::Internal(format!(
                            "value {v}: word {r0} not held on tile {src_t}"
                        ))
                    })?;
                    emit::transfer(
                        self.arch,
                        &mut self.tiles,
                        &mut self.mem,
                        (src_t, ss, sa),
                        (d, dslot, da + r0 - lo),
                        rl,
                        c,
                        k + 1 == n,
                    );
                }
            }
        }
        Ok(())
    }
}
