//! SqueezeNet1_1 (torchvision topology; RNC uses it at 64x64 with 10 classes).
//! Every conv has a bias and no BatchNorm; Fire modules end in Concat.

use crate::Result;
use crate::init::GAIN_RELU;
use crate::layers::{Act, Builder, ConvSpec};
use pimkit_ir::{Op, ValueId};

fn conv_relu(b: &mut Builder, m: &str, act: &str, x: ValueId, s: ConvSpec) -> Result<ValueId> {
    let y = b.conv(m, x, s.bias(), GAIN_RELU)?;
    b.act(act, y, Act::Relu)
}

/// Fire module `m` (torchvision names: squeeze, expand1x1, expand3x3 and their activations).
fn fire(b: &mut Builder, m: &str, x: ValueId, sq: usize, e1: usize, e3: usize) -> Result<ValueId> {
    let s = conv_relu(
        b,
        &format!("{m}.squeeze"),
        &format!("{m}.squeeze_activation"),
        x,
        ConvSpec::new(sq, 1, 1),
    )?;
    let a = conv_relu(
        b,
        &format!("{m}.expand1x1"),
        &format!("{m}.expand1x1_activation"),
        s,
        ConvSpec::new(e1, 1, 1),
    )?;
    let c = conv_relu(
        b,
        &format!("{m}.expand3x3"),
        &format!("{m}.expand3x3_activation"),
        s,
        ConvSpec::new(e3, 3, 1),
    )?;
    b.node(&format!("{m}.cat"), Op::Concat { axis: 1 }, &[a, c])
}

pub(super) fn squeezenet1_1(b: &mut Builder, x: ValueId, classes: usize) -> Result<ValueId> {
    let mut x = conv_relu(
        b,
        "features.0",
        "features.1",
        x,
        ConvSpec::new(64, 3, 2).pad(0),
    )?;
    // (module index, squeeze, expand) per torchvision; maxpools (3/2, ceil_mode) at 2, 5, 8.
    let plan: [(usize, usize, usize); 8] = [
        (3, 16, 64),
        (4, 16, 64),
        (6, 32, 128),
        (7, 32, 128),
        (9, 48, 192),
        (10, 48, 192),
        (11, 64, 256),
        (12, 64, 256),
    ];
    for idx in 2..13 {
        if let Some(&(_, sq, e)) = plan.iter().find(|p| p.0 == idx) {
            x = fire(b, &format!("features.{idx}"), x, sq, e, e)?;
        } else {
            x = b.maxpool(&format!("features.{idx}"), x, 3, 2, 0, true)?;
        }
    }
    let x = conv_relu(
        b,
        "classifier.1",
        "classifier.2",
        x,
        ConvSpec::new(classes, 1, 1),
    )?;
    let x = b.global_avg_pool("classifier.3", x)?;
    b.flatten("flatten", x)
}
