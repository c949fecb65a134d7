//! Pass 3: communication, shared-memory allocation, register allocation, code.
//!
//! Rules (all static, so reader counts are known before code is emitted):
//! * a value lives in registers of the core that computes it; other cores of the same
//!   tile `load` it from shared memory after the producer's `store`;
//! * other tiles get it by `send` (producer tile) / `receive` (consumer tile), placed in
//!   the global order right after the value is produced;
//! * every stored word's reader count is the number of loads/sends that will read it,
//!   so the valid bit drops exactly after the last reader; addresses are not reused;
//! * constants are preloaded, persistent, into each tile that reads them.

use super::alloc::RangeAlloc;
use super::lower::Lowered;
use super::{CompileError, Kind, Loc, Piece, Schedule, VId, VOp};
use crate::arch::Arch;
use crate::isa::{CoreInstr, TileInstr};
use crate::program::{
    FIRST_COMPUTE_TILE, INPUT_TILE, IoMap, MvmuWeights, OUTPUT_TILE, Placement, Program,
    TileProgram,
};
use pimkit_ir::Graph;
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};

/// Registers reserved at the top of the data memory: the shared-memory address
/// register and registers for rolled loops.
pub const RESERVED_REGS: u32 = 24;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Res {
    Gen(u32),
    XOut(u32),
}

struct CoreState {
    code: Vec<CoreInstr>,
    regs: RangeAlloc,
    resident: HashMap<VId, Res>,
    spilled: HashMap<VId, u32>,
    uses: HashMap<VId, VecDeque<usize>>,
    xout: Vec<Option<VId>>,
}

struct Gen<'a> {
    arch: &'a Arch,
    s: &'a Schedule,
    tile: u32,
    core: u32,
    pos: usize,
}

pub fn generate(
    s: &Schedule,
    l: &Lowered,
    arch: &Arch,
    g: &Graph,
) -> Result<Program, CompileError> {
    let ops = &s.ops;
    let n = ops.len();
    let mut pos = vec![usize::MAX; n];
    for (i, &o) in s.order.iter().enumerate() {
        pos[o as usize] = i;
    }
    let per_tile = arch.mvmus_per_tile();
    let mut max_tile = FIRST_COMPUTE_TILE;
    for op in ops {
        if let Loc::Core { tile, .. } = op.loc {
            max_tile = max_tile.max(tile as usize);
        }
    }
    let ntiles =
        max_tile.max(FIRST_COMPUTE_TILE + l.weights.len().div_ceil(per_tile).max(1) - 1) + 1;
    let tile_of = |loc: Loc| -> Option<u32> {
        match loc {
            Loc::Core { tile, .. } => Some(tile),
            Loc::InputTile => Some(INPUT_TILE as u32),
            Loc::OutputTile => Some(OUTPUT_TILE as u32),
            Loc::Const => None,
        }
    };

    // --- Read plan --------------------------------------------------------------
    let mut counts: HashMap<(u32, VId), Vec<u32>> = HashMap::new();
    let mut last_read: HashMap<(u32, VId), usize> = HashMap::new();
    let mut const_use: BTreeMap<(u32, VId), ()> = BTreeMap::new();
    let mut local_uses: HashMap<(Loc, VId), VecDeque<usize>> = HashMap::new();
    for (i, &o) in s.order.iter().enumerate() {
        let op = &ops[o as usize];
        let rt = tile_of(op.loc).unwrap_or(0);
        for ps in op.operands() {
            for p in ps {
                let src = &ops[p.v as usize];
                if matches!(op.kind, Kind::Output { .. }) && src.loc == Loc::Const {
                    return Err(CompileError::Graph {
                        graph: g.name.clone(),
                        msg: "an output depends only on constants; nothing to compute".into(),
                    });
                }
                if src.loc == op.loc && matches!(op.loc, Loc::Core { .. }) && !src.shm {
                    let q = local_uses.entry((op.loc, p.v)).or_default();
                    if q.back() != Some(&i) {
                        q.push_back(i);
                    }
                } else if src.loc == Loc::Const {
                    const_use.insert((rt, p.v), ());
                } else {
                    let c = counts
                        .entry((rt, p.v))
                        .or_insert_with(|| vec![0; src.len as usize]);
                    for w in p.off..p.off + p.len {
                        c[w as usize] += 1;
                    }
                    last_read.insert((rt, p.v), i);
                }
            }
        }
    }
    // Producer-tile counts: local loads + one send per destination tile.
    let mut dests: HashMap<VId, Vec<u32>> = HashMap::new();
    let mut keys: Vec<(u32, VId)> = counts.keys().copied().collect();
    keys.sort();
    for &(t, v) in &keys {
        let pt = tile_of(ops[v as usize].loc).unwrap_or(0);
        if pt != t {
            dests.entry(v).or_default().push(t);
        }
    }
    let mut prod_counts: HashMap<VId, Vec<u32>> = HashMap::new();
    for (&v, ds) in &dests {
        let pt = tile_of(ops[v as usize].loc).unwrap_or(0);
        let len = ops[v as usize].len as usize;
        let mut pc = counts
            .get(&(pt, v))
            .cloned()
            .unwrap_or_else(|| vec![0; len]);
        for d in ds {
            for (w, &c) in counts[&(*d, v)].iter().enumerate() {
                if c > 0 {
                    pc[w] += 1;
                }
            }
        }
        prod_counts.insert(v, pc);
        last_read.insert(
            (pt, v),
            pos[v as usize].max(*last_read.get(&(pt, v)).unwrap_or(&0)),
        );
    }
    for (&(t, v), c) in &counts {
        let pt = tile_of(ops[v as usize].loc).unwrap_or(0);
        if pt == t && !prod_counts.contains_key(&v) {
            prod_counts.insert(v, c.clone());
        }
    }
    let mut frees_at: Vec<Vec<(u32, VId)>> = vec![Vec::new(); s.order.len()];
    let mut lr: Vec<_> = last_read.iter().map(|(&k, &i)| (i, k)).collect();
    lr.sort();
    for (i, k) in lr {
        frees_at[i].push(k);
    }

    // --- Memory: constants and inputs -----------------------------------------
    let big = u32::MAX / 4;
    let mut shm: Vec<RangeAlloc> = (0..ntiles)
        .map(|t| {
            let cap = if t == INPUT_TILE || t == OUTPUT_TILE {
                big
            } else {
                arch.tile.shared_mem_words as u32
            };
            RangeAlloc::new(0, cap)
        })
        .collect();
    let mut addr_of: Vec<HashMap<VId, u32>> = vec![HashMap::new(); ntiles];
    let mut tiles: Vec<TileProgram> = (0..ntiles)
        .map(|_| TileProgram {
            cores: vec![Vec::new(); arch.tile.cores],
            ..Default::default()
        })
        .collect();
    let shm_err = |t: u32, a: &RangeAlloc, v: VId| CompileError::SharedMemory {
        tile: t as usize,
        layer: layer_name(l, &ops[v as usize]),
        need: (a.high_water + ops[v as usize].len) as usize,
        have: arch.tile.shared_mem_words,
    };
    for &(t, v) in const_use.keys() {
        let Kind::Const(data) = &ops[v as usize].kind else {
            continue;
        };
        let a = shm[t as usize]
            .alloc(data.len() as u32)
            .ok_or_else(|| shm_err(t, &shm[t as usize], v))?;
        addr_of[t as usize].insert(v, a);
        tiles[t as usize].shmem_init.push((a, data.clone()));
    }
    let mut inputs = Vec::new();
    let mut input_addr: HashMap<VId, u32> = HashMap::new();
    for (name, shape, map) in &l.inputs {
        let mut seen = Vec::new();
        for &(v, _) in map {
            if let std::collections::hash_map::Entry::Vacant(e) = input_addr.entry(v) {
                let a = shm[INPUT_TILE].alloc(ops[v as usize].len).unwrap_or(0);
                e.insert(a);
                addr_of[INPUT_TILE].insert(v, a);
                seen.push(v);
            }
        }
        let addrs = map.iter().map(|&(v, o)| input_addr[&v] + o).collect();
        let cnts = map
            .iter()
            .map(|&(v, o)| prod_counts.get(&v).map(|c| c[o as usize]).unwrap_or(0))
            .collect();
        let dtype = g
            .inputs
            .iter()
            .find(|&&v| g.value(v).name == *name)
            .map(|&v| g.ty(v).dtype)
            .unwrap_or(pimkit_ir::DType::F32);
        inputs.push(IoMap {
            name: name.clone(),
            shape: shape.clone(),
            dtype,
            tile: INPUT_TILE,
            addrs,
            counts: cnts,
        });
    }

    // --- Walk the global order ------------------------------------------------
    let dm_base = arch.data_mem_base();
    let gen_regs = arch.core.data_mem_words as u32 - RESERVED_REGS;
    let mut cores: HashMap<(u32, u32), CoreState> = HashMap::new();
    for (&(loc, v), q) in &local_uses {
        if let Loc::Core { tile, core } = loc {
            cores
                .entry((tile, core))
                .or_insert_with(|| new_core(arch, dm_base, gen_regs))
                .uses
                .insert(v, q.clone());
        }
    }
    let mut spill_stores = 0usize;
    let mut coalesced = 0usize;
    let mut done = vec![false; n];
    for (i, &o) in s.order.iter().enumerate() {
        let op = &ops[o as usize];
        let skip = done[o as usize];
        done[o as usize] = true;
        let mut produced: Vec<VId> = Vec::new();
        if skip {
        } else if let Loc::Core { tile, core } = op.loc {
            let cs = cores
                .entry((tile, core))
                .or_insert_with(|| new_core(arch, dm_base, gen_regs));
            let gx = Gen {
                arch,
                s,
                tile,
                core,
                pos: i,
            };
            match &op.kind {
                Kind::Mvm { .. } => {
                    let mut members = vec![o];
                    if s.group_of[o as usize] == Some(o) {
                        for &m in &s.order[i + 1..] {
                            if s.group_of[m as usize] == Some(o) {
                                members.push(m);
                                done[m as usize] = true;
                            } else {
                                break;
                            }
                        }
                        coalesced += members.len() - 1;
                    }
                    let mut mask = 0u32;
                    let pinned: Vec<VId> = members
                        .iter()
                        .flat_map(|&m| {
                            ops[m as usize]
                                .operands()
                                .into_iter()
                                .flat_map(|ps| ps.iter().map(|p| p.v))
                                .collect::<Vec<_>>()
                        })
                        .collect();
                    for &m in &members {
                        let Kind::Mvm { mvmu, input } = &ops[m as usize].kind else {
                            unreachable!()
                        };
                        let lm = *mvmu % arch.core.mvmus as u32;
                        mask |= 1 << lm;
                        gx.evict_xout(cs, lm, &pinned, &mut shm, &mut spill_stores)?;
                        let dst = lm * arch.mvmu.xbar_size as u32;
                        gx.fill(
                            cs,
                            input,
                            Some(dst),
                            &pinned,
                            &mut shm,
                            &addr_of,
                            &mut spill_stores,
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
                            pos: pos[m as usize],
                        };
                        gm.release_operands(cs, &ops[m as usize].operands());
                    }
                }
                Kind::Alu { .. } | Kind::Alui { .. } | Kind::Gather(_) => {
                    let pinned: Vec<VId> = op
                        .operands()
                        .iter()
                        .flat_map(|ps| ps.iter().map(|p| p.v))
                        .collect();
                    let mut temps = Vec::new();
                    let mut srcs = Vec::new();
                    for ps in op.operands() {
                        let (a, tmp) =
                            gx.operand(cs, ps, &pinned, &mut shm, &addr_of, &mut spill_stores)?;
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
                        _ => gx.alloc(cs, op.len, &pinned, &mut shm, &mut spill_stores)?,
                    };
                    match &op.kind {
                        Kind::Alu { op: aop, b, .. } => cs.code.push(CoreInstr::Alu {
                            op: *aop,
                            d1,
                            r1: srcs[0],
                            r2: if b.is_some() { srcs[1] } else { 0 },
                            vec: op.len,
                        }),
                        Kind::Alui { op: aop, imm, .. } => cs.code.push(CoreInstr::Alui {
                            op: *aop,
                            d1,
                            r1: srcs[0],
                            imm: *imm,
                            vec: op.len,
                        }),
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
                    for (a, len) in temps {
                        cs.regs.free(a - dm_base, len);
                    }
                    gx.release_operands(cs, &op.operands());
                    cs.resident.insert(o, Res::Gen(d1));
                    produced.push(o);
                }
                _ => {}
            }
            // Store / send what other cores and tiles read.
            for &v in &produced {
                let len = ops[v as usize].len;
                if let Some(pc) = prod_counts.get(&v)
                    && pc.iter().any(|&c| c > 0)
                {
                    let t = tile as usize;
                    let a = shm[t].alloc(len).ok_or_else(|| shm_err(tile, &shm[t], v))?;
                    addr_of[t].insert(v, a);
                    let reg = gx.reg_of(cs, v);
                    for (r0, rl, c) in equal_runs(pc) {
                        emit_store(arch, &mut cs.code, a + r0, reg + r0, rl, c);
                    }
                }
                if cs.uses.get(&v).is_none_or(|q| q.is_empty()) {
                    gx.drop_value(cs, v);
                }
            }
        } else if matches!(op.kind, Kind::Input) {
            produced.push(o);
        }
        // Inter-tile transfers, right after production.
        for &v in &produced {
            let Some(ds) = dests.get(&v) else { continue };
            let src_t = tile_of(ops[v as usize].loc).unwrap_or(0);
            let src_a = addr_of[src_t as usize][&v];
            let len = ops[v as usize].len;
            for &d in ds {
                let dc = &counts[&(d, v)];
                let da = shm[d as usize]
                    .alloc(len)
                    .ok_or_else(|| shm_err(d, &shm[d as usize], v))?;
                addr_of[d as usize].insert(v, da);
                for (r0, rl, c) in equal_runs(dc) {
                    emit_transfer(arch, &mut tiles, src_t, src_a + r0, d, da + r0, rl, c);
                }
            }
        }
        // Shared memory is not reused (as in the original compiler): a reader waiting
        // for `valid` at a reused address could consume the previous value stored
        // there, so address reuse would break both correctness and deadlock freedom
        // (docs/puma.md). Addresses are only dropped from the lookup table.
        for &(t, v) in &frees_at[i] {
            if t as usize != OUTPUT_TILE && t as usize != INPUT_TILE {
                addr_of[t as usize].remove(&v);
            }
        }
    }

    // --- Assemble ------------------------------------------------------------------
    let mut cores_used = 0;
    for ((t, c), cs) in cores {
        if !cs.code.is_empty() {
            cores_used += 1;
        }
        tiles[t as usize].cores[c as usize] = cs.code;
    }
    for tp in tiles.iter_mut() {
        for c in tp.cores.iter_mut() {
            c.push(CoreInstr::Hlt);
        }
        tp.tile_code.push(TileInstr::Halt);
    }
    for (t, a) in shm.iter().enumerate() {
        tiles[t].shmem_words_used = a.high_water as usize;
    }
    let mut outputs = Vec::new();
    for op in ops {
        if let Kind::Output { index, pieces } = &op.kind {
            let mut addrs = Vec::with_capacity(op.len as usize);
            for p in pieces {
                let base = addr_of[OUTPUT_TILE].get(&p.v).copied().ok_or_else(|| {
                    CompileError::Internal(format!(
                        "output value {} never reached the output tile",
                        p.v
                    ))
                })?;
                addrs.extend((p.off..p.off + p.len).map(|w| base + w));
            }
            let (name, shape) = l.outputs[*index].clone();
            outputs.push(IoMap {
                name,
                shape,
                dtype: pimkit_ir::DType::F32,
                tile: OUTPUT_TILE,
                addrs,
                counts: vec![],
            });
        }
    }
    let weights: Vec<MvmuWeights> = l
        .weights
        .iter()
        .enumerate()
        .map(|(gi, d)| MvmuWeights {
            tile: FIRST_COMPUTE_TILE + gi / per_tile,
            core: (gi % per_tile) / arch.core.mvmus,
            mvmu: gi % arch.core.mvmus,
            data: d.clone(),
        })
        .collect();
    let tiles_used = ntiles - FIRST_COMPUTE_TILE;
    let placement = Placement {
        matrices: l.matrices.clone(),
        tiles_used,
        cores_used,
        mvmus_used: weights.len(),
        nodes_used: ntiles.div_ceil(arch.node.tiles),
        spill_stores,
        coalesced_mvms: coalesced,
        loops_rolled: 0,
    };
    Ok(Program {
        name: g.name.clone(),
        arch: arch.clone(),
        tiles,
        weights,
        inputs,
        outputs,
        placement,
        shape_only: l.shape_only,
    })
}

/// Graph node name of a value for messages.
fn layer_name(l: &Lowered, op: &VOp) -> String {
    match op.kind {
        Kind::Const(_) => "constants".into(),
        Kind::Input => "inputs".into(),
        _ => l
            .node_names
            .get(op.node as usize)
            .cloned()
            .unwrap_or_else(|| format!("node {}", op.node)),
    }
}

fn new_core(arch: &Arch, dm_base: u32, gen_regs: u32) -> CoreState {
    CoreState {
        code: Vec::new(),
        regs: RangeAlloc::new(0, gen_regs),
        resident: HashMap::new(),
        spilled: HashMap::new(),
        uses: HashMap::new(),
        xout: vec![None; arch.core.mvmus],
    }
    .with_base(dm_base)
}

impl CoreState {
    fn with_base(self, _base: u32) -> Self {
        self
    }
}

/// Runs of equal non-zero counts: (start, len, count).
fn equal_runs(c: &[u32]) -> Vec<(u32, u32, u32)> {
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

fn emit_load(arch: &Arch, code: &mut Vec<CoreInstr>, dst: u32, shm_addr: u32, len: u32) {
    let ar = addr_reg(arch);
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
    }
}

fn emit_store(
    arch: &Arch,
    code: &mut Vec<CoreInstr>,
    shm_addr: u32,
    src: u32,
    len: u32,
    counter: u32,
) {
    let ar = addr_reg(arch);
    for (o, w, v) in transfers(len, arch.tile.max_transfer_words as u32, 4095) {
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
    }
}

fn emit_transfer(
    arch: &Arch,
    tiles: &mut [TileProgram],
    src: u32,
    sa: u32,
    dst: u32,
    da: u32,
    len: u32,
    counter: u32,
) {
    for (o, w, v) in transfers(len, arch.tile.max_transfer_words as u32, 255) {
        tiles[src as usize].tile_code.push(TileInstr::Send {
            addr: sa + o,
            fifo: src,
            width: w,
            target: dst,
            vec: v,
        });
        tiles[dst as usize].tile_code.push(TileInstr::Receive {
            addr: da + o,
            fifo: src,
            width: w,
            counter,
            vec: v,
        });
    }
}

impl Gen<'_> {
    fn dm_base(&self) -> u32 {
        self.arch.data_mem_base()
    }

    fn reg_of(&self, cs: &CoreState, v: VId) -> u32 {
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
    fn alloc(
        &self,
        cs: &mut CoreState,
        len: u32,
        pinned: &[VId],
        shm: &mut [RangeAlloc],
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
                return Err(CompileError::Registers {
                    tile: self.tile as usize,
                    core: self.core as usize,
                    words: len as usize,
                    have: cs.regs.capacity as usize,
                });
            };
            let vlen = self.s.ops[v as usize].len;
            let t = self.tile as usize;
            let sa = shm[t]
                .alloc(vlen)
                .ok_or_else(|| CompileError::SharedMemory {
                    tile: t,
                    layer: format!(
                        "register spill (graph node #{})",
                        self.s.ops[v as usize].node
                    ),
                    need: (shm[t].high_water + vlen) as usize,
                    have: self.arch.tile.shared_mem_words,
                })?;
            emit_store(self.arch, &mut cs.code, sa, a, vlen, 1);
            *spills += 1;
            cs.regs.free(a - self.dm_base(), vlen);
            cs.resident.remove(&v);
            cs.spilled.insert(v, sa);
        }
    }

    /// Bring a spilled local value back into registers.
    fn ensure_resident(
        &self,
        cs: &mut CoreState,
        v: VId,
        pinned: &[VId],
        shm: &mut [RangeAlloc],
        spills: &mut usize,
    ) -> Result<u32, CompileError> {
        if cs.resident.contains_key(&v) {
            return Ok(self.reg_of(cs, v));
        }
        let sa = cs.spilled.remove(&v).ok_or_else(|| {
            CompileError::Internal(format!(
                "value {v} read on t{} c{} before it was computed there",
                self.tile, self.core
            ))
        })?;
        let len = self.s.ops[v as usize].len;
        let a = self.alloc(cs, len, pinned, shm, spills)?;
        emit_load(self.arch, &mut cs.code, a, sa, len);
        cs.resident.insert(v, Res::Gen(a));
        Ok(a)
    }

    /// Move a live XbarOut value to general registers before its MVMU runs again.
    fn evict_xout(
        &self,
        cs: &mut CoreState,
        m: u32,
        pinned: &[VId],
        shm: &mut [RangeAlloc],
        spills: &mut usize,
    ) -> Result<(), CompileError> {
        if let Some(v) = cs.xout[m as usize].take() {
            if cs.resident.get(&v) == Some(&Res::XOut(m)) && self.next_use(cs, v) != usize::MAX {
                let len = self.s.ops[v as usize].len;
                let a = self.alloc(cs, len, pinned, shm, spills)?;
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
    fn fill(
        &self,
        cs: &mut CoreState,
        ps: &[Piece],
        dst: Option<u32>,
        pinned: &[VId],
        shm: &mut [RangeAlloc],
        addr_of: &[HashMap<VId, u32>],
        spills: &mut usize,
    ) -> Result<u32, CompileError> {
        let total: u32 = ps.iter().map(|p| p.len).sum();
        let dst = match dst {
            Some(d) => d,
            None => self.alloc(cs, total, pinned, shm, spills)?,
        };
        let me = Loc::Core {
            tile: self.tile,
            core: self.core,
        };
        let mut o = 0;
        for p in ps {
            let src = &self.s.ops[p.v as usize];
            if src.loc == me && !src.shm {
                let a = self.ensure_resident(cs, p.v, pinned, shm, spills)?;
                cs.code.push(CoreInstr::Copy {
                    d1: dst + o,
                    r1: a + p.off,
                    vec: p.len,
                });
            } else {
                let base = addr_of[self.tile as usize]
                    .get(&p.v)
                    .copied()
                    .ok_or_else(|| {
                        CompileError::Internal(format!(
                            "value {} has no address on tile {}",
                            p.v, self.tile
                        ))
                    })?;
                emit_load(self.arch, &mut cs.code, dst + o, base + p.off, p.len);
            }
            o += p.len;
        }
        Ok(dst)
    }

    /// Register address of an operand; true when a temporary was allocated.
    fn operand(
        &self,
        cs: &mut CoreState,
        ps: &[Piece],
        pinned: &[VId],
        shm: &mut [RangeAlloc],
        addr_of: &[HashMap<VId, u32>],
        spills: &mut usize,
    ) -> Result<(u32, bool), CompileError> {
        let me = Loc::Core {
            tile: self.tile,
            core: self.core,
        };
        if ps.len() == 1
            && self.s.ops[ps[0].v as usize].loc == me
            && !self.s.ops[ps[0].v as usize].shm
        {
            let a = self.ensure_resident(cs, ps[0].v, pinned, shm, spills)?;
            return Ok((a + ps[0].off, false));
        }
        Ok((self.fill(cs, ps, None, pinned, shm, addr_of, spills)?, true))
    }

    /// Consume one use of each local operand; free values with no further use.
    fn release_operands(&self, cs: &mut CoreState, operands: &[&[Piece]]) {
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
                        self.drop_value(cs, p.v);
                    }
                }
            }
        }
    }

    fn drop_value(&self, cs: &mut CoreState, v: VId) {
        match cs.resident.remove(&v) {
            Some(Res::Gen(a)) => cs.regs.free(a - self.dm_base(), self.s.ops[v as usize].len),
            Some(Res::XOut(_)) | None => {}
        }
        cs.uses.remove(&v);
    }
}
