//! Activity counts of one crossbar layer from its pieces (docs/cost.md "Counts").

use super::activity::Activity;
use crate::layer::Layer;
use crate::partition::{PartitionCfg, Piece};
use pimkit_cost::{Counts, Geometry, Kind};

/// Output elements of one inference of `layer`.
pub fn outputs(layer: &Layer) -> f64 {
    let per: usize = layer.mats.iter().map(|m| m.1).sum::<usize>() * layer.groups.max(1);
    per as f64 * layer.positions as f64
}

/// Counts of one inference of `layer` (all its copies together: copies share the input
/// vectors, so the counts do not depend on duplication). `inputs`: elements of the layer's
/// input tensor (the feature map the buffer holds); `hops`: network hops its outputs travel
/// to the next layer; `priced`: the fraction of the layer's input vectors whose reads are
/// counted (1, or a library's `positions = "valid"` share).
pub fn layer_counts(
    layer: &Layer,
    pieces: &[Piece],
    cfg: &PartitionCfg,
    geom: &Geometry,
    act: &Activity,
    zero_skip: bool,
    inputs: f64,
    hops: f64,
    priced: f64,
) -> Counts {
    let mut c = Counts::default();
    let cells = (cfg.rows * cfg.cols) as f64;
    let ab = geom.act_bytes();
    let mut psums = 0.0;
    for p in pieces {
        let reads = p.cycles as f64 * priced;
        let (r, w) = (p.rows as f64, p.cols as f64);
        for &nz in &act.nonzero {
            c.add(Kind::Array, reads * nz * r * w / cells);
            c.add(Kind::Dac, reads * nz * r);
            // A read with no driven row has nothing to convert when zero skipping is on
            // (rows taken as independent: P(all zero) = (1 - nz)^rows).
            let live = if zero_skip {
                1.0 - (1.0 - nz).powf(r)
            } else {
                1.0
            };
            let conv = reads * w * live;
            c.add(Kind::Adc, conv);
            c.add(Kind::SampleHold, conv);
            c.add(Kind::ShiftAdd, conv);
        }
        c.add(Kind::InputRegister, reads * (r / cfg.row_mult as f64) * ab);
        let outs = reads * (w / cfg.col_mult as f64);
        c.add(Kind::OutputRegister, outs * ab);
        psums += outs;
    }
    let out = outputs(layer);
    // The buffer holds the feature maps: each input element is read once (windows reuse it
    // from the input registers) and each output written once.
    let moved = (inputs + out) * ab;
    c.add(Kind::Buffer, moved);
    c.add(Kind::Bus, moved);
    c.add(Kind::GlobalBus, out * ab);
    // Partial sums of row pieces are added digitally: one add per partial sum beyond the first.
    c.add(Kind::Vector, (psums - out).max(0.0));
    c.add(Kind::Router, out * ab * hops);
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arch::{Arch, DepthwiseMapping, Mode};
    use crate::partition::partition;

    fn setup() -> (Layer, Vec<Piece>, PartitionCfg, Geometry) {
        let arch = Arch::default();
        let cfg = PartitionCfg::new(&arch, Mode::Pimkit, DepthwiseMapping::Compact, 1);
        let l = Layer::dense("fc", 300, 200, 4);
        let pieces = partition(&l, &cfg);
        let g = Geometry {
            rows: 128,
            cols: 128,
            cell_bits: 8,
            weight_bits: 8,
            input_bits: 8,
            dac_bits: 1,
            adc_bits: 8,
            differential: false,
        };
        (l, pieces, cfg, g)
    }

    #[test]
    fn table_counts_read_every_row_and_column_of_every_piece_each_pulse() {
        let (l, pieces, cfg, g) = setup();
        let c = layer_counts(
            &l,
            &pieces,
            &cfg,
            &g,
            &Activity::full(8),
            false,
            1200.0,
            1.0,
            1.0,
        );
        // 300 x 200 in 128 x 128 pieces: every weight cell read 4 vectors x 8 pulses.
        assert_eq!(c.get(Kind::Dac), 4.0 * 8.0 * 300.0 * 2.0);
        assert_eq!(c.get(Kind::Adc), 4.0 * 8.0 * 200.0 * 3.0);
        assert!((c.get(Kind::Array) - 4.0 * 8.0 * 60000.0 / 16384.0).abs() < 1e-9);
        // Inputs: each of the 2 column pieces reads the 300 inputs; outputs 200 per vector.
        assert_eq!(c.get(Kind::InputRegister), 4.0 * 600.0);
        assert_eq!(c.get(Kind::Router), 4.0 * 200.0);
        assert_eq!(c.get(Kind::Buffer), 1200.0 + 4.0 * 200.0);
        assert_eq!(c.get(Kind::Vector), 4.0 * 200.0 * 2.0);
    }

    #[test]
    fn zero_inputs_leave_the_analog_path_idle_with_zero_skipping() {
        let (l, pieces, cfg, g) = setup();
        let zero = Activity {
            nonzero: vec![0.0; 8],
        };
        let c = layer_counts(&l, &pieces, &cfg, &g, &zero, true, 1200.0, 1.0, 1.0);
        for k in [
            Kind::Array,
            Kind::Dac,
            Kind::Adc,
            Kind::SampleHold,
            Kind::ShiftAdd,
        ] {
            assert_eq!(c.get(k), 0.0, "{k:?}");
        }
        let no_skip = layer_counts(&l, &pieces, &cfg, &g, &zero, false, 1200.0, 1.0, 1.0);
        assert!(no_skip.get(Kind::Adc) > 0.0);
    }
}
