//! Vision nets rebuilt from their published layer tables
//! (/work/shared/reference/layer-tables.md, rnc.md §2): torchvision ResNet18, MobileNetV2,
//! MobileNetV3-small and SqueezeNet1_1, and the variants the RNC repository evaluates
//! (CIFAR-style ResNet18, 10-class SqueezeNet1_1, custom MobileNetV3-small at 64x64).
//! Module paths follow the PyTorch source, so node names read like "layer1.0.conv1".

mod mobilenet_v2;
mod mobilenet_v3;
mod resnet;
mod squeezenet;

use crate::layers::Builder;
use crate::params::spec;
use crate::{Def, ParamSpec, Params, Result};
use pimkit_ir::{Graph, ValueId};

const FAMILY: &str = "vision";

/// Parameters shared by the vision nets (and their quantized forms).
pub(crate) fn vision_specs(res: usize, classes: usize, source: &'static str) -> Vec<ParamSpec> {
    vec![
        spec("batch", 1, "batch size N of the [N, 3, res, res] input"),
        spec("res", res, source),
        spec("classes", classes, "output classes of the classifier"),
        spec(
            "bn",
            "fold",
            "fold: BatchNorm folded into the conv (PyTorch eval-mode export); keep: explicit BatchNormalization nodes",
        ),
    ]
}

const TV_RES: &str = "input height and width (torchvision reference size 224, layer-tables.md)";
const RNC_RES: &str = "input height and width (RNC feeds 1x3x64x64, rnc.md §0 item 2)";

/// The net-building functions, by entry name (shared with the quantized entries).
pub(crate) type NetFn = fn(&mut Builder, ValueId, usize) -> Result<ValueId>;

pub(crate) fn net_fn(name: &str) -> Option<NetFn> {
    Some(match name {
        "resnet18" => resnet::resnet18,
        "rnc_resnet18" => resnet::cifar_resnet18,
        "mobilenet_v2" => mobilenet_v2::mobilenet_v2,
        "mobilenet_v3_small" => mobilenet_v3::mobilenet_v3_small,
        "rnc_mobilenet_v3_small" => mobilenet_v3::rnc_mobilenet_v3_small,
        "squeezenet1_1" | "rnc_squeezenet1_1" => squeezenet::squeezenet1_1,
        _ => return None,
    })
}

/// Build float net `name` with the vision parameters of `p` (BN per `bn`, or forced
/// folded when `force_fold`).
pub(crate) fn build_net(name: &str, p: &Params, force_fold: bool) -> Result<Graph> {
    let f = net_fn(name).ok_or_else(|| p.invalid(format!("no vision net '{name}'")))?;
    let batch = p.size("batch")?;
    let res = p.size("res")?;
    let classes = p.size("classes")?;
    let mut b = Builder::new(name, p)?;
    b.fold_bn = force_fold || p.choice("bn", &["fold", "keep"])? == "fold";
    if name.contains("mobilenet_v3") {
        // torchvision MobileNetV3 builds its BatchNorm with eps = 0.001.
        b.bn_eps = 1e-3;
    }
    let x = b.input("input", &[batch, 3, res, res]);
    let y = f(&mut b, x, classes)?;
    b.finish(&[y])
}

pub(crate) fn defs() -> Vec<Def> {
    fn d(
        name: &'static str,
        description: &'static str,
        params: Vec<ParamSpec>,
        build: fn(&Params) -> Result<Graph>,
    ) -> Def {
        Def {
            name,
            family: FAMILY,
            description,
            params,
            build,
            float: None,
        }
    }
    vec![
        d(
            "resnet18",
            "torchvision ResNet18: 20 convs + fc, 11.69M params, 1.82 GMACs at 224 (layer-tables.md §1)",
            vision_specs(224, 1000, TV_RES),
            |p| build_net("resnet18", p, false),
        ),
        d(
            "mobilenet_v2",
            "torchvision MobileNetV2-1.0: 52 convs (17 depthwise) + fc, 3.50M params, 300.8M MACs at 224 (layer-tables.md §7)",
            vision_specs(224, 1000, TV_RES),
            |p| build_net("mobilenet_v2", p, false),
        ),
        d(
            "mobilenet_v3_small",
            "torchvision MobileNetV3-small: 52 convs (11 depthwise, 18 SE) + 2 fc, 2.54M params, 56.5M MACs at 224 (layer-tables.md §5)",
            vision_specs(224, 1000, TV_RES),
            |p| build_net("mobilenet_v3_small", p, false),
        ),
        d(
            "squeezenet1_1",
            "torchvision SqueezeNet1_1: 26 convs, 8 Fire modules (Concat), 1.24M params (layer-tables.md §4)",
            vision_specs(224, 1000, TV_RES),
            |p| build_net("squeezenet1_1", p, false),
        ),
        d(
            "rnc_resnet18",
            "RNC's CIFAR-style ResNet18 (3x3 stride-1 stem, no maxpool) at 64x64, 10 classes (layer-tables.md §2)",
            vision_specs(64, 10, RNC_RES),
            |p| build_net("rnc_resnet18", p, false),
        ),
        d(
            "rnc_squeezenet1_1",
            "RNC's SqueezeNet1_1: torchvision topology at 64x64, 10 classes (layer-tables.md §4)",
            vision_specs(64, 10, RNC_RES),
            |p| build_net("rnc_squeezenet1_1", p, false),
        ),
        d(
            "rnc_mobilenet_v3_small",
            "RNC's custom MobileNetV3-small at 64x64, 10 classes: SE in every block, 1x1 downsample shortcuts, 576->1280->10 classifier (layer-tables.md §6)",
            vision_specs(64, 10, RNC_RES),
            |p| build_net("rnc_mobilenet_v3_small", p, false),
        ),
    ]
}
