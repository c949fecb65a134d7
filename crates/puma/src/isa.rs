//! The PUMA instruction set as Rust enums, with a text assembly (print + parse, exact
//! round trip). See docs/puma.md "ISA reference" for the syntax and semantics.
//!
//! Core registers are addressed in one flat space per core (reference §1.3):
//! `[0, M·S)` XbarIn of MVMU ⌊a/S⌋, `[M·S, 2·M·S)` XbarOut, then the general data
//! memory (M MVMUs per core, S = crossbar size).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Vector ALU functions. The first eight are what the original simulator implements;
/// the rest are emitted by the original compiler without simulator semantics and are
/// defined here (docs/puma.md "ALU ops").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AluOp {
    Add,
    Sub,
    Mul,
    Sig,
    Tanh,
    Relu,
    Max,
    Div,
    And,
    Or,
    Not,
    Eq,
    Neq,
    Lt,
    Leq,
    Gt,
    Geq,
    Min,
    Mse,
    Exp,
    Log,
    Relud,
    LogSoftmax,
    LogSoftmaxd,
    Rndcmp,
    /// Error function (ROM lookup like sig/tanh; a pimkit addition for GELU).
    Erf,
    /// Square root (ROM lookup; a pimkit addition for normalizations).
    Sqrt,
}

pub const ALU_OPS: [AluOp; 27] = [
    AluOp::Add,
    AluOp::Sub,
    AluOp::Mul,
    AluOp::Sig,
    AluOp::Tanh,
    AluOp::Relu,
    AluOp::Max,
    AluOp::Div,
    AluOp::And,
    AluOp::Or,
    AluOp::Not,
    AluOp::Eq,
    AluOp::Neq,
    AluOp::Lt,
    AluOp::Leq,
    AluOp::Gt,
    AluOp::Geq,
    AluOp::Min,
    AluOp::Mse,
    AluOp::Exp,
    AluOp::Log,
    AluOp::Relud,
    AluOp::LogSoftmax,
    AluOp::LogSoftmaxd,
    AluOp::Rndcmp,
    AluOp::Erf,
    AluOp::Sqrt,
];

/// Energy class of a VFU op (reference §3.5 VFU row: div / mul / other; transcendental
/// functions additionally use the ROM-embedded lookup unit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AluClass {
    Simple,
    Mul,
    Div,
    Transcendental,
}

impl AluOp {
    pub fn name(self) -> &'static str {
        match self {
            AluOp::Add => "add",
            AluOp::Sub => "sub",
            AluOp::Mul => "mul",
            AluOp::Sig => "sig",
            AluOp::Tanh => "tanh",
            AluOp::Relu => "relu",
            AluOp::Max => "max",
            AluOp::Div => "div",
            AluOp::And => "and",
            AluOp::Or => "or",
            AluOp::Not => "not",
            AluOp::Eq => "eq",
            AluOp::Neq => "neq",
            AluOp::Lt => "lt",
            AluOp::Leq => "leq",
            AluOp::Gt => "gt",
            AluOp::Geq => "geq",
            AluOp::Min => "min",
            AluOp::Mse => "mse",
            AluOp::Exp => "exp",
            AluOp::Log => "log",
            AluOp::Relud => "relud",
            AluOp::LogSoftmax => "log_softmax",
            AluOp::LogSoftmaxd => "log_softmaxd",
            AluOp::Rndcmp => "rndcmp",
            AluOp::Erf => "erf",
            AluOp::Sqrt => "sqrt",
        }
    }
    pub fn parse(s: &str) -> Option<AluOp> {
        ALU_OPS.iter().copied().find(|o| o.name() == s)
    }
    pub fn code(self) -> u64 {
        ALU_OPS.iter().position(|&o| o == self).unwrap_or(0) as u64
    }
    pub fn from_code(c: u64) -> Option<AluOp> {
        ALU_OPS.get(c as usize).copied()
    }
    /// Ops that read only r1.
    pub fn is_unary(self) -> bool {
        matches!(
            self,
            AluOp::Sig
                | AluOp::Tanh
                | AluOp::Relu
                | AluOp::Not
                | AluOp::Exp
                | AluOp::Log
                | AluOp::Relud
                | AluOp::LogSoftmax
                | AluOp::LogSoftmaxd
                | AluOp::Erf
                | AluOp::Sqrt
        )
    }
    /// Ops implemented by the original simulator (reference §1.1).
    pub fn in_original_simulator(self) -> bool {
        matches!(
            self,
            AluOp::Add
                | AluOp::Sub
                | AluOp::Mul
                | AluOp::Sig
                | AluOp::Tanh
                | AluOp::Relu
                | AluOp::Max
        )
    }
    /// Passes over the vector (our defined cost for ops new to the simulator): a
    /// restoring divider needs 4 lane-cycles per element; log-softmax needs a max pass,
    /// a sum-of-exponentials pass and a subtract pass.
    pub fn passes(self) -> u64 {
        match self {
            AluOp::Div => 4,
            AluOp::LogSoftmax | AluOp::LogSoftmaxd => 3,
            // every other ALU op takes one pass
            _ => 1,
        }
    }
    pub fn class(self) -> AluClass {
        match self {
            AluOp::Mul | AluOp::Mse => AluClass::Mul,
            AluOp::Div => AluClass::Div,
            AluOp::Sig
            | AluOp::Tanh
            | AluOp::Exp
            | AluOp::Log
            | AluOp::Erf
            | AluOp::Sqrt
            | AluOp::LogSoftmax
            | AluOp::LogSoftmaxd => AluClass::Transcendental,
            // every other ALU op is a simple (one-cycle-per-lane) operation
            _ => AluClass::Simple,
        }
    }
}

/// Scalar integer ALU (`alu_int`) functions (reference §1.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    EqChk,
}

pub const INT_OPS: [IntOp; 6] = [
    IntOp::Add,
    IntOp::Sub,
    IntOp::Mul,
    IntOp::Div,
    IntOp::Mod,
    IntOp::EqChk,
];

impl IntOp {
    pub fn name(self) -> &'static str {
        match self {
            IntOp::Add => "add",
            IntOp::Sub => "sub",
            IntOp::Mul => "mul",
            IntOp::Div => "div",
            IntOp::Mod => "mod",
            IntOp::EqChk => "eq_chk",
        }
    }
    pub fn parse(s: &str) -> Option<IntOp> {
        INT_OPS.iter().copied().find(|o| o.name() == s)
    }
    pub fn code(self) -> u64 {
        INT_OPS.iter().position(|&o| o == self).unwrap_or(0) as u64
    }
    pub fn from_code(c: u64) -> Option<IntOp> {
        INT_OPS.get(c as usize).copied()
    }
}

/// Fraction bits of the two operands and the result of an ALU instruction (16-bit
/// words: value = word / 2^frac). The op is computed on the real values and rounded
/// once to the result's format (docs/puma.md "Fixed point per tensor").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct AluFmt {
    pub a: u8,
    pub b: u8,
    pub d: u8,
}

impl fmt::Display for AluFmt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.a, self.b, self.d)
    }
}

impl AluFmt {
    pub fn parse(s: &str) -> Option<AluFmt> {
        let mut it = s
            .split('.')
            .map(|x| x.parse::<u8>().ok().filter(|&v| v <= 63));
        let (a, b, d) = (it.next()??, it.next()??, it.next()??);
        it.next().is_none().then_some(AluFmt { a, b, d })
    }
}

/// One core instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum CoreInstr {
    /// Write `imm` into `vec` consecutive data-memory registers from `d1`.
    Set {
        d1: u32,
        imm: i32,
        vec: u32,
    },
    /// Copy `vec` words register → register (any class).
    Copy {
        d1: u32,
        r1: u32,
        vec: u32,
    },
    /// Read `vec` chunks of `width` words from shared memory at the address held in
    /// register `r1` into registers from `d1`; blocks until the words are valid.
    Load {
        d1: u32,
        r1: u32,
        width: u32,
        vec: u32,
    },
    /// Write `vec` chunks of `width` words from register `r1` to the shared-memory
    /// address held in register `d1`; blocks until the words are invalid, then sets
    /// valid and the reader count to `counter`.
    Store {
        d1: u32,
        r1: u32,
        counter: u32,
        width: u32,
        vec: u32,
    },
    /// Vector op over `vec` elements: `d1[i] = op(r1[i], r2[i])`.
    Alu {
        op: AluOp,
        d1: u32,
        r1: u32,
        r2: u32,
        vec: u32,
        /// Fixed-point formats of r1, r2 and d1 (`None`: the architecture's format).
        fmt: Option<AluFmt>,
    },
    /// Vector op with a scalar fixed-point immediate (raw 16-bit pattern).
    Alui {
        op: AluOp,
        d1: u32,
        r1: u32,
        imm: i32,
        vec: u32,
        /// Formats of r1, the immediate and d1 (`None`: the architecture's format).
        fmt: Option<AluFmt>,
    },
    /// Scalar integer op on data-memory registers.
    AluInt {
        op: IntOp,
        d1: u32,
        r1: u32,
        r2: u32,
    },
    /// MVM on every MVMU whose mask bit is set (bit i = MVMU i). With `shift > 0` and
    /// `group > 0` the XbarIn is afterwards shuffled: inside each group of `group`
    /// entries, entries move down by `shift` and the last `shift` become zero (input
    /// reuse for sliding windows, paper §3).
    Mvm {
        mask: u32,
        shift: u32,
        group: u32,
    },
    /// Branch to absolute pc `target` when registers `r1` and `r2` are equal.
    Beq {
        r1: u32,
        r2: u32,
        target: u32,
    },
    Jmp {
        target: u32,
    },
    Hlt,
    Nop,
}

/// One tile instruction (executed by the tile's send/receive unit).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum TileInstr {
    /// Send `vec` packets of `width` words from shared memory `addr` to tile `target`,
    /// into its receive FIFO `fifo`; each word must be valid and its count is decremented.
    Send {
        addr: u32,
        fifo: u32,
        width: u32,
        target: u32,
        vec: u32,
    },
    /// Take `vec` packets of `width` words from receive FIFO `fifo` and write them at
    /// `addr` (blocks until the words are invalid), valid with count `counter`.
    Receive {
        addr: u32,
        fifo: u32,
        width: u32,
        counter: u32,
        vec: u32,
    },
    Halt,
}

/// Instruction class names used in statistics (one per mnemonic).
pub const CORE_CLASSES: [&str; 12] = [
    "set", "copy", "load", "store", "alu", "alui", "alu_int", "mvm", "beq", "jmp", "hlt", "nop",
];
pub const TILE_CLASSES: [&str; 3] = ["send", "receive", "halt"];

impl CoreInstr {
    pub fn class(&self) -> &'static str {
        match self {
            CoreInstr::Set { .. } => "set",
            CoreInstr::Copy { .. } => "copy",
            CoreInstr::Load { .. } => "load",
            CoreInstr::Store { .. } => "store",
            CoreInstr::Alu { .. } => "alu",
            CoreInstr::Alui { .. } => "alui",
            CoreInstr::AluInt { .. } => "alu_int",
            CoreInstr::Mvm { .. } => "mvm",
            CoreInstr::Beq { .. } => "beq",
            CoreInstr::Jmp { .. } => "jmp",
            CoreInstr::Hlt => "hlt",
            CoreInstr::Nop => "nop",
        }
    }
    pub fn class_index(&self) -> usize {
        match self {
            CoreInstr::Set { .. } => 0,
            CoreInstr::Copy { .. } => 1,
            CoreInstr::Load { .. } => 2,
            CoreInstr::Store { .. } => 3,
            CoreInstr::Alu { .. } => 4,
            CoreInstr::Alui { .. } => 5,
            CoreInstr::AluInt { .. } => 6,
            CoreInstr::Mvm { .. } => 7,
            CoreInstr::Beq { .. } => 8,
            CoreInstr::Jmp { .. } => 9,
            CoreInstr::Hlt => 10,
            CoreInstr::Nop => 11,
        }
    }
}

impl TileInstr {
    pub fn class(&self) -> &'static str {
        match self {
            TileInstr::Send { .. } => "send",
            TileInstr::Receive { .. } => "receive",
            TileInstr::Halt => "halt",
        }
    }
}

impl fmt::Display for CoreInstr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CoreInstr::Set { d1, imm, vec } => write!(f, "set d1={d1} imm={imm} vec={vec}"),
            CoreInstr::Copy { d1, r1, vec } => write!(f, "copy d1={d1} r1={r1} vec={vec}"),
            CoreInstr::Load { d1, r1, width, vec } => {
                write!(f, "load d1={d1} r1={r1} width={width} vec={vec}")
            }
            CoreInstr::Store {
                d1,
                r1,
                counter,
                width,
                vec,
            } => write!(
                f,
                "store d1={d1} r1={r1} counter={counter} width={width} vec={vec}"
            ),
            CoreInstr::Alu {
                op,
                d1,
                r1,
                r2,
                vec,
                fmt,
            } => {
                write!(f, "alu {} d1={d1} r1={r1} r2={r2} vec={vec}", op.name())?;
                if let Some(x) = fmt {
                    write!(f, " fmt={x}")?;
                }
                Ok(())
            }
            CoreInstr::Alui {
                op,
                d1,
                r1,
                imm,
                vec,
                fmt,
            } => {
                write!(f, "alui {} d1={d1} r1={r1} imm={imm} vec={vec}", op.name())?;
                if let Some(x) = fmt {
                    write!(f, " fmt={x}")?;
                }
                Ok(())
            }
            CoreInstr::AluInt { op, d1, r1, r2 } => {
                write!(f, "alu_int {} d1={d1} r1={r1} r2={r2}", op.name())
            }
            CoreInstr::Mvm { mask, shift, group } => {
                write!(f, "mvm mask=")?;
                let n = (32 - mask.leading_zeros()).max(1);
                for i in 0..n {
                    f.write_str(if (mask >> i) & 1 == 1 { "1" } else { "0" })?;
                }
                if *shift != 0 || *group != 0 {
                    write!(f, " shift={shift} group={group}")?;
                }
                Ok(())
            }
            CoreInstr::Beq { r1, r2, target } => write!(f, "beq r1={r1} r2={r2} target={target}"),
            CoreInstr::Jmp { target } => write!(f, "jmp target={target}"),
            CoreInstr::Hlt => f.write_str("hlt"),
            CoreInstr::Nop => f.write_str("nop"),
        }
    }
}

impl fmt::Display for TileInstr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TileInstr::Send {
                addr,
                fifo,
                width,
                target,
                vec,
            } => write!(
                f,
                "send addr={addr} fifo={fifo} width={width} target={target} vec={vec}"
            ),
            TileInstr::Receive {
                addr,
                fifo,
                width,
                counter,
                vec,
            } => write!(
                f,
                "receive addr={addr} fifo={fifo} width={width} counter={counter} vec={vec}"
            ),
            TileInstr::Halt => f.write_str("halt"),
        }
    }
}

/// Assembly syntax error with its 1-based line number.
#[derive(Debug, thiserror::Error, PartialEq)]
#[error("assembly line {line}: {msg} (in `{text}`)")]
pub struct AsmError {
    pub line: usize,
    pub text: String,
    pub msg: String,
}

struct Fields<'a> {
    kv: Vec<(&'a str, &'a str)>,
}

impl<'a> Fields<'a> {
    fn new(toks: &[&'a str]) -> Result<Self, String> {
        let mut kv = Vec::new();
        for t in toks {
            let (k, v) = t
                .split_once('=')
                .ok_or_else(|| format!("expected key=value, found `{t}`"))?;
            kv.push((k, v));
        }
        Ok(Fields { kv })
    }
    fn raw(&self, key: &str) -> Result<&'a str, String> {
        self.kv
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .ok_or_else(|| format!("missing field `{key}=`"))
    }
    fn u(&self, key: &str) -> Result<u32, String> {
        let v = self.raw(key)?;
        v.parse::<u32>()
            .map_err(|_| format!("field `{key}` must be a non-negative integer, found `{v}`"))
    }
    fn opt_u(&self, key: &str) -> Result<u32, String> {
        if self.kv.iter().any(|(k, _)| *k == key) {
            self.u(key)
        } else {
            Ok(0)
        }
    }
    fn i(&self, key: &str) -> Result<i32, String> {
        let v = self.raw(key)?;
        v.parse::<i32>()
            .map_err(|_| format!("field `{key}` must be an integer, found `{v}`"))
    }
    fn fmt(&self) -> Result<Option<AluFmt>, String> {
        match self.kv.iter().find(|(k, _)| *k == "fmt") {
            None => Ok(None),
            Some((_, v)) => AluFmt::parse(v).map(Some).ok_or_else(|| {
                format!(
                    "field `fmt` must be three fraction bit counts 0..=63 as a.b.d, found `{v}`"
                )
            }),
        }
    }
    fn check_known(&self, known: &[&str]) -> Result<(), String> {
        for (k, _) in &self.kv {
            if !known.contains(k) {
                return Err(format!("unknown field `{k}` (expected {known:?})"));
            }
        }
        Ok(())
    }
}

fn strip(line: &str) -> &str {
    line.split('#').next().unwrap_or("").trim()
}

fn parse_core_line(s: &str) -> Result<CoreInstr, String> {
    let toks: Vec<&str> = s.split_whitespace().collect();
    let (mn, rest) = (toks[0], &toks[1..]);
    let aluop = |rest: &[&str]| -> Result<AluOp, String> {
        let name = rest.first().ok_or("missing ALU function name")?;
        AluOp::parse(name).ok_or_else(|| format!("unknown ALU function `{name}`"))
    };
    Ok(match mn {
        "set" => {
            let f = Fields::new(rest)?;
            f.check_known(&["d1", "imm", "vec"])?;
            CoreInstr::Set {
                d1: f.u("d1")?,
                imm: f.i("imm")?,
                vec: f.u("vec")?,
            }
        }
        "copy" => {
            let f = Fields::new(rest)?;
            f.check_known(&["d1", "r1", "vec"])?;
            CoreInstr::Copy {
                d1: f.u("d1")?,
                r1: f.u("r1")?,
                vec: f.u("vec")?,
            }
        }
        "load" => {
            let f = Fields::new(rest)?;
            f.check_known(&["d1", "r1", "width", "vec"])?;
            CoreInstr::Load {
                d1: f.u("d1")?,
                r1: f.u("r1")?,
                width: f.u("width")?,
                vec: f.u("vec")?,
            }
        }
        "store" => {
            let f = Fields::new(rest)?;
            f.check_known(&["d1", "r1", "counter", "width", "vec"])?;
            CoreInstr::Store {
                d1: f.u("d1")?,
                r1: f.u("r1")?,
                counter: f.u("counter")?,
                width: f.u("width")?,
                vec: f.u("vec")?,
            }
        }
        "alu" => {
            let op = aluop(rest)?;
            let f = Fields::new(&rest[1..])?;
            f.check_known(&["d1", "r1", "r2", "vec", "fmt"])?;
            CoreInstr::Alu {
                op,
                d1: f.u("d1")?,
                r1: f.u("r1")?,
                r2: f.u("r2")?,
                vec: f.u("vec")?,
                fmt: f.fmt()?,
            }
        }
        "alui" => {
            let op = aluop(rest)?;
            let f = Fields::new(&rest[1..])?;
            f.check_known(&["d1", "r1", "imm", "vec", "fmt"])?;
            CoreInstr::Alui {
                op,
                d1: f.u("d1")?,
                r1: f.u("r1")?,
                imm: f.i("imm")?,
                vec: f.u("vec")?,
                fmt: f.fmt()?,
            }
        }
        "alu_int" => {
            let name = rest.first().ok_or("missing integer ALU function name")?;
            let op = IntOp::parse(name).ok_or_else(|| format!("unknown alu_int op `{name}`"))?;
            let f = Fields::new(&rest[1..])?;
            f.check_known(&["d1", "r1", "r2"])?;
            CoreInstr::AluInt {
                op,
                d1: f.u("d1")?,
                r1: f.u("r1")?,
                r2: f.u("r2")?,
            }
        }
        "mvm" => {
            let f = Fields::new(rest)?;
            f.check_known(&["mask", "shift", "group"])?;
            let m = f.raw("mask")?;
            if m.is_empty() || m.len() > 32 || !m.chars().all(|c| c == '0' || c == '1') {
                return Err(format!(
                    "mask must be a string of 0/1 (bit per MVMU), found `{m}`"
                ));
            }
            let mask = m
                .chars()
                .enumerate()
                .fold(0u32, |a, (i, c)| a | ((c == '1') as u32) << i);
            CoreInstr::Mvm {
                mask,
                shift: f.opt_u("shift")?,
                group: f.opt_u("group")?,
            }
        }
        "beq" => {
            let f = Fields::new(rest)?;
            f.check_known(&["r1", "r2", "target"])?;
            CoreInstr::Beq {
                r1: f.u("r1")?,
                r2: f.u("r2")?,
                target: f.u("target")?,
            }
        }
        "jmp" => {
            let f = Fields::new(rest)?;
            f.check_known(&["target"])?;
            CoreInstr::Jmp {
                target: f.u("target")?,
            }
        }
        "hlt" if rest.is_empty() => CoreInstr::Hlt,
        "nop" if rest.is_empty() => CoreInstr::Nop,
        "hlt" | "nop" => return Err(format!("`{mn}` takes no operands")),
        _ => return Err(format!("unknown core mnemonic `{mn}`")),
    })
}

fn parse_tile_line(s: &str) -> Result<TileInstr, String> {
    let toks: Vec<&str> = s.split_whitespace().collect();
    let (mn, rest) = (toks[0], &toks[1..]);
    Ok(match mn {
        "send" => {
            let f = Fields::new(rest)?;
            f.check_known(&["addr", "fifo", "width", "target", "vec"])?;
            TileInstr::Send {
                addr: f.u("addr")?,
                fifo: f.u("fifo")?,
                width: f.u("width")?,
                target: f.u("target")?,
                vec: f.u("vec")?,
            }
        }
        "receive" => {
            let f = Fields::new(rest)?;
            f.check_known(&["addr", "fifo", "width", "counter", "vec"])?;
            TileInstr::Receive {
                addr: f.u("addr")?,
                fifo: f.u("fifo")?,
                width: f.u("width")?,
                counter: f.u("counter")?,
                vec: f.u("vec")?,
            }
        }
        "halt" if rest.is_empty() => TileInstr::Halt,
        _ => return Err(format!("unknown tile mnemonic `{mn}`")),
    })
}

fn parse_lines<T>(src: &str, f: fn(&str) -> Result<T, String>) -> Result<Vec<T>, AsmError> {
    let mut out = Vec::new();
    for (i, line) in src.lines().enumerate() {
        let s = strip(line);
        if s.is_empty() {
            continue;
        }
        out.push(f(s).map_err(|msg| AsmError {
            line: i + 1,
            text: line.to_string(),
            msg,
        })?);
    }
    Ok(out)
}

/// Parse core assembly (one instruction per line, `#` comments).
pub fn parse_core(src: &str) -> Result<Vec<CoreInstr>, AsmError> {
    parse_lines(src, parse_core_line)
}

/// Parse tile assembly.
pub fn parse_tile(src: &str) -> Result<Vec<TileInstr>, AsmError> {
    parse_lines(src, parse_tile_line)
}

/// Print a program, one instruction per line.
pub fn print<T: fmt::Display>(prog: &[T]) -> String {
    let mut s = String::new();
    for i in prog {
        s.push_str(&i.to_string());
        s.push('\n');
    }
    s
}
