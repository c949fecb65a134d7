//! The loop-nest IR: a program is an ordered list of nests over tensors; each nest has
//! an iteration domain (parallel and reduction dimensions with constant extents), a
//! body of expression trees over affine loads, and one or more stores. It mirrors what
//! `linalg.generic` + `convert-linalg-to-parallel-loops` produce: one nest per linalg op,
//! parallel dims as one `scf.parallel`, reduction dims as an inner `scf.for`.

use pimkit_ir::{DType, Tensor};
use serde::Serialize;
use std::sync::Arc;

pub type TensorId = usize;
pub type AllocId = usize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum DimKind {
    Parallel,
    Reduction,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Dim {
    pub kind: DimKind,
    pub extent: usize,
}

/// What a nest does, for reports and for the offload stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NestKind {
    /// Writes a constant (`linalg.fill`).
    Fill,
    /// Moves data without arithmetic (transpose, concat, pad, gather, broadcast copies).
    Copy,
    /// One output element per iteration from the inputs at the same point.
    Elementwise,
    /// Folds reduction dims into an accumulator (sum, max, mean's sum).
    Reduction,
    /// Multiply-accumulate contraction (matmul, convolution).
    Contraction,
}

impl NestKind {
    pub fn name(self) -> &'static str {
        match self {
            NestKind::Fill => "fill",
            NestKind::Copy => "copy",
            NestKind::Elementwise => "elementwise",
            NestKind::Reduction => "reduction",
            NestKind::Contraction => "contraction",
        }
    }
}

/// One index of a load or store: `Σ coeff·d + constant (+ dynamic)`. The dynamic part is
/// an integer expression (Gather, reflect padding, tiling); it makes the access
/// non-affine, which the analysis reports.
#[derive(Clone, Debug, PartialEq)]
pub struct Index {
    pub terms: Vec<(usize, i64)>,
    pub constant: i64,
    pub dynamic: Option<Box<Expr>>,
}

impl Index {
    pub fn dim(d: usize) -> Index {
        Index {
            terms: vec![(d, 1)],
            constant: 0,
            dynamic: None,
        }
    }
    pub fn c(k: i64) -> Index {
        Index {
            terms: vec![],
            constant: k,
            dynamic: None,
        }
    }
    pub fn affine(terms: Vec<(usize, i64)>, constant: i64) -> Index {
        Index {
            terms: terms.into_iter().filter(|t| t.1 != 0).collect(),
            constant,
            dynamic: None,
        }
    }
    /// A data-dependent index (an i64 expression).
    pub fn dynamic(e: Expr) -> Index {
        Index {
            terms: vec![],
            constant: 0,
            dynamic: Some(Box::new(e)),
        }
    }
    pub fn coeff(&self, d: usize) -> i64 {
        self.terms.iter().filter(|t| t.0 == d).map(|t| t.1).sum()
    }
}

/// Elementwise one-operand functions the body can use. Composite activations (gelu,
/// softplus, ...) are built from these by the lowering, so the instruction estimate
/// sees their expansion.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum UFn {
    Neg,
    Abs,
    Exp,
    Log,
    Sqrt,
    Rsqrt,
    Recip,
    Tanh,
    Erf,
    Sin,
    Cos,
    Floor,
    Ceil,
    /// Round half to even.
    Round,
    Not,
    IsNaN,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Asinh,
    Acosh,
    Atanh,
    /// Bitwise complement (integers).
    BitNot,
}

impl UFn {
    /// Transcendental functions that cost a polynomial evaluation (like sin/cos).
    pub fn is_trig(self) -> bool {
        matches!(
            self,
            UFn::Sin
                | UFn::Cos
                | UFn::Tan
                | UFn::Asin
                | UFn::Acos
                | UFn::Atan
                | UFn::Sinh
                | UFn::Cosh
                | UFn::Asinh
                | UFn::Acosh
                | UFn::Atanh
        )
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum BFn {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Min,
    Pow,
    /// C fmod / integer remainder (sign of the dividend).
    Rem,
    Eq,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
    Xor,
    /// Bitwise ops and shifts (unsigned integers for the shifts).
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
}

impl BFn {
    pub fn is_compare(self) -> bool {
        matches!(
            self,
            BFn::Eq | BFn::Lt | BFn::Le | BFn::Gt | BFn::Ge | BFn::And | BFn::Or | BFn::Xor
        )
    }
}

/// A body expression. Every expression has a dtype (see [`Expr::dtype`]); arithmetic
/// operands share one dtype, `Cast` converts.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Load {
        operand: usize,
        index: Vec<Index>,
    },
    Const {
        v: f64,
        dt: DType,
    },
    /// The current value of loop dimension `d` (i64).
    DimIndex(usize),
    Unary(UFn, Box<Expr>),
    Binary(BFn, Box<Expr>, Box<Expr>),
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    Cast(DType, Box<Expr>),
    /// `a * b + c` rounded once (C `fmaf`): onnxruntime's FMA kernels (QLinearAdd on AVX2).
    Fma(Box<Expr>, Box<Expr>, Box<Expr>),
}

#[allow(clippy::should_implement_trait)]
impl Expr {
    pub fn f(v: f64) -> Expr {
        Expr::Const { v, dt: DType::F32 }
    }
    pub fn k(v: f64, dt: DType) -> Expr {
        Expr::Const { v, dt }
    }
    pub fn i(v: i64) -> Expr {
        Expr::Const {
            v: v as f64,
            dt: DType::I64,
        }
    }
    pub fn un(f: UFn, a: Expr) -> Expr {
        Expr::Unary(f, Box::new(a))
    }
    pub fn bin(f: BFn, a: Expr, b: Expr) -> Expr {
        Expr::Binary(f, Box::new(a), Box::new(b))
    }
    pub fn add(a: Expr, b: Expr) -> Expr {
        Expr::bin(BFn::Add, a, b)
    }
    pub fn sub(a: Expr, b: Expr) -> Expr {
        Expr::bin(BFn::Sub, a, b)
    }
    pub fn mul(a: Expr, b: Expr) -> Expr {
        Expr::bin(BFn::Mul, a, b)
    }
    pub fn div(a: Expr, b: Expr) -> Expr {
        Expr::bin(BFn::Div, a, b)
    }
    pub fn max(a: Expr, b: Expr) -> Expr {
        Expr::bin(BFn::Max, a, b)
    }
    pub fn min(a: Expr, b: Expr) -> Expr {
        Expr::bin(BFn::Min, a, b)
    }
    pub fn select(c: Expr, a: Expr, b: Expr) -> Expr {
        Expr::Select(Box::new(c), Box::new(a), Box::new(b))
    }
    pub fn cast(dt: DType, a: Expr) -> Expr {
        Expr::Cast(dt, Box::new(a))
    }
    pub fn fma(a: Expr, b: Expr, c: Expr) -> Expr {
        Expr::Fma(Box::new(a), Box::new(b), Box::new(c))
    }

    /// The dtype of the expression given the dtypes of the nest's operands.
    pub fn dtype(&self, operand_dtypes: &[DType]) -> DType {
        match self {
            Expr::Load { operand, .. } => operand_dtypes[*operand],
            Expr::Const { dt, .. } => *dt,
            Expr::DimIndex(_) => DType::I64,
            Expr::Unary(UFn::IsNaN, _) => DType::Bool,
            Expr::Unary(_, a) => a.dtype(operand_dtypes),
            Expr::Binary(f, a, _) => {
                if f.is_compare() {
                    DType::Bool
                } else {
                    a.dtype(operand_dtypes)
                }
            }
            Expr::Select(_, a, _) | Expr::Fma(a, _, _) => a.dtype(operand_dtypes),
            Expr::Cast(dt, _) => *dt,
        }
    }

    /// Visit this expression and every sub-expression (including dynamic indices).
    pub fn visit(&self, f: &mut dyn FnMut(&Expr)) {
        f(self);
        match self {
            Expr::Load { index, .. } => {
                for ix in index {
                    if let Some(d) = &ix.dynamic {
                        d.visit(f);
                    }
                }
            }
            Expr::Const { .. } | Expr::DimIndex(_) => {}
            Expr::Unary(_, a) | Expr::Cast(_, a) => a.visit(f),
            Expr::Binary(_, a, b) => {
                a.visit(f);
                b.visit(f);
            }
            Expr::Select(c, a, b) | Expr::Fma(c, a, b) => {
                c.visit(f);
                a.visit(f);
                b.visit(f);
            }
        }
    }
}

/// How a nest uses an operand: `ins` only, `outs` only, or an `outs` operand whose old
/// contents the body reads (an accumulator or a partial update).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    In,
    Out,
    InOut,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Operand {
    pub tensor: TensorId,
    pub role: Role,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Store {
    pub operand: usize,
    pub index: Vec<Index>,
    pub value: Expr,
}

/// One loop nest: the offload candidate.
#[derive(Clone, Debug, PartialEq)]
pub struct Nest {
    pub id: usize,
    /// Graph op name (`Softmax`, `MatMul`, ...).
    pub op: String,
    /// Graph node name.
    pub node: String,
    /// The framework operator the node belongs to (`Node::operator`: its `source`, else
    /// its name): the unit of offload's operator granularity.
    pub source: String,
    pub kind: NestKind,
    /// What this nest is within the op's decomposition (`max.init`, `exp`, `sum`).
    pub label: String,
    pub dims: Vec<Dim>,
    pub operands: Vec<Operand>,
    /// All values are computed from the state before the iteration, then stored (as the
    /// operands of `linalg.yield`).
    pub stores: Vec<Store>,
}

impl Nest {
    /// Whether every load of operand `j` in the body uses exactly `index`.
    pub fn loads_only_at(&self, j: usize, index: &[Index]) -> bool {
        let mut ok = true;
        for s in &self.stores {
            s.value.visit(&mut |e| {
                if let Expr::Load { operand, index: ix } = e
                    && *operand == j
                    && ix.as_slice() != index
                {
                    ok = false;
                }
            });
        }
        ok
    }
}

/// Where a tensor comes from.
#[derive(Clone, Debug, PartialEq)]
pub enum TensorDef {
    /// Graph input number `index`.
    Input { index: usize },
    /// A weight; `None` in shape-only graphs.
    Const { data: Option<Arc<Tensor>> },
    /// A one-element constant folded into the body as an immediate (not memory).
    Scalar(f64),
    /// Produced by nest `nest`; `init` is the tensor whose buffer it updates
    /// (destination-passing style: the fill before a reduction).
    Result { nest: usize, init: Option<TensorId> },
    /// A view (reshape, slice, split, identity) of `root`'s storage with this tensor's
    /// `offset`/`strides`.
    View { root: TensorId },
    /// Computed inside nest `into` by elementwise fusion (`LowerOptions`); never stored.
    Fused { into: usize },
    /// A result nothing reads, removed with its store by the fusion pipeline (e.g. the
    /// argmax of softmax's max reduction).
    Dead,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TensorInfo {
    pub name: String,
    pub dtype: DType,
    pub shape: Vec<usize>,
    pub def: TensorDef,
    /// Element offset and strides into the root tensor's storage (row-major for roots).
    pub offset: i64,
    pub strides: Vec<i64>,
    /// Filled by bufferization: the allocation holding this tensor (None for scalars).
    pub alloc: Option<AllocId>,
}

impl TensorInfo {
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }
    pub fn bytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }
    pub fn is_memory(&self) -> bool {
        !matches!(
            self.def,
            TensorDef::Scalar(_) | TensorDef::Fused { .. } | TensorDef::Dead
        )
    }
    /// Root tensor id (itself unless a view).
    pub fn root(&self, me: TensorId) -> TensorId {
        match self.def {
            TensorDef::View { root } => root,
            // only views have another root
            _ => me,
        }
    }
}

/// Row-major strides of a shape.
pub fn row_major(shape: &[usize]) -> Vec<i64> {
    let mut s = vec![1i64; shape.len()];
    for i in (0..shape.len().saturating_sub(1)).rev() {
        s[i] = s[i + 1] * shape[i + 1] as i64;
    }
    s
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AllocKind {
    /// A graph input (caller-provided; never written).
    Input,
    /// A weight (never written).
    Const,
    /// Produced by nests.
    Temp,
}

/// One buffer after bufferization.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alloc {
    pub id: AllocId,
    /// Name of the first tensor placed in it.
    pub name: String,
    pub dtype: DType,
    pub elems: usize,
    pub kind: AllocKind,
    /// Some graph output lives in this buffer.
    pub holds_output: bool,
    /// Tensors placed in this buffer (in-place reuse puts several here).
    pub tensors: Vec<TensorId>,
}

impl Alloc {
    pub fn bytes(&self) -> usize {
        self.elems * self.dtype.size()
    }
}

/// A lowered (and bufferized) program.
#[derive(Clone, Debug, PartialEq)]
pub struct Program {
    pub name: String,
    pub tensors: Vec<TensorInfo>,
    pub nests: Vec<Nest>,
    pub allocs: Vec<Alloc>,
    /// Graph inputs (tensor ids, graph input order).
    pub inputs: Vec<TensorId>,
    /// Graph outputs (tensor ids, graph output order).
    pub outputs: Vec<TensorId>,
}

impl Program {
    pub fn tensor(&self, t: TensorId) -> &TensorInfo {
        &self.tensors[t]
    }
    /// The dtypes of a nest's operands, for [`Expr::dtype`].
    pub fn operand_dtypes(&self, n: &Nest) -> Vec<DType> {
        n.operands
            .iter()
            .map(|o| self.tensors[o.tensor].dtype)
            .collect()
    }
    /// The allocation an operand resolves to (None when it is not memory).
    pub fn operand_alloc(&self, o: &Operand) -> Option<AllocId> {
        self.tensors[o.tensor].alloc
    }
    /// Number of nests per graph op name, in first-seen order.
    pub fn nests_per_op(&self) -> Vec<(String, usize)> {
        let mut v: Vec<(String, usize)> = Vec::new();
        for n in &self.nests {
            match v.iter_mut().find(|e| e.0 == n.op) {
                Some(e) => e.1 += 1,
                None => v.push((n.op.clone(), 1)),
            }
        }
        v
    }
    /// Number of nests per graph node, in program order.
    pub fn nests_per_node(&self) -> Vec<(String, usize)> {
        let mut v: Vec<(String, usize)> = Vec::new();
        for n in &self.nests {
            match v.last_mut() {
                Some(e) if e.0 == n.node => e.1 += 1,
                _ => v.push((n.node.clone(), 1)),
            }
        }
        v
    }
}
