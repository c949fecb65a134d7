//! LSTM and GRU: per direction an input matrix (I x G*H) and a recurrent matrix
//! (H x G*H) on crossbars. The input products of all time steps are one crossbar call;
//! the recurrent product runs once per step on the current hidden states. The cell itself
//! is the reference interpreter's: each step of each sequence runs the node's kernel for
//! one time step with the crossbar's errors added to the gate biases (Wb + delta_W,
//! Rb + delta_R), which enter every gate exactly where the products do — for LSTM and for
//! GRU with linear_before_reset = 1 (PyTorch's export). With linear_before_reset = 0 the
//! recurrent product of the candidate gate takes r * h, formed inside the cell; its
//! crossbar error is then evaluated on h (a documented approximation).

use super::{LayerRun, input, layer_err};
use crate::error::Result;
use pimkit_ir::operand::rnn as opd;
use pimkit_ir::{Node, Op, RnnAttrs, RnnDirection, Tensor, TensorType};

/// Per direction: W^T (I x G*H) and R^T (H x G*H).
pub(super) fn weight_mats(
    node: &Node,
    w: &Tensor,
    r: &Tensor,
) -> Result<Vec<(usize, usize, Vec<f32>)>> {
    if w.rank() != 3 || r.rank() != 3 || w.shape[0] != r.shape[0] || w.shape[1] != r.shape[1] {
        return Err(layer_err(
            node,
            format!("unexpected W {:?} / R {:?}", w.shape, r.shape),
        ));
    }
    let (dirs, gh) = (w.shape[0], w.shape[1]);
    let (wv, rv) = (w.to_f32_vec(), r.to_f32_vec());
    let mut out = Vec::new();
    for d in 0..dirs {
        for (v, k) in [(&wv, w.shape[2]), (&rv, r.shape[2])] {
            let base = d * gh * k;
            let mut m = vec![0f32; k * gh];
            for g in 0..gh {
                for i in 0..k {
                    m[i * gh + g] = v[base + g * k + i];
                }
            }
            out.push((k, gh, m));
        }
    }
    Ok(out)
}

/// A state tensor [dirs, batch, h] (or batch-first [batch, dirs, h]) as [dirs][batch] rows.
fn states(t: Option<&Tensor>, dirs: usize, batch: usize, h: usize, bf: bool) -> Vec<Vec<Vec<f32>>> {
    let v = t.map(|t| t.to_f32_vec());
    (0..dirs)
        .map(|d| {
            (0..batch)
                .map(|b| match &v {
                    Some(v) => {
                        let off = if bf {
                            (b * dirs + d) * h
                        } else {
                            (d * batch + b) * h
                        };
                        v[off..off + h].to_vec()
                    }
                    None => vec![0.0; h],
                })
                .collect()
        })
        .collect()
}

pub(super) fn eval(
    run: &LayerRun,
    node: &Node,
    a: &RnnAttrs,
    ins: &[Option<&Tensor>],
    out_tys: &[&TensorType],
) -> Result<Vec<Tensor>> {
    let lstm = matches!(node.op, Op::Lstm(_));
    let x = input(node, ins, opd::X, "X")?;
    let (w, r) = (
        input(node, ins, opd::W, "W")?,
        input(node, ins, opd::R, "R")?,
    );
    if ins.get(opd::SEQUENCE_LENS).copied().flatten().is_some() {
        return Err(layer_err(node, "sequence_lens is not supported"));
    }
    if x.rank() != 3 {
        return Err(layer_err(node, "X must be 3-D"));
    }
    let bf = a.batch_first;
    let (seq, batch, feat) = if bf {
        (x.shape[1], x.shape[0], x.shape[2])
    } else {
        (x.shape[0], x.shape[1], x.shape[2])
    };
    let (h, dirs) = (a.hidden_size, a.direction.num_directions());
    let gh = w.shape[1];
    let xv = x.to_f32_vec();
    // Sequence-major [seq * batch, feat].
    let mut xs = vec![0f32; seq * batch * feat];
    for t in 0..seq {
        for b in 0..batch {
            let src = if bf {
                (b * seq + t) * feat
            } else {
                (t * batch + b) * feat
            };
            xs[(t * batch + b) * feat..][..feat].copy_from_slice(&xv[src..src + feat]);
        }
    }
    let bias = ins.get(opd::B).copied().flatten().map(|t| t.to_f32_vec());
    let mut hs = states(
        ins.get(opd::INITIAL_H).copied().flatten(),
        dirs,
        batch,
        h,
        bf,
    );
    let mut cs = states(
        ins.get(opd::INITIAL_C).copied().flatten(),
        dirs,
        batch,
        h,
        bf,
    );
    let (wv, rv) = (w.to_f32_vec(), r.to_f32_vec());
    let one = RnnAttrs {
        hidden_size: h,
        direction: RnnDirection::Forward,
        linear_before_reset: a.linear_before_reset,
        batch_first: false,
    };
    let step_node = Node {
        op: if lstm { Op::Lstm(one) } else { Op::Gru(one) },
        ..node.clone()
    };
    let fty = x.dtype();
    let y_ty = TensorType::new(fty, vec![1, 1, 1, h]);
    let s_ty = TensorType::new(fty, vec![1, 1, h]);
    let step_tys: Vec<&TensorType> = if lstm {
        vec![&y_ty, &s_ty, &s_ty]
    } else {
        vec![&y_ty, &s_ty]
    };
    let mut y = vec![0f32; seq * dirs * batch * h];
    for d in 0..dirs {
        let wd = Tensor::from_f32(
            vec![1, gh, feat],
            wv[d * gh * feat..(d + 1) * gh * feat].to_vec(),
        );
        let rd = Tensor::from_f32(vec![1, gh, h], rv[d * gh * h..(d + 1) * gh * h].to_vec());
        let (mw, mr) = (2 * d, 2 * d + 1);
        let (xc, xe) = run.inq[0].encode(&xs);
        let dw = run.float_error(mw, &xs, &xc, seq * batch, &xe, 0);
        let reverse = a.direction == RnnDirection::Reverse || d == 1;
        let order: Vec<usize> = if reverse {
            (0..seq).rev().collect()
        } else {
            (0..seq).collect()
        };
        for (si, &t) in order.iter().enumerate() {
            let hprev: Vec<f32> = hs[d].concat();
            let (hc, he) = run.inq[1].encode(&hprev);
            let dr = run.float_error(mr, &hprev, &hc, batch, &he, 1 + si as u64);
            for b in 0..batch {
                let mut bv: Vec<f32> = match &bias {
                    Some(v) => v[d * 2 * gh..(d + 1) * 2 * gh].to_vec(),
                    None => vec![0.0; 2 * gh],
                };
                for g in 0..gh {
                    bv[g] += dw[(t * batch + b) * gh + g] as f32;
                    bv[gh + g] += dr[b * gh + g] as f32;
                }
                let xt = Tensor::from_f32(
                    vec![1, 1, feat],
                    xs[(t * batch + b) * feat..][..feat].to_vec(),
                );
                let bt = Tensor::from_f32(vec![1, 2 * gh], bv);
                let h0 = Tensor::from_f32(vec![1, 1, h], hs[d][b].clone());
                let c0 = Tensor::from_f32(vec![1, 1, h], cs[d][b].clone());
                let mut step_ins: Vec<Option<&Tensor>> =
                    vec![Some(&xt), Some(&wd), Some(&rd), Some(&bt), None, Some(&h0)];
                if lstm {
                    step_ins.push(Some(&c0));
                }
                let outs = pimkit_interp::eval_node(&step_node, step_ins, step_tys.clone())?;
                hs[d][b] = outs[1].to_f32_vec();
                if lstm {
                    cs[d][b] = outs[2].to_f32_vec();
                }
                y[((t * dirs + d) * batch + b) * h..][..h].copy_from_slice(&hs[d][b]);
            }
        }
    }
    // Outputs in the node's layout: Y, Y_h, (Y_c).
    let mut outs = Vec::new();
    for (i, ty) in out_tys.iter().enumerate() {
        let v: Vec<f32> = match i {
            0 if bf => {
                let mut o = vec![0f32; y.len()];
                for t in 0..seq {
                    for d in 0..dirs {
                        for b in 0..batch {
                            let src = ((t * dirs + d) * batch + b) * h;
                            o[((b * seq + t) * dirs + d) * h..][..h]
                                .copy_from_slice(&y[src..src + h]);
                        }
                    }
                }
                o
            }
            0 => y.clone(),
            _ => {
                let st = if i == 1 { &hs } else { &cs };
                let mut o = vec![0f32; dirs * batch * h];
                for d in 0..dirs {
                    for b in 0..batch {
                        let off = if bf {
                            (b * dirs + d) * h
                        } else {
                            (d * batch + b) * h
                        };
                        o[off..off + h].copy_from_slice(&st[d][b]);
                    }
                }
                o
            }
        };
        let v64: Vec<f64> = v.iter().map(|&f| f as f64).collect();
        outs.push(Tensor::from_f64_as(ty.dtype, ty.shape.clone(), &v64));
    }
    Ok(outs)
}
