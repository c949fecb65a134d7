//! Whole quantized graphs on the simulated system: outputs equal the interpreter's,
//! kernels are used where expected, and cache state carries across layers.

use pimkit_vpu::network::{
    Characterize, DataflowChoice, KernelKind, Method, NetOptions, run_network,
};
use pimkit_vpu::{Arch, Dataflow};

fn zoo(spec: &str) -> pimkit_ir::Graph {
    pimkit_zoo::build_spec(spec).unwrap_or_else(|e| panic!("{spec}: {e}"))
}

fn run_all(g: &pimkit_ir::Graph, arch: &Arch) -> Vec<pimkit_vpu::network::NetworkResult> {
    let inputs = pimkit_interp::random_inputs(g, 3);
    let want = pimkit_interp::with_exact_products(|| pimkit_interp::run(g, &inputs)).unwrap();
    let mut out = vec![];
    for c in [
        DataflowChoice::Auto,
        DataflowChoice::Family,
        DataflowChoice::Fixed(Dataflow::Is),
        DataflowChoice::Fixed(Dataflow::Ws),
    ] {
        let r = run_network(
            g,
            &inputs,
            arch,
            &NetOptions {
                dataflow: c,
                ..Default::default()
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
    // `family` runs 1-D convolutions with IS (r[1]); `auto` times them.
    assert!(
        r[1].layers
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
fn cold_layers_miss_more_and_move_more_than_carried_cache() {
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
    // A cold start writes each layer's dirty lines back before the next layer, so it
    // never moves fewer bytes (it moved fewer when invalidation dropped them uncounted).
    assert!(
        cold.offchip_bytes > warm.offchip_bytes,
        "cold {} warm {}",
        cold.offchip_bytes,
        warm.offchip_bytes
    );
    for l in cold.layers.iter().filter(|l| l.kernel != KernelKind::Host) {
        assert!(l.evictions > 0, "{} wrote nothing back", l.name);
    }
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
fn grouped_conv_runs_the_kernel_per_group() {
    // A grouped (not depthwise) convolution loops the 2-D kernel over its groups; the
    // values are checked against the interpreter for every dataflow by run_all.
    for spec in [
        "qlinear_conv?c=4&k=6&h=7&w=9&kernel=3&group=2&pad=1",
        "qlinear_conv?c=6&k=3&h=5&w=5&kernel=1&group=3&pad=0",
    ] {
        let r = run_all(&zoo(spec), &Arch::default().with(2, 1.2));
        assert!(
            r[0].layers
                .iter()
                .any(|l| l.op == "QLinearConv" && l.kernel == KernelKind::Conv2d),
            "{spec}"
        );
    }
}

/// A graph with one QLinearMatMul of u8 A `a_shape` and constant i8 B `b_shape`.
fn batched_qmatmul(a_shape: &[usize], b_shape: &[usize]) -> pimkit_ir::Graph {
    use pimkit_ir::{DType, Graph, Op, Tensor, TensorType};
    let mut g = Graph::new("batched_qmatmul");
    let a = g.add_input("a", TensorType::new(DType::U8, a_shape.to_vec()));
    let nb: usize = b_shape.iter().product();
    let bv: Vec<i8> = (0..nb).map(|i| ((i * 37 + 11) % 255) as i8).collect();
    let b = g.add_const("b", Tensor::from_i8(b_shape.to_vec(), bv));
    let f =
        |g: &mut Graph, name: &str, v: f32| g.add_const(name, Tensor::from_f32(vec![], vec![v]));
    let a_s = f(&mut g, "a_scale", 0.02);
    let b_s = f(&mut g, "b_scale", 0.01);
    let y_s = f(&mut g, "y_scale", 0.05);
    let a_zp = g.add_const("a_zp", Tensor::from_u8(vec![], vec![128]));
    let b_zp = g.add_const("b_zp", Tensor::from_i8(vec![], vec![0]));
    let y_zp = g.add_const("y_zp", Tensor::from_u8(vec![], vec![120]));
    let y = g
        .op(
            "qmm",
            Op::QLinearMatMul,
            &[a, a_s, a_zp, b, b_s, b_zp, y_s, y_zp],
        )
        .unwrap();
    g.outputs.push(y);
    g
}

#[test]
fn batched_qlinear_matmul_runs_on_the_vpus() {
    // Batched B: the 2-D kernel once per batch entry; shared B: one taller product;
    // M = 1 per entry: the vector-matrix kernel.
    for (a, b, kind) in [
        (vec![3, 5, 7], vec![3, 7, 9], KernelKind::Mm),
        (vec![2, 3, 4, 20], vec![2, 3, 20, 6], KernelKind::Mm),
        (vec![4, 6, 10], vec![10, 300], KernelKind::Mm),
        (vec![3, 1, 40], vec![3, 40, 17], KernelKind::Vm),
    ] {
        let g = batched_qmatmul(&a, &b);
        let r = run_all(&g, &Arch::default().with(2, 1.2));
        assert!(
            r[0].layers.iter().any(|l| l.kernel == kind),
            "{a:?} @ {b:?}: {:?}",
            r[0].layers.iter().map(|l| l.kernel).collect::<Vec<_>>()
        );
    }
}

#[test]
fn unsupported_shapes_fall_back_to_the_host() {
    // B broadcast along a batch axis A lacks ([2, 5, 7] @ [3, 2, 7, 4]) has no kernel
    // mapping: the node runs on the host, with the interpreter's values.
    let g = batched_qmatmul(&[2, 5, 7], &[3, 2, 7, 4]);
    let r = run_all(&g, &Arch::default());
    assert!(
        r[0].layers
            .iter()
            .any(|l| l.op == "QLinearMatMul" && l.kernel == KernelKind::Host)
    );
}

#[test]
fn paper_method_sums_kernel_layers_only() {
    // quinn §5.11 summed the mcycle counts of the QUINN kernel calls; host nodes
    // (QuantizeLinear, QLinearAdd, pooling, ...) are simulated but left out.
    let g = zoo("q_mobilenet_v2?res=32");
    let inputs = pimkit_interp::random_inputs(&g, 2);
    let a = Arch::default();
    let ours = run_network(&g, &inputs, &a, &NetOptions::default()).unwrap();
    let paper = run_network(
        &g,
        &inputs,
        &a,
        &NetOptions {
            method: Method::Paper,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(paper.outputs, ours.outputs);
    let host: Vec<_> = paper
        .layers
        .iter()
        .filter(|l| l.kernel == KernelKind::Host)
        .collect();
    assert!(!host.is_empty() && host.iter().all(|l| !l.counted));
    assert!(ours.layers.iter().all(|l| l.counted));
    let kernel_sum: u64 = paper
        .layers
        .iter()
        .filter(|l| l.kernel != KernelKind::Host)
        .map(|l| l.cycles)
        .sum();
    assert_eq!(paper.cycles, kernel_sum);
    assert_eq!(paper.kernel_cycles, kernel_sum);
    let host_sum: u64 = host.iter().map(|l| l.cycles).sum();
    assert!(host_sum > 0);
    assert_eq!(paper.excluded_cycles, host_sum);
    assert_eq!(ours.excluded_cycles, 0);
    // Same operation count either way (eq. 1 counts only kernel layers).
    assert_eq!(paper.ops, ours.ops);
}

/// A convolution whose filter no register window holds (17 x 17 = 289 taps > 256; a
/// causal window of 298 samples) runs on the host with a note naming the layer; the
/// outputs still equal the interpreter's.
#[test]
fn filters_that_do_not_fit_run_on_the_host_with_a_note() {
    let a = Arch::default();
    for spec in [
        "qlinear_conv?c=2&k=3&h=20&w=20&kernel=17&pad=8",
        "qlinear_conv1d_causal?c=2&k=3&l=40&kernel=100&dilation=3",
    ] {
        let g = zoo(spec);
        for r in run_all(&g, &a) {
            assert!(
                r.layers.iter().all(|l| l.kernel == KernelKind::Host),
                "{spec}"
            );
            assert_eq!(r.notes.len(), 1, "{spec}: {:?}", r.notes);
            assert!(
                r.notes[0].contains("ran on the host") && r.notes[0].contains("VRF is too small"),
                "{}",
                r.notes[0]
            );
        }
    }
}

#[test]
fn auto_keeps_each_layers_fastest_dataflow() {
    // One kernel layer: auto tries OS, IS and WS from the same state, so it is never
    // slower than any of them and reports the one it ran; `family` is the fixed rule.
    // MM16 is the case where another dataflow beats the family's OS (quinn §5.5).
    let mut beat_family = 0;
    for spec in [
        "qlinear_matmul?m=40&k=70&n=300",
        "qlinear_matmul?m=8&k=16&n=16",
        "qlinear_conv?c=3&k=4&h=20&w=20&kernel=3&stride=1&pad=1",
        // Strided: the losing trials are stopped by the conv's floor (conv2d/floor.rs).
        "qlinear_conv?c=6&k=5&h=17&w=17&kernel=3&stride=2&pad=1",
    ] {
        let g = zoo(spec);
        let inputs = pimkit_interp::random_inputs(&g, 5);
        let run = |dataflow| {
            let o = NetOptions {
                dataflow,
                ..Default::default()
            };
            run_network(&g, &inputs, &Arch::default(), &o).unwrap()
        };
        let auto = run(DataflowChoice::Auto);
        let kernel = |r: &pimkit_vpu::network::NetworkResult| {
            r.layers
                .iter()
                .find(|l| l.kernel != KernelKind::Host)
                .map(|l| (l.cycles, l.dataflow))
                .unwrap()
        };
        let (c_auto, df_auto) = kernel(&auto);
        let fixed: Vec<(u64, Option<Dataflow>)> = Dataflow::ALL
            .iter()
            .map(|&d| kernel(&run(DataflowChoice::Fixed(d))))
            .collect();
        let best = fixed.iter().min_by_key(|f| f.0).unwrap();
        assert_eq!((c_auto, df_auto), *best, "{spec}: {fixed:?}");
        assert_eq!(
            kernel(&run(DataflowChoice::Family)).1,
            Some(Dataflow::Os),
            "{spec}"
        );
        beat_family += usize::from(df_auto != Some(Dataflow::Os));
    }
    assert!(beat_family > 0, "auto never left the family's dataflow");
}

#[test]
fn progress_callback_sees_every_node_in_order() {
    let g = zoo("qlinear_matmul?m=4&k=8&n=16");
    let inputs = pimkit_interp::random_inputs(&g, 0);
    let mut seen = vec![];
    pimkit_vpu::network::run_network_with(
        &g,
        &inputs,
        &Arch::default(),
        &NetOptions::default(),
        &mut |i, n, name| seen.push((i, n, name.to_string())),
    )
    .unwrap();
    let want: Vec<_> = g
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (i, g.nodes.len(), n.name.clone()))
        .collect();
    assert_eq!(seen, want);
}

#[test]
fn auto_trials_in_parallel_equal_one_thread() {
    // auto's dataflow trials run on copies of the machine side by side; the result must
    // be the one a single thread (trials one after another) gives, layer by layer.
    let g = zoo("q_mobilenet_v2?res=32");
    let inputs = pimkit_interp::random_inputs(&g, 3);
    // With `Characterize::Layer` every layer's trials run, so every layer races threads;
    // with `Shape` and a fixed dataflow, the known dataflows run in halves (values on one
    // thread, timing on another, network.rs `run_halves`).
    for o in [
        NetOptions {
            characterize: Characterize::Layer,
            ..Default::default()
        },
        NetOptions::default(),
        NetOptions {
            dataflow: DataflowChoice::Fixed(Dataflow::Ws),
            ..Default::default()
        },
    ] {
        let run_with = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| run_network(&g, &inputs, &Arch::default(), &o).unwrap())
        };
        let one = run_with(1);
        // Two threads run the family's timing and values side by side, then the other
        // trials; four run them all at once (network/trials.rs).
        for n in [2, 4] {
            let many = run_with(n);
            assert_eq!(one.cycles, many.cycles);
            assert_eq!(
                serde_json::to_string(&one.layers).unwrap(),
                serde_json::to_string(&many.layers).unwrap()
            );
            assert_eq!(one.outputs, many.outputs);
        }
    }
}

#[test]
fn characterizing_each_workload_once_equals_characterizing_every_layer() {
    // `auto` tries the dataflows at the first layer of each workload and reuses the winner
    // for later layers of the same workload. On these CNNs the reused choices are the ones
    // each layer's own trials make: the two modes give the same result, layer by layer.
    for (spec, min_reused) in [("q_resnet18?res=32", 9), ("q_mobilenet_v2?res=32", 10)] {
        let g = zoo(spec);
        let inputs = pimkit_interp::random_inputs(&g, 1);
        let run = |characterize| {
            let o = NetOptions {
                characterize,
                ..Default::default()
            };
            run_network(&g, &inputs, &Arch::default(), &o).unwrap()
        };
        let (shape, layer) = (run(Characterize::Shape), run(Characterize::Layer));
        assert_eq!(shape.outputs, layer.outputs, "{spec}");
        let mut reused = 0;
        for (s, l) in shape.layers.iter().zip(&layer.layers) {
            let key = |r: &pimkit_vpu::network::LayerResult| {
                (r.cycles, r.dataflow, r.offchip_bytes, r.host_cycles)
            };
            assert_eq!(key(s), key(l), "{spec} {}", s.name);
            assert!(l.dataflow_from.is_none());
            if let Some(from) = &s.dataflow_from {
                // The layer it names ran earlier, with the same kernel and shape.
                let first = shape.layers.iter().position(|x| &x.name == from).unwrap();
                let here = shape.layers.iter().position(|x| x.name == s.name).unwrap();
                assert!(first < here && shape.layers[first].dataflow_from.is_none());
                assert_eq!(
                    (shape.layers[first].kernel, &shape.layers[first].shape),
                    (s.kernel, &s.shape)
                );
                reused += 1;
            }
        }
        assert!(
            reused >= min_reused,
            "{spec}: {reused} layers reused a choice"
        );
        assert_eq!(shape.cycles, layer.cycles);
    }
}
