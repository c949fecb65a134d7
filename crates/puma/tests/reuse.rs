//! Shared-memory reuse: the checker (compile/check.rs) proves compiled schedules safe
//! and catches each kind of violation on hand-made traces; programs that reuse words as
//! much as possible compute exactly what programs without reuse compute, under random
//! timing noise too.

mod common;
use common::*;
use pimkit_puma::compile::check::{check_program, check_tile};
use pimkit_puma::compile::trace::{Event, EventKind};
use pimkit_puma::compile::{CompileOptions, Reuse, compile_with_trace};
use pimkit_puma::{Arch, SimOptions, simulate};

fn ev(pos: u32, agent: u16, kind: EventKind, addr: u32, width: u32, count: u32) -> Event {
    Event {
        pos,
        agent,
        kind,
        addr,
        width,
        vec: 1,
        count,
    }
}
use EventKind::{Init, Read, Write};

/// Two cores (agents 0, 1), the unit is agent 2.
const CORES: usize = 2;

#[test]
fn checker_accepts_ordered_reuse() {
    // Core 0 writes A for two readings by core 1; core 1 (which has read all of A and
    // so follows A's write) writes B there, then a flag (word 8) that core 0 loads before
    // reading B: core 0 then follows A's reads.
    let t = vec![
        ev(0, 0, Write, 0, 4, 2),
        ev(1, 1, Read, 0, 4, 0),
        ev(2, 1, Read, 0, 4, 0),
        ev(3, 1, Write, 0, 4, 1),
        ev(4, 1, Write, 8, 1, 1),
        ev(4, 0, Read, 8, 1, 0),
        ev(5, 0, Read, 0, 4, 0),
    ];
    let s = check_tile(2, &t, CORES, 16, true).unwrap();
    assert!(s.reused_writes > 0);
}

#[test]
fn checker_rejects_a_write_before_the_old_reads() {
    let t = vec![
        ev(0, 0, Write, 0, 4, 1),
        ev(1, 0, Write, 0, 4, 1),
        ev(2, 1, Read, 0, 4, 0),
    ];
    let e = check_tile(2, &t, CORES, 16, true).unwrap_err().0;
    assert!(e.contains("could wait forever"), "{e}");
}

#[test]
fn checker_rejects_a_stale_read() {
    // Without the flag, core 0 may read before core 1's reads of A and consume A.
    let t = vec![
        ev(0, 0, Write, 0, 4, 2),
        ev(1, 1, Read, 0, 4, 0),
        ev(2, 1, Read, 0, 4, 0),
        ev(3, 1, Write, 0, 4, 1),
        ev(5, 0, Read, 0, 4, 0),
    ];
    let e = check_tile(2, &t, CORES, 16, true).unwrap_err().0;
    assert!(e.contains("stale read") && e.contains("core 1"), "{e}");
    // The unit reads A and receives B there; core 1, B's reader, read A too but does
    // not follow the unit's read of A.
    let t = vec![
        ev(0, 0, Write, 0, 4, 2),
        ev(1, 1, Read, 0, 4, 0),
        ev(2, 2, Read, 0, 4, 0),
        ev(3, 2, Write, 0, 4, 1),
        ev(5, 1, Read, 0, 4, 0),
    ];
    let e = check_tile(2, &t, CORES, 16, true).unwrap_err().0;
    assert!(e.contains("stale read") && e.contains("unit"), "{e}");
    // It does after reading another word the unit received after its read of A.
    let t = vec![
        ev(0, 0, Write, 0, 4, 2),
        ev(1, 1, Read, 0, 4, 0),
        ev(2, 2, Read, 0, 4, 0),
        ev(3, 2, Write, 0, 4, 1),
        ev(4, 2, Write, 12, 1, 1),
        ev(5, 1, Read, 12, 1, 0),
        ev(6, 1, Read, 0, 4, 0),
    ];
    check_tile(2, &t, CORES, 16, true).unwrap();
}

#[test]
fn checker_rejects_a_writer_that_could_overtake_the_old_writer() {
    // Core 0 writes A, the unit reads it; core 1 writes B without knowing A was written:
    // it could write first and then be overwritten by A.
    let t = vec![
        ev(0, 0, Write, 0, 4, 1),
        ev(1, 2, Read, 0, 4, 0),
        ev(2, 1, Write, 0, 4, 1),
        ev(3, 2, Read, 0, 4, 0),
    ];
    let e = check_tile(2, &t, CORES, 16, true).unwrap_err().0;
    assert!(e.contains("overwritten by it"), "{e}");
}

#[test]
fn checker_rejects_wrong_counts_and_unwritten_reads() {
    let t = vec![ev(0, 0, Write, 0, 4, 2), ev(1, 1, Read, 0, 4, 0)];
    let e = check_tile(2, &t, CORES, 16, true).unwrap_err().0;
    assert!(e.contains("never happen"), "{e}");
    let t = vec![ev(0, 1, Read, 0, 4, 0)];
    let e = check_tile(2, &t, CORES, 16, true).unwrap_err().0;
    assert!(e.contains("no value is pending"), "{e}");
    // Preloaded words are read by count.
    let t = vec![ev(0, u16::MAX, Init, 0, 4, 1), ev(1, 2, Read, 0, 4, 0)];
    check_tile(0, &t, CORES, 16, false).unwrap();
}

#[test]
fn checker_catches_code_that_differs_from_the_trace() {
    let g = small_cnn(4);
    let (mut p, tr) = compile_with_trace(&g, &Arch::default(), &CompileOptions::default()).unwrap();
    check_program(&p, &tr).unwrap();
    // Move one load to another address.
    let code = p.tiles[2].cores.iter_mut().find(|c| {
        c.iter()
            .any(|i| matches!(i, pimkit_puma::isa::CoreInstr::Load { .. }))
    });
    let code = code.unwrap();
    let i = code
        .iter()
        .position(|i| matches!(i, pimkit_puma::isa::CoreInstr::Load { .. }))
        .unwrap();
    if let pimkit_puma::isa::CoreInstr::Set { imm, .. } = &mut code[i - 1] {
        *imm += 1;
    } else {
        panic!("a load is preceded by its address set");
    }
    let e = check_program(&p, &tr).unwrap_err().0;
    assert!(e.contains("compiler's trace"), "{e}");
}

/// Reuse as much as possible: same outputs as without reuse, bit for bit, checked by
/// the checker at compile time, and robust to timing noise.
#[test]
fn maximal_reuse_computes_the_same_under_timing_noise() {
    let cases = [
        small_cnn(3),
        grouped_cnn(4, 40, 6),
        lstm_net(3, 20, 40, 2),
        mlp(&[130, 140, 20], pimkit_ir::UnaryOp::Relu, 3).0,
    ];
    for g in cases {
        let inputs = pimkit_interp::random_inputs(&g, 0);
        let off = CompileOptions {
            reuse: Reuse::Off,
            ..Default::default()
        };
        let first = CompileOptions {
            reuse: Reuse::First,
            ..Default::default()
        };
        let arch = Arch::default();
        let (pa, _) = compile_with_trace(&g, &arch, &off).unwrap();
        let (pb, tb) = compile_with_trace(&g, &arch, &first).unwrap();
        let stats = check_program(&pb, &tb).unwrap();
        assert!(stats.reused_writes > 0, "{}: nothing reused", g.name);
        let a = simulate(&pa, &inputs, &SimOptions::default()).unwrap();
        for seed in [None, Some((1, 7)), Some((2, 300)), Some((3, 3000))] {
            let b = simulate(
                &pb,
                &inputs,
                &SimOptions {
                    jitter: seed,
                    ..Default::default()
                },
            )
            .unwrap_or_else(|e| panic!("{} jitter {seed:?}: {e}", g.name));
            for (x, y) in a.outputs.iter().zip(&b.outputs) {
                assert_eq!(x.to_f32_vec(), y.to_f32_vec(), "{} jitter {seed:?}", g.name);
            }
        }
    }
}
