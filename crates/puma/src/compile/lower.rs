//! Pass 1's shared state: how a graph tensor is tracked while lowering (`LT`, `Val`),
//! the lowering context `Lb` with the vector-op builders every `lower_*` pass uses, and
//! small helpers (operand access, strides, broadcasting). The graph walk that dispatches
//! each node to a pass is `lower_graph.rs`; this module depends on no pass, so the
//! passes and the walk form a DAG (docs/architecture.md, "Rules").

use super::{CompileError, Kind, Loc, Piece, VId, VOp};
use crate::arch::Arch;
use crate::fixed::{Fmt, NumMode};
use crate::isa::AluOp;
use crate::program::{FIRST_COMPUTE_TILE, MatTile, MatrixInfo};
use pimkit_ir::{Graph, ValueDef, ValueId};
use std::collections::HashMap;

/// A lowered tensor: shape and, per logical element, (value, offset).
#[derive(Clone, Debug)]
pub struct LT {
    pub shape: Vec<usize>,
    pub map: Vec<(VId, u32)>,
}

/// An operand: a dynamic lowered tensor or constant data.
#[derive(Clone, Debug)]
pub enum Val {
    Dyn(LT),
    Const { shape: Vec<usize>, data: Vec<f32> },
}

impl Val {
    pub fn shape(&self) -> &[usize] {
        match self {
            Val::Dyn(t) => &t.shape,
            Val::Const { shape, .. } => shape,
        }
    }
}

pub(super) struct Lb<'a> {
    pub g: &'a Graph,
    pub arch: &'a Arch,
    pub fmt: Fmt,
    pub seg: usize,
    pub ops: Vec<VOp>,
    pub vals: Vec<Option<Val>>,
    pub weights: Vec<(u32, Vec<i16>, u8)>,
    /// Next free global MVMU index.
    pub next_mvmu: u32,
    pub matrices: Vec<MatrixInfo>,
    pub const_cache: HashMap<Vec<u32>, VId>,
    pub fixed: super::Fixed,
    pub node: u32,
    pub shape_only: bool,
    /// Weight copies per node name (the replication plan, `replicate.rs`).
    pub plan: HashMap<String, usize>,
    /// Values computed at compile time from constants (`fold`), in their own types.
    pub folded: HashMap<ValueId, pimkit_ir::Tensor>,
    /// At most this many MVMUs of a matrix per tile (0: no limit).
    pub spread: usize,
    /// Shared-memory words committed to line buffers on the tile of `next_mvmu`.
    pub tile_words: u32,
    pub depthwise: super::Depthwise,
}

pub(super) fn unsupported(g: &Graph, node: u32, msg: impl Into<String>) -> CompileError {
    let n = &g.nodes[node as usize];
    CompileError::Unsupported {
        node: n.name.clone(),
        op: n.op.name().to_string(),
        msg: msg.into(),
    }
}

/// Row-major strides.
/// Required operand `i` (a position from `pimkit_ir::operand`) of node `ni`.
pub(super) fn input(lb: &Lb, ni: usize, i: usize) -> Result<ValueId, CompileError> {
    lb.g.nodes[ni]
        .input(i)
        .ok_or_else(|| unsupported(lb.g, ni as u32, format!("input {i} is missing")))
}

/// Optional operand `i` of node `ni`: `None` when omitted.
pub(super) fn opt_input(lb: &Lb, ni: usize, i: usize) -> Option<ValueId> {
    lb.g.nodes[ni].input(i)
}

pub(super) fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![1; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1];
    }
    s
}

/// Index into `in_shape` of output element `o` under numpy broadcasting.
pub(super) fn bcast_index(o: usize, out_shape: &[usize], in_shape: &[usize]) -> usize {
    let os = strides(out_shape);
    let is = strides(in_shape);
    let off = out_shape.len() - in_shape.len();
    let mut idx = 0;
    for d in 0..in_shape.len() {
        let od = d + off;
        let coord = (o / os[od]) % out_shape[od];
        if in_shape[d] != 1 {
            idx += coord * is[d];
        }
    }
    idx
}

/// Merge a sequence of (value, offset) element locations into runs.
pub(super) fn runs(locs: impl IntoIterator<Item = (VId, u32)>) -> Vec<Piece> {
    let mut out: Vec<Piece> = Vec::new();
    for (v, off) in locs {
        if let Some(last) = out.last_mut()
            && last.v == v
            && last.off + last.len == off
        {
            last.len += 1;
            continue;
        }
        out.push(Piece { v, off, len: 1 });
    }
    out
}

impl<'a> Lb<'a> {
    pub fn push(&mut self, kind: Kind, len: u32, loc: Loc) -> VId {
        let id = self.ops.len() as VId;
        self.ops.push(VOp {
            kind,
            len,
            loc,
            node: self.node,
            shm: false,
            row: super::NO_ROW,
            frac: self.fmt.frac as u8,
        });
        id
    }

    pub fn q(&self, x: f32) -> i16 {
        self.fmt.from_f64(x as f64, NumMode::Exact) as i16
    }

    /// A constant vector (deduplicated by content: by quantized words when every word
    /// has the architecture's format, by value otherwise).
    pub fn const_vec(&mut self, vals: &[f32]) -> VId {
        let key: Vec<u32> = match self.fixed {
            super::Fixed::Uniform => vals.iter().map(|&x| self.q(x) as u16 as u32).collect(),
            super::Fixed::PerTensor => vals.iter().map(|x| x.to_bits()).collect(),
        };
        if let Some(&v) = self.const_cache.get(&key) {
            return v;
        }
        let len = vals.len() as u32;
        let v = self.push(Kind::Const(vals.to_vec()), len, Loc::Const);
        self.const_cache.insert(key, v);
        v
    }

    pub fn const_pieces(&mut self, vals: &[f32]) -> Vec<Piece> {
        let v = self.const_vec(vals);
        vec![Piece {
            v,
            off: 0,
            len: vals.len() as u32,
        }]
    }

    /// Placement of a non-MVM op: the core of the first operand computed on a core.
    pub fn loc_of(&self, ps: &[&[Piece]]) -> Loc {
        for list in ps {
            for p in *list {
                if let l @ Loc::Core { .. } = self.ops[p.v as usize].loc {
                    return l;
                }
            }
        }
        Loc::Core {
            tile: FIRST_COMPUTE_TILE as u32,
            core: 0,
        }
    }

    pub fn alu(&mut self, op: AluOp, a: Vec<Piece>, b: Option<Vec<Piece>>) -> VId {
        let len: u32 = a.iter().map(|p| p.len).sum();
        let loc = match &b {
            Some(b) => self.loc_of(&[&a, b]),
            None => self.loc_of(&[&a]),
        };
        self.push(Kind::Alu { op, a, b }, len, loc)
    }

    pub fn alui(&mut self, op: AluOp, a: Vec<Piece>, imm: f32) -> VId {
        let len: u32 = a.iter().map(|p| p.len).sum();
        let loc = self.loc_of(&[&a]);
        self.push(Kind::Alui { op, a, imm }, len, loc)
    }

    pub fn whole(v: VId, len: u32) -> Vec<Piece> {
        vec![Piece { v, off: 0, len }]
    }

    /// Vector segments of a tensor: runs of consecutive offsets of one value (in the
    /// order values first appear), at most `seg` long. Returns, per segment, its piece
    /// and the logical indices of its elements in order.
    pub fn segments(&self, t: &LT) -> Vec<(Piece, Vec<usize>)> {
        let mut idx: Vec<usize> = (0..t.map.len()).collect();
        let mut first: HashMap<VId, usize> = HashMap::new();
        for (i, &(v, _)) in t.map.iter().enumerate() {
            first.entry(v).or_insert(i);
        }
        idx.sort_by_key(|&i| (first[&t.map[i].0], t.map[i].1, i));
        let mut out: Vec<(Piece, Vec<usize>)> = Vec::new();
        for i in idx {
            let (v, off) = t.map[i];
            if let Some((last, ids)) = out.last_mut()
                && last.v == v
                && last.off + last.len == off
                && (last.len as usize) < self.seg
            {
                last.len += 1;
                ids.push(i);
                continue;
            }
            out.push((Piece { v, off, len: 1 }, vec![i]));
        }
        out
    }

    /// Apply a per-vector function to every segment of `x`.
    pub fn map_unary(&mut self, x: &LT, mut f: impl FnMut(&mut Self, Vec<Piece>) -> VId) -> LT {
        let segs = self.segments(x);
        let mut map = vec![(0, 0); x.map.len()];
        for (p, ids) in segs {
            let v = f(self, vec![p]);
            // Elementwise results of feature maps stay feature maps.
            if self.ops[p.v as usize].shm {
                self.ops[v as usize].shm = true;
            }
            for (k, i) in ids.into_iter().enumerate() {
                map[i] = (v, k as u32);
            }
        }
        LT {
            shape: x.shape.clone(),
            map,
        }
    }

    pub fn val(&self, v: ValueId) -> Result<Val, CompileError> {
        self.vals[v.idx()].clone().ok_or_else(|| {
            CompileError::Internal(format!(
                "value {} used before lowering",
                self.g.value(v).name
            ))
        })
    }

    /// The data of a constant value (a graph constant or one folded at compile time).
    pub fn const_data(&mut self, v: ValueId) -> Option<Vec<f32>> {
        match &self.vals[v.idx()] {
            Some(Val::Const { data, .. }) => {
                if matches!(self.g.value(v).def, ValueDef::Const(None)) {
                    self.shape_only = true;
                }
                Some(data.clone())
            }
            // dynamic values have no constant data
            _ => None,
        }
    }

    pub fn dyn_val(&self, v: ValueId, what: &str) -> Result<LT, CompileError> {
        match self.val(v)? {
            Val::Dyn(t) => Ok(t),
            Val::Const { shape, data } => {
                // Materialize a constant as a tensor of constant vectors.
                let _ = (shape, data, what);
                Err(unsupported(
                    self.g,
                    self.node,
                    format!("{what} must not be a constant"),
                ))
            }
        }
    }

    /// Materialize a value as a dynamic tensor (constants become constant vectors).
    pub fn as_lt(&mut self, v: &Val) -> LT {
        match v {
            Val::Dyn(t) => t.clone(),
            Val::Const { shape, data } => {
                let mut map = Vec::with_capacity(data.len());
                for chunk in data.chunks(self.seg.max(1)) {
                    let c = self.const_vec(chunk);
                    for k in 0..chunk.len() {
                        map.push((c, k as u32));
                    }
                }
                LT {
                    shape: shape.clone(),
                    map,
                }
            }
        }
    }

    /// Elementwise binary op with broadcasting.
    pub fn binary(&mut self, op: AluOp, a: &Val, b: &Val, out_shape: &[usize]) -> LT {
        let n: usize = out_shape.iter().product();
        let commutative = matches!(op, AluOp::Add | AluOp::Mul | AluOp::Max | AluOp::Min);
        let (a, b, swapped) = match (a, b) {
            (Val::Const { .. }, Val::Dyn(_)) if commutative => (b, a, true),
            // only a constant left operand of a commutative op is swapped
            _ => (a, b, false),
        };
        let _ = swapped;
        let a_lt = self.as_lt(a);
        let a_shape = a.shape().to_vec();
        let b_shape = b.shape().to_vec();
        // Segment the output along runs of the first operand's values.
        let a_of: Vec<(VId, u32)> = (0..n)
            .map(|o| a_lt.map[bcast_index(o, out_shape, &a_shape)])
            .collect();
        let segs = self.segments(&LT {
            shape: out_shape.to_vec(),
            map: a_of.clone(),
        });
        let mut map = vec![(0, 0); n];
        for (_, ids) in segs {
            let a_p = runs(ids.iter().map(|&o| a_of[o]));
            let v = match b {
                Val::Const { data, .. } => {
                    let vals: Vec<f32> = ids
                        .iter()
                        .map(|&o| data[bcast_index(o, out_shape, &b_shape)])
                        .collect();
                    let uniform = vals.iter().all(|&x| x == vals[0]);
                    if uniform && op != AluOp::Div {
                        self.alui(op, a_p, vals[0])
                    } else if uniform && vals[0] != 0.0 {
                        self.alui(AluOp::Mul, a_p, 1.0 / vals[0])
                    } else {
                        let b_p = self.const_pieces(&vals);
                        self.alu(op, a_p, Some(b_p))
                    }
                }
                Val::Dyn(bt) => {
                    let b_p = runs(
                        ids.iter()
                            .map(|&o| bt.map[bcast_index(o, out_shape, &b_shape)]),
                    );
                    self.alu(op, a_p, Some(b_p))
                }
            };
            if self.ops[a_of[ids[0]].0 as usize].shm {
                self.ops[v as usize].shm = true;
            }
            for (k, &o) in ids.iter().enumerate() {
                map[o] = (v, k as u32);
            }
        }
        LT {
            shape: out_shape.to_vec(),
            map,
        }
    }

    /// Register a weight matrix (`rows × cols`, element (r, c) from `w`) partitioned into
    /// the given row blocks and column tiles; returns the MVMU index per [block][tile].
    /// Tiles of one row block (feeding the same outputs) get consecutive MVMUs.
    pub fn add_matrix(
        &mut self,
        name: String,
        rows: usize,
        cols: usize,
        row_blocks: &[(usize, usize)],
        col_tiles: &[(usize, usize)],
        w: &dyn Fn(usize, usize) -> f32,
    ) -> Vec<Vec<u32>> {
        let xs = self.arch.mvmu.xbar_size;
        let per_core = self.arch.core.mvmus;
        let per_tile = self.arch.mvmus_per_tile();
        let mut info = MatrixInfo {
            node: name,
            rows,
            cols,
            tiles: Vec::new(),
        };
        let mut ids = Vec::new();
        let mut on_tile = 0;
        if self.spread > 0 {
            self.align_tile();
        }
        for &(r0, rn) in row_blocks {
            let mut row_ids = Vec::new();
            for &(c0, cn) in col_tiles {
                if self.spread > 0 && on_tile == self.spread {
                    self.align_tile();
                    on_tile = 0;
                }
                on_tile += 1;
                let g = self.next_mvmu as usize;
                self.next_mvmu += 1;
                let mut vals = vec![0f32; rn * cn];
                for r in 0..rn {
                    for c in 0..cn {
                        vals[r * cn + c] = w(r0 + r, c0 + c);
                    }
                }
                // Weights exactly: the MVMU's fraction bits fit its largest weight.
                let frac = match self.fixed {
                    super::Fixed::Uniform => self.fmt.frac,
                    super::Fixed::PerTensor => super::fixed_point::exact_frac(
                        vals.iter().map(|x| x.abs()).fold(0.0, f32::max),
                    ),
                };
                let f = Fmt {
                    bits: self.fmt.bits,
                    frac,
                };
                let mut data = vec![0i16; xs * xs];
                for r in 0..rn {
                    for c in 0..cn {
                        data[r * xs + c] =
                            f.from_f64(vals[r * cn + c] as f64, NumMode::Exact) as i16;
                    }
                }
                self.weights.push((g as u32, data, frac as u8));
                info.tiles.push(MatTile {
                    tile: FIRST_COMPUTE_TILE + g / per_tile,
                    core: (g % per_tile) / per_core,
                    mvmu: g % per_core,
                    row0: r0,
                    rows: rn,
                    col0: c0,
                    cols: cn,
                });
                row_ids.push(g as u32);
            }
            ids.push(row_ids);
        }
        self.matrices.push(info);
        ids
    }

    /// Weight copies the replication plan asks for node `name` (1 by default).
    pub fn replicas(&self, name: &str) -> usize {
        self.plan.get(name).copied().unwrap_or(1).max(1)
    }

    /// Start the next matrix on a fresh tile (a layer whose line buffer needs the
    /// tile's shared memory, or a replica that must not share it).
    pub fn align_tile(&mut self) {
        let per_tile = self.arch.mvmus_per_tile() as u32;
        let next = self.next_mvmu.div_ceil(per_tile) * per_tile;
        if next != self.next_mvmu {
            self.tile_words = 0;
        }
        self.next_mvmu = next;
    }

    /// The next matrix needs `words` of its tile's shared memory: move to a fresh tile
    /// when the current one has committed half its memory already.
    pub fn reserve(&mut self, words: u32) {
        let per_tile = self.arch.mvmus_per_tile() as u32;
        if self.next_mvmu.is_multiple_of(per_tile) {
            self.tile_words = 0;
        }
        let budget = self.arch.tile.shared_mem_words as u32 / 2;
        if words > 0 && self.tile_words > 0 && self.tile_words + words > budget {
            self.align_tile();
        }
        self.tile_words += words;
    }

    pub fn mvmu_loc(&self, g: u32) -> Loc {
        let per_core = self.arch.core.mvmus;
        let per_tile = self.arch.mvmus_per_tile();
        let g = g as usize;
        Loc::Core {
            tile: (FIRST_COMPUTE_TILE + g / per_tile) as u32,
            core: ((g % per_tile) / per_core) as u32,
        }
    }

    /// One matrix-vector product: MVMs per column tile, partial sums reduced first on
    /// each core, then across cores on the block's first core, plus bias.
    /// `input(t)` gives the pieces of column tile t. Returns one value per row block.
    pub fn matvec(
        &mut self,
        mvmus: &[Vec<u32>],
        row_blocks: &[(usize, usize)],
        input: &mut dyn FnMut(&mut Self, usize) -> Vec<Piece>,
        bias: Option<&[f32]>,
    ) -> Vec<VId> {
        let mut out = Vec::new();
        let ntiles = mvmus.first().map(|r| r.len()).unwrap_or(0);
        let inputs: Vec<Vec<Piece>> = (0..ntiles).map(|t| input(self, t)).collect();
        for (b, &(r0, rn)) in row_blocks.iter().enumerate() {
            let mut by_core: Vec<(Loc, Vec<VId>)> = Vec::new();
            for (t, &m) in mvmus[b].iter().enumerate() {
                let loc = self.mvmu_loc(m);
                let v = self.push(
                    Kind::Mvm {
                        mvmu: m,
                        input: inputs[t].clone(),
                    },
                    rn as u32,
                    loc,
                );
                match by_core.iter_mut().find(|(l, _)| *l == loc) {
                    Some((_, vs)) => vs.push(v),
                    None => by_core.push((loc, vec![v])),
                }
            }
            let rnu = rn as u32;
            let mut sums = Vec::new();
            for (loc, vs) in by_core {
                let mut acc = vs[0];
                for &v in &vs[1..] {
                    acc = self.push(
                        Kind::Alu {
                            op: AluOp::Add,
                            a: Self::whole(acc, rnu),
                            b: Some(Self::whole(v, rnu)),
                        },
                        rnu,
                        loc,
                    );
                }
                sums.push((loc, acc));
            }
            let (owner, mut acc) = sums[0];
            for &(_, s) in &sums[1..] {
                acc = self.push(
                    Kind::Alu {
                        op: AluOp::Add,
                        a: Self::whole(acc, rnu),
                        b: Some(Self::whole(s, rnu)),
                    },
                    rnu,
                    owner,
                );
            }
            if let Some(bias) = bias {
                let bp = self.const_pieces(&bias[r0..r0 + rn]);
                acc = self.push(
                    Kind::Alu {
                        op: AluOp::Add,
                        a: Self::whole(acc, rnu),
                        b: Some(bp),
                    },
                    rnu,
                    owner,
                );
            }
            out.push(acc);
        }
        out
    }

    /// Split `0..n` into chunks of at most the crossbar size.
    pub fn chunks(&self, n: usize) -> Vec<(usize, usize)> {
        (0..n)
            .step_by(self.seg)
            .map(|s| (s, self.seg.min(n - s)))
            .collect()
    }
}

/// Constant data of a value as f32 (zeros for shape-only constants).
pub(super) fn const_f32(g: &Graph, v: ValueId, shape_only: &mut bool) -> Option<Vec<f32>> {
    match &g.value(v).def {
        ValueDef::Const(Some(t)) => Some(t.to_f32_vec()),
        ValueDef::Const(None) => {
            *shape_only = true;
            Some(vec![0.0; g.ty(v).numel()])
        }
        // graph inputs and node outputs are not constants
        _ => None,
    }
}

/// Longest vector one ALU instruction may take (half the data memory).
pub(super) fn arch_max_vec(a: &Arch) -> usize {
    a.core.data_mem_words / 2
}
