//! Static analysis per nest (Torch-PIM §4.2): N_iter (product of parallel extents),
//! N_total (product of all extents), trip count of enclosing loops, bytes read and
//! written per allocation, and an instruction estimate per innermost iteration.

use crate::ir::*;
use serde::Serialize;

/// Bytes an operand set touches in one allocation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AllocBytes {
    pub alloc: AllocId,
    pub bytes: u64,
}

/// Instruction cost of each body operation, per evaluation. Transcendentals count their
/// libm-style expansion (range reduction + polynomial), as an in-order single-issue
/// core without transcendental hardware executes them.
pub mod cost {
    pub const LOAD: f64 = 1.0;
    pub const STORE: f64 = 1.0;
    pub const ALU: f64 = 1.0;
    pub const EXP: f64 = 10.0;
    pub const LOG: f64 = 12.0;
    pub const TANH: f64 = 14.0;
    pub const ERF: f64 = 16.0;
    pub const SINCOS: f64 = 14.0;
    pub const POW: f64 = 23.0;
    pub const RSQRT: f64 = 2.0;
    pub const REM: f64 = 3.0;
    /// Increment, compare and branch of the innermost loop.
    pub const LOOP: f64 = 2.0;
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct NestStats {
    /// Product of the parallel extents (scf.parallel iterations).
    pub n_iter: u64,
    /// Product of every extent.
    pub n_total: u64,
    /// Trip count of the loops enclosing the nest (1: every nest is top-level).
    pub trip: u64,
    /// Bytes read per allocation (`ins` and accumulators).
    pub reads: Vec<AllocBytes>,
    /// Bytes written per allocation (`outs`).
    pub writes: Vec<AllocBytes>,
    pub read_bytes: u64,
    pub write_bytes: u64,
    pub loads_per_iter: f64,
    pub stores_per_iter: f64,
    /// Arithmetic instructions per innermost iteration (transcendentals expanded).
    pub arith_per_iter: f64,
    /// loads + stores + arithmetic + loop overhead.
    pub instr_per_iter: f64,
    /// False when some index is data-dependent (gather, reflect pad, tile).
    pub affine: bool,
}

/// Bounding-box element count of one access, capped at the tensor's size.
fn footprint(t: &TensorInfo, index: &[Index], dims: &[Dim]) -> u64 {
    let mut elems: u64 = 1;
    for (k, ix) in index.iter().enumerate() {
        let axis = t.shape.get(k).copied().unwrap_or(1) as u64;
        let range = if ix.dynamic.is_some() {
            axis
        } else {
            let span: i64 = ix
                .terms
                .iter()
                .map(|&(d, c)| c.abs() * (dims[d].extent as i64 - 1))
                .sum();
            (span as u64 + 1).min(axis)
        };
        elems = elems.saturating_mul(range);
    }
    elems.min(t.numel() as u64)
}

fn expr_cost(e: &Expr, loads: &mut f64, arith: &mut f64, affine: &mut bool) {
    e.visit(&mut |x| match x {
        Expr::Load { index, .. } => {
            *loads += cost::LOAD;
            if index.iter().any(|i| i.dynamic.is_some()) {
                *affine = false;
                *arith += cost::ALU;
            }
        }
        Expr::Const { .. } | Expr::DimIndex(_) => {}
        Expr::Unary(f, _) => {
            *arith += match f {
                UFn::Exp => cost::EXP,
                UFn::Log => cost::LOG,
                UFn::Tanh => cost::TANH,
                UFn::Erf => cost::ERF,
                f if f.is_trig() => cost::SINCOS,
                UFn::Rsqrt => cost::RSQRT,
                // every other unary function is one ALU operation
                _ => cost::ALU,
            }
        }
        Expr::Binary(f, _, _) => {
            *arith += match f {
                BFn::Pow => cost::POW,
                BFn::Rem => cost::REM,
                // every other binary function is one ALU operation
                _ => cost::ALU,
            }
        }
        Expr::Select(..) | Expr::Cast(..) | Expr::Fma(..) => *arith += cost::ALU,
    });
}

fn per_alloc(p: &Program, items: Vec<(TensorId, u64)>) -> Vec<AllocBytes> {
    let mut v: Vec<AllocBytes> = vec![];
    for (t, elems) in items {
        let ti = &p.tensors[t];
        let Some(a) = ti.alloc else { continue };
        let bytes = elems * ti.dtype.size() as u64;
        match v.iter_mut().find(|x| x.alloc == a) {
            Some(x) => x.bytes += bytes,
            None => v.push(AllocBytes { alloc: a, bytes }),
        }
    }
    for x in &mut v {
        x.bytes = x.bytes.min(p.allocs[x.alloc].bytes() as u64);
    }
    v
}

/// Analyse one nest of a bufferized program.
pub fn analyze(p: &Program, n: &Nest) -> NestStats {
    let n_iter: u64 = n
        .dims
        .iter()
        .filter(|d| d.kind == DimKind::Parallel)
        .map(|d| d.extent as u64)
        .product();
    let n_total: u64 = n.dims.iter().map(|d| d.extent as u64).product();
    // Largest footprint of each operand over its loads and stores.
    let mut rd = vec![0u64; n.operands.len()];
    let mut wr = vec![0u64; n.operands.len()];
    let (mut loads, mut arith, mut affine) = (0.0, 0.0, true);
    for s in &n.stores {
        let t = &p.tensors[n.operands[s.operand].tensor];
        wr[s.operand] = wr[s.operand].max(footprint(t, &s.index, &n.dims));
        if s.index.iter().any(|i| i.dynamic.is_some()) {
            affine = false;
        }
        expr_cost(&s.value, &mut loads, &mut arith, &mut affine);
        s.value.visit(&mut |e| {
            if let Expr::Load { operand, index } = e {
                let t = &p.tensors[n.operands[*operand].tensor];
                rd[*operand] = rd[*operand].max(footprint(t, index, &n.dims));
            }
        });
    }
    let reads = per_alloc(
        p,
        n.operands
            .iter()
            .enumerate()
            .filter(|(_, o)| o.role != Role::Out)
            .map(|(j, o)| (o.tensor, rd[j]))
            .collect(),
    );
    let writes = per_alloc(
        p,
        n.operands
            .iter()
            .enumerate()
            .filter(|(_, o)| o.role != Role::In)
            .map(|(j, o)| (o.tensor, wr[j]))
            .collect(),
    );
    let stores = n.stores.len() as f64 * cost::STORE;
    NestStats {
        n_iter,
        n_total,
        trip: 1,
        read_bytes: reads.iter().map(|x| x.bytes).sum(),
        write_bytes: writes.iter().map(|x| x.bytes).sum(),
        reads,
        writes,
        loads_per_iter: loads,
        stores_per_iter: stores,
        arith_per_iter: arith,
        instr_per_iter: loads + stores + arith + cost::LOOP,
        affine,
    }
}
