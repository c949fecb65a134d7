//! Sanity of the model on a small network: over a grid of ADC bits x variation, more ADC
//! bits or less variation never lowers the mean top-1 agreement beyond the trials' noise
//! (nor raises the output error beyond it); results do not depend on the thread count.

mod common;

use common::*;
use pimkit_analog::network::Network;
use pimkit_analog::study::{PointResult, Study, grid};
use pimkit_analog::{AnalogSpec, Config, DeviceSpec};

const TRIALS: usize = 8;

fn sweep(spec: &str, inputs_n: usize, threads: usize) -> Vec<PointResult> {
    let g = zoo(spec);
    let geom = geom(2, true);
    let net = Network::new(&g, plan(&g, 128, 16), geom.clone()).unwrap();
    let mut st = Study::new(net, inputs(&g, inputs_n), None).unwrap();
    let base = Config {
        geom,
        analog: AnalogSpec::ideal(),
        device: DeviceSpec {
            on_off_ratio: 100.0,
            ..DeviceSpec::ideal()
        },
        exact: false,
    };
    let axes = vec![
        ("adc_bits".to_string(), vec![4.0, 6.0, 8.0]),
        ("variation".to_string(), vec![0.0, 0.1, 0.3]),
    ];
    let pts = grid(&base, &axes).unwrap();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap();
    pool.install(|| st.run(&pts, TRIALS, 5, &|| {}).unwrap())
}

/// Standard error of a difference of two means over the trials (at least one
/// input's worth of agreement per trial, so a deterministic point is not infinitely sure).
fn noise(a: &PointResult, b: &PointResult, inputs: usize) -> f64 {
    let se = |p: &PointResult| {
        let s = p.agreement.unwrap();
        (s.std / (TRIALS as f64).sqrt()).max(0.5 / (inputs as f64 * TRIALS as f64).sqrt())
    };
    (se(a).powi(2) + se(b).powi(2)).sqrt()
}

#[test]
fn more_adc_bits_or_less_variation_never_hurt_beyond_noise() {
    let n = 12;
    let r = sweep("lenet5", n, 2);
    let at = |a: usize, v: usize| &r[a * 3 + v];
    for a in 0..3 {
        for v in 0..3 {
            let p = at(a, v);
            let agree = p.agreement.unwrap().mean;
            eprintln!(
                "{:?}: agreement {agree:.3} rel {:.4}",
                p.params, p.rel_error.mean
            );
            if a + 1 < 3 {
                let q = at(a + 1, v);
                let d = q.agreement.unwrap().mean - agree;
                assert!(
                    d >= -2.0 * noise(p, q, n),
                    "more ADC bits lowered agreement: {:?} -> {:?}",
                    p.params,
                    q.params
                );
                assert!(
                    q.rel_error.mean <= p.rel_error.mean * 1.05 + 2.0 * p.rel_error.std,
                    "{:?} -> {:?}",
                    p.params,
                    q.params
                );
            }
            if v + 1 < 3 {
                let q = at(a, v + 1);
                let d = agree - q.agreement.unwrap().mean;
                assert!(
                    d >= -2.0 * noise(p, q, n),
                    "more variation raised agreement: {:?} -> {:?}",
                    p.params,
                    q.params
                );
            }
        }
    }
    // The grid spans the range: ideal-ish corner agrees, the worst corner does not.
    assert!(at(2, 0).agreement.unwrap().mean > 0.8);
    assert!(at(0, 2).agreement.unwrap().mean < at(2, 0).agreement.unwrap().mean);
}

#[test]
fn parallel_trials_equal_a_sequential_run() {
    let one = sweep("lenet5", 2, 1);
    let two = sweep("lenet5", 2, 2);
    assert_eq!(one, two);
}
