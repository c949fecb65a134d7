//! PRelu (hand values), ConvTranspose (against a naive scatter in f64) and Resize (hand
//! values from the ONNX operator documentation).
mod common;
use common::*;
use pimkit_ir::{ConvTransposeAttrs, CoordMode, NearestMode, Op, ResizeAttrs, ResizeMode, Tensor};

#[test]
fn prelu_broadcasts_a_per_channel_slope() {
    let x = f32t(&[1, 2, 1, 2], &[-2.0, 3.0, -4.0, 0.5]);
    let slope = f32t(&[2, 1, 1], &[0.25, 0.5]);
    let y = run1(Op::PRelu, vec![x, slope]);
    assert_eq!(y.as_f32().unwrap(), &[-0.5, 3.0, -2.0, 0.5]);
}

/// ConvTranspose from its definition: every input element scatters `x * w` to
/// `in*stride + k*dilation - pad_begin` (2-D, f64).
fn naive_convt(x: &Tensor, w: &Tensor, b: Option<&[f32]>, a: &ConvTransposeAttrs) -> Vec<f32> {
    let (n, c, h, wd) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let (mg, kh, kw) = (w.shape[1], w.shape[2], w.shape[3]);
    let m = mg * a.group;
    let cg = c / a.group;
    let oh = a.strides[0] * (h - 1) + a.output_padding[0] + a.dilations[0] * (kh - 1) + 1
        - a.pads[0]
        - a.pads[2];
    let ow = a.strides[1] * (wd - 1) + a.output_padding[1] + a.dilations[1] * (kw - 1) + 1
        - a.pads[1]
        - a.pads[3];
    let xv = x.as_f32().unwrap();
    let wv = w.as_f32().unwrap();
    let mut out = vec![0f64; n * m * oh * ow];
    for bi in 0..n {
        for ic in 0..c {
            let g = ic / cg;
            for iy in 0..h {
                for ix in 0..wd {
                    let xval = xv[((bi * c + ic) * h + iy) * wd + ix] as f64;
                    for mm in 0..mg {
                        let oc = g * mg + mm;
                        for ky in 0..kh {
                            for kx in 0..kw {
                                let oy = (iy * a.strides[0] + ky * a.dilations[0]) as i64
                                    - a.pads[0] as i64;
                                let ox = (ix * a.strides[1] + kx * a.dilations[1]) as i64
                                    - a.pads[1] as i64;
                                if oy < 0 || ox < 0 || oy >= oh as i64 || ox >= ow as i64 {
                                    continue;
                                }
                                let wval = wv[((ic * mg + mm) * kh + ky) * kw + kx] as f64;
                                out[((bi * m + oc) * oh + oy as usize) * ow + ox as usize] +=
                                    xval * wval;
                            }
                        }
                    }
                }
            }
        }
    }
    if let Some(b) = b {
        for (i, v) in out.iter_mut().enumerate() {
            *v += b[(i / (oh * ow)) % m] as f64;
        }
    }
    out.into_iter().map(|v| v as f32).collect()
}

#[test]
fn conv_transpose_matches_naive_scatter() {
    let cases = [
        // x shape, w shape, strides, pads, dilations, output_padding, group, bias
        (
            [1, 2, 3, 3],
            [2, 3, 3, 3],
            [1, 1],
            [0, 0, 0, 0],
            [1, 1],
            [0, 0],
            1,
            true,
        ),
        (
            [2, 4, 3, 4],
            [4, 2, 2, 3],
            [2, 3],
            [1, 0, 0, 2],
            [1, 1],
            [1, 2],
            2,
            false,
        ),
        (
            [1, 3, 4, 2],
            [3, 2, 3, 2],
            [3, 1],
            [2, 1, 1, 0],
            [2, 3],
            [2, 0],
            1,
            true,
        ),
        (
            [1, 6, 2, 2],
            [6, 1, 4, 4],
            [2, 2],
            [1, 1, 1, 1],
            [1, 1],
            [0, 1],
            6,
            true,
        ),
    ];
    for (k, (xs, ws, s, p, d, op, group, bias)) in cases.into_iter().enumerate() {
        let x = Tensor::from_f32(xs.to_vec(), rand_f32(xs.iter().product(), 10 + k as u64));
        let w = Tensor::from_f32(ws.to_vec(), rand_f32(ws.iter().product(), 20 + k as u64));
        let m = ws[1] * group;
        let b = rand_f32(m, 30 + k as u64);
        let a = ConvTransposeAttrs {
            kernel: ws[2..].to_vec(),
            strides: s.to_vec(),
            pads: p.to_vec(),
            dilations: d.to_vec(),
            output_padding: op.to_vec(),
            group,
        };
        let want = naive_convt(&x, &w, bias.then_some(&b[..]), &a);
        let mut ins = vec![x, w];
        if bias {
            ins.push(Tensor::from_f32(vec![m], b.clone()));
        }
        let y = run1(Op::ConvTranspose(a), ins);
        assert_close(y.as_f32().unwrap(), &want, 1e-5);
    }
}

fn resize(x: Tensor, scales: Vec<f64>, mode: ResizeMode, coord: CoordMode) -> Tensor {
    let a = ResizeAttrs::from_scales(&x.shape, scales, mode, coord);
    run1(Op::Resize(a), vec![x])
}

#[test]
fn resize_nearest_and_linear_match_the_onnx_examples() {
    let x = f32t(&[1, 1, 2, 2], &[1.0, 2.0, 3.0, 4.0]);
    // resize_upsample_scales_nearest: repeat 2x along H, 3x along W.
    let y = resize(
        x.clone(),
        vec![1.0, 1.0, 2.0, 3.0],
        ResizeMode::Nearest(NearestMode::RoundPreferFloor),
        CoordMode::HalfPixel,
    );
    assert_eq!(y.shape, vec![1, 1, 4, 6]);
    let row0 = [1.0, 1.0, 1.0, 2.0, 2.0, 2.0];
    let row1 = [3.0, 3.0, 3.0, 4.0, 4.0, 4.0];
    assert_eq!(y.as_f32().unwrap(), &[row0, row0, row1, row1].concat()[..]);
    // resize_upsample_scales_linear_align_corners
    let y = resize(
        x.clone(),
        vec![1.0, 1.0, 2.0, 2.0],
        ResizeMode::Linear,
        CoordMode::AlignCorners,
    );
    let t = 1.0 / 3.0;
    #[rustfmt::skip]
    let want = [
        1.0, 1.0 + t, 1.0 + 2.0 * t, 2.0,
        1.0 + 2.0 * t, 2.0, 2.0 + t, 2.0 + 2.0 * t,
        2.0 + t, 2.0 + 2.0 * t, 3.0, 3.0 + t,
        3.0, 3.0 + t, 3.0 + 2.0 * t, 4.0,
    ];
    assert_close(y.as_f32().unwrap(), &want, 1e-6);
    // resize_upsample_scales_linear (half_pixel): edges clamp, centers interpolate.
    let y = resize(
        x,
        vec![1.0, 1.0, 2.0, 2.0],
        ResizeMode::Linear,
        CoordMode::HalfPixel,
    );
    #[rustfmt::skip]
    let want = [
        1.0, 1.25, 1.75, 2.0,
        1.5, 1.75, 2.25, 2.5,
        2.5, 2.75, 3.25, 3.5,
        3.0, 3.25, 3.75, 4.0,
    ];
    assert_close(y.as_f32().unwrap(), &want, 1e-6);
}
