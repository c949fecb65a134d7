//! Deterministic random weights. Scales follow Kaiming (He et al. 2015) in its uniform
//! form, bound = gain * sqrt(3 / fan_in): gain sqrt(2) before a ReLU-like activation and 1
//! before a linear one, so activations keep an O(1) second moment through deep nets (needed
//! for meaningful quantization ranges and float tolerances). PyTorch's own default
//! (kaiming_uniform with a = sqrt(5), bound 1/sqrt(fan_in)) shrinks activations about
//! 1.7x per layer, which is why it is not used.

use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;

/// Gain before ReLU / ReLU6 / HardSwish layers.
pub const GAIN_RELU: f32 = std::f32::consts::SQRT_2;
/// Gain before a linear layer (projection, classifier, residual branch end).
pub const GAIN_LINEAR: f32 = 1.0;

/// The zoo's random source: PCG64 (MCG variant) seeded from the user's seed.
pub struct WeightRng {
    rng: Pcg64Mcg,
}

impl WeightRng {
    pub fn new(seed: u64) -> Self {
        WeightRng {
            rng: Pcg64Mcg::seed_from_u64(seed),
        }
    }

    /// `n` values uniform in [lo, hi).
    pub fn uniform(&mut self, n: usize, lo: f32, hi: f32) -> Vec<f32> {
        let w = hi - lo;
        (0..n).map(|_| lo + w * self.rng.random::<f32>()).collect()
    }

    /// Kaiming-uniform weights for a layer with `fan_in` inputs per output.
    pub fn kaiming(&mut self, n: usize, fan_in: usize, gain: f32) -> Vec<f32> {
        let b = kaiming_bound(fan_in, gain);
        self.uniform(n, -b, b)
    }

    /// Realistic BatchNorm statistics for `c` channels: gamma, beta, running mean and
    /// running variance, in ONNX input order. Ranges resemble trained ImageNet models
    /// (gamma near 1, small beta/mean, variance near 1) while keeping activations O(1).
    pub fn batchnorm(&mut self, c: usize) -> [Vec<f32>; 4] {
        let gamma = self.uniform(c, 0.8, 1.2);
        let beta = self.uniform(c, -0.1, 0.1);
        let mean = self.uniform(c, -0.1, 0.1);
        let var = self.uniform(c, 0.8, 1.2);
        [gamma, beta, mean, var]
    }
}

pub fn kaiming_bound(fan_in: usize, gain: f32) -> f32 {
    gain * (3.0 / fan_in.max(1) as f32).sqrt()
}

/// Fold BatchNorm (gamma, beta, mean, var, eps) into a conv's weight [M, ...] and bias [M]:
/// w' = w * gamma / sqrt(var + eps), b' = beta + (b - mean) * gamma / sqrt(var + eps).
/// This is what PyTorch's exporter does in eval mode (and ORT's optimizer before quantizing).
pub fn fold_bn(w: &mut [f32], b: &mut [f32], bn: &[&[f32]; 4], eps: f32) {
    let m = b.len();
    let per = w.len() / m.max(1);
    for o in 0..m {
        let s = bn[0][o] / (bn[3][o] + eps).sqrt();
        for v in &mut w[o * per..(o + 1) * per] {
            *v *= s;
        }
        b[o] = bn[1][o] + (b[o] - bn[2][o]) * s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_seed_dependent() {
        let a = WeightRng::new(7).uniform(16, -1.0, 1.0);
        let b = WeightRng::new(7).uniform(16, -1.0, 1.0);
        let c = WeightRng::new(8).uniform(16, -1.0, 1.0);
        assert_eq!(a, b);
        assert_ne!(a, c);
        assert!(a.iter().all(|v| (-1.0..1.0).contains(v)));
    }

    #[test]
    fn kaiming_keeps_second_moment() {
        // y = W x with x ~ relu(N(0,1))-like second moment 0.5 -> E[y^2] ~ 1 with gain sqrt2.
        let fan_in = 512;
        let mut r = WeightRng::new(1);
        let w = r.kaiming(fan_in * 64, fan_in, GAIN_RELU);
        let x: Vec<f32> = r
            .uniform(fan_in, -3f32.sqrt(), 3f32.sqrt())
            .into_iter()
            .map(|v| v.max(0.0))
            .collect();
        let ex2: f32 = x.iter().map(|v| v * v).sum::<f32>() / fan_in as f32;
        let mut ey2 = 0.0;
        for o in 0..64 {
            let y: f32 = (0..fan_in).map(|i| w[o * fan_in + i] * x[i]).sum();
            ey2 += y * y;
        }
        ey2 /= 64.0;
        let ratio = ey2 / (2.0 * ex2);
        assert!((0.6..1.6).contains(&ratio), "ratio {ratio}");
    }

    #[test]
    fn bn_fold_matches_unfolded() {
        let mut w = vec![1.0, 2.0, 3.0, 4.0];
        let mut b = vec![0.5, -0.5];
        let bn = [
            &[2.0f32, 0.5][..],
            &[0.1, 0.2][..],
            &[0.3, -0.3][..],
            &[4.0, 1.0][..],
        ];
        fold_bn(&mut w, &mut b, &bn, 0.0);
        // channel 0: scale 2/2 = 1; channel 1: 0.5/1 = 0.5
        assert_eq!(w, vec![1.0, 2.0, 1.5, 2.0]);
        assert!((b[0] - (0.1 + 0.2)).abs() < 1e-6);
        assert!((b[1] - (0.2 + (-0.5 + 0.3) * 0.5)).abs() < 1e-6);
    }
}
