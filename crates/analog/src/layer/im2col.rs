//! The input vectors a convolution presents to its crossbar rows: one row per output
//! position (n, o), one column per (input channel of the group, kernel tap), in the
//! weight's own [C/g, k...] order. Positions outside the input read the padding code.

use pimkit_ir::ConvAttrs;

/// Shapes of one convolution: input [n, c, in...], output [n, m, out...].
pub struct ConvShape {
    pub n: usize,
    pub c: usize,
    pub m: usize,
    pub group: usize,
    pub input: Vec<usize>,
    pub output: Vec<usize>,
    pub kernel: Vec<usize>,
}

impl ConvShape {
    pub fn in_vol(&self) -> usize {
        self.input.iter().product()
    }
    pub fn out_vol(&self) -> usize {
        self.output.iter().product()
    }
    pub fn k_vol(&self) -> usize {
        self.kernel.iter().product()
    }
    /// Rows of one group's matrix: C/g x kernel volume.
    pub fn k_rows(&self) -> usize {
        self.c / self.group * self.k_vol()
    }
    /// Input vectors: n x output volume.
    pub fn positions(&self) -> usize {
        self.n * self.out_vol()
    }
}

/// Per spatial axis, the input index read by (output index, tap), or None in the padding.
fn axis_table(a: &ConvAttrs, s: &ConvShape, d: usize) -> Vec<Option<usize>> {
    let (o_n, k_n, i_n) = (s.output[d], s.kernel[d], s.input[d] as i64);
    let mut t = Vec::with_capacity(o_n * k_n);
    for o in 0..o_n {
        for k in 0..k_n {
            let pos = (o * a.strides[d] + k * a.dilations[d]) as i64 - a.pads[d] as i64;
            t.push((0..i_n).contains(&pos).then_some(pos as usize));
        }
    }
    t
}

/// For every (output position, tap) of one channel plane: the input offset read, or None
/// in the padding. Shared by all groups and channels of a layer.
pub struct Offsets(Vec<Option<u32>>);

impl Offsets {
    pub fn new(a: &ConvAttrs, s: &ConvShape) -> Offsets {
        let r = s.kernel.len();
        let tables: Vec<Vec<Option<usize>>> = (0..r).map(|d| axis_table(a, s, d)).collect();
        let (kv, ov) = (s.k_vol(), s.out_vol());
        let mut off = Vec::with_capacity(ov * kv);
        let mut o_idx = vec![0usize; r];
        for _ in 0..ov {
            let mut t_idx = vec![0usize; r];
            for _ in 0..kv {
                let mut lin = Some(0usize);
                for d in 0..r {
                    lin = match (lin, tables[d][o_idx[d] * s.kernel[d] + t_idx[d]]) {
                        (Some(l), Some(p)) => Some(l * s.input[d] + p),
                        // a padding position
                        _ => None,
                    };
                }
                off.push(lin.map(|l| l as u32));
                odometer(&mut t_idx, &s.kernel);
            }
            odometer(&mut o_idx, &s.output);
        }
        Offsets(off)
    }
}

/// The input vectors of group `grp`: positions x k_rows, row-major.
pub fn im2col<T: Copy + Send + Sync>(
    x: &[T],
    off: &Offsets,
    s: &ConvShape,
    grp: usize,
    pad: T,
) -> Vec<T> {
    let (cg, kv, ov, iv) = (s.c / s.group, s.k_vol(), s.out_vol(), s.in_vol());
    let kr = cg * kv;
    let mut out = vec![pad; s.positions() * kr];
    for b in 0..s.n {
        for ci in 0..cg {
            let plane = &x[(b * s.c + grp * cg + ci) * iv..][..iv];
            for o in 0..ov {
                let row = &mut out[(b * ov + o) * kr + ci * kv..][..kv];
                for (dst, src) in row.iter_mut().zip(&off.0[o * kv..(o + 1) * kv]) {
                    if let Some(i) = src {
                        *dst = plane[*i as usize];
                    }
                }
            }
        }
    }
    out
}

/// Advance a row-major multi-index over `dims` by one.
fn odometer(idx: &mut [usize], dims: &[usize]) {
    for d in (0..idx.len()).rev() {
        idx[d] += 1;
        if idx[d] < dims[d] {
            return;
        }
        idx[d] = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn padded_strided_2d() {
        // 1 x 1 x 3 x 3 input 1..9, 2x2 kernel, stride 2, pad 1: output 2x2.
        let x: Vec<i32> = (1..=9).collect();
        let a = ConvAttrs {
            kernel: vec![2, 2],
            strides: vec![2, 2],
            pads: vec![1, 1, 1, 1],
            dilations: vec![1, 1],
            group: 1,
        };
        let s = ConvShape {
            n: 1,
            c: 1,
            m: 1,
            group: 1,
            input: vec![3, 3],
            output: vec![2, 2],
            kernel: vec![2, 2],
        };
        let cols = im2col(&x, &Offsets::new(&a, &s), &s, 0, 0);
        assert_eq!(cols, vec![0, 0, 0, 1, 0, 0, 2, 3, 0, 4, 0, 7, 5, 6, 8, 9]);
    }
}
