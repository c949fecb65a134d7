//! The engine hooks: a substituted node's outputs flow on to the next kernel, are checked
//! against the declared types, and `eval_node` runs one kernel on inputs of one's own.

use pimkit_ir::{DType, Graph, Op, Tensor, TensorType, UnaryOp};
use std::collections::HashMap;

fn graph() -> Graph {
    let mut g = Graph::new("two");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![3]));
    let y = g.op("neg", Op::Unary(UnaryOp::Neg), &[x]).unwrap();
    let z = g.op("relu", Op::Unary(UnaryOp::Relu), &[y]).unwrap();
    g.outputs.push(z);
    g
}

#[test]
fn substituted_outputs_feed_the_next_node() {
    let g = graph();
    let inputs = HashMap::from([("x".into(), Tensor::from_f32(vec![3], vec![1.0, -2.0, 3.0]))]);
    let mut seen = Vec::new();
    let out = pimkit_interp::run_substituted(
        &g,
        &inputs,
        &mut |n, ins| {
            (n.idx() == 0).then(|| {
                let x = ins[0].unwrap().as_f32().unwrap();
                Ok(vec![Tensor::from_f32(
                    vec![3],
                    x.iter().map(|v| v * 10.0).collect(),
                )])
            })
        },
        &mut |n, outs| seen.push((n.idx(), outs[0].as_f32().unwrap().to_vec())),
    )
    .unwrap();
    assert_eq!(out[0].as_f32().unwrap(), &[10.0, 0.0, 30.0]);
    assert_eq!(seen[0], (0, vec![10.0, -20.0, 30.0]));
    let plain = pimkit_interp::run(&g, &inputs).unwrap();
    assert_eq!(plain[0].as_f32().unwrap(), &[0.0, 2.0, 0.0]);
}

#[test]
fn a_substitute_of_the_wrong_type_or_an_error_names_the_node() {
    let g = graph();
    let inputs = HashMap::from([("x".into(), Tensor::from_f32(vec![3], vec![1.0, 2.0, 3.0]))]);
    let e = pimkit_interp::run_substituted(
        &g,
        &inputs,
        &mut |_, _| Some(Ok(vec![Tensor::from_f32(vec![2], vec![0.0, 0.0])])),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("neg"), "{e}");
    let e = pimkit_interp::run_substituted(
        &g,
        &inputs,
        &mut |_, _| Some(Err("no crossbar for this".into())),
        &mut |_, _| {},
    )
    .unwrap_err();
    assert!(e.to_string().contains("no crossbar for this") && e.to_string().contains("neg"));
}

#[test]
fn eval_node_runs_one_kernel() {
    let g = graph();
    let x = Tensor::from_f32(vec![2], vec![-1.0, 4.0]);
    let ty = TensorType::new(DType::F32, vec![2]);
    let out = pimkit_interp::eval_node(&g.nodes[1], vec![Some(&x)], vec![&ty]).unwrap();
    assert_eq!(out[0].as_f32().unwrap(), &[0.0, 4.0]);
}
