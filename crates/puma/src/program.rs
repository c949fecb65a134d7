//! A compiled PUMA program: per-tile and per-core code, MVMU weights, shared-memory
//! initial contents (constants and inputs), I/O address maps and the placement summary.
//! `save`/`load` use a directory (docs/puma.md "Compiled program directory").

use crate::arch::Arch;
use crate::isa::{self, CoreInstr, TileInstr};
use pimkit_ir::DType;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Reader count meaning "persistent": loads never decrement it (preloaded constants).
pub const PERSISTENT: u32 = u32::MAX;

/// Tile 0 holds the graph inputs (host → accelerator), tile 1 receives the outputs;
/// compute tiles start at 2 (the original's layout, ref §2.2 `num_tile`).
pub const INPUT_TILE: usize = 0;
pub const OUTPUT_TILE: usize = 1;
pub const FIRST_COMPUTE_TILE: usize = 2;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TileProgram {
    #[serde(skip)]
    pub tile_code: Vec<TileInstr>,
    #[serde(skip)]
    pub cores: Vec<Vec<CoreInstr>>,
    /// Preloaded persistent words (constants): (address, raw values).
    pub shmem_init: Vec<(u32, Vec<i16>)>,
    /// Highest shared-memory word used + 1.
    pub shmem_words_used: usize,
}

/// Weights of one MVMU: `xbar_size²` raw fixed-point values, row-major (row = output).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MvmuWeights {
    pub tile: usize,
    pub core: usize,
    pub mvmu: usize,
    /// Output shift: the MVMU's results are Σ w·x / 2^shift (its weights' plus its
    /// input's minus its output's fraction bits); absent: the architecture's frac_bits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shift: Option<i32>,
    #[serde(skip)]
    pub data: Vec<i16>,
}

/// Where the elements of one graph input or output live (logical row-major order).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct IoMap {
    pub name: String,
    pub shape: Vec<usize>,
    /// Element type the host passes (inputs: the graph input's float type) or gets
    /// (outputs: always f32). Absent in older manifests: f32.
    #[serde(default = "default_dtype")]
    pub dtype: DType,
    pub tile: usize,
    pub addrs: Vec<u32>,
    /// Inputs only: reader count of each element's word.
    pub counts: Vec<u32>,
    /// Fraction bits of each element's word (per-tensor fixed point); empty: the
    /// architecture's frac_bits for all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fracs: Vec<u8>,
}

fn default_dtype() -> DType {
    DType::F32
}

/// One weight-matrix tile on one MVMU.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatTile {
    pub tile: usize,
    pub core: usize,
    pub mvmu: usize,
    pub row0: usize,
    pub rows: usize,
    pub col0: usize,
    pub cols: usize,
}

/// A weight matrix of a graph node and the MVMU tiles it was split into.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatrixInfo {
    pub node: String,
    pub rows: usize,
    pub cols: usize,
    pub tiles: Vec<MatTile>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    pub matrices: Vec<MatrixInfo>,
    pub tiles_used: usize,
    pub cores_used: usize,
    pub mvmus_used: usize,
    pub nodes_used: usize,
    pub spill_stores: usize,
    pub coalesced_mvms: usize,
    pub loops_rolled: usize,
    /// The weight-replication plan, when one was asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<crate::plan::Plan>,
    /// Syncs inserted for shared-memory reuse (flag store + load pairs).
    #[serde(default)]
    pub syncs: usize,
    /// Values whose calibrated magnitude exceeds the largest 16-bit word even at 0
    /// fraction bits (±32767): they saturate whatever the format, so the run's error
    /// is genuine (docs/puma.md "Fixed point per tensor"). Largest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub out_of_range: Vec<OutOfRange>,
}

/// A graph node whose values are beyond any 16-bit fixed-point format.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OutOfRange {
    /// The graph node (or `inputs`).
    pub node: String,
    /// Largest calibrated magnitude of its values.
    pub max_abs: f64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Program {
    pub name: String,
    pub arch: Arch,
    pub tiles: Vec<TileProgram>,
    pub weights: Vec<MvmuWeights>,
    pub inputs: Vec<IoMap>,
    pub outputs: Vec<IoMap>,
    pub placement: Placement,
    /// True when the graph had shape-only constants (weights taken as zero).
    pub shape_only: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ProgramError {
    #[error("{path}: {msg}")]
    Io { path: String, msg: String },
    #[error("{path}: {source}")]
    Asm { path: String, source: isa::AsmError },
    #[error("{path}: manifest is invalid: {msg}")]
    Manifest { path: String, msg: String },
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> ProgramError {
    ProgramError::Io {
        path: path.display().to_string(),
        msg: e.to_string(),
    }
}

impl Program {
    pub fn num_core_instructions(&self) -> usize {
        self.tiles
            .iter()
            .flat_map(|t| t.cores.iter())
            .map(|c| c.len())
            .sum()
    }

    /// Human-readable placement summary.
    pub fn placement_summary(&self) -> String {
        let p = &self.placement;
        let mut s = format!(
            "model {}\ntiles used {} (+ input tile 0, output tile 1), nodes {}, cores {}, MVMUs {}\ncoalesced mvm instructions {}, spill stores {}, rolled loops {}\n",
            self.name,
            p.tiles_used,
            p.nodes_used,
            p.cores_used,
            p.mvmus_used,
            p.coalesced_mvms,
            p.spill_stores,
            p.loops_rolled
        );
        for m in &p.matrices {
            s.push_str(&format!(
                "matrix {} {}x{} -> {} MVMUs:",
                m.node,
                m.rows,
                m.cols,
                m.tiles.len()
            ));
            for t in &m.tiles {
                s.push_str(&format!(
                    " [r{}+{} c{}+{} @t{}c{}m{}]",
                    t.row0, t.rows, t.col0, t.cols, t.tile, t.core, t.mvmu
                ));
            }
            s.push('\n');
        }
        s
    }

    /// Write the program directory: manifest.json, tile<T>/tile.puma, tile<T>/core<C>.puma,
    /// weights.bin (i16 little endian, MVMUs in manifest order), placement.txt.
    pub fn save(&self, dir: &Path) -> Result<(), ProgramError> {
        std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
        let man = serde_json::to_string(self).map_err(|e| io_err(dir, e))?;
        let p = dir.join("manifest.json");
        std::fs::write(&p, man).map_err(|e| io_err(&p, e))?;
        for (t, tp) in self.tiles.iter().enumerate() {
            let td = dir.join(format!("tile{t}"));
            std::fs::create_dir_all(&td).map_err(|e| io_err(&td, e))?;
            let p = td.join("tile.puma");
            std::fs::write(&p, isa::print(&tp.tile_code)).map_err(|e| io_err(&p, e))?;
            for (c, code) in tp.cores.iter().enumerate() {
                let p = td.join(format!("core{c}.puma"));
                std::fs::write(&p, isa::print(code)).map_err(|e| io_err(&p, e))?;
            }
        }
        let mut bytes = Vec::new();
        for w in &self.weights {
            for v in &w.data {
                bytes.extend_from_slice(&v.to_le_bytes());
            }
        }
        let p = dir.join("weights.bin");
        std::fs::write(&p, bytes).map_err(|e| io_err(&p, e))?;
        let p = dir.join("placement.txt");
        std::fs::write(&p, self.placement_summary()).map_err(|e| io_err(&p, e))?;
        Ok(())
    }

    pub fn load(dir: &Path) -> Result<Program, ProgramError> {
        let p = dir.join("manifest.json");
        let s = std::fs::read_to_string(&p).map_err(|e| io_err(&p, e))?;
        let mut prog: Program = serde_json::from_str(&s).map_err(|e| ProgramError::Manifest {
            path: p.display().to_string(),
            msg: e.to_string(),
        })?;
        prog.arch.validate().map_err(|e| ProgramError::Manifest {
            path: p.display().to_string(),
            msg: e.to_string(),
        })?;
        let cores = prog.arch.tile.cores;
        for (t, tp) in prog.tiles.iter_mut().enumerate() {
            let td = dir.join(format!("tile{t}"));
            let p = td.join("tile.puma");
            let s = std::fs::read_to_string(&p).map_err(|e| io_err(&p, e))?;
            tp.tile_code = isa::parse_tile(&s).map_err(|e| ProgramError::Asm {
                path: p.display().to_string(),
                source: e,
            })?;
            tp.cores.clear();
            for c in 0..cores {
                let p = td.join(format!("core{c}.puma"));
                let code = if p.exists() {
                    let s = std::fs::read_to_string(&p).map_err(|e| io_err(&p, e))?;
                    isa::parse_core(&s).map_err(|e| ProgramError::Asm {
                        path: p.display().to_string(),
                        source: e,
                    })?
                } else {
                    vec![CoreInstr::Hlt]
                };
                tp.cores.push(code);
            }
        }
        let p = dir.join("weights.bin");
        let b = std::fs::read(&p).map_err(|e| io_err(&p, e))?;
        let n = prog.arch.mvmu.xbar_size * prog.arch.mvmu.xbar_size;
        if b.len() != prog.weights.len() * n * 2 {
            return Err(ProgramError::Manifest {
                path: p.display().to_string(),
                msg: format!(
                    "expected {} bytes for {} MVMUs, found {}",
                    prog.weights.len() * n * 2,
                    prog.weights.len(),
                    b.len()
                ),
            });
        }
        for (i, w) in prog.weights.iter_mut().enumerate() {
            w.data = b[i * n * 2..(i + 1) * n * 2]
                .chunks(2)
                .map(|c| i16::from_le_bytes([c[0], c[1]]))
                .collect();
        }
        Ok(prog)
    }
}
