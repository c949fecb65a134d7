//! Property tests: EMS bookkeeping, packing validity and bounds, exact duplication.

use good_lp::{Expression, Solution, SolverModel, constraint, default_solver, variable, variables};
use pimkit_xbar::bounds::bounds_of;
use pimkit_xbar::dup::{min_period, rnc_ilp};
use pimkit_xbar::ems::{Container, Dftrc, EmsRule, Rect};
use pimkit_xbar::pack::{BoxItem, Order, PackCfg, pack, validate};
use pimkit_xbar::*;
use proptest::prelude::*;

fn free_grid(rows: u32, cols: u32, boxes: &[Rect]) -> Vec<bool> {
    let mut g = vec![true; (rows * cols) as usize];
    for b in boxes {
        for y in b.y0..b.y1 {
            for x in b.x0..b.x1 {
                g[(y * cols + x) as usize] = false;
            }
        }
    }
    g
}

fn rect_free(g: &[bool], cols: u32, r: &Rect) -> bool {
    (r.y0..r.y1).all(|y| (r.x0..r.x1).all(|x| g[(y * cols + x) as usize]))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// After every placement the spaces are exactly the maximal free rectangles: disjoint
    /// from boxes, covering all free cells, not extendable, none inside another; and when
    /// DFTRC finds no space, no free placement exists.
    #[test]
    fn ems_are_all_maximal_free_rectangles(
        rows in 4u32..20, cols in 4u32..20,
        sizes in prop::collection::vec((1u32..10, 1u32..10), 1..14),
        mixed in any::<bool>(),
    ) {
        let mut c = Container::new(rows, cols);
        let mut placed = Vec::new();
        let rule = if mixed { Dftrc::RncMixedAxes } else { Dftrc::Correct };
        for (w, h) in sizes {
            let g = free_grid(rows, cols, &placed);
            match c.choose(w, h, rule) {
                Some(i) => placed.push(c.place(i, w, h, EmsRule::All)),
                None => {
                    let exists = w <= cols && h <= rows && (0..=rows - h).any(|y| (0..=cols - w)
                        .any(|x| rect_free(&g, cols, &Rect::new(x, y, w, h))));
                    prop_assert!(!exists, "a free {w}x{h} spot was missed");
                    continue;
                }
            }
            let g = free_grid(rows, cols, &placed);
            let mut covered = vec![false; g.len()];
            for (i, e) in c.ems.iter().enumerate() {
                prop_assert!(!e.is_empty());
                prop_assert!(rect_free(&g, cols, e), "space {e:?} overlaps a box");
                for (j, o) in c.ems.iter().enumerate() {
                    prop_assert!(i == j || !o.contains(e), "{e:?} inside {o:?}");
                }
                let grow = [
                    (e.x0 > 0).then(|| Rect { x0: e.x0 - 1, ..*e }),
                    (e.x1 < cols).then(|| Rect { x1: e.x1 + 1, ..*e }),
                    (e.y0 > 0).then(|| Rect { y0: e.y0 - 1, ..*e }),
                    (e.y1 < rows).then(|| Rect { y1: e.y1 + 1, ..*e }),
                ];
                for r in grow.into_iter().flatten() {
                    prop_assert!(!rect_free(&g, cols, &r), "{e:?} is not maximal");
                }
                for y in e.y0..e.y1 {
                    for x in e.x0..e.x1 {
                        covered[(y * cols + x) as usize] = true;
                    }
                }
            }
            prop_assert_eq!(&covered, &g, "free space not accounted for");
        }
    }

    /// Every packing is valid and never uses fewer crossbars than the lower bound.
    #[test]
    fn packings_are_valid_and_above_the_bound(
        boxes in prop::collection::vec((0u32..12, 1u32..=128, 1u32..=128), 1..60),
        t in prop::option::of(0u32..3),
        max_load in 1usize..8,
        rnc in any::<bool>(),
        seed in any::<u64>(),
        area_order in any::<bool>(),
    ) {
        let items: Vec<BoxItem> = boxes.iter().enumerate()
            .map(|(i, &(l, w, h))| BoxItem { layer: l, piece: i as u32, copy: 0, w, h })
            .collect();
        let cfg = PackCfg {
            rows: 128, cols: 128, layer_threshold: t, max_load, rnc_ems: rnc,
            dftrc: if rnc { Dftrc::RncMixedAxes } else { Dftrc::Correct },
            order: if area_order { Order::DecreasingArea } else { Order::RandomKeys(seed) },
            budget: None, stop_on_overflow: false,
        };
        let p = pack(&items, &cfg);
        prop_assert_eq!(p.placements.len(), items.len());
        prop_assert!(validate(&p, &cfg).is_ok(), "{:?}", validate(&p, &cfg));
        let lb = bounds_of(&items, 128, 128, t, max_load);
        prop_assert!(p.crossbars >= lb.best, "{} crossbars < bound {:?}", p.crossbars, lb);
    }

    /// Whole compilations of random networks: valid packing, within budget when it fits,
    /// never below the bound.
    #[test]
    fn compiled_networks_are_valid(
        spec in prop::collection::vec((0u8..3, 1usize..300, 1usize..300, 1usize..8), 2..10),
        budget in 0.8f64..2.5,
        compat in any::<bool>(),
        sdw in 1usize..6,
    ) {
        let layers: Vec<Layer> = spec.iter().enumerate().map(|(i, &(kind, a, b, s))| match kind {
            0 => Layer::conv(format!("c{i}"), a.min(64), b, 3, 1, s, s),
            1 => Layer::conv(format!("dw{i}"), b, b, 3, b, s, s),
            _ => Layer::dense(format!("fc{i}"), a, b, 1),
        }).collect();
        let arch = Arch::default();
        let mode = if compat { Mode::RncCompat } else { Mode::Pimkit };
        let opts = MapOptions { budget: Budget::Relative(budget), sdw, mode, samples: 2, ..MapOptions::from_arch(&arch) };
        let m = match compile(&layers, &arch, &opts) {
            Ok(m) => m,
            Err(XbarError::BudgetTooSmall { .. }) => return Ok(()),
            Err(e) => panic!("{e}"),
        };
        let cfg = PackCfg { rows: 128, cols: 128, layer_threshold: Some(1), max_load: 6, rnc_ems: compat,
            dftrc: Dftrc::Correct, order: Order::DecreasingArea, budget: None, stop_on_overflow: false };
        prop_assert!(validate(&m.packing, &cfg).is_ok(), "{:?}", validate(&m.packing, &cfg));
        let expected: u64 = m.pieces.iter().zip(&m.copies).map(|(p, &x)| p.len() as u64 * x).sum();
        prop_assert_eq!(m.packing.placements.len() as u64, expected);
        if m.fits {
            prop_assert!(m.packing.crossbars <= m.budget);
        }
        prop_assert!(m.packing.crossbars >= m.bounds.best);
        let r = summarize("m", &layers, &[], &m, &arch, &opts, 2, None);
        prop_assert!(r.latency_cycles >= r.layers.iter().map(|l| l.cycles).sum::<u64>());
    }

    /// The integer-period solver equals brute force over every period.
    #[test]
    fn min_period_is_exact(
        ca in prop::collection::vec((1u64..200, 1u64..6), 1..5),
        budget in 1u64..40,
    ) {
        let c: Vec<u64> = ca.iter().map(|x| x.0).collect();
        let a: Vec<u64> = ca.iter().map(|x| x.1).collect();
        let cost = |t: u64| c.iter().zip(&a).map(|(&c, &a)| c.div_ceil(t) * a).sum::<u64>();
        let brute = (1..=*c.iter().max().unwrap()).find(|&t| cost(t) <= budget);
        prop_assert_eq!(min_period(&c, &a, budget), brute);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// RNC's integer program solved by binary search matches good_lp + microlp.
    #[test]
    fn rnc_ilp_matches_milp(
        ca in prop::collection::vec((1u64..300, 1u64..6), 1..5),
        budget in 1u64..60,
    ) {
        let c: Vec<u64> = ca.iter().map(|x| x.0).collect();
        let a: Vec<u64> = ca.iter().map(|x| x.1).collect();
        let s = (0..c.len()).max_by_key(|&i| (c[i], std::cmp::Reverse(i))).unwrap();
        let mut vars = variables!();
        let x: Vec<_> = a.iter().map(|&ai| vars.add(variable().integer().min(1).max((budget / ai).max(1) as f64))).collect();
        let area: Expression = x.iter().zip(&a).map(|(&x, &ai)| ai as f64 * x).sum();
        let mut model = vars.maximise(x[s]).using(default_solver).with(constraint!(area <= budget as f64));
        for i in 0..c.len() {
            // x_i / c_i >= x_s / c_s
            model = model.with(constraint!(c[s] as f64 * x[i] - c[i] as f64 * x[s] >= 0.0));
        }
        let milp = model.solve().ok().map(|sol| sol.value(x[s]).round() as u64);
        let ours = rnc_ilp(&c, &a, budget);
        prop_assert_eq!(ours.as_ref().map(|v| v[s]), milp);
        if let Some(v) = ours {
            prop_assert!(v.iter().zip(&a).map(|(x, a)| x * a).sum::<u64>() <= budget);
            for i in 0..c.len() {
                prop_assert!(v[i] as u128 * c[s] as u128 >= v[s] as u128 * c[i] as u128);
            }
        }
    }
}
