//! ISA round trips and per-instruction functional and timing tests on hand-written programs.

use pimkit_puma::encode::{decode_core, decode_tile, encode_core, encode_tile};
use pimkit_puma::isa::{self, ALU_OPS, AluOp, CoreInstr, IntOp, TileInstr};
use pimkit_puma::program::{MvmuWeights, Program, TileProgram};
use pimkit_puma::{Arch, NumMode, SimError, SimOptions, simulate};
use std::collections::HashMap;

fn sample_core() -> Vec<CoreInstr> {
    let mut v = vec![
        CoreInstr::Set {
            d1: 512,
            imm: -16030,
            vec: 3,
        },
        CoreInstr::Copy {
            d1: 0,
            r1: 512,
            vec: 128,
        },
        CoreInstr::Load {
            d1: 130,
            r1: 2559,
            width: 16,
            vec: 8,
        },
        CoreInstr::Store {
            d1: 2559,
            r1: 256,
            counter: 3,
            width: 5,
            vec: 1,
        },
        CoreInstr::AluInt {
            op: IntOp::EqChk,
            d1: 600,
            r1: 601,
            r2: 602,
        },
        CoreInstr::Mvm {
            mask: 0b10,
            shift: 0,
            group: 0,
        },
        CoreInstr::Mvm {
            mask: 0b11,
            shift: 3,
            group: 9,
        },
        CoreInstr::Beq {
            r1: 700,
            r2: 701,
            target: 12,
        },
        CoreInstr::Jmp { target: 0 },
        CoreInstr::Hlt,
        CoreInstr::Nop,
    ];
    for op in ALU_OPS {
        v.push(CoreInstr::Alu {
            op,
            d1: 520,
            r1: 256,
            r2: 384,
            vec: 100,
            fmt: None,
        });
        v.push(CoreInstr::Alui {
            op,
            d1: 520,
            r1: 256,
            imm: -4096,
            vec: 7,
            fmt: None,
        });
        v.push(CoreInstr::Alu {
            op,
            d1: 600,
            r1: 256,
            r2: 384,
            vec: 3,
            fmt: Some(isa::AluFmt { a: 9, b: 15, d: 0 }),
        });
    }
    v
}

#[test]
fn assembly_and_binary_round_trip() {
    let prog = sample_core();
    let text = isa::print(&prog);
    assert_eq!(isa::parse_core(&text).unwrap(), prog);
    for i in &prog {
        let words = encode_core(i).unwrap();
        assert_eq!(
            decode_core(&words).unwrap(),
            (i.clone(), words.len()),
            "{i}"
        );
    }
    let bytes = pimkit_puma::encode::encode_core_program(&prog).unwrap();
    assert_eq!(
        pimkit_puma::encode::decode_core_program(&bytes).unwrap(),
        prog
    );
    assert!(isa::parse_core("alu add d1=1 r1=2 r2=3 vec=4 fmt=1.2.64").is_err());
    assert!(isa::parse_core("alu add d1=1 r1=2 r2=3 vec=4 fmt=1.2").is_err());
    let tile = vec![
        TileInstr::Send {
            addr: 70000,
            fifo: 3,
            width: 16,
            target: 200,
            vec: 8,
        },
        TileInstr::Receive {
            addr: 12,
            fifo: 0,
            width: 10,
            counter: 4,
            vec: 1,
        },
        TileInstr::Halt,
    ];
    assert_eq!(isa::parse_tile(&isa::print(&tile)).unwrap(), tile);
    for i in &tile {
        assert_eq!(&decode_tile(encode_tile(i).unwrap()).unwrap(), i);
    }
    // Comments and blank lines are ignored; errors name the line.
    assert_eq!(
        isa::parse_core("# hi\n\nhlt # end\n").unwrap(),
        vec![CoreInstr::Hlt]
    );
    let e = isa::parse_core("hlt\nalu frob d1=1 r1=2 r2=3 vec=4\n").unwrap_err();
    assert_eq!(e.line, 2);
    assert!(e.msg.contains("frob"));
    assert!(
        isa::parse_core("load d1=1 r1=2 width=3")
            .unwrap_err()
            .msg
            .contains("vec")
    );
    // Fields that do not fit are rejected by the encoder, naming the field.
    let e = encode_core(&CoreInstr::Set {
        d1: 1 << 14,
        imm: 0,
        vec: 1,
    })
    .unwrap_err();
    assert!(e.to_string().contains("d1"));
}

/// A program with one active core (tile 2, core 0) and the given MVMU weights.
fn one_core(
    code: Vec<CoreInstr>,
    weights: Vec<(usize, Vec<i16>)>,
    shm: Vec<(u32, Vec<i16>)>,
) -> Program {
    let arch = Arch::default();
    let mut tiles = Vec::new();
    for t in 0..3 {
        let mut cores = vec![vec![CoreInstr::Hlt]; arch.tile.cores];
        if t == 2 {
            cores[0] = code.clone();
        }
        tiles.push(TileProgram {
            tile_code: vec![TileInstr::Halt],
            cores,
            shmem_init: if t == 2 { shm.clone() } else { vec![] },
            shmem_words_used: 0,
        });
    }
    Program {
        name: "t".into(),
        weights: weights
            .into_iter()
            .map(|(m, data)| MvmuWeights {
                shift: None,
                tile: 2,
                core: 0,
                mvmu: m,
                data,
            })
            .collect(),
        arch,
        tiles,
        inputs: vec![],
        outputs: vec![],
        placement: Default::default(),
        shape_only: false,
    }
}

fn run_core(p: &Program, mode: NumMode) -> (Vec<i32>, u64) {
    let o = SimOptions {
        mode,
        dump_core: Some((2, 0)),
        ..Default::default()
    };
    simulate(p, &HashMap::new(), &o).unwrap().core_dump.unwrap()
}

const D: u32 = 512; // first data-memory register

#[test]
fn set_copy_alu_semantics_and_latency() {
    let code = vec![
        CoreInstr::Set {
            d1: D,
            imm: 4096,
            vec: 4,
        }, // 1.0, 4 cycles
        CoreInstr::Set {
            d1: D + 4,
            imm: -2048,
            vec: 4,
        }, // -0.5, 4 cycles
        CoreInstr::Alu {
            op: AluOp::Add,
            d1: D + 8,
            r1: D,
            r2: D + 4,
            vec: 4,
            fmt: None,
        }, // 1 cycle (4 lanes)
        CoreInstr::Alu {
            op: AluOp::Mul,
            d1: D + 12,
            r1: D,
            r2: D + 4,
            vec: 4,
            fmt: None,
        },
        CoreInstr::Alu {
            op: AluOp::Div,
            d1: D + 16,
            r1: D + 4,
            r2: D,
            vec: 4,
            fmt: None,
        }, // 4 passes
        CoreInstr::Alui {
            op: AluOp::Max,
            d1: D + 20,
            r1: D + 4,
            imm: 0,
            vec: 4,
            fmt: None,
        },
        CoreInstr::Alu {
            op: AluOp::Sig,
            d1: D + 24,
            r1: D + 4,
            r2: 0,
            vec: 4,
            fmt: None,
        },
        CoreInstr::Alu {
            op: AluOp::Lt,
            d1: D + 28,
            r1: D + 4,
            r2: D,
            vec: 4,
            fmt: None,
        },
        CoreInstr::Copy {
            d1: D + 32,
            r1: D + 8,
            vec: 4,
        }, // 1 cycle
        CoreInstr::Alu {
            op: AluOp::Add,
            d1: D + 40,
            r1: D,
            r2: D,
            vec: 128,
            fmt: None,
        }, // 32 cycles
        CoreInstr::Hlt, // 1 cycle
    ];
    let (r, t) = run_core(&one_core(code, vec![], vec![]), NumMode::Exact);
    let d = D as usize;
    assert_eq!(r[d + 8], 2048);
    assert_eq!(r[d + 12], -2048);
    assert_eq!(r[d + 16], -2048);
    assert_eq!(r[d + 20], 0);
    assert_eq!(r[d + 24], (4096.0 / (1.0 + 0.5f64.exp())).round() as i32);
    assert_eq!(r[d + 28], 4096);
    assert_eq!(r[d + 32], 2048);
    assert_eq!(r[d + 40], 8192);
    // fill 2 + set 4 + set 4 + add 1 + mul 1 + div 4 + max 1 + sig 1 + lt 1 + copy 1 + add128 32 + hlt 1
    assert_eq!(t, 2 + 4 + 4 + 1 + 1 + 4 + 1 + 1 + 1 + 1 + 32 + 1);
}

#[test]
fn saturation_in_exact_mode_and_wrap_in_bitserial_mode() {
    let code = vec![
        CoreInstr::Set {
            d1: D,
            imm: 30000,
            vec: 2,
        },
        CoreInstr::Alu {
            op: AluOp::Add,
            d1: D + 2,
            r1: D,
            r2: D + 1,
            vec: 1,
            fmt: None,
        },
        CoreInstr::Hlt,
    ];
    let p = one_core(code, vec![], vec![]);
    assert_eq!(run_core(&p, NumMode::Exact).0[D as usize + 2], 32767);
    assert_eq!(
        run_core(&p, NumMode::BitSerial).0[D as usize + 2],
        60000 - 65536
    );
}

#[test]
fn mvm_computes_on_masked_mvmus_in_one_latency() {
    let xs = 128;
    let mut w0 = vec![0i16; xs * xs];
    let mut w1 = vec![0i16; xs * xs];
    for i in 0..xs {
        w0[i * xs + i] = 4096; // identity
        w1[i * xs + (xs - 1 - i)] = 2048; // 0.5 x reversed
    }
    let code = vec![
        CoreInstr::Set {
            d1: D,
            imm: 1000,
            vec: 128,
        },
        CoreInstr::Set {
            d1: D + 128,
            imm: -300,
            vec: 1,
        },
        CoreInstr::Copy {
            d1: 0,
            r1: D,
            vec: 128,
        }, // XbarIn 0
        CoreInstr::Copy {
            d1: 128,
            r1: D,
            vec: 128,
        }, // XbarIn 1
        CoreInstr::Copy {
            d1: 127,
            r1: D + 128,
            vec: 1,
        },
        CoreInstr::Mvm {
            mask: 0b11,
            shift: 0,
            group: 0,
        },
        CoreInstr::Hlt,
    ];
    let p = one_core(code, vec![(0, w0), (1, w1)], vec![]);
    let (r, t) = run_core(&p, NumMode::Exact);
    let xo = 256;
    assert_eq!(r[xo + 5], 1000);
    assert_eq!(r[xo + 127], -300);
    assert_eq!(r[xo + 128], 500);
    assert_eq!(r[xo + 128 + 127], 500);
    assert_eq!(
        t,
        2 + 128 + 1 + 1 + 1 + 1 + 1800 + 1,
        "both MVMUs run in parallel: one 1800-cycle latency"
    );
}

#[test]
fn load_store_blocking_and_latency() {
    // Shared memory word 100..104 preloaded (persistent); store then load back.
    let code = vec![
        CoreInstr::Set {
            d1: 2559,
            imm: 100,
            vec: 1,
        },
        CoreInstr::Load {
            d1: D,
            r1: 2559,
            width: 4,
            vec: 1,
        }, // 2 eDRAM + 1 bus
        CoreInstr::Set {
            d1: 2559,
            imm: 200,
            vec: 1,
        },
        CoreInstr::Store {
            d1: 2559,
            r1: D,
            counter: 1,
            width: 2,
            vec: 2,
        }, // 2 chunks x 3
        CoreInstr::Load {
            d1: D + 10,
            r1: 2559,
            width: 4,
            vec: 1,
        },
        CoreInstr::Hlt,
    ];
    let p = one_core(code, vec![], vec![(100, vec![1, 2, 3, 4])]);
    let (r, t) = run_core(&p, NumMode::Exact);
    assert_eq!(&r[D as usize + 10..D as usize + 14], &[1, 2, 3, 4]);
    assert_eq!(t, 2 + 1 + 3 + 1 + 6 + 3 + 1);
}

#[test]
fn branches_and_integer_alu_make_loops() {
    // r600 = 0; r601 = 5; r602 = 1; loop: r603 += r602 (alu_int) ... 5 times
    let code = vec![
        CoreInstr::Set {
            d1: 600,
            imm: 0,
            vec: 1,
        },
        CoreInstr::Set {
            d1: 601,
            imm: 5,
            vec: 1,
        },
        CoreInstr::Set {
            d1: 602,
            imm: 1,
            vec: 1,
        },
        CoreInstr::Set {
            d1: 603,
            imm: 0,
            vec: 1,
        },
        CoreInstr::AluInt {
            op: IntOp::Add,
            d1: 603,
            r1: 603,
            r2: 601,
        }, // pc 4
        CoreInstr::AluInt {
            op: IntOp::Add,
            d1: 600,
            r1: 600,
            r2: 602,
        },
        CoreInstr::Beq {
            r1: 600,
            r2: 601,
            target: 8,
        },
        CoreInstr::Jmp { target: 4 },
        CoreInstr::Hlt, // pc 8
    ];
    let (r, t) = run_core(&one_core(code, vec![], vec![]), NumMode::Exact);
    assert_eq!(r[603], 25);
    // fill 2 + 4 sets + 5 x (2 alu_int + beq) + 4 jmp + taken-branch penalty 1 + hlt
    assert_eq!(t, 2 + 4 + 5 * 3 + 4 + 1 + 1);
}

#[test]
fn deadlock_is_reported_with_blocked_instructions() {
    // Core 0 waits for data that core 1 stores only after it got data from core 0.
    let arch = Arch::default();
    let mut p = one_core(
        vec![
            CoreInstr::Set {
                d1: 2559,
                imm: 10,
                vec: 1,
            },
            CoreInstr::Load {
                d1: D,
                r1: 2559,
                width: 1,
                vec: 1,
            },
            CoreInstr::Set {
                d1: 2559,
                imm: 20,
                vec: 1,
            },
            CoreInstr::Store {
                d1: 2559,
                r1: D,
                counter: 1,
                width: 1,
                vec: 1,
            },
            CoreInstr::Hlt,
        ],
        vec![],
        vec![],
    );
    p.tiles[2].cores[1] = vec![
        CoreInstr::Set {
            d1: 2559,
            imm: 20,
            vec: 1,
        },
        CoreInstr::Load {
            d1: D,
            r1: 2559,
            width: 1,
            vec: 1,
        },
        CoreInstr::Set {
            d1: 2559,
            imm: 10,
            vec: 1,
        },
        CoreInstr::Store {
            d1: 2559,
            r1: D,
            counter: 1,
            width: 1,
            vec: 1,
        },
        CoreInstr::Hlt,
    ];
    let _ = arch;
    match simulate(&p, &HashMap::new(), &SimOptions::default()) {
        Err(SimError::Deadlock { blocked, .. }) => {
            assert_eq!(blocked.len(), 2);
            assert!(
                blocked
                    .iter()
                    .all(|b| b.instr.starts_with("load") && b.pc == 1 && b.tile == 2)
            );
        }
        Err(e) => panic!("expected a deadlock, got {e}"),
        Ok(o) => panic!("expected a deadlock, got {:?}", o.stats),
    }
    // A receive with no sender deadlocks the tile unit.
    let mut p = one_core(vec![CoreInstr::Hlt], vec![], vec![]);
    p.tiles[2].tile_code = vec![
        TileInstr::Receive {
            addr: 0,
            fifo: 1,
            width: 4,
            counter: 1,
            vec: 1,
        },
        TileInstr::Halt,
    ];
    let Err(e) = simulate(&p, &HashMap::new(), &SimOptions::default()) else {
        panic!("expected a deadlock")
    };
    assert!(e.to_string().contains("receive"), "{e}");
}

#[test]
fn send_receive_latency_and_data() {
    // Tile 2 sends 4 preloaded words to tile 1 (network latency 31).
    let mut p = one_core(vec![CoreInstr::Hlt], vec![], vec![(0, vec![5, 6, 7, 8])]);
    p.tiles[2].tile_code = vec![
        TileInstr::Send {
            addr: 0,
            fifo: 2,
            width: 4,
            target: 1,
            vec: 1,
        },
        TileInstr::Halt,
    ];
    p.tiles[1].tile_code = vec![
        TileInstr::Receive {
            addr: 40,
            fifo: 2,
            width: 4,
            counter: 1,
            vec: 1,
        },
        TileInstr::Halt,
    ];
    p.outputs = vec![pimkit_puma::program::IoMap {
        fracs: vec![],
        name: "y".into(),
        shape: vec![4],
        dtype: pimkit_ir::DType::F32,
        tile: 1,
        addrs: vec![40, 41, 42, 43],
        counts: vec![],
    }];
    let o = simulate(&p, &HashMap::new(), &SimOptions::default()).unwrap();
    assert_eq!(
        o.outputs[0].as_f32().unwrap(),
        &[5.0 / 4096.0, 6.0 / 4096.0, 7.0 / 4096.0, 8.0 / 4096.0]
    );
    // send: eDRAM 2, network 31, receive eDRAM 2
    assert_eq!(o.stats.cycles, 2 + 31 + 2);
    assert_eq!(o.stats.packets, 1);
    assert_eq!(o.stats.instructions["send"], 1);
}

#[test]
fn class_index_matches_class_names() {
    for i in sample_core() {
        assert_eq!(isa::CORE_CLASSES[i.class_index()], i.class());
    }
}
