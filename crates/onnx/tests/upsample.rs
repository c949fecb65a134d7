//! Import of PRelu, ConvTranspose and Resize: attribute resolution (output_shape,
//! auto_pad, axes, keep_aspect_ratio_policy) and errors that name node and attribute.

mod common;
use common::*;
use pimkit_ir::{CoordMode, Graph, NearestMode, Op, ResizeMode};
use pimkit_onnx::{LoadOptions, load_bytes};

fn try_load(m: &pimkit_onnx::proto::ModelProto) -> Result<Graph, String> {
    load_bytes(&bytes(m), None, &LoadOptions::default()).map_err(|e| e.to_string())
}

fn only_op(g: &Graph) -> &Op {
    assert_eq!(g.nodes.len(), 1, "{}", pimkit_ir::dump(g));
    &g.nodes[0].op
}

fn convt_model(attrs: Vec<pimkit_onnx::proto::AttributeProto>) -> Result<Graph, String> {
    let w = init_f32("w", &[1, 2, 3, 3], &[0.5; 18]);
    try_load(&model(
        vec![node("ConvTranspose", "up", &["x", "w"], &["y"], attrs)],
        vec![vi_f32("x", &[1, 1, 3, 3])],
        &["y"],
        vec![w],
        17,
    ))
}

#[test]
fn conv_transpose_resolves_output_shape_and_auto_pad() {
    // Natural extent 3*2+3 = 9 (H) and 2*2+3 = 7 (W); output_shape [10, 8] grows the end.
    let g = convt_model(vec![
        attr_ints("strides", &[3, 2]),
        attr_ints("output_shape", &[10, 8]),
    ])
    .unwrap();
    let Op::ConvTranspose(a) = only_op(&g) else {
        panic!()
    };
    assert_eq!(
        (a.pads.clone(), a.output_padding.clone()),
        (vec![0; 4], vec![1, 1])
    );
    assert_eq!(g.ty(g.outputs[0]).shape, vec![1, 2, 10, 8]);
    // output_shape smaller than natural: pads total 2 (H) and 1 (W), the odd one goes
    // to the beginning without SAME_UPPER.
    let g = convt_model(vec![
        attr_ints("strides", &[3, 2]),
        attr_ints("output_shape", &[7, 6]),
    ])
    .unwrap();
    let Op::ConvTranspose(a) = only_op(&g) else {
        panic!()
    };
    assert_eq!(a.pads, vec![1, 1, 1, 0]);
    // SAME_UPPER: output = in * stride, the extra pad at the end.
    let g = convt_model(vec![
        attr_ints("strides", &[2, 2]),
        attr_str("auto_pad", "SAME_UPPER"),
    ])
    .unwrap();
    let Op::ConvTranspose(a) = only_op(&g) else {
        panic!()
    };
    assert_eq!(a.pads, vec![0, 0, 1, 1]);
    assert_eq!(g.ty(g.outputs[0]).shape, vec![1, 2, 6, 6]);
    let e = convt_model(vec![attr_str("auto_pad", "MIRROR")]).unwrap_err();
    assert!(e.contains("'up'") && e.contains("auto_pad"), "{e}");
    let e = convt_model(vec![attr_ints("strides", &[2])]).unwrap_err();
    assert!(e.contains("'up'") && e.contains("strides"), "{e}");
}

fn resize_model(
    inputs: &[&str],
    attrs: Vec<pimkit_onnx::proto::AttributeProto>,
    inits: Vec<pimkit_onnx::proto::TensorProto>,
    extra_inputs: Vec<pimkit_onnx::proto::ValueInfoProto>,
) -> Result<Graph, String> {
    let mut ins = vec![vi_f32("x", &[1, 3, 4, 6])];
    ins.extend(extra_inputs);
    try_load(&model(
        vec![node("Resize", "rs", inputs, &["y"], attrs)],
        ins,
        &["y"],
        inits,
        19,
    ))
}

#[test]
fn resize_folds_scales_sizes_axes_and_aspect_policy() {
    let g = resize_model(
        &["x", "", "scales"],
        vec![
            attr_str("mode", "nearest"),
            attr_str("coordinate_transformation_mode", "asymmetric"),
            attr_str("nearest_mode", "floor"),
        ],
        vec![init_f32("scales", &[4], &[1.0, 1.0, 2.0, 1.5])],
        vec![],
    )
    .unwrap();
    let Op::Resize(a) = only_op(&g) else { panic!() };
    assert_eq!(a.mode, ResizeMode::Nearest(NearestMode::Floor));
    assert_eq!(a.coord, CoordMode::Asymmetric);
    assert_eq!(a.sizes, vec![1, 3, 8, 9]);
    assert_eq!(a.scales, vec![1.0, 1.0, 2.0, 1.5]);
    // sizes on axes [3, 2] with not_larger: one common scale min(12/6, 10/4) = 2.
    let g = resize_model(
        &["x", "", "", "sizes"],
        vec![
            attr_str("mode", "linear"),
            attr_ints("axes", &[3, 2]),
            attr_str("keep_aspect_ratio_policy", "not_larger"),
        ],
        vec![init_i64("sizes", &[2], &[12, 10])],
        vec![],
    )
    .unwrap();
    let Op::Resize(a) = only_op(&g) else { panic!() };
    assert_eq!(a.sizes, vec![1, 3, 8, 12]);
    assert_eq!(a.scales, vec![1.0, 1.0, 2.0, 2.0]);
    assert_eq!(a.coord, CoordMode::HalfPixel);
}

#[test]
fn resize_errors_name_node_and_operand() {
    // scales computed at run time (a graph input): must be a constant.
    let e = resize_model(&["x", "", "s"], vec![], vec![], vec![vi_f32("s", &[4])]).unwrap_err();
    assert!(
        e.contains("'rs'") && e.contains("scales") && e.contains("constant"),
        "{e}"
    );
    let e = resize_model(
        &["x", "", "scales"],
        vec![attr_str("mode", "area")],
        vec![init_f32("scales", &[4], &[1.0, 1.0, 2.0, 2.0])],
        vec![],
    )
    .unwrap_err();
    assert!(
        e.contains("'rs'") && e.contains("'mode'") && e.contains("area"),
        "{e}"
    );
    let e = resize_model(
        &["x", "", "scales"],
        vec![attr_str("coordinate_transformation_mode", "corners")],
        vec![init_f32("scales", &[4], &[1.0, 1.0, 2.0, 2.0])],
        vec![],
    )
    .unwrap_err();
    assert!(e.contains("coordinate_transformation_mode"), "{e}");
    let e = resize_model(
        &["x", "", "scales"],
        vec![attr_int("antialias", 1)],
        vec![init_f32("scales", &[4], &[1.0, 1.0, 0.5, 0.5])],
        vec![],
    )
    .unwrap_err();
    assert!(e.contains("'rs'") && e.contains("antialias"), "{e}");
    let e = resize_model(&["x"], vec![], vec![], vec![]).unwrap_err();
    assert!(e.contains("'rs'") && e.contains("scales nor sizes"), "{e}");
    let e = resize_model(
        &["x", "", "scales"],
        vec![],
        vec![init_f32("scales", &[3], &[1.0, 2.0, 2.0])],
        vec![],
    )
    .unwrap_err();
    assert!(e.contains("'rs'") && e.contains("3 values for 4"), "{e}");
}

#[test]
fn prelu_slope_must_broadcast_to_the_input() {
    let load = |slope: &[i64]| {
        let n: i64 = slope.iter().product();
        try_load(&model(
            vec![node("PRelu", "act", &["x", "slope"], &["y"], vec![])],
            vec![vi_f32("x", &[1, 3, 4, 4])],
            &["y"],
            vec![init_f32("slope", slope, &vec![0.25; n as usize])],
            17,
        ))
    };
    assert!(matches!(only_op(&load(&[3, 1, 1]).unwrap()), Op::PRelu));
    let e = load(&[3]).unwrap_err();
    assert!(e.contains("'act'") && e.contains("broadcastable"), "{e}");
}

#[test]
fn old_resize_and_upsample_follow_onnxruntime_rounding() {
    let load = |op: &str, opset: i64, scales: &[f32]| {
        try_load(&model(
            vec![node(op, "up", &["x", "scales"], &["y"], vec![])],
            vec![vi_f32("x", &[1, 1, 4, 4])],
            &["y"],
            vec![init_f32("scales", &[4], scales)],
            opset,
        ))
    };
    let g = load("Upsample", 9, &[1.0, 1.0, 2.0, 2.0]).unwrap();
    let Op::Resize(a) = only_op(&g) else { panic!() };
    assert_eq!(
        (a.mode, a.coord),
        (
            ResizeMode::Nearest(NearestMode::Floor),
            CoordMode::Asymmetric
        )
    );
    let g = load("Resize", 10, &[1.0, 1.0, 0.5, 0.5]).unwrap();
    let Op::Resize(a) = only_op(&g) else { panic!() };
    assert_eq!(a.mode, ResizeMode::Nearest(NearestMode::Ceil));
    assert_eq!(a.sizes, vec![1, 1, 2, 2]);
    let e = load("Resize", 10, &[1.0, 1.0, 0.5, 2.0]).unwrap_err();
    assert!(e.contains("'up'") && e.contains("opset 10"), "{e}");
}
