//! LSTM / GRU against a plain step-by-step implementation written here.
mod common;
use common::*;
use pimkit_ir::{Op, RnnAttrs, RnnDirection, Tensor};

fn sig(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// dot(W[row], v) for W [rows, cols] stored row-major.
fn dot(w: &[f32], row: usize, cols: usize, v: &[f64]) -> f64 {
    (0..cols).map(|j| w[row * cols + j] as f64 * v[j]).sum()
}

/// One direction of ONNX LSTM (gates i, o, f, c). x: [seq][batch][in]. Returns the
/// hidden state per processed time index, plus final (h, c).
#[allow(clippy::type_complexity)]
fn naive_lstm(
    x: &[Vec<Vec<f64>>],
    w: &[f32],
    r: &[f32],
    b: &[f32],
    hid: usize,
    h0: Vec<Vec<f64>>,
    c0: Vec<Vec<f64>>,
    reverse: bool,
) -> (Vec<Vec<Vec<f64>>>, Vec<Vec<f64>>, Vec<Vec<f64>>) {
    let seq = x.len();
    let inp = x[0][0].len();
    let (mut h, mut c) = (h0, c0);
    let mut ys = vec![vec![]; seq];
    let order: Vec<usize> = if reverse {
        (0..seq).rev().collect()
    } else {
        (0..seq).collect()
    };
    for t in order {
        for bi in 0..h.len() {
            let hp = h[bi].clone();
            let mut nh = vec![0.0; hid];
            for j in 0..hid {
                let gate = |g: usize| {
                    let row = g * hid + j;
                    dot(w, row, inp, &x[t][bi])
                        + dot(r, row, hid, &hp)
                        + b[row] as f64
                        + b[4 * hid + row] as f64
                };
                let (i, o, f, cc) = (sig(gate(0)), sig(gate(1)), sig(gate(2)), gate(3).tanh());
                c[bi][j] = f * c[bi][j] + i * cc;
                nh[j] = o * c[bi][j].tanh();
            }
            h[bi] = nh;
        }
        ys[t] = h.clone();
    }
    (ys, h, c)
}

/// One direction of ONNX GRU (gates z, r, h).
fn naive_gru(
    x: &[Vec<Vec<f64>>],
    w: &[f32],
    r: &[f32],
    b: &[f32],
    hid: usize,
    h0: Vec<Vec<f64>>,
    lbr: bool,
    reverse: bool,
) -> (Vec<Vec<Vec<f64>>>, Vec<Vec<f64>>) {
    let seq = x.len();
    let inp = x[0][0].len();
    let mut h = h0;
    let mut ys = vec![vec![]; seq];
    let order: Vec<usize> = if reverse {
        (0..seq).rev().collect()
    } else {
        (0..seq).collect()
    };
    for t in order {
        for bi in 0..h.len() {
            let hp = h[bi].clone();
            let xw =
                |g: usize, j: usize| dot(w, g * hid + j, inp, &x[t][bi]) + b[g * hid + j] as f64;
            let hr = |g: usize, j: usize, v: &[f64]| {
                dot(r, g * hid + j, hid, v) + b[3 * hid + g * hid + j] as f64
            };
            let z: Vec<f64> = (0..hid).map(|j| sig(xw(0, j) + hr(0, j, &hp))).collect();
            let rg: Vec<f64> = (0..hid).map(|j| sig(xw(1, j) + hr(1, j, &hp))).collect();
            let rh: Vec<f64> = (0..hid).map(|j| rg[j] * hp[j]).collect();
            let mut nh = vec![0.0; hid];
            for j in 0..hid {
                let cand = if lbr {
                    (xw(2, j) + rg[j] * hr(2, j, &hp)).tanh()
                } else {
                    (xw(2, j) + hr(2, j, &rh)).tanh()
                };
                nh[j] = (1.0 - z[j]) * cand + z[j] * hp[j];
            }
            h[bi] = nh;
        }
        ys[t] = h.clone();
    }
    (ys, h)
}

fn to_seq(x: &[f32], seq: usize, batch: usize, inp: usize) -> Vec<Vec<Vec<f64>>> {
    (0..seq)
        .map(|t| {
            (0..batch)
                .map(|b| {
                    (0..inp)
                        .map(|k| x[(t * batch + b) * inp + k] as f64)
                        .collect()
                })
                .collect()
        })
        .collect()
}

fn state(v: &[f32], dir: usize, batch: usize, hid: usize) -> Vec<Vec<f64>> {
    (0..batch)
        .map(|b| {
            (0..hid)
                .map(|j| v[(dir * batch + b) * hid + j] as f64)
                .collect()
        })
        .collect()
}

#[test]
fn lstm_bidirectional_matches_naive() {
    let (seq, batch, inp, hid) = (4, 2, 3, 5);
    let x = rand_f32(seq * batch * inp, 1);
    let w = rand_f32(2 * 4 * hid * inp, 2);
    let r = rand_f32(2 * 4 * hid * hid, 3);
    let b = rand_f32(2 * 8 * hid, 4);
    let h0 = rand_f32(2 * batch * hid, 5);
    let c0 = rand_f32(2 * batch * hid, 6);
    let attrs = RnnAttrs {
        hidden_size: hid,
        direction: RnnDirection::Bidirectional,
        linear_before_reset: false,
        batch_first: false,
    };
    let outs = run_node(
        Op::Lstm(attrs),
        vec![
            Some(f32t(&[seq, batch, inp], &x)),
            Some(f32t(&[2, 4 * hid, inp], &w)),
            Some(f32t(&[2, 4 * hid, hid], &r)),
            Some(f32t(&[2, 8 * hid], &b)),
            None,
            Some(f32t(&[2, batch, hid], &h0)),
            Some(f32t(&[2, batch, hid], &c0)),
        ],
    )
    .unwrap();
    let xs = to_seq(&x, seq, batch, inp);
    for dir in 0..2 {
        let (ys, hf, cf) = naive_lstm(
            &xs,
            &w[dir * 4 * hid * inp..],
            &r[dir * 4 * hid * hid..],
            &b[dir * 8 * hid..],
            hid,
            state(&h0, dir, batch, hid),
            state(&c0, dir, batch, hid),
            dir == 1,
        );
        let y = outs[0].as_f32().unwrap();
        for t in 0..seq {
            for bi in 0..batch {
                for j in 0..hid {
                    let got = y[((t * 2 + dir) * batch + bi) * hid + j];
                    assert!(
                        (got as f64 - ys[t][bi][j]).abs() < 1e-5,
                        "y t{t} d{dir} b{bi} j{j}"
                    );
                }
            }
        }
        for bi in 0..batch {
            for j in 0..hid {
                assert!(
                    (outs[1].as_f32().unwrap()[(dir * batch + bi) * hid + j] as f64 - hf[bi][j])
                        .abs()
                        < 1e-5
                );
                assert!(
                    (outs[2].as_f32().unwrap()[(dir * batch + bi) * hid + j] as f64 - cf[bi][j])
                        .abs()
                        < 1e-5
                );
            }
        }
    }
}

#[test]
fn gru_both_reset_modes_and_directions_match_naive() {
    let (seq, batch, inp, hid) = (3, 2, 4, 3);
    let x = rand_f32(seq * batch * inp, 11);
    let w = rand_f32(3 * hid * inp, 12);
    let r = rand_f32(3 * hid * hid, 13);
    let b = rand_f32(6 * hid, 14);
    for lbr in [false, true] {
        for dir in [RnnDirection::Forward, RnnDirection::Reverse] {
            let attrs = RnnAttrs {
                hidden_size: hid,
                direction: dir,
                linear_before_reset: lbr,
                batch_first: false,
            };
            let outs = run_node(
                Op::Gru(attrs),
                vec![
                    Some(f32t(&[seq, batch, inp], &x)),
                    Some(f32t(&[1, 3 * hid, inp], &w)),
                    Some(f32t(&[1, 3 * hid, hid], &r)),
                    Some(f32t(&[1, 6 * hid], &b)),
                ],
            )
            .unwrap();
            let (ys, hf) = naive_gru(
                &to_seq(&x, seq, batch, inp),
                &w,
                &r,
                &b,
                hid,
                vec![vec![0.0; hid]; batch],
                lbr,
                dir == RnnDirection::Reverse,
            );
            let y = outs[0].as_f32().unwrap();
            for t in 0..seq {
                for bi in 0..batch {
                    for j in 0..hid {
                        assert!(
                            (y[(t * batch + bi) * hid + j] as f64 - ys[t][bi][j]).abs() < 1e-5,
                            "lbr {lbr} {dir:?}"
                        );
                    }
                }
            }
            for bi in 0..batch {
                for j in 0..hid {
                    assert!(
                        (outs[1].as_f32().unwrap()[bi * hid + j] as f64 - hf[bi][j]).abs() < 1e-5
                    );
                }
            }
        }
    }
}

#[test]
fn lstm_batch_first_is_a_transpose_of_layout0() {
    let (seq, batch, inp, hid) = (3, 2, 2, 2);
    let x = rand_f32(seq * batch * inp, 21);
    let w = rand_f32(4 * hid * inp, 22);
    let r = rand_f32(4 * hid * hid, 23);
    let run = |bf: bool, xt: Tensor| {
        let attrs = RnnAttrs {
            hidden_size: hid,
            direction: RnnDirection::Forward,
            linear_before_reset: false,
            batch_first: bf,
        };
        run_node(
            Op::Lstm(attrs),
            vec![
                Some(xt),
                Some(f32t(&[1, 4 * hid, inp], &w)),
                Some(f32t(&[1, 4 * hid, hid], &r)),
            ],
        )
        .unwrap()
    };
    let a = run(false, f32t(&[seq, batch, inp], &x));
    // x in [batch, seq, in]
    let mut xb = vec![0f32; x.len()];
    for t in 0..seq {
        for b in 0..batch {
            for k in 0..inp {
                xb[(b * seq + t) * inp + k] = x[(t * batch + b) * inp + k];
            }
        }
    }
    let bf = run(true, f32t(&[batch, seq, inp], &xb));
    assert_eq!(bf[0].shape, vec![batch, seq, 1, hid]);
    for t in 0..seq {
        for b in 0..batch {
            for j in 0..hid {
                assert_eq!(
                    a[0].as_f32().unwrap()[(t * batch + b) * hid + j],
                    bf[0].as_f32().unwrap()[(b * seq + t) * hid + j]
                );
            }
        }
    }
    assert_eq!(a[1].as_f32().unwrap(), bf[1].as_f32().unwrap()); // dirs = 1: same order
}
