//! The node-suite ops the lowering handles (GatherElements, GatherND, ArgMin, CumSum,
//! CumProd, ScatterElements, ScatterND) run natively and equal the interpreter.

mod common;

use common::check_graph;
use pimkit_ir::{DType, Graph, Op, ScatterReduction, Tensor, TensorType};

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

/// In-range (and some negative) i64 indices below `len`.
fn idx(shape: &[usize], len: i64) -> Tensor {
    let n: usize = shape.iter().product();
    Tensor::from_i64(
        shape.to_vec(),
        (0..n as i64)
            .map(|i| {
                let v = (i * 7 + 3) % len;
                if i % 3 == 0 { v - len } else { v }
            })
            .collect(),
    )
}

#[test]
fn gathers_and_argmin_match_interpreter() {
    let mut g = Graph::new("gathers");
    let x = g.add_input("x", f32t(&[3, 5, 4]));
    let ie = g.add_const("ie", idx(&[3, 2, 4], 5));
    let ind = g.add_const("ind", idx(&[3, 2, 1], 5));
    let ge = g
        .op("ge", Op::GatherElements { axis: 1 }, &[x, ie])
        .unwrap();
    let gn = g
        .op("gn", Op::GatherNd { batch_dims: 1 }, &[x, ind])
        .unwrap();
    let am = g
        .op(
            "am",
            Op::ArgMin {
                axis: 2,
                keepdims: true,
                select_last: false,
            },
            &[x],
        )
        .unwrap();
    g.outputs = vec![ge, gn, am];
    check_graph(&g, 3).unwrap();
}

#[test]
fn cumulative_matches_interpreter() {
    let mut g = Graph::new("cumulative");
    let x = g.add_input("x", f32t(&[2, 6, 3]));
    for (name, exclusive, reverse, prod) in [
        ("sum", false, false, false),
        ("sum_ex_rev", true, true, false),
        ("prod_ex", true, false, true),
        ("prod_rev", false, true, true),
    ] {
        let y = g
            .op(
                name,
                Op::Cumulative {
                    axis: 1,
                    exclusive,
                    reverse,
                    prod,
                },
                &[x],
            )
            .unwrap();
        g.outputs.push(y);
    }
    check_graph(&g, 5).unwrap();
}

#[test]
fn scatters_match_interpreter() {
    let mut g = Graph::new("scatters");
    let d = g.add_input("d", f32t(&[4, 5]));
    let u = g.add_input("u", f32t(&[3, 5]));
    // Repeated indices: `none` keeps the last update, `add` sums them all.
    let ie = g.add_const("ie", idx(&[3, 5], 4));
    let ind = g.add_const("ind", Tensor::from_i64(vec![3, 1], vec![1, -1, 1]));
    for (name, reduction) in [
        ("none", ScatterReduction::None),
        ("add", ScatterReduction::Add),
        ("max", ScatterReduction::Max),
    ] {
        let y = g
            .op(
                name,
                Op::ScatterElements { axis: 0, reduction },
                &[d, ie, u],
            )
            .unwrap();
        g.outputs.push(y);
        let z = g
            .op(
                format!("nd_{name}"),
                Op::ScatterNd { reduction },
                &[d, ind, u],
            )
            .unwrap();
        g.outputs.push(z);
    }
    check_graph(&g, 9).unwrap();
}
