//! Bad input gets a clear error, never a hang or a silent wrong answer: programs that
//! do not halt, invalid architecture fields, inputs of the wrong type or shape, output
//! paths that cannot be written.

mod common;

use common::*;
use pimkit_ir::{Tensor, UnaryOp};
use pimkit_puma::isa::CoreInstr;
use pimkit_puma::{
    Arch, CompileOptions, Program, RunError, SimError, SimOptions, compile, run_graph, simulate,
    tool,
};
use std::collections::HashMap;

fn mlp16() -> pimkit_ir::Graph {
    mlp(&[16, 16, 16], UnaryOp::Relu, 7).0
}

fn x_input(t: Tensor) -> HashMap<String, Tensor> {
    HashMap::from([("x".to_string(), t)])
}

fn ok_input() -> Tensor {
    Tensor::from_f32(vec![1, 16], vec![0.25; 16])
}

/// The first (tile, core) of `p` with real code.
fn active_core(p: &Program) -> (usize, usize) {
    for (t, tp) in p.tiles.iter().enumerate() {
        for (c, code) in tp.cores.iter().enumerate() {
            if code.len() > 1 {
                return (t, c);
            }
        }
    }
    panic!("no active core");
}

fn opts(max_cycles: u64) -> SimOptions {
    SimOptions {
        max_cycles,
        ..Default::default()
    }
}

#[test]
fn infinite_loop_stops_at_the_cycle_limit() {
    let g = mlp16();
    let p0 = compile(&g, &Arch::default(), &CompileOptions::default()).unwrap();
    let (t, c) = active_core(&p0);
    // The unmodified program halts well within the small limit used here.
    simulate(&p0, &x_input(ok_input()), &opts(200_000)).unwrap();
    let loops = [
        CoreInstr::Jmp { target: 0 },
        // r = r: always taken.
        CoreInstr::Beq {
            r1: 600,
            r2: 600,
            target: 0,
        },
    ];
    for ins in loops {
        let mut p = p0.clone();
        p.tiles[t].cores[c].insert(0, ins);
        let t0 = std::time::Instant::now();
        let e = simulate(&p, &x_input(ok_input()), &opts(200_000))
            .err()
            .expect("an infinite loop must not simulate successfully");
        assert!(
            t0.elapsed().as_secs() < 20,
            "stopping took {:?}",
            t0.elapsed()
        );
        assert!(matches!(e, SimError::Timeout { .. }), "{e}");
        let m = e.to_string();
        for want in [
            "did not halt within 200000 cycles",
            "infinite loop",
            &format!("tile {t} core {c} pc 0"),
            "--max-cycles",
        ] {
            assert!(m.contains(want), "`{want}` missing in: {m}");
        }
    }
}

#[test]
fn default_cycle_limit_stops_a_tight_loop() {
    // The documented default, reached by a two-instruction loop in bounded time.
    assert_eq!(
        SimOptions::default().max_cycles,
        pimkit_puma::sim::DEFAULT_MAX_CYCLES
    );
    let mut p = compile(&mlp16(), &Arch::default(), &CompileOptions::default()).unwrap();
    let (t, c) = active_core(&p);
    p.tiles[t].cores[c].insert(0, CoreInstr::Jmp { target: 0 });
    // 10^7 cycles here (the default 10^9 takes seconds in release, longer in debug).
    let e = simulate(&p, &x_input(ok_input()), &opts(10_000_000))
        .err()
        .unwrap();
    assert!(
        matches!(
            e,
            SimError::Timeout {
                limit: 10_000_000,
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn run_graph_uses_the_cycle_limit() {
    let g = mlp16();
    let e = run_graph(
        &g,
        &Arch::default(),
        &CompileOptions::default(),
        &opts(100),
        None,
    )
    .err()
    .unwrap();
    assert!(
        matches!(e, RunError::Sim(SimError::Timeout { limit: 100, .. })),
        "{e}"
    );
    assert!(
        e.to_string().contains("did not halt within 100 cycles"),
        "{e}"
    );
}

#[test]
fn cycle_limit_beyond_the_maximum_is_refused() {
    let p = compile(&mlp16(), &Arch::default(), &CompileOptions::default()).unwrap();
    let e = simulate(&p, &x_input(ok_input()), &opts(u64::MAX))
        .err()
        .unwrap();
    assert!(e.to_string().contains("max_cycles"), "{e}");
}

/// Each mutation of the default architecture must fail validation naming `field`.
#[test]
fn every_bad_arch_field_is_named() {
    type Mut = fn(&mut Arch);
    let cases: &[(&str, Mut)] = &[
        ("clock_ghz", |a| a.clock_ghz = f64::INFINITY),
        ("clock_ghz", |a| a.clock_ghz = f64::NAN),
        ("clock_ghz", |a| a.clock_ghz = 0.0),
        ("clock_ghz", |a| a.clock_ghz = 1e30),
        ("mvmu.adcs_per_mvmu", |a| a.mvmu.adcs_per_mvmu = 0),
        ("mvmu.adcs_per_mvmu", |a| a.mvmu.adcs_per_mvmu = 1000),
        ("network.flits_per_packet", |a| {
            a.network.flits_per_packet = 0
        }),
        ("core.instr_mem_entries", |a| a.core.instr_mem_entries = 0),
        ("tile.instr_mem_entries", |a| a.tile.instr_mem_entries = 0),
        ("core.instr_mem_entries", |a| {
            a.core.instr_mem_entries = 99_999_999_999_999
        }),
        ("core.pipeline_fill_cycles", |a| {
            a.core.pipeline_fill_cycles = 99_999_999_999_999
        }),
        ("core.branch_penalty_cycles", |a| {
            a.core.branch_penalty_cycles = 99_999_999_999_999
        }),
        ("network.latency_cycles", |a| {
            a.network.latency_cycles = u64::MAX
        }),
        ("network.inter_node_latency_cycles", |a| {
            a.network.inter_node_latency_cycles = u64::MAX
        }),
        ("head.latency.mvm_step_cycles", |a| {
            a.head.latency.mvm_step_cycles = f64::INFINITY
        }),
        ("head.latency.mvm_step_cycles", |a| {
            a.head.latency.mvm_step_cycles = 1e30
        }),
        ("head.latency.mvm_step_cycles", |a| {
            a.head.latency.mvm_step_cycles = f64::NAN
        }),
        ("head.latency.mvm_step_cycles", |a| {
            a.head.latency.mvm_step_cycles = 0.0
        }),
        ("paper.latency.mvm_step_cycles", |a| {
            a.paper.latency.mvm_step_cycles = f64::INFINITY
        }),
        ("paper.latency.mvm_step_cycles", |a| {
            a.paper.latency.mvm_step_cycles = 1e30
        }),
        ("head.latency.scalar_cycles", |a| {
            a.head.latency.scalar_cycles = 0
        }),
        ("paper.latency.edram_cycles", |a| {
            a.paper.latency.edram_cycles = 0
        }),
        ("head.latency.alu_cycles", |a| {
            a.head.latency.alu_cycles = u64::MAX
        }),
        ("head.latency.set_cycles_per_word", |a| {
            a.head.latency.set_cycles_per_word = u64::MAX
        }),
        ("paper.latency.copy_cycles", |a| {
            a.paper.latency.copy_cycles = u64::MAX
        }),
        ("head.latency.bus_cycles", |a| {
            a.head.latency.bus_cycles = u64::MAX
        }),
        ("head.energy.xbar_pj", |a| {
            a.head.energy.xbar_pj = f64::INFINITY
        }),
        ("paper.energy.adc_pj", |a| a.paper.energy.adc_pj = -1.0),
        ("head.energy.router_flit_pj", |a| {
            a.head.energy.router_flit_pj = 1e30
        }),
        ("paper.leakage.tile_pj_per_cycle", |a| {
            a.paper.leakage.tile_pj_per_cycle = f64::NAN
        }),
    ];
    for (field, f) in cases {
        let mut a = Arch::default();
        f(&mut a);
        let e = a
            .validate()
            .err()
            .unwrap_or_else(|| panic!("{field}: accepted"))
            .to_string();
        assert!(e.contains(&format!("`{field}`")), "{field}: {e}");
        assert!(e.contains("must be"), "{field}: says what is allowed: {e}");
    }
    // Zero where it is meaningful (an ideal unit, a free pipeline fill) is accepted.
    let mut a = Arch::default();
    a.head.latency.alu_cycles = 0;
    a.core.pipeline_fill_cycles = 0;
    a.core.branch_penalty_cycles = 0;
    a.network.latency_cycles = 0;
    a.paper.energy.adc_pj = 0.0;
    a.validate().unwrap();
}

/// The same through the TOML loader (what `--arch FILE` uses), with the fuzzed values.
#[test]
fn bad_arch_toml_values_are_named() {
    let d = pimkit_puma::arch::DEFAULT_TOML;
    let head_step = "mvm_step_cycles = 100.0     # ref §3.2: adc_lat";
    let paper_step = "mvm_step_cycles = 100.0     # ref §3.2: at SIM@paper";
    let cases = [
        (
            head_step,
            "mvm_step_cycles = inf",
            "head.latency.mvm_step_cycles",
        ),
        (
            head_step,
            "mvm_step_cycles = 1e30",
            "head.latency.mvm_step_cycles",
        ),
        (
            paper_step,
            "mvm_step_cycles = inf",
            "paper.latency.mvm_step_cycles",
        ),
        (
            paper_step,
            "mvm_step_cycles = 1e30",
            "paper.latency.mvm_step_cycles",
        ),
        ("clock_ghz = 1.0", "clock_ghz = inf", "clock_ghz"),
        (
            "adcs_per_mvmu = 2",
            "adcs_per_mvmu = 0",
            "mvmu.adcs_per_mvmu",
        ),
        (
            "flits_per_packet = 8",
            "flits_per_packet = 0",
            "network.flits_per_packet",
        ),
        (
            "instr_mem_entries = 512",
            "instr_mem_entries = 0",
            "core.instr_mem_entries",
        ),
        (
            "instr_mem_entries = 2048",
            "instr_mem_entries = 0",
            "tile.instr_mem_entries",
        ),
        (
            "alu_lanes = 4",
            "alu_lanes = 9223372036854775807",
            "core.alu_lanes",
        ),
        (
            "receive_fifo_depth = 1",
            "receive_fifo_depth = 9223372036854775807",
            "tile.receive_fifo_depth",
        ),
        ("tiles = 138", "tiles = 9223372036854775807", "node.tiles"),
    ];
    for (from, to, field) in cases {
        assert_eq!(d.matches(from).count(), 1, "{from}");
        // `from` may end inside a comment: keep the rest of the line a comment.
        let e = Arch::from_toml_str(&d.replacen(from, &format!("{to} # "), 1))
            .err()
            .unwrap_or_else(|| panic!("{to}: accepted"))
            .to_string();
        assert!(e.contains(&format!("{field} = ")), "{to}: {e}");
    }
}

#[test]
fn inputs_of_the_wrong_type_or_shape_are_rejected() {
    let g = mlp16();
    let p = compile(&g, &Arch::default(), &CompileOptions::default()).unwrap();
    assert_eq!(p.inputs[0].dtype, pimkit_ir::DType::F32);
    simulate(&p, &x_input(ok_input()), &SimOptions::default()).unwrap();
    let bad = [
        (
            Tensor::from_bool(vec![1, 16], vec![true; 16]),
            "bool[1, 16]",
        ),
        (Tensor::from_i64(vec![1, 16], vec![1; 16]), "i64[1, 16]"),
        (Tensor::from_u8(vec![1, 16], vec![1; 16]), "u8[1, 16]"),
        (Tensor::from_i8(vec![1, 16], vec![1; 16]), "i8[1, 16]"),
        (Tensor::from_f32(vec![16], vec![0.25; 16]), "f32[16]"),
        (Tensor::from_f32(vec![2, 8], vec![0.25; 16]), "f32[2, 8]"),
        (Tensor::from_f32(vec![1, 15], vec![0.25; 15]), "f32[1, 15]"),
    ];
    for (t, got) in bad {
        let e = simulate(&p, &x_input(t.clone()), &SimOptions::default())
            .err()
            .unwrap_or_else(|| panic!("{got}: accepted"));
        assert!(matches!(e, SimError::InputShape { .. }), "{e}");
        let m = e.to_string();
        assert!(
            m.contains("input `x`") && m.contains("f32[1, 16]") && m.contains(got),
            "{m}"
        );
        // `puma run --input` reports the same, before the reference interpreter.
        let e = run_graph(
            &g,
            &Arch::default(),
            &CompileOptions::default(),
            &SimOptions::default(),
            Some(x_input(t)),
        )
        .err()
        .unwrap();
        assert_eq!(e.to_string(), m);
    }
    let mut v = vec![0.25; 16];
    v[3] = f32::NAN;
    let e = simulate(
        &p,
        &x_input(Tensor::from_f32(vec![1, 16], v)),
        &SimOptions::default(),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("element 3 is NaN"), "{e}");
}

#[test]
fn sim_dir_errors_name_paths_once() {
    let g = mlp16();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("prog");
    tool::compile_to_dir(&g, &Arch::default(), &CompileOptions::default(), &dir).unwrap();
    let npy = tmp.path().join("x.npy");
    // Wrong dtype from a file.
    pimkit_ir::npy::write_npy(&npy, &Tensor::from_bool(vec![1, 16], vec![true; 16])).unwrap();
    let e = tool::sim_dir(&dir, std::slice::from_ref(&npy), &SimOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("bool[1, 16]") && e.contains("f32[1, 16]"), "{e}");
    // A float16 file (hand-made: numpy's header, 16 half-precision zeros).
    let mut hdr = "{'descr': '<f2', 'fortran_order': False, 'shape': (1, 16), }".to_string();
    while !(10 + hdr.len() + 1).is_multiple_of(64) {
        hdr.push(' ');
    }
    hdr.push('\n');
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(hdr.len() as u16).to_le_bytes());
    bytes.extend_from_slice(hdr.as_bytes());
    bytes.extend_from_slice(&[0u8; 32]);
    std::fs::write(&npy, bytes).unwrap();
    let e = tool::sim_dir(&dir, std::slice::from_ref(&npy), &SimOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("f16[1, 16]") && e.contains("f32[1, 16]"), "{e}");
    // An unreadable file: its path once, not twice.
    std::fs::write(&npy, b"not an npy file").unwrap();
    let e = tool::sim_dir(&dir, std::slice::from_ref(&npy), &SimOptions::default())
        .err()
        .unwrap()
        .to_string();
    let p = npy.display().to_string();
    assert_eq!(e.matches(&p).count(), 1, "{e}");
    // Outputs into a path that is a regular file: the error names the path and action.
    let (_, outs, _) = tool::sim_dir(&dir, &[], &SimOptions::default()).unwrap();
    let file = tmp.path().join("afile");
    std::fs::write(&file, b"x").unwrap();
    let e = tool::write_outputs(&file, &[], &outs)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains(&file.display().to_string()) && e.contains("cannot create the output directory"),
        "{e}"
    );
}

#[test]
fn zero_size_tensors_are_refused_by_name() {
    use pimkit_ir::{DType, Graph, Op, TensorType};
    let mut g = Graph::new("empty");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![2, 0]));
    let w = g.add_const("w", Tensor::from_f32(vec![0, 3], vec![]));
    let y = g.op("mm", Op::MatMul, &[x, w]).unwrap();
    g.outputs = vec![y];
    let e = compile(&g, &Arch::default(), &CompileOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("'x'") && e.contains("zero-size"), "{e}");
}

#[test]
fn a_zero_cycle_limit_is_refused_not_blamed_on_the_program() {
    let p = compile(&mlp16(), &Arch::default(), &CompileOptions::default()).unwrap();
    let e = simulate(&p, &x_input(ok_input()), &opts(0))
        .err()
        .expect("a zero cycle limit must be refused");
    assert!(matches!(e, SimError::Options(_)), "{e}");
    let m = e.to_string();
    assert!(
        m.contains("--max-cycles") && m.contains("give at least 1") && !m.contains("loop"),
        "{m}"
    );
}
