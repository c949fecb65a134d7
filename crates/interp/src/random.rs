//! Deterministic random inputs for a graph, in ranges that make sense per dtype.

use half::f16;
use pimkit_ir::{DType, Graph, Tensor, TensorData};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::HashMap;

/// A lower bound on the memory one interpreter run of `g` needs: all graph inputs plus
/// the largest node's outputs (bytes, saturating).
pub fn min_run_bytes(g: &Graph) -> u64 {
    let inputs = g
        .inputs
        .iter()
        .fold(0u64, |a, &i| a.saturating_add(g.ty(i).bytes() as u64));
    let largest = g
        .nodes
        .iter()
        .map(|n| {
            n.outputs
                .iter()
                .fold(0u64, |a, &o| a.saturating_add(g.ty(o).bytes() as u64))
        })
        .max()
        .unwrap_or(0);
    inputs.saturating_add(largest)
}

/// `Err` when one run of `g` cannot fit in this machine's available memory (an allocation
/// failure would abort the process instead of reporting an error).
pub fn check_memory(g: &Graph) -> Result<(), crate::InterpError> {
    pimkit_ir::memory::check_fits(
        min_run_bytes(g),
        &format!(
            "running '{}' (its inputs plus its largest node output)",
            g.name
        ),
    )
    .map_err(crate::InterpError::OutOfMemory)
}

/// One tensor per graph input, deterministic in `seed` and the input's position:
/// floats uniform in [-1, 1); u8 over [0, 255]; i8 over [-128, 127]; i32 in
/// [-1000, 1000]; i64 in [0, 8) (i64 inputs are usually indices or token ids, so they
/// stay small and non-negative); bool fair coin; i16 in [-1000, 1000], u16/u32 in
/// [0, 1000], u64 in [0, 8); minifloat and sub-byte codes uniform.
pub fn random_inputs(g: &Graph, seed: u64) -> HashMap<String, Tensor> {
    let mut out = HashMap::new();
    for (pos, &id) in g.inputs.iter().enumerate() {
        let v = g.value(id);
        // Each input gets its own stream so adding an input does not change the others.
        let mut rng =
            Pcg64Mcg::seed_from_u64(seed ^ (pos as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let n = v.ty.numel();
        let data = match v.ty.dtype {
            DType::F32 => TensorData::F32((0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()),
            DType::F16 => TensorData::F16(
                (0..n)
                    .map(|_| f16::from_f32(rng.random_range(-1.0f32..1.0)))
                    .collect(),
            ),
            DType::I64 => TensorData::I64((0..n).map(|_| rng.random_range(0i64..8)).collect()),
            DType::I32 => {
                TensorData::I32((0..n).map(|_| rng.random_range(-1000i32..=1000)).collect())
            }
            DType::I8 => TensorData::I8(
                (0..n)
                    .map(|_| rng.random_range(i8::MIN..=i8::MAX))
                    .collect(),
            ),
            DType::U8 => TensorData::U8((0..n).map(|_| rng.random_range(0u8..=255)).collect()),
            DType::Bool => {
                TensorData::Bool((0..n).map(|_| rng.random_range(0u8..2) == 1).collect())
            }
            DType::F64 => TensorData::F64((0..n).map(|_| rng.random_range(-1.0f64..1.0)).collect()),
            DType::Bf16 => TensorData::Bf16(
                (0..n)
                    .map(|_| half::bf16::from_f32(rng.random_range(-1.0f32..1.0)))
                    .collect(),
            ),
            DType::I16 => {
                TensorData::I16((0..n).map(|_| rng.random_range(-1000i16..=1000)).collect())
            }
            DType::U16 => TensorData::U16((0..n).map(|_| rng.random_range(0u16..=1000)).collect()),
            DType::U32 => TensorData::U32((0..n).map(|_| rng.random_range(0u32..=1000)).collect()),
            DType::U64 => TensorData::U64((0..n).map(|_| rng.random_range(0u64..8)).collect()),
            // Minifloats and sub-byte integers: uniform codes (a float8 NaN code may occur).
            d => {
                let codes = 1u16 << d.bits().min(8);
                TensorData::Codes(
                    d,
                    (0..n).map(|_| rng.random_range(0..codes) as u8).collect(),
                )
            }
        };
        out.insert(
            v.name.clone(),
            Tensor {
                shape: v.ty.shape.clone(),
                data,
            },
        );
    }
    out
}
