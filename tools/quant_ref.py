"""Exact numpy models of integer-accumulating quantized ops (sanity checks for ORT output)."""

import numpy as np


def requant(acc, scale, zp, dtype):
    """ORT's requantization: round_half_even(f32(acc) * f32 scale) + zp, saturated."""
    info = np.iinfo(dtype)
    y = np.rint(np.asarray(acc).astype(np.float32) * np.asarray(scale, np.float32))
    return np.clip(y + np.asarray(zp).astype(np.float32), info.min, info.max).astype(dtype)


def conv_int(x, w, strides, pads, dils, group):
    """N-d grouped convolution on int64 arrays, NC* layout, ONNX pads (begins then ends)."""
    rank = x.ndim - 2
    n, c = x.shape[:2]
    k = w.shape[0]
    kern = w.shape[2:]
    pad_width = [(0, 0), (0, 0)] + [(pads[i], pads[i + rank]) for i in range(rank)]
    xp = np.pad(x, pad_width)
    out_sp = [
        (xp.shape[2 + i] - dils[i] * (kern[i] - 1) - 1) // strides[i] + 1 for i in range(rank)
    ]
    cg, kg = c // group, k // group
    y = np.zeros((n, k, *out_sp), np.int64)
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        ws = w[g * kg:(g + 1) * kg]
        for kidx in np.ndindex(*kern):
            sl = [slice(None), slice(None)]
            for i in range(rank):
                start = kidx[i] * dils[i]
                sl.append(slice(start, start + strides[i] * (out_sp[i] - 1) + 1, strides[i]))
            patch = xs[tuple(sl)]  # n, cg, *out
            wk = ws[(slice(None), slice(None)) + kidx]  # kg, cg
            y[:, g * kg:(g + 1) * kg] += np.einsum("nc...,kc->nk...", patch, wk)
    return y
