//! Signal processing. DFT and STFT are native IR ops. The generators HannWindow,
//! HammingWindow, BlackmanWindow and MelWeightMatrix depend only on constant operands and
//! attributes, so they become constants at import (formulas of the ONNX reference
//! implementation, computed in f64 and rounded once to the output type).

use super::{Converter, Ctx, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use crate::tensor::dtype_from_onnx;
use pimkit_ir::{DType, Op, Tensor};
use std::collections::BTreeMap;
use std::f64::consts::PI;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "HannWindow"), window);
    r.insert(("", "HammingWindow"), window);
    r.insert(("", "BlackmanWindow"), window);
    r.insert(("", "MelWeightMatrix"), mel_weight_matrix);
    r.insert(("", "DFT"), dft);
    r.insert(("", "STFT"), stft);
}

/// DFT: the axis is an attribute before opset 20 (default 1) and input 2 after (default
/// -2); the length defaults to the axis extent (2·(n-1) for an inverse onesided one).
fn dft(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let x = ctx.ty(n, 0)?;
    let r = x.rank();
    let ax = if n.opset < 20 {
        a.int("axis", 1)?
    } else {
        match n.input(2) {
            Some(_) => scalar(ctx, n, 2, "axis")? as i64,
            None => -2,
        }
    };
    let axis = norm_axis(ax, r)
        .filter(|&v| v + 1 < r)
        .ok_or_else(|| ctx.err(n, format!("axis {ax} is not a signal axis of rank {r}")))?;
    let inverse = a.bool("inverse", false)?;
    let onesided = a.bool("onesided", false)?;
    let length = match n.input(1) {
        Some(_) => {
            let v = scalar(ctx, n, 1, "dft_length")?;
            count(ctx, n, v, "dft_length")?
        }
        None if inverse && onesided => 2 * x.shape[axis].saturating_sub(1),
        None => x.shape[axis],
    };
    let xv = ctx.value(n, 0)?;
    ctx.emit(
        n,
        Op::Dft {
            axis,
            length,
            inverse,
            onesided,
        },
        vec![Some(xv)],
    )?;
    Ok(())
}

fn stft(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let step = scalar(ctx, n, 1, "frame_step")?;
    let frame_step = count(ctx, n, step, "frame_step")?;
    let frame_length = match n.input(3) {
        Some(_) => {
            let v = scalar(ctx, n, 3, "frame_length")?;
            count(ctx, n, v, "frame_length")?
        }
        None => match n.input(2) {
            Some(_) => ctx.ty(n, 2)?.numel(),
            None => return Err(ctx.err(n, "needs a window or a frame_length")),
        },
    };
    let onesided = n.attrs.bool("onesided", true)?;
    let ins = vec![ctx.opt_value(n, 0)?, ctx.opt_value(n, 2)?];
    ctx.emit(
        n,
        Op::Stft {
            frame_step,
            frame_length,
            onesided,
        },
        ins,
    )?;
    Ok(())
}

fn output_dtype(n: &NodeIn) -> Result<DType> {
    let code = n.attrs.int("output_datatype", 1)?;
    dtype_from_onnx(
        code as i32,
        &format!("node '{}' attribute 'output_datatype'", n.name),
    )
}

/// A scalar constant operand.
fn scalar(ctx: &mut Ctx, n: &NodeIn, i: usize, what: &str) -> Result<f64> {
    let t = ctx
        .const_input(n, i, what)?
        .ok_or_else(|| ctx.err(n, format!("the {what} input is missing")))?;
    match t.to_f64_vec()[..] {
        [v] => Ok(v),
        _ => Err(ctx.err(n, format!("the {what} must be a scalar"))),
    }
}

fn count(ctx: &Ctx, n: &NodeIn, v: f64, what: &str) -> Result<usize> {
    if v >= 0.0 && v < (1u64 << 32) as f64 && v.fract() == 0.0 {
        Ok(v as usize)
    } else {
        Err(ctx.err(n, format!("{what} {v} is not a valid size")))
    }
}

fn window(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let size = scalar(ctx, n, 0, "window size")?;
    let size = count(ctx, n, size, "window size")?;
    let periodic = n.attrs.bool("periodic", true)?;
    let dt = output_dtype(n)?;
    let denom = if periodic {
        size as f64
    } else {
        size as f64 - 1.0
    };
    let v: Vec<f64> = (0..size)
        .map(|i| {
            let x = i as f64 / denom;
            match n.op_type {
                "HannWindow" => (PI * x).sin().powi(2),
                "HammingWindow" => {
                    let alpha = 25.0 / 46.0;
                    alpha - (2.0 * PI * x).cos() * (1.0 - alpha)
                }
                _ => 0.42 - 0.5 * (2.0 * PI * x).cos() + 0.08 * (4.0 * PI * x).cos(),
            }
        })
        .collect();
    ctx.set_const(n.outputs[0], Tensor::from_f64_as(dt, vec![size], &v));
    Ok(())
}

/// Triangular filters between mel-spaced points, in DFT bins: output
/// [dft_length/2 + 1, num_mel_bins].
fn mel_weight_matrix(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let mels = scalar(ctx, n, 0, "num_mel_bins")?;
    let mels = count(ctx, n, mels, "num_mel_bins")?;
    let dft = scalar(ctx, n, 1, "dft_length")?;
    let dft = count(ctx, n, dft, "dft_length")?;
    let rate = scalar(ctx, n, 2, "sample_rate")?;
    let (lo, hi) = (
        scalar(ctx, n, 3, "lower_edge_hertz")?,
        scalar(ctx, n, 4, "upper_edge_hertz")?,
    );
    if rate <= 0.0 {
        return Err(ctx.err(n, format!("sample_rate {rate} must be positive")));
    }
    let dt = output_dtype(n)?;
    let bins = dft / 2 + 1;
    let to_mel = |hz: f64| 2595.0 * (1.0 + hz / 700.0).log10();
    let (lo_mel, hi_mel) = (to_mel(lo), to_mel(hi));
    let step = (hi_mel - lo_mel) / (mels + 2) as f64;
    let points: Vec<i64> = (0..mels + 2)
        .map(|i| {
            let hz = 700.0 * (10f64.powf((i as f64 * step + lo_mel) / 2595.0) - 1.0);
            (((dft + 1) as f64 * hz) / rate).floor() as i64
        })
        .collect();
    let mut out = vec![0.0f64; bins * mels];
    let mut set = |j: i64, i: usize, v: f64| -> Result<()> {
        let j = usize::try_from(j)
            .ok()
            .filter(|&j| j < bins)
            .ok_or_else(|| ctx.err(n, format!("mel bin {i} maps outside the {bins} DFT bins")))?;
        out[j * mels + i] = v;
        Ok(())
    };
    for i in 0..mels {
        let (l, c, h) = (points[i], points[i + 1], points[i + 2]);
        if c == l {
            set(c, i, 1.0)?;
        } else {
            for j in l..=c {
                set(j, i, (j - l) as f64 / (c - l) as f64)?;
            }
        }
        for j in c..h {
            set(j, i, (h - j) as f64 / (h - c) as f64)?;
        }
    }
    ctx.set_const(
        n.outputs[0],
        Tensor::from_f64_as(dt, vec![bins, mels], &out),
    );
    Ok(())
}
