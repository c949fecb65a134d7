//! Numeric checks through the reference interpreter: the graphs compute what their
//! descriptions say, folded and unfolded BatchNorm agree, activations stay O(1), and the
//! decode layers append to the cache and rotate without changing norms.

mod common;

use common::kv;
use pimkit_ir::{Graph, GraphStats, Tensor, ValueDef};
use pimkit_zoo::build;
use std::collections::HashMap;

fn inputs(g: &Graph, seed: u64) -> HashMap<String, Tensor> {
    pimkit_interp::random_inputs(g, seed)
}

fn run(g: &Graph, ins: &HashMap<String, Tensor>) -> Vec<Vec<f32>> {
    pimkit_interp::run(g, ins)
        .unwrap()
        .iter()
        .map(|t| t.to_f32_vec())
        .collect()
}

fn close(a: &[f32], b: &[f32], tol: f32, what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + x.abs()),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

#[test]
fn folded_and_explicit_batchnorm_agree() {
    for name in [
        "resnet18",
        "mobilenet_v2",
        "mobilenet_v3_small",
        "rnc_mobilenet_v3_small",
    ] {
        let p = kv(&[("res", "32"), ("classes", "10")]);
        let fold = build(name, &p).unwrap();
        let keep = build(name, &common::with(p, "bn", "keep")).unwrap();
        assert!(common::count_ops(&keep, "BatchNormalization") > 0);
        let ins = inputs(&fold, 3);
        close(&run(&fold, &ins)[0], &run(&keep, &ins)[0], 1e-3, name);
        // The quantizer's own folding pass gives the same graph function too.
        let refolded = pimkit_zoo::quantize::fold_batchnorm(&keep).unwrap();
        assert_eq!(common::count_ops(&refolded, "BatchNormalization"), 0);
        close(&run(&fold, &ins)[0], &run(&refolded, &ins)[0], 1e-3, name);
    }
}

/// Kaiming-scaled weights and realistic BN statistics keep every activation O(1).
#[test]
fn activations_stay_order_one() {
    for (name, p) in [
        ("resnet18", kv(&[("res", "64")])),
        ("mobilenet_v2", kv(&[("res", "64")])),
        ("mobilenet_v3_small", kv(&[("res", "64")])),
        ("squeezenet1_1", kv(&[("res", "64")])),
        ("rnc_resnet18", kv(&[("res", "32")])),
        ("rnc_mobilenet_v3_small", kv(&[])),
        ("vgg16", kv(&[("res", "32"), ("classes", "10")])),
        ("lenet5", kv(&[])),
    ] {
        let g = build(name, &p).unwrap();
        let ins = inputs(&g, 1);
        let mut peak = 0f32;
        pimkit_interp::run_observed(&g, &ins, &mut |_, outs| {
            for t in outs {
                peak = t.to_f32_vec().iter().fold(peak, |m, x| m.max(x.abs()));
            }
        })
        .unwrap();
        let out = &run(&g, &ins)[0];
        let rms = (out.iter().map(|x| x * x).sum::<f32>() / out.len() as f32).sqrt();
        assert!(peak < 100.0, "{name}: activation peak {peak}");
        assert!(rms > 0.01 && rms < 30.0, "{name}: output rms {rms}");
    }
}

#[test]
fn torch_pim_kernels_compute_their_formulas() {
    let n = 6;
    let get = |name: &str, extra: &[(&str, &str)]| {
        let mut p = kv(&[("n", "6")]);
        p.extend(kv(extra));
        build(name, &p).unwrap()
    };
    // silu = x * sigmoid(x)
    let g = get("silu", &[]);
    let ins = inputs(&g, 2);
    let x = ins["x"].to_f32_vec();
    let want: Vec<f32> = x.iter().map(|v| v / (1.0 + (-v).exp())).collect();
    close(&run(&g, &ins)[0], &want, 1e-5, "silu");
    // rmsnorm = w * x / sqrt(mean(x^2) + eps)
    let g = get("rmsnorm", &[]);
    let ins = inputs(&g, 2);
    let x = ins["x"].to_f32_vec();
    let w = g
        .const_data(g.find_value("rmsnorm.weight").unwrap())
        .unwrap()
        .to_f32_vec();
    let mut want = vec![0f32; n * n];
    for r in 0..n {
        let row = &x[r * n..(r + 1) * n];
        let ms = row.iter().map(|v| v * v).sum::<f32>() / n as f32;
        for c in 0..n {
            want[r * n + c] = w[c] * row[c] / (ms + 1e-6).sqrt();
        }
    }
    close(&run(&g, &ins)[0], &want, 1e-4, "rmsnorm");
    // mac = row sums of a * b
    let g = get("mac", &[]);
    let ins = inputs(&g, 2);
    let (a, b) = (ins["a"].to_f32_vec(), ins["b"].to_f32_vec());
    let want: Vec<f32> = (0..n)
        .map(|r| (0..n).map(|c| a[r * n + c] * b[r * n + c]).sum())
        .collect();
    close(&run(&g, &ins)[0], &want, 1e-5, "mac");
    // attention rows are convex combinations of v's rows
    let g = get("attention", &[("d", "3")]);
    let ins = inputs(&g, 2);
    let v = ins["v"].to_f32_vec();
    let o = &run(&g, &ins)[0];
    for c in 0..3 {
        let col: Vec<f32> = (0..n).map(|r| v[r * 3 + c]).collect();
        let (lo, hi) = col
            .iter()
            .fold((f32::MAX, f32::MIN), |(l, h), x| (l.min(*x), h.max(*x)));
        for r in 0..n {
            assert!(o[r * 3 + c] >= lo - 1e-5 && o[r * 3 + c] <= hi + 1e-5);
        }
    }
    // zeroing writes zeros; ew_add adds.
    let g = get("zeroing", &[]);
    assert!(run(&g, &HashMap::new())[0].iter().all(|v| *v == 0.0));
    let g = get("ew_add", &[]);
    let ins = inputs(&g, 4);
    let want: Vec<f32> = ins["a"]
        .to_f32_vec()
        .iter()
        .zip(ins["b"].to_f32_vec())
        .map(|(x, y)| x + y)
        .collect();
    close(&run(&g, &ins)[0], &want, 0.0, "ew_add");
}

fn weight_count(g: &Graph) -> u64 {
    g.values
        .iter()
        .filter(|v| {
            matches!(v.def, ValueDef::Const(_))
                && (v.name.ends_with(".weight") || v.name.ends_with(".bias"))
        })
        .map(|v| v.ty.numel() as u64)
        .sum()
}

#[test]
fn decode_layers_at_full_size_are_shape_only_and_right_sized() {
    let g = build("llama_decode", &kv(&[("weights", "none")])).unwrap();
    assert!(g.is_shape_only());
    assert_eq!(
        weight_count(&g),
        4 * 4096 * 4096 + 3 * 4096 * 11008 + 2 * 4096
    );
    let total = GraphStats::of(&g).params as f64;
    assert!((total - 202.4e6).abs() < 0.1e6, "llama params {total}");
    let shapes: Vec<_> = g.outputs.iter().map(|o| g.ty(*o).shape.clone()).collect();
    assert_eq!(
        shapes,
        vec![vec![1, 4096], vec![32, 2048, 128], vec![32, 2048, 128]]
    );
    let g = build("gptj_decode", &kv(&[("weights", "none")])).unwrap();
    assert_eq!(
        weight_count(&g),
        4 * 4096 * 4096 + 2 * 4096 * 16384 + 16384 + 4096 + 2 * 4096
    );
    let shapes: Vec<_> = g.outputs.iter().map(|o| g.ty(*o).shape.clone()).collect();
    assert_eq!(
        shapes,
        vec![vec![1, 4096], vec![16, 2048, 256], vec![16, 2048, 256]]
    );
    // Every projection is a GEMV on a 2-D [1, hidden] activation.
    for n in &g.nodes {
        if matches!(n.op, pimkit_ir::Op::Gemm { .. }) || n.name.ends_with("_proj") {
            assert_eq!(g.ty(n.inputs[0].unwrap()).shape[0], 1, "{}", n.name);
            assert_eq!(g.ty(n.inputs[0].unwrap()).rank(), 2, "{}", n.name);
        }
    }
}

/// Run a small decode layer: the cache grows by one row and keeps the past rows; RoPE is a
/// rotation, so it preserves each head's query norm.
#[test]
fn decode_layers_append_and_rotate() {
    for (name, p, q_in, q_out) in [
        (
            "llama_decode",
            kv(&[
                ("hidden", "32"),
                ("heads", "4"),
                ("ffn", "48"),
                ("ctx", "5"),
            ]),
            "self_attn.q_heads",
            "self_attn.rope_q.add",
        ),
        (
            "gptj_decode",
            kv(&[
                ("hidden", "32"),
                ("heads", "2"),
                ("ffn", "64"),
                ("rotary", "8"),
                ("ctx", "5"),
            ]),
            "attn.q_heads",
            "attn.rope_q.cat",
        ),
    ] {
        let g = build(name, &p).unwrap();
        let ins = inputs(&g, 6);
        let mut seen: HashMap<String, Vec<f32>> = HashMap::new();
        pimkit_interp::run_observed(&g, &ins, &mut |n, outs| {
            let node = &g.nodes[n.0 as usize];
            if node.name == q_in || node.name == q_out {
                seen.insert(node.name.clone(), outs[0].to_f32_vec());
            }
        })
        .unwrap();
        let (a, b) = (&seen[q_in], &seen[q_out]);
        let hd = 32 / if name == "llama_decode" { 4 } else { 2 };
        for h in 0..a.len() / hd {
            let na: f32 = a[h * hd..(h + 1) * hd].iter().map(|x| x * x).sum();
            let nb: f32 = b[h * hd..(h + 1) * hd].iter().map(|x| x * x).sum();
            assert!(
                (na - nb).abs() < 1e-4 * (1.0 + na),
                "{name} head {h}: {na} vs {nb}"
            );
        }
        assert!(a != b, "{name}: rotary at position 5 must change q");
        let out = run(&g, &ins);
        assert!(out.iter().flatten().all(|v| v.is_finite()));
        let past = ins["past_key"].to_f32_vec();
        let present = &out[1];
        let heads = g.ty(g.outputs[1]).shape[0];
        for h in 0..heads {
            let p0 = &past[h * 5 * hd..(h + 1) * 5 * hd];
            let p1 = &present[h * 6 * hd..h * 6 * hd + 5 * hd];
            assert_eq!(p0, p1, "{name}: cache rows of head {h} must be kept");
        }
    }
}
