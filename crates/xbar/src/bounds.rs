//! Lower bounds on the number of crossbars any valid packing of a box set needs
//! (reference rnc.md §5.1).

use crate::pack::BoxItem;
use serde::{Deserialize, Serialize};

/// Crossbar-count lower bounds; `best` is their maximum.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bounds {
    /// Full-size boxes take a crossbar each; the rest needs ceil(area / crossbar area).
    pub area: usize,
    /// Boxes of layers i..=i+t pairwise conflict under the hazard rule, so each needs its own
    /// crossbar: max over windows of their box count.
    pub adjacent_layer: usize,
    /// ceil(boxes / max boxes per crossbar).
    pub box_count: usize,
    /// Boxes wider than half and taller than half a crossbar never share one.
    pub large_items: usize,
    pub best: usize,
}

/// Per-layer counts that determine the bounds, so that they can be evaluated for any copy
/// vector without building the boxes.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LayerStats {
    pub boxes: u64,
    pub full: u64,
    pub large: u64,
    pub partial_area: u64,
}

pub fn layer_stats(pieces: &[(u32, u32)], rows: u32, cols: u32) -> LayerStats {
    let mut s = LayerStats::default();
    for &(w, h) in pieces {
        s.boxes += 1;
        if w >= cols && h >= rows {
            s.full += 1;
        } else {
            s.partial_area += w as u64 * h as u64;
        }
        if 2 * w > cols && 2 * h > rows {
            s.large += 1;
        }
    }
    s
}

/// Bounds for `copies[i]` copies of layer i (layer order = hazard order).
pub fn bounds_for(
    stats: &[LayerStats],
    copies: &[u64],
    rows: u32,
    cols: u32,
    layer_threshold: Option<u32>,
    max_load: usize,
) -> Bounds {
    let cap = rows as u64 * cols as u64;
    let (mut full, mut area, mut boxes, mut large) = (0u64, 0u64, 0u64, 0u64);
    let per_layer: Vec<u64> = stats
        .iter()
        .zip(copies)
        .map(|(s, &x)| s.boxes * x)
        .collect();
    for (s, &x) in stats.iter().zip(copies) {
        full += s.full * x;
        area += s.partial_area * x;
        boxes += s.boxes * x;
        large += s.large * x;
    }
    let adjacent = match layer_threshold {
        None => 0,
        Some(t) => {
            let w = t as usize + 1;
            (0..per_layer.len())
                .map(|i| {
                    per_layer[i..(i + w).min(per_layer.len())]
                        .iter()
                        .sum::<u64>()
                })
                .max()
                .unwrap_or(0)
        }
    };
    let b = Bounds {
        area: (full + area.div_ceil(cap)) as usize,
        adjacent_layer: adjacent as usize,
        box_count: boxes.div_ceil(max_load.max(1) as u64) as usize,
        large_items: large as usize,
        best: 0,
    };
    Bounds {
        best: b
            .area
            .max(b.adjacent_layer)
            .max(b.box_count)
            .max(b.large_items),
        ..b
    }
}

/// Bounds of an explicit box set (`layer` fields must index 0..layers).
pub fn bounds_of(
    items: &[BoxItem],
    rows: u32,
    cols: u32,
    layer_threshold: Option<u32>,
    max_load: usize,
) -> Bounds {
    let n = items
        .iter()
        .map(|b| b.layer as usize + 1)
        .max()
        .unwrap_or(0);
    let mut pieces: Vec<Vec<(u32, u32)>> = vec![Vec::new(); n];
    for b in items {
        pieces[b.layer as usize].push((b.w, b.h));
    }
    let stats: Vec<LayerStats> = pieces.iter().map(|p| layer_stats(p, rows, cols)).collect();
    bounds_for(&stats, &vec![1; n], rows, cols, layer_threshold, max_load)
}
