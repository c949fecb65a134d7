//! The crossbar product and the programmed device: exact integer products whenever the
//! arrays and ADC resolve every level; realised stuck-at rates within their binomial
//! confidence interval; variation of the size the model says; mitigations that work.

use pimkit_analog::mvm::Coding;
use pimkit_analog::rng::{Stream, mix};
use pimkit_analog::{
    AdcRange, Config, DeviceSpec, Geometry, IntWeights, MatMap, Readout, mvm, program,
};

fn rand_weights(k: usize, n: usize, seed: u64, lo: i64, hi: i64) -> Vec<i64> {
    let mut r = Stream::new(seed);
    (0..k * n)
        .map(|_| lo + (r.uniform() * (hi - lo + 1) as f64) as i64)
        .collect()
}

fn rand_inputs(p: usize, k: usize, bits: u32, seed: u64) -> Vec<u16> {
    let mut r = Stream::new(seed);
    (0..p * k)
        .map(|_| (r.uniform() * (1u64 << bits) as f64) as u16)
        .collect()
}

fn exact_coded(
    x: &[u16],
    w: &[i32],
    p: usize,
    k: usize,
    n: usize,
    coding: Coding,
    bits: u32,
) -> Vec<i64> {
    let mut out = vec![0i64; p * n];
    for q in 0..p {
        for i in 0..k {
            for j in 0..n {
                out[q * n + j] += coding.value(x[q * k + i], bits) as i64 * w[i * n + j] as i64;
            }
        }
    }
    out
}

fn exact(x: &[u16], w: &[i32], p: usize, k: usize, n: usize) -> Vec<i64> {
    exact_coded(x, w, p, k, n, Coding::Unsigned, 8)
}

fn geom(rows: usize, cell: u32, dac: u32, diff: bool) -> Geometry {
    Geometry {
        rows,
        weight_bits: 8,
        cell_bits: cell,
        input_bits: 8,
        dac_bits: dac,
        differential: diff,
    }
}

#[test]
fn every_slicing_is_exact_with_an_ideal_device() {
    let (p, k, n) = (37, 300, 21);
    let x = rand_inputs(p, k, 8, 1);
    for diff in [false, true] {
        for cell in [1, 2, 3, 8] {
            for dac in [1, 2, 4] {
                let g = geom(128, cell, dac, diff);
                let w = IntWeights::fit(k, n, &rand_weights(k, n, 2, -128, 127), &g);
                let want = exact(&x, &w.w, p, k, n);
                // No ADC, and an ADC whose step is one level (enough bits for the full scale).
                for adc_bits in [0, 20] {
                    let mut cfg = Config::ideal(g.clone());
                    cfg.device.on_off_ratio = 10.0; // the Gmin floor cancels when nothing perturbs it
                    cfg.analog.adc_bits = adc_bits;
                    let map = MatMap::uniform(k, g.rows, 16);
                    let arr = program(&w, &map, &cfg, 0);
                    let ro = Readout {
                        adc: pimkit_analog::Adc::for_layer(
                            &cfg,
                            None,
                            false,
                            w.max_level(&cfg.geom),
                        ),
                        ..Default::default()
                    };
                    let got = mvm(&arr, &cfg, &x, p, 8, &ro);
                    for (a, b) in got.iter().zip(&want) {
                        assert_eq!(
                            *a, *b as f64,
                            "diff {diff} cell {cell} dac {dac} adc {adc_bits}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn adc_error_is_bounded_by_half_a_step_per_partial_sum() {
    let (p, k, n) = (16, 256, 8);
    let g = geom(128, 2, 1, true);
    let x = rand_inputs(p, k, 8, 3);
    let w = IntWeights::fit(k, n, &rand_weights(k, n, 4, -127, 127), &g);
    let want = exact(&x, &w.w, p, k, n);
    let mut cfg = Config::ideal(g.clone());
    cfg.analog.adc_bits = 6;
    cfg.analog.adc_range = AdcRange::FullScale;
    let adc = pimkit_analog::Adc::for_layer(&cfg, None, false, w.max_level(&cfg.geom)).unwrap();
    let arr = program(&w, &MatMap::uniform(k, 128, 128), &cfg, 0);
    let got = mvm(
        &arr,
        &cfg,
        &x,
        p,
        8,
        &Readout {
            adc: Some(adc),
            ..Default::default()
        },
    );
    // 2 chunks x 8 planes x 4 slices, each off by at most step/2 (no partial sum saturates:
    // the range is the full scale) times its shift 2^(t + 2s).
    let bound: f64 = 2.0
        * (0..8)
            .flat_map(|t| (0..4).map(move |s| (1u64 << (t + 2 * s)) as f64))
            .sum::<f64>()
        * adc.step as f64
        / 2.0;
    let mut any = false;
    for (a, b) in got.iter().zip(&want) {
        assert!(
            (a - *b as f64).abs() <= bound + 1e-6,
            "{a} vs {b}, bound {bound}"
        );
        any |= *a != *b as f64;
    }
    assert!(any, "a 6-bit ADC over 384 levels must lose something");
}

#[test]
fn stuck_at_rates_are_realised_within_their_binomial_interval() {
    let (k, n) = (1000, 200);
    let g = geom(128, 2, 1, true);
    let w = IntWeights::fit(k, n, &rand_weights(k, n, 5, -127, 127), &g);
    for (off, on) in [(0.01, 0.002), (0.001, 0.001), (0.05, 0.0)] {
        let mut cfg = Config::ideal(g.clone());
        cfg.device.saf_off = off;
        cfg.device.saf_on = on;
        for seed in 0..3 {
            let a = program(&w, &MatMap::uniform(k, 128, 16), &cfg, seed);
            let cells = a.stats.cells as f64;
            // 4 slices x 2 polarities per weight.
            assert_eq!(a.stats.cells, (k * n * 8) as u64);
            for (kk, rate) in [(a.stats.stuck_off, off), (a.stats.stuck_on, on)] {
                let (mean, sd) = (cells * rate, (cells * rate * (1.0 - rate)).sqrt());
                // 99.9 % two-sided normal interval of the binomial count.
                assert!(
                    (kk as f64 - mean).abs() <= 3.29 * sd + 1.0,
                    "{kk} stuck of {cells} at rate {rate}"
                );
            }
        }
    }
}

#[test]
fn programming_variation_has_the_modelled_spread_and_is_seeded() {
    let (k, n) = (512, 64);
    let g = geom(128, 2, 1, false);
    let w = IntWeights::fit(k, n, &rand_weights(k, n, 6, -128, 127), &g);
    let mut cfg = Config::ideal(g.clone());
    cfg.device = DeviceSpec {
        on_off_ratio: 10.0,
        variation: 0.05,
        ..DeviceSpec::ideal()
    };
    let map = MatMap::uniform(k, 128, 32);
    let a = program(&w, &map, &cfg, 11);
    let b = program(&w, &map, &cfg, 11);
    let c = program(&w, &map, &cfg, 12);
    assert_eq!(a.chunks[0].e, b.chunks[0].e);
    assert_ne!(a.chunks[0].e, c.chunks[0].e);
    // Offset arrays: E - level = (s + g0) e1 sigma - g0 e2 sigma (cell and reference column).
    let g0 = cfg.device.g0(3);
    let (s_n, width) = (g.slices(), a.chunks[0].width);
    for level in 0..4u32 {
        let mut dev = Vec::new();
        for ch in &a.chunks {
            for i in 0..ch.rows {
                for s in 0..s_n {
                    for j in 0..n {
                        let (l, _) = IntWeights::levels(w.w[(ch.r0 + i) * n + j], s, &g);
                        if l == level {
                            dev.push(ch.e[i * width + s * n + j] as f64 - l as f64);
                        }
                    }
                }
            }
        }
        let m = dev.iter().sum::<f64>() / dev.len() as f64;
        let sd = (dev.iter().map(|d| (d - m) * (d - m)).sum::<f64>() / dev.len() as f64).sqrt();
        let want = 0.05 * ((level as f64 + g0).powi(2) + g0 * g0).sqrt();
        assert!(m.abs() < 0.1 * want + 1e-3, "level {level}: mean {m}");
        assert!(
            (sd / want - 1.0).abs() < 0.1,
            "level {level}: sd {sd}, model {want}"
        );
    }
}

#[test]
fn redundancy_averages_and_spares_remove_faults() {
    let (k, n) = (256, 64);
    let g = geom(128, 2, 1, true);
    let w = IntWeights::fit(k, n, &rand_weights(k, n, 7, -127, 127), &g);
    let map = MatMap::uniform(k, 128, 16);
    let err = |cfg: &Config| -> f64 {
        let mut tot = 0.0;
        for seed in 0..4 {
            let a = program(&w, &map, cfg, mix(99, &[seed]));
            for ch in &a.chunks {
                for i in 0..ch.rows {
                    for s in 0..g.slices() {
                        for j in 0..n {
                            let (p, m) = IntWeights::levels(w.w[(ch.r0 + i) * n + j], s, &g);
                            let d = ch.e[i * ch.width + s * n + j] as f64 - (p as f64 - m as f64);
                            tot += d * d;
                        }
                    }
                }
            }
        }
        tot
    };
    let mut var = Config::ideal(g.clone());
    var.device.variation = 0.1;
    var.device.on_off_ratio = 20.0;
    let base = err(&var);
    var.analog.redundancy = 4;
    let avg = err(&var);
    assert!(
        (avg / base - 0.25).abs() < 0.05,
        "4 copies: error power ratio {}",
        avg / base
    );

    let mut saf = Config::ideal(g.clone());
    // About 5 stuck cells per 128 x 128 array: 8 spares cover most of their columns.
    saf.device.saf_off = 0.00015;
    saf.device.saf_on = 0.00015;
    let faulty = err(&saf);
    saf.analog.spare_cols = 8;
    let spared = err(&saf);
    assert!(
        spared < 0.5 * faulty,
        "8 spares per array: {spared} vs {faulty}"
    );
    let a = program(&w, &map, &saf, 1);
    assert!(a.stats.remapped_cols > 0);
}

#[test]
fn signed_input_codings_are_exact_with_an_ideal_device() {
    let (p, k, n) = (9, 200, 12);
    let mut r = Stream::new(21);
    // Two's complement 8-bit words (1-bit DACs); sign + 7-bit magnitude (any DAC width).
    let twos: Vec<u16> = (0..p * k).map(|_| (r.uniform() * 256.0) as u16).collect();
    let sm: Vec<u16> = (0..p * k)
        .map(|_| ((r.uniform() * 128.0) as u16) | if r.uniform() < 0.5 { 0x8000 } else { 0 })
        .collect();
    for diff in [false, true] {
        for (coding, x, bits, dacs) in [
            (Coding::TwosComplement, &twos, 8, vec![1]),
            (Coding::SignMagnitude, &sm, 7, vec![1, 2, 3]),
        ] {
            for dac in dacs {
                let g = geom(128, 2, dac, diff);
                let w = IntWeights::fit(k, n, &rand_weights(k, n, 22, -128, 127), &g);
                let want = exact_coded(x, &w.w, p, k, n, coding, bits);
                for adc_bits in [0, 20] {
                    let mut cfg = Config::ideal(g.clone());
                    cfg.analog.adc_bits = adc_bits;
                    let arr = program(&w, &MatMap::uniform(k, 128, 16), &cfg, 0);
                    let ro = Readout {
                        coding,
                        adc: pimkit_analog::Adc::for_layer(
                            &cfg,
                            None,
                            coding == Coding::SignMagnitude,
                            w.max_level(&cfg.geom),
                        ),
                        ..Default::default()
                    };
                    let got = mvm(&arr, &cfg, x, p, bits, &ro);
                    for (a, b) in got.iter().zip(&want) {
                        assert_eq!(
                            *a, *b as f64,
                            "{coding:?} diff {diff} dac {dac} adc {adc_bits}"
                        );
                    }
                }
            }
        }
    }
}
