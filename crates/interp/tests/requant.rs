//! IntRequant (integer-only) == requant_f32 (ORT's float32 path) for every accumulator:
//! a proptest over the full i32 range and many scale shapes, plus a deterministic sweep
//! over adversarial accumulators (around 2^24 .. 2^31, ties) and scales.
use pimkit_interp::quant::{IntRequant, requant_f32};
use proptest::prelude::*;

/// Output ranges the engines use: u8, i8, i32 (no saturation in practice).
const RANGES: [(i32, i32); 3] = [(0, 255), (-128, 127), (i32::MIN, i32::MAX)];

fn check(acc: i32, scale: f32, zp: i32) {
    let r = IntRequant::new(scale);
    for (lo, hi) in RANGES {
        let zp = if lo == i32::MIN { 0 } else { zp.clamp(lo, hi) };
        assert_eq!(
            r.apply(acc, zp, lo, hi),
            requant_f32(acc, scale, zp, lo, hi),
            "acc {acc} scale {scale:e} ({:#010x}) zp {zp} range [{lo}, {hi}]",
            scale.to_bits()
        );
    }
}

fn any_acc() -> impl Strategy<Value = i32> {
    prop_oneof![
        any::<i32>(),
        -70_000i32..70_000,
        Just(i32::MIN),
        Just(i32::MAX),
        Just(0),
        // around the 24-bit boundary, where int -> f32 starts rounding
        (-(1i32 << 25)..(1i32 << 25)).prop_map(|v| v | (1 << 24)),
    ]
}

fn any_scale() -> impl Strategy<Value = f32> {
    prop_oneof![
        // typical requant scales (1e-6 .. 1)
        (1e-6f32..1.0f32),
        // arbitrary positive normal floats: random exponent 2^-60..2^20, random mantissa
        (67u32..147, 0u32..(1 << 23)).prop_map(|(e, m)| f32::from_bits((e << 23) | m)),
        // exact powers of two (exact ties after the multiply)
        (-40i32..10).prop_map(|e| 2f32.powi(e)),
        // tiny and subnormal scales
        (1u32..(1 << 23)).prop_map(f32::from_bits),
        // > 1 scales (saturating region)
        (1.0f32..1e6),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]
    #[test]
    fn int_requant_equals_float(acc in any_acc(), scale in any_scale(), zp in -300i32..300) {
        check(acc, scale, zp);
    }
}

#[test]
fn deterministic_sweep() {
    let mut scales: Vec<f32> = vec![
        1.0,
        0.5,
        0.25,
        0.1,
        1.0 / 3.0,
        0.007_812_5,
        3.5e-4,
        1.234_567e-5,
        0.999_999_94,
        1.000_000_1,
        2.0,
        255.0,
        1e-9,
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        3e38,
    ];
    // A grid of mantissas at several exponents.
    for e in [-30, -20, -12, -8, -4, -1, 0] {
        for m in (0..(1u32 << 23)).step_by(1 << 17) {
            scales.push(f32::from_bits((((127 + e) as u32) << 23) | m));
        }
    }
    let mut accs: Vec<i32> = vec![i32::MIN, i32::MIN + 1, i32::MAX, i32::MAX - 1, 0, 1, -1];
    for b in 20..31 {
        let p = 1i32 << b;
        for d in [-3, -2, -1, 0, 1, 2, 3, 64, 127, 128, 129] {
            accs.push(p.wrapping_add(d));
            accs.push(p.wrapping_add(d).wrapping_neg());
        }
    }
    accs.extend(-2000..2000);
    accs.extend((0..2000).map(|i| i * 1_073_741 - 1_073_741_000));
    for &s in &scales {
        for &a in &accs {
            check(a, s, 3);
        }
    }
}

#[test]
fn special_scales_follow_float_semantics() {
    for s in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN, 0.0, -0.0, -0.5] {
        for a in [i32::MIN, -5, 0, 5, i32::MAX] {
            check(a, s, 10);
        }
    }
}
