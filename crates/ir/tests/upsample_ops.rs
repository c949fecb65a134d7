//! Shape inference, verification, dump and cost of PRelu, ConvTranspose and Resize.

use pimkit_ir::*;

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

#[test]
fn conv_transpose_shape_follows_the_onnx_formula_and_counts_macs() {
    let mut g = Graph::new("ct");
    let x = g.add_input("x", f32t(&[2, 4, 5, 3]));
    let w = g.add_const_shape("w", f32t(&[4, 3, 3, 2]));
    let b = g.add_const_shape("b", f32t(&[6]));
    let a = ConvTransposeAttrs {
        kernel: vec![3, 2],
        strides: vec![2, 3],
        pads: vec![1, 0, 2, 1],
        dilations: vec![2, 1],
        output_padding: vec![1, 2],
        group: 2,
    };
    let y = g.op("y", Op::ConvTranspose(a), &[x, w, b]).unwrap();
    g.outputs.push(y);
    // H: 2*(5-1) + 1 + 2*(3-1) + 1 - 1 - 2 = 11; W: 3*(3-1) + 2 + 1*(2-1) + 1 - 0 - 1 = 9
    assert_eq!(g.ty(y).shape, vec![2, 6, 11, 9]);
    verify(&g).unwrap();
    // every input element meets C_out/group * kernel = 3 * 6 weights
    assert_eq!(
        node_cost(&g, &g.nodes[0]).macs,
        (2 * 4 * 5 * 3 * 3 * 6) as u64
    );
    assert!(dump(&g).contains("ConvTranspose[y]"), "{}", dump(&g));
    assert!(dump(&g).contains("op=[1, 2] g=2"), "{}", dump(&g));
}

#[test]
fn conv_transpose_rejects_bad_weights_and_over_cropping() {
    let mut g = Graph::new("ct");
    let x = g.add_input("x", f32t(&[1, 4, 2, 2]));
    let w = g.add_const_shape("w", f32t(&[3, 2, 2, 2]));
    let e = g
        .op(
            "y",
            Op::ConvTranspose(ConvTransposeAttrs::simple(vec![2, 2], 1, 0, 1)),
            &[x, w],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("'y'") && e.contains("input channels"), "{e}");
    let w = g.add_const_shape("w2", f32t(&[4, 2, 2, 2]));
    let e = g
        .op(
            "z",
            Op::ConvTranspose(ConvTransposeAttrs::simple(vec![2, 2], 1, 2, 1)),
            &[x, w],
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("'z'") && e.contains("crop"), "{e}");
}

#[test]
fn prelu_slope_broadcasts_one_way_only() {
    let mut g = Graph::new("p");
    let x = g.add_input("x", f32t(&[1, 3, 4, 4]));
    let s = g.add_const_shape("s", f32t(&[3, 1, 1]));
    let y = g.op("y", Op::PRelu, &[x, s]).unwrap();
    assert_eq!(g.ty(y).shape, vec![1, 3, 4, 4]);
    let big = g.add_const_shape("big", f32t(&[2, 3, 4, 4]));
    let e = g.op("z", Op::PRelu, &[x, big]).unwrap_err().to_string();
    assert!(e.contains("'z'") && e.contains("broadcastable"), "{e}");
}

#[test]
fn resize_output_is_the_folded_sizes() {
    let mut g = Graph::new("r");
    let x = g.add_input("x", f32t(&[1, 2, 5, 4]));
    let a = ResizeAttrs::from_scales(
        &[1, 2, 5, 4],
        vec![1.0, 1.0, 1.5, 0.6],
        ResizeMode::Linear,
        CoordMode::HalfPixel,
    );
    let y = g.op("y", Op::Resize(a.clone()), &[x]).unwrap();
    assert_eq!(g.ty(y).shape, vec![1, 2, 7, 2]);
    assert_eq!(node_cost(&g, &g.nodes[0]).macs, 0);
    let mut bad = a.clone();
    bad.scales.pop();
    let e = g.op("z", Op::Resize(bad), &[x]).unwrap_err().to_string();
    assert!(e.contains("'z'") && e.contains("3 scales"), "{e}");
    let mut aa = a;
    aa.mode = ResizeMode::Nearest(NearestMode::Floor);
    aa.antialias = true;
    let e = g.op("w", Op::Resize(aa), &[x]).unwrap_err().to_string();
    assert!(e.contains("antialias"), "{e}");
}
