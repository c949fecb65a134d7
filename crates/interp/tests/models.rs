//! Whole-network smoke tests on MobileNetV2 (float and QOperator) from the zoo: every op
//! composes, outputs are finite, results are deterministic, and float conv agrees with the
//! quantized stack's shape.

use pimkit_interp::{random_inputs, run, run_observed};

fn zoo(name: &str) -> pimkit_ir::Graph {
    pimkit_zoo::build(name, &[("res".into(), "96".into())]).unwrap()
}

#[test]
fn float_mobilenet_v2_runs() {
    let g = zoo("mobilenet_v2");
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
    let g = zoo("q_mobilenet_v2");
    pimkit_ir::verify(&g).unwrap();
    let inputs = random_inputs(&g, 1);
    let out = run(&g, &inputs).unwrap();
    assert_eq!(out[0].shape, vec![1, 1000]);
    assert_eq!(run(&g, &inputs).unwrap(), out, "bit-for-bit deterministic");
}
