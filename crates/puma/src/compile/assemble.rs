//! Last step of code generation: per-core code into tiles (with `hlt`/`halt`), output
//! address maps, MVMU weights and the placement summary.

use super::Lowered;
use super::emit::Mem;
use super::{CompileError, Kind, Schedule};
use crate::arch::Arch;
use crate::isa::{CoreInstr, TileInstr};
use crate::program::{
    FIRST_COMPUTE_TILE, IoMap, MvmuWeights, OUTPUT_TILE, Placement, Program, TileProgram,
};
use pimkit_ir::Graph;
use std::collections::HashMap;

/// Per-element fraction bits of an I/O map (empty when all are the architecture's).
pub fn fracs(arch: &Arch, it: impl Iterator<Item = u8>) -> Vec<u8> {
    let v: Vec<u8> = it.collect();
    if v.iter().all(|&f| f as u32 == arch.fixed.frac_bits) {
        Vec::new()
    } else {
        v
    }
}

/// Output shift of every MVMU: its weights' plus its input's minus its output's fraction
/// bits, the same for every MVM it runs.
fn mvmu_shifts(l: &Lowered, s: &Schedule) -> Result<HashMap<u32, i32>, CompileError> {
    let wf: HashMap<u32, u8> = l.weights.iter().map(|w| (w.0, w.2)).collect();
    let mut out: HashMap<u32, i32> = HashMap::new();
    for op in &s.ops {
        let Kind::Mvm { mvmu, input } = &op.kind else {
            continue;
        };
        // An all-zero input (a window entirely in the padding) gives 0 at any shift.
        let Some(fx) = input
            .iter()
            .find(|p| !matches!(&s.ops[p.v as usize].kind, Kind::Const(d) if d.iter().all(|&x| x == 0.0)))
            .map(|p| s.ops[p.v as usize].frac)
        else {
            continue;
        };
        let sh = wf[mvmu] as i32 + fx as i32 - op.frac as i32;
        if let Some(&old) = out.get(mvmu)
            && old != sh
        {
            return Err(CompileError::Internal(format!(
                "MVMU {mvmu} is used with output shifts {old} and {sh}"
            )));
        }
        out.insert(*mvmu, sh);
    }
    Ok(out)
}

#[allow(clippy::too_many_arguments)]
pub fn assemble(
    arch: &Arch,
    l: &Lowered,
    s: &Schedule,
    g: &Graph,
    mut tiles: Vec<TileProgram>,
    cores: HashMap<(u32, u32), Vec<CoreInstr>>,
    mem: &Mem,
    inputs: Vec<IoMap>,
    spill_stores: usize,
    coalesced: usize,
) -> Result<Program, CompileError> {
    let ntiles = tiles.len();
    let per_tile = arch.mvmus_per_tile();
    let mut cores_used = 0;
    for ((t, c), code) in cores {
        if !code.is_empty() {
            cores_used += 1;
        }
        tiles[t as usize].cores[c as usize] = code;
    }
    for tp in tiles.iter_mut() {
        for c in tp.cores.iter_mut() {
            c.push(CoreInstr::Hlt);
        }
        tp.tile_code.push(TileInstr::Halt);
    }
    for (t, a) in mem.tiles.iter().enumerate() {
        // Flag words sit at the top of the memory.
        tiles[t].shmem_words_used = a.words_used() as usize;
    }
    let mut outputs = Vec::new();
    for op in &l.ops {
        if let Kind::Output { index, pieces } = &op.kind {
            let mut addrs = Vec::with_capacity(op.len as usize);
            for p in pieces {
                for w in p.off..p.off + p.len {
                    addrs.push(mem.word(OUTPUT_TILE as u32, p.v, w).ok_or_else(|| {
                        CompileError::Internal(format!(
                            "output value {} never reached the output tile",
                            p.v
                        ))
                    })?);
                }
            }
            let (name, shape) = l.outputs[*index].clone();
            let f = fracs(
                arch,
                pieces
                    .iter()
                    .flat_map(|p| std::iter::repeat_n(s.ops[p.v as usize].frac, p.len as usize)),
            );
            outputs.push(IoMap {
                name,
                shape,
                dtype: pimkit_ir::DType::F32,
                tile: OUTPUT_TILE,
                addrs,
                counts: vec![],
                fracs: f,
            });
        }
    }
    let shifts = mvmu_shifts(l, s)?;
    let weights: Vec<MvmuWeights> = l
        .weights
        .iter()
        .map(|(gi, d, _)| {
            let shift = shifts
                .get(gi)
                .copied()
                .filter(|&x| x != arch.fixed.frac_bits as i32);
            let gi = *gi as usize;
            MvmuWeights {
                tile: FIRST_COMPUTE_TILE + gi / per_tile,
                core: (gi % per_tile) / arch.core.mvmus,
                mvmu: gi % arch.core.mvmus,
                shift,
                data: d.clone(),
            }
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
        replication: None,
        syncs: mem.syncs,
        out_of_range: l.out_of_range.clone(),
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
