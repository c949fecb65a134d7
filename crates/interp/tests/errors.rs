//! Error messages name what is wrong: missing/unknown input, wrong dtype or shape,
//! shape-only constants, unsupported attribute combinations. Nothing panics.
mod common;
use common::*;
use pimkit_interp::{InterpError, random_inputs, run, run_observed};
use pimkit_ir::{BinaryOp, ConvAttrs, DType, Graph, Op, Tensor, TensorType};
use std::collections::HashMap;

fn add_graph() -> Graph {
    let mut g = Graph::new("add");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![2, 2]));
    let y = g.add_input("y", TensorType::new(DType::F32, vec![2]));
    let z = g.op("z", Op::Binary(BinaryOp::Add), &[x, y]).unwrap();
    g.outputs.push(z);
    g
}

#[test]
fn missing_input_names_it_and_lists_expected() {
    let g = add_graph();
    let feeds = HashMap::from([("x".to_string(), f32t(&[2, 2], &[0.0; 4]))]);
    let e = run(&g, &feeds).unwrap_err();
    assert!(matches!(e, InterpError::MissingInput { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("'y'") && msg.contains("f32[2,2]") && msg.contains("f32[2]"),
        "{msg}"
    );
}

#[test]
fn wrong_shape_and_dtype_are_reported() {
    let g = add_graph();
    let mut feeds = HashMap::from([
        ("x".to_string(), f32t(&[2, 3], &[0.0; 6])),
        ("y".to_string(), f32t(&[2], &[0.0; 2])),
    ]);
    let msg = run(&g, &feeds).unwrap_err().to_string();
    assert!(
        msg.contains("'x'") && msg.contains("f32[2,2]") && msg.contains("[2, 3]"),
        "{msg}"
    );
    feeds.insert("x".into(), Tensor::from_i32(vec![2, 2], vec![0; 4]));
    let msg = run(&g, &feeds).unwrap_err().to_string();
    assert!(msg.contains("'x'") && msg.contains("i32"), "{msg}");
    feeds.insert("x".into(), f32t(&[2, 2], &[0.0; 4]));
    feeds.insert("typo".into(), f32t(&[1], &[0.0]));
    let msg = run(&g, &feeds).unwrap_err().to_string();
    assert!(msg.contains("unknown input 'typo'"), "{msg}");
}

#[test]
fn shape_only_constant_is_an_error() {
    let mut g = Graph::new("conv");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 1, 3, 3]));
    let w = g.add_const_shape("conv.weight", TensorType::new(DType::F32, vec![1, 1, 3, 3]));
    let y = g
        .op(
            "conv",
            Op::Conv(ConvAttrs::simple(vec![3, 3], 1, 1, 1)),
            &[x, w],
        )
        .unwrap();
    g.outputs.push(y);
    let e = run(&g, &random_inputs(&g, 0)).unwrap_err();
    assert!(matches!(e, InterpError::ShapeOnly { .. }));
    assert!(
        e.to_string().contains("no weight data for 'conv.weight'"),
        "{e}"
    );
}

#[test]
fn unsupported_combination_names_the_node() {
    // QLinearConv with a per-channel x_scale: not a legal combination.
    let e = run_node(
        Op::QLinearConv(ConvAttrs::simple(vec![1, 1], 1, 0, 1)),
        vec![
            Some(Tensor::from_u8(vec![1, 1, 1, 1], vec![1])),
            Some(f32t(&[2], &[1.0, 2.0])),
            Some(u8s(0)),
            Some(Tensor::from_u8(vec![1, 1, 1, 1], vec![1])),
            Some(scalar(1.0)),
            Some(u8s(0)),
            Some(scalar(1.0)),
            Some(u8s(0)),
        ],
    )
    .unwrap_err();
    assert!(matches!(e, InterpError::Unsupported { .. }));
    let msg = e.to_string();
    assert!(msg.contains("node 'n'") && msg.contains("x_scale"), "{msg}");
}

#[test]
fn random_inputs_are_deterministic_and_observe_sees_every_node() {
    let g = add_graph();
    let a = random_inputs(&g, 7);
    assert_eq!(a, random_inputs(&g, 7));
    assert_ne!(a, random_inputs(&g, 8));
    assert!(
        a["x"]
            .as_f32()
            .unwrap()
            .iter()
            .all(|v| (-1.0..1.0).contains(v))
    );
    let mut seen = Vec::new();
    let out = run_observed(&g, &a, &mut |id, outs| seen.push((id, outs[0].clone()))).unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1, out[0]);
}

#[test]
fn runs_that_cannot_fit_in_memory_are_errors() {
    // A 4 TiB input: an allocation failure would abort the process.
    let mut g = pimkit_ir::Graph::new("huge");
    let x = g.add_input(
        "x",
        pimkit_ir::TensorType::new(pimkit_ir::DType::F32, vec![1 << 40]),
    );
    let y = g
        .op("r", pimkit_ir::Op::Unary(pimkit_ir::UnaryOp::Relu), &[x])
        .unwrap();
    g.outputs = vec![y];
    assert_eq!(pimkit_interp::min_run_bytes(&g), 2 << 42);
    let e = pimkit_interp::check_memory(&g).unwrap_err().to_string();
    assert!(e.contains("'huge'") && e.contains("GiB"), "{e}");
    let no_inputs = std::collections::HashMap::new();
    let e = pimkit_interp::run(&g, &no_inputs).unwrap_err().to_string();
    assert!(e.contains("GiB"), "{e}");
}
