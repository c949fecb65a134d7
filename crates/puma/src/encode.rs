//! Binary encoding: one 64-bit little-endian word per instruction (the original sizes
//! instruction memory for 8 bytes per instruction, reference §1.4; it has no encoder).
//!
//! Layout, from bit 63 down: opcode (4 bits) then the fields of the instruction in
//! the order of its text form, each with the width in [`FIELD_BITS`]-style constants
//! below. Signed immediates are two's complement in their field. An `alu`/`alui` with
//! explicit formats (`fmt=a.b.d`) is preceded by a prefix word (opcode 12, three 6-bit
//! fraction counts), so a program is a sequence of words, not one word per instruction.

use crate::isa::{AluFmt, AluOp, CoreInstr, IntOp, TileInstr};

pub const REG_BITS: u32 = 13;
pub const VEC_BITS: u32 = 12;
pub const TILE_VEC_BITS: u32 = 8;
pub const ALUOP_BITS: u32 = 5;
pub const SET_IMM_BITS: u32 = 22;
pub const ALUI_IMM_BITS: u32 = 16;
pub const WIDTH_BITS: u32 = 5;
pub const COUNTER_BITS: u32 = 12;
pub const PC_BITS: u32 = 20;
pub const MASK_BITS: u32 = 8;
pub const SHUFFLE_BITS: u32 = 8;
pub const ADDR_BITS: u32 = 22;
pub const TILE_ID_BITS: u32 = 10;

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum EncodeError {
    #[error("instruction `{instr}`: field `{field}` = {value} does not fit in {bits} bits")]
    Field {
        instr: String,
        field: &'static str,
        value: i64,
        bits: u32,
    },
    #[error("word {word:#018x}: {msg}")]
    Decode { word: u64, msg: String },
}

struct W {
    word: u64,
    pos: u32,
    instr: String,
}

impl W {
    fn new(op: u64, instr: String) -> Self {
        W {
            word: op << 60,
            pos: 60,
            instr,
        }
    }
    fn u(mut self, field: &'static str, v: u32, bits: u32) -> Result<Self, EncodeError> {
        if (v as u64) >> bits != 0 {
            return Err(EncodeError::Field {
                instr: self.instr,
                field,
                value: v as i64,
                bits,
            });
        }
        self.pos -= bits;
        self.word |= (v as u64) << self.pos;
        Ok(self)
    }
    fn i(mut self, field: &'static str, v: i32, bits: u32) -> Result<Self, EncodeError> {
        let lo = -(1i64 << (bits - 1));
        let hi = (1i64 << (bits - 1)) - 1;
        if (v as i64) < lo || (v as i64) > hi {
            return Err(EncodeError::Field {
                instr: self.instr,
                field,
                value: v as i64,
                bits,
            });
        }
        self.pos -= bits;
        self.word |= ((v as i64 as u64) & ((1u64 << bits) - 1)) << self.pos;
        Ok(self)
    }
}

struct R {
    word: u64,
    pos: u32,
}

impl R {
    fn new(word: u64) -> Self {
        R { word, pos: 60 }
    }
    fn u(&mut self, bits: u32) -> u32 {
        self.pos -= bits;
        ((self.word >> self.pos) & ((1u64 << bits) - 1)) as u32
    }
    fn i(&mut self, bits: u32) -> i32 {
        let v = self.u(bits) as i64;
        (if v >> (bits - 1) == 1 {
            v - (1i64 << bits)
        } else {
            v
        }) as i32
    }
}

/// Encode one instruction: one word, or a format prefix and the word.
pub fn encode_core(i: &CoreInstr) -> Result<Vec<u64>, EncodeError> {
    let fmt = match i {
        CoreInstr::Alu { fmt, .. } | CoreInstr::Alui { fmt, .. } => *fmt,
        // only ALU instructions carry a format
        _ => None,
    };
    let w = encode_word(i)?;
    Ok(match fmt {
        None => vec![w],
        Some(f) => {
            let p = (12u64 << 60)
                | ((f.a as u64) & 63) << 54
                | ((f.b as u64) & 63) << 48
                | ((f.d as u64) & 63) << 42;
            vec![p, w]
        }
    })
}

fn encode_word(i: &CoreInstr) -> Result<u64, EncodeError> {
    let s = i.to_string();
    let w = match *i {
        CoreInstr::Nop => W::new(0, s),
        CoreInstr::Set { d1, imm, vec } => W::new(1, s)
            .u("d1", d1, REG_BITS)?
            .i("imm", imm, SET_IMM_BITS)?
            .u("vec", vec, VEC_BITS)?,
        CoreInstr::Copy { d1, r1, vec } => W::new(2, s)
            .u("d1", d1, REG_BITS)?
            .u("r1", r1, REG_BITS)?
            .u("vec", vec, VEC_BITS)?,
        CoreInstr::Load { d1, r1, width, vec } => W::new(3, s)
            .u("d1", d1, REG_BITS)?
            .u("r1", r1, REG_BITS)?
            .u("width", width, WIDTH_BITS)?
            .u("vec", vec, VEC_BITS)?,
        CoreInstr::Store {
            d1,
            r1,
            counter,
            width,
            vec,
        } => W::new(4, s)
            .u("d1", d1, REG_BITS)?
            .u("r1", r1, REG_BITS)?
            .u("counter", counter, COUNTER_BITS)?
            .u("width", width, WIDTH_BITS)?
            .u("vec", vec, VEC_BITS)?,
        CoreInstr::Alu {
            op,
            d1,
            r1,
            r2,
            vec,
            ..
        } => W::new(5, s)
            .u("aluop", op.code() as u32, ALUOP_BITS)?
            .u("d1", d1, REG_BITS)?
            .u("r1", r1, REG_BITS)?
            .u("r2", r2, REG_BITS)?
            .u("vec", vec, VEC_BITS)?,
        CoreInstr::Alui {
            op,
            d1,
            r1,
            imm,
            vec,
            ..
        } => W::new(6, s)
            .u("aluop", op.code() as u32, ALUOP_BITS)?
            .u("d1", d1, REG_BITS)?
            .u("r1", r1, REG_BITS)?
            .i("imm", imm, ALUI_IMM_BITS)?
            .u("vec", vec, VEC_BITS)?,
        CoreInstr::AluInt { op, d1, r1, r2 } => W::new(7, s)
            .u("op", op.code() as u32, 3)?
            .u("d1", d1, REG_BITS)?
            .u("r1", r1, REG_BITS)?
            .u("r2", r2, REG_BITS)?,
        CoreInstr::Mvm { mask, shift, group } => W::new(8, s)
            .u("mask", mask, MASK_BITS)?
            .u("shift", shift, SHUFFLE_BITS)?
            .u("group", group, SHUFFLE_BITS)?,
        CoreInstr::Beq { r1, r2, target } => W::new(9, s)
            .u("r1", r1, REG_BITS)?
            .u("r2", r2, REG_BITS)?
            .u("target", target, PC_BITS)?,
        CoreInstr::Jmp { target } => W::new(10, s).u("target", target, PC_BITS)?,
        CoreInstr::Hlt => W::new(11, s),
    };
    Ok(w.word)
}

fn bad(word: u64, msg: &str) -> EncodeError {
    EncodeError::Decode {
        word,
        msg: msg.to_string(),
    }
}

/// Decode the instruction at the start of `words`; returns it and the words used.
pub fn decode_core(words: &[u64]) -> Result<(CoreInstr, usize), EncodeError> {
    let &w0 = words.first().ok_or_else(|| bad(0, "no word to decode"))?;
    if w0 >> 60 != 12 {
        return Ok((decode_word(w0)?, 1));
    }
    let f = AluFmt {
        a: (w0 >> 54 & 63) as u8,
        b: (w0 >> 48 & 63) as u8,
        d: (w0 >> 42 & 63) as u8,
    };
    let &w1 = words
        .get(1)
        .ok_or_else(|| bad(w0, "format prefix at the end of the program"))?;
    let mut i = decode_word(w1)?;
    match &mut i {
        CoreInstr::Alu { fmt, .. } | CoreInstr::Alui { fmt, .. } => *fmt = Some(f),
        // only ALU instructions carry a format
        _ => return Err(bad(w1, "format prefix before a non-ALU instruction")),
    }
    Ok((i, 2))
}

fn decode_word(word: u64) -> Result<CoreInstr, EncodeError> {
    let mut r = R::new(word);
    let op = word >> 60;
    let i = match op {
        0 => CoreInstr::Nop,
        1 => CoreInstr::Set {
            d1: r.u(REG_BITS),
            imm: r.i(SET_IMM_BITS),
            vec: r.u(VEC_BITS),
        },
        2 => CoreInstr::Copy {
            d1: r.u(REG_BITS),
            r1: r.u(REG_BITS),
            vec: r.u(VEC_BITS),
        },
        3 => CoreInstr::Load {
            d1: r.u(REG_BITS),
            r1: r.u(REG_BITS),
            width: r.u(WIDTH_BITS),
            vec: r.u(VEC_BITS),
        },
        4 => CoreInstr::Store {
            d1: r.u(REG_BITS),
            r1: r.u(REG_BITS),
            counter: r.u(COUNTER_BITS),
            width: r.u(WIDTH_BITS),
            vec: r.u(VEC_BITS),
        },
        5 | 6 => {
            let code = r.u(ALUOP_BITS);
            let aop = AluOp::from_code(code as u64).ok_or_else(|| bad(word, "bad ALU op code"))?;
            let d1 = r.u(REG_BITS);
            let r1 = r.u(REG_BITS);
            if op == 5 {
                CoreInstr::Alu {
                    op: aop,
                    d1,
                    r1,
                    r2: r.u(REG_BITS),
                    vec: r.u(VEC_BITS),
                    fmt: None,
                }
            } else {
                CoreInstr::Alui {
                    op: aop,
                    d1,
                    r1,
                    imm: r.i(ALUI_IMM_BITS),
                    vec: r.u(VEC_BITS),
                    fmt: None,
                }
            }
        }
        7 => {
            let code = r.u(3);
            CoreInstr::AluInt {
                op: IntOp::from_code(code as u64).ok_or_else(|| bad(word, "bad alu_int op"))?,
                d1: r.u(REG_BITS),
                r1: r.u(REG_BITS),
                r2: r.u(REG_BITS),
            }
        }
        8 => CoreInstr::Mvm {
            mask: r.u(MASK_BITS),
            shift: r.u(SHUFFLE_BITS),
            group: r.u(SHUFFLE_BITS),
        },
        9 => CoreInstr::Beq {
            r1: r.u(REG_BITS),
            r2: r.u(REG_BITS),
            target: r.u(PC_BITS),
        },
        10 => CoreInstr::Jmp {
            target: r.u(PC_BITS),
        },
        11 => CoreInstr::Hlt,
        // an integer opcode field: every value the encoder writes is listed above
        _ => return Err(bad(word, "unknown core opcode")),
    };
    Ok(i)
}

pub fn encode_tile(i: &TileInstr) -> Result<u64, EncodeError> {
    let s = i.to_string();
    let w = match *i {
        TileInstr::Send {
            addr,
            fifo,
            width,
            target,
            vec,
        } => W::new(12, s)
            .u("addr", addr, ADDR_BITS)?
            .u("fifo", fifo, TILE_ID_BITS)?
            .u("width", width, WIDTH_BITS)?
            .u("target", target, TILE_ID_BITS)?
            .u("vec", vec, TILE_VEC_BITS)?,
        TileInstr::Receive {
            addr,
            fifo,
            width,
            counter,
            vec,
        } => W::new(13, s)
            .u("addr", addr, ADDR_BITS)?
            .u("fifo", fifo, TILE_ID_BITS)?
            .u("width", width, WIDTH_BITS)?
            .u("counter", counter, COUNTER_BITS)?
            .u("vec", vec, TILE_VEC_BITS)?,
        TileInstr::Halt => W::new(14, s),
    };
    Ok(w.word)
}

pub fn decode_tile(word: u64) -> Result<TileInstr, EncodeError> {
    let mut r = R::new(word);
    Ok(match word >> 60 {
        12 => TileInstr::Send {
            addr: r.u(ADDR_BITS),
            fifo: r.u(TILE_ID_BITS),
            width: r.u(WIDTH_BITS),
            target: r.u(TILE_ID_BITS),
            vec: r.u(TILE_VEC_BITS),
        },
        13 => TileInstr::Receive {
            addr: r.u(ADDR_BITS),
            fifo: r.u(TILE_ID_BITS),
            width: r.u(WIDTH_BITS),
            counter: r.u(COUNTER_BITS),
            vec: r.u(TILE_VEC_BITS),
        },
        14 => TileInstr::Halt,
        // an integer opcode field: every value the encoder writes is listed above
        _ => return Err(bad(word, "unknown tile opcode")),
    })
}

/// Encode a whole program as little-endian bytes.
pub fn encode_core_program(p: &[CoreInstr]) -> Result<Vec<u8>, EncodeError> {
    let mut v = Vec::with_capacity(p.len() * 8);
    for i in p {
        for w in encode_core(i)? {
            v.extend_from_slice(&w.to_le_bytes());
        }
    }
    Ok(v)
}

pub fn decode_core_program(b: &[u8]) -> Result<Vec<CoreInstr>, EncodeError> {
    let words: Vec<u64> = b
        .chunks(8)
        .map(|c| {
            let mut a = [0u8; 8];
            a[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(a)
        })
        .collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < words.len() {
        let (ins, n) = decode_core(&words[i..])?;
        out.push(ins);
        i += n;
    }
    Ok(out)
}
