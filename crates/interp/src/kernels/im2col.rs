//! The column operand of a quantized 1-D/2-D convolution, packed panel by panel
//! straight from the input (no im2col matrix is ever built). Column n is output
//! position (oy, ox), row k is (input channel, ky, kx).
//!
//! The input of one (image, group) is first copied into a buffer padded with the zero
//! point (only when the convolution pads), so every tap reads inside the buffer and a
//! run of output columns on one output row reads a run of input bytes (stride 1) or a
//! strided run (gathered into a small buffer first).

use super::qgemm::{ColSource, interleave4};

/// One (image, group) of a 2-D convolution input as the GEMM's column operand
/// (1-D convolutions are 2-D with height 1).
pub(crate) struct Im2col2d<'a> {
    data: std::borrow::Cow<'a, [u8]>,
    signed: bool,
    /// Elements per channel plane and per row of `data`.
    plane: usize,
    row: usize,
    kernel: [usize; 2],
    strides: [usize; 2],
    dilations: [usize; 2],
    out: [usize; 2],
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
        // Extent of the padded input that the taps reach.
        let need =
            |i: usize| (c.out[i] - 1) * c.strides[i] + (c.kernel[i] - 1) * c.dilations[i] + 1;
        let (hp, wp) = (need(0), need(1));
        let unpadded = c.pad_begin == [0, 0] && hp <= ih && wp <= iw;
        let (data, plane, row) = if unpadded {
            (std::borrow::Cow::Borrowed(x), ih * iw, iw)
        } else {
            let mut buf = vec![pad; c.channels * hp * wp];
            for ch in 0..c.channels {
                for y in 0..hp {
                    let Some(iy) = y.checked_sub(c.pad_begin[0]).filter(|&v| v < ih) else {
                        continue;
                    };
                    let x0 = c.pad_begin[1];
                    if x0 >= wp {
                        continue;
                    }
                    let len = iw.min(wp - x0);
                    let src = &x[(ch * ih + iy) * iw..][..len];
                    buf[(ch * hp + y) * wp + x0..][..len].copy_from_slice(src);
                }
            }
            (std::borrow::Cow::Owned(buf), hp * wp, wp)
        };
        Im2col2d {
            data,
            signed,
            plane,
            row,
            kernel: c.kernel,
            strides: c.strides,
            dilations: c.dilations,
            out: c.out,
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
        let [kh, kw] = self.kernel;
        let kvol = kh * kw;
        let ow = self.out[1];
        let (sw, sh) = (self.strides[1], self.strides[0]);
        let k4 = k.div_ceil(4);
        dst[..k4 * pw * 4].fill(0);
        let data: &[u8] = &self.data;
        let mut gathered = [[0u8; 48]; 4];
        for q in 0..k4 {
            // Start of each of the four k rows within its channel plane.
            let taps: [Option<usize>; 4] = std::array::from_fn(|j| {
                let kk = q * 4 + j;
                (kk < k).then(|| {
                    let (ch, r) = (kk / kvol, kk % kvol);
                    let (ky, kx) = (r / kw, r % kw);
                    ch * self.plane + ky * self.dilations[0] * self.row + kx * self.dilations[1]
                })
            });
            let mut pos = n0;
            while pos < n0 + w {
                let (oy, ox0) = (pos / ow, pos % ow);
                let len = (ow - ox0).min(n0 + w - pos);
                let base = oy * sh * self.row + ox0 * sw;
                let d = &mut dst[(q * pw + pos - n0) * 4..];
                if sw == 1 {
                    let rows = taps.map(|t| t.map(|t| &data[base + t..][..len]));
                    interleave4(rows, len, xor, d);
                } else {
                    for (j, t) in taps.iter().enumerate() {
                        if let Some(t) = t {
                            let src = &data[base + t..];
                            for (i, g) in gathered[j][..len].iter_mut().enumerate() {
                                *g = src[i * sw];
                            }
                        }
                    }
                    let rows: [Option<&[u8]>; 4] =
                        std::array::from_fn(|j| taps[j].map(|_| &gathered[j][..len]));
                    interleave4(rows, len, xor, d);
                }
                pos += len;
            }
        }
    }
}
