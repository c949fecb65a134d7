//! Entry points for the criterion benches only (`benches/fgemm.rs`); not a stable API.

use crate::kernels::fgemm::{AOp, BOp, Panels, StridedB, fgemm};
use crate::kernels::fgemm_kernels::Fk;

/// Names of the f32 GEMM kernel families this host runs, best first.
pub fn fgemm_families() -> Vec<&'static str> {
    Fk::available().into_iter().map(Fk::name).collect()
}

/// One `m x k` by `k x n` product as a convolution runs it: A (the weights) packed once,
/// B (row-major, the im2col matrix) packed per call, or read in place.
pub struct FgemmCase {
    fk: Fk,
    dims: (usize, usize, usize),
    a: Panels,
    b: Vec<f32>,
    c: Vec<f32>,
}

impl FgemmCase {
    /// `family` from [`fgemm_families`]; deterministic operands.
    pub fn new(family: &str, (m, k, n): (usize, usize, usize)) -> FgemmCase {
        let fk = Fk::available()
            .into_iter()
            .find(|f| f.name() == family)
            .expect("a family from fgemm_families()");
        let val = |i: usize| ((i * 37 + 11) % 255) as f32 / 255.0 - 0.5;
        let a: Vec<f32> = (0..m * k).map(val).collect();
        FgemmCase {
            fk,
            dims: (m, k, n),
            a: Panels::pack_a(fk, &a, (k, 1), m, k),
            b: (0..k * n).map(|i| val(i + 5)).collect(),
            c: vec![0.0; m * n],
        }
    }

    /// The product, B packed per call (`in_place`: B read where it is).
    pub fn run(&mut self, in_place: bool) -> f32 {
        let (m, k, n) = self.dims;
        let sb = StridedB {
            data: &self.b,
            rs: n,
            cs: 1,
            n,
        };
        let b = if in_place {
            BOp::InPlace {
                data: &self.b,
                ld: n,
            }
        } else {
            BOp::Source(&sb)
        };
        fgemm(
            self.fk,
            self.dims,
            &AOp::Packed(&self.a),
            &b,
            &mut self.c,
            n,
            None,
        );
        let _ = k;
        self.c[m * n - 1]
    }
}
