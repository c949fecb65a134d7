//! The window geometry of convolutions and pooling (kernel, strides, dilations, pads
//! with auto_pad resolved), shared by the nn, quantized, Lp-pool and index converters.

use crate::attr::Attrs;
use crate::error::Result;

/// Window geometry shared by convolutions and pooling: kernel, strides, dilations and
/// explicit pads, with auto_pad (SAME_UPPER / SAME_LOWER / VALID) resolved against the
/// input's spatial extents.
pub(super) fn window(
    a: &Attrs,
    kernel: Vec<usize>,
    spatial: &[usize],
) -> Result<(Vec<usize>, Vec<usize>, Vec<usize>)> {
    let r = kernel.len();
    if spatial.len() != r {
        return Err(a.err(
            "kernel_shape",
            format!(
                "has {r} dims but the input has {} spatial dims",
                spatial.len()
            ),
        ));
    }
    let strides = a.usize_list("strides")?.unwrap_or_else(|| vec![1; r]);
    let dil = a.usize_list("dilations")?.unwrap_or_else(|| vec![1; r]);
    if strides.len() != r || strides.contains(&0) {
        return Err(a.err("strides", format!("must hold {r} positive values")));
    }
    if dil.len() != r || dil.contains(&0) {
        return Err(a.err("dilations", format!("must hold {r} positive values")));
    }
    let auto = a.string("auto_pad")?.unwrap_or_else(|| "NOTSET".into());
    let pads = match auto.as_str() {
        "NOTSET" => {
            let p = a.usize_list("pads")?.unwrap_or_else(|| vec![0; 2 * r]);
            if p.len() != 2 * r {
                return Err(a.err("pads", format!("must hold {} values (begins, ends)", 2 * r)));
            }
            p
        }
        "VALID" => vec![0; 2 * r],
        "SAME_UPPER" | "SAME_LOWER" => {
            let mut p = vec![0; 2 * r];
            for i in 0..r {
                let out = spatial[i].div_ceil(strides[i]);
                let eff = dil[i] * kernel[i].saturating_sub(1) + 1;
                let total = ((out.max(1) - 1) * strides[i] + eff).saturating_sub(spatial[i]);
                let small = total / 2;
                let (b, e) = if auto == "SAME_UPPER" {
                    (small, total - small)
                } else {
                    (total - small, small)
                };
                p[i] = b;
                p[i + r] = e;
            }
            p
        }
        other => return Err(a.err("auto_pad", format!("unknown value '{other}'"))),
    };
    Ok((strides, dil, pads))
}
