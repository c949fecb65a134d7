//! Property tests of shape inference against definitions written independently of it.

use pimkit_ir::*;
use proptest::prelude::*;

fn tt(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

/// Count window positions by brute force: start positions p = -pad_begin + i*stride whose
/// window [p, p + (k-1)*d] stays inside the padded input.
fn brute_out(n: usize, k: usize, s: usize, pb: usize, pe: usize, d: usize) -> usize {
    let mut count = 0;
    let mut p = -(pb as i64);
    let last = (n + pe) as i64 - 1;
    while p + ((k - 1) * d) as i64 <= last {
        count += 1;
        p += s as i64;
    }
    count
}

proptest! {
    #[test]
    fn broadcast_is_symmetric_and_numpy_like(a in prop::collection::vec(1usize..4, 0..4), b in prop::collection::vec(1usize..4, 0..4)) {
        let ab = broadcast_shapes(&a, &b);
        prop_assert_eq!(&ab, &broadcast_shapes(&b, &a));
        // numpy rule, written independently: align right, dims equal or one of them 1.
        let r = a.len().max(b.len());
        let pad = |v: &Vec<usize>| { let mut p = vec![1; r - v.len()]; p.extend(v); p };
        let (pa, pb) = (pad(&a), pad(&b));
        let ok = pa.iter().zip(&pb).all(|(x, y)| x == y || *x == 1 || *y == 1);
        prop_assert_eq!(ab.is_some(), ok);
        if let Some(s) = ab {
            for i in 0..r { prop_assert_eq!(s[i], pa[i].max(pb[i])); }
        }
    }

    #[test]
    fn conv_output_matches_window_count(n in 1usize..20, k in 1usize..6, s in 1usize..4, pb in 0usize..3, pe in 0usize..3, d in 1usize..3, c in 1usize..4, m in 1usize..4) {
        let mut g = Graph::new("t");
        let x = g.add_input("x", tt(&[1, c, n, n]));
        let w = g.add_const_shape("w", tt(&[m, c, k, k]));
        let a = ConvAttrs { kernel: vec![k, k], strides: vec![s, s], pads: vec![pb, pb, pe, pe], dilations: vec![d, d], group: 1 };
        let expect = brute_out(n, k, s, pb, pe, d);
        match g.op("conv", Op::Conv(a), &[x, w]) {
            Ok(y) => { prop_assert!(expect > 0); prop_assert_eq!(&g.ty(y).shape, &vec![1, m, expect, expect]); }
            Err(e) => { prop_assert_eq!(expect, 0, "{}", e); prop_assert!(e.to_string().contains("conv")); }
        }
    }

    #[test]
    fn transpose_twice_with_inverse_is_identity(shape in prop::collection::vec(1usize..5, 1..5), seed in 0u64..1000) {
        let r = shape.len();
        let mut perm: Vec<usize> = (0..r).collect();
        // deterministic shuffle
        let mut st = seed;
        for i in (1..r).rev() { st = st.wrapping_mul(6364136223846793005).wrapping_add(1); perm.swap(i, (st >> 33) as usize % (i + 1)); }
        let mut inv = vec![0; r];
        for (i, &p) in perm.iter().enumerate() { inv[p] = i; }
        let mut g = Graph::new("t");
        let x = g.add_input("x", tt(&shape));
        let y = g.op("t1", Op::Transpose { perm }, &[x]).unwrap();
        let z = g.op("t2", Op::Transpose { perm: inv }, &[y]).unwrap();
        prop_assert_eq!(&g.ty(z).shape, &shape);
    }

    #[test]
    fn concat_and_split_are_inverse(parts in prop::collection::vec(1usize..5, 1..5), rest in 1usize..4) {
        let mut g = Graph::new("t");
        let ins: Vec<ValueId> = parts.iter().enumerate().map(|(i, &p)| g.add_input(format!("x{i}"), tt(&[rest, p]))).collect();
        let c = g.op("cat", Op::Concat { axis: 1 }, &ins).unwrap();
        prop_assert_eq!(&g.ty(c).shape, &vec![rest, parts.iter().sum::<usize>()]);
        let outs = g.add_node("split", Op::Split { axis: 1, sizes: parts.clone() }, vec![Some(c)]).unwrap();
        for (o, p) in outs.iter().zip(&parts) { prop_assert_eq!(&g.ty(*o).shape, &vec![rest, *p]); }
        prop_assert!(verify(&g).is_ok());
    }

    #[test]
    fn matmul_shapes(b in 1usize..3, m in 1usize..5, k in 1usize..5, n in 1usize..5, k2 in 1usize..5) {
        let mut g = Graph::new("t");
        let a = g.add_input("a", tt(&[b, m, k]));
        let w = g.add_input("w", tt(&[k2, n]));
        let r = g.op("mm", Op::MatMul, &[a, w]);
        if k == k2 { prop_assert_eq!(&g.ty(r.unwrap()).shape, &vec![b, m, n]); }
        else { let e = r.unwrap_err().to_string(); prop_assert!(e.contains("mm") && e.contains("MatMul"), "{}", e); }
    }
}

#[test]
fn verifier_reports_every_problem_with_names() {
    let mut g = Graph::new("t");
    let x = g.add_input("x", tt(&[2, 3]));
    let y = g.op("relu1", Op::Unary(UnaryOp::Relu), &[x]).unwrap();
    g.outputs.push(y);
    // Corrupt: a node reading a later value, and a wrong stored type on another output.
    let z = g.op("relu2", Op::Unary(UnaryOp::Relu), &[x]).unwrap();
    g.nodes[0].inputs[0] = Some(z);
    g.values[z.idx()].ty = tt(&[3, 2]);
    let e = verify(&g).unwrap_err().to_string();
    assert!(
        e.contains("relu1") && e.contains("before it is defined"),
        "{e}"
    );
    assert!(
        e.contains("relu2") && e.contains("infers to f32[2,3]"),
        "{e}"
    );
    // The first problem on the first line, the other one below it.
    assert!(
        e.contains("(and 1 more problem(s))") && e.lines().count() == 2,
        "{e}"
    );
}

#[test]
fn dump_is_stable_text() {
    let mut g = Graph::new("tiny");
    let x = g.add_input("x", tt(&[1, 4]));
    let w = g.add_const("w", Tensor::from_f32(vec![4, 2], vec![0.0; 8]));
    let y = g.op("fc", Op::MatMul, &[x, w]).unwrap();
    let z = g
        .op("act", Op::Unary(UnaryOp::LeakyRelu { alpha: 0.1 }), &[y])
        .unwrap();
    g.outputs.push(z);
    let expected = "graph tiny {\n  input %x: f32[1,4]\n  const %w: f32[4,2]\n  %fc: f32[1,2] = MatMul[fc](%x, %w)\n  %act: f32[1,2] = LeakyRelu[act](%fc) {alpha=0.1}\n  return %act\n}\n";
    assert_eq!(dump(&g), expected);
}

#[test]
fn shape_errors_name_node_and_expectation() {
    let mut g = Graph::new("t");
    let a = g.add_input("a", tt(&[2, 3]));
    let b = g.add_input("b", tt(&[4, 5]));
    let e = g
        .op("add7", Op::Binary(BinaryOp::Add), &[a, b])
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("add7") && e.contains("[4, 5]") && e.contains("broadcastable"),
        "{e}"
    );
}

#[test]
fn prune_removes_dead_nodes_and_renumbers() {
    let mut g = Graph::new("t");
    let x = g.add_input("x", tt(&[2]));
    let _dead = g.op("dead", Op::Unary(UnaryOp::Exp), &[x]).unwrap();
    let y = g.op("live", Op::Unary(UnaryOp::Relu), &[x]).unwrap();
    g.outputs.push(y);
    g.prune();
    assert_eq!(g.nodes.len(), 1);
    assert_eq!(g.nodes[0].name, "live");
    verify(&g).unwrap();
}
