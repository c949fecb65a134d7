//! Hand-solved cases: EMS bookkeeping, DFTRC, hazard rule, split, duplication, simulation,
//! arch validation.

use pimkit_xbar::dup::{copies_for_period, min_period, rnc_ilp};
use pimkit_xbar::ems::{Container, Dftrc, EmsRule, Rect};
use pimkit_xbar::pack::{BoxItem, Order, PackCfg, pack, validate};
use pimkit_xbar::partition::{PartitionCfg, partition, split_groups};
use pimkit_xbar::sim::{SimLayer, simulate};
use pimkit_xbar::*;

#[test]
fn ems_after_one_box_is_right_and_above() {
    let mut c = Container::new(128, 128);
    let b = c.place(0, 64, 32, EmsRule::All);
    assert_eq!(b, Rect::new(0, 0, 64, 32));
    let mut e = c.ems.clone();
    e.sort();
    assert_eq!(
        e,
        vec![Rect::new(0, 32, 128, 96), Rect::new(64, 0, 64, 128)]
    );
}

#[test]
fn rnc_two_children_lose_space_the_full_rule_keeps() {
    // Box A (100 wide, 10 tall) at the origin, then B (20x20) right of it. B cuts the space
    // above A; RNC keeps only its right and above parts, losing [0,100) x [10,20).
    let rnc = EmsRule::Rnc {
        min_dim: 0,
        min_area: 0,
    };
    for (rule, lost) in [(EmsRule::All, false), (rnc, true)] {
        let mut c = Container::new(128, 128);
        c.place(0, 100, 10, rule);
        let i = c.ems.iter().position(|e| e.x0 == 100 && e.y0 == 0).unwrap();
        c.place(i, 20, 20, rule);
        let probe = Rect::new(0, 10, 100, 10);
        let covered = c.ems.iter().any(|e| e.contains(&probe));
        assert_eq!(covered, !lost, "{rule:?}");
    }
}

#[test]
fn dftrc_axes_matter_for_non_square_boxes() {
    // Two spaces: a tall strip on the right and a wide strip on top.
    let c = Container {
        cols: 128,
        rows: 128,
        ems: vec![Rect::new(100, 0, 28, 128), Rect::new(0, 100, 128, 28)],
    };
    // A 20-wide, 28-tall box fits both. Correct distance: right strip (128-100-20)^2 +
    // (128-0-28)^2 = 10064 vs top strip (128-0-20)^2 + (128-100-28)^2 = 11664: top wins.
    assert_eq!(c.choose(20, 28, Dftrc::Correct), Some(1));
    // Mixed axes: right strip (128-100-28)^2 + (128-0-20)^2 = 11664 vs top (128-0-28)^2 + (128-100-20)^2 = 10064.
    assert_eq!(c.choose(20, 28, Dftrc::RncMixedAxes), Some(0));
}

fn item(layer: u32, piece: u32, w: u32, h: u32) -> BoxItem {
    BoxItem {
        layer,
        piece,
        copy: 0,
        w,
        h,
    }
}

fn cfg(t: Option<u32>, max_load: usize) -> PackCfg {
    PackCfg {
        rows: 128,
        cols: 128,
        layer_threshold: t,
        max_load,
        rnc_ems: false,
        dftrc: Dftrc::Correct,
        order: Order::DecreasingArea,
        budget: None,
        stop_on_overflow: false,
    }
}

#[test]
fn hazard_rule_and_threshold() {
    let items = [item(0, 0, 10, 10), item(1, 0, 10, 10), item(2, 0, 10, 10)];
    let xbar_of = |c: &PackCfg| {
        let p = pack(&items, c);
        validate(&p, c).unwrap();
        let mut v = vec![0; 3];
        for pl in &p.placements {
            v[pl.item.layer as usize] = pl.xbar;
        }
        (p.crossbars, v)
    };
    assert_eq!(xbar_of(&cfg(Some(1), 6)), (2, vec![0, 1, 0]));
    assert_eq!(xbar_of(&cfg(Some(2), 6)), (3, vec![0, 1, 2]));
    assert_eq!(xbar_of(&cfg(Some(0), 6)).0, 1);
    assert_eq!(xbar_of(&cfg(None, 6)).0, 1);
    // Two pieces of one layer never share, even when both would fit.
    let same = [item(0, 0, 10, 10), item(0, 1, 10, 10)];
    assert_eq!(pack(&same, &cfg(Some(0), 6)).crossbars, 2);
    // Max load: 7 tiny boxes of non-adjacent layers need two crossbars at 6 per crossbar.
    let many: Vec<BoxItem> = (0..7).map(|i| item(2 * i, 0, 4, 4)).collect();
    assert_eq!(pack(&many, &cfg(Some(1), 6)).crossbars, 2);
    assert_eq!(pack(&many, &cfg(Some(1), 7)).crossbars, 1);
}

#[test]
fn budget_overflow_is_reported() {
    let items: Vec<BoxItem> = (0..3).map(|i| item(i, 0, 128, 128)).collect();
    let c = PackCfg {
        budget: Some(2),
        ..cfg(Some(1), 6)
    };
    let p = pack(&items, &c);
    assert!(!p.fits);
    assert_eq!(p.crossbars, 3);
}

#[test]
fn depthwise_split_rules() {
    assert_eq!(split_groups(16, 5, Mode::RncCompat), vec![3, 3, 3, 3, 3, 1]);
    assert_eq!(split_groups(16, 5, Mode::Pimkit), vec![4, 3, 3, 3, 3]);
    assert_eq!(split_groups(3, 5, Mode::Pimkit), vec![1, 1, 1]);
    assert_eq!(split_groups(3, 5, Mode::RncCompat), vec![1, 1, 1]);
    assert_eq!(split_groups(576, 1, Mode::RncCompat), vec![576]);
}

fn pcfg(mode: Mode, dw: DepthwiseMapping, sdw: usize) -> PartitionCfg {
    PartitionCfg::new(&Arch::default(), mode, dw, sdw)
}

#[test]
fn partition_depthwise_compact_and_blockdiag() {
    let dw = Layer::conv("dw", 576, 576, 5, 576, 4, 4);
    let p = partition(&dw, &pcfg(Mode::Pimkit, DepthwiseMapping::Compact, 1));
    let dims: Vec<(u32, u32, u64)> = p.iter().map(|p| (p.rows, p.cols, p.cycles)).collect();
    assert_eq!(
        dims,
        vec![
            (25, 128, 2048),
            (25, 128, 2048),
            (25, 128, 2048),
            (25, 128, 2048),
            (25, 64, 1024)
        ]
    );
    let p = partition(&dw, &pcfg(Mode::Pimkit, DepthwiseMapping::Compact, 5));
    assert_eq!(p.len(), 5);
    assert_eq!(p.iter().map(|p| p.cycles).max(), Some(116 * 16));
    let small = Layer::conv("dw", 16, 16, 3, 16, 8, 8);
    let p = partition(&small, &pcfg(Mode::Pimkit, DepthwiseMapping::Blockdiag, 7));
    let dims: Vec<(u32, u32, u64)> = p.iter().map(|p| (p.rows, p.cols, p.cycles)).collect();
    assert_eq!(dims, vec![(126, 14, 64), (18, 2, 64)]);
    // Grouped conv (4 groups of 8 -> 16 channels, k = 3): compact box 72 x 64, 4 reads per pixel.
    let g = Layer::conv("g", 32, 64, 3, 4, 2, 2);
    assert_eq!(g.kind, LayerKind::Grouped);
    let p = partition(&g, &pcfg(Mode::Pimkit, DepthwiseMapping::Compact, 1));
    assert_eq!(
        (p.len(), p[0].rows, p[0].cols, p[0].cycles),
        (1, 72, 64, 16)
    );
}

#[test]
fn bit_slicing_widens_columns_in_pimkit_mode_only() {
    let mut arch = Arch::default();
    arch.crossbar.cell_bits = 1;
    let l = Layer::conv("c", 3, 17, 3, 1, 4, 4); // 27 x 17 -> 27 x 136 with 8 slices
    let p = partition(
        &l,
        &PartitionCfg::new(&arch, Mode::Pimkit, DepthwiseMapping::Compact, 1),
    );
    assert_eq!(
        p.iter().map(|p| (p.rows, p.cols)).collect::<Vec<_>>(),
        vec![(27, 128), (27, 8)]
    );
    arch.crossbar.differential = true;
    arch.crossbar.bit_slice = arch::BitSlice::Rows;
    let p = partition(
        &l,
        &PartitionCfg::new(&arch, Mode::Pimkit, DepthwiseMapping::Compact, 1),
    );
    assert_eq!(
        p.iter().map(|p| (p.rows, p.cols)).collect::<Vec<_>>(),
        vec![(128, 34), (88, 34)]
    );
    let p = partition(
        &l,
        &PartitionCfg::new(&arch, Mode::RncCompat, DepthwiseMapping::Compact, 1),
    );
    assert_eq!(
        p.iter().map(|p| (p.rows, p.cols)).collect::<Vec<_>>(),
        vec![(27, 17)]
    );
}

#[test]
fn duplication_hand_solved() {
    // c = [100, 10, 50], unit areas, 10 units: T = 17 gives 6 + 1 + 3 = 10; T = 16 needs 12.
    let (c, a) = ([100, 10, 50], [1, 1, 1]);
    assert_eq!(min_period(&c, &a, 10), Some(17));
    assert_eq!(copies_for_period(&c, 17), vec![6, 1, 3]);
    assert_eq!(rnc_ilp(&c, &a, 10), Some(vec![6, 1, 3]));
    assert_eq!(min_period(&c, &a, 2), None);
    assert_eq!(rnc_ilp(&c, &a, 2), None);
    assert_eq!(min_period(&c, &a, 3), Some(100));
    // Weighted areas: a big slow layer is expensive to copy.
    assert_eq!(min_period(&[1000, 100], &[10, 1], 40), Some(334));
}

#[test]
fn pipeline_of_dedicated_crossbars_is_a_flow_shop() {
    // Dedicated crossbars: latency = sum c + (K - 1) max c.
    let layers: Vec<SimLayer> = [30u64, 50, 20]
        .iter()
        .enumerate()
        .map(|(i, &c)| SimLayer {
            tasks: vec![(i as u32, c)],
        })
        .collect();
    for k in [1usize, 2, 8] {
        let s = simulate(&layers, 3, k, true);
        assert_eq!(s.latency, 100 + (k as u64 - 1) * 50);
        assert_eq!(s.first_sample, 100);
        assert_eq!(s.busy, 100 * k as u64);
    }
    // Layers 0 and 2 share crossbar 0: the second sample's layer 0 waits for layer 2 of the
    // first sample (FIFO on the crossbar).
    let shared = vec![
        SimLayer {
            tasks: vec![(0, 30)],
        },
        SimLayer {
            tasks: vec![(1, 10)],
        },
        SimLayer {
            tasks: vec![(0, 20)],
        },
    ];
    let s = simulate(&shared, 2, 2, true);
    // t=0..30 L0(s0); 30..40 L1(s0) while L0(s1) runs 30..60; L2(s0) queued until 60..80;
    // L1(s1) 60..70; L2(s1) 80..100.
    assert_eq!(s.latency, 100);
}

#[test]
fn arch_validation_names_the_field() {
    let bad = pimkit_xbar::arch::RRAM_128_TOML.replace("rows = 128", "rows = 0");
    let e = Arch::from_toml_str(&bad).unwrap_err().to_string();
    assert!(e.contains("crossbar.rows"), "{e}");
    let bad = pimkit_xbar::arch::RRAM_128_TOML.replace("max_load = 6", "max_load = 0");
    assert!(
        Arch::from_toml_str(&bad)
            .unwrap_err()
            .to_string()
            .contains("packing.max_load")
    );
    let bad = pimkit_xbar::arch::RRAM_128_TOML.replace("[timing]", "[timing]\nbogus = 1");
    assert!(Arch::from_toml_str(&bad).is_err());
}

#[test]
fn budget_below_one_crossbar_per_layer_is_an_error() {
    let arch = Arch::default();
    let layers: Vec<Layer> = (0..4)
        .map(|i| Layer::dense(format!("fc{i}"), 64, 64, 1))
        .collect();
    let opts = MapOptions {
        budget: Budget::Crossbars(3),
        ..MapOptions::from_arch(&arch)
    };
    let e = map_layers("m", &layers, &[], &arch, &opts).unwrap_err();
    assert!(
        matches!(
            e,
            XbarError::BudgetTooSmall {
                budget: 3,
                layers: 4
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("at least 4 crossbars"));
}

#[test]
fn single_sample_latency_is_the_sum_of_layer_times() {
    let arch = Arch::default();
    let layers = vec![
        Layer::conv("c0", 3, 16, 3, 1, 16, 16),
        Layer::conv("dw", 16, 16, 3, 16, 16, 16),
        Layer::conv("pw", 16, 32, 1, 1, 16, 16),
        Layer::dense("fc", 32, 10, 1),
    ];
    for mode in [Mode::Pimkit, Mode::RncCompat] {
        let opts = MapOptions {
            budget: Budget::Relative(2.0),
            samples: 1,
            mode,
            ..MapOptions::from_arch(&arch)
        };
        let r = map_layers("m", &layers, &[], &arch, &opts).unwrap();
        assert_eq!(
            r.latency_cycles,
            r.layers.iter().map(|l| l.cycles).sum::<u64>(),
            "{mode:?}"
        );
        assert!(r.speedup.unwrap() >= 1.0);
    }
}

/// ConvTranspose maps in scatter form: one crossbar read per input pixel, C_in/g rows by
/// (C_out/g)·k² columns; its MACs agree with the IR's cost model.
#[test]
fn conv_transpose_maps_in_scatter_form() {
    use pimkit_ir::{ConvTransposeAttrs, DType, Graph, Op, TensorType, node_cost};
    for (group, w_shape, rows, cols) in [(1, [8, 4, 3, 3], 8, 36), (2, [8, 2, 3, 3], 4, 18)] {
        let mut g = Graph::new("deconv");
        let x = g.add_input("x", TensorType::new(DType::F32, vec![1, 8, 5, 5]));
        let w = g.add_const_shape("w", TensorType::new(DType::F32, w_shape.to_vec()));
        let attrs = ConvTransposeAttrs::simple(vec![3, 3], 2, 1, group);
        let y = g.op("up", Op::ConvTranspose(attrs), &[x, w]).unwrap();
        g.outputs.push(y);
        let ex = extract(&g).unwrap();
        assert_eq!(ex.layers.len(), 1, "group {group}");
        let l = &ex.layers[0];
        assert_eq!(l.mats, vec![(rows, cols)], "group {group}");
        assert_eq!(l.groups, group);
        assert_eq!(l.positions, 25);
        assert_eq!(l.macs(), node_cost(&g, &g.nodes[0]).macs, "group {group}");
    }
}

#[test]
fn zero_size_operands_are_refused_by_node() {
    use pimkit_ir::{DType, Graph, Op, Tensor, TensorType};
    let mut g = Graph::new("empty");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![2, 0]));
    let w = g.add_const("w", Tensor::from_f32(vec![0, 3], vec![]));
    let y = g.op("mm", Op::MatMul, &[x, w]).unwrap();
    g.outputs = vec![y];
    let e = pimkit_xbar::layer::extract(&g).err().unwrap().to_string();
    assert!(e.contains("'mm'") && e.contains("zero-size"), "{e}");
}
