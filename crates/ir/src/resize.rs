//! Resize sampling: which input elements (and weights) each output element of one axis
//! reads. Shared by the interpreter and the loop-nest lowering so that both follow one
//! definition: the ONNX reference implementation (onnx/reference/ops/op_resize.py),
//! computed in f64 like it, including its use of the fractional output width
//! `scale * in` in align_corners, pytorch_half_pixel and tf_crop_and_resize.

use crate::{CoordMode, NearestMode, ResizeAttrs, ResizeMode};

/// The taps of one output position along one axis.
#[derive(Clone, Debug, PartialEq)]
pub enum AxisTaps {
    /// Weighted sum of input positions (already clamped into the axis, weights sum to 1).
    Mix(Vec<(usize, f64)>),
    /// tf_crop_and_resize outside the input: the output is `extrapolation_value`.
    Extrapolate,
}

/// True when Resize leaves `axis` unchanged (the reference skips such axes).
pub fn resize_axis_is_identity(a: &ResizeAttrs, axis: usize, in_len: usize) -> bool {
    let r = a.scales.len();
    let roi = |i: usize| a.roi.get(i).copied().unwrap_or(f32::NAN);
    let roi_full = a.coord != CoordMode::TfCropAndResize
        || (roi(axis).abs() < 1e-9 && (roi(axis + r) - 1.0).abs() < 1e-9);
    let scale = a.scales.get(axis).copied().unwrap_or(f64::NAN);
    (scale - 1.0).abs() <= 1e-9 && a.sizes.get(axis) == Some(&in_len) && roi_full
}

/// Source coordinate of output position `x` along `axis`, or `None` when
/// tf_crop_and_resize extrapolates. `a` must have passed shape inference (one scale,
/// size and roi pair per axis).
pub fn resize_source_coord(a: &ResizeAttrs, axis: usize, in_len: usize, x: usize) -> Option<f64> {
    let scale = a.scales[axis];
    let x = x as f64;
    let inl = in_len as f64;
    let out_w = scale * inl;
    let out_int = a.sizes[axis] as f64;
    let c = match a.coord {
        CoordMode::AlignCorners => {
            if out_w == 1.0 {
                0.0
            } else {
                x * (inl - 1.0) / (out_w - 1.0)
            }
        }
        CoordMode::Asymmetric => x / scale,
        CoordMode::HalfPixel => (x + 0.5) / scale - 0.5,
        CoordMode::PytorchHalfPixel => {
            if out_w == 1.0 {
                -0.5
            } else {
                (x + 0.5) / scale - 0.5
            }
        }
        CoordMode::HalfPixelSymmetric => {
            let adjustment = out_int / out_w;
            let offset = inl / 2.0 * (1.0 - adjustment);
            offset + (x + 0.5) / scale - 0.5
        }
        CoordMode::TfCropAndResize => {
            let r = a.scales.len();
            let (s, e) = (a.roi[axis] as f64, a.roi[axis + r] as f64);
            let c = if out_w == 1.0 {
                (e - s) * (inl - 1.0) / 2.0
            } else {
                x * (e - s) * (inl - 1.0) / (out_w - 1.0)
            } + s * (inl - 1.0);
            if c < 0.0 || c > inl - 1.0 {
                return None;
            }
            c
        }
    };
    Some(c)
}

/// Input position read by nearest mode at source coordinate `c`, clamped into the axis.
pub fn resize_nearest_index(mode: NearestMode, c: f64, in_len: usize) -> usize {
    let f = c.floor();
    let r = c - f;
    let i = if r == 0.0 {
        f
    } else {
        match mode {
            NearestMode::RoundPreferFloor if r <= 0.5 => f,
            NearestMode::RoundPreferCeil if r < 0.5 => f,
            NearestMode::Floor => f,
            _ => f + 1.0,
        }
    };
    clamp(i, in_len)
}

fn clamp(i: f64, in_len: usize) -> usize {
    if i <= 0.0 {
        0
    } else {
        (i as usize).min(in_len.saturating_sub(1))
    }
}

/// Keys cubic convolution weights of the 4 taps floor(c)-1 ..= floor(c)+2 at fraction `r`.
fn cubic_coeffs(r: f64, a: f64) -> [f64; 4] {
    let far = |t: f64| ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a;
    let near = |t: f64| ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0;
    [far(r + 1.0), near(r), near(1.0 - r), far(2.0 - r)]
}

/// The Keys cubic kernel at distance `t`.
fn cubic_kernel(t: f64, a: f64) -> f64 {
    let t = t.abs();
    if t <= 1.0 {
        ((a + 2.0) * t - (a + 3.0)) * t * t + 1.0
    } else if t < 2.0 {
        ((a * t - 5.0 * a) * t + 8.0 * a) * t - 4.0 * a
    } else {
        0.0
    }
}

/// Antialiased taps (ONNX reference `_linear_coeffs_antialias` / `_cubic_coeffs_antialias`):
/// the kernel of half-width `support` is stretched by 1/scale when downsampling and the
/// weights are normalized. Tap `idx` has weight `kernel((idx - c) * min(scale, 1))`; the
/// window starts at floor(c) + start, or one earlier when c is an integer.
fn antialias_taps(
    c: f64,
    scale: f64,
    support: f64,
    kernel: impl Fn(f64) -> f64,
) -> Vec<(f64, f64)> {
    let s = scale.min(1.0);
    let start = (-support / s).floor() + 1.0;
    let n = (2.0 - 2.0 * start) as usize;
    let f = c.floor();
    let first = if c == f { f + start - 1.0 } else { f + start };
    let mut taps: Vec<(f64, f64)> = (0..n)
        .map(|k| {
            let idx = first + k as f64;
            (idx, kernel((idx - c) * s))
        })
        .collect();
    let sum: f64 = taps.iter().map(|t| t.1).sum();
    if sum != 0.0 {
        taps.iter_mut().for_each(|t| t.1 /= sum);
    }
    taps
}

/// Taps of every output position along `axis` for an input extent `in_len`.
pub fn resize_axis_taps(a: &ResizeAttrs, axis: usize, in_len: usize) -> Vec<AxisTaps> {
    (0..a.sizes[axis])
        .map(|x| {
            if resize_axis_is_identity(a, axis, in_len) {
                return AxisTaps::Mix(vec![(x, 1.0)]);
            }
            let Some(c) = resize_source_coord(a, axis, in_len, x) else {
                return AxisTaps::Extrapolate;
            };
            let f = c.floor();
            let r = c - f;
            let raw: Vec<(f64, f64)> = match a.mode {
                ResizeMode::Nearest(m) => {
                    return AxisTaps::Mix(vec![(resize_nearest_index(m, c, in_len), 1.0)]);
                }
                ResizeMode::Linear if a.antialias => {
                    antialias_taps(c, a.scales[axis], 1.0, |t| (1.0 - t.abs()).max(0.0))
                }
                ResizeMode::Cubic if a.antialias => {
                    let ca = a.cubic_coeff_a as f64;
                    antialias_taps(c, a.scales[axis], 2.0, |t| cubic_kernel(t, ca))
                }
                ResizeMode::Linear => vec![(f, 1.0 - r), (f + 1.0, r)],
                ResizeMode::Cubic => {
                    let w = cubic_coeffs(r, a.cubic_coeff_a as f64);
                    (0..4).map(|k| (f - 1.0 + k as f64, w[k])).collect()
                }
            };
            let inside = |i: f64| i >= 0.0 && i < in_len as f64;
            let mut taps: Vec<(f64, f64)> = raw;
            if a.exclude_outside {
                for t in &mut taps {
                    if !inside(t.0) {
                        t.1 = 0.0;
                    }
                }
                let sum: f64 = taps.iter().map(|t| t.1).sum();
                if sum != 0.0 {
                    taps.iter_mut().for_each(|t| t.1 /= sum);
                }
            }
            AxisTaps::Mix(
                taps.into_iter()
                    .filter(|t| t.1 != 0.0)
                    .map(|(i, w)| (clamp(i, in_len), w))
                    .collect(),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(mode: ResizeMode, coord: CoordMode, scale: f64, in_len: usize) -> ResizeAttrs {
        ResizeAttrs::from_scales(&[in_len], vec![scale], mode, coord)
    }

    #[test]
    fn nearest_upsample_by_two_repeats_each_element() {
        let a = attrs(
            ResizeMode::Nearest(NearestMode::Floor),
            CoordMode::Asymmetric,
            2.0,
            3,
        );
        let idx: Vec<_> = resize_axis_taps(&a, 0, 3)
            .into_iter()
            .map(|t| match t {
                AxisTaps::Mix(v) => v[0].0,
                AxisTaps::Extrapolate => usize::MAX,
            })
            .collect();
        assert_eq!(idx, vec![0, 0, 1, 1, 2, 2]);
    }

    #[test]
    fn linear_half_pixel_weights_match_hand_computation() {
        // out 0 of a 2x upsample of 2 elements: c = 0.5/2 - 0.5 = -0.25 -> clamped to 0.
        let a = attrs(ResizeMode::Linear, CoordMode::HalfPixel, 2.0, 2);
        let t = resize_axis_taps(&a, 0, 2);
        assert_eq!(t.len(), 4);
        // out 1: c = 1.5/2 - 0.5 = 0.25 -> 0.75 * x0 + 0.25 * x1
        assert_eq!(t[1], AxisTaps::Mix(vec![(0, 0.75), (1, 0.25)]));
        let AxisTaps::Mix(v) = &t[0] else { panic!() };
        let w0: f64 = v.iter().filter(|p| p.0 == 0).map(|p| p.1).sum();
        assert!((w0 - 1.0).abs() < 1e-12, "{v:?}");
    }

    #[test]
    fn cubic_weights_sum_to_one_and_interpolate_at_integers() {
        for r in [0.0, 0.25, 0.5, 0.9] {
            let w = cubic_coeffs(r, -0.75);
            assert!((w.iter().sum::<f64>() - 1.0).abs() < 1e-12, "{w:?}");
        }
        assert_eq!(cubic_coeffs(0.0, -0.5), [0.0, 1.0, 0.0, 0.0]);
    }

    #[test]
    fn nearest_modes_round_half_as_named() {
        use NearestMode::*;
        assert_eq!(resize_nearest_index(RoundPreferFloor, 1.5, 4), 1);
        assert_eq!(resize_nearest_index(RoundPreferCeil, 1.5, 4), 2);
        assert_eq!(resize_nearest_index(Floor, 1.9, 4), 1);
        assert_eq!(resize_nearest_index(Ceil, 1.1, 4), 2);
        assert_eq!(resize_nearest_index(Ceil, 3.5, 4), 3);
        assert_eq!(resize_nearest_index(RoundPreferFloor, -0.25, 4), 0);
    }
}
