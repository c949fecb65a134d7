//! A compact MobileNetV2-1.0 builder (layer table: /work/shared/reference/layer-tables.md
//! §7, from the (t, c, n, s) settings of Sandler et al. 2018), in float (Conv + Clip,
//! BatchNorm folded into the conv bias) and in ORT QOperator form (QuantizeLinear,
//! QLinearConv with ReLU6 fused into the output range, QLinearAdd, QLinearGlobalAveragePool,
//! QGemm, DequantizeLinear). Weights are deterministic pseudo-random values.
#![allow(dead_code)]

use pimkit_ir::{ConvAttrs, DType, Graph, Op, PoolKind, Tensor, TensorType, ValueId};

/// (expansion t, output channels c, repeats n, first stride s)
pub const SETTINGS: [(usize, usize, usize, usize); 7] = [
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
];

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f32 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        ((self.0 >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
    }
    fn vec(&mut self, n: usize, scale: f32) -> Vec<f32> {
        (0..n).map(|_| self.next() * scale).collect()
    }
}

/// How a layer is emitted: float ops or QOperator ops.
trait Emit {
    fn conv(
        &mut self,
        g: &mut Graph,
        x: ValueId,
        cin: usize,
        cout: usize,
        k: usize,
        s: usize,
        group: usize,
        relu6: bool,
    ) -> ValueId;
    fn add(&mut self, g: &mut Graph, a: ValueId, b: ValueId) -> ValueId;
    fn head(&mut self, g: &mut Graph, x: ValueId, cin: usize, classes: usize) -> ValueId;
}

fn name(g: &Graph, p: &str) -> String {
    format!("{p}_{}", g.nodes.len())
}

struct Float(Rng);
impl Emit for Float {
    fn conv(
        &mut self,
        g: &mut Graph,
        x: ValueId,
        cin: usize,
        cout: usize,
        k: usize,
        s: usize,
        group: usize,
        relu6: bool,
    ) -> ValueId {
        let fan = (cin / group * k * k) as f32;
        let w = g.add_const(
            name(g, "w"),
            Tensor::from_f32(
                vec![cout, cin / group, k, k],
                self.0.vec(cout * cin / group * k * k, (3.0 / fan).sqrt()),
            ),
        );
        let b = g.add_const(
            name(g, "b"),
            Tensor::from_f32(vec![cout], self.0.vec(cout, 0.1)),
        );
        let y = g
            .op(
                name(g, "conv"),
                Op::Conv(ConvAttrs::simple(vec![k, k], s, k / 2, group)),
                &[x, w, b],
            )
            .unwrap();
        if relu6 {
            g.op(
                name(g, "relu6"),
                Op::Clip {
                    min: Some(0.0),
                    max: Some(6.0),
                },
                &[y],
            )
            .unwrap()
        } else {
            y
        }
    }
    fn add(&mut self, g: &mut Graph, a: ValueId, b: ValueId) -> ValueId {
        g.op(
            name(g, "add"),
            Op::Binary(pimkit_ir::BinaryOp::Add),
            &[a, b],
        )
        .unwrap()
    }
    fn head(&mut self, g: &mut Graph, x: ValueId, cin: usize, classes: usize) -> ValueId {
        let p = g.op("gap", Op::GlobalPool(PoolKind::Avg), &[x]).unwrap();
        let f = g
            .op(
                "flatten",
                Op::Reshape {
                    shape: vec![1, cin],
                },
                &[p],
            )
            .unwrap();
        let w = g.add_const(
            "fc.w",
            Tensor::from_f32(
                vec![classes, cin],
                self.0.vec(classes * cin, (3.0 / cin as f32).sqrt()),
            ),
        );
        let b = g.add_const(
            "fc.b",
            Tensor::from_f32(vec![classes], self.0.vec(classes, 0.1)),
        );
        g.op(
            "fc",
            Op::Gemm {
                alpha: 1.0,
                beta: 1.0,
                trans_a: false,
                trans_b: true,
            },
            &[f, w, b],
        )
        .unwrap()
    }
}

/// QOperator emitter: u8 activations (scale 0.05, zp 0 after ReLU6, zp 128 otherwise),
/// s8 symmetric per-channel weights, i32 biases.
struct Quant {
    rng: Rng,
    last: Option<(f32, u8)>,
}
impl Quant {
    fn scal(g: &mut Graph, v: f32) -> ValueId {
        g.add_const(name(g, "s"), Tensor::from_f32(vec![], vec![v]))
    }
    fn zp(g: &mut Graph, v: u8) -> ValueId {
        g.add_const(name(g, "zp"), Tensor::from_u8(vec![], vec![v]))
    }
    /// Activation quantization of a value produced by this emitter: (scale, zp).
    fn act(relu6: bool) -> (f32, u8) {
        if relu6 { (6.0 / 255.0, 0) } else { (0.05, 128) }
    }
}
impl Emit for Quant {
    fn conv(
        &mut self,
        g: &mut Graph,
        x: ValueId,
        cin: usize,
        cout: usize,
        k: usize,
        s: usize,
        group: usize,
        relu6: bool,
    ) -> ValueId {
        // Input quantization is read back from the producer's y_scale/y_zp constants.
        let (xs, xz) = self.last.unwrap_or((Quant::act(false).0, 128));
        let n = cout * cin / group * k * k;
        let wq: Vec<i8> = (0..n).map(|_| (self.rng.next() * 127.0) as i8).collect();
        let w = g.add_const(
            name(g, "w"),
            Tensor::from_i8(vec![cout, cin / group, k, k], wq),
        );
        let fan = (cin / group * k * k) as f32;
        let ws: Vec<f32> = (0..cout)
            .map(|_| (0.5 + 0.5 * self.rng.next().abs()) * (3.0 / fan).sqrt() / 127.0)
            .collect();
        let wsv = g.add_const(name(g, "ws"), Tensor::from_f32(vec![cout], ws));
        let wz = g.add_const(name(g, "wz"), Tensor::from_i8(vec![cout], vec![0; cout]));
        let bias: Vec<i32> = (0..cout)
            .map(|_| (self.rng.next() * 1000.0) as i32)
            .collect();
        let b = g.add_const(name(g, "bias"), Tensor::from_i32(vec![cout], bias));
        let (ys, yz) = Quant::act(relu6);
        let (xs_v, xz_v, ys_v, yz_v) = (
            Quant::scal(g, xs),
            Quant::zp(g, xz),
            Quant::scal(g, ys),
            Quant::zp(g, yz),
        );
        let y = g
            .add_node(
                name(g, "qconv"),
                Op::QLinearConv(ConvAttrs::simple(vec![k, k], s, k / 2, group)),
                vec![
                    Some(x),
                    Some(xs_v),
                    Some(xz_v),
                    Some(w),
                    Some(wsv),
                    Some(wz),
                    Some(ys_v),
                    Some(yz_v),
                    Some(b),
                ],
            )
            .unwrap()[0];
        self.last = Some((ys, yz));
        y
    }
    fn add(&mut self, g: &mut Graph, a: ValueId, b: ValueId) -> ValueId {
        let (s, z) = Quant::act(false);
        let ins = [
            Some(a),
            Some(Quant::scal(g, s)),
            Some(Quant::zp(g, z)),
            Some(b),
            Some(Quant::scal(g, s)),
            Some(Quant::zp(g, z)),
            Some(Quant::scal(g, s)),
            Some(Quant::zp(g, z)),
        ];
        self.last = Some((s, z));
        g.add_node(name(g, "qadd"), Op::QLinearAdd, ins.to_vec())
            .unwrap()[0]
    }
    fn head(&mut self, g: &mut Graph, x: ValueId, cin: usize, classes: usize) -> ValueId {
        let (xs, xz) = self.last.unwrap_or((0.05, 128));
        let ins = vec![
            Some(x),
            Some(Quant::scal(g, xs)),
            Some(Quant::zp(g, xz)),
            Some(Quant::scal(g, 0.02)),
            Some(Quant::zp(g, 0)),
        ];
        let p = g
            .add_node(
                "qgap",
                Op::QLinearGlobalAveragePool {
                    channels_last: false,
                },
                ins,
            )
            .unwrap()[0];
        let f = g
            .op(
                "flatten",
                Op::Reshape {
                    shape: vec![1, cin],
                },
                &[p],
            )
            .unwrap();
        let wq: Vec<i8> = (0..classes * cin)
            .map(|_| (self.rng.next() * 127.0) as i8)
            .collect();
        let w = g.add_const("fc.w", Tensor::from_i8(vec![classes, cin], wq));
        let ws = g.add_const(
            "fc.ws",
            Tensor::from_f32(vec![classes], vec![0.001; classes]),
        );
        let wz = g.add_const("fc.wz", Tensor::from_i8(vec![classes], vec![0; classes]));
        let b = g.add_const("fc.b", Tensor::from_i32(vec![classes], vec![0; classes]));
        let ins = vec![
            Some(f),
            Some(Quant::scal(g, 0.02)),
            Some(Quant::zp(g, 0)),
            Some(w),
            Some(ws),
            Some(wz),
            Some(b),
            Some(Quant::scal(g, 0.1)),
            Some(Quant::zp(g, 128)),
        ];
        let y = g
            .add_node(
                "qgemm",
                Op::QGemm {
                    alpha: 1.0,
                    trans_a: false,
                    trans_b: true,
                },
                ins,
            )
            .unwrap()[0];
        let ins = vec![Some(y), Some(Quant::scal(g, 0.1)), Some(Quant::zp(g, 128))];
        g.add_node("dequant", Op::DequantizeLinear { axis: 1 }, ins)
            .unwrap()[0]
    }
}

fn body(g: &mut Graph, e: &mut dyn Emit, mut x: ValueId, classes: usize) -> ValueId {
    let mut cin = 32;
    x = e.conv(g, x, 3, 32, 3, 2, 1, true);
    for (t, c, n, s) in SETTINGS {
        for i in 0..n {
            let stride = if i == 0 { s } else { 1 };
            let hidden = cin * t;
            let mut h = x;
            if t != 1 {
                h = e.conv(g, h, cin, hidden, 1, 1, 1, true);
            }
            h = e.conv(g, h, hidden, hidden, 3, stride, hidden, true);
            h = e.conv(g, h, hidden, c, 1, 1, 1, false);
            x = if stride == 1 && cin == c {
                e.add(g, x, h)
            } else {
                h
            };
            cin = c;
        }
    }
    x = e.conv(g, x, cin, 1280, 1, 1, 1, true);
    e.head(g, x, 1280, classes)
}

/// Float MobileNetV2-1.0, input "input" f32[batch, 3, res, res].
pub fn mobilenet_v2(batch: usize, res: usize) -> Graph {
    let mut g = Graph::new("mobilenet_v2");
    let x = g.add_input(
        "input",
        TensorType::new(DType::F32, vec![batch, 3, res, res]),
    );
    let y = body(&mut g, &mut Float(Rng(42)), x, 1000);
    g.outputs.push(y);
    g
}

/// QOperator MobileNetV2-1.0 (as onnxruntime quantize_static emits it), f32 in, f32 out.
pub fn q_mobilenet_v2(res: usize) -> Graph {
    let mut g = Graph::new("q_mobilenet_v2");
    let x = g.add_input("input", TensorType::new(DType::F32, vec![1, 3, res, res]));
    let (s, z) = (Quant::scal(&mut g, 0.02), Quant::zp(&mut g, 128));
    let q = g
        .add_node(
            "quant",
            Op::QuantizeLinear {
                axis: 1,
                to: DType::U8,
            },
            vec![Some(x), Some(s), Some(z)],
        )
        .unwrap()[0];
    let mut e = Quant {
        rng: Rng(7),
        last: Some((0.02, 128)),
    };
    let y = body(&mut g, &mut e, q, 1000);
    g.outputs.push(y);
    g
}
