//! torchvision MobileNetV2-1.0 (layer-tables.md §7): (t, c, n, s) settings of Sandler
//! 2018, ReLU6 exported as Clip(0, 6), residual Add when stride 1 and channels match.

use crate::Result;
use crate::init::GAIN_LINEAR;
use crate::layers::{Act, Builder, ConvSpec};
use pimkit_ir::{BinaryOp, ValueId};

/// Conv2dNormActivation with ReLU6 (module `m`: m.0 conv, m.1 bn, m.2 ReLU6).
fn cbr6(b: &mut Builder, m: &str, x: ValueId, s: ConvSpec) -> Result<ValueId> {
    b.conv_bn_act(
        &format!("{m}.0"),
        &format!("{m}.1"),
        &format!("{m}.2"),
        x,
        s,
        Act::Relu6,
    )
}

fn inverted_residual(
    b: &mut Builder,
    m: &str,
    x: ValueId,
    t: usize,
    out: usize,
    stride: usize,
) -> Result<ValueId> {
    let cin = b.shape(x)[1];
    let hidden = cin * t;
    let mut h = x;
    let mut i = 0;
    if t != 1 {
        h = cbr6(b, &format!("{m}.conv.{i}"), h, ConvSpec::new(hidden, 1, 1))?;
        i += 1;
    }
    h = cbr6(
        b,
        &format!("{m}.conv.{i}"),
        h,
        ConvSpec::new(hidden, 3, stride).group(hidden),
    )?;
    let y = b.conv_bn(
        &format!("{m}.conv.{}", i + 1),
        &format!("{m}.conv.{}", i + 2),
        h,
        ConvSpec::new(out, 1, 1),
        GAIN_LINEAR,
    )?;
    if stride == 1 && cin == out {
        b.binary(&format!("{m}.add"), BinaryOp::Add, x, y)
    } else {
        Ok(y)
    }
}

pub(super) fn mobilenet_v2(b: &mut Builder, x: ValueId, classes: usize) -> Result<ValueId> {
    let mut x = cbr6(b, "features.0", x, ConvSpec::new(32, 3, 2))?;
    let settings = [
        (1, 16, 1, 1),
        (6, 24, 2, 2),
        (6, 32, 3, 2),
        (6, 64, 4, 2),
        (6, 96, 3, 1),
        (6, 160, 3, 2),
        (6, 320, 1, 1),
    ];
    let mut idx = 1;
    for (t, c, n, s) in settings {
        for j in 0..n {
            x = inverted_residual(
                b,
                &format!("features.{idx}"),
                x,
                t,
                c,
                if j == 0 { s } else { 1 },
            )?;
            idx += 1;
        }
    }
    let x = cbr6(b, &format!("features.{idx}"), x, ConvSpec::new(1280, 1, 1))?;
    let x = b.global_avg_pool("avgpool", x)?;
    let x = b.flatten("flatten", x)?;
    // classifier.0 is Dropout (identity in eval, absent from the export).
    b.linear("classifier.1", x, classes, true, GAIN_LINEAR)
}
