//! Quantized entries: the vision nets and single QLinearMatMul / QLinearConv kernels (the
//! QUINN workloads, quinn.txt §5.5-5.7), each built in float and passed through
//! [`crate::quantize`] exactly as onnxruntime's quantize_static(QOperator) would.

use crate::layers::Builder;
use crate::params::spec;
use crate::quantize::{QuantOptions, quantize_static};
use crate::vision::{build_net, vision_specs};
use crate::{Def, ParamSpec, Params, Result, ZooError};
use pimkit_ir::{ConvAttrs, DType, Graph, Op};

const FAMILY: &str = "quantized";

fn quant_specs(per_channel: bool, per_channel_help: &'static str) -> Vec<ParamSpec> {
    vec![
        spec("per_channel", per_channel, per_channel_help),
        spec(
            "act",
            "u8",
            "activation type: u8 (QUInt8, ORT default) or i8 (QInt8); both asymmetric, weights are symmetric i8",
        ),
        spec(
            "calib",
            4,
            "calibration inputs (deterministic random, MinMax); the reference recipe uses 4-8 (quinn.md §5.2)",
        ),
    ]
}

const NET_PC: &str =
    "per-channel weight scales; default true as in the verified torchvision recipe (quinn.md §5.2)";
const KERNEL_PC: &str = "per-channel weight scales (default false, quantize_static's default)";

fn net_specs(res: usize) -> Vec<ParamSpec> {
    let mut v: Vec<ParamSpec> = vision_specs(
        res,
        1000,
        "input height and width (torchvision reference size 224)",
    )
    .into_iter()
    .filter(|s| s.name != "bn")
    .collect();
    v.extend(quant_specs(true, NET_PC));
    v
}

fn options(p: &Params) -> Result<QuantOptions> {
    let act = match p.choice("act", &["u8", "i8"])? {
        "i8" => DType::I8,
        _ => DType::U8,
    };
    Ok(QuantOptions {
        per_channel: p.bool("per_channel")?,
        act,
        ..Default::default()
    })
}

/// The most calibration samples a zoo entry takes.
const MAX_CALIB: usize = 4096;

/// Quantize a float graph for entry `name`.
fn finish(name: &str, p: &Params, g: Graph) -> Result<Graph> {
    let opts = options(p)?;
    // Each calibration sample is a full interpreter run: a count past a few thousand is
    // work no user wants (onnxruntime's recipes use 4-100), not a bigger model.
    let calib = p.size("calib")?;
    if calib > MAX_CALIB {
        return Err(crate::ZooError::BadValue {
            entry: name.to_string(),
            param: "calib".into(),
            value: calib.to_string(),
            expected: format!("at most {MAX_CALIB} calibration samples"),
        });
    }
    let mut q = quantize_static(&g, &opts, calib, p.seed()?.wrapping_add(1000)).map_err(|e| {
        ZooError::Quantize {
            entry: name.to_string(),
            msg: e.to_string(),
        }
    })?;
    q.name = name.to_string();
    Ok(q)
}

pub(crate) fn defs() -> Vec<Def> {
    type F = fn(&Params) -> Result<Graph>;
    fn d(
        name: &'static str,
        description: &'static str,
        params: Vec<ParamSpec>,
        (build, float): (F, F),
    ) -> Def {
        Def {
            name,
            family: FAMILY,
            description,
            params,
            build,
            float: Some(float),
        }
    }
    vec![
        d(
            "q_mobilenet_v2",
            "MobileNetV2 quantized as ORT QOperator: QuantizeLinear, 52 QLinearConv (ReLU6 folded), 10 QLinearAdd, QLinearGlobalAveragePool, Reshape, QGemm, DequantizeLinear",
            net_specs(224),
            (
                |p| finish("q_mobilenet_v2", p, build_net("mobilenet_v2", p, true)?),
                |p| build_net("mobilenet_v2", p, true),
            ),
        ),
        d(
            "q_resnet18",
            "ResNet18 quantized as ORT QOperator: 20 QLinearConv, MaxPool on u8, 8 QLinearAdd (ReLU folded), QLinearGlobalAveragePool, QGemm",
            net_specs(224),
            (
                |p| finish("q_resnet18", p, build_net("resnet18", p, true)?),
                |p| build_net("resnet18", p, true),
            ),
        ),
        d(
            "q_squeezenet1_1",
            "SqueezeNet1_1 quantized as ORT QOperator: 26 QLinearConv, MaxPool on u8, 8 QLinearConcat, QLinearGlobalAveragePool",
            net_specs(224),
            (
                |p| finish("q_squeezenet1_1", p, build_net("squeezenet1_1", p, true)?),
                |p| build_net("squeezenet1_1", p, true),
            ),
        ),
        d(
            "q_mobilenet_v3_small",
            "MobileNetV3-small quantized as ORT QOperator: QLinearConv/QLinearMul/QLinearAdd/QGemm; HardSwish and HardSigmoid stay float between DequantizeLinear and QuantizeLinear (no QLinear form in ORT)",
            net_specs(224),
            (
                |p| {
                    finish(
                        "q_mobilenet_v3_small",
                        p,
                        build_net("mobilenet_v3_small", p, true)?,
                    )
                },
                |p| build_net("mobilenet_v3_small", p, true),
            ),
        ),
        d(
            "qlinear_matmul",
            "one QLinearMatMul: u8/i8 A [m, k] (quantized at the input) times a constant i8 B [k, n], dequantized output",
            {
                let mut v = vec![
                    spec(
                        "m",
                        1024,
                        "rows of A (QUINN scales M = K = N = 1024, quinn.txt §5.9; m = 1 gives the vector-matrix form)",
                    ),
                    spec("k", 1024, "inner dimension"),
                    spec("n", 1024, "columns of B"),
                ];
                v.extend(quant_specs(false, KERNEL_PC));
                v
            },
            (
                |p| finish("qlinear_matmul", p, qlinear_matmul_float(p)?),
                qlinear_matmul_float,
            ),
        ),
        d(
            "qlinear_conv",
            "one 2-D QLinearConv with i32 bias: input [1, c, h, w] -> [1, k, h', w']",
            {
                let mut v = vec![
                    spec(
                        "c",
                        8,
                        "input channels (quinn.txt §5.6 sweeps c; Fig. 2 shows C_in = 8)",
                    ),
                    spec("k", 32, "output channels (quinn.txt §5.6: C_out = 32)"),
                    spec("h", 224, "input height (quinn.txt §5.6: 224 x 224)"),
                    spec("w", 224, "input width"),
                    spec("kernel", 3, "square filter size"),
                    spec("stride", 1, "stride"),
                    spec("pad", 1, "symmetric padding on every side"),
                    spec("group", 1, "groups (group = c = k gives a depthwise conv)"),
                    spec("dilation", 1, "dilation"),
                ];
                v.extend(quant_specs(false, KERNEL_PC));
                v
            },
            (
                |p| finish("qlinear_conv", p, qlinear_conv_float(p)?),
                qlinear_conv_float,
            ),
        ),
        d(
            "qlinear_conv1d_causal",
            "one causal 1-D QLinearConv with i32 bias: input [1, c, l], left-only pads [(kernel-1)*dilation, 0], output [1, k, l]",
            {
                let mut v = vec![
                    spec(
                        "c",
                        8,
                        "input channels (quinn.txt §5.7 sweeps c = C_in = C_out, e.g. c8)",
                    ),
                    spec("k", 8, "output channels"),
                    spec("l", 256, "sequence length (quinn.txt §5.7: L = 256)"),
                    spec("kernel", 3, "filter taps K (quinn.txt §5.7: K3 and K7)"),
                    spec("dilation", 1, "dilation"),
                ];
                v.extend(quant_specs(false, KERNEL_PC));
                v
            },
            (
                |p| finish("qlinear_conv1d_causal", p, qlinear_conv1d_causal_float(p)?),
                qlinear_conv1d_causal_float,
            ),
        ),
    ]
}

fn qlinear_matmul_float(p: &Params) -> Result<Graph> {
    let (m, k, n) = (p.size("m")?, p.size("k")?, p.size("n")?);
    let mut b = Builder::new("qlinear_matmul", p)?;
    let a = b.input("a", &[m, k]);
    let w = b.weight("b", &[k, n], |r, c| r.kaiming(c, k, 1.0));
    let y = b.node("matmul", Op::MatMul, &[a, w])?;
    b.finish(&[y])
}

fn conv_graph(
    p: &Params,
    name: &str,
    x_shape: &[usize],
    k: usize,
    attrs: ConvAttrs,
) -> Result<Graph> {
    let c = x_shape[1];
    if attrs.group == 0 || !c.is_multiple_of(attrs.group) || !k.is_multiple_of(attrs.group) {
        return Err(p.invalid(format!(
            "group = {} must divide c = {c} and k = {k}",
            attrs.group
        )));
    }
    let per = c / attrs.group;
    let fan_in = per * attrs.kernel.iter().product::<usize>();
    let mut wshape = vec![k, per];
    wshape.extend(&attrs.kernel);
    let mut b = Builder::new(name, p)?;
    let x = b.input("input", x_shape);
    let w = b.weight("conv.weight", &wshape, |r, n| r.kaiming(n, fan_in, 1.0));
    let bias = b.weight("conv.bias", &[k], |r, n| r.uniform(n, -0.05, 0.05));
    let y = b
        .node("conv", Op::Conv(attrs), &[x, w, bias])
        .map_err(|e| match e {
            ZooError::Ir(e) => p.invalid(e.to_string()),
            e => e,
        })?;
    b.finish(&[y])
}

fn qlinear_conv_float(p: &Params) -> Result<Graph> {
    let (c, k, h, w) = (p.size("c")?, p.size("k")?, p.size("h")?, p.size("w")?);
    let (ks, s, pad, group, dil) = (
        p.size("kernel")?,
        p.size("stride")?,
        p.count("pad")?,
        p.size("group")?,
        p.size("dilation")?,
    );
    let attrs = ConvAttrs {
        kernel: vec![ks, ks],
        strides: vec![s, s],
        pads: vec![pad; 4],
        dilations: vec![dil, dil],
        group,
    };
    conv_graph(p, "qlinear_conv", &[1, c, h, w], k, attrs)
}

fn qlinear_conv1d_causal_float(p: &Params) -> Result<Graph> {
    let (c, k, l, ks, dil) = (
        p.size("c")?,
        p.size("k")?,
        p.size("l")?,
        p.size("kernel")?,
        p.size("dilation")?,
    );
    let attrs = ConvAttrs {
        kernel: vec![ks],
        strides: vec![1],
        pads: vec![(ks - 1) * dil, 0],
        dilations: vec![dil],
        group: 1,
    };
    conv_graph(p, "qlinear_conv1d_causal", &[1, c, l], k, attrs)
}
