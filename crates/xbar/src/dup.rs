//! Layer duplication: how many copies of each layer so that the slowest layer is as fast as
//! possible under an area budget. Both formulations are solved exactly without a MILP solver
//! (reference rnc.md §5.3); the tests cross-check them against good_lp + microlp.

/// Copies needed so that every layer finishes within `period` cycles:
/// x_i = ceil(c_i / T) (a layer with x copies takes ceil(c / x) cycles).
pub fn copies_for_period(cycles: &[u64], period: u64) -> Vec<u64> {
    let t = period.max(1);
    cycles.iter().map(|&c| c.div_ceil(t).max(1)).collect()
}

fn cost(cycles: &[u64], areas: &[u64], period: u64) -> u128 {
    cycles
        .iter()
        .zip(areas)
        .map(|(&c, &a)| c.div_ceil(period.max(1)).max(1) as u128 * a as u128)
        .sum()
}

/// Smallest integer period T >= 1 with sum_i ceil(c_i/T) * a_i <= budget, i.e. the exact
/// optimum of "minimise max_i ceil(c_i/x_i) s.t. sum x_i a_i <= budget, x_i >= 1 integer".
/// `None` when even one copy per layer exceeds the budget. Binary search: the cost is
/// non-increasing in T.
pub fn min_period(cycles: &[u64], areas: &[u64], budget: u64) -> Option<u64> {
    let hi0 = cycles.iter().copied().max().unwrap_or(1).max(1);
    if cost(cycles, areas, hi0) > budget as u128 {
        return None;
    }
    let (mut lo, mut hi) = (1u64, hi0);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if cost(cycles, areas, mid) <= budget as u128 {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// RNC's integer program (LPDuplicateOptimizer): with s the layer of largest cycles,
/// maximise x_s / c_s subject to x_i / c_i >= x_s / c_s and sum_i x_i a_i <= budget,
/// x_i >= 1 integer. For a fixed x_s the cheapest choice is x_i = ceil(c_i x_s / c_s) and
/// feasibility is monotone in x_s, so a binary search over x_s is exact. Among the optimal
/// solutions this returns the one with the fewest copies (CBC may return any of them).
pub fn rnc_ilp(cycles: &[u64], areas: &[u64], budget: u64) -> Option<Vec<u64>> {
    let s = (0..cycles.len()).max_by_key(|&i| (cycles[i], std::cmp::Reverse(i)))?;
    let cs = cycles[s].max(1) as u128;
    let copies = |xs: u64| -> Vec<u64> {
        cycles
            .iter()
            .map(|&c| ((c as u128 * xs as u128).div_ceil(cs) as u64).max(1))
            .collect()
    };
    let fits = |x: &[u64]| -> bool {
        x.iter()
            .zip(areas)
            .map(|(&x, &a)| x as u128 * a as u128)
            .sum::<u128>()
            <= budget as u128
    };
    if !fits(&copies(1)) {
        return None;
    }
    let (mut lo, mut hi) = (1u64, (budget / areas[s].max(1)).max(1));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(&copies(mid)) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    Some(copies(lo))
}
