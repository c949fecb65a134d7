//! Per-layer mode never fails on a CNN layer (issue #17 item 7): random layer shapes
//! (convolutions of random channels, kernel, stride; channel-shuffle, concat and pool
//! tails; a long softmax at the end) on tiles whose shared memory and data memory are
//! too small for the layers, compiled with the shared-memory checker on (every program
//! proven not to overflow nor race), simulated, and compared with the reference
//! interpreter layer by layer. The cases that failed on real models are fixed tests.

use pimkit_ir::{
    ConvAttrs, DType, Graph, Op, PoolAttrs, PoolKind, Tensor, TensorType, UnaryOp, ValueId,
};
use pimkit_puma::{Arch, CompileOptions, SimOptions, run_per_layer};
use proptest::prelude::*;

mod common;
use common::det;

#[derive(Clone, Copy, Debug)]
enum Tail {
    None,
    Pool,
    /// ShuffleNet's channel shuffle: Reshape to 5-D, Transpose, Reshape back.
    Shuffle,
    /// The feature map concatenated with itself along the channels.
    Concat,
}

#[derive(Clone, Debug)]
struct Layer {
    cout: usize,
    k: usize,
    stride: usize,
    tail: Tail,
}

fn layer() -> impl Strategy<Value = Layer> {
    (
        1usize..=8,
        prop::sample::select(vec![1usize, 3, 5, 7]),
        1usize..=2,
        prop::sample::select(vec![Tail::None, Tail::Pool, Tail::Shuffle, Tail::Concat]),
    )
        .prop_map(|(half, k, stride, tail)| Layer {
            cout: 2 * half,
            k,
            stride,
            tail,
        })
}

/// conv → relu → tail per layer, then global pool, classifier and softmax over
/// `classes`; `None` when the map gets too small.
fn cnn(cin: usize, hw: usize, layers: &[Layer], classes: usize) -> Option<Graph> {
    let mut g = Graph::new("per_layer_props");
    let mut x: ValueId = g.add_input("x", TensorType::new(DType::F32, vec![1, cin, hw, hw]));
    let (mut c, mut h) = (cin, hw);
    for (i, l) in layers.iter().enumerate() {
        let pad = l.k / 2;
        if h + 2 * pad < l.k {
            return None;
        }
        let w = g.add_const(
            format!("w{i}"),
            Tensor::from_f32(
                vec![l.cout, c, l.k, l.k],
                det(
                    l.cout * c * l.k * l.k,
                    i as u64 + 1,
                    (1.0 / (c * l.k * l.k) as f32).sqrt(),
                ),
            ),
        );
        let y = g
            .op(
                format!("conv{i}"),
                Op::Conv(ConvAttrs::simple(vec![l.k, l.k], l.stride, pad, 1)),
                &[x, w],
            )
            .ok()?;
        x = g
            .op(format!("relu{i}"), Op::Unary(UnaryOp::Relu), &[y])
            .ok()?;
        h = (h + 2 * pad - l.k) / l.stride + 1;
        c = l.cout;
        match l.tail {
            Tail::None => {}
            Tail::Pool if h >= 2 => {
                x = g
                    .op(
                        format!("pool{i}"),
                        Op::Pool(PoolAttrs {
                            kind: PoolKind::Max,
                            kernel: vec![2, 2],
                            strides: vec![2, 2],
                            pads: vec![0; 4],
                            dilations: vec![1, 1],
                            ceil_mode: false,
                            count_include_pad: false,
                        }),
                        &[x],
                    )
                    .ok()?;
                h /= 2;
            }
            Tail::Pool => {}
            Tail::Shuffle => {
                let r = g
                    .op(
                        format!("shuffle{i}.view"),
                        Op::Reshape {
                            shape: vec![1, 2, c / 2, h, h],
                        },
                        &[x],
                    )
                    .ok()?;
                let t = g
                    .op(
                        format!("shuffle{i}.transpose"),
                        Op::Transpose {
                            perm: vec![0, 2, 1, 3, 4],
                        },
                        &[r],
                    )
                    .ok()?;
                x = g
                    .op(
                        format!("shuffle{i}.flat"),
                        Op::Reshape {
                            shape: vec![1, c, h, h],
                        },
                        &[t],
                    )
                    .ok()?;
            }
            Tail::Concat => {
                x = g
                    .op(format!("concat{i}"), Op::Concat { axis: 1 }, &[x, x])
                    .ok()?;
                c *= 2;
            }
        }
    }
    let x = g.op("gap", Op::GlobalPool(PoolKind::Avg), &[x]).ok()?;
    let x = g
        .op("flatten", Op::Reshape { shape: vec![1, c] }, &[x])
        .ok()?;
    let w = g.add_const(
        "fc.w",
        Tensor::from_f32(
            vec![c, classes],
            det(c * classes, 999, (1.0 / c as f32).sqrt()),
        ),
    );
    let y = g
        .op(
            "fc",
            Op::Gemm {
                alpha: 1.0,
                beta: 1.0,
                trans_a: false,
                trans_b: false,
            },
            &[x, w],
        )
        .ok()?;
    let y = g.op("softmax", Op::Softmax { axis: 1 }, &[y]).ok()?;
    g.outputs.push(y);
    Some(g)
}

/// Per-layer run on `arch`: every layer simulated, each within `tol` of the
/// interpreter on the same inputs.
fn check(g: &Graph, arch: &Arch, tol: f64) -> Result<(), TestCaseError> {
    let r = run_per_layer(
        g,
        arch,
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .map_err(|e| TestCaseError::fail(format!("per-layer run failed: {e}")))?;
    if std::env::var_os("PER_LAYER_PROPS_DEBUG").is_some() {
        for l in &r.layers {
            eprintln!(
                "{} {:?} scale {} copies {} err {:?} {:?}",
                l.name, l.simulated_shape, l.scale, l.memory_copies, l.max_abs_error, l.notes
            );
        }
    }
    let simulated: usize = r.layers.iter().map(|l| l.nodes.len()).sum();
    prop_assert_eq!(simulated, g.nodes.len(), "every node simulated on PUMA");
    for l in &r.layers {
        let e = l.max_abs_error.unwrap_or(f64::NAN);
        prop_assert!(e <= tol, "layer {}: error {e} ({:?})", l.name, l.notes);
        prop_assert!(l.cycles > 0 && l.energy_nj > 0.0, "layer {}", l.name);
    }
    Ok(())
}

/// Tile memories too small for whole layers; a data memory too small for a
/// 300-element softmax in one instruction.
fn small_arch(shm: usize, dmem: usize) -> Arch {
    let mut a = Arch::default();
    a.tile.shared_mem_words = shm;
    a.core.data_mem_words = dmem;
    a
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn per_layer_never_fails_and_matches_the_interpreter(
        cin in 1usize..=8,
        hw in 6usize..=32,
        layers in prop::collection::vec(layer(), 1..=3),
        classes in prop::sample::select(vec![5usize, 300]),
        shm in prop::sample::select(vec![512usize, 1024, 2048, 32768]),
        dmem in prop::sample::select(vec![512usize, 2048]),
    ) {
        let Some(g) = cnn(cin, hw, &layers, classes) else { return Ok(()) };
        check(&g, &small_arch(shm, dmem), 0.05)?;
    }
}

/// ShuffleNetV2's failing layer shape (stage 2: 116 channels at 28x28, the shuffle's
/// 5-D Reshape before a convolution) at reduced size on a proportionally small tile:
/// the shuffle stays with the layer before it, the convolution's input is windowed.
#[test]
fn shuffle_before_a_convolution_runs_per_layer() {
    let layers = [
        Layer {
            cout: 16,
            k: 3,
            stride: 1,
            tail: Tail::Shuffle,
        },
        Layer {
            cout: 16,
            k: 3,
            stride: 2,
            tail: Tail::Shuffle,
        },
    ];
    let g = cnn(8, 16, &layers, 10).unwrap();
    check(&g, &small_arch(1024, 2048), 0.05).unwrap();
}

/// A 1000-class softmax (Inception v2's classifier) on the default 2048-word data
/// memory: chunked log-sum-exp instead of one 1000-word operand.
#[test]
fn thousand_class_softmax_fits_the_data_memory() {
    let layers = [Layer {
        cout: 8,
        k: 1,
        stride: 1,
        tail: Tail::None,
    }];
    let g = cnn(4, 4, &layers, 1000).unwrap();
    check(&g, &Arch::default(), 0.05).unwrap();
    let (res, _, _) = pimkit_puma::run_graph(
        &g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    assert!(res.relative_error.unwrap() < 0.02, "{:?}", res.warnings);
}

/// A layer whose values do not fit its words (Q4.12 inputs of magnitude 100) is
/// flagged: its saturations are counted and a warning names it.
#[test]
fn saturated_layers_are_warned_about() {
    let layers = [Layer {
        cout: 4,
        k: 3,
        stride: 1,
        tail: Tail::None,
    }];
    let g = cnn(2, 6, &layers, 5).unwrap();
    let x = Tensor::from_f32(vec![1, 2, 6, 6], det(72, 7, 100.0));
    let inputs = std::collections::HashMap::from([("x".to_string(), x)]);
    let opts = CompileOptions {
        fixed: pimkit_puma::compile::Fixed::Uniform,
        ..Default::default()
    };
    let r = run_per_layer(
        &g,
        &Arch::default(),
        &opts,
        &SimOptions::default(),
        Some(inputs),
    )
    .unwrap();
    let l0 = &r.layers[0];
    assert!(l0.saturations > 0, "{l0:?}");
    assert!(l0.relative_error.unwrap() > 0.02, "{l0:?}");
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("conv0") && w.contains("16-bit word")),
        "{:?}",
        r.warnings
    );
    assert!(
        r.warnings
            .iter()
            .any(|w| w.contains("conv0") && w.contains("tolerance")),
        "{:?}",
        r.warnings
    );
}
