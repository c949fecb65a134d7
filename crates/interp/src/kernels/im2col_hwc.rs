//! onnxruntime's reduction order for a quantized convolution: its QLinearConv runs on
//! channels-last data, so row k of the GEMM is (ky, kx, input channel), not the
//! (channel, ky, kx) of `im2col`. Integer sums do not depend on the order, but the AVX2
//! u8 x s8 kernels saturate pairs of neighbouring k (`QGemm::sat16`), so that path
//! needs onnxruntime's order: an explicit channels-last im2col matrix and the weights
//! permuted to match.

use super::im2col::Conv2d;

/// The im2col matrix in (ky, kx, c) order: `out[n * K + (ky * kw + kx) * C + c]` for
/// output position n, `K = kh * kw * C`; taps in the padding read `pad`.
/// `x`: the `channels` planes of one (image, group).
pub(crate) fn im2col_hwc(x: &[u8], g: &Conv2d, pad: u8) -> Vec<u8> {
    let c = g.channels;
    let [ih, iw] = g.input;
    let [oh, ow] = g.out;
    let [kh, kw] = g.kernel;
    // Channels-last copy of the input: one contiguous run of C bytes per pixel.
    let mut hwc = vec![0u8; ih * iw * c];
    for (ch, plane) in x.chunks_exact(ih * iw).take(c).enumerate() {
        for (p, &v) in plane.iter().enumerate() {
            hwc[p * c + ch] = v;
        }
    }
    let k = kh * kw * c;
    let mut out = vec![pad; oh * ow * k];
    for oy in 0..oh {
        for ox in 0..ow {
            let row = &mut out[(oy * ow + ox) * k..][..k];
            for ky in 0..kh {
                let iy =
                    (oy * g.strides[0] + ky * g.dilations[0]) as isize - g.pad_begin[0] as isize;
                if iy < 0 || iy >= ih as isize {
                    continue;
                }
                for kx in 0..kw {
                    let ix = (ox * g.strides[1] + kx * g.dilations[1]) as isize
                        - g.pad_begin[1] as isize;
                    if ix < 0 || ix >= iw as isize {
                        continue;
                    }
                    let src = (iy as usize * iw + ix as usize) * c;
                    row[(ky * kw + kx) * c..][..c].copy_from_slice(&hwc[src..src + c]);
                }
            }
        }
    }
    out
}

/// Weights `[m][C][kvol]` (ONNX order) of one group as `[m][kvol][C]`.
pub(crate) fn weights_hwc(w: &[u8], m: usize, c: usize, kvol: usize) -> Vec<u8> {
    let per = c * kvol;
    let mut out = vec![0u8; m * per];
    for (src, dst) in w.chunks_exact(per).zip(out.chunks_exact_mut(per)).take(m) {
        for ch in 0..c {
            for t in 0..kvol {
                dst[t * c + ch] = src[ch * kvol + t];
            }
        }
    }
    out
}
