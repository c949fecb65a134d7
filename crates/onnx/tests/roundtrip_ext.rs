//! Round trip of the native ops added for the ONNX node suite (issue #16 item 4):
//! `load_bytes(export(g))` must dump exactly like `g`. PIMKIT_EXPORT_DIR also writes each
//! model there for tools/check_onnx_export.py; "_noort" graphs use ops onnxruntime 1.32
//! has no kernel for (BitCast, CumProd). NonZero, Unique and NonMaxSuppression are left
//! out: their inputs are always constants, so a re-import folds them.

use pimkit_ir::*;
use pimkit_onnx::{LoadOptions, export, load_bytes};

fn t(dtype: DType, shape: &[usize]) -> TensorType {
    TensorType::new(dtype, shape.to_vec())
}

fn data(shape: &[usize]) -> Tensor {
    let n = numel(shape);
    Tensor::from_f32(
        shape.to_vec(),
        (0..n).map(|i| ((i * 7 % 11) as f32 - 5.0) * 0.25).collect(),
    )
}

fn check(g: Graph) {
    verify(&g).unwrap_or_else(|e| panic!("test graph {} is invalid: {e}", g.name));
    let bytes = export(&g).unwrap_or_else(|e| panic!("{}: export failed: {e}", g.name));
    if let Ok(dir) = std::env::var("PIMKIT_EXPORT_DIR")
        && !g.name.ends_with("_noort")
    {
        std::fs::write(format!("{dir}/{}.onnx", g.name), &bytes).unwrap();
    }
    let back = load_bytes(&bytes, None, &LoadOptions::default())
        .unwrap_or_else(|e| panic!("{}: re-import failed: {e}", g.name));
    assert_eq!(
        dump(&back),
        dump(&g),
        "round trip of {} changed the graph",
        g.name
    );
}

/// One node over graph inputs of the given types (and optional constants after them).
fn graph(name: &str, inputs: &[TensorType], consts: Vec<Tensor>, op: Op) -> Graph {
    let mut g = Graph::new(name);
    let mut ins: Vec<Option<ValueId>> = inputs
        .iter()
        .enumerate()
        .map(|(i, ty)| Some(g.add_input(format!("in{i}"), ty.clone())))
        .collect();
    for (i, c) in consts.into_iter().enumerate() {
        ins.push(Some(g.add_const(format!("c{i}"), c)));
    }
    g.outputs = g
        .add_node("n", op, ins)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    g
}

/// In-range i64 indices (index operands are constants so that onnxruntime can run the
/// exported model on random data inputs).
fn idx(shape: &[usize], len: usize) -> Tensor {
    let n = numel(shape);
    Tensor::from_i64(
        shape.to_vec(),
        (0..n).map(|i| ((i * 5 + 1) % len) as i64).collect(),
    )
}

/// One node over graph inputs and constants, in `order` ('i' = next input, 'c' = next
/// constant).
fn mixed(name: &str, order: &str, inputs: &[TensorType], consts: Vec<Tensor>, op: Op) -> Graph {
    let mut g = Graph::new(name);
    let (mut ii, mut ci) = (inputs.iter(), consts.into_iter());
    let ins: Vec<Option<ValueId>> = order
        .chars()
        .enumerate()
        .map(|(k, c)| {
            Some(if c == 'i' {
                g.add_input(format!("in{k}"), ii.next().unwrap().clone())
            } else {
                g.add_const(format!("c{k}"), ci.next().unwrap())
            })
        })
        .collect();
    g.outputs = g
        .add_node("n", op, ins)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    g
}

#[test]
fn index_ops_round_trip() {
    let f = DType::F32;
    let i = DType::I64;
    check(mixed(
        "gather_elements",
        "ic",
        &[t(f, &[3, 4])],
        vec![idx(&[3, 2], 4)],
        Op::GatherElements { axis: 1 },
    ));
    check(mixed(
        "gather_nd",
        "ic",
        &[t(f, &[2, 3, 4])],
        vec![idx(&[2, 1, 2], 3)],
        Op::GatherNd { batch_dims: 1 },
    ));
    check(mixed(
        "scatter_elements_add",
        "ici",
        &[t(f, &[3, 3]), t(f, &[2, 3])],
        vec![idx(&[2, 3], 3)],
        Op::ScatterElements {
            axis: 0,
            reduction: ScatterReduction::Add,
        },
    ));
    check(mixed(
        "scatter_nd_mul",
        "ici",
        &[t(f, &[4, 4]), t(f, &[2, 4])],
        vec![idx(&[2, 1], 4)],
        Op::ScatterNd {
            reduction: ScatterReduction::Mul,
        },
    ));
    check(mixed(
        "tensor_scatter",
        "iic",
        &[t(f, &[2, 1, 4, 5]), t(f, &[2, 1, 2, 5])],
        vec![idx(&[2], 4)],
        Op::TensorScatter {
            axis: 2,
            circular: true,
        },
    ));
    check(mixed(
        "reverse_sequence",
        "ic",
        &[t(f, &[4, 3])],
        vec![idx(&[3], 5)],
        Op::ReverseSequence {
            batch_axis: 1,
            time_axis: 0,
        },
    ));
    check(mixed(
        "max_unpool",
        "ic",
        &[t(f, &[1, 1, 2, 2])],
        vec![Tensor::from_i64(vec![1, 1, 2, 2], vec![0, 3, 9, 14])],
        Op::MaxUnpool {
            kernel: vec![2, 2],
            strides: vec![2, 2],
            pads: vec![0; 4],
            output_shape: vec![1, 1, 5, 5],
        },
    ));
    for column_major in [false, true] {
        check(graph(
            &format!("max_pool_indices_{column_major}"),
            &[t(f, &[1, 2, 5, 6])],
            vec![],
            Op::MaxPoolIndices {
                pool: PoolAttrs {
                    kind: PoolKind::Max,
                    kernel: vec![2, 3],
                    strides: vec![2, 1],
                    pads: vec![1, 0, 0, 1],
                    dilations: vec![1, 1],
                    ceil_mode: false,
                    count_include_pad: false,
                },
                column_major,
            },
        ));
    }
    check(graph(
        "compress",
        &[t(f, &[3, 2])],
        vec![Tensor::from_bool(vec![3], vec![true, false, true])],
        Op::Compress {
            axis: Some(0),
            count: 2,
        },
    ));
    let _ = i;
}

#[test]
fn order_and_misc_ops_round_trip() {
    let f = DType::F32;
    let x = t(f, &[2, 3, 4]);
    let cases: Vec<(&str, Op)> = vec![
        (
            "cumsum",
            Op::Cumulative {
                axis: 1,
                exclusive: true,
                reverse: false,
                prod: false,
            },
        ),
        (
            "cumprod_noort",
            Op::Cumulative {
                axis: 2,
                exclusive: false,
                reverse: true,
                prod: true,
            },
        ),
        (
            "topk",
            Op::TopK {
                axis: 1,
                k: 2,
                largest: false,
                sorted: true,
            },
        ),
        (
            "argmin",
            Op::ArgMin {
                axis: 2,
                keepdims: false,
                select_last: true,
            },
        ),
        ("bitcast_noort", Op::BitCast { to: DType::I32 }),
        ("det", Op::Det),
    ];
    for (name, op) in cases {
        let ty = if name == "det" {
            t(f, &[2, 3, 3])
        } else {
            x.clone()
        };
        check(graph(name, &[ty], vec![], op));
    }
    check(graph(
        "einsum",
        &[t(f, &[2, 3, 4]), t(f, &[2, 4, 5])],
        vec![],
        Op::Einsum {
            equation: "bij,bjk->bik".into(),
        },
    ));
    check(graph(
        "tfidf_vectorizer",
        &[t(DType::I64, &[2, 6])],
        vec![],
        Op::TfIdfVectorizer(TfIdfAttrs {
            mode: TfIdfMode::TfIdf,
            min_gram_length: 1,
            max_gram_length: 2,
            max_skip_count: 1,
            ngram_counts: vec![0, 3],
            ngram_indexes: vec![0, 1, 2, 3, 4],
            pool: vec![2, 3, 5, 2, 3, 5, 7],
            weights: vec![0.5, 1.0, 1.5, 2.0, 2.5],
        }),
    ));
    check(graph(
        "dynamic_quantize_linear",
        &[t(f, &[2, 3])],
        vec![],
        Op::DynamicQuantizeLinear,
    ));
}

#[test]
fn signal_and_sampling_ops_round_trip() {
    let f = DType::F32;
    for (name, inverse, onesided, len, comps) in [
        ("dft_rfft", false, true, 8, 1),
        ("dft_inverse", true, false, 10, 2),
    ] {
        check(graph(
            name,
            &[t(f, &[1, 8, comps])],
            vec![],
            Op::Dft {
                axis: 1,
                length: len,
                inverse,
                onesided,
            },
        ));
    }
    check(graph(
        "stft",
        &[t(f, &[1, 16, 1]), t(f, &[8])],
        vec![],
        Op::Stft {
            frame_step: 4,
            frame_length: 8,
            onesided: true,
        },
    ));
    check(graph(
        "col2im",
        &[t(f, &[1, 4, 4])],
        vec![],
        Op::Col2Im(Col2ImAttrs {
            image_shape: vec![3, 3],
            block_shape: vec![2, 2],
            dilations: vec![1, 1],
            pads: vec![0; 4],
            strides: vec![1, 1],
        }),
    ));
    check(graph(
        "grid_sample",
        &[t(f, &[1, 1, 4, 4]), t(f, &[1, 3, 3, 2])],
        vec![],
        Op::GridSample {
            mode: GridMode::Cubic,
            padding: GridPadding::Border,
            align_corners: true,
        },
    ));
    check(mixed(
        "roi_align",
        "iic",
        &[t(f, &[1, 1, 8, 8]), t(f, &[2, 4])],
        vec![Tensor::from_i64(vec![2], vec![0, 0])],
        Op::RoiAlign(RoiAlignAttrs {
            max: true,
            output_height: 3,
            output_width: 2,
            sampling_ratio: 2,
            spatial_scale: 0.5,
            half_pixel: false,
        }),
    ));
    check(graph(
        "deform_conv",
        &[t(f, &[1, 2, 4, 4])],
        vec![data(&[2, 2, 3, 3]), data(&[1, 18, 2, 2])],
        Op::DeformConv {
            conv: ConvAttrs::simple(vec![3, 3], 1, 0, 1),
            offset_group: 1,
        },
    ));
    check(graph(
        "rnn",
        &[t(f, &[3, 2, 4])],
        vec![data(&[1, 5, 4]), data(&[1, 5, 5])],
        Op::Rnn(RnnAttrs {
            hidden_size: 5,
            direction: RnnDirection::Forward,
            linear_before_reset: false,
            batch_first: false,
        }),
    ));
}
