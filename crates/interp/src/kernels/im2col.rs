//! The column operand of a quantized 1-D/2-D convolution, packed panel by panel
//! straight from the input (no im2col matrix is ever built). Column n is output
//! position (oy, ox), row k is (input channel, ky, kx).
//!
//! The input of one (image, group) is first copied into a buffer padded with the zero
//! point, each row split into horizontal stride phases (only when the convolution
//! pads or strides), so every tap reads inside the buffer and a run of output columns
//! on one output row reads a contiguous run of input bytes.

use super::interleave::interleave4;
use super::qgemm::ColSource;
use std::borrow::Cow;

/// One (image, group) of a 2-D convolution input as the GEMM's column operand
/// (1-D convolutions are 2-D with height 1).
pub(crate) struct Im2col2d<'a> {
    data: Cow<'a, [u8]>,
    signed: bool,
    /// Elements per (padded, phase-split) input row of `data`, and the vertical stride.
    row: usize,
    sh: usize,
    out: [usize; 2],
    /// Offset in `data` of row k's first tap (channel plane + kernel position).
    offs: Vec<usize>,
}

/// Spatial geometry of one convolution (2-D; pads at the start of each axis).
pub(crate) struct Conv2d {
    pub channels: usize,
    pub input: [usize; 2],
    pub out: [usize; 2],
    pub kernel: [usize; 2],
    pub strides: [usize; 2],
    pub dilations: [usize; 2],
    pub pad_begin: [usize; 2],
}

impl<'a> Im2col2d<'a> {
    /// `x`: the `channels` planes of one (image, group), u8 or i8 bytes; `pad`: the
    /// zero point's byte.
    pub(crate) fn new(x: &'a [u8], signed: bool, pad: u8, c: &Conv2d) -> Im2col2d<'a> {
        let [ih, iw] = c.input;
        let [sh, sw] = c.strides;
        // Extent of the padded input that the taps reach.
        let need =
            |i: usize| (c.out[i] - 1) * c.strides[i] + (c.kernel[i] - 1) * c.dilations[i] + 1;
        let (hp, wp) = (need(0), need(1));
        let unpadded = c.pad_begin == [0, 0] && hp <= ih && wp <= iw;
        // Rows of the buffer: each padded input row split into `sw` phases (phase p,
        // element i = padded column i * sw + p), so a run of output columns reads a
        // run of bytes whatever the stride.
        let wq = wp.div_ceil(sw);
        let (data, plane, row) = if unpadded && sw == 1 {
            (Cow::Borrowed(x), ih * iw, iw)
        } else {
            let mut buf = vec![pad; c.channels * hp * sw * wq];
            for ch in 0..c.channels {
                for y in 0..hp {
                    let Some(iy) = y.checked_sub(c.pad_begin[0]).filter(|&v| v < ih) else {
                        continue;
                    };
                    let src = &x[(ch * ih + iy) * iw..][..iw];
                    let dst = &mut buf[(ch * hp + y) * sw * wq..][..sw * wq];
                    let pw = c.pad_begin[1];
                    for p in 0..sw {
                        // Phase columns i with 0 <= i * sw + p - pw < iw (and < wp).
                        let lo = pw.saturating_sub(p).div_ceil(sw);
                        let hi = (iw + pw).min(wp).saturating_sub(p).div_ceil(sw);
                        if lo >= hi {
                            continue;
                        }
                        let x0 = lo * sw + p - pw;
                        let d = &mut dst[p * wq + lo..p * wq + hi];
                        if sw == 1 {
                            d.copy_from_slice(&src[x0..x0 + d.len()]);
                        } else {
                            for (i, v) in d.iter_mut().enumerate() {
                                *v = src[x0 + i * sw];
                            }
                        }
                    }
                }
            }
            (Cow::Owned(buf), hp * sw * wq, sw * wq)
        };
        let [kh, kw] = c.kernel;
        let mut offs = Vec::with_capacity(c.channels * kh * kw);
        for ch in 0..c.channels {
            for ky in 0..kh {
                for kx in 0..kw {
                    let col = kx * c.dilations[1];
                    let at = if matches!(data, Cow::Borrowed(_)) {
                        col
                    } else {
                        (col % sw) * wq + col / sw
                    };
                    offs.push(ch * plane + ky * c.dilations[0] * row + at);
                }
            }
        }
        Im2col2d {
            data,
            signed,
            row,
            sh,
            out: c.out,
            offs,
        }
    }
}

impl ColSource for Im2col2d<'_> {
    fn signed(&self) -> bool {
        self.signed
    }

    #[inline(always)]
    fn pack(&self, n0: usize, w: usize, pw: usize, k: usize, dst: &mut [u8]) {
        let xor = if self.signed { 0x80 } else { 0 };
        let ow = self.out[1];
        let k4 = k.div_ceil(4);
        dst[..k4 * pw * 4].fill(0);
        let data: &[u8] = &self.data;
        for q in 0..k4 {
            let rows = (k - q * 4).min(4);
            let taps: [usize; 4] = std::array::from_fn(|j| self.offs[(q * 4 + j).min(k - 1)]);
            let mut pos = n0;
            while pos < n0 + w {
                let (oy, ox0) = (pos / ow, pos % ow);
                let len = (ow - ox0).min(n0 + w - pos);
                let base = oy * self.sh * self.row + ox0;
                let d = &mut dst[(q * pw + pos - n0) * 4..];
                interleave4(data, taps.map(|t| base + t), rows, len, xor, d);
                pos += len;
            }
        }
    }
}
