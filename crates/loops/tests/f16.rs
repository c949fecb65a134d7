//! f16 tensors in the C backend: stored as `_Float16`, computed in f32 and rounded where
//! stored, as the interpreter does per node. Elementwise nests round the same f32 value
//! once, so they agree to one f16 ulp (libm against Rust in the last f32 bits);
//! reductions accumulate in their f16 output as the linalg lowering writes them, so a sum
//! of K terms may differ by up to about K half-ulps.

mod common;
use pimkit_ir::{BinaryOp, DType, Graph, Op, ReduceKind, Tensor, TensorType, UnaryOp};

fn f16t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F16, shape.to_vec())
}

/// Native vs interpreter with `|a - b| <= tol * max(1, max|ref|)`; dtypes must match.
fn close(name: &str, got: &Tensor, want: &Tensor, tol: f64) {
    assert_eq!(
        (got.dtype(), &got.shape),
        (want.dtype(), &want.shape),
        "{name}"
    );
    let (a, b) = (got.to_f64_vec(), want.to_f64_vec());
    let scale = b.iter().fold(1.0f64, |m, x| m.max(x.abs()));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!(
            (x - y).abs() <= tol * scale,
            "{name}: element {i}: native {x}, interpreter {y}"
        );
    }
}

/// Native and interpreter outputs, or None (with a message) when the C compiler has no
/// `_Float16` (GCC before 12, clang before 15): f16 programs cannot be built there.
fn run_both(g: &Graph) -> Option<(Vec<Tensor>, Vec<Tensor>)> {
    let p = pimkit_loops::lower(g).unwrap();
    let inputs = pimkit_interp::random_inputs(g, 5);
    let ordered: Vec<Tensor> = g
        .inputs
        .iter()
        .map(|&v| inputs[&g.value(v).name].clone())
        .collect();
    let got = match pimkit_loops::run(&p, &ordered, &common::opts()) {
        Ok(t) => t,
        Err(e @ pimkit_loops::LoopsError::CompilerFailed { .. })
            if e.to_string().contains("_Float16") =>
        {
            eprintln!("skipped: this C compiler has no _Float16: {e}");
            return None;
        }
        Err(e) => panic!("{e}"),
    };
    let want = pimkit_interp::run(g, &inputs).unwrap();
    Some((got, want))
}

/// One f16 ulp at 1.0 is 2^-10.
const ULP: f64 = 1.0 / 1024.0;

#[test]
fn f16_elementwise_nests_round_once_like_the_interpreter() {
    let mut g = Graph::new("f16_elementwise");
    let x = g.add_input("x", f16t(&[6, 16]));
    let y = g.add_input("y", f16t(&[1, 16]));
    let add = g.op("add", Op::Binary(BinaryOp::Add), &[x, y]).unwrap();
    let mul = g.op("mul", Op::Binary(BinaryOp::Mul), &[add, x]).unwrap();
    let sig = g.op("sig", Op::Unary(UnaryOp::Sigmoid), &[mul]).unwrap();
    let exp = g.op("exp", Op::Unary(UnaryOp::Exp), &[x]).unwrap();
    let relu = g.op("relu", Op::Unary(UnaryOp::Relu), &[add]).unwrap();
    // f16 -> f32 -> f16 through casts.
    let up = g.op("up", Op::cast(DType::F32), &[x]).unwrap();
    let twice = g.op("twice", Op::Binary(BinaryOp::Add), &[up, up]).unwrap();
    let down = g.op("down", Op::cast(DType::F16), &[twice]).unwrap();
    g.outputs = vec![add, mul, sig, exp, relu, up, down];
    let Some((got, want)) = run_both(&g) else {
        return;
    };
    for (k, (a, b)) in got.iter().zip(&want).enumerate() {
        close(&format!("output {k}"), a, b, ULP);
    }
    // The f32 output of the cast is exact; add and relu are exact roundings of exact sums.
    assert_eq!(got[5].to_f64_vec(), want[5].to_f64_vec());
    assert_eq!(got[0].to_f64_vec(), want[0].to_f64_vec());
    assert_eq!(got[4].to_f64_vec(), want[4].to_f64_vec());
}

#[test]
fn f16_reductions_matmul_and_softmax_agree_within_their_accumulation() {
    const K: usize = 12;
    let mut g = Graph::new("f16_reduce");
    let a = g.add_input("a", f16t(&[5, K]));
    let b = g.add_input("b", f16t(&[K, 7]));
    let mm = g.op("mm", Op::MatMul, &[a, b]).unwrap();
    let sm = g.op("sm", Op::Softmax { axis: 1 }, &[mm]).unwrap();
    let reduce = |kind, axis, keepdims| Op::Reduce {
        kind,
        axes: vec![axis],
        keepdims,
    };
    let sum = g
        .op("sum", reduce(ReduceKind::Sum, 1, false), &[a])
        .unwrap();
    let max = g.op("max", reduce(ReduceKind::Max, 0, true), &[a]).unwrap();
    g.outputs = vec![mm, sm, sum, max];
    let Some((got, want)) = run_both(&g) else {
        return;
    };
    let tol = K as f64 * ULP / 2.0 + ULP;
    for (k, (x, y)) in got.iter().zip(&want).enumerate() {
        assert_eq!(x.dtype(), DType::F16);
        close(&format!("output {k}"), x, y, tol);
    }
    // A max only selects: exact.
    assert_eq!(got[3].to_f64_vec(), want[3].to_f64_vec());
}

#[test]
fn f16_programs_profile_on_the_host() {
    let mut g = Graph::new("f16_profile");
    let x = g.add_input("x", f16t(&[64, 64]));
    let r = g.op("relu", Op::Unary(UnaryOp::Relu), &[x]).unwrap();
    g.outputs = vec![r];
    let p = pimkit_loops::lower(&g).unwrap();
    let c = pimkit_loops::codegen::emit_c(&p).unwrap();
    assert!(c.contains("_Float16"), "{c}");
    if run_both(&g).is_none() {
        return;
    }
    let prof = pimkit_loops::profile(&p, 1).unwrap();
    assert_eq!(prof.nests.len(), p.nests.len());
}
