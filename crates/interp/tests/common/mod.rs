//! Helpers shared by the integration tests: run one op on given tensors.
#![allow(dead_code)]

use pimkit_interp::{InterpError, run};
use pimkit_ir::{Graph, Op, Tensor};
use std::collections::HashMap;

/// Run a single node whose inputs are graph inputs `i0, i1, ...` (None = omitted
/// optional input); returns every output of the node. u8 x s8 sums are exact (the
/// tests check the arithmetic; onnxruntime's AVX2 saturation has its own cases in
/// tests/data/ort-variants).
pub fn run_node(op: Op, ins: Vec<Option<Tensor>>) -> Result<Vec<Tensor>, InterpError> {
    let mut g = Graph::new("t");
    let mut feeds = HashMap::new();
    let mut ids = Vec::new();
    for (i, t) in ins.into_iter().enumerate() {
        match t {
            Some(t) => {
                let name = format!("i{i}");
                ids.push(Some(g.add_input(name.clone(), t.ty())));
                feeds.insert(name, t);
            }
            None => ids.push(None),
        }
    }
    let outs = g.add_node("n", op, ids).expect("node type-checks");
    g.outputs = outs;
    pimkit_interp::with_exact_products(|| run(&g, &feeds))
}

/// Run a single-output node with all inputs present.
pub fn run1(op: Op, ins: Vec<Tensor>) -> Tensor {
    run_node(op, ins.into_iter().map(Some).collect())
        .expect("run")
        .remove(0)
}

pub fn f32t(shape: &[usize], v: &[f32]) -> Tensor {
    Tensor::from_f32(shape.to_vec(), v.to_vec())
}

pub fn scalar(v: f32) -> Tensor {
    Tensor::from_f32(vec![], vec![v])
}

pub fn u8s(v: u8) -> Tensor {
    Tensor::from_u8(vec![], vec![v])
}

pub fn i8s(v: i8) -> Tensor {
    Tensor::from_i8(vec![], vec![v])
}

/// Assert two float slices agree within abs + rel tolerance.
pub fn assert_close(got: &[f32], want: &[f32], tol: f32) {
    assert_eq!(got.len(), want.len(), "length mismatch");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol + tol * w.abs(),
            "element {i}: got {g}, want {w}"
        );
    }
}

/// Deterministic pseudo-random floats in [-1, 1) (xorshift; independent of the crate).
pub fn rand_f32(n: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}
