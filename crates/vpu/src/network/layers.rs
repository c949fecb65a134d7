//! QLinearConv, QLinearMatMul and QGemm nodes mapped onto the VPU kernels.

use super::*;
use pimkit_ir::operand::{qgemm, qlinear_conv as qc, qlinear_matmul as qmm};

impl Net<'_> {
    pub(super) fn qconv(
        &mut self,
        n: &Node,
        a: &pimkit_ir::ConvAttrs,
    ) -> Result<(KernelKind, Option<Dataflow>, Work, String)> {
        let x = self.input(n, qc::X)?;
        let w = self.input(n, qc::W)?;
        let y = n.outputs[0];
        let xt = self.g.ty(x).clone();
        let wt = self.g.ty(w).clone();
        let yt = self.g.ty(y).clone();
        if !(xt.rank() == 4 || xt.rank() == 3) {
            return self.host_with_note(n, format!("a {}-D input has no VPU kernel", xt.rank()));
        }
        if xt.shape[0] != 1 {
            return self.host_with_note(
                n,
                format!(
                    "batch {}: the VPU convolutions take batch 1 (export the model with batch 1)",
                    xt.shape[0]
                ),
            );
        }
        let c_in = xt.shape[1];
        let c_out = wt.shape[0];
        let x_s = self.f32s(n, qc::X_SCALE)?;
        let w_s = self.f32s(n, qc::W_SCALE)?;
        let y_s = self.f32s(n, qc::Y_SCALE)?;
        if x_s.len() != 1 || y_s.len() != 1 {
            return Err(nerr(n, "x_scale and y_scale must be per-tensor"));
        }
        let scales: Vec<f32> = w_s
            .iter()
            .map(|&s| output_scale(x_s[0], s, y_s[0]))
            .collect();
        let out = self.out_quant(n, y, qc::Y_ZERO_POINT, scales)?;
        // The output's bytes: allocated below, and what `auto`'s trials restore.
        let y_bytes = yt.numel() * out.elem.size();
        let x_zp = self.scalar_zp(n, qc::X_ZERO_POINT)?;
        let w_zp = self.zps(n, qc::W_ZERO_POINT)?;
        let bias = match n.input(qc::B) {
            Some(b) => Some(self.val(n, b)?.to_i32_vec()),
            None => None,
        };
        let x_elem = elem_of(xt.dtype).ok_or_else(|| nerr(n, "x must be u8/i8"))?;
        let w_elem = elem_of(wt.dtype).ok_or_else(|| nerr(n, "w must be u8/i8"))?;
        let wv = self.val(n, w)?.to_i32_vec();
        let kk: usize = a.kernel.iter().product();
        let macs = pimkit_ir::node_cost(self.g, n).macs;
        let work = Work {
            macs,
            n_in: (xt.numel() + wt.numel()) as u64,
            n_out: yt.numel() as u64,
        };
        let shape = format!("{} * {} -> {}", xt, wt, yt);
        let rank2 = xt.rank() == 4;
        let (h, wd) = if rank2 {
            (xt.shape[2], xt.shape[3])
        } else {
            (1, xt.shape[2])
        };
        let pads = if rank2 {
            [a.pads[0], a.pads[1], a.pads[2], a.pads[3]]
        } else {
            [0, a.pads[0], 0, a.pads[1]]
        };
        let stride = if rank2 {
            (a.strides[0], a.strides[1])
        } else {
            (1, a.strides[0])
        };
        let dil = if rank2 {
            (a.dilations[0], a.dilations[1])
        } else {
            (1, a.dilations[0])
        };
        let (kh, kw) = if rank2 {
            (a.kernel[0], a.kernel[1])
        } else {
            (1, a.kernel[0])
        };
        let pointwise = rank2 && kk == 1 && a.group == 1 && stride == (1, 1) && pads == [0; 4];
        if pointwise {
            // 1x1 convolution = matmul on HWC: [HW x C_in] @ [C_in x C_out].
            let hw = h * wd;
            let mut bt = vec![0; c_in * c_out];
            for co in 0..c_out {
                for ci in 0..c_in {
                    bt[ci * c_out + co] = wv[co * c_in + ci];
                }
            }
            let a_addr = self.place(n, x, Layout::Hwc)?;
            let b_addr = self.m.put(w_elem, &bt);
            let bias_addr = bias.as_ref().map(|b| self.m.put(Elem::I32, b));
            let y_addr = self.m.alloc(y_bytes);
            let job = MatMulJob {
                m: hw,
                k: c_in,
                n: c_out,
                a: a_addr,
                a_elem: x_elem,
                a_zp: x_zp,
                b: b_addr,
                b_elem: w_elem,
                b_zp: w_zp,
                bias: bias_addr,
                y: y_addr,
                out: out.clone(),
            };
            let (kind, df) = self.run_mm(&job, None)?;
            self.collect(n, y, y_addr, Layout::Hwc, out.elem)?;
            return Ok((kind, df, work, shape));
        }
        let depthwise = rank2 && a.group == c_in && c_in == c_out && a.group > 1;
        if depthwise {
            let x_addr = self.place(n, x, Layout::Hwc)?;
            let wt_addr = self.m.put(w_elem, &stage_weights(&wv, c_out, kk));
            let bias_addr = bias.as_ref().map(|b| self.m.put(Elem::I32, b));
            let y_addr = self.m.alloc(y_bytes);
            let job = DwJob {
                c: c_in,
                h,
                w: wd,
                kh,
                kw,
                stride,
                pads,
                dil,
                x: x_addr,
                x_elem,
                x_zp,
                wt: wt_addr,
                w_elem,
                w_zp,
                bias: bias_addr,
                y: y_addr,
                out: out.clone(),
            };
            let df = self.run_kernel(
                KernelKind::Depthwise,
                None,
                Workload::depthwise(&job),
                (y_addr, y_bytes),
                &|m, df| depthwise::depthwise(m, &job, df),
            )?;
            self.collect(n, y, y_addr, Layout::Hwc, out.elem)?;
            return Ok((KernelKind::Depthwise, Some(df), work, shape));
        }
        let groups = a.group.max(1);
        if !c_in.is_multiple_of(groups) || !c_out.is_multiple_of(groups) {
            return self.host_with_note(
                n,
                format!("{groups} groups do not divide {c_in} -> {c_out} channels"),
            );
        }
        if wt.shape.get(1) != Some(&(c_in / groups)) {
            return self.host_with_note(
                n,
                format!(
                    "weight shape {:?} does not hold {} input channels per group",
                    wt.shape,
                    c_in / groups
                ),
            );
        }
        let is1d = !rank2 && stride == (1, 1);
        // A filter no register window can hold runs on the host, with a note.
        let fits = if is1d {
            conv1d::check_geometry(kw, dil.1, self.m.vlen)
        } else {
            conv2d::check_geometry((kh, kw), stride, dil, self.m.vlen).map(|_| ())
        };
        if let Err(e @ VpuError::VrfTooSmall { .. }) = fits {
            return self.host_with_note(n, e.to_string());
        }
        fits?;
        let x_addr = self.place(n, x, Layout::Chw)?;
        let wt_addr = self.m.put(w_elem, &wv);
        let y_addr = self.m.alloc(y_bytes);
        let job = ConvJob {
            c_in,
            h,
            w: wd,
            c_out,
            kh,
            kw,
            stride,
            pads,
            dil,
            x: x_addr,
            x_elem,
            x_zp,
            wt: wt_addr,
            w_elem,
            w_zp,
            bias,
            y: y_addr,
            out: out.clone(),
        };
        let kind = if is1d {
            KernelKind::Conv1d
        } else {
            KernelKind::Conv2d
        };
        let workload = Workload::conv(kind, &job, groups);
        // A grouped (not depthwise) convolution runs the kernel once per group.
        let jobs = job.split_groups(groups);
        let run = |m: &mut Machine, df: Dataflow| -> Result<()> {
            for job in &jobs {
                if is1d {
                    conv1d::conv1d(m, job, df)?;
                } else {
                    conv2d::conv2d(m, job, df)?;
                }
            }
            Ok(())
        };
        let df = self.run_kernel(kind, None, workload, (y_addr, y_bytes), &run)?;
        self.collect(n, y, y_addr, Layout::Chw, out.elem)?;
        Ok((kind, Some(df), work, shape))
    }

    /// One matmul call: VM for M = 1, else MM with `prefer` or the node's choice.
    fn run_mm(
        &mut self,
        job: &MatMulJob,
        prefer: Option<Dataflow>,
    ) -> Result<(KernelKind, Option<Dataflow>)> {
        if job.m == 1 {
            vecmat(&mut self.m, job)?;
            Ok((KernelKind::Vm, None))
        } else {
            let out = (job.y, job.m * job.n * job.out.elem.size());
            let w = Workload::matmul(job);
            let df =
                self.run_kernel(KernelKind::Mm, prefer, w, out, &|m, df| matmul(m, job, df))?;
            Ok((KernelKind::Mm, Some(df)))
        }
    }

    /// QLinearMatMul (gemm = None) or QGemm (Some((alpha, trans_b))) with rank-2 operands.
    pub(super) fn qmatmul(
        &mut self,
        n: &Node,
        gemm: Option<(f32, bool)>,
    ) -> Result<(KernelKind, Option<Dataflow>, Work, String)> {
        let a = self.input(n, qmm::A)?;
        let b = self.input(n, qmm::B)?;
        let y = n.outputs[0];
        let (at, bt, yt) = (
            self.g.ty(a).clone(),
            self.g.ty(b).clone(),
            self.g.ty(y).clone(),
        );
        // QGemm is 2-D; QLinearMatMul may carry batch dimensions (numpy matmul).
        let Some((batch, b_batched)) = matmul_batch(&at.shape, &bt.shape, &yt.shape) else {
            return self.host_with_note(
                n,
                format!(
                    "A {:?} and B {:?} broadcast in a way the kernels do not (B must be 2-D or share A's batch dimensions)",
                    at.shape, bt.shape
                ),
            );
        };
        if gemm.is_some() && (at.rank() != 2 || bt.rank() != 2) {
            return self.host_with_note(n, "QGemm operands must be 2-D");
        }
        let trans_b = gemm.is_some_and(|g| g.1);
        let (ar, br) = (at.rank(), bt.rank());
        let (m_, k) = (at.shape[ar - 2], at.shape[ar - 1]);
        let nn = if trans_b {
            bt.shape[br - 2]
        } else {
            bt.shape[br - 1]
        };
        let a_s = self.f32s(n, qmm::A_SCALE)?;
        let b_s = self.f32s(n, qmm::B_SCALE)?;
        let y_s = self.f32s(
            n,
            if gemm.is_some() {
                qgemm::Y_SCALE
            } else {
                qmm::Y_SCALE
            },
        )?;
        if a_s.len() != 1 || y_s.len() != 1 || (b_s.len() != 1 && b_s.len() != nn) {
            return self.host_with_note(
                n,
                "the kernels need per-tensor A and Y scales and a per-tensor or per-column B scale",
            );
        }
        let scales: Vec<f32> = match gemm {
            Some((alpha, _)) => b_s
                .iter()
                .map(|&s| ((alpha * a_s[0]) * s) / y_s[0])
                .collect(),
            None => b_s
                .iter()
                .map(|&s| output_scale(a_s[0], s, y_s[0]))
                .collect(),
        };
        let out = self.out_quant(
            n,
            y,
            if gemm.is_some() {
                qgemm::Y_ZERO_POINT
            } else {
                qmm::Y_ZERO_POINT
            },
            scales,
        )?;
        let a_zp = self.scalar_zp(n, qmm::A_ZERO_POINT)?;
        let b_zp = self.zps(n, qmm::B_ZERO_POINT)?;
        if b_zp.len() != 1 && b_zp.len() != nn {
            return self.host_with_note(
                n,
                "the kernels need a per-tensor or per-column B zero point",
            );
        }
        let a_elem = elem_of(at.dtype).ok_or_else(|| nerr(n, "A must be u8/i8"))?;
        let b_elem = elem_of(bt.dtype).ok_or_else(|| nerr(n, "B must be u8/i8"))?;
        let bias = match gemm.and(n.input(qgemm::C)) {
            Some(c) => {
                let cv = self.val(n, c)?.to_i32_vec();
                if cv.len() == nn {
                    Some(cv)
                } else if cv.len() == 1 {
                    Some(vec![cv[0]; nn])
                } else {
                    return self
                        .host_with_note(n, format!("a bias of {} values for N = {nn}", cv.len()));
                }
            }
            None => None,
        };
        let a_addr = self.place(n, a, Layout::Chw)?;
        let b_addr = if trans_b {
            // Weights are staged K x N offline; a runtime B is transposed by the host.
            let bv = self.val(n, b)?.to_i32_vec();
            if !self.g.is_const(b) {
                self.m
                    .host((self.m.arch.host.copy_cycles * bv.len() as f64).ceil() as u64);
            }
            let mut t = vec![0; k * nn];
            for j in 0..nn {
                for kk in 0..k {
                    t[kk * nn + j] = bv[j * k + kk];
                }
            }
            self.m.put(b_elem, &t)
        } else {
            self.place(n, b, Layout::Chw)?
        };
        let bias_addr = bias.as_ref().map(|b| self.m.put(Elem::I32, b));
        let y_addr = self.m.alloc(yt.numel() * out.elem.size());
        // A shared B turns the batch into more rows of one product; a batched B runs
        // the 2-D kernel once per batch entry (row-major blocks of A, B and Y).
        let (calls, rows) = if b_batched {
            (batch, m_)
        } else {
            (1, batch * m_)
        };
        // The node's first call picks the dataflow; the others (same shape) reuse it.
        let mut ran: Option<(KernelKind, Option<Dataflow>)> = None;
        for i in 0..calls {
            let job = MatMulJob {
                m: rows,
                k,
                n: nn,
                a: a_addr + (i * m_ * k * a_elem.size()) as u64,
                a_elem,
                a_zp,
                b: b_addr + (i * k * nn * b_elem.size()) as u64,
                b_elem,
                b_zp: b_zp.clone(),
                bias: bias_addr,
                y: y_addr + (i * m_ * nn * out.elem.size()) as u64,
                out: out.clone(),
            };
            ran = Some(self.run_mm(&job, ran.and_then(|r| r.1))?);
        }
        let (kind, df) = ran.ok_or_else(|| nerr(n, "empty batch"))?;
        self.collect(n, y, y_addr, Layout::Chw, out.elem)?;
        let work = Work {
            macs: (batch * m_ * k * nn) as u64,
            n_in: (at.numel() + bt.numel()) as u64,
            n_out: yt.numel() as u64,
        };
        Ok((kind, df, work, format!("{} @ {} -> {}", at, bt, yt)))
    }
}

/// Batch size of a QLinearMatMul the VPU kernels can run, and whether B is batched:
/// A is [..., M, K] with its batch dimensions equal to Y's, B is [K, N] (shared) or has
/// the same batch dimensions as A. Other broadcasts return None (they run on the host).
fn matmul_batch(a: &[usize], b: &[usize], y: &[usize]) -> Option<(usize, bool)> {
    if a.len() < 2 || b.len() < 2 || y.len() != a.len().max(b.len()) {
        return None;
    }
    let (ab, bb, yb) = (&a[..a.len() - 2], &b[..b.len() - 2], &y[..y.len() - 2]);
    if ab != yb {
        return None;
    }
    let batch: usize = ab.iter().product();
    if bb.iter().product::<usize>() == 1 {
        Some((batch, false))
    } else if bb == ab {
        Some((batch, true))
    } else {
        None
    }
}
