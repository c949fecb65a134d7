//! Whole quantized graphs on the simulated system: outputs equal the interpreter's,
//! kernels are used where expected, and cache state carries across layers.

use pimkit_vpu::network::{DataflowChoice, KernelKind, NetOptions, run_network};
use pimkit_vpu::{Arch, Dataflow};

fn zoo(spec: &str) -> pimkit_ir::Graph {
    pimkit_zoo::build_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn run_all(g: &pimkit_ir::Graph, arch: &Arch) -> Vec<pimkit_vpu::network::NetworkResult> {
    let inputs = pimkit_interp::random_inputs(g, 3);
    let want = pimkit_interp::run(g, &inputs).unwrap();
    let mut out = vec![];
    for c in [
        DataflowChoice::Auto,
        DataflowChoice::Fixed(Dataflow::Is),
        DataflowChoice::Fixed(Dataflow::Ws),
    ] {
        let r = run_network(
            g,
            &inputs,
            arch,
            &NetOptions {
                dataflow: c,
                cold_layers: false,
            },
        )
        .unwrap();
        assert_eq!(r.outputs, want, "{c:?}");
        assert_eq!(
            r.cycles,
            r.compute_cycles + r.dma_stall_cycles + r.host_cycles
        );
        out.push(r);
    }
    out
}

#[test]
fn single_kernels_from_the_zoo() {
    let a = Arch::default();
    let r = run_all(&zoo("qlinear_matmul?m=20&k=70&n=300"), &a);
    assert!(r[0].layers.iter().any(|l| l.kernel == KernelKind::Mm));
    let r = run_all(&zoo("qlinear_matmul?m=1&k=70&n=300"), &a);
    assert!(r[0].layers.iter().any(|l| l.kernel == KernelKind::Vm));
    let r = run_all(
        &zoo("qlinear_conv?c=3&k=4&h=20&w=20&kernel=3&stride=1&pad=1"),
        &a,
    );
    assert!(r[0].layers.iter().any(|l| l.kernel == KernelKind::Conv2d));
    let r = run_all(
        &zoo("qlinear_conv1d_causal?c=10&k=12&l=100&kernel=3&dilation=2"),
        &a.with(2, 0.8),
    );
    assert!(
        r[0].layers
            .iter()
            .any(|l| l.kernel == KernelKind::Conv1d && l.dataflow == Some(Dataflow::Is))
    );
}

#[test]
fn small_mobilenet_v2_equals_interpreter() {
    let g = zoo("q_mobilenet_v2?res=32");
    let a = Arch::default();
    let r = run_all(&g, &a);
    let auto = &r[0];
    let kinds = |k: KernelKind| auto.layers.iter().filter(|l| l.kernel == k).count();
    assert_eq!(kinds(KernelKind::Depthwise), 17);
    // 34 pointwise convs (matmuls; vector-matrix where the map is 1x1) + the classifier.
    assert_eq!(kinds(KernelKind::Mm) + kinds(KernelKind::Vm), 35);
    assert!(
        kinds(KernelKind::Vm) >= 1,
        "the classifier is a vector-matrix product"
    );
    assert_eq!(kinds(KernelKind::Conv2d), 1);
    assert!(auto.ops > 0 && auto.offchip_bytes > 0 && auto.energy_j > 0.0);
    // Four VPUs: same values, fewer cycles.
    let a4 = a.with(4, 1.2);
    let inputs = pimkit_interp::random_inputs(&g, 3);
    let r4 = run_network(&g, &inputs, &a4, &NetOptions::default()).unwrap();
    assert_eq!(r4.outputs, auto.outputs);
    assert!(r4.cycles < auto.cycles);
}

#[test]
fn cold_layers_miss_more_than_carried_cache() {
    let g = zoo("q_mobilenet_v2?res=32");
    let inputs = pimkit_interp::random_inputs(&g, 1);
    let a = Arch::default();
    let warm = run_network(&g, &inputs, &a, &NetOptions::default()).unwrap();
    let cold = run_network(
        &g,
        &inputs,
        &a,
        &NetOptions {
            cold_layers: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(warm.outputs, cold.outputs);
    let misses =
        |r: &pimkit_vpu::network::NetworkResult| r.layers.iter().map(|l| l.misses).sum::<u64>();
    assert!(
        misses(&cold) > misses(&warm),
        "cold {} warm {}",
        misses(&cold),
        misses(&warm)
    );
}

#[test]
fn shape_only_model_is_a_clear_error() {
    let mut g = zoo("qlinear_matmul?m=4&k=8&n=16");
    let inputs = pimkit_interp::random_inputs(&g, 0);
    g.strip_weights();
    let e = run_network(&g, &inputs, &Arch::default(), &NetOptions::default()).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("data") || msg.contains("weights") || msg.contains("constant"),
        "{msg}"
    );
}

#[test]
fn unsupported_shapes_fall_back_to_the_host() {
    // A grouped (not depthwise) convolution has no VPU kernel: it runs on the host.
    let g = zoo("qlinear_conv?c=4&k=4&h=6&w=6&kernel=3&group=2&pad=1");
    let r = run_all(&g, &Arch::default());
    assert!(
        r[0].layers
            .iter()
            .any(|l| l.op == "QLinearConv" && l.kernel == KernelKind::Host)
    );
}
