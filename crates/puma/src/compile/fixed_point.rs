//! Fixed point per tensor (docs/puma.md "Fixed point per tensor"): every value gets the
//! fraction bits that fit its range in a 16-bit word.
//!
//! * weights: each MVMU's fraction bits fit its largest weight exactly (`exact_frac`,
//!   applied when the matrix is programmed);
//! * activations: the vector ops are evaluated in floating point on calibration inputs
//!   and each class of values — a node's values of one kind (its MVM outputs, its adds,
//!   its sigmoids, ...) — gets the fraction bits that hold its largest magnitude with
//!   one bit of headroom. Values that must share a format are merged first: the pieces
//!   of one MVM input (a crossbar multiplies raw words) and of one ALU operand, and a
//!   gather's pieces with its result (a copy does not convert). All-zero constants
//!   (padding) fit any format and join no class;
//! * constants: fraction bits that fit their largest magnitude exactly.
//!
//! The generated code carries the shifts: each MVMU's output shift (weights' plus
//! input's minus output's fraction bits) and each ALU instruction's `fmt=a.b.d`.

use super::Lowered;
use super::{CompileError, Kind, VId};
use crate::arch::Arch;
use crate::isa::AluOp;
use crate::program::OutOfRange;
use pimkit_ir::{Graph, Tensor};
use std::collections::HashMap;

/// Most fraction bits a word may have: values as small as 2^-48 keep 16 significant
/// bits (a block-floating-point scale per tensor: torchvision's randomly initialised
/// MobileNetV2 ends in logits of 1e-9).
pub const MAX_FRAC: u32 = 48;

/// Largest magnitude of a 16-bit word (at 0 fraction bits, the coarsest format).
pub const WORD_MAX: f64 = 32767.0;

/// Largest fraction bits (≤ `MAX_FRAC`) at which `max_abs` still fits a 16-bit word.
pub fn exact_frac(max_abs: f32) -> u32 {
    let m = max_abs as f64;
    (0..=MAX_FRAC)
        .rev()
        .find(|&f| (m * (1u64 << f) as f64).round() <= 32767.0)
        .unwrap_or(0)
}

/// Fraction bits for an activation class of largest magnitude `max_abs`, with headroom
/// for inputs beyond the calibration's range: the largest calibrated value is at most
/// `limit` (16383: one bit; 4095: three bits). A class that was all zeros in calibration
/// keeps the architecture's format (`default`).
pub fn activation_frac(max_abs: f32, default: u32, limit: f64) -> u32 {
    if max_abs == 0.0 {
        return default;
    }
    let m = max_abs as f64;
    (0..=MAX_FRAC)
        .rev()
        .find(|&f| m * (1u64 << f) as f64 <= limit)
        .unwrap_or(0)
}

/// Headroom of values that feed crossbars: three bits (|word| ≤ 4095 at calibration,
/// eight times the calibrated range before saturating, the same 12 significant bits a
/// Q4.12 activation below 1.0 has). It also keeps the simulator's exact MVM on its
/// single-multiply path (crate::dot, NARROW_MAX).
pub const MVM_INPUT_LIMIT: f64 = 4095.0;
/// Headroom of other values: one bit.
pub const VALUE_LIMIT: f64 = 16383.0;

/// Largest magnitude of every op's values over the calibration inputs.
fn ranges(l: &Lowered, calib: &[HashMap<String, Tensor>]) -> Result<Vec<f32>, String> {
    let n = l.ops.len();
    let mut last_use = vec![0usize; n];
    for (i, op) in l.ops.iter().enumerate() {
        for ps in op.operands() {
            for p in ps {
                last_use[p.v as usize] = i;
            }
        }
    }
    let weights: HashMap<u32, (&[i16], u8)> = l
        .weights
        .iter()
        .map(|(g, d, f)| (*g, (d.as_slice(), *f)))
        .collect();
    let xs = (weights.values().next().map_or(0, |w| w.0.len()) as f64).sqrt() as usize;
    let mut max = vec![0f32; n];
    for inputs in calib {
        let mut vals: Vec<Option<Vec<f32>>> = vec![None; n];
        for (name, _, map) in &l.inputs {
            let t = inputs
                .get(name)
                .ok_or_else(|| format!("calibration inputs lack `{name}`"))?;
            let x = t.to_f32_vec();
            if x.len() != map.len() {
                return Err(format!(
                    "calibration input `{name}` has {} elements, the graph {}",
                    x.len(),
                    map.len()
                ));
            }
            for (i, &(v, off)) in map.iter().enumerate() {
                let buf = vals[v as usize]
                    .get_or_insert_with(|| vec![0.0; l.ops[v as usize].len as usize]);
                buf[off as usize] = x[i];
            }
        }
        for i in 0..n {
            let op = &l.ops[i];
            let gather = |vals: &[Option<Vec<f32>>], ps: &[super::Piece]| -> Vec<f32> {
                let mut out = Vec::new();
                for p in ps {
                    match &vals[p.v as usize] {
                        Some(v) => {
                            out.extend_from_slice(&v[p.off as usize..(p.off + p.len) as usize])
                        }
                        None => out.extend(std::iter::repeat_n(0.0, p.len as usize)),
                    }
                }
                out
            };
            let out: Option<Vec<f32>> = match &op.kind {
                Kind::Input => vals[i].take(),
                Kind::Const(d) => Some(d.clone()),
                Kind::Mvm { mvmu, input } => {
                    let x = gather(&vals, input);
                    let (w, f) = weights[mvmu];
                    let scale = 1.0 / (1u64 << f) as f32;
                    Some(float_mvm(w, xs, op.len as usize, &x, scale))
                }
                Kind::Alu { op: aop, a, b } => {
                    let x = gather(&vals, a);
                    let y = b.as_ref().map(|b| gather(&vals, b));
                    Some(eval(*aop, &x, y.as_deref(), None))
                }
                Kind::Alui { op: aop, a, imm } => {
                    let x = gather(&vals, a);
                    Some(eval(*aop, &x, None, Some(*imm)))
                }
                Kind::Gather(ps) => Some(gather(&vals, ps)),
                Kind::Output { .. } => None,
            };
            if let Some(v) = &out {
                let m = v.iter().fold(0f32, |a, x| a.max(x.abs()));
                if m.is_finite() {
                    max[i] = max[i].max(m);
                } else {
                    max[i] = f32::MAX;
                }
            }
            vals[i] = out;
            for ps in op.operands() {
                for p in ps {
                    if last_use[p.v as usize] == i {
                        vals[p.v as usize] = None;
                    }
                }
            }
        }
    }
    Ok(max)
}

/// `rows` outputs of W·x on f32 (`w` row-major with row stride `xs`), each row summed
/// left to right as `Iterator::sum` does. Four rows advance together: the four
/// dependent chains of additions overlap (the float evaluation of every MVM was the
/// hot loop of compilation) while every row keeps its exact order of additions, so the
/// calibrated ranges are bit for bit those of the row-at-a-time loop.
fn float_mvm(w: &[i16], xs: usize, rows: usize, x: &[f32], scale: f32) -> Vec<f32> {
    let n = x.len();
    let mut out = Vec::with_capacity(rows);
    let mut r = 0;
    while r + 4 <= rows {
        let rw = |k: usize| &w[(r + k) * xs..(r + k) * xs + n];
        let (w0, w1, w2, w3) = (rw(0), rw(1), rw(2), rw(3));
        // Iterator::sum over f32 starts from -0.0 (the additive identity that keeps
        // the sign of an all-(-0.0) sum).
        let mut s = [-0.0f32; 4];
        for j in 0..n {
            let b = x[j];
            s[0] += w0[j] as f32 * b;
            s[1] += w1[j] as f32 * b;
            s[2] += w2[j] as f32 * b;
            s[3] += w3[j] as f32 * b;
        }
        out.extend(s.iter().map(|&v| v * scale));
        r += 4;
    }
    for r in r..rows {
        let row = &w[r * xs..r * xs + n];
        out.push(row.iter().zip(x).map(|(&a, &b)| a as f32 * b).sum::<f32>() * scale);
    }
    out
}

/// One ALU op on real values.
fn eval(op: AluOp, a: &[f32], b: Option<&[f32]>, imm: Option<f32>) -> Vec<f32> {
    let y = |i: usize| match (b, imm) {
        (Some(b), _) => b[i],
        (None, Some(c)) => c,
        _ => 0.0,
    };
    if matches!(op, AluOp::LogSoftmax | AluOp::LogSoftmaxd) {
        let m = a.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let lse = m + a.iter().map(|x| (x - m).exp()).sum::<f32>().ln();
        return a
            .iter()
            .map(|x| {
                if op == AluOp::LogSoftmax {
                    x - lse
                } else {
                    1.0 - (x - lse).exp()
                }
            })
            .collect();
    }
    let t = |c: bool| if c { 1.0 } else { 0.0 };
    (0..a.len())
        .map(|i| {
            let (x, y) = (a[i], y(i));
            match op {
                AluOp::Add => x + y,
                AluOp::Sub => x - y,
                AluOp::Mul => x * y,
                AluOp::Div => {
                    if y == 0.0 {
                        0.0
                    } else {
                        x / y
                    }
                }
                AluOp::Max => x.max(y),
                AluOp::Min => x.min(y),
                AluOp::Relu => x.max(0.0),
                AluOp::Relud => t(x > 0.0),
                AluOp::Sig => 1.0 / (1.0 + (-x).exp()),
                AluOp::Tanh => x.tanh(),
                AluOp::Exp => x.exp(),
                AluOp::Log => x.max(1e-30).ln(),
                AluOp::Erf => crate::sim::erf(x as f64) as f32,
                AluOp::Sqrt => x.max(0.0).sqrt(),
                AluOp::Mse => (x - y) * (x - y),
                AluOp::And => t(x != 0.0 && y != 0.0),
                AluOp::Or => t(x != 0.0 || y != 0.0),
                AluOp::Not => t(x == 0.0),
                AluOp::Eq => t(x == y),
                AluOp::Neq => t(x != y),
                AluOp::Lt => t(x < y),
                AluOp::Leq => t(x <= y),
                AluOp::Gt | AluOp::Rndcmp => t(x > y),
                AluOp::Geq => t(x >= y),
                AluOp::LogSoftmax | AluOp::LogSoftmaxd => unreachable!(),
            }
        })
        .collect()
}

fn find(p: &mut [usize], x: usize) -> usize {
    let mut r = x;
    while p[r] != r {
        r = p[r];
    }
    let mut y = x;
    while p[y] != r {
        let n = p[y];
        p[y] = r;
        y = n;
    }
    r
}

/// Choose every op's fraction bits (see the module doc). `calib` empty: the graph's
/// deterministic random inputs.
pub fn assign(
    l: &mut Lowered,
    g: &Graph,
    arch: &Arch,
    calib: &[HashMap<String, Tensor>],
) -> Result<(), CompileError> {
    if l.shape_only {
        return Ok(());
    }
    let default;
    let calib = if calib.is_empty() {
        default = vec![pimkit_interp::random_inputs(g, 0)];
        &default[..]
    } else {
        calib
    };
    let max = ranges(l, calib).map_err(|msg| CompileError::Graph {
        graph: g.name.clone(),
        msg,
    })?;
    let n = l.ops.len();
    let zero_const =
        |v: VId| matches!(&l.ops[v as usize].kind, Kind::Const(d) if d.iter().all(|&x| x == 0.0));
    // Class of each op: (node, kind) for computed values, its own for inputs' and
    // constants' vectors (merged below as needed).
    let mut key_of: HashMap<(u32, u32), usize> = HashMap::new();
    let mut class = vec![0usize; n];
    let mut next = 0usize;
    for (i, op) in l.ops.iter().enumerate() {
        let tag = match &op.kind {
            Kind::Mvm { .. } => Some(0),
            Kind::Alu { op, .. } => Some(1 + op.code() as u32),
            Kind::Alui { op, .. } => Some(100 + op.code() as u32),
            Kind::Gather(_) => Some(200),
            Kind::Input => Some(300),
            Kind::Const(_) | Kind::Output { .. } => None,
        };
        class[i] = match tag {
            Some(t) => *key_of.entry((op.node, t)).or_insert_with(|| {
                next += 1;
                next - 1
            }),
            None => {
                next += 1;
                next - 1
            }
        };
    }
    let mut parent: Vec<usize> = (0..next).collect();
    let mut shared = vec![false; next];
    let unite = |parent: &mut Vec<usize>, ps: &[super::Piece], extra: Option<usize>| {
        let mut root: Option<usize> = extra.map(|e| find(parent, e));
        for p in ps {
            if zero_const(p.v) {
                continue;
            }
            let c = find(parent, class[p.v as usize]);
            match root {
                None => root = Some(c),
                Some(r) if r != c => {
                    parent[c] = r;
                }
                _ => {}
            }
        }
    };
    // The MVMs of one MVMU share its output shift: their inputs share a format.
    let mut mvmu_class: HashMap<u32, usize> = HashMap::new();
    for (i, op) in l.ops.iter().enumerate() {
        match &op.kind {
            Kind::Mvm { input, mvmu } => {
                unite(&mut parent, input, None);
                if let Some(p) = input.iter().find(|p| !zero_const(p.v)) {
                    let c = class[p.v as usize];
                    let first = *mvmu_class.entry(*mvmu).or_insert(c);
                    let (a, b) = (find(&mut parent, first), find(&mut parent, c));
                    if a != b {
                        parent[b] = a;
                    }
                }
            }
            Kind::Alu { a, b, .. } => {
                unite(&mut parent, a, None);
                if let Some(b) = b {
                    unite(&mut parent, b, None);
                }
            }
            Kind::Alui { a, .. } => unite(&mut parent, a, None),
            Kind::Gather(ps) => unite(&mut parent, ps, Some(class[i])),
            // Const, Input and Output unite no operands (their formats are set below)
            _ => {}
        }
        for ps in op.operands() {
            if matches!(op.kind, Kind::Output { .. }) {
                continue;
            }
            if ps.iter().filter(|p| !zero_const(p.v)).count() > 1
                || matches!(op.kind, Kind::Mvm { .. } | Kind::Gather(_))
            {
                for p in ps {
                    if matches!(l.ops[p.v as usize].kind, Kind::Const(_)) && !zero_const(p.v) {
                        shared[class[p.v as usize]] = true;
                    }
                }
            }
        }
    }
    // Classes that feed crossbars.
    let mut feeds_mvm = vec![false; next];
    for op in &l.ops {
        if let Kind::Mvm { input, .. } = &op.kind {
            for p in input {
                if !zero_const(p.v) {
                    let r = find(&mut parent, class[p.v as usize]);
                    feeds_mvm[r] = true;
                }
            }
        }
    }
    let mut range = vec![0f32; next];
    for i in 0..n {
        if matches!(l.ops[i].kind, Kind::Const(_)) && !shared[class[i]] {
            continue;
        }
        let r = find(&mut parent, class[i]);
        range[r] = range[r].max(max[i]);
    }
    // Classes beyond the largest word at 0 fraction bits saturate in any format: name
    // their nodes so that the run says its error is genuine (the largest per node).
    let mut beyond: HashMap<String, f64> = HashMap::new();
    for i in 0..n {
        let op = &l.ops[i];
        if matches!(op.kind, Kind::Const(_) | Kind::Output { .. }) {
            continue;
        }
        let m = max[i] as f64;
        if m.round() > WORD_MAX {
            let name = match op.kind {
                Kind::Input => "inputs".to_string(),
                _ => l
                    .node_names
                    .get(op.node as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("node {}", op.node)),
            };
            let e = beyond.entry(name).or_insert(0.0);
            *e = e.max(m);
        }
    }
    let mut beyond: Vec<OutOfRange> = beyond
        .into_iter()
        .map(|(node, max_abs)| OutOfRange { node, max_abs })
        .collect();
    beyond.sort_by(|a, b| b.max_abs.total_cmp(&a.max_abs).then(a.node.cmp(&b.node)));
    l.out_of_range = beyond;
    for i in 0..n {
        let op = &mut l.ops[i];
        op.frac = match &op.kind {
            Kind::Const(d) if !shared[class[i]] => {
                exact_frac(d.iter().fold(0f32, |a, x| a.max(x.abs()))) as u8
            }
            Kind::Output { .. } => arch.fixed.frac_bits as u8,
            // every computed kind takes its class's calibrated format
            _ => {
                let r = find(&mut parent, class[i]);
                let limit = if feeds_mvm[r] {
                    MVM_INPUT_LIMIT
                } else {
                    VALUE_LIMIT
                };
                activation_frac(range[r], arch.fixed.frac_bits, limit) as u8
            }
        };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::float_mvm;

    /// The interleaved rows give bit for bit what one row at a time gives (the order
    /// of additions within a row is kept), signed zeros and partial lengths included.
    #[test]
    fn float_mvm_equals_row_at_a_time() {
        let xs = 128;
        let mut s = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        for (rows, n) in [(128, 128), (7, 100), (3, 1), (5, 128), (0, 4)] {
            let w: Vec<i16> = (0..xs * xs)
                .map(|i| if i % 5 == 0 { 0 } else { next() as i16 })
                .collect();
            let mut x: Vec<f32> = (0..n)
                .map(|_| (next() >> 40) as f32 / (1u64 << 24) as f32 - 0.5)
                .collect();
            x[0] = -0.0;
            let scale = 1.0 / 4096.0;
            let want: Vec<u32> = (0..rows)
                .map(|r| {
                    let row = &w[r * xs..r * xs + n];
                    (row.iter().zip(&x).map(|(&a, &b)| a as f32 * b).sum::<f32>() * scale).to_bits()
                })
                .collect();
            let got: Vec<u32> = float_mvm(&w, xs, rows, &x, scale)
                .iter()
                .map(|v| v.to_bits())
                .collect();
            assert_eq!(got, want, "{rows} rows of {n}");
            // A row of zero weights times negative zeros: the sum's sign as Iterator::sum.
            let zw = vec![0i16; xs * xs];
            let nz = vec![-0.0f32; n];
            let want0 = zw[..n]
                .iter()
                .zip(&nz)
                .map(|(&a, &b)| a as f32 * b)
                .sum::<f32>();
            let got0 = float_mvm(&zw, xs, 4, &nz, 1.0);
            assert!(got0.iter().all(|v| v.to_bits() == want0.to_bits()));
        }
    }
}
