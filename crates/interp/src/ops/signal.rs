//! DFT and STFT as the ONNX reference computes them (numpy.fft in f64, rounded once to
//! the output type). A direct O(n²) transform with f64 twiddles: node-suite and audio
//! front-end lengths are small, and it needs no FFT crate.

use crate::error::{OpResult, invalid};
use pimkit_ir::{Tensor, TensorType};
use std::f64::consts::PI;

/// One complex transform of `x` (length n, zero-padded or cut to `len`):
/// X[k] = scale · Σ x[j]·e^(∓2πi·jk/len) for k in 0..out_len.
fn transform(
    re: &[f64],
    im: &[f64],
    len: usize,
    out_len: usize,
    inverse: bool,
    out: &mut [(f64, f64)],
) {
    let sign = if inverse { 1.0 } else { -1.0 };
    let scale = if inverse { 1.0 / len as f64 } else { 1.0 };
    let n = re.len().min(len);
    for (k, o) in out.iter_mut().enumerate().take(out_len) {
        let (mut sr, mut si) = (0.0, 0.0);
        for j in 0..n {
            // (j·k) mod len keeps the angle small, so the twiddle stays exact to f64.
            let ang = sign * 2.0 * PI * ((j * k) % len) as f64 / len as f64;
            let (s, c) = ang.sin_cos();
            sr += re[j] * c - im[j] * s;
            si += re[j] * s + im[j] * c;
        }
        *o = (sr * scale, si * scale);
    }
}

/// ONNX DFT (opset 17/20): see `pimkit_ir::Op::Dft` for the shapes.
pub(crate) fn dft(
    x: &Tensor,
    axis: usize,
    len: usize,
    inverse: bool,
    onesided: bool,
    out_ty: &TensorType,
) -> OpResult<Tensor> {
    let r = x.rank();
    let comps = x.shape[r - 1];
    let n = x.shape[axis];
    let inner: usize = x.shape[axis + 1..r - 1].iter().product();
    let outer: usize = x.shape[..axis].iter().product();
    let os = &out_ty.shape;
    let (out_n, out_c) = (os[axis], os[r - 1]);
    let v = x.to_f64_vec();
    let mut out = vec![0.0; outer * out_n * inner * out_c];
    let mut re = vec![0.0; len.max(n)];
    let mut im = vec![0.0; len.max(n)];
    let mut res = vec![(0.0, 0.0); len];
    for o in 0..outer {
        for i in 0..inner {
            re.iter_mut().for_each(|v| *v = 0.0);
            im.iter_mut().for_each(|v| *v = 0.0);
            for j in 0..n {
                let p = ((o * n + j) * inner + i) * comps;
                re[j] = v[p];
                im[j] = if comps == 2 { v[p + 1] } else { 0.0 };
            }
            if inverse && onesided {
                // irfft: the first len/2 + 1 bins, the rest by Hermitian symmetry; the
                // imaginary parts of the DC (and Nyquist) bins are ignored.
                let half = len / 2 + 1;
                let mut fr = vec![0.0; len];
                let mut fi = vec![0.0; len];
                let m = half.min(n);
                fr[..m].copy_from_slice(&re[..m]);
                fi[..m].copy_from_slice(&im[..m]);
                fi[0] = 0.0;
                if len.is_multiple_of(2) {
                    fi[len / 2] = 0.0;
                }
                for k in half..len {
                    fr[k] = fr[len - k];
                    fi[k] = -fi[len - k];
                }
                transform(&fr, &fi, len, len, true, &mut res);
            } else {
                transform(&re[..n], &im[..n], len, out_n, inverse, &mut res);
            }
            for k in 0..out_n {
                let p = ((o * out_n + k) * inner + i) * out_c;
                out[p] = res[k].0;
                if out_c == 2 {
                    out[p + 1] = res[k].1;
                }
            }
        }
    }
    Ok(Tensor::from_f64_as(x.dtype(), os.clone(), &out))
}

/// ONNX STFT: frames of `frame_length` every `frame_step` samples, times the window (1
/// when absent), each transformed (onesided: the first frame_length/2 + 1 bins).
pub(crate) fn stft(
    x: &Tensor,
    window: Option<&Tensor>,
    step: usize,
    flen: usize,
    out_ty: &TensorType,
) -> OpResult<Tensor> {
    let (b, l, comps) = (x.shape[0], x.shape[1], x.shape[2]);
    let (frames, bins) = (out_ty.shape[1], out_ty.shape[2]);
    let w = match window {
        Some(w) => w.to_f64_vec(),
        None => vec![1.0; flen],
    };
    if w.len() != flen || frames == 0 || (frames - 1) * step + flen > l {
        return invalid(format!(
            "{frames} frames of {flen} every {step} do not fit {l} samples"
        ));
    }
    let v = x.to_f64_vec();
    let mut out = vec![0.0; b * frames * bins * 2];
    let (mut re, mut im) = (vec![0.0; flen], vec![0.0; flen]);
    let mut res = vec![(0.0, 0.0); flen];
    for bi in 0..b {
        for f in 0..frames {
            for j in 0..flen {
                let p = (bi * l + f * step + j) * comps;
                re[j] = v[p] * w[j];
                im[j] = if comps == 2 { v[p + 1] * w[j] } else { 0.0 };
            }
            transform(&re, &im, flen, bins, false, &mut res);
            for k in 0..bins {
                let p = ((bi * frames + f) * bins + k) * 2;
                out[p] = res[k].0;
                out[p + 1] = res[k].1;
            }
        }
    }
    Ok(Tensor::from_f64_as(x.dtype(), out_ty.shape.clone(), &out))
}
