//! Compiler properties: weight placement, dataflow order, determinism, errors, I/O.

mod common;
use common::*;
use pimkit_ir::{DType, Graph, Op, Tensor, TensorType, UnaryOp};
use pimkit_puma::compile::{CompileOptions, schedule};
use pimkit_puma::fixed::{Fmt, NumMode};
use pimkit_puma::{Arch, Program, SimOptions, compile, isa, simulate};

#[test]
fn every_weight_lands_on_exactly_one_mvmu_slot() {
    let (g, ws) = mlp(&[300, 260, 20], UnaryOp::Relu, 11);
    let arch = Arch::default();
    // Every word in Q4.12 (per-tensor formats are checked in tests/fixed_point.rs).
    let opts = CompileOptions {
        fixed: pimkit_puma::compile::Fixed::Uniform,
        ..Default::default()
    };
    let (s, _) = schedule(&g, &arch, &opts).unwrap();
    s.verify().unwrap();
    let p = compile(&g, &arch, &opts).unwrap();
    let xs = arch.mvmu.xbar_size;
    let fmt = Fmt::Q4_12;
    for (m, (w, k, n)) in p.placement.matrices.iter().zip(&ws) {
        // Matrix rows are outputs (n), columns inputs (k).
        assert_eq!((m.rows, m.cols), (*n, *k));
        let mut seen = vec![0u32; n * k];
        for t in &m.tiles {
            let mw = p
                .weights
                .iter()
                .find(|x| (x.tile, x.core, x.mvmu) == (t.tile, t.core, t.mvmu))
                .unwrap();
            for r in 0..xs {
                for c in 0..xs {
                    let v = mw.data[r * xs + c];
                    if r < t.rows && c < t.cols {
                        let (row, col) = (t.row0 + r, t.col0 + c);
                        seen[row * k + col] += 1;
                        assert_eq!(
                            v as i32,
                            fmt.from_f64(w[col * n + row] as f64, NumMode::Exact)
                        );
                    } else {
                        assert_eq!(v, 0, "padding of an MVMU must be zero");
                    }
                }
            }
        }
        assert!(seen.iter().all(|&c| c == 1));
    }
    // The checker itself catches a doubly placed tile.
    let mut bad = s;
    let t = bad.matrices[0].tiles[0].clone();
    bad.matrices[0].tiles.push(t);
    assert!(bad.verify().is_err());
}

#[test]
fn every_value_is_produced_before_it_is_read() {
    for g in [
        small_cnn(2),
        lstm_net(2, 20, 40, 1),
        mlp(&[130, 140, 5], UnaryOp::Tanh, 3).0,
    ] {
        let (s, _) = schedule(&g, &Arch::default(), &CompileOptions::default()).unwrap();
        s.verify().unwrap();
        // Moving a consumer to the front breaks the order and is detected.
        let mut bad = s;
        let last = bad.order.pop().unwrap();
        bad.order.insert(0, last);
        assert!(bad.verify().is_err(), "{}", g.name);
    }
}

#[test]
fn output_is_deterministic_and_coalesced() {
    let (g, _) = mlp(&[256, 256, 10], UnaryOp::Sigmoid, 5);
    let arch = Arch::default();
    let a = compile(&g, &arch, &CompileOptions::default()).unwrap();
    let b = compile(&g, &arch, &CompileOptions::default()).unwrap();
    for (ta, tb) in a.tiles.iter().zip(&b.tiles) {
        assert_eq!(isa::print(&ta.tile_code), isa::print(&tb.tile_code));
        for (ca, cb) in ta.cores.iter().zip(&tb.cores) {
            assert_eq!(isa::print(ca), isa::print(cb));
        }
    }
    assert!(a.placement.coalesced_mvms > 0);
    let has_multi = a
        .tiles
        .iter()
        .flat_map(|t| t.cores.iter().flatten())
        .any(|i| matches!(i, isa::CoreInstr::Mvm { mask: 3, .. }));
    assert!(
        has_multi,
        "tiles of one row block on one core run as one mvm"
    );
    let nc = compile(
        &g,
        &arch,
        &CompileOptions {
            coalesce: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(nc.placement.coalesced_mvms, 0);
    let count = |p: &Program| {
        p.tiles
            .iter()
            .flat_map(|t| t.cores.iter().flatten())
            .filter(|i| matches!(i, isa::CoreInstr::Mvm { .. }))
            .count()
    };
    assert!(count(&nc) > count(&a));
}

#[test]
fn unsupported_ops_name_the_node() {
    let mut g = Graph::new("bad");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![4]));
    let y = g.op("my_sin", Op::Unary(UnaryOp::Sin), &[x]).unwrap();
    g.outputs.push(y);
    let e = compile(&g, &Arch::default(), &CompileOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("my_sin") && e.contains("Sin"), "{e}");
    let mut g = Graph::new("bad2");
    let a = g.add_input("a", TensorType::new(DType::F32, vec![1, 4]));
    let y = g
        .op(
            "my_prod",
            Op::Reduce {
                kind: pimkit_ir::ReduceKind::Prod,
                axes: vec![1],
                keepdims: true,
            },
            &[a],
        )
        .unwrap();
    g.outputs.push(y);
    let e = compile(&g, &Arch::default(), &CompileOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("my_prod"), "{e}");
}

#[test]
fn program_directory_round_trip_simulates_identically() {
    let g = small_cnn(9);
    let p = compile(&g, &Arch::default(), &CompileOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    p.save(dir.path()).unwrap();
    assert!(dir.path().join("tile2/core0.puma").exists());
    assert!(dir.path().join("placement.txt").exists());
    let q = Program::load(dir.path()).unwrap();
    let inputs = pimkit_interp::random_inputs(&g, 1);
    let a = simulate(&p, &inputs, &SimOptions::default()).unwrap();
    let b = simulate(&q, &inputs, &SimOptions::default()).unwrap();
    assert_eq!(a.outputs, b.outputs);
    assert_eq!(a.stats.cycles, b.stats.cycles);
}

#[test]
fn data_movement_ops_are_loads_and_copies() {
    // Transpose + Concat + Slice + elementwise with broadcast constant.
    let mut g = Graph::new("move");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![3, 5]));
    let t = g.op("t", Op::Transpose { perm: vec![1, 0] }, &[x]).unwrap();
    let c = g.op("cat", Op::Concat { axis: 1 }, &[t, t]).unwrap();
    let k = g.add_const(
        "k",
        Tensor::from_f32(vec![6], vec![0.5, -1.0, 2.0, 0.25, 1.0, 3.0]),
    );
    let y = g
        .op("mul", Op::Binary(pimkit_ir::BinaryOp::Mul), &[c, k])
        .unwrap();
    let z = g.op("sig", Op::Unary(UnaryOp::Sigmoid), &[y]).unwrap();
    g.outputs.push(z);
    let (res, _, _) = pimkit_puma::run_graph(
        &g,
        &Arch::default(),
        &CompileOptions::default(),
        &SimOptions::default(),
        None,
    )
    .unwrap();
    assert!(
        res.max_abs_error.unwrap() < 2.0 * U,
        "{:?}",
        res.max_abs_error
    );
}

#[test]
fn spills_when_registers_run_out() {
    // A tiny data memory forces spilling; results stay exact.
    let mut arch = Arch::default();
    arch.core.data_mem_words = 256;
    let mut g = Graph::new("pressure");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 60]));
    let a = g.op("a", Op::Unary(UnaryOp::Sigmoid), &[x]).unwrap();
    let b = g.op("b", Op::Unary(UnaryOp::Tanh), &[x]).unwrap();
    let c = g.op("c", Op::Unary(UnaryOp::Relu), &[x]).unwrap();
    let ab = g
        .op("ab", Op::Binary(pimkit_ir::BinaryOp::Mul), &[a, b])
        .unwrap();
    let abc = g
        .op("abc", Op::Binary(pimkit_ir::BinaryOp::Add), &[ab, c])
        .unwrap();
    let y = g
        .op("y", Op::Binary(pimkit_ir::BinaryOp::Sub), &[abc, a])
        .unwrap();
    g.outputs.push(y);
    let p = compile(&g, &arch, &CompileOptions::default()).unwrap();
    assert!(
        p.placement.spill_stores > 0,
        "this graph needs more than 232 registers"
    );
    let inputs = pimkit_interp::random_inputs(&g, 0);
    let r = pimkit_interp::run(&g, &inputs).unwrap();
    let o = simulate(&p, &inputs, &SimOptions::default()).unwrap();
    assert!(pimkit_puma::compare(&o.outputs, &r) < 4.0 * U);
}

#[test]
fn convolution_loops_are_rolled_and_compute_the_same() {
    let g = small_cnn(4);
    let arch = Arch::default();
    let rolled = compile(&g, &arch, &CompileOptions::default()).unwrap();
    let flat = compile(
        &g,
        &arch,
        &CompileOptions {
            loops: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(rolled.placement.loops_rolled > 0);
    assert!(rolled.num_core_instructions() < flat.num_core_instructions());
    let has_branch = rolled
        .tiles
        .iter()
        .flat_map(|t| t.cores.iter().flatten())
        .any(|i| matches!(i, isa::CoreInstr::Beq { .. }));
    assert!(has_branch);
    let inputs = pimkit_interp::random_inputs(&g, 3);
    let a = simulate(&rolled, &inputs, &SimOptions::default()).unwrap();
    let b = simulate(&flat, &inputs, &SimOptions::default()).unwrap();
    assert_eq!(a.outputs, b.outputs);
    assert!(a.stats.instructions["beq"] > 0);
}
