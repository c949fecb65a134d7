//! MobileNetV3-small: torchvision (layer-tables.md §5) and RNC's custom variant
//! (layer-tables.md §6). HardSwish/HardSigmoid are the opset-14 ops PyTorch exports.

use crate::Result;
use crate::init::{GAIN_LINEAR, GAIN_RELU};
use crate::layers::{Act, Builder, ConvSpec};
use pimkit_ir::{BinaryOp, ValueId};

/// torchvision _make_divisible(v, 8).
fn make_divisible(v: usize) -> usize {
    let nv = 8.max((v + 4) / 8 * 8);
    if (nv as f64) < 0.9 * v as f64 {
        nv + 8
    } else {
        nv
    }
}

/// Squeeze-excitation: GAP, 1x1 conv (bias) + ReLU, 1x1 conv (bias) + HardSigmoid, Mul.
fn se(b: &mut Builder, m: &str, names: [&str; 2], x: ValueId, squeeze: usize) -> Result<ValueId> {
    let c = b.shape(x)[1];
    let s = b.global_avg_pool(&format!("{m}.avgpool"), x)?;
    let s = b.conv(
        &format!("{m}.{}", names[0]),
        s,
        ConvSpec::new(squeeze, 1, 1).bias(),
        GAIN_RELU,
    )?;
    let s = b.act(&format!("{m}.activation"), s, Act::Relu)?;
    let s = b.conv(
        &format!("{m}.{}", names[1]),
        s,
        ConvSpec::new(c, 1, 1).bias(),
        GAIN_LINEAR,
    )?;
    let s = b.act(&format!("{m}.scale_activation"), s, Act::HardSigmoid)?;
    b.binary(&format!("{m}.mul"), BinaryOp::Mul, s, x)
}

/// Conv2dNormActivation `m` (m.0 conv, m.1 bn, m.2 act).
fn cna(b: &mut Builder, m: &str, x: ValueId, s: ConvSpec, act: Act) -> Result<ValueId> {
    b.conv_bn_act(
        &format!("{m}.0"),
        &format!("{m}.1"),
        &format!("{m}.2"),
        x,
        s,
        act,
    )
}

fn act_of(re: bool) -> Act {
    if re { Act::Relu } else { Act::HardSwish }
}

/// (in, kernel, expand, out, se, relu (else hardswish), stride), torchvision mobilenetv3.py.
const TV_SMALL: [(usize, usize, usize, usize, bool, bool, usize); 11] = [
    (16, 3, 16, 16, true, true, 2),
    (16, 3, 72, 24, false, true, 2),
    (24, 3, 88, 24, false, true, 1),
    (24, 5, 96, 40, true, false, 2),
    (40, 5, 240, 40, true, false, 1),
    (40, 5, 240, 40, true, false, 1),
    (40, 5, 120, 48, true, false, 1),
    (48, 5, 144, 48, true, false, 1),
    (48, 5, 288, 96, true, false, 2),
    (96, 5, 576, 96, true, false, 1),
    (96, 5, 576, 96, true, false, 1),
];

pub(super) fn mobilenet_v3_small(b: &mut Builder, x: ValueId, classes: usize) -> Result<ValueId> {
    let mut x = cna(b, "features.0", x, ConvSpec::new(16, 3, 2), Act::HardSwish)?;
    for (i, &(cin, k, exp, out, has_se, re, stride)) in TV_SMALL.iter().enumerate() {
        let m = format!("features.{}.block", i + 1);
        let input = x;
        let mut h = x;
        let mut j = 0;
        if exp != cin {
            h = cna(
                b,
                &format!("{m}.{j}"),
                h,
                ConvSpec::new(exp, 1, 1),
                act_of(re),
            )?;
            j += 1;
        }
        h = cna(
            b,
            &format!("{m}.{j}"),
            h,
            ConvSpec::new(exp, k, stride).group(exp),
            act_of(re),
        )?;
        j += 1;
        if has_se {
            h = se(
                b,
                &format!("{m}.{j}"),
                ["fc1", "fc2"],
                h,
                make_divisible(exp / 4),
            )?;
            j += 1;
        }
        h = cna(
            b,
            &format!("{m}.{j}"),
            h,
            ConvSpec::new(out, 1, 1),
            Act::None,
        )?;
        x = if stride == 1 && cin == out {
            b.binary(&format!("features.{}.add", i + 1), BinaryOp::Add, h, input)?
        } else {
            h
        };
    }
    let x = cna(
        b,
        "features.12",
        x,
        ConvSpec::new(576, 1, 1),
        Act::HardSwish,
    )?;
    let x = b.global_avg_pool("avgpool", x)?;
    let x = b.flatten("flatten", x)?;
    let x = b.linear("classifier.0", x, 1024, true, GAIN_RELU)?;
    let x = b.act("classifier.1", x, Act::HardSwish)?;
    // classifier.2 is Dropout (absent from the eval export).
    b.linear("classifier.3", x, classes, true, GAIN_LINEAR)
}

/// RNC custom MobileNetV3-small (layer-tables.md §6): (kernel, in, expand, out, relu, stride).
const RNC_SMALL: [(usize, usize, usize, usize, bool, usize); 11] = [
    (3, 16, 16, 16, true, 1),
    (3, 16, 72, 24, true, 2),
    (3, 24, 88, 24, true, 1),
    (5, 24, 96, 40, false, 2),
    (5, 40, 240, 40, false, 1),
    (5, 40, 240, 40, false, 1),
    (5, 40, 120, 48, false, 1),
    (5, 48, 144, 48, false, 1),
    (5, 48, 288, 96, false, 2),
    (5, 96, 576, 96, false, 1),
    (5, 96, 576, 96, false, 1),
];

/// Every block: expand 1x1 (even when expand == in), depthwise, SE (reduce = C/4),
/// project; shortcut identity, or a 1x1 `downsample` conv + BN when the shape changes.
pub(super) fn rnc_mobilenet_v3_small(
    b: &mut Builder,
    x: ValueId,
    classes: usize,
) -> Result<ValueId> {
    let mut x = b.conv_bn_act(
        "initial_conv",
        "initial_bn",
        "initial_act",
        x,
        ConvSpec::new(16, 3, 2),
        Act::HardSwish,
    )?;
    for (i, &(k, cin, exp, out, re, stride)) in RNC_SMALL.iter().enumerate() {
        let m = format!("bneck{}", i + 1);
        let a = act_of(re);
        let h = b.conv_bn_act(
            &format!("{m}.expand"),
            &format!("{m}.bn1"),
            &format!("{m}.act1"),
            x,
            ConvSpec::new(exp, 1, 1),
            a,
        )?;
        let h = b.conv_bn_act(
            &format!("{m}.dw"),
            &format!("{m}.bn2"),
            &format!("{m}.act2"),
            h,
            ConvSpec::new(exp, k, stride).group(exp),
            a,
        )?;
        let h = se(b, &format!("{m}.se"), ["reduce", "expand"], h, exp / 4)?;
        let h = b.conv_bn(
            &format!("{m}.project"),
            &format!("{m}.bn3"),
            h,
            ConvSpec::new(out, 1, 1),
            GAIN_LINEAR,
        )?;
        let sc = if stride != 1 || cin != out {
            b.conv_bn(
                &format!("{m}.downsample"),
                &format!("{m}.downsample_bn"),
                x,
                ConvSpec::new(out, 1, stride),
                GAIN_LINEAR,
            )?
        } else {
            x
        };
        x = b.binary(&format!("{m}.add"), BinaryOp::Add, h, sc)?;
    }
    let x = b.conv_bn_act(
        "final_conv",
        "final_bn",
        "final_act",
        x,
        ConvSpec::new(576, 1, 1),
        Act::HardSwish,
    )?;
    let x = b.global_avg_pool("avgpool", x)?;
    let x = b.flatten("flatten", x)?;
    let x = b.linear("classifier.0", x, 1280, true, GAIN_RELU)?;
    let x = b.act("classifier.1", x, Act::HardSwish)?;
    b.linear("classifier.3", x, classes, true, GAIN_LINEAR)
}
