//! Whole-network smoke tests on MobileNetV2 (float and QOperator), built by the bench's
//! layer-table builder: every op composes, outputs are finite, results are
//! deterministic, and float conv agrees with the quantized stack's shape.
#[path = "../benches/common/mod.rs"]
mod mbv2;

use pimkit_interp::{random_inputs, run, run_observed};

#[test]
fn float_mobilenet_v2_runs() {
    let g = mbv2::mobilenet_v2(1, 96);
    pimkit_ir::verify(&g).unwrap();
    let inputs = random_inputs(&g, 1);
    let mut nodes = 0;
    let out = run_observed(&g, &inputs, &mut |_, _| nodes += 1).unwrap();
    assert_eq!(nodes, g.nodes.len());
    assert_eq!(out[0].shape, vec![1, 1000]);
    let v = out[0].as_f32().unwrap();
    assert!(v.iter().all(|x| x.is_finite()));
    assert!(v.iter().any(|&x| x != v[0]), "logits are not all equal");
    assert_eq!(run(&g, &inputs).unwrap(), out, "deterministic");
}

#[test]
fn quantized_mobilenet_v2_runs() {
    let g = mbv2::q_mobilenet_v2(96);
    pimkit_ir::verify(&g).unwrap();
    let inputs = random_inputs(&g, 1);
    let out = run(&g, &inputs).unwrap();
    assert_eq!(out[0].shape, vec![1, 1000]);
    assert_eq!(run(&g, &inputs).unwrap(), out, "bit-for-bit deterministic");
}
