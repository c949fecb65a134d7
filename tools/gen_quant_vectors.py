#!/usr/bin/env python3
"""Golden vectors for quantized ops from onnxruntime -> tests/data/ort-quant/<case>/.

Every case is a one-node model whose activations are graph inputs and whose weights and
quantization parameters are initializers (as quantize_static writes them). The golden
outputs are onnxruntime's (CPU provider, one thread, optimizations off and on must agree);
pimkit must reproduce them bit for bit.

Integer-accumulating ops (QLinearMatMul, QLinearConv, MatMulInteger, ConvInteger, QGemm)
are also checked here against an exact numpy model (int64 accumulation, ORT's f32
requantization). This catches a hardware artifact: on x86 CPUs without VNNI, MLAS's u8 x s8
kernels use vpmaddubsw, which saturates pairs of products at 16 bits, so full-range s8
weights give machine-dependent results. Cases with s8 weights therefore keep weights in
[-64, 63] (what quantize_static's reduce_range does), and the check below refuses any case
whose ORT output is not the exact result.

Usage: python3 tools/gen_quant_vectors.py
"""

import os
import sys

import numpy as np
from onnx import helper

from _common import DATA, finalize_outputs, known_fail, make_model, u8_weight_twin, reset_dir, run_ort, save_case, write_manifest
from quant_ref import conv_int, requant

SUITE = os.path.join(DATA, "ort-quant")
rng = np.random.default_rng(20240601)
CASES = []


def f32(x):
    return np.asarray(x, dtype=np.float32)


def rand_q(dtype, shape, lo=None, hi=None):
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi + 1, size=shape).astype(dtype)


def weight(dtype, shape):
    """Weights: full range for u8; [-64, 63] for s8 (see module doc)."""
    return rand_q(dtype, shape, -64, 63) if dtype == np.int8 else rand_q(dtype, shape)


def rand_scale(lo=1e-3, hi=0.1, shape=None):
    return f32(np.exp(rng.uniform(np.log(lo), np.log(hi), size=shape)))


def zp_for(dtype, shape=None, sym=False):
    """Zero point(s): 0 when symmetric, small around 0 for s8, around 128 for u8."""
    shape = () if shape is None else shape
    if sym:
        return np.zeros(shape, dtype)
    if dtype == np.int8:
        return rng.integers(-20, 21, size=shape).astype(dtype)
    return rng.integers(100, 156, size=shape).astype(dtype)


def calib(real, dtype, margin=None):
    """Output scale and zero point from the real-valued result range (including 0), as
    quantize_static's MinMax calibration does; a random margin keeps a few values near the
    saturation bounds without pinning most of them there."""
    margin = rng.uniform(0.8, 1.05) if margin is None else margin
    info = np.iinfo(dtype)
    lo, hi = min(float(np.min(real)), 0.0), max(float(np.max(real)), 0.0)
    scale = f32(max(hi - lo, 1e-6) / (info.max - info.min) / margin)
    zp = np.array(np.clip(np.rint(info.min - lo / scale), info.min, info.max), dtype)
    return scale, zp


def add(name, desc, model, inputs, expect=None, twin=False):
    """Run ORT, optionally compare with an exact numpy result, record the case. With
    `twin`, the golden output comes from the u8-weight twin (full-range s8 weights; see
    _common.u8_weight_twin), and the exact numpy check is mandatory."""
    feeds = {vi.name: a for vi, a in zip(model.graph.input, inputs)}
    if twin:
        assert expect is not None
        outs = run_ort(u8_weight_twin(model), feeds)
        desc += " (full-range s8 weights; golden from the u8-weight twin)"
    else:
        outs = run_ort(model, feeds)
    finalize_outputs(model, outs)
    if expect is not None:
        for i, (o, e) in enumerate(zip(outs, expect)):
            if o.dtype.kind == "f":
                ok = np.array_equal(o.view(np.int32), f32(e).view(np.int32))
            else:
                ok = np.array_equal(o, e)
            if not ok:
                bad = np.argwhere(o != e)[:3].tolist()
                raise RuntimeError(f"{name}: output {i} differs from the exact model at {bad}")
    CASES.append((name, desc, model, inputs, outs))


# ---------------------------------------------------------------- QLinearMatMul

def qlinear_matmul(name, a_shape, b_shape, adt, bdt, ydt, per_col=False, b_input=False,
                   scales=None, a=None, b=None, zps=None, full_s8=False):
    a = rand_q(adt, a_shape) if a is None else a
    if b is None:
        b = rand_q(bdt, b_shape) if full_s8 else weight(bdt, b_shape)
    n = b_shape[-1]
    za = zp_for(adt) if zps is None else np.array(zps[0], adt)
    zb = zp_for(bdt, (n,) if per_col else None, sym=(bdt == np.int8)) if zps is None else np.array(zps[1], bdt)
    acc = np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - zb)
    if scales is None:
        sa = rand_scale(0.005, 0.05)
        sb = rand_scale(0.001, 0.02, (n,) if per_col else None)
        sy, zy = calib(acc * sa * sb, ydt)
    else:
        sa, sb, sy = (f32(s) for s in scales)
        zy = zp_for(ydt) if zps is None else np.array(zps[2], ydt)
    expect = requant(acc, f32(sa * sb) / sy, zy, ydt)
    init = {"a_scale": sa, "a_zp": za, "b_scale": sb, "b_zp": zb, "y_scale": sy, "y_zp": zy}
    inputs = {"a": a}
    if b_input:
        inputs["b"] = b
    else:
        init["b"] = b
    node = helper.make_node(
        "QLinearMatMul", ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"], ["y"]
    )
    model = make_model([node], inputs, init, [("y", ydt)])
    desc = f"QLinearMatMul {a_shape}x{b_shape} {np.dtype(adt)}x{np.dtype(bdt)}->{np.dtype(ydt)}"
    add(name, desc + (" per-column" if per_col else ""), model, list(inputs.values()), [expect],
        twin=full_s8)


def gen_qlinear_matmul():
    u8, i8 = np.uint8, np.int8
    for m, k, n in [(1, 1, 1), (3, 5, 7), (8, 8, 8), (17, 33, 9), (1, 64, 10), (33, 17, 65)]:
        qlinear_matmul(f"qlmm_u8u8_{m}x{k}x{n}", (m, k), (k, n), u8, u8, u8)
    for m, k, n in [(3, 5, 7), (17, 33, 9), (16, 64, 16)]:
        qlinear_matmul(f"qlmm_u8i8_{m}x{k}x{n}", (m, k), (k, n), u8, i8, u8)
    qlinear_matmul("qlmm_i8i8_5x13x11", (5, 13), (13, 11), i8, i8, i8)
    qlinear_matmul("qlmm_i8i8_16x32x8", (16, 32), (32, 8), i8, i8, i8)
    qlinear_matmul("qlmm_u8i8_percol_7x19x13", (7, 19), (19, 13), u8, i8, u8, per_col=True)
    qlinear_matmul("qlmm_u8u8_percol_4x24x6", (4, 24), (24, 6), u8, u8, u8, per_col=True)
    qlinear_matmul("qlmm_i8i8_percol_6x10x5", (6, 10), (10, 5), i8, i8, i8, per_col=True)
    qlinear_matmul("qlmm_u8i8_3d_2x5x12_12x7", (2, 5, 12), (12, 7), u8, i8, u8)
    qlinear_matmul("qlmm_u8u8_3d_batched_b", (3, 4, 6), (3, 6, 5), u8, u8, u8, b_input=True)
    qlinear_matmul("qlmm_u8i8_3d_percol", (2, 3, 9), (9, 4), u8, i8, u8, per_col=True)
    # Power-of-two scales with small operands: the multiplier is 2^-k, so about half the
    # accumulators land on exact .5 ties and round-half-even decides.
    qlinear_matmul("qlmm_u8u8_ties_pow2", (6, 7), (7, 8), u8, u8, u8, scales=(1.0, 1.0, 4.0),
                   a=rand_q(u8, (6, 7), 124, 132), b=rand_q(u8, (7, 8), 125, 131), zps=(128, 128, 128))
    qlinear_matmul("qlmm_i8i8_ties_half", (5, 3), (3, 6), i8, i8, i8, scales=(0.5, 0.25, 0.25),
                   a=rand_q(i8, (5, 3), -6, 6), b=rand_q(i8, (3, 6), -5, 5), zps=(1, 0, -3))
    # Large accumulators (> 2^24, where f32(acc) itself rounds) and saturation at both ends.
    a = np.full((2, 2048), 255, np.uint8)
    a[1, ::3] = 0
    b = rand_q(np.int8, (2048, 3), -64, 63)
    b[:, 0] = 63
    b[:, 1] = -64
    qlinear_matmul("qlmm_u8i8_large_acc", (2, 2048), (2048, 3), u8, i8, u8,
                   scales=(1.0, 1.0, 262144.0), a=a, b=b, zps=(0, 0, 128))
    qlinear_matmul("qlmm_u8i8_fullrange_9x64x12", (9, 64), (64, 12), u8, i8, u8, full_s8=True)
    qlinear_matmul("qlmm_u8i8_fullrange_percol", (5, 40), (40, 7), u8, i8, u8, per_col=True, full_s8=True)
    qlinear_matmul("qlmm_u8u8_saturate", (4, 40), (40, 4), u8, u8, u8, scales=(0.9, 0.8, 0.01))


# ---------------------------------------------------------------- QLinearConv

def qlinear_conv(name, x_shape, k, kernel, xdt, wdt, stride=1, pads=None, dil=1, group=1,
                 bias=True, per_ch=False, ydt=None, full_s8=False):
    ydt = ydt or xdt
    rank = len(kernel)
    c = x_shape[1]
    strides = [stride] * rank if np.isscalar(stride) else list(stride)
    dils = [dil] * rank if np.isscalar(dil) else list(dil)
    pads = [0] * (2 * rank) if pads is None else list(pads)
    x = rand_q(xdt, x_shape)
    w = rand_q(wdt, (k, c // group, *kernel)) if full_s8 else weight(wdt, (k, c // group, *kernel))
    sx = rand_scale(0.005, 0.05)
    sw = rand_scale(0.001, 0.02, (k,) if per_ch else None)
    zx = zp_for(xdt)
    zw = np.zeros((k,), wdt) if per_ch else zp_for(wdt, sym=(wdt == np.int8))
    b = rng.integers(-5000, 5000, size=(k,)).astype(np.int32) if bias else None
    acc = conv_int(x.astype(np.int64) - zx, w.astype(np.int64) - (zw.reshape(-1, *[1] * (rank + 1)) if per_ch else zw),
                   strides, pads, dils, group)
    if bias:
        acc = acc + b.reshape(1, -1, *[1] * rank)
    sw_b = sw.reshape(1, -1, *[1] * rank) if per_ch else sw
    sy, zy = calib(acc * sx * sw_b, ydt)
    scale = (f32(sx * sw) / sy)
    expect = requant(acc, scale.reshape(1, -1, *[1] * rank) if per_ch else scale, zy, ydt)
    init = {"x_scale": sx, "x_zp": zx, "w": w, "w_scale": sw, "w_zp": zw, "y_scale": sy, "y_zp": zy}
    ins = ["x", "x_scale", "x_zp", "w", "w_scale", "w_zp", "y_scale", "y_zp"]
    if bias:
        init["b"] = b
        ins.append("b")
    node = helper.make_node("QLinearConv", ins, ["y"], kernel_shape=list(kernel), strides=strides,
                            pads=pads, dilations=dils, group=group)
    model = make_model([node], {"x": x}, init, [("y", ydt)])
    desc = (f"QLinearConv x{list(x_shape)} k={k} kernel={list(kernel)} stride={strides} pads={pads} "
            f"dil={dils} group={group} {np.dtype(xdt)}/{np.dtype(wdt)}"
            + (" per-channel" if per_ch else "") + (" bias" if bias else ""))
    add(name, desc, model, [x], [expect], twin=full_s8)


def gen_qlinear_conv():
    u8, i8 = np.uint8, np.int8
    qlinear_conv("qlconv_u8u8_3x3_pad1", (1, 3, 8, 8), 4, (3, 3), u8, u8, pads=[1, 1, 1, 1])
    qlinear_conv("qlconv_u8u8_nobias_odd", (2, 5, 7, 5), 3, (3, 3), u8, u8, bias=False)
    qlinear_conv("qlconv_u8i8_perch_3x3", (1, 8, 9, 9), 16, (3, 3), u8, i8, pads=[1, 1, 1, 1], per_ch=True)
    qlinear_conv("qlconv_u8i8_pertensor_1x1", (1, 16, 6, 6), 8, (1, 1), u8, i8)
    qlinear_conv("qlconv_i8i8_3x3", (1, 4, 6, 7), 6, (3, 3), i8, i8, pads=[1, 1, 1, 1])
    qlinear_conv("qlconv_i8i8_perch_stride2", (1, 6, 11, 11), 5, (3, 3), i8, i8, stride=2,
                 pads=[1, 1, 1, 1], per_ch=True)
    qlinear_conv("qlconv_u8u8_asym_pads", (1, 3, 7, 6), 4, (3, 3), u8, u8, pads=[1, 0, 0, 2])
    qlinear_conv("qlconv_u8i8_stride2_5x5", (1, 3, 13, 12), 8, (5, 5), u8, i8, stride=2,
                 pads=[2, 2, 2, 2], per_ch=True)
    qlinear_conv("qlconv_u8u8_dilation2", (1, 4, 10, 10), 4, (3, 3), u8, u8, dil=2, pads=[2, 2, 2, 2])
    qlinear_conv("qlconv_u8i8_group2", (1, 8, 6, 6), 6, (3, 3), u8, i8, group=2, pads=[1, 1, 1, 1],
                 per_ch=True)
    qlinear_conv("qlconv_u8i8_depthwise", (1, 12, 9, 9), 12, (3, 3), u8, i8, group=12,
                 pads=[1, 1, 1, 1], per_ch=True)
    qlinear_conv("qlconv_u8u8_depthwise_s2", (1, 8, 10, 10), 8, (3, 3), u8, u8, group=8, stride=2,
                 pads=[1, 1, 1, 1])
    qlinear_conv("qlconv_i8i8_depthwise_5x5", (1, 6, 8, 8), 6, (5, 5), i8, i8, group=6,
                 pads=[2, 2, 2, 2], per_ch=True)
    qlinear_conv("qlconv_u8i8_rect_3x1", (2, 4, 7, 5), 3, (3, 1), u8, i8, stride=(2, 1),
                 pads=[1, 0, 1, 0])
    qlinear_conv("qlconv_u8i8_wide_k", (1, 32, 5, 5), 40, (3, 3), u8, i8, pads=[1, 1, 1, 1], per_ch=True)
    qlinear_conv("qlconv_u8i8_fullrange_perch", (1, 16, 7, 7), 8, (3, 3), u8, i8, pads=[1, 1, 1, 1],
                 per_ch=True, full_s8=True)
    qlinear_conv("qlconv_u8i8_fullrange_depthwise", (1, 8, 6, 6), 8, (3, 3), u8, i8, group=8,
                 pads=[1, 1, 1, 1], full_s8=True)


def causal_conv1d(name, c, k, length, kernel, dil, xdt, wdt, per_ch, group=1):
    qlinear_conv(name, (1, c, length), k, (kernel,), xdt, wdt, pads=[(kernel - 1) * dil, 0],
                 dil=dil, per_ch=per_ch, group=group)


def gen_causal():
    u8, i8 = np.uint8, np.int8
    causal_conv1d("qlconv1d_causal_u8u8_k3", 4, 6, 16, 3, 1, u8, u8, False)
    causal_conv1d("qlconv1d_causal_u8i8_perch_k3_d2", 8, 8, 20, 3, 2, u8, i8, True)
    causal_conv1d("qlconv1d_causal_u8i8_k2_d4", 6, 5, 17, 2, 4, u8, i8, False)
    causal_conv1d("qlconv1d_causal_i8i8_perch_k4", 5, 7, 13, 4, 1, i8, i8, True)
    causal_conv1d("qlconv1d_causal_depthwise_d8", 8, 8, 40, 2, 8, u8, i8, True, group=8)


# ---------------------------------------------------------------- MatMulInteger / ConvInteger

def matmul_integer(name, a_shape, b_shape, adt, bdt, per_col=False):
    a, b = rand_q(adt, a_shape), weight(bdt, b_shape)
    n = b_shape[-1]
    za = zp_for(adt)
    zb = zp_for(bdt, (n,) if per_col else None)
    acc = np.matmul(a.astype(np.int64) - za, b.astype(np.int64) - zb).astype(np.int32)
    node = helper.make_node("MatMulInteger", ["a", "b", "a_zp", "b_zp"], ["y"])
    model = make_model([node], {"a": a}, {"b": b, "a_zp": za, "b_zp": zb}, [("y", np.int32)])
    add(name, f"MatMulInteger {a_shape}x{b_shape} {np.dtype(adt)}x{np.dtype(bdt)}"
        + (" per-column zp" if per_col else ""), model, [a], [acc])


def conv_integer(name, x_shape, k, kernel, stride=1, pads=None, dil=1, group=1, wdt=np.uint8):
    rank = len(kernel)
    pads = [0] * (2 * rank) if pads is None else pads
    x = rand_q(np.uint8, x_shape)
    w = weight(wdt, (k, x_shape[1] // group, *kernel))
    zx, zw = zp_for(np.uint8), zp_for(wdt)
    acc = conv_int(x.astype(np.int64) - zx, w.astype(np.int64) - zw, [stride] * rank, pads,
                   [dil] * rank, group).astype(np.int32)
    node = helper.make_node("ConvInteger", ["x", "w", "x_zp", "w_zp"], ["y"], kernel_shape=list(kernel),
                            strides=[stride] * rank, pads=pads, dilations=[dil] * rank, group=group)
    model = make_model([node], {"x": x}, {"w": w, "x_zp": zx, "w_zp": zw}, [("y", np.int32)])
    add(name, f"ConvInteger x{list(x_shape)} k={k} kernel={list(kernel)} stride={stride} pads={pads} "
        f"dil={dil} group={group} u8/{np.dtype(wdt)}", model, [x], [acc])


def gen_integer():
    u8, i8 = np.uint8, np.int8
    matmul_integer("mmint_u8u8_5x7x3", (5, 7), (7, 3), u8, u8)
    matmul_integer("mmint_u8i8_9x33x17", (9, 33), (33, 17), u8, i8)
    matmul_integer("mmint_u8u8_percol_4x10x6", (4, 10), (10, 6), u8, u8, per_col=True)
    matmul_integer("mmint_u8i8_3d", (2, 3, 16), (16, 5), u8, i8)
    matmul_integer("mmint_i8i8_6x12x4", (6, 12), (12, 4), i8, i8)
    conv_integer("convint_u8u8_3x3", (1, 3, 7, 7), 4, (3, 3), pads=[1, 1, 1, 1])
    conv_integer("convint_u8u8_stride2_asym", (2, 4, 9, 8), 5, (3, 3), stride=2, pads=[0, 1, 2, 1])
    conv_integer("convint_u8u8_group_dil", (1, 6, 9, 9), 6, (3, 3), dil=2, group=3, pads=[2, 2, 2, 2])
    conv_integer("convint_u8u8_1d", (1, 4, 15), 3, (4,), pads=[3, 0])
    conv_integer("convint_u8i8_3x3", (1, 5, 6, 6), 3, (3, 3), pads=[1, 1, 1, 1], wdt=i8)


# ---------------------------------------------------------------- Quantize / Dequantize

def quantize(name, shape, ydt, axis=None, ties=False, x=None):
    c = shape[axis] if axis is not None else None
    cshape = (c,) if c else None
    scale = rand_scale(0.01, 0.2, cshape)
    if ties:
        scale = f32([0.5, 0.25, 2.0, 1.0, 0.125, 4.0][:c]) if c else f32(0.5)
    zp = zp_for(ydt, cshape)
    bshape = [1] * len(shape)
    if c:
        bshape[axis] = c
    if x is None:
        # Mostly in range, a few codes past each end to exercise saturation.
        info = np.iinfo(ydt)
        q = rng.integers(info.min - 8, info.max + 9, size=shape) - zp.reshape(bshape).astype(np.int64)
        frac = np.full(shape, 0.5) if ties else rng.uniform(-0.5, 0.5, size=shape)
        x = f32((q + frac) * scale.reshape(bshape))
    kw = {"axis": axis} if axis is not None else {}
    node = helper.make_node("QuantizeLinear", ["x", "scale", "zp"], ["y"], **kw)
    model = make_model([node], {"x": x}, {"scale": scale, "zp": zp}, [("y", ydt)])
    add(name, f"QuantizeLinear f32{list(shape)}->{np.dtype(ydt)}" + (f" axis={axis}" if c else "")
        + (" ties" if ties else ""), model, [x])


def dequantize(name, shape, xdt, axis=None):
    c = shape[axis] if axis is not None else None
    x = rand_q(xdt, shape) if xdt != np.int32 else rng.integers(-2**31, 2**31 - 1, shape).astype(np.int32)
    scale = rand_scale(1e-4, 0.2, (c,) if c else None)
    zp = np.zeros((c,) if c else (), np.int32) if xdt == np.int32 else zp_for(xdt, (c,) if c else None)
    kw = {"axis": axis} if axis is not None else {}
    node = helper.make_node("DequantizeLinear", ["x", "scale", "zp"], ["y"], **kw)
    model = make_model([node], {"x": x}, {"scale": scale, "zp": zp}, [("y", np.float32)])
    add(name, f"DequantizeLinear {np.dtype(xdt)}{list(shape)}" + (f" axis={axis}" if c else ""), model, [x])


def gen_qdq():
    u8, i8 = np.uint8, np.int8
    quantize("quant_u8_pertensor", (2, 3, 5, 4), u8)
    quantize("quant_i8_pertensor", (7, 9), i8)
    quantize("quant_u8_ties", (4, 50), u8, ties=True)
    quantize("quant_i8_ties", (3, 40), i8, ties=True)
    quantize("quant_u8_axis1", (2, 4, 3, 3), u8, axis=1)
    quantize("quant_i8_axis0", (6, 10), i8, axis=0)
    quantize("quant_i8_axis1_ties", (5, 4, 6), i8, axis=1, ties=True)
    special = f32([0.0, -0.0, 1e-30, -1e-30, 1e30, -1e30, 0.7, -0.7, 12.5, -12.5, 127.49, 255.5])
    quantize("quant_u8_extremes", (12,), u8, x=special)
    dequantize("dequant_u8_pertensor", (3, 17), u8)
    dequantize("dequant_i8_pertensor", (2, 3, 4), i8)
    dequantize("dequant_i8_axis1", (2, 5, 3), i8, axis=1)
    dequantize("dequant_u8_axis0", (4, 6), u8, axis=0)
    dequantize("dequant_i32_bias", (64,), np.int32)


# ---------------------------------------------------------------- com.microsoft ops

def real(q, scale, zp):
    return (q.astype(np.float64) - zp) * scale


def ms_binary(name, op, a_shape, b_shape, dt):
    a, b = rand_q(dt, a_shape), rand_q(dt, b_shape)
    sa, za, sb, zb = rand_scale(0.01, 0.1), zp_for(dt), rand_scale(0.01, 0.1), zp_for(dt)
    ra, rb = real(a, sa, za), real(b, sb, zb)
    sy, zy = calib(ra + rb if op == "QLinearAdd" else ra * rb, dt)
    init = {"a_scale": sa, "a_zp": za, "b_scale": sb, "b_zp": zb, "y_scale": sy, "y_zp": zy}
    node = helper.make_node(op, ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp", "y_scale", "y_zp"],
                            ["y"], domain="com.microsoft")
    model = make_model([node], {"a": a, "b": b}, init, [("y", dt)], ms=True)
    add(name, f"{op} {list(a_shape)}+{list(b_shape)} {np.dtype(dt)}", model, [a, b])


def ms_concat(name, shapes, axis, dt, same_scale_as_out=0):
    xs = [rand_q(dt, s) for s in shapes]
    scales = [rand_scale(0.01, 0.15) for _ in xs]
    zps = [zp_for(dt) for _ in xs]
    sy, zy = calib(np.concatenate([real(x, s, z).ravel() for x, s, z in zip(xs, scales, zps)]), dt)
    init = {"y_scale": sy, "y_zp": zy}
    ins = ["y_scale", "y_zp"]
    inputs = {}
    for i, x in enumerate(xs):
        same = i < same_scale_as_out  # ORT copies such inputs without requantizing
        init[f"s{i}"] = sy if same else scales[i]
        init[f"z{i}"] = zy if same else zps[i]
        inputs[f"x{i}"] = x
        ins += [f"x{i}", f"s{i}", f"z{i}"]
    node = helper.make_node("QLinearConcat", ins, ["y"], axis=axis, domain="com.microsoft")
    model = make_model([node], inputs, init, [("y", dt)], ms=True)
    add(name, f"QLinearConcat {shapes} axis={axis} {np.dtype(dt)}", model, xs)


def ms_unary(name, op, shape, dt, full_range=False, **attrs):
    if full_range:  # every code once, so the whole lookup table is checked
        info = np.iinfo(dt)
        x = np.arange(info.min, info.max + 1).astype(dt).reshape(shape)
    else:
        x = rand_q(dt, shape)
    sx, zx = rand_scale(0.02, 0.1), zp_for(dt)
    rx = real(x, sx, zx)
    if op == "QLinearSigmoid":
        ry = 1.0 / (1.0 + np.exp(-rx))
    else:
        ry = np.where(rx >= 0, rx, rx * attrs["alpha"])
    sy, zy = calib(ry, dt)
    init = {"x_scale": sx, "x_zp": zx, "y_scale": sy, "y_zp": zy}
    node = helper.make_node(op, ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"], domain="com.microsoft",
                            **attrs)
    model = make_model([node], {"x": x}, init, [("y", dt)], ms=True)
    add(name, f"{op} {list(shape)} {np.dtype(dt)} {attrs or ''}".strip(), model, [x])


def ms_gap(name, shape, dt, channels_last=False):
    x = rand_q(dt, shape)
    sx, zx = rand_scale(0.01, 0.1), zp_for(dt)
    axes = (1, 2) if channels_last else tuple(range(2, len(shape)))
    sy, zy = calib(real(x, sx, zx).mean(axis=axes), dt)
    init = {"x_scale": sx, "x_zp": zx, "y_scale": sy, "y_zp": zy}
    node = helper.make_node("QLinearGlobalAveragePool", ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"],
                            channels_last=int(channels_last), domain="com.microsoft")
    model = make_model([node], {"x": x}, init, [("y", dt)], ms=True)
    add(name, f"QLinearGlobalAveragePool {list(shape)} {np.dtype(dt)} channels_last={int(channels_last)}",
        model, [x])


def ms_qgemm(name, m, k, n, adt, bdt, with_y, trans_b=False, bias=True, alpha=1.0, per_col=False):
    a = rand_q(adt, (m, k))
    b = weight(bdt, (n, k) if trans_b else (k, n))
    sa = rand_scale(0.005, 0.05)
    sb = rand_scale(0.001, 0.02, (n,) if per_col else None)
    za = zp_for(adt)
    zb = np.zeros((n,), bdt) if per_col else zp_for(bdt, sym=(bdt == np.int8))
    init = {"a_scale": sa, "a_zp": za, "b": b, "b_scale": sb, "b_zp": zb}
    ins = ["a", "a_scale", "a_zp", "b", "b_scale", "b_zp"]
    if bias:
        init["c"] = rng.integers(-3000, 3000, size=(n,)).astype(np.int32)
        ins.append("c")
    elif with_y:
        ins.append("")
    out_dt = np.float32
    if with_y:
        acc = np.matmul(a.astype(np.int64) - za, (b.T if trans_b else b).astype(np.int64) - zb)
        acc = acc + init.get("c", 0)
        init["y_scale"], init["y_zp"] = calib(alpha * acc * sa * sb, adt)
        ins += ["y_scale", "y_zp"]
        out_dt = adt
    node = helper.make_node("QGemm", ins, ["y"], transB=int(trans_b), alpha=alpha, domain="com.microsoft")
    model = make_model([node], {"a": a}, init, [("y", out_dt)], ms=True)
    add(name, f"QGemm {m}x{k}x{n} {np.dtype(adt)}x{np.dtype(bdt)} transB={int(trans_b)} alpha={alpha} "
        f"bias={bias} y_scale={with_y}" + (" per-column" if per_col else ""), model, [a])


def gen_ms():
    u8, i8 = np.uint8, np.int8
    ms_binary("qladd_u8_same", "QLinearAdd", (2, 3, 4, 5), (2, 3, 4, 5), u8)
    ms_binary("qladd_u8_bcast_last", "QLinearAdd", (2, 3, 4, 5), (5,), u8)
    ms_binary("qladd_u8_bcast_chan", "QLinearAdd", (1, 8, 3, 3), (1, 8, 1, 1), u8)
    ms_binary("qladd_i8_bcast_both", "QLinearAdd", (3, 1, 5), (1, 4, 1), i8)
    ms_binary("qladd_u8_scalar", "QLinearAdd", (4, 7), (), u8)
    ms_binary("qlmul_u8_same", "QLinearMul", (3, 17), (3, 17), u8)
    ms_binary("qlmul_i8_bcast", "QLinearMul", (2, 6, 4), (6, 1), i8)
    ms_binary("qlmul_u8_bcast_chan", "QLinearMul", (1, 8, 3, 3), (1, 8, 1, 1), u8)
    ms_concat("qlconcat_u8_axis1", [(1, 3, 4, 4), (1, 5, 4, 4), (1, 2, 4, 4)], 1, u8, same_scale_as_out=1)
    ms_concat("qlconcat_i8_axis0", [(2, 6), (3, 6)], 0, i8)
    ms_concat("qlconcat_u8_last", [(2, 3, 1), (2, 3, 4)], 2, u8)
    ms_gap("qlgap_u8_7x7", (1, 8, 7, 7), u8)
    ms_gap("qlgap_i8_5x3", (2, 16, 5, 3), i8)
    ms_gap("qlgap_u8_big", (1, 4, 28, 28), u8)
    ms_gap("qlgap_u8_nhwc", (1, 4, 4, 8), u8, channels_last=True)
    ms_qgemm("qgemm_u8i8_y", 4, 24, 10, u8, i8, True, trans_b=True)
    ms_qgemm("qgemm_u8i8_f32out", 3, 17, 9, u8, i8, False, trans_b=True)
    ms_qgemm("qgemm_u8u8_y_nobias", 5, 8, 6, u8, u8, True, bias=False)
    ms_qgemm("qgemm_u8u8_f32out_alpha", 2, 12, 7, u8, u8, False, alpha=0.5)
    ms_qgemm("qgemm_u8i8_percol_y", 3, 20, 8, u8, i8, True, trans_b=True, per_col=True)
    ms_unary("qlsigmoid_u8_all", "QLinearSigmoid", (16, 16), u8, full_range=True)
    ms_unary("qlsigmoid_i8_all", "QLinearSigmoid", (2, 128), i8, full_range=True)
    ms_unary("qlsigmoid_u8_4d", "QLinearSigmoid", (1, 3, 5, 5), u8)
    ms_unary("qlleaky_u8_all", "QLinearLeakyRelu", (256,), u8, full_range=True, alpha=0.1)
    ms_unary("qlleaky_i8_all", "QLinearLeakyRelu", (4, 64), i8, full_range=True, alpha=0.01)


def ms_avgpool(name, shape, dt, kernel, strides=None, pads=None, include_pad=0, ceil=0):
    x = rand_q(dt, shape)
    sx, zx = rand_scale(0.01, 0.1), zp_for(dt)
    sy, zy = calib(real(x, sx, zx), dt)
    init = {"x_scale": sx, "x_zp": zx, "y_scale": sy, "y_zp": zy}
    attrs = {"kernel_shape": kernel, "count_include_pad": include_pad, "ceil_mode": ceil}
    if strides:
        attrs["strides"] = strides
    if pads:
        attrs["pads"] = pads
    node = helper.make_node("QLinearAveragePool", ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"],
                            domain="com.microsoft", **attrs)
    model = make_model([node], {"x": x}, init, [("y", dt)], ms=True)
    add(name, f"QLinearAveragePool {list(shape)} {np.dtype(dt)} {attrs}", model, [x])


def ms_softmax(name, shape, dt, opset, axis=None):
    x = rand_q(dt, shape)
    sx, zx = rand_scale(0.02, 0.2), zp_for(dt)
    sy = f32(1.0 / 256.0)
    zy = np.array(0 if dt == np.uint8 else -128, dt)
    init = {"x_scale": sx, "x_zp": zx, "y_scale": sy, "y_zp": zy}
    attrs = {"opset": opset}
    if axis is not None:
        attrs["axis"] = axis
    node = helper.make_node("QLinearSoftmax", ["x", "x_scale", "x_zp", "y_scale", "y_zp"], ["y"],
                            domain="com.microsoft", **attrs)
    model = make_model([node], {"x": x}, init, [("y", dt)], ms=True, opset=opset)
    add(name, f"QLinearSoftmax {list(shape)} {np.dtype(dt)} {attrs}", model, [x])


def ms_where(name, c_shape, x_shape, y_shape, dt):
    c = rng.integers(0, 2, size=c_shape).astype(bool)
    x, y = rand_q(dt, x_shape), rand_q(dt, y_shape)
    sx, zx, sy, zy = rand_scale(0.01, 0.1), zp_for(dt), rand_scale(0.01, 0.1), zp_for(dt)
    sz, zz = calib(np.concatenate([real(x, sx, zx).ravel(), real(y, sy, zy).ravel()]), dt)
    init = {"xs": sx, "xz": zx, "ys": sy, "yz": zy, "zs": sz, "zz": zz}
    node = helper.make_node("QLinearWhere", ["c", "x", "xs", "xz", "y", "ys", "yz", "zs", "zz"], ["z"],
                            domain="com.microsoft")
    model = make_model([node], {"c": c, "x": x, "y": y}, init, [("z", dt)], ms=True)
    add(name, f"QLinearWhere {list(c_shape)} {list(x_shape)} {list(y_shape)} {np.dtype(dt)}", model, [c, x, y])


def q8_resize(name, shape, dt, mode, coord, scales=None, sizes=None, nearest="round_prefer_floor"):
    """Resize on 8-bit codes alone in a graph (onnxruntime's NCHW kernel)."""
    x = rand_q(dt, shape)
    init = {"roi": f32([])}
    ins = ["x", "roi"]
    if scales is not None:
        init["scales"] = f32(scales)
        ins.append("scales")
    else:
        init["scales"] = f32([])
        init["sizes"] = np.array(sizes, np.int64)
        ins += ["scales", "sizes"]
    attrs = {"mode": mode, "coordinate_transformation_mode": coord}
    if mode == "nearest":
        attrs["nearest_mode"] = nearest
    node = helper.make_node("Resize", ins, ["y"], **attrs)
    model = make_model([node], {"x": x}, init, [("y", dt)])
    add(name, f"Resize {list(shape)} {np.dtype(dt)} {attrs} scales={scales} sizes={sizes}", model, [x])


def q8_plain(name, op, shape, dt, **attrs):
    """MaxPool / Pad on 8-bit codes (exact data movement)."""
    x = rand_q(dt, shape)
    init = {}
    ins = ["x"]
    if op == "Pad":
        init["pads"] = np.array(attrs.pop("pads"), np.int64)
        init["value"] = np.array(attrs.pop("value"), dt)
        ins += ["pads", "value"]
    node = helper.make_node(op, ins, ["y"], **attrs)
    model = make_model([node], {"x": x}, init, [("y", dt)])
    add(name, f"{op} {list(shape)} {np.dtype(dt)} {attrs}", model, [x])


def gen_qoperator_extra():
    """QOperator ops onnxruntime's quantize_static emits beyond the first set, and the
    plain ops it keeps on 8-bit tensors."""
    u8, i8 = np.uint8, np.int8
    ms_avgpool("qlavgpool_u8_3x3", (1, 4, 9, 9), u8, [3, 3])
    ms_avgpool("qlavgpool_i8_s2_pad", (2, 3, 8, 7), i8, [3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    ms_avgpool("qlavgpool_u8_incl_pad", (1, 5, 6, 6), u8, [2, 2], strides=[2, 2], pads=[1, 1, 1, 1], include_pad=1)
    ms_avgpool("qlavgpool_u8_ceil", (1, 3, 7, 7), u8, [2, 2], strides=[2, 2], ceil=1)
    ms_avgpool("qlavgpool_u8_global_shape", (1, 6, 5, 5), u8, [5, 5])
    ms_avgpool("qlavgpool_i8_1d", (2, 4, 11), i8, [3], strides=[2])
    ms_softmax("qlsoftmax_u8_last", (4, 10), u8, 13)
    ms_softmax("qlsoftmax_i8_last", (3, 2, 17), i8, 13)
    ms_softmax("qlsoftmax_u8_axis1", (2, 6, 5), u8, 13, axis=1)
    ms_softmax("qlsoftmax_u8_opset12", (2, 3, 4), u8, 12)
    ms_softmax("qlsoftmax_i8_1000", (1, 1000), i8, 13)
    ms_where("qlwhere_u8", (2, 5), (2, 5), (2, 5), u8)
    ms_where("qlwhere_u8_bcast", (3, 1), (1, 6), (3, 6), u8)
    q8_resize("resize_u8_nearest_x2", (1, 3, 4, 5), u8, "nearest", "asymmetric", scales=[1, 1, 2, 2], nearest="floor")
    q8_resize("resize_i8_nearest_half_pixel", (1, 2, 5, 5), i8, "nearest", "half_pixel", sizes=[1, 2, 8, 7])
    q8_resize("resize_u8_linear_half_pixel", (1, 3, 5, 6), u8, "linear", "half_pixel", scales=[1, 1, 2, 1.5])
    q8_resize("resize_u8_linear_align", (2, 2, 4, 4), u8, "linear", "align_corners", sizes=[2, 2, 7, 9])
    q8_resize("resize_i8_linear_asym_down", (1, 4, 9, 8), i8, "linear", "asymmetric", scales=[1, 1, 0.5, 0.75])
    q8_resize("resize_u8_linear_pytorch", (1, 2, 3, 5), u8, "linear", "pytorch_half_pixel", sizes=[1, 2, 6, 11])
    q8_plain("maxpool_u8_3x3", "MaxPool", (1, 4, 8, 8), u8, kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    q8_plain("maxpool_i8_ceil", "MaxPool", (2, 3, 7, 7), i8, kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)
    q8_plain("pad_u8_constant", "Pad", (1, 2, 3, 4), u8, pads=[0, 0, 1, 2, 0, 0, 2, 1], value=37, mode="constant")
    q8_plain("pad_i8_reflect", "Pad", (1, 2, 5, 5), i8, pads=[0, 0, 2, 2, 0, 0, 2, 2], value=0, mode="reflect")


def main():
    gen_qlinear_matmul()
    gen_qlinear_conv()
    gen_causal()
    gen_integer()
    gen_qdq()
    gen_ms()
    gen_qoperator_extra()
    reset_dir(SUITE)
    kf = known_fail("ort-quant")
    entries = []
    for name, desc, model, inputs, outs in CASES:
        save_case(SUITE, name, model, inputs, outs)
        e = {"name": name, "desc": desc, "ops": sorted({n.op_type for n in model.graph.node})}
        e.update({"status": "known-fail", "reason": kf[name]} if name in kf else {"status": "pass"})
        entries.append(e)
    header = ("# Generated by tools/gen_quant_vectors.py (onnxruntime golden outputs); do not edit.\n"
              "# Every pass case must match bit for bit; known-fail reasons live in tools/known_fail.toml.\n")
    write_manifest(SUITE, header, entries)
    print(f"ort-quant: {len(entries)} cases -> {SUITE}")
    stale = set(kf) - {n for n, *_ in CASES}
    if stale:
        print(f"warning: stale known-fail entries: {sorted(stale)}", file=sys.stderr)


if __name__ == "__main__":
    main()
