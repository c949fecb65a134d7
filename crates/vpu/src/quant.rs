//! Requantization: the interpreter's integer-only f32 emulation (bit-exact with ONNX
//! Runtime, ref §3.4), re-exported so the kernels and the reference share one definition.
//! (A local copy stood here while crates/interp was being written.)

pub use pimkit_interp::quant::{IntRequant, output_scale, requant_f32};

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn int_requant_equals_f32_path() {
        let mut r = rand_pcg::Pcg64::seed_from_u64(7);
        for _ in 0..100_000 {
            let scale = f32::from_bits(r.random_range(0x3000_0000u32..0x4100_0000));
            let acc: i32 = match r.random_range(0..3) {
                0 => r.random_range(-1000..1000),
                1 => r.random_range(-(1 << 26)..(1 << 26)),
                _ => r.random(),
            };
            let zp = r.random_range(0..256);
            assert_eq!(
                IntRequant::new(scale).apply(acc, zp, 0, 255),
                requant_f32(acc, scale, zp, 0, 255)
            );
        }
    }
}
