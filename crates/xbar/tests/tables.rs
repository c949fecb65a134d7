//! Acceptance on the layer tables (shared/reference/layer-tables.md): box counts, savings of
//! packing, utilisation and speedup in the paper's ranges.

mod common;
use common::tables::*;
use pimkit_xbar::*;

fn boxes(rows: &[Row], mode: Mode, sdw: usize) -> Vec<usize> {
    partition_all(
        &layers(rows),
        &Arch::default(),
        mode,
        DepthwiseMapping::Compact,
        sdw,
    )
    .iter()
    .map(|p| p.len())
    .collect()
}

#[test]
fn box_counts_match_every_table() {
    for (rows, total) in [
        (TV_RESNET18_224, 727),
        (TV_RESNET18_64, 727),
        (RNC_RESNET18, 698),
        (TV_SQUEEZENET1_1_224, 108),
        (RNC_SQUEEZENET1_1, 80),
        (TV_MBV3_224, 245),
        (TV_MBV3_64, 245),
        (RNC_MBV3, 210),
    ] {
        for mode in [Mode::Pimkit, Mode::RncCompat] {
            let b = boxes(rows, mode, 1);
            for (i, r) in rows.iter().enumerate() {
                assert_eq!(b[i], r.6, "layer {} ({mode:?})", r.0);
            }
            assert_eq!(b.iter().sum::<usize>(), total);
        }
    }
}

#[test]
fn rnc_mbv3_split_counts() {
    // rnc.md §0 item 4: the floor-based split gives 249 boxes at S_DW = 5.
    assert_eq!(
        boxes(RNC_MBV3, Mode::RncCompat, 5).iter().sum::<usize>(),
        249
    );
    // pimkit splits each of the 11 depthwise layers into exactly 5 parts: 210 - 24 + 55.
    assert_eq!(boxes(RNC_MBV3, Mode::Pimkit, 5).iter().sum::<usize>(), 241);
}

#[test]
fn rnc_mbv3_cycles() {
    let l = layers(RNC_MBV3);
    let worst = l.iter().max_by_key(|l| l.raw_cycles()).unwrap();
    assert_eq!(
        (worst.name.as_str(), worst.raw_cycles()),
        ("bneck3.dw", 22528)
    );
    assert_eq!(l.iter().map(|l| l.raw_cycles()).sum::<u64>(), 140_424);
}
