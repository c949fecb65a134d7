//! The vision nets against their published layer tables (layer-tables.md, transcribed
//! in tests/layer_tables): every conv/fc layer's shape, stride, depthwise-ness, output
//! size and MACs in forward order, plus parameter, weight and MAC totals.

mod common;
mod layer_tables;

use common::kv;
use layer_tables::*;
use pimkit_ir::{Graph, GraphStats, Op, ValueDef, node_cost};

struct Layer {
    name: String,
    w: Vec<usize>,
    group: usize,
    stride: usize,
    hout: usize,
    macs: u64,
}

fn layers(g: &Graph) -> Vec<Layer> {
    let mut out = Vec::new();
    for n in &g.nodes {
        let (w, group, stride) = match &n.op {
            Op::Conv(a) => (n.inputs[1], a.group, a.strides[0]),
            Op::Gemm { .. } | Op::MatMul => (n.inputs[1], 1, 1),
            _ => continue,
        };
        let Some(w) = w else { continue };
        if !matches!(g.value(w).def, ValueDef::Const(_)) {
            continue;
        }
        let os = &g.ty(n.outputs[0]).shape;
        out.push(Layer {
            name: n.name.clone(),
            w: g.ty(w).shape.clone(),
            group,
            stride,
            hout: if os.len() == 4 { os[2] } else { 1 },
            macs: node_cost(g, n).macs,
        });
    }
    out
}

fn net(name: &str, extra: &[(&str, &str)]) -> Graph {
    let mut p = kv(&[("weights", "none")]);
    p.extend(kv(extra));
    pimkit_zoo::build(name, &p).unwrap()
}

/// Compare layer by layer; `check_h` when the graph was built at the table's resolution.
fn check(model: &str, g: &Graph, rows: &[Row], check_h: bool) {
    let ls = layers(g);
    assert_eq!(ls.len(), rows.len(), "{model}: weight layer count");
    for (l, r) in ls.iter().zip(rows) {
        let (tname, cin, cout, k, s, dw, hout, macs) = *r;
        let ctx = format!("{model}: layer {} (table row {tname})", l.name);
        if l.w.len() == 2 {
            assert!(
                l.w == [cout, cin] || l.w == [cin, cout],
                "{ctx}: fc weight {:?}",
                l.w
            );
        } else {
            let per = if dw { 1 } else { cin };
            assert_eq!(l.w, vec![cout, per, k, k], "{ctx}: conv weight");
            assert_eq!(l.group > 1, dw, "{ctx}: depthwise");
            if dw {
                assert_eq!(l.group, cin, "{ctx}: groups");
            }
            assert_eq!(l.stride, s, "{ctx}: stride");
        }
        if check_h && hout != 0 {
            assert_eq!(l.hout, hout, "{ctx}: output height");
        }
        if check_h && macs != 0 {
            assert_eq!(l.macs, macs, "{ctx}: MACs");
        }
    }
}

fn weights_total(g: &Graph) -> u64 {
    layers(g)
        .iter()
        .map(|l| l.w.iter().product::<usize>() as u64)
        .sum()
}

/// Trainable parameters as torchvision counts them (BatchNorm gamma/beta, not its
/// running statistics); needs `bn=keep`.
fn torch_params(g: &Graph) -> u64 {
    g.values
        .iter()
        .filter(|v| matches!(v.def, ValueDef::Const(_)))
        .filter(|v| !v.name.ends_with("running_mean") && !v.name.ends_with("running_var"))
        .map(|v| v.ty.numel() as u64)
        .sum()
}

fn macs(g: &Graph) -> u64 {
    GraphStats::of(g).macs
}

fn approx(got: u64, want: f64, tol: f64, what: &str) {
    assert!((got as f64 - want).abs() <= tol, "{what}: {got} vs {want}");
}

#[test]
fn resnet18_matches_table() {
    let g = net("resnet18", &[]);
    check("resnet18", &g, TV_RESNET18, true);
    assert_eq!(weights_total(&g), 11_678_912);
    assert_eq!(macs(&g), 1_814_073_344);
    let keep = net("resnet18", &[("bn", "keep")]);
    assert_eq!(torch_params(&keep), 11_689_512);
    assert_eq!(common::count_ops(&keep, "BatchNormalization"), 20);
    assert_eq!(common::count_ops(&g, "BatchNormalization"), 0);
    // Same conv/fc layers whether BN is folded or kept.
    check("resnet18 bn=keep", &keep, TV_RESNET18, true);
    // 10 classes only changes the fc (layer-tables.md summary: 11,172,032 weights).
    assert_eq!(
        weights_total(&net("resnet18", &[("classes", "10"), ("res", "64")])),
        11_172_032
    );
    approx(
        macs(&net("resnet18", &[("res", "64")])),
        148.6e6,
        0.05e6,
        "resnet18@64 MACs",
    );
}

#[test]
fn rnc_resnet18_matches_table() {
    let g = net("rnc_resnet18", &[]);
    check("rnc_resnet18", &g, RNC_RESNET18, true);
    assert_eq!(weights_total(&g), 11_164_352);
    approx(macs(&g), 2.222e9, 0.0005e9, "rnc_resnet18 MACs");
}

#[test]
fn mobilenet_v2_matches_table() {
    let g = net("mobilenet_v2", &[]);
    check("mobilenet_v2", &g, MBV2, true);
    assert_eq!(weights_total(&g), 3_469_760);
    assert_eq!(macs(&g), 300_774_272);
    assert_eq!(
        torch_params(&net("mobilenet_v2", &[("bn", "keep")])),
        3_504_872
    );
    assert_eq!(common::count_ops(&g, "Add"), 10);
    assert_eq!(common::count_ops(&g, "Clip"), 35);
}

#[test]
fn squeezenet1_1_matches_table() {
    let g = net("squeezenet1_1", &[]);
    check("squeezenet1_1", &g, TV_SQUEEZENET1_1, true);
    assert_eq!(weights_total(&g), 1_231_552);
    assert_eq!(torch_params(&g), 1_235_496);
    approx(macs(&g), 349.2e6, 0.05e6, "squeezenet1_1 MACs");
    approx(
        macs(&net("squeezenet1_1", &[("res", "64")])),
        21.6e6,
        0.05e6,
        "squeezenet1_1@64 MACs",
    );
    assert_eq!(common::count_ops(&g, "Concat"), 8);
    let r = net("rnc_squeezenet1_1", &[]);
    // RNC: torchvision topology, final conv 512 -> 10 (layer-tables.md §4).
    let mut rows = TV_SQUEEZENET1_1.to_vec();
    rows.last_mut().unwrap().2 = 10;
    check("rnc_squeezenet1_1", &r, &rows, false);
    assert_eq!(weights_total(&r), 724_672);
    approx(macs(&r), 17.0e6, 0.05e6, "rnc_squeezenet1_1 MACs");
}

#[test]
fn mobilenet_v3_small_matches_table() {
    let g = net("mobilenet_v3_small", &[]);
    check("mobilenet_v3_small", &g, TV_MBV3_SMALL, true);
    assert_eq!(weights_total(&g), 2_525_832);
    approx(macs(&g), 56.5e6, 0.05e6, "mobilenet_v3_small MACs");
    assert_eq!(
        torch_params(&net("mobilenet_v3_small", &[("bn", "keep")])),
        2_542_856
    );
    assert_eq!(common::count_ops(&g, "HardSigmoid"), 9);
    assert_eq!(common::count_ops(&g, "Mul"), 9);
    let small = net("mobilenet_v3_small", &[("res", "64"), ("classes", "10")]);
    assert_eq!(weights_total(&small), 1_512_072);
    approx(macs(&small), 5.5e6, 0.05e6, "mobilenet_v3_small@64/10 MACs");
}

#[test]
fn rnc_mobilenet_v3_small_matches_table() {
    let g = net("rnc_mobilenet_v3_small", &[]);
    check("rnc_mobilenet_v3_small", &g, RNC_MBV3_SMALL, true);
    assert_eq!(weights_total(&g), 1_671_080);
    approx(macs(&g), 18.3e6, 0.05e6, "rnc_mobilenet_v3_small MACs");
    assert_eq!(common::count_ops(&g, "Add"), 11);
}

#[test]
fn puma_benchmarks_match_reference() {
    let w = |name: &str, p: &[(&str, &str)]| weights_total(&net(name, p));
    assert_eq!(w("puma_mlp_l4", &[]), 5_253_120);
    assert_eq!(w("puma_mlp_l5", &[]), 20_981_760);
    let vgg = net("vgg16", &[]);
    assert_eq!(layers(&vgg).len(), 16);
    approx(weights_total(&vgg), 138.3e6, 0.1e6, "vgg16 weights");
    approx(macs(&vgg), 15.47e9, 0.01e9, "vgg16 MACs");
    let lenet = net("lenet5", &[]);
    assert_eq!(weights_total(&lenet), 150 + 2400 + 48000 + 10080 + 840);
    // PUMA lstm_layer(1024, 1024, 1024): two cells of 4*(in*h + h*h) plus h -> out.
    let l = net("puma_lstm", &[]);
    let lstm_w: u64 = l
        .values
        .iter()
        .filter(|v| v.name.starts_with("lstm.weight"))
        .map(|v| v.ty.numel() as u64)
        .sum();
    assert_eq!(lstm_w, 2 * 4 * (1024 * 1024 + 1024 * 1024));
    assert_eq!(common::count_ops(&l, "LSTM"), 2);
}
