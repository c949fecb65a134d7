//! Nodes without a VPU kernel: run on the modelled host (values from the interpreter).

use super::*;

impl Net<'_> {
    /// A node a VPU kernel could take in principle runs on the host; say why.
    pub(super) fn host_with_note(
        &mut self,
        n: &Node,
        why: impl std::fmt::Display,
    ) -> Result<(KernelKind, Option<Dataflow>, Work, String)> {
        self.notes.push(format!(
            "layer `{}` ({}) ran on the host: {why}",
            n.name,
            n.op.name()
        ));
        self.host_node(n)
    }

    pub(super) fn host_node(
        &mut self,
        n: &Node,
    ) -> Result<(KernelKind, Option<Dataflow>, Work, String)> {
        let h = self.m.arch.host.clone();
        let in_el: usize = n
            .inputs
            .iter()
            .flatten()
            .filter(|v| !self.g.is_const(**v))
            .map(|v| self.g.ty(*v).numel())
            .sum();
        let in_bytes: usize = n
            .inputs
            .iter()
            .flatten()
            .filter(|v| !self.g.is_const(**v))
            .map(|v| self.g.ty(*v).bytes())
            .sum();
        let out_el: usize = n.outputs.iter().map(|v| self.g.ty(*v).numel()).sum();
        let out_bytes: usize = n.outputs.iter().map(|v| self.g.ty(*v).bytes()).sum();
        let first_layout = n.inputs.first().copied().flatten().and_then(|v| {
            if self.placed.contains_key(&(v, Layout::Hwc))
                && !self.placed.contains_key(&(v, Layout::Chw))
            {
                Some(Layout::Hwc)
            } else {
                self.natural.get(&v).copied()
            }
        });
        let (cycles, bytes) = match &n.op {
            Op::Reshape { .. } | Op::Identity => {
                let src = n
                    .input(pimkit_ir::operand::unary::X)
                    .map(|v| spatial(self.g.ty(v)))
                    .unwrap_or(1);
                if first_layout == Some(Layout::Hwc) && src > 1 {
                    (h.copy_cycles * in_el as f64, in_bytes + out_bytes)
                } else {
                    (0.0, 0)
                }
            }
            Op::QLinearGlobalAveragePool { .. } => (
                h.zp_cycles * in_el as f64 + h.requant_cycles * out_el as f64,
                in_bytes + out_bytes,
            ),
            Op::Pool(_) | Op::GlobalPool(_) => (h.copy_cycles * in_el as f64, in_bytes + out_bytes),
            Op::QLinearConv(_)
            | Op::QLinearMatMul
            | Op::QGemm { .. }
            | Op::MatMulInteger
            | Op::ConvInteger(_) => {
                let c = pimkit_ir::node_cost(self.g, n);
                (
                    h.mac_cycles * c.macs as f64 + h.requant_cycles * out_el as f64,
                    in_bytes + out_bytes,
                )
            }
            // every other host op is costed as one elementwise pass over its output
            _ => (h.eltwise_cycles * out_el as f64, in_bytes + out_bytes),
        };
        self.m.host(cycles.ceil() as u64);
        self.host_bytes += bytes as u64;
        if let Some(l) = first_layout {
            for &o in &n.outputs {
                if self.g.ty(o).rank() == 4 {
                    self.natural.insert(o, l);
                }
            }
        }
        Ok((
            KernelKind::Host,
            None,
            Work::default(),
            format!("{}", self.g.ty(n.outputs[0])),
        ))
    }
}
