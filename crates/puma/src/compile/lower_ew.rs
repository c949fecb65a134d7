//! Elementwise ops on the VFU: unary functions (ROM lookups and compositions), binary
//! ops with broadcasting, Pow by a constant exponent, Clip and BatchNormalization
//! (folded into a per-channel multiply and add).

use super::CompileError;
use super::lower::{LT, Lb, Val, const_f32, input, unsupported};
use crate::isa::AluOp;
use pimkit_ir::operand::{batch_norm, binary, unary};
use pimkit_ir::{BinaryOp, Op, UnaryOp};

fn unary_alu(u: &UnaryOp) -> Option<AluOp> {
    Some(match u {
        UnaryOp::Relu => AluOp::Relu,
        UnaryOp::Sigmoid => AluOp::Sig,
        UnaryOp::Tanh => AluOp::Tanh,
        UnaryOp::Exp => AluOp::Exp,
        UnaryOp::Log => AluOp::Log,
        UnaryOp::Erf => AluOp::Erf,
        UnaryOp::Sqrt => AluOp::Sqrt,
        // no single ALU op: `unary` composes it or reports it unsupported
        _ => return None,
    })
}

fn binary_alu(b: &BinaryOp) -> Option<AluOp> {
    Some(match b {
        BinaryOp::Add => AluOp::Add,
        BinaryOp::Sub => AluOp::Sub,
        BinaryOp::Mul => AluOp::Mul,
        BinaryOp::Div => AluOp::Div,
        BinaryOp::Max => AluOp::Max,
        BinaryOp::Min => AluOp::Min,
        // no single ALU op: `lower` reports it unsupported
        _ => return None,
    })
}

fn len(p: &[super::Piece]) -> u32 {
    p.iter().map(|q| q.len).sum()
}

/// `x · (1 + f(s · x)) · 0.5` for GELU: `f` = erf with s = 1/√2, or the tanh form
/// tanh(√(2/π)·(x + 0.044715·x³)).
fn gelu(lb: &mut Lb, p: Vec<super::Piece>, tanh: bool) -> super::VId {
    let n = len(&p);
    let inner = if tanh {
        let x2 = lb.alu(AluOp::Mul, p.clone(), Some(p.clone()));
        let x3 = lb.alu(AluOp::Mul, Lb::whole(x2, n), Some(p.clone()));
        let c = lb.alui(AluOp::Mul, Lb::whole(x3, n), 0.044715);
        let s = lb.alu(AluOp::Add, p.clone(), Some(Lb::whole(c, n)));
        let k = lb.alui(
            AluOp::Mul,
            Lb::whole(s, n),
            (2.0 / std::f32::consts::PI).sqrt(),
        );
        lb.alu(AluOp::Tanh, Lb::whole(k, n), None)
    } else {
        let s = lb.alui(AluOp::Mul, p.clone(), std::f32::consts::FRAC_1_SQRT_2);
        lb.alu(AluOp::Erf, Lb::whole(s, n), None)
    };
    let one = lb.alui(AluOp::Add, Lb::whole(inner, n), 1.0);
    let half = lb.alui(AluOp::Mul, Lb::whole(one, n), 0.5);
    lb.alu(AluOp::Mul, p, Some(Lb::whole(half, n)))
}

fn unary(lb: &mut Lb, ni: usize, u: &UnaryOp) -> Result<LT, CompileError> {
    let x = lb.dyn_val(input(lb, ni, unary::X)?, "the input")?;
    if let Some(op) = unary_alu(u) {
        return Ok(lb.map_unary(&x, |lb, p| lb.alu(op, p, None)));
    }
    Ok(match *u {
        UnaryOp::Neg => lb.map_unary(&x, |lb, p| lb.alui(AluOp::Mul, p, -1.0)),
        UnaryOp::Abs => lb.map_unary(&x, |lb, p| {
            let n = lb.alui(AluOp::Mul, p.clone(), -1.0);
            let l = len(&p);
            lb.alu(AluOp::Max, p, Some(Lb::whole(n, l)))
        }),
        UnaryOp::Reciprocal => lb.map_unary(&x, |lb, p| {
            let ones = lb.const_pieces(&vec![1.0; len(&p) as usize]);
            lb.alu(AluOp::Div, ones, Some(p))
        }),
        UnaryOp::Softplus => lb.map_unary(&x, |lb, p| {
            let l = len(&p);
            let e = lb.alu(AluOp::Exp, p, None);
            let a = lb.alui(AluOp::Add, Lb::whole(e, l), 1.0);
            lb.alu(AluOp::Log, Lb::whole(a, l), None)
        }),
        UnaryOp::Gelu { tanh } => lb.map_unary(&x, |lb, p| gelu(lb, p, tanh)),
        UnaryOp::LeakyRelu { alpha } => lb.map_unary(&x, |lb, p| {
            let l = len(&p);
            let n = lb.alui(AluOp::Mul, p.clone(), alpha);
            let op = if alpha <= 1.0 { AluOp::Max } else { AluOp::Min };
            lb.alu(op, p, Some(Lb::whole(n, l)))
        }),
        UnaryOp::HardSigmoid { alpha, beta } => lb.map_unary(&x, |lb, p| {
            let l = len(&p);
            let a = lb.alui(AluOp::Mul, p, alpha);
            let b = lb.alui(AluOp::Add, Lb::whole(a, l), beta);
            let c = lb.alui(AluOp::Max, Lb::whole(b, l), 0.0);
            lb.alui(AluOp::Min, Lb::whole(c, l), 1.0)
        }),
        // x · HardSigmoid(x) with ONNX's alpha = 1/6, beta = 0.5.
        UnaryOp::HardSwish => lb.map_unary(&x, |lb, p| {
            let l = len(&p);
            let a = lb.alui(AluOp::Mul, p.clone(), 1.0 / 6.0);
            let b = lb.alui(AluOp::Add, Lb::whole(a, l), 0.5);
            let c = lb.alui(AluOp::Max, Lb::whole(b, l), 0.0);
            let d = lb.alui(AluOp::Min, Lb::whole(c, l), 1.0);
            lb.alu(AluOp::Mul, p, Some(Lb::whole(d, l)))
        }),
        // every other unary op is named in the unsupported error
        _ => {
            return Err(unsupported(
                lb.g,
                ni as u32,
                format!(
                    "unary {} has no PUMA VFU lowering (supported: Relu Sigmoid Tanh Exp Log Erf Sqrt Reciprocal Neg Abs Softplus Gelu LeakyRelu HardSigmoid HardSwish)",
                    u.name()
                ),
            ));
        }
    })
}

/// `x ^ e` for a constant exponent: integers 1..=4 by repeated multiplication, 0.5 by
/// sqrt, -1 by reciprocal.
fn pow(lb: &mut Lb, ni: usize, out_shape: &[usize]) -> Result<LT, CompileError> {
    let g = lb.g;
    let ev = input(lb, ni, binary::B)?;
    let e = lb
        .const_data(ev)
        .filter(|v| !v.is_empty() && v.iter().all(|&x| x == v[0]))
        .ok_or_else(|| unsupported(g, ni as u32, "Pow needs one constant exponent"))?[0];
    let x = lb.dyn_val(input(lb, ni, binary::A)?, "the base")?;
    if x.shape != out_shape {
        return Err(unsupported(g, ni as u32, "Pow broadcasting its base"));
    }
    Ok(match e {
        0.5 => lb.map_unary(&x, |lb, p| lb.alu(AluOp::Sqrt, p, None)),
        -1.0 => lb.map_unary(&x, |lb, p| {
            let ones = lb.const_pieces(&vec![1.0; len(&p) as usize]);
            lb.alu(AluOp::Div, ones, Some(p))
        }),
        e if e.fract() == 0.0 && (1.0..=4.0).contains(&e) => lb.map_unary(&x, |lb, p| {
            let l = len(&p);
            let mut acc = p.clone();
            for _ in 1..e as usize {
                acc = Lb::whole(lb.alu(AluOp::Mul, acc, Some(p.clone())), l);
            }
            if e == 1.0 {
                lb.alui(AluOp::Add, acc, 0.0)
            } else {
                acc[0].v
            }
        }),
        // other exponents are named in the unsupported error
        _ => {
            return Err(unsupported(
                g,
                ni as u32,
                format!("Pow with exponent {e} (supported: 1, 2, 3, 4, 0.5, -1)"),
            ));
        }
    })
}

/// Lower an elementwise node; `Ok(None)` when it is not one.
pub(super) fn lower(lb: &mut Lb, ni: usize) -> Result<Option<LT>, CompileError> {
    let g = lb.g;
    let node = &g.nodes[ni];
    let out_shape = g.ty(node.outputs[0]).shape.clone();
    Ok(Some(match &node.op {
        Op::Unary(u) => unary(lb, ni, u)?,
        Op::Binary(BinaryOp::Pow) => pow(lb, ni, &out_shape)?,
        Op::Binary(b) => {
            let op = binary_alu(b).ok_or_else(|| {
                unsupported(
                    g,
                    ni as u32,
                    "supported binary ops: Add Sub Mul Div Max Min Pow",
                )
            })?;
            let a = lb.val(input(lb, ni, binary::A)?)?;
            let bv = lb.val(input(lb, ni, binary::B)?)?;
            lb.binary(op, &a, &bv, &out_shape)
        }
        Op::Clip { min, max } => {
            let x = lb.dyn_val(input(lb, ni, unary::X)?, "the input")?;
            let (mn, mx) = (*min, *max);
            lb.map_unary(&x, |lb, p| {
                let l = len(&p);
                let mut cur = p;
                if let Some(m) = mn {
                    cur = Lb::whole(lb.alui(AluOp::Max, cur, m), l);
                }
                if let Some(m) = mx {
                    cur = Lb::whole(lb.alui(AluOp::Min, cur, m), l);
                }
                if mn.is_none() && mx.is_none() {
                    return lb.alui(AluOp::Add, cur, 0.0);
                }
                cur[0].v
            })
        }
        Op::BatchNorm { epsilon } => {
            let x = lb.dyn_val(input(lb, ni, unary::X)?, "the input")?;
            let get = |lb: &mut Lb, i: usize| -> Result<Vec<f32>, CompileError> {
                let v = input(lb, ni, i)?;
                const_f32(g, v, &mut lb.shape_only).ok_or_else(|| {
                    unsupported(g, ni as u32, "scale/bias/mean/var must be constants")
                })
            };
            let (s, b, m, var) = (
                get(lb, batch_norm::SCALE)?,
                get(lb, batch_norm::B)?,
                get(lb, batch_norm::INPUT_MEAN)?,
                get(lb, batch_norm::INPUT_VAR)?,
            );
            let c = x.shape[1];
            let mut cshape = vec![1; x.shape.len() - 1];
            cshape[0] = c;
            let scale: Vec<f32> = (0..c).map(|i| s[i] / (var[i] + epsilon).sqrt()).collect();
            let shift: Vec<f32> = (0..c).map(|i| b[i] - m[i] * scale[i]).collect();
            let t = lb.binary(
                AluOp::Mul,
                &Val::Dyn(x),
                &Val::Const {
                    shape: cshape.clone(),
                    data: scale,
                },
                &out_shape,
            );
            lb.binary(
                AluOp::Add,
                &Val::Dyn(t),
                &Val::Const {
                    shape: cshape,
                    data: shift,
                },
                &out_shape,
            )
        }
        // not an elementwise op: lower_node tries the next pass, whose last arm names it
        _ => return Ok(None),
    }))
}
