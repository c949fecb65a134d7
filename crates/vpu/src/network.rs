//! Whole quantized networks on the simulated system: QLinearConv / QLinearMatMul / QGemm
//! run as VPU kernels, every other node on the modelled host. One machine (one cache
//! state) lives for the whole inference, so traffic between layers is modelled (quinn
//! summed cold per-layer runs instead). Values of host nodes come from the reference
//! interpreter (their cycles are modelled); every kernel result is checked against it.
//!
//! Layouts: pointwise convolutions run as matmuls on HWC activations and depthwise ones
//! on the HWC kernel (quinn §5.11, "all in the HWC layout"); other convolutions use CHW.
//! A value needed in the other layout is converted by the host (cycles charged).

use crate::arch::Arch;
use crate::error::{Result, VpuError};
use crate::kernels::conv2d::ConvJob;
use crate::kernels::depthwise::{DwJob, stage_weights};
use crate::kernels::matmul::{MatMulJob, matmul, vecmat};
use crate::kernels::{Dataflow, OutQuant, conv1d, conv2d, depthwise};
use crate::machine::{Elem, Machine, Stats};
use crate::ops::Work;
use crate::quant::{IntRequant, output_scale};
use pimkit_ir::{DType, Graph, Node, NodeId, Op, Tensor, ValueId};
use serde::Serialize;
use std::collections::HashMap;

/// How each kernel layer picks its dataflow (serialized as "auto", "os", "is", "ws").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataflowChoice {
    /// The winner of each kernel family's characterization (quinn §5.5–5.9 and pimkit's
    /// own sweeps agree): OS for matmul and 2-D conv, IS for 1-D and depthwise conv.
    Auto,
    Fixed(Dataflow),
}

impl Serialize for DataflowChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            DataflowChoice::Auto => s.serialize_str("auto"),
            DataflowChoice::Fixed(d) => d.serialize(s),
        }
    }
}

impl DataflowChoice {
    pub fn parse(s: &str) -> Option<DataflowChoice> {
        if s.eq_ignore_ascii_case("auto") {
            Some(DataflowChoice::Auto)
        } else {
            Dataflow::parse(s).map(DataflowChoice::Fixed)
        }
    }
    fn pick(self, kernel: KernelKind) -> Dataflow {
        match self {
            DataflowChoice::Fixed(d) => d,
            DataflowChoice::Auto => match kernel {
                KernelKind::Conv1d | KernelKind::Depthwise => Dataflow::Is,
                _ => Dataflow::Os,
            },
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelKind {
    Mm,
    Vm,
    Conv2d,
    Conv1d,
    Depthwise,
    Host,
}

/// Options of a network run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NetOptions {
    pub dataflow: DataflowChoice,
    /// Start every layer with a cold cache (the paper's methodology: per-layer runs
    /// summed); default false carries the cache state from layer to layer.
    pub cold_layers: bool,
}

impl Default for NetOptions {
    fn default() -> Self {
        NetOptions {
            dataflow: DataflowChoice::Auto,
            cold_layers: false,
        }
    }
}

/// One node's cost.
#[derive(Clone, Debug, Serialize)]
pub struct LayerResult {
    pub name: String,
    pub op: String,
    pub kernel: KernelKind,
    pub dataflow: Option<Dataflow>,
    pub shape: String,
    pub cycles: u64,
    pub compute_cycles: u64,
    pub dma_stall_cycles: u64,
    pub host_cycles: u64,
    pub offchip_bytes: u64,
    /// Bytes the host itself reads and writes (not behind the DMA cache, quinn §4.1).
    pub host_bytes: u64,
    pub misses: u64,
    pub evictions: u64,
    /// Equation (1) operation count (0 for host-only nodes).
    pub ops: u64,
    pub energy_j: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct NetworkResult {
    pub model: String,
    pub vpus: usize,
    pub bandwidth: f64,
    pub dataflow: DataflowChoice,
    pub cold_layers: bool,
    pub cycles: u64,
    pub compute_cycles: u64,
    pub dma_stall_cycles: u64,
    pub host_cycles: u64,
    pub offchip_bytes: u64,
    pub host_bytes: u64,
    pub ops: u64,
    pub kernel_cycles: u64,
    pub energy_j: f64,
    pub latency_ms: f64,
    pub layers: Vec<LayerResult>,
    #[serde(skip)]
    pub outputs: Vec<Tensor>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Layout {
    Chw,
    Hwc,
}

fn nerr(n: &Node, msg: impl Into<String>) -> VpuError {
    VpuError::Node {
        node: n.name.clone(),
        op: n.op.name().into(),
        msg: msg.into(),
    }
}

fn elem_of(d: DType) -> Option<Elem> {
    match d {
        DType::U8 => Some(Elem::U8),
        DType::I8 => Some(Elem::I8),
        DType::I32 => Some(Elem::I32),
        _ => None,
    }
}

/// Energy per quinn Table 5: cycles / f x dynamic VPU power per unit x units.
pub fn energy_j(arch: &Arch, cycles: u64) -> f64 {
    cycles as f64 / (arch.clock_mhz * 1e6) * arch.vpu_power_w() * arch.vpus as f64
}

struct Net<'a> {
    g: &'a Graph,
    m: Machine,
    vals: Vec<Option<Tensor>>,
    placed: HashMap<(ValueId, Layout), u64>,
    /// Layout in which a host-produced value is naturally written.
    natural: HashMap<ValueId, Layout>,
    choice: DataflowChoice,
    host_bytes: u64,
}

/// Run graph `g` on the simulated system. `inputs` as for the interpreter.
pub fn run_network(
    g: &Graph,
    inputs: &HashMap<String, Tensor>,
    arch: &Arch,
    opts: &NetOptions,
) -> Result<NetworkResult> {
    let choice = opts.dataflow;
    let m = Machine::new(arch)?;
    let mut vals: Vec<Option<Tensor>> = vec![None; g.values.len()];
    let outputs = pimkit_interp::run_observed(g, inputs, &mut |nid: NodeId, outs: &[Tensor]| {
        for (v, t) in g.node(nid).outputs.iter().zip(outs) {
            vals[v.idx()] = Some(t.clone());
        }
    })
    .map_err(|e| VpuError::Other(format!("reference interpreter: {e}")))?;
    for (i, v) in g.values.iter().enumerate() {
        if let pimkit_ir::ValueDef::Const(Some(t)) = &v.def {
            vals[i] = Some(t.clone());
        }
    }
    for &i in &g.inputs {
        if let Some(t) = inputs.get(&g.value(i).name) {
            vals[i.idx()] = Some(t.clone());
        }
    }
    let mut net = Net {
        g,
        m,
        vals,
        placed: HashMap::new(),
        natural: HashMap::new(),
        choice,
        host_bytes: 0,
    };
    let mut layers = Vec::with_capacity(g.nodes.len());
    for (i, n) in g.nodes.iter().enumerate() {
        if opts.cold_layers {
            net.m.cache.invalidate();
        }
        let s0 = net.m.counters();
        let hb0 = net.host_bytes;
        let (kernel, df, work, shape) = net.node(NodeId(i as u32), n)?;
        net.m.finish();
        let st: Stats = net.m.stats_since(&s0);
        layers.push(LayerResult {
            name: n.name.clone(),
            op: n.op.name().into(),
            kernel,
            dataflow: df,
            shape,
            cycles: st.cycles,
            compute_cycles: st.compute_cycles,
            dma_stall_cycles: st.dma_stall_cycles,
            host_cycles: st.host_cycles,
            offchip_bytes: st.offchip_bytes,
            host_bytes: net.host_bytes - hb0,
            misses: st.misses,
            evictions: st.evictions,
            ops: work.n_op(),
            energy_j: energy_j(arch, st.cycles),
        });
    }
    let sum = |f: fn(&LayerResult) -> u64| layers.iter().map(f).sum::<u64>();
    let cycles = sum(|l| l.cycles);
    Ok(NetworkResult {
        model: g.name.clone(),
        vpus: arch.vpus,
        bandwidth: arch.memory.bandwidth,
        dataflow: choice,
        cold_layers: opts.cold_layers,
        cycles,
        compute_cycles: sum(|l| l.compute_cycles),
        dma_stall_cycles: sum(|l| l.dma_stall_cycles),
        host_cycles: sum(|l| l.host_cycles),
        offchip_bytes: sum(|l| l.offchip_bytes),
        host_bytes: sum(|l| l.host_bytes),
        ops: sum(|l| l.ops),
        kernel_cycles: layers
            .iter()
            .filter(|l| l.kernel != KernelKind::Host)
            .map(|l| l.cycles)
            .sum(),
        energy_j: energy_j(arch, cycles),
        latency_ms: cycles as f64 / (arch.clock_mhz * 1e3),
        layers,
        outputs,
    })
}

fn to_layout(t: &Tensor, l: Layout) -> Vec<i32> {
    let v = t.to_i32_vec();
    if l == Layout::Hwc && t.rank() == 4 && t.shape[0] == 1 {
        crate::run::chw_to_hwc(&v, t.shape[1], t.shape[2], t.shape[3])
    } else {
        v
    }
}

fn from_layout(v: Vec<i32>, shape: &[usize], l: Layout) -> Vec<i32> {
    if l == Layout::Hwc && shape.len() == 4 && shape[0] == 1 {
        crate::run::hwc_to_chw(&v, shape[1], shape[2], shape[3])
    } else {
        v
    }
}

fn spatial(t: &pimkit_ir::TensorType) -> usize {
    if t.rank() == 4 {
        t.shape[2] * t.shape[3]
    } else {
        1
    }
}

impl Net<'_> {
    fn val(&self, n: &Node, v: ValueId) -> Result<&Tensor> {
        self.vals[v.idx()].as_ref().ok_or_else(|| {
            nerr(
                n,
                format!(
                    "value `{}` has no data (shape-only model? load it with weights)",
                    self.g.value(v).name
                ),
            )
        })
    }
    fn input(&self, n: &Node, i: usize) -> Result<ValueId> {
        n.inputs
            .get(i)
            .copied()
            .flatten()
            .ok_or_else(|| nerr(n, format!("missing input {i}")))
    }
    fn f32s(&self, n: &Node, i: usize) -> Result<Vec<f32>> {
        Ok(self.val(n, self.input(n, i)?)?.to_f32_vec())
    }
    fn zps(&self, n: &Node, i: usize) -> Result<Vec<i32>> {
        match n.inputs.get(i).copied().flatten() {
            Some(v) => Ok(self.val(n, v)?.to_i32_vec()),
            None => Ok(vec![0]),
        }
    }
    fn scalar_zp(&self, n: &Node, i: usize) -> Result<i32> {
        let z = self.zps(n, i)?;
        if z.len() != 1 {
            return Err(nerr(
                n,
                format!(
                    "input {i}: per-tensor zero point expected, got {} values",
                    z.len()
                ),
            ));
        }
        Ok(z[0])
    }

    /// Address of value `v` in layout `l`, converting (host cycles) or placing it.
    fn place(&mut self, n: &Node, v: ValueId, l: Layout) -> Result<u64> {
        let t = self.val(n, v)?.clone();
        let ty = self.g.ty(v).clone();
        let l = if ty.rank() == 4 && spatial(&ty) > 1 && ty.shape[1] > 1 {
            l
        } else {
            Layout::Chw
        };
        let other = if l == Layout::Chw {
            Layout::Hwc
        } else {
            Layout::Chw
        };
        if let Some(&a) = self.placed.get(&(v, l)) {
            return Ok(a);
        }
        let elem = elem_of(t.dtype()).ok_or_else(|| {
            nerr(
                n,
                format!("operand of type {} is not an 8/32-bit integer", t.dtype()),
            )
        })?;
        let produced_other =
            self.placed.contains_key(&(v, other)) || self.natural.get(&v) == Some(&other);
        if produced_other {
            // Host layout conversion: read + write every element.
            self.m
                .host((self.m.arch.host.copy_cycles * t.numel() as f64).ceil() as u64);
            self.host_bytes += 2 * (t.numel() * elem.size()) as u64;
        }
        let a = self.m.put(elem, &to_layout(&t, l));
        self.placed.insert((v, l), a);
        Ok(a)
    }

    /// Read a kernel's output back, check it against the interpreter, record it.
    fn collect(&mut self, n: &Node, v: ValueId, addr: u64, l: Layout, elem: Elem) -> Result<()> {
        let ty = self.g.ty(v).clone();
        let got = from_layout(self.m.get(addr, elem, ty.numel())?, &ty.shape, l);
        let want = self.val(n, v)?.to_i32_vec();
        if got != want {
            let bad = got.iter().zip(&want).filter(|(a, b)| a != b).count();
            return Err(nerr(
                n,
                format!(
                    "VPU kernel result differs from the reference interpreter in {bad} of {} elements (a pimkit-vpu bug: please report)",
                    want.len()
                ),
            ));
        }
        let l = if ty.rank() == 4 && spatial(&ty) > 1 && ty.shape[1] > 1 {
            l
        } else {
            Layout::Chw
        };
        self.placed.insert((v, l), addr);
        Ok(())
    }

    fn out_quant(&self, n: &Node, v: ValueId, zp_in: usize, scales: Vec<f32>) -> Result<OutQuant> {
        let dt = self.g.ty(v).dtype;
        let elem = elem_of(dt)
            .filter(|e| *e != Elem::I32)
            .ok_or_else(|| nerr(n, format!("output type {dt} is not u8/i8")))?;
        Ok(OutQuant {
            elem,
            zp: self.scalar_zp(n, zp_in)?,
            rq: scales.into_iter().map(IntRequant::new).collect(),
        })
    }

    fn node(
        &mut self,
        _id: NodeId,
        n: &Node,
    ) -> Result<(KernelKind, Option<Dataflow>, Work, String)> {
        match &n.op {
            Op::QLinearConv(a) => self.qconv(n, a),
            Op::QLinearMatMul => self.qmatmul(n, None),
            Op::QGemm {
                alpha,
                trans_a: false,
                trans_b,
            } if n.inputs.get(7).copied().flatten().is_some() => {
                self.qmatmul(n, Some((*alpha, *trans_b)))
            }
            _ => self.host_node(n),
        }
    }

    fn host_node(&mut self, n: &Node) -> Result<(KernelKind, Option<Dataflow>, Work, String)> {
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
                let src = n.inputs[0].map(|v| spatial(self.g.ty(v))).unwrap_or(1);
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

    fn qconv(
        &mut self,
        n: &Node,
        a: &pimkit_ir::ConvAttrs,
    ) -> Result<(KernelKind, Option<Dataflow>, Work, String)> {
        let x = self.input(n, 0)?;
        let w = self.input(n, 3)?;
        let y = n.outputs[0];
        let xt = self.g.ty(x).clone();
        let wt = self.g.ty(w).clone();
        let yt = self.g.ty(y).clone();
        if xt.shape.first() != Some(&1) || !(xt.rank() == 4 || xt.rank() == 3) {
            return self.host_node(n);
        }
        let c_in = xt.shape[1];
        let c_out = wt.shape[0];
        let x_s = self.f32s(n, 1)?;
        let w_s = self.f32s(n, 4)?;
        let y_s = self.f32s(n, 6)?;
        if x_s.len() != 1 || y_s.len() != 1 {
            return Err(nerr(n, "x_scale and y_scale must be per-tensor"));
        }
        let scales: Vec<f32> = w_s
            .iter()
            .map(|&s| output_scale(x_s[0], s, y_s[0]))
            .collect();
        let out = self.out_quant(n, y, 7, scales)?;
        let x_zp = self.scalar_zp(n, 2)?;
        let w_zp = self.zps(n, 5)?;
        let bias = match n.inputs.get(8).copied().flatten() {
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
            let y_addr = self.m.alloc(yt.numel() * out.elem.size());
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
            let (kind, df) = self.run_mm(&job)?;
            self.collect(n, y, y_addr, Layout::Hwc, out.elem)?;
            return Ok((kind, df, work, shape));
        }
        let depthwise = rank2 && a.group == c_in && c_in == c_out && a.group > 1;
        if depthwise {
            let x_addr = self.place(n, x, Layout::Hwc)?;
            let wt_addr = self.m.put(w_elem, &stage_weights(&wv, c_out, kk));
            let bias_addr = bias.as_ref().map(|b| self.m.put(Elem::I32, b));
            let y_addr = self.m.alloc(yt.numel() * out.elem.size());
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
            let df = self.choice.pick(KernelKind::Depthwise);
            depthwise::depthwise(&mut self.m, &job, df)?;
            self.collect(n, y, y_addr, Layout::Hwc, out.elem)?;
            return Ok((KernelKind::Depthwise, Some(df), work, shape));
        }
        if a.group != 1 {
            return self.host_node(n);
        }
        let is1d = !rank2 && stride == (1, 1);
        let x_addr = self.place(n, x, Layout::Chw)?;
        let wt_addr = self.m.put(w_elem, &wv);
        let y_addr = self.m.alloc(yt.numel() * out.elem.size());
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
        let df = self.choice.pick(kind);
        if is1d {
            conv1d::conv1d(&mut self.m, &job, df)?;
        } else {
            conv2d::conv2d(&mut self.m, &job, df)?;
        }
        self.collect(n, y, y_addr, Layout::Chw, out.elem)?;
        Ok((kind, Some(df), work, shape))
    }

    fn run_mm(&mut self, job: &MatMulJob) -> Result<(KernelKind, Option<Dataflow>)> {
        if job.m == 1 {
            vecmat(&mut self.m, job)?;
            Ok((KernelKind::Vm, None))
        } else {
            let df = self.choice.pick(KernelKind::Mm);
            matmul(&mut self.m, job, df)?;
            Ok((KernelKind::Mm, Some(df)))
        }
    }

    /// QLinearMatMul (gemm = None) or QGemm (Some((alpha, trans_b))) with rank-2 operands.
    fn qmatmul(
        &mut self,
        n: &Node,
        gemm: Option<(f32, bool)>,
    ) -> Result<(KernelKind, Option<Dataflow>, Work, String)> {
        let a = self.input(n, 0)?;
        let b = self.input(n, 3)?;
        let y = n.outputs[0];
        let (at, bt, yt) = (
            self.g.ty(a).clone(),
            self.g.ty(b).clone(),
            self.g.ty(y).clone(),
        );
        if at.rank() != 2 || bt.rank() != 2 {
            return self.host_node(n);
        }
        let trans_b = gemm.is_some_and(|g| g.1);
        let (m_, k) = (at.shape[0], at.shape[1]);
        let nn = if trans_b { bt.shape[0] } else { bt.shape[1] };
        let a_s = self.f32s(n, 1)?;
        let b_s = self.f32s(n, 4)?;
        let y_s = self.f32s(n, if gemm.is_some() { 7 } else { 6 })?;
        if a_s.len() != 1 || y_s.len() != 1 || (b_s.len() != 1 && b_s.len() != nn) {
            return self.host_node(n);
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
        let out = self.out_quant(n, y, if gemm.is_some() { 8 } else { 7 }, scales)?;
        let a_zp = self.scalar_zp(n, 2)?;
        let b_zp = self.zps(n, 5)?;
        if b_zp.len() != 1 && b_zp.len() != nn {
            return self.host_node(n);
        }
        let a_elem = elem_of(at.dtype).ok_or_else(|| nerr(n, "A must be u8/i8"))?;
        let b_elem = elem_of(bt.dtype).ok_or_else(|| nerr(n, "B must be u8/i8"))?;
        let bias = match gemm.and(n.inputs.get(6).copied().flatten()) {
            Some(c) => {
                let cv = self.val(n, c)?.to_i32_vec();
                if cv.len() == nn {
                    Some(cv)
                } else if cv.len() == 1 {
                    Some(vec![cv[0]; nn])
                } else {
                    return self.host_node(n);
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
        let job = MatMulJob {
            m: m_,
            k,
            n: nn,
            a: a_addr,
            a_elem,
            a_zp,
            b: b_addr,
            b_elem,
            b_zp,
            bias: bias_addr,
            y: y_addr,
            out: out.clone(),
        };
        let (kind, df) = self.run_mm(&job)?;
        self.collect(n, y, y_addr, Layout::Chw, out.elem)?;
        let work = Work {
            macs: (m_ * k * nn) as u64,
            n_in: (at.numel() + bt.numel()) as u64,
            n_out: yt.numel() as u64,
        };
        Ok((kind, df, work, format!("{} @ {} -> {}", at, bt, yt)))
    }
}
