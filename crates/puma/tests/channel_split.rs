//! Per-layer mode splits a weighted node by channels when it fits no placement and no
//! window whole (issue #17 (a)): random convolutions (channels, kernel, stride, groups,
//! bias) and dense layers on tiles too small for one output pixel's outputs; every
//! part is compiled with the shared-memory checker on, simulated and compared with
//! the interpreter, and the layer's note names the split.

use pimkit_ir::{ConvAttrs, DType, Graph, Op, Tensor, TensorType, UnaryOp};
use pimkit_puma::{Arch, CompileOptions, SimOptions, run_per_layer};
use proptest::prelude::*;

mod common;
use common::det;

/// One convolution (+ bias) and a ReLU.
fn conv(cin: usize, cout: usize, k: usize, stride: usize, group: usize, hw: usize) -> Graph {
    let mut g = Graph::new("channel_split");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, cin, hw, hw]));
    let fan = cin / group * k * k;
    let w = g.add_const(
        "w",
        Tensor::from_f32(
            vec![cout, cin / group, k, k],
            det(cout * fan, 3, (1.0 / fan as f32).sqrt()),
        ),
    );
    let b = g.add_const("b", Tensor::from_f32(vec![cout], det(cout, 5, 0.1)));
    let y = g
        .op(
            "conv",
            Op::Conv(ConvAttrs::simple(vec![k, k], stride, k / 2, group)),
            &[x, w, b],
        )
        .unwrap();
    let y = g.op("relu", Op::Unary(UnaryOp::Relu), &[y]).unwrap();
    g.outputs.push(y);
    g
}

/// One Gemm of `k` inputs and `n` outputs (+ bias), weights transposed or not.
fn dense(k: usize, n: usize, trans_b: bool) -> Graph {
    let mut g = Graph::new("dense_split");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, k]));
    let shape = if trans_b { vec![n, k] } else { vec![k, n] };
    let w = g.add_const(
        "w",
        Tensor::from_f32(shape, det(k * n, 7, (1.0 / k as f32).sqrt())),
    );
    let b = g.add_const("b", Tensor::from_f32(vec![n], det(n, 9, 0.1)));
    let y = g
        .op(
            "fc",
            Op::Gemm {
                alpha: 1.0,
                beta: 1.0,
                trans_a: false,
                trans_b,
            },
            &[x, w, b],
        )
        .unwrap();
    g.outputs.push(y);
    g
}

fn small_arch(shm: usize, dmem: usize) -> Arch {
    let mut a = Arch::default();
    a.tile.shared_mem_words = shm;
    a.core.data_mem_words = dmem;
    a
}

/// Per-layer run: every node simulated, within `tol` of the interpreter; returns
/// whether some layer was split by channels.
fn check(g: &Graph, arch: &Arch, tol: f64) -> Result<bool, TestCaseError> {
    let r = run_per_layer(
        g,
        arch,
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .map_err(|e| TestCaseError::fail(format!("per-layer run failed: {e}")))?;
    let simulated: usize = r.layers.iter().map(|l| l.nodes.len()).sum();
    prop_assert_eq!(simulated, g.nodes.len(), "every node simulated on PUMA");
    let mut split = false;
    for l in &r.layers {
        let e = l.max_abs_error.unwrap_or(f64::NAN);
        prop_assert!(e <= tol, "layer {}: error {e} ({:?})", l.name, l.notes);
        prop_assert!(l.cycles > 0 && l.energy_nj > 0.0, "layer {}", l.name);
        prop_assert_eq!(l.saturations, 0);
        split |= l.notes.iter().any(|n| n.contains(" split "));
    }
    Ok(split)
}

/// A convolution of 512 output channels needs 568 words at one output pixel, more
/// than a 512-word tile: it runs split by output channels (down to 128 per part), and
/// its ReLU by channels.
#[test]
fn a_convolution_too_wide_for_a_tile_is_split_by_output_channels() {
    let g = conv(64, 512, 3, 1, 1, 5);
    let arch = small_arch(512, 2048);
    assert!(check(&g, &arch, 0.05).unwrap());
    let r = run_per_layer(
        &g,
        &arch,
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    let notes = r.layers[0].notes.join("\n");
    assert!(
        notes.contains("`conv` split by output channels (256 + 256 of 512)"),
        "{notes}"
    );
    assert!(notes.contains("`relu` split by channels"), "{notes}");
    assert_eq!(r.layers[0].nodes, vec!["conv", "relu"]);
    // Before the split this layer failed: the whole node at a 1x1 window.
    assert!(notes.contains("needs at least 568 words"), "{notes}");
}

/// A dense layer of 2,048 outputs on 256-word tiles: split by output features, with
/// its weights transposed or not.
#[test]
fn a_dense_layer_too_wide_for_a_tile_is_split() {
    for trans_b in [false, true] {
        let g = dense(64, 2048, trans_b);
        assert!(check(&g, &small_arch(256, 512), 0.05).unwrap());
    }
}

/// A grouped convolution too wide for its tile splits between its groups.
#[test]
fn a_grouped_convolution_is_split_between_groups() {
    let g = conv(64, 512, 3, 1, 4, 5);
    let arch = small_arch(512, 2048);
    assert!(check(&g, &arch, 0.05).unwrap());
    let r = run_per_layer(
        &g,
        &arch,
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    let notes = r.layers[0].notes.join("\n");
    assert!(
        notes.contains("`conv` split between its 4 groups"),
        "{notes}"
    );
}

/// Inputs stream by crossbar columns: 4,096 input channels and one output fit
/// 512-word tiles at one output pixel, so no input-channel split is needed.
#[test]
fn wide_inputs_need_no_split() {
    let g = conv(4096, 1, 3, 1, 1, 3);
    assert!(!check(&g, &small_arch(512, 512), 0.05).unwrap());
}

/// The notes of the per-layer run of `g` (which must succeed).
fn notes(g: &Graph, arch: &Arch) -> String {
    run_per_layer(
        g,
        arch,
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap()
    .layers
    .iter()
    .flat_map(|l| l.notes.clone())
    .collect::<Vec<_>>()
    .join("\n")
}

/// A dense layer with one output whose 2,048 inputs do not fit 128-word tiles (it
/// failed before: one output feature cannot be split by outputs) runs as partial sums
/// over halves of its inputs, recursively, each added by a part of its own.
#[test]
fn a_one_output_dense_layer_is_split_by_input_channels() {
    for trans_b in [false, true] {
        let g = dense(2048, 1, trans_b);
        let arch = small_arch(128, 256);
        assert!(check(&g, &arch, 0.05).unwrap());
        let n = notes(&g, &arch);
        assert!(
            n.contains("`fc` split by input channels (1024 + 1024 of 2048) into two partial sums (the bias in the first) added by a third part `fc/sum`"),
            "{n}"
        );
        assert!(
            n.contains("`fc/ic0-1024` split by input channels (512 + 512 of 1024)"),
            "{n}"
        );
    }
}

/// A MatMul of a 3-D input ([1, 3, 2048] x [2048, 1], no bias) on 128-word tiles:
/// split along K like a Gemm, every row of the output a partial sum.
#[test]
fn a_one_output_matmul_is_split_by_input_channels() {
    let mut g = Graph::new("matmul_split");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 3, 2048]));
    let w = g.add_const(
        "w",
        Tensor::from_f32(vec![2048, 1], det(2048, 11, (1.0 / 2048f32).sqrt())),
    );
    let y = g.op("mm", Op::MatMul, &[x, w]).unwrap();
    g.outputs.push(y);
    let arch = small_arch(128, 256);
    assert!(check(&g, &arch, 0.05).unwrap());
    let n = notes(&g, &arch);
    assert!(
        n.contains("`mm` split by input channels (1024 + 1024 of 2048)"),
        "{n}"
    );
}

/// A 1x1 convolution with one output channel and 1,024 input channels on 96-word tiles
/// (more than 96 words needed at one output pixel) is split by input channels.
#[test]
fn a_one_output_convolution_is_split_by_input_channels() {
    let g = conv(1024, 1, 1, 1, 1, 3);
    let arch = small_arch(96, 512);
    assert!(check(&g, &arch, 0.05).unwrap());
    let n = notes(&g, &arch);
    assert!(
        n.contains("`conv` split by input channels (512 + 512 of 1024)"),
        "{n}"
    );
}

/// A tile smaller than a node's fixed working set (a padded 3x3 convolution's zero
/// row alone takes 128 words) fits at no split: the node's own error, naming the
/// words needed and what to raise, not a part's.
#[test]
fn a_tile_smaller_than_the_fixed_working_set_keeps_the_nodes_error() {
    let g = conv(256, 1, 3, 1, 1, 3);
    let e = run_per_layer(
        &g,
        &small_arch(128, 256),
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("layer `conv`: tile 2 needs at least"), "{e}");
    assert!(e.contains("raise tile.shared_mem_words"), "{e}");
    assert!(
        e.contains("split by input channels down to one, it does not fit either"),
        "{e}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Random convolutions on tiles of 384–1,024 words, up to 640 output channels:
    /// those whose outputs do not fit at one pixel are split; every one runs within
    /// 0.05 of the interpreter.
    #[test]
    fn per_layer_splits_any_convolution_that_does_not_fit(
        cin_g in 1usize..=24,
        cout_g in 1usize..=160,
        group in prop::sample::select(vec![1usize, 1, 2, 4]),
        k in prop::sample::select(vec![1usize, 3, 5]),
        stride in 1usize..=2,
        hw in 3usize..=5,
        shm in prop::sample::select(vec![384usize, 512, 1024]),
    ) {
        let g = conv(cin_g * group, cout_g * group, k, stride, group, hw);
        check(&g, &small_arch(shm, 2048), 0.05)?;
    }

    /// Random convolutions with one output channel and 64–1,024 input channels on
    /// tiles of 64–256 words (1x1 kernels, whose working set grows with the inputs) and
    /// 192–256 words (3x3, 5x5): every one runs, split by input channels where its
    /// inputs do not fit, within 0.05 of the interpreter.
    #[test]
    fn per_layer_runs_any_one_output_convolution(
        cin in 64usize..=1024,
        k in prop::sample::select(vec![1usize, 1, 3, 5]),
        stride in 1usize..=2,
        hw in 2usize..=4,
        small in prop::sample::select(vec![64usize, 96, 128]),
        large in prop::sample::select(vec![192usize, 256]),
    ) {
        let shm = if k == 1 { small } else { large };
        let g = conv(cin, 1, k, stride, 1, hw);
        check(&g, &small_arch(shm, 512), 0.05)?;
    }

    /// Random dense layers with one output and 256–4,096 inputs on 128–256-word tiles
    /// run (split by inputs where needed) within 0.05 of the interpreter.
    #[test]
    fn per_layer_runs_any_one_output_dense_layer(
        k in 256usize..=4096,
        trans_b in any::<bool>(),
        shm in prop::sample::select(vec![128usize, 192, 256]),
    ) {
        check(&dense(k, 1, trans_b), &small_arch(shm, 512), 0.05)?;
    }
}
