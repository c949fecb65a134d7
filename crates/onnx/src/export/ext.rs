//! Export of the ops added for the ONNX node suite (issue #16 item 4). Folded operands
//! (k, axes, shapes, lengths) are written back as initializers, as the importer reads them.

use super::{AttributeProto, Emit, a_int, a_ints, a_str, conv_attrs};
use crate::error::Result;
use crate::tensor::onnx_code;
use pimkit_ir::{Graph, GridMode, GridPadding, Node, Op, RnnDirection, Tensor, TfIdfMode};

/// The ai.onnx opset an op needs when it is newer than the exporter's default.
pub(super) fn min_opset(op: &Op) -> i64 {
    match op {
        Op::TensorScatter { .. } => 24,
        Op::Cumulative { prod: true, .. } | Op::BitCast { .. } => 26,
        _ => 0,
    }
}

/// Attributes and extra operand inputs of one node of the extension block; `None` when
/// the op is not one of them.
pub(super) fn node(
    g: &Graph,
    n: &Node,
    e: &mut Emit,
    inputs: &mut Vec<String>,
) -> Result<Option<Vec<AttributeProto>>> {
    let scalar = |e: &mut Emit, what: &str, v: i64| e.init(what, Tensor::from_i64(vec![], vec![v]));
    let attrs = match &n.op {
        Op::GatherElements { axis } => vec![a_int("axis", *axis as i64)],
        Op::GatherNd { batch_dims } => vec![a_int("batch_dims", *batch_dims as i64)],
        Op::ScatterElements { axis, reduction } => {
            vec![
                a_int("axis", *axis as i64),
                a_str("reduction", reduction.name()),
            ]
        }
        Op::ScatterNd { reduction } => vec![a_str("reduction", reduction.name())],
        Op::TensorScatter { axis, circular } => vec![
            a_int("axis", *axis as i64),
            a_str("mode", if *circular { "circular" } else { "linear" }),
        ],
        Op::Cumulative {
            axis,
            exclusive,
            reverse,
            ..
        } => {
            inputs.push(scalar(e, "axis", *axis as i64));
            vec![
                a_int("exclusive", *exclusive as i64),
                a_int("reverse", *reverse as i64),
            ]
        }
        Op::TopK {
            axis,
            k,
            largest,
            sorted,
        } => {
            inputs.push(e.ints("k", [*k as i64]));
            vec![
                a_int("axis", *axis as i64),
                a_int("largest", *largest as i64),
                a_int("sorted", *sorted as i64),
            ]
        }
        Op::ArgMin {
            axis,
            keepdims,
            select_last,
        } => vec![
            a_int("axis", *axis as i64),
            a_int("keepdims", *keepdims as i64),
            a_int("select_last_index", *select_last as i64),
        ],
        Op::BitCast { to } => vec![a_int("to", onnx_code(*to) as i64)],
        Op::Einsum { equation } => vec![a_str("equation", equation)],
        Op::MaxUnpool {
            kernel,
            strides,
            pads,
            output_shape,
        } => {
            inputs.push(e.ints("output_shape", output_shape.iter().map(|&d| d as i64)));
            vec![
                a_ints("kernel_shape", kernel),
                a_ints("strides", strides),
                a_ints("pads", pads),
            ]
        }
        Op::ReverseSequence {
            batch_axis,
            time_axis,
        } => vec![
            a_int("batch_axis", *batch_axis as i64),
            a_int("time_axis", *time_axis as i64),
        ],
        Op::Det | Op::DynamicQuantizeLinear | Op::NonZero { .. } => vec![],
        Op::Dft {
            axis,
            length,
            inverse,
            onesided,
        } => {
            inputs.push(scalar(e, "dft_length", *length as i64));
            inputs.push(scalar(e, "axis", *axis as i64));
            vec![
                a_int("inverse", *inverse as i64),
                a_int("onesided", *onesided as i64),
            ]
        }
        Op::Stft {
            frame_step,
            frame_length,
            onesided,
        } => {
            let window = inputs.get(1).cloned().unwrap_or_default();
            inputs.truncate(1);
            inputs.push(scalar(e, "frame_step", *frame_step as i64));
            inputs.push(window);
            inputs.push(scalar(e, "frame_length", *frame_length as i64));
            vec![a_int("onesided", *onesided as i64)]
        }
        Op::Col2Im(a) => {
            inputs.push(e.ints("image_shape", a.image_shape.iter().map(|&d| d as i64)));
            inputs.push(e.ints("block_shape", a.block_shape.iter().map(|&d| d as i64)));
            vec![
                a_ints("dilations", &a.dilations),
                a_ints("pads", &a.pads),
                a_ints("strides", &a.strides),
            ]
        }
        Op::GridSample {
            mode,
            padding,
            align_corners,
        } => {
            let m = match mode {
                GridMode::Linear => "linear",
                GridMode::Nearest => "nearest",
                GridMode::Cubic => "cubic",
            };
            let p = match padding {
                GridPadding::Zeros => "zeros",
                GridPadding::Border => "border",
                GridPadding::Reflection => "reflection",
            };
            vec![
                a_str("mode", m),
                a_str("padding_mode", p),
                a_int("align_corners", *align_corners as i64),
            ]
        }
        Op::RoiAlign(a) => vec![
            a_str("mode", if a.max { "max" } else { "avg" }),
            a_int("output_height", a.output_height as i64),
            a_int("output_width", a.output_width as i64),
            a_int("sampling_ratio", a.sampling_ratio as i64),
            super::a_float("spatial_scale", a.spatial_scale),
            a_str(
                "coordinate_transformation_mode",
                if a.half_pixel {
                    "half_pixel"
                } else {
                    "output_half_pixel"
                },
            ),
        ],
        Op::DeformConv { conv, offset_group } => {
            let mut v = conv_attrs(conv);
            v.push(a_int("offset_group", *offset_group as i64));
            v
        }
        Op::Rnn(a) => {
            let dir = match a.direction {
                RnnDirection::Forward => "forward",
                RnnDirection::Reverse => "reverse",
                RnnDirection::Bidirectional => "bidirectional",
            };
            vec![
                a_int("hidden_size", a.hidden_size as i64),
                a_str("direction", dir),
                a_int("layout", a.batch_first as i64),
            ]
        }
        Op::Unique { axis, sorted, .. } => {
            let mut v = vec![a_int("sorted", *sorted as i64)];
            if let Some(a) = axis {
                v.push(a_int("axis", *a as i64));
            }
            v
        }
        Op::Compress { axis, .. } => axis.iter().map(|&a| a_int("axis", a as i64)).collect(),
        Op::NonMaxSuppression {
            center_point_box, ..
        } => vec![a_int("center_point_box", *center_point_box as i64)],
        Op::TfIdfVectorizer(a) => {
            let mode = match a.mode {
                TfIdfMode::Tf => "TF",
                TfIdfMode::Idf => "IDF",
                TfIdfMode::TfIdf => "TFIDF",
            };
            let mut v = vec![
                a_str("mode", mode),
                a_int("min_gram_length", a.min_gram_length as i64),
                a_int("max_gram_length", a.max_gram_length as i64),
                a_int("max_skip_count", a.max_skip_count as i64),
                a_ints("ngram_counts", &a.ngram_counts),
                a_ints("ngram_indexes", &a.ngram_indexes),
                super::a_i64s("pool_int64s", &a.pool),
            ];
            if !a.weights.is_empty() {
                v.push(super::a_floats("weights", &a.weights));
            }
            v
        }
        Op::MaxPoolIndices { pool, column_major } => vec![
            a_ints("kernel_shape", &pool.kernel),
            a_ints("strides", &pool.strides),
            a_ints("pads", &pool.pads),
            a_ints("dilations", &pool.dilations),
            a_int("ceil_mode", pool.ceil_mode as i64),
            a_int("storage_order", *column_major as i64),
        ],
        _ => return Ok(None),
    };
    let _ = g;
    Ok(Some(attrs))
}

/// The ONNX op type of an IR op whose name is not one (MaxPoolIndices is MaxPool's second
/// output).
pub(super) fn op_type<'a>(op: &Op, name: &'a str) -> &'a str {
    match op {
        Op::MaxPoolIndices { .. } => "MaxPool",
        _ => name,
    }
}

/// The ONNX outputs of a node: MaxPoolIndices writes a MaxPool whose values output gets
/// a fresh name nothing reads (so a re-import creates only the indices).
pub(super) fn outputs(
    op: &Op,
    names: &mut std::collections::HashSet<String>,
    node: &str,
    outs: Vec<String>,
) -> Vec<String> {
    match op {
        Op::MaxPoolIndices { .. } => {
            let mut v = format!("{node}:values");
            let mut k = 1;
            while names.contains(&v) {
                v = format!("{node}:values{k}");
                k += 1;
            }
            names.insert(v.clone());
            std::iter::once(v).chain(outs).collect()
        }
        _ => outs,
    }
}
