//! ResNet18: torchvision (7x7/2 stem + maxpool) and the CIFAR-style variant RNC uses
//! (3x3/1 stem, no maxpool, `shortcut` convs, `linear` classifier).

use crate::Result;
use crate::init::GAIN_LINEAR;
use crate::layers::{Act, Builder, ConvSpec};
use pimkit_ir::{BinaryOp, ValueId};

/// BasicBlock (module `m`): conv3x3-bn-relu, conv3x3-bn, shortcut, add, relu.
fn basic_block(
    b: &mut Builder,
    m: &str,
    x: ValueId,
    planes: usize,
    stride: usize,
    shortcut: &str,
) -> Result<ValueId> {
    let cin = b.shape(x)[1];
    let h = b.conv_bn_act(
        &format!("{m}.conv1"),
        &format!("{m}.bn1"),
        &format!("{m}.relu"),
        x,
        ConvSpec::new(planes, 3, stride),
        Act::Relu,
    )?;
    let h = b.conv_bn(
        &format!("{m}.conv2"),
        &format!("{m}.bn2"),
        h,
        ConvSpec::new(planes, 3, 1),
        GAIN_LINEAR,
    )?;
    let sc = if stride != 1 || cin != planes {
        b.conv_bn(
            &format!("{m}.{shortcut}.0"),
            &format!("{m}.{shortcut}.1"),
            x,
            ConvSpec::new(planes, 1, stride),
            GAIN_LINEAR,
        )?
    } else {
        x
    };
    let s = b.binary(&format!("{m}.add"), BinaryOp::Add, h, sc)?;
    b.act(&format!("{m}.relu"), s, Act::Relu)
}

fn stages(b: &mut Builder, mut x: ValueId, shortcut: &str) -> Result<ValueId> {
    for (i, (planes, stride)) in [(64, 1), (128, 2), (256, 2), (512, 2)]
        .into_iter()
        .enumerate()
    {
        for j in 0..2 {
            let m = format!("layer{}.{j}", i + 1);
            x = basic_block(b, &m, x, planes, if j == 0 { stride } else { 1 }, shortcut)?;
        }
    }
    Ok(x)
}

fn head(b: &mut Builder, x: ValueId, fc: &str, classes: usize) -> Result<ValueId> {
    let x = b.global_avg_pool("avgpool", x)?;
    let x = b.flatten("flatten", x)?;
    b.linear(fc, x, classes, true, GAIN_LINEAR)
}

/// torchvision resnet18 (layer-tables.md §1).
pub(super) fn resnet18(b: &mut Builder, x: ValueId, classes: usize) -> Result<ValueId> {
    let x = b.conv_bn_act(
        "conv1",
        "bn1",
        "relu",
        x,
        ConvSpec::new(64, 7, 2).pad(3),
        Act::Relu,
    )?;
    let x = b.maxpool("maxpool", x, 3, 2, 1, false)?;
    let x = stages(b, x, "downsample")?;
    head(b, x, "fc", classes)
}

/// RNC's CIFAR ResNet18 (layer-tables.md §2). The CIFAR code's avg_pool2d(4) assumes a
/// 32x32 input; at 64x64 the table's 512 -> 10 linear implies global pooling, used here.
pub(super) fn cifar_resnet18(b: &mut Builder, x: ValueId, classes: usize) -> Result<ValueId> {
    let x = b.conv_bn_act(
        "conv1",
        "bn1",
        "relu",
        x,
        ConvSpec::new(64, 3, 1),
        Act::Relu,
    )?;
    let x = stages(b, x, "shortcut")?;
    head(b, x, "linear", classes)
}
