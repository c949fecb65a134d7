//! Network packing: layer boxes into crossbars, first fit over open crossbars in opening
//! order, the EMS chosen by DFTRC-2, no rotation, with RNC's hazard heuristic (no two boxes
//! of the same or of nearby layers in one crossbar) and a per-crossbar box limit.

use crate::ems::{Container, Dftrc, EmsRule, Rect};
use rand::{RngExt, SeedableRng};
use serde::{Deserialize, Serialize};

/// One box to pack: piece `piece` of copy `copy` of layer `layer` (execution-order index).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BoxItem {
    pub layer: u32,
    pub piece: u32,
    pub copy: u32,
    /// Columns (output side).
    pub w: u32,
    /// Rows (input side).
    pub h: u32,
}

impl BoxItem {
    pub fn area(&self) -> u64 {
        self.w as u64 * self.h as u64
    }
}

/// Where a box went.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Placement {
    pub item: BoxItem,
    pub xbar: u32,
    pub x: u32,
    pub y: u32,
}

impl Placement {
    pub fn rect(&self) -> Rect {
        Rect::new(self.x, self.y, self.item.w, self.item.h)
    }
}

/// Order in which boxes are offered to the packer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Largest area first (then taller, then execution order): deterministic, good first fit.
    DecreasingArea,
    /// All first copies by decreasing area, then all second copies, ...: copies of one
    /// layer (which may never share a crossbar) are spread over the sequence.
    CopyMajorArea,
    /// RNC: one uniform random key per box, sorted (seeded).
    RandomKeys(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackCfg {
    pub rows: u32,
    pub cols: u32,
    /// Boxes whose layer indices differ by at most this may not share a crossbar; `None`
    /// disables the rule.
    pub layer_threshold: Option<u32>,
    pub max_load: usize,
    /// `true`: RNC's two-child EMS update with its elimination rule.
    pub rnc_ems: bool,
    pub dftrc: Dftrc,
    pub order: Order,
    /// Crossbars available. `None`: open as many as needed.
    pub budget: Option<usize>,
    /// Stop at the first box that does not fit in the budget (fast feasibility test).
    pub stop_on_overflow: bool,
}

/// A packing: every placed box, the crossbars opened, and whether all boxes fit the budget.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Packing {
    pub placements: Vec<Placement>,
    pub crossbars: usize,
    pub fits: bool,
}

struct Xbar {
    space: Container,
    layers: Vec<u32>,
}

fn conflicts(x: &Xbar, layer: u32, t: Option<u32>) -> bool {
    match t {
        None => false,
        Some(t) => x.layers.iter().any(|&l| l.abs_diff(layer) <= t),
    }
}

/// Offer order of `items` under `order`.
pub fn box_order(items: &[BoxItem], order: Order) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..items.len()).collect();
    match order {
        Order::DecreasingArea => idx.sort_by_key(|&i| {
            let b = &items[i];
            (
                std::cmp::Reverse(b.area()),
                std::cmp::Reverse(b.h),
                b.layer,
                b.piece,
                b.copy,
            )
        }),
        Order::CopyMajorArea => idx.sort_by_key(|&i| {
            let b = &items[i];
            (
                b.copy,
                std::cmp::Reverse(b.area()),
                std::cmp::Reverse(b.h),
                b.layer,
                b.piece,
            )
        }),
        Order::RandomKeys(seed) => {
            let mut rng = rand_pcg::Pcg64::seed_from_u64(seed);
            let keys: Vec<f64> = (0..items.len()).map(|_| rng.random::<f64>()).collect();
            idx.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]).then(a.cmp(&b)));
        }
    }
    idx
}

/// Pack `items` into crossbars.
pub fn pack(items: &[BoxItem], cfg: &PackCfg) -> Packing {
    let order = box_order(items, cfg.order);
    // Smallest dimension / area among boxes not yet packed (RNC's elimination rule).
    let mut suffix_min = vec![(u32::MAX, u64::MAX); order.len() + 1];
    for k in (0..order.len()).rev() {
        let b = &items[order[k]];
        let (d, a) = suffix_min[k + 1];
        suffix_min[k] = (d.min(b.w.min(b.h)), a.min(b.area()));
    }
    let mut xbars: Vec<Xbar> = Vec::new();
    // Crossbars that may still take a box, in opening order.
    let mut active: Vec<u32> = Vec::new();
    let mut placements = Vec::with_capacity(items.len());
    let mut fits = true;
    for (k, &i) in order.iter().enumerate() {
        let b = items[i];
        let rule = if cfg.rnc_ems {
            let (min_dim, min_area) = suffix_min[k + 1];
            EmsRule::Rnc { min_dim, min_area }
        } else {
            EmsRule::All
        };
        let full = b.w >= cfg.cols && b.h >= cfg.rows;
        let mut chosen = None;
        if !full {
            for (ai, &xi) in active.iter().enumerate() {
                let x = &xbars[xi as usize];
                if conflicts(x, b.layer, cfg.layer_threshold) {
                    continue;
                }
                if let Some(e) = x.space.choose(b.w, b.h, cfg.dftrc) {
                    chosen = Some((ai, xi as usize, e));
                    break;
                }
            }
        }
        let (xi, e) = match chosen {
            Some((_, xi, e)) => (xi, e),
            None => {
                if cfg.budget.is_some_and(|n| xbars.len() >= n) {
                    fits = false;
                    if cfg.stop_on_overflow {
                        break;
                    }
                }
                xbars.push(Xbar {
                    space: Container::new(cfg.rows, cfg.cols),
                    layers: Vec::new(),
                });
                active.push((xbars.len() - 1) as u32);
                (xbars.len() - 1, 0)
            }
        };
        let x = &mut xbars[xi];
        let r = x.space.place(e, b.w.min(cfg.cols), b.h.min(cfg.rows), rule);
        x.layers.push(b.layer);
        if x.layers.len() >= cfg.max_load || x.space.ems.is_empty() {
            active.retain(|&a| a as usize != xi);
        }
        placements.push(Placement {
            item: b,
            xbar: xi as u32,
            x: r.x0,
            y: r.y0,
        });
    }
    Packing {
        placements,
        crossbars: xbars.len(),
        fits,
    }
}

/// Pack with each order in turn. `first_fit`: return the first packing that fits the
/// budget (a feasibility probe); otherwise the fitting packing with the fewest crossbars
/// (or, when none fits, the one with the fewest crossbars).
pub fn pack_orders(items: &[BoxItem], cfg: &PackCfg, orders: &[Order], first_fit: bool) -> Packing {
    let mut best: Option<Packing> = None;
    for &o in orders {
        let p = pack(items, &PackCfg { order: o, ..*cfg });
        if p.fits && first_fit {
            return p;
        }
        let better = match &best {
            None => true,
            Some(b) => {
                (p.fits, std::cmp::Reverse(p.crossbars)) > (b.fits, std::cmp::Reverse(b.crossbars))
            }
        };
        if better {
            best = Some(p);
        }
    }
    best.unwrap_or_default()
}

/// Check a packing: boxes inside their crossbar, no overlaps, hazard rule and load limit
/// respected. Returns the first violation found.
pub fn validate(p: &Packing, cfg: &PackCfg) -> Result<(), String> {
    let mut by_xbar: Vec<Vec<&Placement>> = vec![Vec::new(); p.crossbars];
    for pl in &p.placements {
        let r = pl.rect();
        if r.x1 > cfg.cols || r.y1 > cfg.rows {
            return Err(format!("box {:?} leaves crossbar {}", pl.item, pl.xbar));
        }
        by_xbar
            .get_mut(pl.xbar as usize)
            .ok_or_else(|| format!("box {:?} in unopened crossbar {}", pl.item, pl.xbar))?
            .push(pl);
    }
    for (xi, v) in by_xbar.iter().enumerate() {
        if v.is_empty() {
            return Err(format!("crossbar {xi} is open but empty"));
        }
        if v.len() > cfg.max_load {
            return Err(format!(
                "crossbar {xi} holds {} boxes (max {})",
                v.len(),
                cfg.max_load
            ));
        }
        for a in 0..v.len() {
            for b in a + 1..v.len() {
                if v[a].rect().overlaps(&v[b].rect()) {
                    return Err(format!(
                        "boxes {:?} and {:?} overlap in crossbar {xi}",
                        v[a].item, v[b].item
                    ));
                }
                if let Some(t) = cfg.layer_threshold
                    && v[a].item.layer.abs_diff(v[b].item.layer) <= t
                {
                    return Err(format!(
                        "layers {} and {} share crossbar {xi} (threshold {t})",
                        v[a].item.layer, v[b].item.layer
                    ));
                }
            }
        }
    }
    Ok(())
}
