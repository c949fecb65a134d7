//! The compilation pipeline: partition, duplication under the budget with the
//! packing-failure fallback, packing, latency simulation, ISAAC-like baseline, bounds.

use crate::arch::{Arch, DepthwiseMapping, Mode};
use crate::bounds::{Bounds, LayerStats, bounds_for, layer_stats};
use crate::dup::{copies_for_period, rnc_ilp};
use crate::ems::Dftrc;
use crate::error::{Result, XbarError};
use crate::layer::{Layer, LayerKind, Skipped, extract};
use crate::pack::{BoxItem, Order, PackCfg, Packing, Placement, pack_orders};
use crate::partition::{PartitionCfg, Piece, partition};
use crate::result::{BaselineResult, DuplicationResult, LayerResult, MapResult};
use crate::sim::{SimLayer, SimOut, simulate};
use pimkit_ir::Graph;

/// Crossbar budget: a multiple of the ISAAC-like crossbar count, or an absolute count.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Budget {
    Relative(f64),
    Crossbars(usize),
}

impl Budget {
    /// The front ends' `--budget F` / `--crossbars N` (an absolute count wins; neither:
    /// the architecture file's default).
    pub fn from_flags(relative: Option<f64>, crossbars: Option<usize>) -> Option<Budget> {
        match (relative, crossbars) {
            (_, Some(n)) => Some(Budget::Crossbars(n)),
            (Some(b), None) => Some(Budget::Relative(b)),
            (None, None) => None,
        }
    }
}

/// Run options (defaults come from the architecture file's `[defaults]`).
#[derive(Clone, Debug, PartialEq)]
pub struct MapOptions {
    pub budget: Budget,
    pub sdw: usize,
    pub samples: usize,
    pub depthwise: DepthwiseMapping,
    pub mode: Mode,
    pub seed: u64,
    /// Duplicate layers into spare crossbars.
    pub duplicate: bool,
    /// Also map and simulate the ISAAC-like baseline (a NAS loop computes it once instead).
    pub baseline: bool,
}

impl MapOptions {
    pub fn from_arch(arch: &Arch) -> MapOptions {
        let d = &arch.defaults;
        MapOptions {
            budget: Budget::Relative(d.budget),
            sdw: d.sdw,
            samples: d.samples,
            depthwise: d.depthwise,
            mode: d.mode,
            seed: d.seed,
            duplicate: true,
            baseline: true,
        }
    }

    fn validate(&self) -> Result<()> {
        if self.sdw == 0 {
            return Err(XbarError::Option {
                option: "sdw",
                msg: "the depthwise split factor must be at least 1".into(),
            });
        }
        if self.samples == 0 || self.samples > 1 << 20 {
            return Err(XbarError::Option {
                option: "samples",
                msg: "must be between 1 and 1048576".into(),
            });
        }
        match self.budget {
            Budget::Relative(f) if !(f.is_finite() && f > 0.0) => Err(XbarError::Option {
                option: "budget",
                msg: format!("{f} is not a positive multiple of the ISAAC-like crossbar count"),
            }),
            Budget::Crossbars(0) => Err(XbarError::Option {
                option: "crossbars",
                msg: "must be at least 1".into(),
            }),
            // every other budget is valid
            _ => Ok(()),
        }
    }
}

/// A compiled network: pieces, copies and their placement.
#[derive(Clone, Debug, PartialEq)]
pub struct Mapping {
    pub pieces: Vec<Vec<Piece>>,
    pub copies: Vec<u64>,
    pub packing: Packing,
    pub budget: usize,
    pub fits: bool,
    pub bounds: Bounds,
    pub duplication: DuplicationResult,
    pub mode: Mode,
    pub rows: usize,
    pub cols: usize,
}

fn pack_cfg(arch: &Arch, opts: &MapOptions, budget: Option<usize>) -> PackCfg {
    let p = &arch.packing;
    let compat = opts.mode == Mode::RncCompat;
    PackCfg {
        rows: arch.crossbar.rows as u32,
        cols: arch.crossbar.cols as u32,
        // RNC's --no-pack-heuristic turns off both the conflict and the load check.
        layer_threshold: p.hazard_rule.then_some(p.layer_threshold as u32),
        max_load: if p.hazard_rule {
            p.max_load
        } else {
            usize::MAX
        },
        rnc_ems: compat,
        dftrc: if compat {
            Dftrc::RncMixedAxes
        } else {
            Dftrc::Correct
        },
        order: if compat {
            Order::RandomKeys(opts.seed)
        } else {
            Order::DecreasingArea
        },
        budget,
        stop_on_overflow: true,
    }
}

/// Box orders tried: RNC-compat packs one random-key order; pimkit keeps the best of
/// `packing.restarts` random-key orders plus the decreasing-area order.
fn pack_orders_for(arch: &Arch, opts: &MapOptions) -> Vec<Order> {
    if opts.mode == Mode::RncCompat {
        return vec![Order::RandomKeys(opts.seed)];
    }
    let n = arch.packing.restarts.max(1) as u64;
    let mut v: Vec<Order> = (0..n)
        .map(|i| Order::RandomKeys(opts.seed.wrapping_add(i)))
        .collect();
    if n > 1 {
        v.push(Order::DecreasingArea);
    }
    v
}

fn items_for(pieces: &[Vec<Piece>], copies: &[u64]) -> Vec<BoxItem> {
    let mut v = Vec::new();
    for (l, (ps, &x)) in pieces.iter().zip(copies).enumerate() {
        for k in 0..x {
            for (p, pc) in ps.iter().enumerate() {
                v.push(BoxItem {
                    layer: l as u32,
                    piece: p as u32,
                    copy: k as u32,
                    w: pc.cols,
                    h: pc.rows,
                });
            }
        }
    }
    v
}

/// Pieces of every layer.
pub fn partition_all(
    layers: &[Layer],
    arch: &Arch,
    mode: Mode,
    dw: DepthwiseMapping,
    sdw: usize,
) -> Vec<Vec<Piece>> {
    let cfg = PartitionCfg::new(arch, mode, dw, sdw);
    layers.iter().map(|l| partition(l, &cfg)).collect()
}

/// ISAAC-like crossbar count: every piece (compact boxes, no split) on its own crossbar.
pub fn isaac_crossbars(layers: &[Layer], arch: &Arch, mode: Mode) -> usize {
    partition_all(layers, arch, mode, DepthwiseMapping::Compact, 1)
        .iter()
        .map(|p| p.len())
        .sum()
}

/// Resolve the budget to a crossbar count.
pub fn budget_crossbars(layers: &[Layer], arch: &Arch, opts: &MapOptions) -> usize {
    match opts.budget {
        Budget::Crossbars(n) => n,
        Budget::Relative(f) => {
            ((f * isaac_crossbars(layers, arch, opts.mode) as f64).round() as usize).max(1)
        }
    }
}

fn stats_of(pieces: &[Vec<Piece>], arch: &Arch) -> Vec<LayerStats> {
    let (r, c) = (arch.crossbar.rows as u32, arch.crossbar.cols as u32);
    pieces
        .iter()
        .map(|ps| {
            let v: Vec<(u32, u32)> = ps.iter().map(|p| (p.cols, p.rows)).collect();
            layer_stats(&v, r, c)
        })
        .collect()
}

/// Partition, duplicate and pack `layers` under the options' budget.
pub fn compile(layers: &[Layer], arch: &Arch, opts: &MapOptions) -> Result<Mapping> {
    opts.validate()?;
    if layers.is_empty() {
        return Err(XbarError::NoLayers);
    }
    let budget = budget_crossbars(layers, arch, opts);
    if budget < layers.len() {
        return Err(XbarError::BudgetTooSmall {
            budget,
            layers: layers.len(),
        });
    }
    let pieces = partition_all(layers, arch, opts.mode, opts.depthwise, opts.sdw);
    let cfg = pack_cfg(arch, opts, Some(budget));
    let stats = stats_of(&pieces, arch);
    let bounds_at = |copies: &[u64]| {
        bounds_for(
            &stats,
            copies,
            cfg.rows,
            cfg.cols,
            cfg.layer_threshold,
            cfg.max_load,
        )
    };
    let ones = vec![1u64; layers.len()];
    let orders = pack_orders_for(arch, opts);
    let mut tried = 0usize;
    let mut try_pack = |copies: &[u64], first_fit: bool| {
        tried += 1;
        pack_orders(&items_for(&pieces, copies), &cfg, &orders, first_fit)
    };
    let p1 = try_pack(&ones, false);
    let (copies, packing, margin, fits) = if !p1.fits {
        // Does not fit even without duplication: report what it would need.
        let free = PackCfg {
            budget: None,
            stop_on_overflow: false,
            ..cfg
        };
        (
            ones.clone(),
            pack_orders(&items_for(&pieces, &ones), &free, &orders, false),
            None,
            false,
        )
    } else if !opts.duplicate {
        (ones.clone(), p1, None, true)
    } else if opts.mode == Mode::Pimkit {
        // Exact period search: the smallest period whose copies (x_i = ceil(c_i/T)) respect
        // every lower bound, then a search upward with the packer as the oracle.
        let c: Vec<u64> = pieces
            .iter()
            .map(|ps| ps.iter().map(|p| p.cycles).max().unwrap_or(0))
            .collect();
        let t0 = c.iter().copied().max().unwrap_or(1).max(1);
        let (mut lo, mut hi) = (1u64, t0);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if bounds_at(&copies_for_period(&c, mid)).best <= budget {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        // Gallop up from the bound (the answer is usually within a few tens of percent of
        // it), then bisect; stop when the bracket is within 1 % of the period.
        let mut best = (t0, p1);
        let t_lb = lo;
        let mut below = t_lb - 1; // largest period known not to pack
        let mut k = 0u32;
        loop {
            let t = (t_lb + t_lb.saturating_mul((1u64 << k) - 1) / 8).min(t0);
            if t >= best.0 {
                break;
            }
            let p = try_pack(&copies_for_period(&c, t), true);
            if p.fits {
                best = (t, p);
                break;
            }
            below = t;
            k += 1;
        }
        let (mut lo, mut hi) = (below + 1, best.0);
        while lo < hi && (hi - lo) * 100 >= hi {
            let mid = lo + (hi - lo) / 2;
            let p = try_pack(&copies_for_period(&c, mid), true);
            if p.fits {
                hi = mid;
                best = (mid, p);
            } else {
                lo = mid + 1;
            }
        }
        let x = copies_for_period(&c, best.0);
        // The probe stopped at the first order that fitted; keep the tightest packing.
        let p = if orders.len() > 1 && best.0 < t0 {
            try_pack(&x, false)
        } else {
            best.1
        };
        (x, p, None, true)
    } else {
        // RNC: solve the integer program on raw areas and raw cycles with a shrinking margin;
        // reset to one copy when no margin packs.
        let c: Vec<u64> = layers.iter().map(|l| l.raw_cycles()).collect();
        let a: Vec<u64> = layers
            .iter()
            .map(|l| {
                let (r, w) = l.raw_box();
                (r * w) as u64
            })
            .collect();
        let d = &arch.duplication;
        let mut found = None;
        let mut k = 0;
        loop {
            let m = d.margin_start - k as f64 * d.margin_step;
            if m < d.margin_min - 1e-9 {
                break;
            }
            k += 1;
            let b = (budget as f64 * arch.area() as f64 * m).floor() as u64;
            if let Some(x) = rnc_ilp(&c, &a, b) {
                let p = try_pack(&x, true);
                if p.fits {
                    found = Some((x, p, m));
                    break;
                }
            }
        }
        match found {
            Some((x, p, m)) => (x, p, Some((m * 100.0).round() / 100.0), true),
            None => (ones.clone(), p1, None, true),
        }
    };
    let method = if !opts.duplicate {
        "none"
    } else if opts.mode == Mode::Pimkit {
        "period-search"
    } else {
        "rnc-ilp"
    };
    let bounds = bounds_at(&copies);
    let mut m = Mapping {
        pieces,
        copies,
        packing,
        budget,
        fits,
        bounds,
        duplication: DuplicationResult {
            enabled: opts.duplicate,
            method: method.into(),
            period_cycles: 0,
            margin,
            packings_tried: tried,
        },
        mode: opts.mode,
        rows: arch.crossbar.rows,
        cols: arch.crossbar.cols,
    };
    m.duplication.period_cycles = sim_layers(&m, layers)
        .iter()
        .map(|l| l.tasks.iter().map(|t| t.1).max().unwrap_or(0))
        .max()
        .unwrap_or(0);
    Ok(m)
}

/// Box tasks per layer. pimkit: the copies split each piece's reads evenly (ceil/floor
/// shares). RNC-compat: min(copies, Hout*Wout*groups) (conv) or min(copies, out) (dense)
/// copies work, each floor(cycles / used) cycles (zero for a layer with fewer cycles than
/// copies: the original's artefact).
pub fn sim_layers(m: &Mapping, layers: &[Layer]) -> Vec<SimLayer> {
    let mut xbar_of: Vec<Vec<u32>> = m
        .pieces
        .iter()
        .zip(&m.copies)
        .map(|(p, &x)| vec![u32::MAX; p.len() * x as usize])
        .collect();
    for pl in &m.packing.placements {
        let it = pl.item;
        let np = m.pieces[it.layer as usize].len();
        xbar_of[it.layer as usize][it.copy as usize * np + it.piece as usize] = pl.xbar;
    }
    let mut out = Vec::with_capacity(layers.len());
    for (i, l) in layers.iter().enumerate() {
        let x = m.copies[i];
        let np = m.pieces[i].len();
        let mut tasks = Vec::new();
        for (p, pc) in m.pieces[i].iter().enumerate() {
            let c = pc.cycles;
            match m.mode {
                Mode::Pimkit => {
                    for k in 0..x {
                        let share = c / x + u64::from(k < c % x);
                        if share > 0 {
                            tasks.push((xbar_of[i][k as usize * np + p], share));
                        }
                    }
                }
                Mode::RncCompat => {
                    let cap = match l.kind {
                        LayerKind::Dense | LayerKind::Recurrent => l.mats[0].1 as u64,
                        // convolutions: one read per output position and group
                        _ => l.positions * l.groups as u64,
                    };
                    let used = x.min(cap.max(1));
                    for k in 0..used {
                        tasks.push((xbar_of[i][k as usize * np + p], c / used));
                    }
                }
            }
        }
        debug_assert!(tasks.iter().all(|t| t.0 != u32::MAX), "unplaced box");
        out.push(SimLayer { tasks });
    }
    out
}

/// Simulate `samples` samples on a mapping.
pub fn simulate_mapping(m: &Mapping, layers: &[Layer], samples: usize) -> SimOut {
    simulate(
        &sim_layers(m, layers),
        m.packing.crossbars,
        samples,
        m.mode == Mode::Pimkit,
    )
}

/// The ISAAC-like mapping of `layers`: compact boxes, no split, no duplication, every box on
/// its own crossbar.
pub fn baseline_mapping(layers: &[Layer], arch: &Arch, mode: Mode) -> Mapping {
    let pieces = partition_all(layers, arch, mode, DepthwiseMapping::Compact, 1);
    let copies = vec![1u64; layers.len()];
    let placements: Vec<Placement> = items_for(&pieces, &copies)
        .into_iter()
        .enumerate()
        .map(|(i, item)| Placement {
            item,
            xbar: i as u32,
            x: 0,
            y: 0,
        })
        .collect();
    let n = placements.len();
    let stats = stats_of(&pieces, arch);
    let bounds = bounds_for(
        &stats,
        &copies,
        arch.crossbar.rows as u32,
        arch.crossbar.cols as u32,
        None,
        usize::MAX,
    );
    Mapping {
        pieces,
        copies,
        packing: Packing {
            placements,
            crossbars: n,
            fits: true,
        },
        budget: n,
        fits: true,
        bounds,
        duplication: DuplicationResult {
            enabled: false,
            method: "none".into(),
            period_cycles: 0,
            margin: None,
            packings_tried: 0,
        },
        mode,
        rows: arch.crossbar.rows,
        cols: arch.crossbar.cols,
    }
}

fn box_area(m: &Mapping) -> u64 {
    m.packing.placements.iter().map(|p| p.item.area()).sum()
}

/// Baseline figures for `samples` samples, compared with a budget of `budget` crossbars.
pub fn baseline(
    layers: &[Layer],
    arch: &Arch,
    mode: Mode,
    samples: usize,
    budget: usize,
) -> BaselineResult {
    let m = baseline_mapping(layers, arch, mode);
    let s = simulate_mapping(&m, layers, samples);
    let n = m.packing.crossbars;
    BaselineResult {
        crossbars: n,
        utilization: box_area(&m) as f64 / (n as f64 * arch.area() as f64),
        latency_cycles: s.latency,
        first_sample_cycles: s.first_sample,
        fits_budget: n <= budget,
    }
}

/// Summaries of a compiled mapping simulated for `samples` samples.
pub fn summarize(
    model: &str,
    layers: &[Layer],
    skipped: &[Skipped],
    m: &Mapping,
    arch: &Arch,
    opts: &MapOptions,
    samples: usize,
    base: Option<BaselineResult>,
) -> MapResult {
    let sl = sim_layers(m, layers);
    let s = simulate(&sl, m.packing.crossbars, samples, m.mode == Mode::Pimkit);
    let area = box_area(m) as f64;
    let cap = arch.area() as f64;
    let used = m.packing.crossbars;
    let mut per_layer: Vec<Vec<u32>> = vec![Vec::new(); layers.len()];
    for p in &m.packing.placements {
        per_layer[p.item.layer as usize].push(p.xbar);
    }
    let layer_results = layers
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let (r, c) = l.raw_box();
            let mut xs = per_layer[i].clone();
            xs.sort_unstable();
            xs.dedup();
            LayerResult {
                name: l.name.clone(),
                op: l.op.clone(),
                kind: l.kind,
                box_rows: r,
                box_cols: c,
                boxes: m.pieces[i].len(),
                copies: m.copies[i],
                cycles: sl[i].tasks.iter().map(|t| t.1).max().unwrap_or(0),
                cycles_one_copy: m.pieces[i].iter().map(|p| p.cycles).max().unwrap_or(0),
                crossbars: xs.len(),
                weights: l.weights(),
            }
        })
        .collect();
    let lat_ns = s.latency as f64 * arch.cycle_ns();
    let speedup = base.as_ref().map(|b| {
        if s.latency == 0 {
            f64::INFINITY
        } else {
            b.latency_cycles as f64 / s.latency as f64
        }
    });
    MapResult {
        model: model.to_string(),
        mode: opts.mode,
        depthwise: opts.depthwise,
        sdw: opts.sdw,
        samples,
        xbar_rows: arch.crossbar.rows,
        xbar_cols: arch.crossbar.cols,
        fits: m.fits,
        crossbars_used: used,
        crossbars_budget: m.budget,
        boxes: m.packing.placements.len(),
        utilization: area / (used.max(1) as f64 * cap),
        utilization_budget: area / (m.budget as f64 * cap),
        latency_cycles: s.latency,
        first_sample_cycles: s.first_sample,
        latency_ns: lat_ns,
        throughput: if lat_ns > 0.0 {
            samples as f64 / (lat_ns * 1e-9)
        } else {
            0.0
        },
        busy_fraction: if s.latency > 0 {
            s.busy as f64 / (s.latency as f64 * used.max(1) as f64)
        } else {
            0.0
        },
        lower_bound: m.bounds.best,
        bounds: m.bounds,
        packing_gap: used as f64 / m.bounds.best.max(1) as f64 - 1.0,
        duplication: m.duplication.clone(),
        baseline: base,
        speedup,
        layers: layer_results,
        skipped: skipped.to_vec(),
    }
}

/// Compile and simulate a list of layers.
pub fn map_layers(
    model: &str,
    layers: &[Layer],
    skipped: &[Skipped],
    arch: &Arch,
    opts: &MapOptions,
) -> Result<MapResult> {
    let m = compile(layers, arch, opts)?;
    let base = opts
        .baseline
        .then(|| baseline(layers, arch, opts.mode, opts.samples, m.budget));
    Ok(summarize(
        model,
        layers,
        skipped,
        &m,
        arch,
        opts,
        opts.samples,
        base,
    ))
}

/// Extract the layers of a graph, then compile and simulate them.
pub fn map_graph(g: &Graph, arch: &Arch, opts: &MapOptions) -> Result<MapResult> {
    let ex = extract(g)?;
    if ex.layers.is_empty() {
        return Err(XbarError::NoLayers);
    }
    map_layers(&g.name, &ex.layers, &ex.skipped, arch, opts)
}
