//! Seeded random streams. Every stream is derived from the run's seed and the position of
//! what it draws for (trial, layer, matrix, array, block), never from the order work is
//! scheduled in, so parallel trials give the same numbers as a sequential run.

use rand::{RngExt, SeedableRng};
use rand_distr::{Distribution, StandardNormal};
use rand_pcg::Pcg64Mcg;

/// SplitMix64 finalizer: a bijective 64-bit mix.
pub fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed for the item at `path` under `seed`.
pub fn mix(seed: u64, path: &[u64]) -> u64 {
    path.iter().fold(splitmix(seed), |h, &p| {
        splitmix(h ^ splitmix(p.wrapping_add(0x632B_E59B_D9B4_E019)))
    })
}

/// A random stream for one item.
pub struct Stream(Pcg64Mcg);

impl Stream {
    pub fn new(seed: u64) -> Self {
        Stream(Pcg64Mcg::seed_from_u64(seed))
    }
    /// Uniform in [0, 1).
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        self.0.random::<f64>()
    }
    /// Standard normal.
    #[inline]
    pub fn normal(&mut self) -> f64 {
        StandardNormal.sample(&mut self.0)
    }
}
