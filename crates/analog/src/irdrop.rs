//! First-order IR drop on one array.
//!
//! Rows are driven from the left (column 0 side), columns are sensed at virtual ground
//! below the last row of the crossbar. With wire resistance r per cell segment the cell
//! (i, c) sees V_i minus the drop along its row wire, r sum_c' (min(c, c') + 1) I_ic', and
//! minus the rise of its column wire, r sum_m (R - max(i, m)) I_mc. Evaluating those
//! currents at the ideal voltages (I = G V) is one Jacobi step of the node-voltage
//! equations from the ideal solution — the first iteration of CrossSim's parasitic solver
//! (`simulator/circuits/array/*.py`, reference analog-nonidealities.md §4, relaxation 1)
//! — and it is linear in the inputs, so it folds into an effective conductance:
//!
//! G_eff(i, c) = G(i, c) [1 - r (sum_c' (min(c, c') + 1) G(i, c') + sum_m (R - max(i, m)) G(m, c))].
//!
//! It is accurate while the correction is small (a few percent); a full solve (CrossSim)
//! also captures the second-order sharing between drops.

/// Apply the first-order correction in place to `g` (`rows` x `cols`, row-major, any
/// conductance unit) with `alpha` = wire resistance x that unit; `sense_rows` is the
/// crossbar's row count (the sense amplifiers sit below its last row). Returns the
/// largest relative correction (a value near or above 1 means the first-order model
/// is far outside its range).
pub fn apply(g: &mut [f64], rows: usize, cols: usize, sense_rows: usize, alpha: f64) -> f64 {
    if alpha == 0.0 || rows == 0 || cols == 0 {
        return 0.0;
    }
    let mut corr = vec![0f64; rows * cols];
    // Row wires: sum_c' (min(c, c') + 1) G_ic' = sum_{c' <= c} (c'+1) G_ic' + (c+1) sum_{c' > c} G_ic'.
    for i in 0..rows {
        let row = &g[i * cols..(i + 1) * cols];
        let total: f64 = row.iter().sum();
        let (mut weighted, mut before) = (0.0, 0.0);
        for c in 0..cols {
            weighted += (c as f64 + 1.0) * row[c];
            before += row[c];
            corr[i * cols + c] = weighted + (c as f64 + 1.0) * (total - before);
        }
    }
    // Column wires: sum_m (R - max(i, m)) G_mc = (R - i) sum_{m <= i} G_mc + sum_{m > i} (R - m) G_mc.
    let r = sense_rows.max(rows) as f64;
    for c in 0..cols {
        let mut after = vec![0f64; rows + 1];
        for m in (0..rows).rev() {
            after[m] = after[m + 1] + (r - m as f64) * g[m * cols + c];
        }
        let mut upto = 0.0;
        for i in 0..rows {
            upto += g[i * cols + c];
            corr[i * cols + c] += (r - i as f64) * upto + after[i + 1];
        }
    }
    let mut worst = 0f64;
    for (v, k) in g.iter_mut().zip(&corr) {
        let f = alpha * k;
        worst = worst.max(f);
        // Beyond a drop of the whole voltage the first-order model no longer holds; a cell
        // never conducts backwards.
        *v *= (1.0 - f).max(0.0);
    }
    worst
}

#[cfg(test)]
mod tests {
    /// Solve the resistive network exactly (Gauss-Seidel on node voltages) for a small array
    /// and compare the column currents with the first-order model.
    fn exact_currents(g: &[f64], rows: usize, cols: usize, v: &[f64], rw: f64) -> Vec<f64> {
        // Nodes: row node (i, c) and column node (i, c); row driver at left, column ground below.
        let gw = 1.0 / rw;
        let mut vr = vec![0f64; rows * cols];
        let mut vc = vec![0f64; rows * cols];
        for i in 0..rows {
            for c in 0..cols {
                vr[i * cols + c] = v[i];
            }
        }
        for _ in 0..20000 {
            for i in 0..rows {
                for c in 0..cols {
                    let k = i * cols + c;
                    // Row node: left neighbour (or driver), right neighbour, cell to column node.
                    let left = if c == 0 { v[i] } else { vr[k - 1] };
                    let mut num = gw * left + g[k] * vc[k];
                    let mut den = gw + g[k];
                    if c + 1 < cols {
                        num += gw * vr[k + 1];
                        den += gw;
                    }
                    vr[k] = num / den;
                    // Column node: up neighbour, down neighbour (or ground), cell from row node.
                    let down = if i + 1 < rows { vc[k + cols] } else { 0.0 };
                    let mut num = gw * down + g[k] * vr[k];
                    let mut den = gw + g[k];
                    if i > 0 {
                        num += gw * vc[k - cols];
                        den += gw;
                    }
                    vc[k] = num / den;
                }
            }
        }
        (0..cols).map(|c| vc[(rows - 1) * cols + c] * gw).collect()
    }

    #[test]
    fn first_order_matches_a_network_solve_for_small_drops() {
        let (rows, cols) = (6, 5);
        let g: Vec<f64> = (0..rows * cols)
            .map(|k| 1e-4 * (1.0 + (k % 7) as f64 / 7.0))
            .collect();
        let v: Vec<f64> = (0..rows).map(|i| 0.1 + 0.02 * i as f64).collect();
        let rw = 2.0;
        let exact = exact_currents(&g, rows, cols, &v, rw);
        let mut ge = g.clone();
        let worst = super::apply(&mut ge, rows, cols, rows, rw);
        assert!(worst > 0.001 && worst < 0.05, "{worst}");
        for c in 0..cols {
            let ideal: f64 = (0..rows).map(|i| g[i * cols + c] * v[i]).sum();
            let first: f64 = (0..rows).map(|i| ge[i * cols + c] * v[i]).sum();
            let (drop, err) = ((ideal - exact[c]) / ideal, (first - exact[c]) / ideal);
            // The first-order model captures the drop to within a few percent of itself.
            assert!(
                drop > 0.0 && err.abs() < 0.05 * drop,
                "col {c}: drop {drop}, error {err}"
            );
        }
    }
}
