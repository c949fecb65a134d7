//! Property tests: random small CNNs (convolutions of random kernel, stride, padding
//! and groups, pools, residual adds, a classifier) compile — the shared-memory checker
//! proving every schedule at compile time — simulate, and agree with the reference
//! interpreter, under random compile options (reuse policy, number formats, tile
//! memory, weight copies, depthwise mapping).

use pimkit_ir::{
    BinaryOp, ConvAttrs, DType, Graph, Op, PoolAttrs, PoolKind, Tensor, TensorType, UnaryOp,
    ValueId,
};
use pimkit_puma::compile::{CompileOptions, Depthwise, Fixed, Reuse};
use pimkit_puma::{Arch, SimOptions, run_graph};
use proptest::prelude::*;

mod common;
use common::det;

#[derive(Clone, Debug)]
struct Layer {
    cout: usize,
    k: usize,
    stride: usize,
    grouped: bool,
    pool: Option<PoolKind>,
    residual: bool,
}

fn layer() -> impl Strategy<Value = Layer> {
    (
        1usize..=12,
        prop::sample::select(vec![1usize, 3, 5]),
        1usize..=2,
        any::<bool>(),
        prop::option::of(prop::sample::select(vec![PoolKind::Max, PoolKind::Avg])),
        any::<bool>(),
    )
        .prop_map(|(cout, k, stride, grouped, pool, residual)| Layer {
            cout,
            k,
            stride,
            grouped,
            pool,
            residual,
        })
}

/// A CNN from the layer list; `None` when the shapes do not work out (too small).
fn cnn(cin: usize, hw: usize, layers: &[Layer], classes: usize) -> Option<Graph> {
    let mut g = Graph::new("random_cnn");
    let mut x: ValueId = g.add_input("x", TensorType::new(DType::F32, vec![1, cin, hw, hw]));
    let (mut c, mut h) = (cin, hw);
    for (i, l) in layers.iter().enumerate() {
        let groups = if l.grouped && c > 1 { c } else { 1 };
        let cout = if groups > 1 { c } else { l.cout };
        if h + 2 * (l.k / 2) < l.k {
            return None;
        }
        let w = g.add_const(
            format!("w{i}"),
            Tensor::from_f32(
                vec![cout, c / groups, l.k, l.k],
                det(
                    cout * (c / groups) * l.k * l.k,
                    i as u64 + 1,
                    (1.0 / ((c / groups) * l.k * l.k) as f32).sqrt(),
                ),
            ),
        );
        let b = g.add_const(
            format!("b{i}"),
            Tensor::from_f32(vec![cout], det(cout, 100 + i as u64, 0.1)),
        );
        let y = g
            .op(
                format!("conv{i}"),
                Op::Conv(ConvAttrs::simple(vec![l.k, l.k], l.stride, l.k / 2, groups)),
                &[x, w, b],
            )
            .ok()?;
        let y = g
            .op(format!("relu{i}"), Op::Unary(UnaryOp::Relu), &[y])
            .ok()?;
        let nh = (h + 2 * (l.k / 2) - l.k) / l.stride + 1;
        let y = if l.residual && l.stride == 1 && cout == c && nh == h {
            g.op(format!("add{i}"), Op::Binary(BinaryOp::Add), &[y, x])
                .ok()?
        } else {
            y
        };
        h = nh;
        c = cout;
        x = y;
        if let Some(kind) = l.pool
            && h >= 2
        {
            x = g
                .op(
                    format!("pool{i}"),
                    Op::Pool(PoolAttrs {
                        kind,
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
    g.outputs.push(y);
    Some(g)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_cnns_compile_simulate_and_match_the_interpreter(
        cin in 1usize..=6,
        hw in 5usize..=14,
        layers in prop::collection::vec(layer(), 1..=3),
        reuse in prop::sample::select(vec![Reuse::WhenFull, Reuse::First]),
        uniform in any::<bool>(),
        small_memory in any::<bool>(),
        copies in 1usize..=3,
        compact in any::<bool>(),
        jitter in prop::option::of((1u64..1000, 1u64..50)),
    ) {
        let Some(g) = cnn(cin, hw, &layers, 5) else { return Ok(()) };
        let mut arch = Arch::default();
        if small_memory {
            arch.tile.shared_mem_words = 2048;
        }
        let mut opts = CompileOptions {
            reuse,
            fixed: if uniform { Fixed::Uniform } else { Fixed::PerTensor },
            depthwise: if compact { Depthwise::Compact } else { Depthwise::BlockDiag },
            ..Default::default()
        };
        for n in &g.nodes {
            if matches!(n.op, Op::Conv(_)) {
                opts.replicas.insert(n.name.clone(), copies);
            }
        }
        let so = SimOptions { jitter, ..Default::default() };
        let (res, _, _) = run_graph(&g, &arch, &opts, &so, None).unwrap();
        let rel = res.relative_error.unwrap();
        // Q4.12 saturates on deep random nets; per-tensor formats must be close.
        if !uniform {
            prop_assert!(rel < 0.02, "relative error {rel} ({:?})", res.warnings);
        } else {
            prop_assert!(rel.is_finite());
        }
    }
}
