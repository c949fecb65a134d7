//! PUMA benchmarks (puma.md §5.1): the MLPs as coded in the PUMA compiler's tests
//! (every layer sigmoid(M x), no bias), one `lstm_layer` (two stacked LSTM cells plus an
//! output projection) as a language-model step, LeNet-5 and VGG16.

use crate::init::{GAIN_LINEAR, GAIN_RELU};
use crate::layers::{Act, Builder, ConvSpec};
use crate::params::spec;
use crate::{Def, Params, Result};
use pimkit_ir::{Graph, Op, RnnAttrs, RnnDirection};

const FAMILY: &str = "puma";

pub(crate) fn defs() -> Vec<Def> {
    let batch = || spec("batch", 1, "rows of the input (batch size)");
    vec![
        Def {
            name: "puma_mlp_l4",
            family: FAMILY,
            description: "PUMA MLP-L4: 1024-1024-2048-1024-10, each layer sigmoid(M x) without bias (5,253,120 weights, puma.md §5.1)",
            params: vec![batch()],
            build: |p| mlp("puma_mlp_l4", p, &[1024, 1024, 2048, 1024, 10]),
            float: None,
        },
        Def {
            name: "puma_mlp_l5",
            family: FAMILY,
            description: "PUMA MLP-L5: 1024-2048-3072-3072-1024-10, each layer sigmoid(M x) without bias (20,981,760 weights, puma.md §5.1)",
            params: vec![batch()],
            build: |p| mlp("puma_mlp_l5", p, &[1024, 2048, 3072, 3072, 1024, 10]),
            float: None,
        },
        Def {
            name: "puma_lstm",
            family: FAMILY,
            description: "one PUMA lstm_layer(in, h, out) as a language-model step: two stacked ONNX LSTM cells \
                (PyTorch nn.LSTM(num_layers=2) export) and a Linear h -> out on the last hidden state (puma.md §5.1)",
            params: vec![
                spec(
                    "input",
                    1024,
                    "input features (NMT lstm_layer(1024, 1024, 1024), puma.md §5.1)",
                ),
                spec("hidden", 1024, "hidden size of both cells"),
                spec("out", 1024, "output projection size"),
                spec("seq", 1, "time steps in one call (1 = one decode step)"),
                batch(),
            ],
            build: lstm,
            float: None,
        },
        Def {
            name: "lenet5",
            family: FAMILY,
            description: "LeNet-5 as commonly written in PyTorch: conv5x5(6)-ReLU-maxpool, conv5x5(16)-ReLU-maxpool, fc 120-84-classes",
            params: vec![
                batch(),
                spec(
                    "res",
                    32,
                    "input height and width (LeNet-5: 32x32 grayscale)",
                ),
                spec("classes", 10, "output classes"),
            ],
            build: lenet5,
            float: None,
        },
        Def {
            name: "vgg16",
            family: FAMILY,
            description: "torchvision VGG16: 13 conv3x3+ReLU in 5 stages with maxpools, fc 25088-4096-4096-classes at 224 (≈138M weights, puma.md §5.1)",
            params: vec![
                batch(),
                spec(
                    "res",
                    224,
                    "input height and width (224 as in PUMA's vgg16.cpp, puma.md §5.1)",
                ),
                spec("classes", 1000, "output classes"),
            ],
            build: vgg16,
            float: None,
        },
        Def {
            name: "neurosim_vgg8",
            family: "neurosim",
            description: "DNN+NeuroSim V1.4's VGG-8 on CIFAR-10 (its NetWork_VGG8.csv and models/VGG.py): conv3x3 128,128,pool,256,256,pool,512,512,pool, fc 8192-1024-classes, no biases; 12,973,440 weights, 615.9M MACs (docs/cost.md)",
            params: vec![
                batch(),
                spec("res", 32, "input height and width (CIFAR-10: 32)"),
                spec("classes", 10, "output classes"),
            ],
            build: neurosim_vgg8,
            float: None,
        },
    ]
}

/// NeuroSim's VGG-8: 'same' 3x3 convolutions without bias, ReLU after every layer but the
/// last, 2x2 max pools after the 2nd, 4th and 6th convolution.
fn neurosim_vgg8(p: &Params) -> Result<Graph> {
    let (batch, res, classes) = (p.size("batch")?, p.size("res")?, p.size("classes")?);
    if res < 8 || res % 8 != 0 {
        return Err(p.invalid(format!(
            "res = {res}: three 2x2 pools need a multiple of 8 (CIFAR-10: 32)"
        )));
    }
    let mut b = Builder::new("neurosim_vgg8", p)?;
    let mut x = b.input("input", &[batch, 3, res, res]);
    for (i, (c, pool)) in [
        (128, false),
        (128, true),
        (256, false),
        (256, true),
        (512, false),
        (512, true),
    ]
    .into_iter()
    .enumerate()
    {
        let y = b.conv(
            &format!("conv{}", i + 1),
            x,
            ConvSpec::new(c, 3, 1),
            GAIN_RELU,
        )?;
        x = b.act(&format!("relu{}", i + 1), y, Act::Relu)?;
        if pool {
            x = b.maxpool(&format!("pool{}", i + 1), x, 2, 2, 0, false)?;
        }
    }
    let x = b.flatten("flatten", x)?;
    let x = b.linear("fc1", x, 1024, false, GAIN_RELU)?;
    let x = b.act("relu7", x, Act::Relu)?;
    let x = b.linear("fc2", x, classes, false, GAIN_LINEAR)?;
    b.finish(&[x])
}

fn mlp(name: &str, p: &Params, sizes: &[usize]) -> Result<Graph> {
    let batch = p.size("batch")?;
    let mut b = Builder::new(name, p)?;
    let mut x = b.input("input", &[batch, sizes[0]]);
    for (i, &out) in sizes[1..].iter().enumerate() {
        x = b.linear(&format!("fc{}", i + 1), x, out, false, GAIN_LINEAR)?;
        x = b.act(&format!("sigmoid{}", i + 1), x, Act::Sigmoid)?;
    }
    b.finish(&[x])
}

fn lstm(p: &Params) -> Result<Graph> {
    let (inp, h, out, seq, batch) = (
        p.size("input")?,
        p.size("hidden")?,
        p.size("out")?,
        p.size("seq")?,
        p.size("batch")?,
    );
    let mut b = Builder::new("puma_lstm", p)?;
    let mut x = b.input("input", &[seq, batch, inp]);
    let mut states = Vec::new();
    for l in 0..2 {
        let feat = if l == 0 { inp } else { h };
        let h0 = b.input(&format!("h0.{l}"), &[1, batch, h]);
        let c0 = b.input(&format!("c0.{l}"), &[1, batch, h]);
        // PyTorch LSTM init: U(-1/sqrt(h), 1/sqrt(h)) for every weight and bias.
        let k = 1.0 / (h as f32).sqrt();
        let w = b.weight(
            &format!("lstm.weight_ih_l{l}"),
            &[1, 4 * h, feat],
            |r, n| r.uniform(n, -k, k),
        );
        let rw = b.weight(&format!("lstm.weight_hh_l{l}"), &[1, 4 * h, h], |r, n| {
            r.uniform(n, -k, k)
        });
        let bias = b.weight(&format!("lstm.bias_l{l}"), &[1, 8 * h], |r, n| {
            r.uniform(n, -k, k)
        });
        let attrs = RnnAttrs {
            hidden_size: h,
            direction: RnnDirection::Forward,
            linear_before_reset: false,
            batch_first: false,
        };
        let o = b.node_multi(
            &format!("lstm.l{l}"),
            Op::Lstm(attrs),
            vec![
                Some(x),
                Some(w),
                Some(rw),
                Some(bias),
                None,
                Some(h0),
                Some(c0),
            ],
        )?;
        // Y is [seq, 1, batch, h]; the next layer reads [seq, batch, h] (torch: Squeeze).
        x = b.reshape(&format!("lstm.l{l}.squeeze"), o[0], &[seq, batch, h])?;
        states.extend([o[1], o[2]]);
    }
    let last = b.reshape("last_hidden", states[2], &[batch, h])?;
    let logits = b.linear("decoder", last, out, true, GAIN_LINEAR)?;
    let mut outs = vec![logits];
    outs.extend(states);
    b.finish(&outs)
}

fn conv_relu(
    b: &mut Builder,
    m: &str,
    act: &str,
    x: pimkit_ir::ValueId,
    s: ConvSpec,
) -> Result<pimkit_ir::ValueId> {
    let y = b.conv(m, x, s.bias(), GAIN_RELU)?;
    b.act(act, y, Act::Relu)
}

fn lenet5(p: &Params) -> Result<Graph> {
    let (batch, res, classes) = (p.size("batch")?, p.size("res")?, p.size("classes")?);
    if res < 16 {
        return Err(p.invalid(format!(
            "res = {res} is too small for two 5x5 convs and two 2x2 pools (need >= 16)"
        )));
    }
    let mut b = Builder::new("lenet5", p)?;
    let x = b.input("input", &[batch, 1, res, res]);
    let x = conv_relu(&mut b, "conv1", "relu1", x, ConvSpec::new(6, 5, 1).pad(0))?;
    let x = b.maxpool("pool1", x, 2, 2, 0, false)?;
    let x = conv_relu(&mut b, "conv2", "relu2", x, ConvSpec::new(16, 5, 1).pad(0))?;
    let x = b.maxpool("pool2", x, 2, 2, 0, false)?;
    let x = b.flatten("flatten", x)?;
    let x = b.linear("fc1", x, 120, true, GAIN_RELU)?;
    let x = b.act("relu3", x, Act::Relu)?;
    let x = b.linear("fc2", x, 84, true, GAIN_RELU)?;
    let x = b.act("relu4", x, Act::Relu)?;
    let x = b.linear("fc3", x, classes, true, GAIN_LINEAR)?;
    b.finish(&[x])
}

fn vgg16(p: &Params) -> Result<Graph> {
    let (batch, res, classes) = (p.size("batch")?, p.size("res")?, p.size("classes")?);
    if res < 32 {
        return Err(p.invalid(format!(
            "res = {res} is too small for five 2x2 maxpools (need >= 32)"
        )));
    }
    let mut b = Builder::new("vgg16", p)?;
    let mut x = b.input("input", &[batch, 3, res, res]);
    let cfg: [usize; 18] = [
        64, 64, 0, 128, 128, 0, 256, 256, 256, 0, 512, 512, 512, 0, 512, 512, 512, 0,
    ];
    let mut i = 0;
    for c in cfg {
        if c == 0 {
            x = b.maxpool(&format!("features.{i}"), x, 2, 2, 0, false)?;
            i += 1;
        } else {
            x = conv_relu(
                &mut b,
                &format!("features.{i}"),
                &format!("features.{}", i + 1),
                x,
                ConvSpec::new(c, 3, 1),
            )?;
            i += 2;
        }
    }
    // AdaptiveAvgPool2d((7, 7)) is the identity at 224 and is omitted; other sizes feed
    // 512 * (res/32)^2 features to the classifier, as PUMA's isolated FC layers do.
    let x = b.flatten("flatten", x)?;
    let x = b.linear("classifier.0", x, 4096, true, GAIN_RELU)?;
    let x = b.act("classifier.1", x, Act::Relu)?;
    let x = b.linear("classifier.3", x, 4096, true, GAIN_RELU)?;
    let x = b.act("classifier.4", x, Act::Relu)?;
    let x = b.linear("classifier.6", x, classes, true, GAIN_LINEAR)?;
    b.finish(&[x])
}
