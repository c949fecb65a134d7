//! Integer graphs give the same bits on one thread and on several (issue #20 item 4):
//! every node's outputs of the quantized MobileNetV2 (depthwise, pointwise and strided
//! QLinearConv, QLinearAdd, QGemm's matrix-vector product, pooling) compared between
//! `set_threads(1)` and `set_threads(4)`.

use pimkit_interp::{random_inputs, run_observed, set_threads};
use pimkit_ir::Tensor;

fn all_outputs(g: &pimkit_ir::Graph, threads: usize) -> Vec<(usize, Vec<Tensor>)> {
    set_threads(threads).unwrap();
    let inputs = random_inputs(g, 3);
    let mut outs = Vec::new();
    run_observed(g, &inputs, &mut |id, o| {
        outs.push((id.0 as usize, o.to_vec()))
    })
    .unwrap();
    outs
}

#[test]
fn quantized_network_is_bit_identical_across_thread_counts() {
    let g = pimkit_zoo::build("q_mobilenet_v2", &[("res".into(), "96".into())]).unwrap();
    let one = all_outputs(&g, 1);
    let four = all_outputs(&g, 4);
    assert_eq!(one.len(), g.nodes.len());
    for (a, b) in one.iter().zip(&four) {
        assert_eq!(a, b, "node {} differs", g.nodes[a.0].name);
    }
}
