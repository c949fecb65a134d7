//! Tensor layout conversions between the graph's channel-major CHW and the row-major HWC
//! the depthwise kernel and HWC-placed activations use. Its own module so the standalone
//! runs (`run.rs`), the network mapper and the kernels share it without depending on each
//! other (docs/architecture.md: a crate's module graph is a DAG).

/// CHW → HWC: element (c, i) of a C×(H·W) tensor moves to i·C + c.
pub fn chw_to_hwc(v: &[i32], c: usize, h: usize, w: usize) -> Vec<i32> {
    let mut o = vec![0; v.len()];
    for ci in 0..c {
        for i in 0..h * w {
            o[i * c + ci] = v[ci * h * w + i];
        }
    }
    o
}

/// HWC → CHW, the inverse of [`chw_to_hwc`].
pub fn hwc_to_chw(v: &[i32], c: usize, h: usize, w: usize) -> Vec<i32> {
    let mut o = vec![0; v.len()];
    for ci in 0..c {
        for i in 0..h * w {
            o[ci * h * w + i] = v[i * c + ci];
        }
    }
    o
}
