//! PRelu, Resize and ConvTranspose: native loop nests equal the reference interpreter.

mod common;
use common::check_graph;
use pimkit_ir::*;

fn f32t(shape: &[usize]) -> TensorType {
    TensorType::new(DType::F32, shape.to_vec())
}

/// Deterministic weights with both signs.
fn data(shape: &[usize]) -> Tensor {
    let n = numel(shape);
    Tensor::from_f32(
        shape.to_vec(),
        (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.2).collect(),
    )
}

fn graph(name: &str, x: &[usize], op: Op, consts: Vec<Tensor>) -> Graph {
    let mut g = Graph::new(name);
    let xv = g.add_input("x", f32t(x));
    let mut ins = vec![Some(xv)];
    for (i, c) in consts.into_iter().enumerate() {
        ins.push(Some(g.add_const(format!("c{i}"), c)));
    }
    g.outputs = g
        .add_node("n", op, ins)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    g
}

fn check_all(graphs: Vec<Graph>) {
    let bad: Vec<String> = graphs
        .iter()
        .filter_map(|g| check_graph(g, 11).err())
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn prelu_matches_interpreter() {
    check_all(vec![
        graph(
            "prelu_channel",
            &[2, 3, 4, 5],
            Op::PRelu,
            vec![data(&[3, 1, 1])],
        ),
        graph("prelu_single", &[2, 3, 4], Op::PRelu, vec![data(&[1])]),
        graph("prelu_last", &[3, 4, 5], Op::PRelu, vec![data(&[5])]),
    ]);
}

#[test]
fn conv_transpose_matches_interpreter() {
    let mut gs = vec![];
    // (x shape, weight shape, attrs, bias)
    let cases: Vec<(&[usize], &[usize], ConvTransposeAttrs, bool)> = vec![
        (
            &[1, 3, 4, 4],
            &[3, 2, 3, 3],
            ConvTransposeAttrs::simple(vec![3, 3], 1, 0, 1),
            true,
        ),
        (
            &[2, 4, 3, 5],
            &[4, 3, 2, 2],
            ConvTransposeAttrs::simple(vec![2, 2], 2, 0, 2),
            true,
        ),
        (
            &[1, 2, 5, 4],
            &[2, 3, 3, 3],
            ConvTransposeAttrs {
                kernel: vec![3, 3],
                strides: vec![2, 3],
                pads: vec![1, 0, 1, 2],
                dilations: vec![1, 2],
                output_padding: vec![1, 2],
                group: 1,
            },
            false,
        ),
        (
            &[1, 2, 7],
            &[2, 2, 4],
            ConvTransposeAttrs::simple(vec![4], 3, 1, 1),
            true,
        ),
        (
            &[1, 2, 2, 3, 2],
            &[2, 1, 2, 2, 3],
            ConvTransposeAttrs::simple(vec![2, 2, 3], 2, 0, 2),
            false,
        ),
    ];
    for (i, (x, w, a, bias)) in cases.into_iter().enumerate() {
        let m = w[1] * a.group;
        let mut consts = vec![data(w)];
        if bias {
            consts.push(data(&[m]));
        }
        gs.push(graph(&format!("convt{i}"), x, Op::ConvTranspose(a), consts));
    }
    check_all(gs);
}

fn resize(x: &[usize], scales: Vec<f64>, mode: ResizeMode, coord: CoordMode) -> ResizeAttrs {
    ResizeAttrs::from_scales(x, scales, mode, coord)
}

#[test]
fn resize_matches_interpreter() {
    use CoordMode::*;
    use NearestMode::*;
    let x = [1, 2, 5, 6];
    let mut attrs = vec![
        resize(
            &x,
            vec![1.0, 1.0, 2.0, 2.0],
            ResizeMode::Nearest(Floor),
            Asymmetric,
        ),
        resize(
            &x,
            vec![1.0, 1.0, 1.5, 0.6],
            ResizeMode::Nearest(RoundPreferFloor),
            HalfPixel,
        ),
        resize(
            &x,
            vec![1.0, 1.0, 0.5, 1.7],
            ResizeMode::Nearest(RoundPreferCeil),
            AlignCorners,
        ),
        resize(
            &x,
            vec![1.0, 1.0, 1.3, 2.0],
            ResizeMode::Nearest(Ceil),
            PytorchHalfPixel,
        ),
        resize(
            &x,
            vec![1.0, 1.0, 2.0, 2.0],
            ResizeMode::Linear,
            PytorchHalfPixel,
        ),
        resize(
            &x,
            vec![1.0, 1.0, 0.6, 1.5],
            ResizeMode::Linear,
            AlignCorners,
        ),
        resize(&x, vec![1.0, 1.0, 1.8, 0.5], ResizeMode::Cubic, HalfPixel),
        resize(
            &x,
            vec![1.0, 1.0, 1.5, 1.5],
            ResizeMode::Linear,
            HalfPixelSymmetric,
        ),
    ];
    let mut aa = resize(&x, vec![1.0, 1.0, 0.4, 0.5], ResizeMode::Cubic, HalfPixel);
    aa.antialias = true;
    aa.exclude_outside = true;
    attrs.push(aa);
    for mode in [ResizeMode::Nearest(RoundPreferFloor), ResizeMode::Linear] {
        let mut tf = resize(&x, vec![1.0, 1.0, 1.4, 1.2], mode, TfCropAndResize);
        tf.roi = vec![0.0, 0.0, -0.2, 0.3, 1.0, 1.0, 0.9, 1.3];
        tf.extrapolation_value = 7.5;
        attrs.push(tf);
    }
    let gs = attrs
        .into_iter()
        .enumerate()
        .map(|(i, a)| graph(&format!("resize{i}"), &x, Op::Resize(a), vec![]))
        .collect();
    check_all(gs);
}

#[test]
fn nearest_resize_is_one_gather_nest() {
    let x = [1, 3, 4, 4];
    let a = resize(
        &x,
        vec![1.0, 1.0, 2.0, 2.0],
        ResizeMode::Nearest(NearestMode::Floor),
        CoordMode::Asymmetric,
    );
    let p = pimkit_loops::lower(&graph("up", &x, Op::Resize(a), vec![])).unwrap();
    assert_eq!(p.nests.len(), 1);
    assert_eq!(p.nests[0].kind, pimkit_loops::NestKind::Copy);
}

/// The ORT-checked decoder of tests/data/ort-models/decoder, built by hand: the three ops
/// chained, so tables, views and in-place buffers of consecutive nests interact.
#[test]
fn decoder_chain_matches_interpreter() {
    let mut g = Graph::new("decoder");
    let x = g.add_input("x", f32t(&[1, 4, 8, 8]));
    let s1 = g.add_const("s1", data(&[4, 1, 1]));
    let y = g.op("act1", Op::PRelu, &[x, s1]).unwrap();
    let w = g.add_const("w", data(&[4, 3, 2, 2]));
    let b = g.add_const("b", data(&[6]));
    let y = g
        .op(
            "up1",
            Op::ConvTranspose(ConvTransposeAttrs::simple(vec![2, 2], 2, 0, 2)),
            &[y, w, b],
        )
        .unwrap();
    let s2 = g.add_const("s2", data(&[1]));
    let y = g.op("act2", Op::PRelu, &[y, s2]).unwrap();
    let near = resize(
        &[1, 6, 16, 16],
        vec![1.0, 1.0, 2.0, 2.0],
        ResizeMode::Nearest(NearestMode::Floor),
        CoordMode::Asymmetric,
    );
    let y = g.op("near", Op::Resize(near), &[y]).unwrap();
    let mut lin = resize(
        &[1, 6, 32, 32],
        vec![1.0, 1.0, 20.0 / 32.0, 20.0 / 32.0],
        ResizeMode::Linear,
        CoordMode::PytorchHalfPixel,
    );
    lin.sizes = vec![1, 6, 20, 20];
    let y = g.op("lin", Op::Resize(lin), &[y]).unwrap();
    g.outputs.push(y);
    check_all(vec![g]);
}
