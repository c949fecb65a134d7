//! pimkit Graph -> ONNX ModelProto (ir_version 10, ai.onnx opset 21, com.microsoft 1).
//! Attribute-folded operands (shapes, axes, pads, clip bounds, split sizes) are written
//! back as initializers so that onnxruntime and the importer read the same model.

use crate::error::{OnnxError, Result};
use crate::proto::{
    AttributeProto, GraphProto, ModelProto, NodeProto, OperatorSetIdProto, TensorProto,
    TensorShapeProto, TypeProto, ValueInfoProto,
    attribute_proto::AttributeType,
    tensor_shape_proto::{Dimension, dimension},
    type_proto,
};
use crate::tensor::{encode, onnx_code};
use pimkit_ir::{
    BinaryOp, ConvAttrs, CoordMode, DType, E8M0Round, Graph, NearestMode, Op, PadMode, PoolKind,
    ResizeAttrs, ResizeMode, RnnDirection, Tensor, TensorType, UnaryOp, ValueDef,
};
use prost::Message;
use std::collections::HashSet;
use std::path::Path;

// Ops added for the ONNX node suite (issue #16 item 4).
mod ext;

pub const IR_VERSION: i64 = 10;
pub const OPSET: i64 = 21;
pub const MS_OPSET: i64 = 1;

/// Serialize a graph as ONNX ModelProto bytes. The weights are copied twice on the way
/// (into the proto, then into its encoding): that is checked against the memory this
/// process may still use first, so a model too large to export is an error, not an abort.
pub fn export(g: &Graph) -> Result<Vec<u8>> {
    let data: u64 = g
        .values
        .iter()
        .filter_map(|v| match &v.def {
            pimkit_ir::ValueDef::Const(Some(_)) => Some(v.ty.bytes() as u64),
            _ => None,
        })
        .sum();
    pimkit_ir::memory::check_fits(
        data.saturating_mul(2),
        &format!(
            "encoding the model's {:.2} GiB of constants as ONNX",
            data as f64 / (1u64 << 30) as f64
        ),
    )
    .map_err(OnnxError::Export)?;
    Ok(to_model_proto(g)?.encode_to_vec())
}

/// Write a graph to an .onnx file.
pub fn save(g: &Graph, path: &Path) -> Result<()> {
    let bytes = export(g)?;
    pimkit_ir::fsio::write_atomic(path, &bytes).map_err(|source| OnnxError::Write {
        path: path.to_path_buf(),
        source,
    })
}

fn attr(name: &str, t: AttributeType) -> AttributeProto {
    AttributeProto {
        name: Some(name.into()),
        r#type: Some(t as i32),
        ..Default::default()
    }
}
fn a_int(name: &str, v: i64) -> AttributeProto {
    AttributeProto {
        i: Some(v),
        ..attr(name, AttributeType::Int)
    }
}
fn a_float(name: &str, v: f32) -> AttributeProto {
    AttributeProto {
        f: Some(v),
        ..attr(name, AttributeType::Float)
    }
}
fn a_ints(name: &str, v: &[usize]) -> AttributeProto {
    AttributeProto {
        ints: v.iter().map(|&x| x as i64).collect(),
        ..attr(name, AttributeType::Ints)
    }
}
fn a_graph(name: &str, g: GraphProto) -> AttributeProto {
    AttributeProto {
        g: Some(g),
        ..attr(name, AttributeType::Graph)
    }
}
fn a_i64s(name: &str, v: &[i64]) -> AttributeProto {
    AttributeProto {
        ints: v.to_vec(),
        ..attr(name, AttributeType::Ints)
    }
}
fn a_floats(name: &str, v: &[f32]) -> AttributeProto {
    AttributeProto {
        floats: v.to_vec(),
        ..attr(name, AttributeType::Floats)
    }
}
fn a_str(name: &str, v: &str) -> AttributeProto {
    AttributeProto {
        s: Some(v.as_bytes().to_vec()),
        ..attr(name, AttributeType::String)
    }
}
fn conv_attrs(a: &ConvAttrs) -> Vec<AttributeProto> {
    vec![
        a_ints("kernel_shape", &a.kernel),
        a_ints("strides", &a.strides),
        a_ints("pads", &a.pads),
        a_ints("dilations", &a.dilations),
        a_int("group", a.group as i64),
    ]
}

fn value_info(name: &str, ty: &TensorType) -> ValueInfoProto {
    let shape = TensorShapeProto {
        dim: ty
            .shape
            .iter()
            .map(|&d| Dimension {
                value: Some(dimension::Value::DimValue(d as i64)),
                ..Default::default()
            })
            .collect(),
    };
    ValueInfoProto {
        name: Some(name.into()),
        r#type: Some(TypeProto {
            value: Some(type_proto::Value::TensorType(type_proto::Tensor {
                elem_type: Some(onnx_code(ty.dtype)),
                shape: Some(shape),
            })),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Builder for one node: extra operand initializers get fresh names.
struct Emit<'a> {
    names: &'a mut HashSet<String>,
    inits: &'a mut Vec<TensorProto>,
    node: &'a str,
}

impl Emit<'_> {
    fn init(&mut self, what: &str, t: Tensor) -> String {
        let mut name = format!("{}_{what}", self.node);
        let mut k = 1;
        while self.names.contains(&name) {
            name = format!("{}_{what}_{k}", self.node);
            k += 1;
        }
        self.names.insert(name.clone());
        self.inits.push(encode(&name, &t));
        name
    }
    fn ints(&mut self, what: &str, v: impl IntoIterator<Item = i64>) -> String {
        let v: Vec<i64> = v.into_iter().collect();
        self.init(what, Tensor::from_i64(vec![v.len()], v))
    }
}

fn scalar_as(dt: DType, v: f32) -> Tensor {
    Tensor::from_f64_as(dt, vec![], &[v as f64])
}

fn resize_attrs(a: &ResizeAttrs) -> Vec<AttributeProto> {
    let (mode, nearest) = match a.mode {
        ResizeMode::Nearest(m) => (
            "nearest",
            Some(match m {
                NearestMode::RoundPreferFloor => "round_prefer_floor",
                NearestMode::RoundPreferCeil => "round_prefer_ceil",
                NearestMode::Floor => "floor",
                NearestMode::Ceil => "ceil",
            }),
        ),
        ResizeMode::Linear => ("linear", None),
        ResizeMode::Cubic => ("cubic", None),
    };
    let coord = match a.coord {
        CoordMode::HalfPixel => "half_pixel",
        CoordMode::HalfPixelSymmetric => "half_pixel_symmetric",
        CoordMode::PytorchHalfPixel => "pytorch_half_pixel",
        CoordMode::AlignCorners => "align_corners",
        CoordMode::Asymmetric => "asymmetric",
        CoordMode::TfCropAndResize => "tf_crop_and_resize",
    };
    let mut v = vec![
        a_str("mode", mode),
        a_str("coordinate_transformation_mode", coord),
        a_float("cubic_coeff_a", a.cubic_coeff_a),
        a_int("exclude_outside", a.exclude_outside as i64),
        a_float("extrapolation_value", a.extrapolation_value),
        a_int("antialias", a.antialias as i64),
    ];
    if let Some(m) = nearest {
        v.push(a_str("nearest_mode", m));
    }
    v
}

enum ResizeOperand {
    Sizes,
    Scales(Vec<f32>),
}

/// Which Resize operand reproduces the IR attributes on re-import: `sizes` when every
/// scale is exactly `size / in`, else f32 `scales` when they are exact and floor to the
/// sizes.
fn resize_operand(in_shape: &[usize], a: &ResizeAttrs) -> Option<ResizeOperand> {
    if in_shape.len() != a.sizes.len() || in_shape.len() != a.scales.len() {
        return None;
    }
    let from_sizes = in_shape
        .iter()
        .zip(&a.sizes)
        .zip(&a.scales)
        .all(|((&i, &o), &s)| i > 0 && o as f64 / i as f64 == s);
    if from_sizes {
        return Some(ResizeOperand::Sizes);
    }
    let f: Vec<f32> = a.scales.iter().map(|&s| s as f32).collect();
    let exact = f.iter().zip(&a.scales).all(|(&x, &s)| x as f64 == s)
        && in_shape
            .iter()
            .zip(&a.sizes)
            .zip(&a.scales)
            .all(|((&i, &o), &s)| (i as f64 * s).floor() as usize == o);
    exact.then_some(ResizeOperand::Scales(f))
}

pub fn to_model_proto(g: &Graph) -> Result<ModelProto> {
    if g.is_shape_only() {
        return Err(OnnxError::Export(
            "cannot export a shape-only graph (its constants carry no data); load or build it with weights".into(),
        ));
    }
    let mut names: HashSet<String> = HashSet::new();
    let graph = graph_proto(g, &mut names, None)?;
    Ok(ModelProto {
        ir_version: Some(IR_VERSION),
        producer_name: Some("pimkit".into()),
        producer_version: Some(env!("CARGO_PKG_VERSION").into()),
        opset_import: vec![
            OperatorSetIdProto {
                domain: Some(String::new()),
                // Ops newer than the default opset raise it (TensorScatter, CumProd, BitCast).
                version: Some(
                    g.nodes
                        .iter()
                        .map(|n| ext::min_opset(&n.op))
                        .fold(OPSET, i64::max),
                ),
            },
            OperatorSetIdProto {
                domain: Some(crate::convert::MS.into()),
                version: Some(MS_OPSET),
            },
        ],
        graph: Some(graph),
        ..Default::default()
    })
}

/// One graph as a GraphProto. `formal`: for a subgraph, how many of its inputs are the
/// op's formal parameters; the rest are captured outer values, which ONNX references by
/// name instead of listing them as inputs.
fn graph_proto(
    g: &Graph,
    names: &mut HashSet<String>,
    formal: Option<usize>,
) -> Result<GraphProto> {
    let captured: HashSet<pimkit_ir::ValueId> = match formal {
        Some(f) => g.inputs.iter().skip(f).copied().collect(),
        None => HashSet::new(),
    };
    for (i, v) in g.values.iter().enumerate() {
        if captured.contains(&pimkit_ir::ValueId(i as u32)) {
            continue;
        }
        if v.name.is_empty() || !names.insert(v.name.clone()) {
            return Err(OnnxError::Export(format!(
                "value name '{}' is empty or used twice; ONNX needs unique value names",
                v.name
            )));
        }
    }
    let mut inits = Vec::new();
    for v in &g.values {
        if let ValueDef::Const(Some(t)) = &v.def {
            inits.push(encode(&v.name, t));
        }
    }
    let outputs: HashSet<_> = g.outputs.iter().copied().collect();
    let mut nodes = Vec::new();
    let mut value_infos = Vec::new();
    for n in &g.nodes {
        let mut e = Emit {
            names,
            inits: &mut inits,
            node: &n.name,
        };
        let mut inputs: Vec<String> = n
            .inputs
            .iter()
            .map(|i| i.map(|v| g.value(v).name.clone()).unwrap_or_default())
            .collect();
        let x_dtype = n
            .inputs
            .first()
            .copied()
            .flatten()
            .map(|v| g.ty(v).dtype)
            .unwrap_or(DType::F32);
        let mut domain = "";
        let mut attrs = Vec::new();
        let op_type = n.op.name();
        match &n.op {
            Op::Unary(u) => match u {
                UnaryOp::HardSigmoid { alpha, beta } => {
                    attrs = vec![a_float("alpha", *alpha), a_float("beta", *beta)]
                }
                UnaryOp::LeakyRelu { alpha } | UnaryOp::Elu { alpha } => {
                    attrs = vec![a_float("alpha", *alpha)]
                }
                UnaryOp::Gelu { tanh } => {
                    attrs = vec![a_str("approximate", if *tanh { "tanh" } else { "none" })]
                }
                UnaryOp::Celu { alpha }
                | UnaryOp::ThresholdedRelu { alpha }
                | UnaryOp::Swish { alpha } => attrs = vec![a_float("alpha", *alpha)],
                UnaryOp::Selu { alpha, gamma } => {
                    attrs = vec![a_float("alpha", *alpha), a_float("gamma", *gamma)]
                }
                UnaryOp::Shrink { bias, lambd } => {
                    attrs = vec![a_float("bias", *bias), a_float("lambd", *lambd)]
                }
                UnaryOp::IsInf { pos, neg } => {
                    attrs = vec![
                        a_int("detect_positive", *pos as i64),
                        a_int("detect_negative", *neg as i64),
                    ]
                }
                _ => {}
            },
            Op::Binary(BinaryOp::Mod { fmod }) => attrs = vec![a_int("fmod", *fmod as i64)],
            Op::Binary(BinaryOp::BitShift { left }) => {
                attrs = vec![a_str("direction", if *left { "LEFT" } else { "RIGHT" })]
            }
            Op::Binary(_) | Op::Where | Op::Identity | Op::MatMul | Op::GlobalPool(_) => {}
            Op::QLinearMatMul | Op::MatMulInteger => {}
            Op::Clip { min, max } => {
                inputs.truncate(1);
                for (what, b) in [("min", min), ("max", max)] {
                    let name = b
                        .map(|v| e.init(what, scalar_as(x_dtype, v)))
                        .unwrap_or_default();
                    inputs.push(name);
                }
            }
            Op::Cast {
                to,
                saturate,
                e8m0_round,
            } => {
                attrs = vec![a_int("to", onnx_code(*to) as i64)];
                if !saturate {
                    attrs.push(a_int("saturate", 0));
                }
                if *e8m0_round != E8M0Round::Up {
                    attrs.push(a_str("round_mode", e8m0_round.name()));
                }
            }
            Op::Conv(a) | Op::QLinearConv(a) | Op::ConvInteger(a) => attrs = conv_attrs(a),
            Op::ConvTranspose(a) => {
                attrs = vec![
                    a_ints("kernel_shape", &a.kernel),
                    a_ints("strides", &a.strides),
                    a_ints("pads", &a.pads),
                    a_ints("dilations", &a.dilations),
                    a_ints("output_padding", &a.output_padding),
                    a_int("group", a.group as i64),
                ]
            }
            Op::PRelu => {}
            Op::Resize(a) => {
                let in_shape = n
                    .inputs
                    .first()
                    .copied()
                    .flatten()
                    .map(|v| g.ty(v).shape.clone())
                    .unwrap_or_default();
                attrs = resize_attrs(a);
                inputs.truncate(1);
                let roi = if a.roi.is_empty() {
                    String::new()
                } else {
                    e.init("roi", Tensor::from_f32(vec![a.roi.len()], a.roi.clone()))
                };
                inputs.push(roi);
                match resize_operand(&in_shape, a) {
                    Some(ResizeOperand::Sizes) => {
                        inputs.push(String::new());
                        inputs.push(e.ints("sizes", a.sizes.iter().map(|&d| d as i64)));
                    }
                    Some(ResizeOperand::Scales(s)) => {
                        inputs.push(e.init("scales", Tensor::from_f32(vec![s.len()], s)))
                    }
                    None => {
                        return Err(OnnxError::Export(format!(
                            "node '{}' (Resize): scales {:?} and sizes {:?} cannot be written \
                             as one ONNX operand for input shape {in_shape:?}",
                            n.name, a.scales, a.sizes
                        )));
                    }
                }
            }
            Op::Pool(p) => {
                attrs = vec![
                    a_ints("kernel_shape", &p.kernel),
                    a_ints("strides", &p.strides),
                    a_ints("pads", &p.pads),
                    a_ints("dilations", &p.dilations),
                    a_int("ceil_mode", p.ceil_mode as i64),
                ];
                if p.kind == PoolKind::Avg {
                    attrs.push(a_int("count_include_pad", p.count_include_pad as i64));
                }
            }
            Op::Gemm {
                alpha,
                beta,
                trans_a,
                trans_b,
            } => {
                attrs = vec![
                    a_float("alpha", *alpha),
                    a_float("beta", *beta),
                    a_int("transA", *trans_a as i64),
                    a_int("transB", *trans_b as i64),
                ]
            }
            Op::BatchNorm { epsilon } => attrs = vec![a_float("epsilon", *epsilon)],
            Op::LayerNorm { axis, epsilon } => {
                attrs = vec![a_int("axis", *axis as i64), a_float("epsilon", *epsilon)]
            }
            Op::Softmax { axis } | Op::LogSoftmax { axis } => {
                attrs = vec![a_int("axis", *axis as i64)]
            }
            Op::Reduce { axes, keepdims, .. } => {
                attrs = vec![a_int("keepdims", *keepdims as i64)];
                if axes.is_empty() {
                    attrs.push(a_int("noop_with_empty_axes", 1));
                } else {
                    inputs.push(e.ints("axes", axes.iter().map(|&a| a as i64)));
                }
            }
            Op::ArgMax {
                axis,
                keepdims,
                select_last,
            } => {
                attrs = vec![
                    a_int("axis", *axis as i64),
                    a_int("keepdims", *keepdims as i64),
                ];
                if *select_last {
                    attrs.push(a_int("select_last_index", 1));
                }
            }
            Op::Reshape { shape } => {
                if shape.contains(&0) {
                    attrs = vec![a_int("allowzero", 1)];
                }
                inputs.push(e.ints("shape", shape.iter().map(|&d| d as i64)));
            }
            Op::Expand { shape } => inputs.push(e.ints("shape", shape.iter().map(|&d| d as i64))),
            // The operands are already inputs; the count follows from their values.
            Op::Range { .. } => {}
            Op::If {
                then_branch,
                else_branch,
            } => {
                // Inputs after the condition are captures, referenced by name in the bodies.
                inputs.truncate(1);
                attrs = vec![
                    a_graph(
                        "then_branch",
                        graph_proto(then_branch.graph(), e.names, Some(0))?,
                    ),
                    a_graph(
                        "else_branch",
                        graph_proto(else_branch.graph(), e.names, Some(0))?,
                    ),
                ];
            }
            Op::Loop {
                body, n_carried, ..
            } => {
                inputs.truncate(2 + n_carried);
                attrs = vec![a_graph(
                    "body",
                    graph_proto(body.graph(), e.names, Some(2 + n_carried))?,
                )];
            }
            Op::Scan { body, attrs: sa } => {
                let formal = sa.n_state + sa.n_scan_in;
                inputs.truncate(formal);
                attrs = vec![
                    a_graph("body", graph_proto(body.graph(), e.names, Some(formal))?),
                    a_int("num_scan_inputs", sa.n_scan_in as i64),
                    a_ints("scan_input_axes", &sa.in_axes),
                    a_ints(
                        "scan_input_directions",
                        &sa.in_reverse
                            .iter()
                            .map(|&r| r as usize)
                            .collect::<Vec<_>>(),
                    ),
                    a_ints("scan_output_axes", &sa.out_axes),
                    a_ints(
                        "scan_output_directions",
                        &sa.out_reverse
                            .iter()
                            .map(|&r| r as usize)
                            .collect::<Vec<_>>(),
                    ),
                ];
            }
            Op::Tile { repeats } => {
                inputs.push(e.ints("repeats", repeats.iter().map(|&d| d as i64)))
            }
            Op::Transpose { perm } => attrs = vec![a_ints("perm", perm)],
            Op::Concat { axis } | Op::Gather { axis } | Op::QLinearConcat { axis } => {
                attrs = vec![a_int("axis", *axis as i64)]
            }
            Op::Split { axis, sizes } => {
                attrs = vec![a_int("axis", *axis as i64)];
                inputs.push(e.ints("split", sizes.iter().map(|&d| d as i64)));
            }
            Op::Slice { axes } => {
                // A clamped end of -1 with a negative step means "before index 0": ONNX
                // would read -1 as the last index, so write the most negative value.
                let ends = axes.iter().map(|s| {
                    if s.step < 0 && s.end < 0 {
                        i64::MIN
                    } else {
                        s.end
                    }
                });
                inputs.push(e.ints("starts", axes.iter().map(|s| s.start)));
                inputs.push(e.ints("ends", ends));
                inputs.push(e.ints("axes", axes.iter().map(|s| s.axis as i64)));
                inputs.push(e.ints("steps", axes.iter().map(|s| s.step)));
            }
            Op::Pad { pads, mode, value } => {
                let m = match mode {
                    PadMode::Constant => "constant",
                    PadMode::Reflect => "reflect",
                    PadMode::Edge => "edge",
                    PadMode::Wrap => "wrap",
                };
                attrs = vec![a_str("mode", m)];
                inputs.push(e.ints("pads", pads.iter().map(|&d| d as i64)));
                inputs.push(e.init("value", scalar_as(x_dtype, *value)));
            }
            Op::Lstm(a) | Op::Gru(a) => {
                let dir = match a.direction {
                    RnnDirection::Forward => "forward",
                    RnnDirection::Reverse => "reverse",
                    RnnDirection::Bidirectional => "bidirectional",
                };
                attrs = vec![
                    a_int("hidden_size", a.hidden_size as i64),
                    a_str("direction", dir),
                    a_int("layout", a.batch_first as i64),
                ];
                if matches!(n.op, Op::Gru(_)) {
                    attrs.push(a_int("linear_before_reset", a.linear_before_reset as i64));
                }
            }
            Op::QuantizeLinear { axis, to } => {
                attrs = vec![a_int("axis", *axis as i64)];
                if n.inputs.get(2).copied().flatten().is_none() && *to != DType::U8 {
                    attrs.push(a_int("output_dtype", onnx_code(*to) as i64));
                }
            }
            Op::DequantizeLinear { axis } => attrs = vec![a_int("axis", *axis as i64)],
            Op::QLinearAdd | Op::QLinearMul | Op::QLinearSigmoid => domain = crate::convert::MS,
            Op::QLinearLeakyRelu { alpha } => {
                domain = crate::convert::MS;
                attrs = vec![a_float("alpha", *alpha)];
            }
            Op::QLinearAveragePool(p) => {
                domain = crate::convert::MS;
                // The com.microsoft schema has no dilations (the importer reads them as 1).
                attrs = vec![
                    a_ints("kernel_shape", &p.kernel),
                    a_ints("strides", &p.strides),
                    a_ints("pads", &p.pads),
                    a_int("ceil_mode", p.ceil_mode as i64),
                    a_int("count_include_pad", p.count_include_pad as i64),
                ];
            }
            Op::QLinearSoftmax { axis, flatten } => {
                domain = crate::convert::MS;
                attrs = vec![
                    a_int("axis", *axis as i64),
                    a_int("opset", if *flatten { 12 } else { OPSET }),
                ];
            }
            Op::QLinearWhere => domain = crate::convert::MS,
            Op::QLinearGlobalAveragePool { channels_last } => {
                domain = crate::convert::MS;
                attrs = vec![a_int("channels_last", *channels_last as i64)];
            }
            Op::QGemm {
                alpha,
                trans_a,
                trans_b,
            } => {
                domain = crate::convert::MS;
                attrs = vec![
                    a_float("alpha", *alpha),
                    a_int("transA", *trans_a as i64),
                    a_int("transB", *trans_b as i64),
                ];
            }
            // ---- ONNX node-suite coverage (issue #16 item 4) ----
            Op::GatherElements { .. }
            | Op::GatherNd { .. }
            | Op::ScatterElements { .. }
            | Op::ScatterNd { .. }
            | Op::TensorScatter { .. }
            | Op::Cumulative { .. }
            | Op::TopK { .. }
            | Op::ArgMin { .. }
            | Op::BitCast { .. }
            | Op::Einsum { .. }
            | Op::MaxUnpool { .. }
            | Op::ReverseSequence { .. }
            | Op::Det
            | Op::Dft { .. }
            | Op::Stft { .. }
            | Op::Col2Im(_)
            | Op::GridSample { .. }
            | Op::RoiAlign(_)
            | Op::DeformConv { .. }
            | Op::Rnn(_)
            | Op::DynamicQuantizeLinear
            | Op::NonZero { .. }
            | Op::Unique { .. }
            | Op::Compress { .. }
            | Op::NonMaxSuppression { .. }
            | Op::TfIdfVectorizer(_)
            | Op::MaxPoolIndices { .. } => {
                attrs = ext::node(g, n, &mut e, &mut inputs)?.unwrap_or_default();
            }
        }
        if matches!(n.op, Op::QLinearConcat { .. }) {
            domain = crate::convert::MS;
        }
        while inputs.last().is_some_and(|s| s.is_empty()) {
            inputs.pop();
        }
        for &o in &n.outputs {
            if !outputs.contains(&o) {
                value_infos.push(value_info(&g.value(o).name, g.ty(o)));
            }
        }
        nodes.push(NodeProto {
            name: Some(n.name.clone()),
            op_type: Some(ext::op_type(&n.op, op_type).into()),
            domain: Some(domain.into()),
            input: inputs,
            output: ext::outputs(
                &n.op,
                names,
                &n.name,
                n.outputs.iter().map(|&o| g.value(o).name.clone()).collect(),
            ),
            attribute: attrs,
            metadata_props: n
                .source
                .iter()
                .map(|src| crate::proto::StringStringEntryProto {
                    key: Some(crate::import::FX_NODE_KEY.into()),
                    // The FX node's form, which the importer (and PyTorch tools) read.
                    value: Some(format!("%{src} : source operator (pimkit export)")),
                })
                .collect(),
            ..Default::default()
        });
    }
    Ok(GraphProto {
        name: Some(g.name.clone()),
        node: nodes,
        initializer: inits,
        input: g
            .inputs
            .iter()
            .filter(|i| !captured.contains(i))
            .map(|&i| value_info(&g.value(i).name, g.ty(i)))
            .collect(),
        output: g
            .outputs
            .iter()
            .map(|&o| value_info(&g.value(o).name, g.ty(o)))
            .collect(),
        value_info: value_infos,
        ..Default::default()
    })
}
