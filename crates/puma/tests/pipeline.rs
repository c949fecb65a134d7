//! Row-streaming layer pipelines: convolutions whose feature maps cannot fit a tile
//! run with line buffers, rows of each layer computed as soon as the next layer needs
//! them, and agree with the reference interpreter.

use pimkit_ir::{ConvAttrs, DType, Graph, Op, PoolAttrs, PoolKind, Tensor, TensorType, UnaryOp};
use pimkit_puma::compile::{CompileOptions, schedule};
use pimkit_puma::{Arch, SimOptions, run_graph};

fn weights(n: usize, seed: u64, scale: f32) -> Vec<f32> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * 2.0 * scale
        })
        .collect()
}

fn conv(
    g: &mut Graph,
    name: &str,
    x: pimkit_ir::ValueId,
    cin: usize,
    cout: usize,
    k: usize,
    stride: usize,
    seed: u64,
) -> pimkit_ir::ValueId {
    let w = g.add_const(
        format!("{name}.w"),
        Tensor::from_f32(
            vec![cout, cin, k, k],
            weights(
                cout * cin * k * k,
                seed,
                (1.0 / (cin * k * k) as f32).sqrt(),
            ),
        ),
    );
    let b = g.add_const(
        format!("{name}.b"),
        Tensor::from_f32(vec![cout], weights(cout, seed + 1, 0.1)),
    );
    let c = g
        .op(
            name,
            Op::Conv(ConvAttrs::simple(vec![k, k], stride, k / 2, 1)),
            &[x, w, b],
        )
        .unwrap();
    g.op(format!("{name}.relu"), Op::Unary(UnaryOp::Relu), &[c])
        .unwrap()
}

/// conv3x3 (8→16) → conv3x3 stride 2 → maxpool 2 → conv1x1 + residual → GAP.
fn chain(hw: usize) -> Graph {
    let mut g = Graph::new("chain");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 8, hw, hw]));
    let a = conv(&mut g, "c1", x, 8, 16, 3, 1, 1);
    let b = conv(&mut g, "c2", a, 16, 16, 3, 2, 2);
    let p = g
        .op(
            "pool",
            Op::Pool(PoolAttrs {
                kind: PoolKind::Max,
                kernel: vec![2, 2],
                strides: vec![2, 2],
                pads: vec![0; 4],
                dilations: vec![1, 1],
                ceil_mode: false,
                count_include_pad: false,
            }),
            &[b],
        )
        .unwrap();
    let c = conv(&mut g, "c3", p, 16, 16, 1, 1, 3);
    let r = g
        .op("res", Op::Binary(pimkit_ir::BinaryOp::Add), &[c, p])
        .unwrap();
    let y = g.op("gap", Op::GlobalPool(PoolKind::Avg), &[r]).unwrap();
    g.outputs.push(y);
    g
}

#[test]
fn feature_maps_larger_than_a_tile_stream_through_line_buffers() {
    let g = chain(40);
    let mut arch = Arch::default();
    // c1's output, 16 x 40 x 40 = 25,600 words, is six times a tile's memory.
    arch.tile.shared_mem_words = 4096;
    let (res, _, p) = run_graph(
        &g,
        &arch,
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    let rel = res.relative_error.unwrap();
    assert!(rel < 0.01, "relative error {rel}");
    // Compute tiles (the input tile 0 holds the host's input whole).
    assert!(p.tiles[2..].iter().all(|t| t.shmem_words_used <= 4096));
}

#[test]
fn a_layer_starts_before_the_previous_one_finishes() {
    let g = chain(24);
    let (s, _) = schedule(&g, &Arch::default(), &CompileOptions::default()).unwrap();
    let pos = |node: &str, first: bool| {
        let ni = g.nodes.iter().position(|n| n.name == node).unwrap() as u32;
        let it = s
            .order
            .iter()
            .enumerate()
            .filter(|(_, o)| s.ops[**o as usize].node == ni);
        if first {
            it.map(|(i, _)| i).next().unwrap()
        } else {
            it.map(|(i, _)| i).next_back().unwrap()
        }
    };
    // c2's first row is scheduled before c1's last row, c3's before c2's last.
    assert!(pos("c2", true) < pos("c1", false));
    assert!(pos("c3", true) < pos("c2", false));
}

#[test]
fn streamed_convolutions_match_the_interpreter_at_every_stride_and_pad() {
    for (k, stride, hw) in [(3, 1, 9), (5, 2, 11), (1, 1, 7), (3, 2, 8)] {
        let mut g = Graph::new(format!("conv{k}s{stride}"));
        let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 3, hw, hw]));
        let a = conv(&mut g, "a", x, 3, 8, k, stride, 7);
        let b = conv(&mut g, "b", a, 8, 4, 3, 1, 8);
        g.outputs.push(b);
        let mut arch = Arch::default();
        arch.tile.shared_mem_words = 1024;
        let (res, _, _) = run_graph(
            &g,
            &arch,
            &CompileOptions::default(),
            &SimOptions::default(),
            None,
        )
        .unwrap();
        let rel = res.relative_error.unwrap();
        assert!(rel < 0.01, "{}: relative error {rel}", g.name);
    }
}
