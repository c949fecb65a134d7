//! Property: constant folding never changes a result. A random chain of ops applied to a
//! tensor `c` and added to the graph input `x` is imported twice: with `c` an initializer
//! (the whole chain folds at import, through the interpreter) and with `c` a second graph
//! input fed the same values (the chain runs at run time). Both must give the same
//! output, bit for bit.

mod common;
use common::*;
use pimkit_ir::Tensor;
use pimkit_onnx::{LoadOptions, load_bytes};
use proptest::prelude::*;
use std::collections::HashMap;

/// One step of the chain on a [2, 3, 4] tensor (every step keeps the shape, possibly
/// through a reshape or transpose and back).
#[derive(Clone, Debug)]
enum Step {
    Unary(&'static str),
    MulScalar(f32),
    AddScalar(f32),
    TransposeBack,
    ReshapeRoundTrip,
    SliceConcat,
    CastF16RoundTrip,
    ReduceBroadcast,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        prop_oneof![
            Just("Neg"),
            Just("Abs"),
            Just("Relu"),
            Just("Sigmoid"),
            Just("Tanh"),
            Just("Floor")
        ]
        .prop_map(Step::Unary),
        (-3.0f32..3.0).prop_map(Step::MulScalar),
        (-3.0f32..3.0).prop_map(Step::AddScalar),
        Just(Step::TransposeBack),
        Just(Step::ReshapeRoundTrip),
        Just(Step::SliceConcat),
        Just(Step::CastF16RoundTrip),
        Just(Step::ReduceBroadcast),
    ]
}

/// The ONNX nodes of the chain from `c` to `chain_out`, plus their initializers.
fn chain(
    steps: &[Step],
) -> (
    Vec<pimkit_onnx::proto::NodeProto>,
    Vec<pimkit_onnx::proto::TensorProto>,
) {
    let mut nodes = vec![];
    let mut inits = vec![];
    let mut cur = "c".to_string();
    for (k, s) in steps.iter().enumerate() {
        let out = format!("t{k}");
        let n = |op: &str, ins: &[&str], outs: &[&str], a| {
            node(op, &format!("{op}{k}_{}", outs[0]), ins, outs, a)
        };
        match s {
            Step::Unary(op) => nodes.push(n(op, &[&cur], &[&out], vec![])),
            Step::MulScalar(v) | Step::AddScalar(v) => {
                let op = if matches!(s, Step::MulScalar(_)) {
                    "Mul"
                } else {
                    "Add"
                };
                let sc = format!("s{k}");
                inits.push(init_f32(&sc, &[], &[*v]));
                nodes.push(n(op, &[&cur, &sc], &[&out], vec![]));
            }
            Step::TransposeBack => {
                let mid = format!("m{k}");
                nodes.push(n(
                    "Transpose",
                    &[&cur],
                    &[&mid],
                    vec![attr_ints("perm", &[2, 0, 1])],
                ));
                nodes.push(n(
                    "Transpose",
                    &[&mid],
                    &[&out],
                    vec![attr_ints("perm", &[1, 2, 0])],
                ));
            }
            Step::ReshapeRoundTrip => {
                let (mid, a, b) = (format!("m{k}"), format!("sa{k}"), format!("sb{k}"));
                inits.push(init_i64(&a, &[2], &[6, 4]));
                inits.push(init_i64(&b, &[3], &[2, 3, 4]));
                nodes.push(n("Reshape", &[&cur, &a], &[&mid], vec![]));
                nodes.push(n("Reshape", &[&mid, &b], &[&out], vec![]));
            }
            Step::SliceConcat => {
                let (p, q) = (format!("p{k}"), format!("q{k}"));
                let names = [
                    format!("st{k}"),
                    format!("mi{k}"),
                    format!("en{k}"),
                    format!("ax{k}"),
                ];
                inits.push(init_i64(&names[0], &[1], &[0]));
                inits.push(init_i64(&names[1], &[1], &[1]));
                inits.push(init_i64(&names[2], &[1], &[3]));
                inits.push(init_i64(&names[3], &[1], &[1]));
                nodes.push(n(
                    "Slice",
                    &[&cur, &names[0], &names[1], &names[3]],
                    &[&p],
                    vec![],
                ));
                nodes.push(n(
                    "Slice",
                    &[&cur, &names[1], &names[2], &names[3]],
                    &[&q],
                    vec![],
                ));
                nodes.push(n("Concat", &[&p, &q], &[&out], vec![attr_int("axis", 1)]));
            }
            Step::CastF16RoundTrip => {
                let mid = format!("m{k}");
                nodes.push(n("Cast", &[&cur], &[&mid], vec![attr_int("to", 10)]));
                nodes.push(n("Cast", &[&mid], &[&out], vec![attr_int("to", 1)]));
            }
            Step::ReduceBroadcast => {
                let (r, ax) = (format!("r{k}"), format!("rx{k}"));
                inits.push(init_i64(&ax, &[1], &[2]));
                nodes.push(n(
                    "ReduceSum",
                    &[&cur, &ax],
                    &[&r],
                    vec![attr_int("keepdims", 1)],
                ));
                nodes.push(n("Sub", &[&cur, &r], &[&out], vec![]));
            }
        }
        cur = out;
    }
    nodes.push(node("Add", "final", &["x", &cur], &["y"], vec![]));
    (nodes, inits)
}

fn run(bytes: &[u8], feeds: &HashMap<String, Tensor>) -> Vec<Tensor> {
    let g = load_bytes(bytes, None, &LoadOptions::default()).unwrap();
    pimkit_interp::run(&g, feeds).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn folded_equals_unfolded(
        steps in proptest::collection::vec(step(), 1..8),
        cv in proptest::collection::vec(-4.0f32..4.0, 24),
        xv in proptest::collection::vec(-4.0f32..4.0, 24),
    ) {
        let (nodes, mut inits) = chain(&steps);
        let x = Tensor::from_f32(vec![2, 3, 4], xv);
        let c = Tensor::from_f32(vec![2, 3, 4], cv.clone());
        // c as an initializer: the chain folds.
        let mut with_init = inits.clone();
        with_init.push(init_f32("c", &[2, 3, 4], &cv));
        let folded = model(nodes.clone(), vec![vi_f32("x", &[2, 3, 4])], &["y"], with_init, 17);
        let g = load_bytes(&bytes(&folded), None, &LoadOptions::default()).unwrap();
        prop_assert_eq!(g.nodes.len(), 1, "only the final Add stays: {}", pimkit_ir::dump(&g));
        // c as a graph input: the chain runs.
        let unfolded = model(nodes, vec![vi_f32("x", &[2, 3, 4]), vi_f32("c", &[2, 3, 4])], &["y"], std::mem::take(&mut inits), 17);
        let feeds1 = HashMap::from([("x".to_string(), x.clone())]);
        let feeds2 = HashMap::from([("x".to_string(), x), ("c".to_string(), c)]);
        prop_assert_eq!(run(&bytes(&folded), &feeds1), run(&bytes(&unfolded), &feeds2));
    }
}
