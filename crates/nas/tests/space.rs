//! Search-space encoding, candidate graphs and ONNX export.

use pimkit_nas::space::make_divisible;
use pimkit_nas::{Config, Space, SuperNet, build_shape_only, build_with_weights};
use pimkit_xbar::{LayerKind, extract};
use rand::{RngExt, SeedableRng};

fn space() -> Space {
    Space::load("mbv3-small").unwrap()
}

#[test]
fn builtin_space_matches_reference() {
    let s = space();
    // rnc.md §1.8: 4 elastic stages 24/40/48/96, ks {3,5,7}, e {3,4,6}, d {2,3,4}.
    assert_eq!(
        s.stages.iter().map(|x| x.out).collect::<Vec<_>>(),
        vec![24, 40, 48, 96]
    );
    assert_eq!(s.genes.kernel, vec![3, 5, 7]);
    assert_eq!(s.genes.expand, vec![3, 4, 6]);
    assert_eq!(s.genes.depth, vec![2, 3, 4]);
    // One depth gene per stage plus kernel and expand per block slot: 4 * (1 + 2*4).
    assert_eq!(s.cardinalities().len(), 36);
    assert_eq!(make_divisible(36.0, 8), 40);
    assert_eq!(make_divisible(144.0, 8), 144);
    assert!(Space::load("no-such-space").is_err());
}

#[test]
fn genome_config_string_round_trip() {
    let s = space();
    let card = s.cardinalities();
    let mut rng = rand_pcg::Pcg64::seed_from_u64(3);
    for _ in 0..200 {
        let mut g: Vec<u8> = card.iter().map(|&c| rng.random_range(0..c) as u8).collect();
        s.canonicalize(&mut g);
        let c = s.decode(&g).unwrap();
        let text = c.to_string();
        let back: Config = text.parse().unwrap();
        assert_eq!(back, c);
        assert_eq!(s.encode(&back).unwrap(), g, "{text}");
        // Dead genes do not change the network.
        let mut g2 = g.clone();
        for (st, blocks) in c.stages.iter().enumerate() {
            for b in blocks.len()..4 {
                g2[st * 9 + 1 + 2 * b] = rng.random_range(0..3) as u8;
                g2[st * 9 + 2 + 2 * b] = rng.random_range(0..3) as u8;
            }
        }
        s.canonicalize(&mut g2);
        assert_eq!(s.decode(&g2).unwrap(), c);
    }
    assert!("k3e4-k5".parse::<Config>().is_err());
    assert!(
        s.encode(&"k9e4-k3e3_k3e3-k3e3_k3e3-k3e3_k3e3-k3e3".parse().unwrap())
            .is_err()
    );
    assert!(s.encode(&"k3e3-k3e3".parse().unwrap()).is_err());
}

#[test]
fn genes_to_graph_layer_shapes() {
    let s = space();
    let c: Config = "k5e4-k3e3_k3e6-k7e3-k3e3_k3e3-k3e3_k7e6-k3e3-k3e3-k5e4"
        .parse()
        .unwrap();
    let g = build_shape_only(&s, &c).unwrap();
    assert!(g.is_shape_only());
    let ex = extract(&g).unwrap();
    let by = |n: &str| {
        ex.layers
            .iter()
            .find(|l| l.name == n)
            .unwrap_or_else(|| panic!("no layer {n}"))
    };
    // Stem 3x3 s2 on 64x64: 27 x 16 box, 32*32 positions.
    assert_eq!((by("stem").mats[0], by("stem").positions), ((27, 16), 1024));
    // Fixed first block (expand 1): no expand conv, dw 3x3 on 16 channels at 32x32.
    assert!(ex.layers.iter().all(|l| l.name != "blocks.0.expand"));
    let dw = by("blocks.0.dw");
    assert_eq!(
        (dw.kind, dw.groups, dw.mats[0], dw.positions),
        (LayerKind::Depthwise, 16, (9, 1), 1024)
    );
    // Stage 0 block 0: in 16, e4 -> mid 64, k5 stride 2 (32 -> 16), no SE, out 24.
    assert_eq!(
        (
            by("stages.0.0.expand").mats[0],
            by("stages.0.0.expand").positions
        ),
        ((16, 64), 1024)
    );
    let dw = by("stages.0.0.dw");
    assert_eq!((dw.groups, dw.mats[0], dw.positions), (64, (25, 1), 256));
    assert_eq!(by("stages.0.0.project").mats[0], (64, 24));
    assert!(
        ex.layers
            .iter()
            .all(|l| !l.name.starts_with("stages.0.0.se"))
    );
    // Stage 0 block 1: in 24, e3 -> 72.
    assert_eq!(by("stages.0.1.expand").mats[0], (24, 72));
    // Stage 1 block 0: in 24, e6 -> 144, k3 s2 (16 -> 8), SE 144 -> make_divisible(36) = 40 -> 144.
    assert_eq!(by("stages.1.0.dw").positions, 64);
    assert_eq!(
        (
            by("stages.1.0.se.reduce").mats[0],
            by("stages.1.0.se.reduce").positions
        ),
        ((144, 40), 1)
    );
    assert_eq!(by("stages.1.0.se.expand").mats[0], (40, 144));
    // Stage 1 block 1: in 40, e3 -> 120, k7.
    assert_eq!(by("stages.1.1.dw").mats[0], (49, 1));
    assert_eq!(by("stages.1.1.dw").groups, 120);
    // Stage 3 block 0: in 48, e6 -> 288, k7 s2 (8 -> 4); block 3: in 96, e4 -> 384, k5.
    assert_eq!(
        (by("stages.3.0.dw").groups, by("stages.3.0.dw").positions),
        (288, 16)
    );
    assert_eq!(by("stages.3.3.expand").mats[0], (96, 384));
    // Head: 96 -> 576 at 4x4, feature mix 576 -> 1280 on the pooled map, classifier 1280 -> 10.
    assert_eq!(
        (by("final_expand").mats[0], by("final_expand").positions),
        ((96, 576), 16)
    );
    assert_eq!(
        (by("feature_mix").mats[0], by("feature_mix").positions),
        ((576, 1280), 1)
    );
    assert_eq!(by("classifier").mats[0], (1280, 10));
    // Layer count: stem + fixed (dw, project) + 11 blocks x 3 + 9 SE blocks x 2 + 3 head layers.
    let blocks = 2 + 3 + 2 + 4;
    let se_blocks = 3 + 2 + 4;
    assert_eq!(ex.layers.len(), 1 + 2 + 3 * blocks + 2 * se_blocks + 3);
    // Residuals only where stride 1 and in == out: the fixed block and non-first blocks.
    let adds = g.nodes.iter().filter(|n| n.name.ends_with(".add")).count();
    assert_eq!(adds, 1 + (blocks - 4));
}

#[test]
fn weighted_graph_slices_the_supernet_and_exports_onnx() {
    let s = space();
    let net = SuperNet::new(&s, 5).unwrap();
    let c = s.smallest();
    let g = build_with_weights(&s, &c, &net, s.resolution, 1).unwrap();
    assert!(!g.is_shape_only());
    // Weight sharing: the k3 kernel is the centre of the k7 supernet kernel (rescaled by
    // the fan-in ratio 49/9), the same in any candidate that uses this slot.
    let big = build_with_weights(&s, &s.largest(), &net, s.resolution, 1).unwrap();
    let w = |g: &pimkit_ir::Graph, n: &str| {
        g.const_data(g.find_value(n).unwrap()).unwrap().to_f32_vec()
    };
    let small_dw = w(&g, "stages.0.0.dw.weight");
    let big_dw = w(&big, "stages.0.0.dw.weight");
    let ratio = (49.0f32 / 9.0).sqrt() * (1.0f32).sqrt();
    // Channel 0, centre tap: (3,3) of 7x7 vs (1,1) of 3x3.
    assert!((small_dw[4] - big_dw[3 * 7 + 3] * ratio).abs() < 1e-6);
    let out = pimkit_interp::run(&g, &pimkit_interp::random_inputs(&g, 0)).unwrap();
    assert_eq!(out[0].shape, vec![1, 10]);
    assert!(out[0].to_f32_vec().iter().all(|v| v.is_finite()));
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("c.onnx");
    pimkit_onnx::save(&g, &p).unwrap();
    let back = pimkit_onnx::load(&p).unwrap();
    assert_eq!(back.nodes.len(), g.nodes.len());
    let out2 = pimkit_interp::run(&back, &pimkit_interp::random_inputs(&back, 0)).unwrap();
    assert_eq!(out, out2);
}

#[test]
fn space_toml_errors_name_the_problem() {
    let bad = pimkit_nas::space::MBV3_SMALL_TOML.replace("kernel = [3, 5, 7]", "kernel = [3, 4]");
    let e = Space::from_toml_str(&bad).unwrap_err().to_string();
    assert!(e.contains("odd"), "{e}");
    let bad = pimkit_nas::space::MBV3_SMALL_TOML.replace("resolution = 64", "resolutio = 64");
    assert!(Space::from_toml_str(&bad).is_err());
}

/// A different space is only data: two stages, other choices, another resolution.
#[test]
fn another_space_from_toml_only() {
    let toml = r#"
name = "tiny"
description = "two elastic stages"
resolution = 32
in_channels = 3
classes = 5
proxy_resolution = 16
divisor = 8
se_reduction = 4
[stem]
out = 8
kernel = 3
stride = 2
act = "relu"
[[stages]]
out = 16
stride = 2
act = "relu"
se = true
[[stages]]
out = 24
stride = 1
act = "hswish"
se = false
[genes]
kernel = [3, 5]
expand = [2, 4]
depth = [1, 2]
[head]
final_expand = 64
feature_mix = 128
act = "hswish"
"#;
    let s = Space::from_toml_str(toml).unwrap();
    assert_eq!(s.cardinalities(), vec![2, 2, 2, 2, 2, 2, 2, 2, 2, 2]);
    let c: Config = "k5e4-k3e2_k3e2".parse().unwrap();
    let g = build_shape_only(&s, &c).unwrap();
    let ex = extract(&g).unwrap();
    // No fixed blocks: stem, 2 SE blocks (5 layers each), 1 plain block (3), head (3).
    assert_eq!(ex.layers.len(), 1 + 2 * 5 + 3 + 3);
    let e = ex
        .layers
        .iter()
        .find(|l| l.name == "stages.0.0.expand")
        .unwrap();
    assert_eq!((e.mats[0], e.positions), ((8, 32), 16 * 16));
    assert_eq!(ex.layers.last().unwrap().mats[0], (128, 5));
    let net = SuperNet::new(&s, 1).unwrap();
    let cfg = pimkit_nas::proxy::ProxyConfig {
        batch: 4,
        resolution: s.proxy_resolution,
        seed: 1,
    };
    assert!(
        pimkit_nas::proxy::naswot(&s, &c, &net, &cfg)
            .unwrap()
            .is_finite()
    );
}

#[test]
fn out_of_range_space_fields_are_named() {
    let base = include_str!("../../../arch/spaces/mbv3-small.toml");
    // Replace the first line starting with `key =` after the `[section]` header.
    let edit = |section: &str, key: &str, value: &str| -> String {
        let mut in_section = section.is_empty();
        let mut done = false;
        base.lines()
            .map(|l| {
                if l.trim_start().starts_with('[') {
                    in_section = l.trim() == section;
                }
                if in_section && !done && l.split('=').next().map(str::trim) == Some(key) {
                    done = true;
                    format!("{key} = {value}")
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    for (section, key, value, named) in [
        ("[stem]", "out", "0", "stem.out"),
        ("", "classes", "100000000", "classes"),
        ("", "proxy_resolution", "100000", "proxy_resolution"),
        ("[genes]", "expand", "[100000]", "genes.expand"),
        ("", "se_reduction", "0", "se_reduction"),
    ] {
        let text = edit(section, key, value);
        assert_ne!(text, base, "{key} found");
        let e = pimkit_nas::Space::from_toml_str(&text)
            .err()
            .unwrap_or_else(|| panic!("{key} = {value} accepted"))
            .to_string();
        assert!(e.contains(named), "{key} = {value}: {e}");
    }
}
