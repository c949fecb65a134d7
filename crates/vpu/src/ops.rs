//! Operation counts and compute ceilings: quinn equations (1) and (2).

use crate::arch::Arch;
use serde::Serialize;

/// Algorithmic work of one operator instance.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Work {
    pub macs: u64,
    /// Activation + weight elements (one zero-point subtraction each).
    pub n_in: u64,
    /// Output elements (multiply, shift, zero-point add, clip).
    pub n_out: u64,
}

impl Work {
    /// Equation (1): N_op = 2 N_MAC + N_in + 4 N_out.
    pub fn n_op(&self) -> u64 {
        2 * self.macs + self.n_in + 4 * self.n_out
    }
    pub fn add(&mut self, o: &Work) {
        self.macs += o.macs;
        self.n_in += o.n_in;
        self.n_out += o.n_out;
    }
}

/// Per-class rates in Ops/cycle for `vpus` VPUs: MAC counted as 2 ops
/// (quinn §5.4: 0.33 MAC/cycle/lane x 8 lanes x 2 = 5.28) and the adder class
/// (1 word per 2 cycles per lane = 4.00) for zero-point and requantization terms.
pub fn class_rates(arch: &Arch, vpus: usize) -> (f64, f64) {
    let l = arch.vpu.lanes as f64 * vpus as f64;
    // 0.33 MAC/cycle/lane is quoted rounded from 1/3: the paper's 5.28 uses 0.33.
    let mac_rate = (1.0 / arch.vpu.cycles.mac * 100.0).round() / 100.0;
    (2.0 * mac_rate * l, l / arch.vpu.cycles.add)
}

/// Equation (2): the mix-weighted compute roof P_peak = N_op / sum_c(n_c / r_c).
pub fn compute_roof(arch: &Arch, vpus: usize, w: &Work) -> f64 {
    let (r_mac, r_add) = class_rates(arch, vpus);
    let t = (2 * w.macs) as f64 / r_mac + (w.n_in + 4 * w.n_out) as f64 / r_add;
    if t == 0.0 { 0.0 } else { w.n_op() as f64 / t }
}

/// The scalar host's ideal roof: one operation per cycle (quinn §5.9).
pub const HOST_PEAK: f64 = 1.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_rates_and_roofs() {
        let a = Arch::default();
        let (m, ad) = class_rates(&a, 1);
        assert!((m - 5.28).abs() < 1e-9 && (ad - 4.0).abs() < 1e-9);
        // MM256: roof close to the MAC rate; paper range 4.77..5.28.
        let n = 256u64;
        let w = Work {
            macs: n * n * n,
            n_in: 2 * n * n,
            n_out: n * n,
        };
        let r = compute_roof(&a, 1, &w);
        assert!(r > 5.2 && r < 5.28, "{r}");
        assert_eq!(w.n_op(), 2 * n * n * n + 2 * n * n + 4 * n * n);
        assert!((compute_roof(&a, 4, &w) - 4.0 * r).abs() < 1e-9);
    }
}
