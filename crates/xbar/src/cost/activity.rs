//! Input-bit activity of each crossbar layer from reference runs: for each read pulse
//! (input slice of `dac_bits`), the fraction of the layer's input elements whose slice is
//! not zero. Table-driven counts take every slice as nonzero; value-dependent counts take
//! these fractions (docs/cost.md "Value-dependent counts").

use crate::error::{Result, XbarError};
use crate::layer::NodeLayer;
use pimkit_analog::network::Inputs;
use pimkit_ir::{Graph, NodeId, Tensor, ValueDef};
use std::collections::HashMap;

/// Per pulse, the fraction of input elements driving their row (1.0 everywhere: table counts).
#[derive(Clone, Debug, PartialEq)]
pub struct Activity {
    pub nonzero: Vec<f64>,
}

impl Activity {
    /// Every slice of every input nonzero (the table count).
    pub fn full(pulses: u32) -> Activity {
        Activity {
            nonzero: vec![1.0; pulses as usize],
        }
    }

    /// Fractions of nonzero slices of `values` quantized to `input_bits` (magnitudes over
    /// the largest magnitude; a negative input drives its row in the negative phase, so
    /// it counts like its magnitude), `dac_bits` per slice, most significant first.
    pub fn of_values(values: &[f64], input_bits: u32, dac_bits: u32) -> Activity {
        let pulses = input_bits.div_ceil(dac_bits) as usize;
        let mut nz = vec![0u64; pulses];
        let max = values.iter().fold(0f64, |m, v| m.max(v.abs()));
        let levels = (2f64.powi(input_bits.min(52) as i32) - 1.0).max(1.0);
        let mask = (1u64 << dac_bits.min(63)) - 1;
        let n = values.len().max(1) as f64;
        if max > 0.0 && max.is_finite() {
            for v in values {
                let code = (v.abs() / max * levels).round() as u64;
                if code == 0 {
                    continue;
                }
                for (p, c) in nz.iter_mut().enumerate() {
                    let shift = (pulses - 1 - p) as u32 * dac_bits;
                    if shift < 64 && (code >> shift) & mask != 0 {
                        *c += 1;
                    }
                }
            }
        }
        Activity {
            nonzero: nz.into_iter().map(|c| c as f64 / n).collect(),
        }
    }

    /// The mean of several activities (one per input sample).
    pub fn mean(all: &[Activity], pulses: u32) -> Activity {
        if all.is_empty() {
            return Activity::full(pulses);
        }
        let mut nonzero = vec![0.0; pulses as usize];
        for a in all {
            for (s, v) in nonzero.iter_mut().zip(&a.nonzero) {
                *s += v;
            }
        }
        for s in &mut nonzero {
            *s /= all.len() as f64;
        }
        Activity { nonzero }
    }
}

/// The activity of each layer of `layers` over reference runs of `g` on `samples`.
pub fn measure(
    g: &Graph,
    layers: &[NodeLayer],
    samples: &[Inputs],
    input_bits: u32,
    dac_bits: u32,
    mut on_sample: impl FnMut(usize),
) -> Result<Vec<Activity>> {
    let index: HashMap<NodeId, usize> = layers
        .iter()
        .enumerate()
        .map(|(i, l)| (l.node, i))
        .collect();
    let mut per: Vec<Vec<Activity>> = vec![Vec::new(); layers.len()];
    for (s, inputs) in samples.iter().enumerate() {
        let mut sub = |node: NodeId, ins: &[Option<&Tensor>]| {
            if let Some(&i) = index.get(&node) {
                let n = g.node(node);
                // The data operand: the first input that is not a stored weight.
                let data = n.inputs.iter().zip(ins).find_map(|(v, t)| {
                    let v = (*v)?;
                    (!matches!(g.value(v).def, ValueDef::Const(_))).then_some(*t)?
                });
                if let Some(t) = data {
                    per[i].push(Activity::of_values(&t.to_f64_vec(), input_bits, dac_bits));
                }
            }
            None
        };
        pimkit_interp::run_substituted(g, inputs, &mut sub, &mut |_, _| {}).map_err(|e| {
            XbarError::Option {
                option: "inputs",
                msg: format!("the reference run on input {} failed: {e}", s + 1),
            }
        })?;
        on_sample(s + 1);
    }
    let pulses = input_bits.div_ceil(dac_bits);
    Ok(per.iter().map(|a| Activity::mean(a, pulses)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_are_counted_most_significant_first() {
        // 3 of 4 bits: codes 7 (111), 4 (100), 0.
        let a = Activity::of_values(&[7.0, 4.0, 0.0], 3, 1);
        assert_eq!(a.nonzero, vec![2.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0]);
        let z = Activity::of_values(&[0.0; 5], 8, 1);
        assert!(z.nonzero.iter().all(|&v| v == 0.0));
        // 2-bit slices of 4-bit codes: 15 = 11|11 and 1 = 00|01.
        let b = Activity::of_values(&[-15.0, 1.0], 4, 2);
        assert_eq!(b.nonzero, vec![0.5, 1.0]);
    }
}
