//! `auto`'s characterizations, one per distinct kernel workload: a later kernel call of
//! the same workload (the same kernel, shape, element types, zero points that are
//! applied and bias) runs the dataflow its first call's trials chose instead of running
//! the trials again, as an autotuner keys its log by workload (`Characterize::Shape`,
//! the default). `Characterize::Layer` tries every call where it runs.
//!
//! The kernels' instruction streams are functions of these parameters (no kernel
//! branches on an operand value); what a reused call does not re-measure is the effect
//! of its own cache state and operand addresses on the three dataflows' race. On the
//! zoo's ResNet18 the same-shape layers' times differ by at most 0.05 % while the
//! runner-up dataflow is at least 1.4 % slower, so each reused choice is the one its
//! own trials make (docs/vpu.md; tests/network.rs checks that the two modes agree).

use super::KernelKind;
use crate::kernels::conv2d::ConvJob;
use crate::kernels::depthwise::DwJob;
use crate::kernels::matmul::MatMulJob;
use crate::kernels::{Dataflow, OutQuant};
use crate::machine::Elem;
use serde::Serialize;
use std::collections::HashMap;

/// How `auto` characterizes kernel layers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Characterize {
    /// Once per distinct workload; later layers of that workload reuse the winner.
    #[default]
    Shape,
    /// Every kernel layer, where it runs.
    Layer,
}

impl Characterize {
    pub fn parse(s: &str) -> Option<Characterize> {
        match s.to_ascii_lowercase().as_str() {
            "shape" => Some(Characterize::Shape),
            "layer" => Some(Characterize::Layer),
            _ => None,
        }
    }
}

/// What a kernel call's instruction stream depends on: everything but operand
/// addresses and values.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(super) struct Workload {
    kind: KernelKind,
    params: Vec<usize>,
}

fn elem_code(e: Elem) -> usize {
    match e {
        Elem::U8 => 0,
        Elem::I8 => 1,
        Elem::I32 => 2,
    }
}

/// What every kernel's instruction stream depends on besides its shape: the operands'
/// element types, whether the activation zero point is applied, the bias, the output
/// type, the requantizer count and the weight zero points' count and whether any is
/// non-zero.
fn operands(
    (x, w): (Elem, Elem),
    x_zp: i32,
    bias: bool,
    out: &OutQuant,
    w_zp: &[i32],
) -> [usize; 8] {
    [
        elem_code(x),
        elem_code(w),
        usize::from(x_zp != 0),
        usize::from(bias),
        elem_code(out.elem),
        out.rq.len(),
        w_zp.len(),
        usize::from(w_zp.iter().any(|&v| v != 0)),
    ]
}

impl Workload {
    /// A 2-D or 1-D convolution split into `groups` kernel calls.
    pub(super) fn conv(kind: KernelKind, j: &ConvJob, groups: usize) -> Workload {
        let mut params = vec![
            j.c_in, j.h, j.w, j.c_out, j.kh, j.kw, j.stride.0, j.stride.1, j.dil.0, j.dil.1, groups,
        ];
        params.extend(j.pads);
        let ops = operands(
            (j.x_elem, j.w_elem),
            j.x_zp,
            j.bias.is_some(),
            &j.out,
            &j.w_zp,
        );
        params.extend(ops);
        Workload { kind, params }
    }

    pub(super) fn depthwise(j: &DwJob) -> Workload {
        let mut params = vec![
            j.c, j.h, j.w, j.kh, j.kw, j.stride.0, j.stride.1, j.dil.0, j.dil.1,
        ];
        params.extend(j.pads);
        let ops = operands(
            (j.x_elem, j.w_elem),
            j.x_zp,
            j.bias.is_some(),
            &j.out,
            &j.w_zp,
        );
        params.extend(ops);
        Workload {
            kind: KernelKind::Depthwise,
            params,
        }
    }

    pub(super) fn matmul(j: &MatMulJob) -> Workload {
        let mut params = vec![j.m, j.k, j.n];
        let ops = operands(
            (j.a_elem, j.b_elem),
            j.a_zp,
            j.bias.is_some(),
            &j.out,
            &j.b_zp,
        );
        params.extend(ops);
        Workload {
            kind: KernelKind::Mm,
            params,
        }
    }
}

/// The dataflow each workload's trials chose, and the layer where they ran.
#[derive(Default)]
pub(super) struct Characterized {
    by_workload: HashMap<Workload, (Dataflow, String)>,
}

impl Characterized {
    pub(super) fn get(&self, w: &Workload) -> Option<&(Dataflow, String)> {
        self.by_workload.get(w)
    }
    pub(super) fn insert(&mut self, w: Workload, df: Dataflow, layer: &str) {
        self.by_workload.entry(w).or_insert((df, layer.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::IntRequant;

    fn conv() -> ConvJob {
        ConvJob {
            c_in: 8,
            h: 10,
            w: 10,
            c_out: 16,
            kh: 3,
            kw: 3,
            stride: (1, 1),
            pads: [1; 4],
            dil: (1, 1),
            x: 0,
            x_elem: Elem::U8,
            x_zp: 3,
            wt: 1000,
            w_elem: Elem::I8,
            w_zp: vec![0],
            bias: Some(vec![1; 16]),
            y: 2000,
            out: OutQuant {
                elem: Elem::U8,
                zp: 5,
                rq: vec![IntRequant::new(0.01)],
            },
        }
    }

    #[test]
    fn addresses_and_values_do_not_count_but_what_the_kernel_branches_on_does() {
        let base = Workload::conv(KernelKind::Conv2d, &conv(), 1);
        let mut moved = conv();
        (moved.x, moved.wt, moved.y, moved.x_zp) = (4096, 8192, 9999, 7);
        moved.bias = Some(vec![-4; 16]);
        moved.out.zp = 0;
        moved.out.rq = vec![IntRequant::new(0.5)];
        assert_eq!(Workload::conv(KernelKind::Conv2d, &moved, 1), base);
        let changes: [fn(&mut ConvJob); 7] = [
            |j| j.x_zp = 0,
            |j| j.bias = None,
            |j| j.w_zp = vec![0; 16],
            |j| j.w_zp = vec![1],
            |j| j.x_elem = Elem::I8,
            |j| j.pads = [0, 1, 1, 1],
            |j| j.out.rq = vec![IntRequant::new(0.01); 16],
        ];
        for (i, change) in changes.iter().enumerate() {
            let mut j = conv();
            change(&mut j);
            assert_ne!(
                Workload::conv(KernelKind::Conv2d, &j, 1),
                base,
                "change {i}"
            );
        }
        assert_ne!(Workload::conv(KernelKind::Conv2d, &conv(), 2), base);
        assert_ne!(Workload::conv(KernelKind::Conv1d, &conv(), 1), base);
    }

    #[test]
    fn the_first_characterization_of_a_workload_is_kept() {
        let mut c = Characterized::default();
        let w = Workload::conv(KernelKind::Conv2d, &conv(), 1);
        c.insert(w.clone(), Dataflow::Ws, "a");
        c.insert(w.clone(), Dataflow::Os, "b");
        assert_eq!(c.get(&w), Some(&(Dataflow::Ws, "a".to_string())));
    }
}
