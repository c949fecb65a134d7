//! Ideal settings reproduce the reference interpreter: exactly on integer (QOperator)
//! models, through the bit-sliced integer path with and without a lossless ADC; and on
//! float models (within 1e-5 relative; the exact float path is the interpreter itself).

mod common;

use common::*;
use pimkit_analog::network::Network;
use pimkit_analog::study::Study;
use pimkit_analog::{AdcRange, Config};

/// Run `cfg` on `spec` with `n` random inputs: the largest relative output error and the
/// worst layer SQNR.
fn check(spec: &str, cfgs: &[Config], n: usize) -> Vec<(f64, f64)> {
    let g = zoo(spec);
    let plan = plan(&g, 128, 128);
    assert!(!plan.is_empty(), "{spec} has no weighted layers");
    let net = Network::new(&g, plan, cfgs[0].geom.clone()).unwrap();
    let mut st = Study::new(net, inputs(&g, n), None).unwrap();
    let points: Vec<_> = cfgs.iter().map(|c| (vec![], c.clone())).collect();
    let r = st.run(&points, 1, 7, &|| {}).unwrap();
    r.iter()
        .map(|p| {
            let worst = p
                .layers
                .iter()
                .map(|l| l.sqnr_db.mean)
                .fold(f64::INFINITY, f64::min);
            (p.rel_error.max, worst)
        })
        .collect()
}

fn lossless(mut c: Config, bits: u32) -> Config {
    c.analog.adc_bits = bits;
    c.analog.adc_range = AdcRange::FullScale;
    c
}

#[test]
fn quantized_zoo_models_are_exact() {
    // Offset 8-bit cells (the RNC arch), differential 2-bit cells (ISAAC/PUMA-like) with
    // ADCs that resolve every level (full scale 128 x 255 -> 16 bits; 128 x 3 -> 10 bits signed).
    let cfgs = [
        ideal(8, false),
        ideal(2, true),
        lossless(ideal(8, false), 16),
        lossless(ideal(2, true), 10),
    ];
    for spec in [
        "q_resnet18",
        "q_mobilenet_v2",
        "q_squeezenet1_1",
        "q_mobilenet_v3_small",
        "qlinear_matmul?m=64&k=300&n=200",
        "qlinear_conv?h=32&w=32&group=4&c=8&k=16&stride=2",
        "qlinear_conv1d_causal",
    ] {
        for (i, (rel, sqnr)) in cfgs
            .iter()
            .map(|c| check(spec, std::slice::from_ref(c), 1)[0])
            .enumerate()
        {
            assert_eq!(rel, 0.0, "{spec} config {i}: output differs");
            assert!(
                sqnr.is_infinite() && sqnr > 0.0,
                "{spec} config {i}: a layer differs ({sqnr} dB)"
            );
        }
    }
}

#[test]
fn float_zoo_models_match_within_1e5() {
    for spec in [
        "mobilenet_v2?res=64",
        "lenet5",
        "puma_lstm?input=64&hidden=32&out=16&seq=3&batch=2",
        "mlp?n=256&batch=2",
    ] {
        for (rel, _) in check(spec, &[Config::exact(geom(2, true))], 2) {
            assert!(rel <= 1e-5, "{spec}: relative error {rel}");
        }
    }
}
