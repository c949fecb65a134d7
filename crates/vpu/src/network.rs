//! Whole quantized networks on the simulated system: QLinearConv / QLinearMatMul / QGemm
//! run as VPU kernels (`layers`), every other node on the modelled host (`host`). One
//! machine (one cache state) lives for the whole inference, so traffic between layers is
//! modelled (quinn §5.11 ran the layers "back-to-back in ONNX order"); `Method::Paper`
//! sums only the kernel calls, as the paper did. Values of host nodes come from the
//! reference interpreter (their cycles are modelled); every kernel result is checked
//! against it.
//!
//! Layouts: pointwise convolutions run as matmuls on HWC activations and depthwise ones
//! on the HWC kernel (quinn §5.11, "all in the HWC layout"); other convolutions use CHW.
//! A value needed in the other layout is converted by the host (cycles charged).

use crate::arch::{Arch, KernelStyle};
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

mod host;
mod layers;
mod trials;
mod workload;

pub use workload::Characterize;
use workload::{Characterized, Workload};

/// How each kernel layer picks its dataflow (serialized as "auto", "os", "is", "ws").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataflowChoice {
    /// Characterize each kernel layer where it runs: every dataflow is simulated from the
    /// same machine state (cache included) and the fastest is kept (the family's on a tie).
    Auto,
    /// The winner of each kernel family's characterization in quinn §5.5–5.9: OS for
    /// matmul and 2-D conv, IS for 1-D and depthwise conv (pimkit's own sweeps agree but
    /// for 1-D conv, where OS and IS stay within 1 %).
    /// `Method::Paper` uses it for `Auto`.
    Family,
    Fixed(Dataflow),
}

impl Serialize for DataflowChoice {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            DataflowChoice::Auto => s.serialize_str("auto"),
            DataflowChoice::Family => s.serialize_str("family"),
            DataflowChoice::Fixed(d) => d.serialize(s),
        }
    }
}

impl DataflowChoice {
    pub fn parse(s: &str) -> Option<DataflowChoice> {
        if s.eq_ignore_ascii_case("auto") {
            Some(DataflowChoice::Auto)
        } else if s.eq_ignore_ascii_case("family") {
            Some(DataflowChoice::Family)
        } else {
            Dataflow::parse(s).map(DataflowChoice::Fixed)
        }
    }
    /// The family's winner (for `Auto`, the fallback when no trial fits).
    fn pick(self, kernel: KernelKind) -> Dataflow {
        match self {
            DataflowChoice::Fixed(d) => d,
            DataflowChoice::Auto | DataflowChoice::Family => match kernel {
                KernelKind::Conv1d | KernelKind::Depthwise => Dataflow::Is,
                // the other kernels (conv2d, matmul) default to output-stationary, the paper's choice (quinn §3.2)
                _ => Dataflow::Os,
            },
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KernelKind {
    Mm,
    Vm,
    Conv2d,
    Conv1d,
    Depthwise,
    Host,
}

/// How a network estimate is assembled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Method {
    /// pimkit's end-to-end run: every node costs cycles (host nodes and layout
    /// conversions included) and the kernels use the arch file's `kernels` style.
    #[default]
    Pimkit,
    /// quinn §5.11: only the QUINN kernel calls are summed (host nodes such as
    /// QuantizeLinear, QLinearAdd and pooling are simulated and reported but left out of
    /// the totals, as are layout conversions: the paper ran each layer at its shape with
    /// operands already in the kernel's layout), and the kernels follow the paper's strict
    /// Table 2 formulation (`KernelStyle::Paper`).
    Paper,
}

impl Method {
    pub fn parse(s: &str) -> Option<Method> {
        match s.to_ascii_lowercase().as_str() {
            "pimkit" => Some(Method::Pimkit),
            "paper" => Some(Method::Paper),
            _ => None,
        }
    }
}

/// Options of a network run.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct NetOptions {
    pub dataflow: DataflowChoice,
    /// Start every layer with a cold cache; default false carries the cache state from
    /// layer to layer (quinn §5.11 ran the layers "back-to-back in ONNX order").
    pub cold_layers: bool,
    pub method: Method,
    /// `Auto` only: characterize each distinct workload once (the default) or every layer.
    pub characterize: Characterize,
}

impl Default for NetOptions {
    fn default() -> Self {
        NetOptions {
            dataflow: DataflowChoice::Auto,
            cold_layers: false,
            method: Method::Pimkit,
            characterize: Characterize::Shape,
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
    /// Whether the layer is part of the totals (see [`Method`]).
    pub counted: bool,
    /// `auto` with [`Characterize::Shape`]: the earlier layer of the same workload whose
    /// trials chose this layer's dataflow (no trials ran here).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dataflow_from: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct NetworkResult {
    pub model: String,
    pub vpus: usize,
    pub bandwidth: f64,
    pub dataflow: DataflowChoice,
    pub cold_layers: bool,
    pub method: Method,
    pub characterize: Characterize,
    /// Totals below sum the counted layers only (all of them with `Method::Pimkit`;
    /// the kernel layers with `Method::Paper`).
    pub cycles: u64,
    pub compute_cycles: u64,
    pub dma_stall_cycles: u64,
    pub host_cycles: u64,
    pub offchip_bytes: u64,
    pub host_bytes: u64,
    pub ops: u64,
    pub kernel_cycles: u64,
    /// Cycles of simulated layers left out of the totals (host nodes under `Method::Paper`).
    pub excluded_cycles: u64,
    pub energy_j: f64,
    pub latency_ms: f64,
    pub layers: Vec<LayerResult>,
    /// Layers sent to the host because no VPU kernel can hold them, with the reason.
    pub notes: Vec<String>,
    /// The graph outputs: read back from simulated memory where a VPU kernel wrote them,
    /// the interpreter's values where the host computed them.
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
    /// Charge host layout conversions (false under `Method::Paper`).
    charge_layout: bool,
    notes: Vec<String>,
    /// Machines of finished trials, reused as the next trials' copies.
    spares: Vec<Machine>,
    /// `auto`'s winners per workload, when they are reused ([`Characterize::Shape`]).
    characterized: Option<Characterized>,
    /// The node being run, and the layer whose trials chose its dataflow if it reused one.
    layer: String,
    dataflow_from: Option<String>,
}

/// Run graph `g` on the simulated system. `inputs` as for the interpreter.
pub fn run_network(
    g: &Graph,
    inputs: &HashMap<String, Tensor>,
    arch: &Arch,
    opts: &NetOptions,
) -> Result<NetworkResult> {
    run_network_with(g, inputs, arch, opts, &mut |_, _, _| {})
}

/// [`run_network`], calling `on_node(i, n, name)` before node `i` of `n` (a progress
/// display: a large model takes seconds to minutes with `auto`'s trials).
pub fn run_network_with(
    g: &Graph,
    inputs: &HashMap<String, Tensor>,
    arch: &Arch,
    opts: &NetOptions,
    on_node: &mut dyn FnMut(usize, usize, &str),
) -> Result<NetworkResult> {
    let paper = opts.method == Method::Paper;
    // The paper ran each layer with its family's characterized winner (§5.11).
    let choice = match opts.dataflow {
        DataflowChoice::Auto if paper => DataflowChoice::Family,
        c => c,
    };
    let mut arch = arch.clone();
    if paper {
        arch.kernels = KernelStyle::Paper;
    }
    let arch = &arch;
    let m = Machine::new(arch)?;
    let mut vals: Vec<Option<Tensor>> = vec![None; g.values.len()];
    // The VPU's integer MACs are exact: its reference leaves out onnxruntime's AVX2
    // u8 x s8 pair saturation (docs/vpu.md).
    let outputs = pimkit_interp::with_exact_products(|| {
        pimkit_interp::run_observed(g, inputs, &mut |nid: NodeId, outs: &[Tensor]| {
            for (v, t) in g.node(nid).outputs.iter().zip(outs) {
                vals[v.idx()] = Some(t.clone());
            }
        })
    })
    .map_err(|e| match e {
        // The user's model or inputs: a shape-only graph, inputs that do not fit it, memory.
        pimkit_interp::InterpError::ShapeOnly { .. }
        | pimkit_interp::InterpError::MissingInput { .. }
        | pimkit_interp::InterpError::UnknownInput { .. }
        | pimkit_interp::InterpError::InputMismatch { .. }
        | pimkit_interp::InterpError::OutOfMemory(_) => VpuError::Node {
            node: g.name.clone(),
            op: "reference run".into(),
            msg: e.to_string(),
        },
        e => VpuError::Other(format!("reference interpreter: {e}")),
    })?;
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
        charge_layout: !paper,
        notes: Vec::new(),
        spares: Vec::new(),
        characterized: (opts.characterize == Characterize::Shape).then(Characterized::default),
        layer: String::new(),
        dataflow_from: None,
    };
    let mut layers = Vec::with_capacity(g.nodes.len());
    for (i, n) in g.nodes.iter().enumerate() {
        on_node(i, g.nodes.len(), &n.name);
        if opts.cold_layers {
            net.m.cache.invalidate();
        }
        let s0 = net.m.counters();
        let hb0 = net.host_bytes;
        net.layer.clone_from(&n.name);
        net.dataflow_from = None;
        // Kernel errors name the layer they came from.
        let (kernel, df, work, shape) = net.node(NodeId(i as u32), n).map_err(|e| match e {
            VpuError::Node { .. } => e,
            e => nerr(n, e.to_string()),
        })?;
        if opts.cold_layers {
            // The next layer starts cold, so this one's dirty lines go to memory now.
            net.m.write_back_all();
        } else {
            net.m.finish();
        }
        let st: Stats = net.m.checked_stats_since(&s0)?;
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
            host_bytes: net.host_bytes.saturating_sub(hb0),
            misses: st.misses,
            evictions: st.evictions,
            ops: work.n_op(),
            energy_j: energy_j(arch, st.cycles),
            counted: !paper || kernel != KernelKind::Host,
            dataflow_from: net.dataflow_from.take(),
        });
    }
    // The layers share one machine, whose clock did not overflow (checked per layer), so
    // these sums fit; saturate anyway rather than wrap.
    let sat_sum = |it: &mut dyn Iterator<Item = u64>| it.fold(0u64, u64::saturating_add);
    let sum = |f: fn(&LayerResult) -> u64| sat_sum(&mut layers.iter().filter(|l| l.counted).map(f));
    let cycles = sum(|l| l.cycles);
    let ran_kernel = layers.iter().any(|l| l.kernel != KernelKind::Host);
    if !ran_kernel && let Some(name) = qdq_compute_node(g) {
        net.notes.push(format!(
            "the model is in QDQ form (`{name}` computes in float between DequantizeLinear and QuantizeLinear, not fused into an integer node); the VPU kernels run QOperator nodes (QLinearConv, QLinearMatMul, QGemm): load it without --qdq-float, which fuses onnxruntime's QDQ groups at import, or quantize it with onnxruntime's quant_format=QuantFormat.QOperator"
        ));
    }
    Ok(NetworkResult {
        model: g.name.clone(),
        vpus: arch.vpus,
        bandwidth: arch.memory.bandwidth,
        dataflow: choice,
        cold_layers: opts.cold_layers,
        method: opts.method,
        characterize: opts.characterize,
        cycles,
        compute_cycles: sum(|l| l.compute_cycles),
        dma_stall_cycles: sum(|l| l.dma_stall_cycles),
        host_cycles: sum(|l| l.host_cycles),
        offchip_bytes: sum(|l| l.offchip_bytes),
        host_bytes: sum(|l| l.host_bytes),
        ops: sum(|l| l.ops),
        kernel_cycles: sat_sum(
            &mut layers
                .iter()
                .filter(|l| l.kernel != KernelKind::Host)
                .map(|l| l.cycles),
        ),
        excluded_cycles: sat_sum(&mut layers.iter().filter(|l| !l.counted).map(|l| l.cycles)),
        energy_j: energy_j(arch, cycles),
        latency_ms: cycles as f64 / (arch.clock_mhz * 1e3),
        outputs: net.read_back_outputs(outputs)?,
        layers,
        notes: net.notes,
    })
}

/// A Conv, MatMul or Gemm fed by a DequantizeLinear (a QDQ-quantized model), if any.
fn qdq_compute_node(g: &Graph) -> Option<String> {
    g.nodes.iter().find_map(|n| {
        let compute = matches!(n.op, Op::Conv(_) | Op::MatMul | Op::Gemm { .. });
        let from_dq = n.inputs.iter().flatten().any(|&v| match g.value(v).def {
            pimkit_ir::ValueDef::Node { node, .. } => {
                matches!(g.node(node).op, Op::DequantizeLinear { .. })
            }
            // graph inputs and constants are not DequantizeLinear outputs
            _ => false,
        });
        (compute && from_dq).then(|| n.name.clone())
    })
}

fn to_layout(t: &Tensor, l: Layout) -> Vec<i32> {
    let v = t.to_i32_vec();
    if l == Layout::Hwc && t.rank() == 4 && t.shape[0] == 1 {
        crate::layout::chw_to_hwc(&v, t.shape[1], t.shape[2], t.shape[3])
    } else {
        v
    }
}

fn from_layout(v: Vec<i32>, shape: &[usize], l: Layout) -> Vec<i32> {
    if l == Layout::Hwc && shape.len() == 4 && shape[0] == 1 {
        crate::layout::hwc_to_chw(&v, shape[1], shape[2], shape[3])
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
    /// The graph outputs as the simulation left them in memory where a VPU kernel
    /// produced them (each was checked against the interpreter when it was written);
    /// host-computed outputs are the interpreter's (`host`, in graph output order).
    fn read_back_outputs(&self, host: Vec<Tensor>) -> Result<Vec<Tensor>> {
        let mut outs = Vec::with_capacity(host.len());
        for (&v, t) in self.g.outputs.iter().zip(host) {
            let ty = self.g.ty(v);
            let placed = [Layout::Chw, Layout::Hwc]
                .into_iter()
                .find_map(|l| self.placed.get(&(v, l)).map(|&a| (a, l)));
            match (placed, elem_of(ty.dtype)) {
                (Some((addr, l)), Some(elem)) => {
                    let vals = from_layout(self.m.get(addr, elem, ty.numel())?, &ty.shape, l);
                    let f: Vec<f64> = vals.into_iter().map(f64::from).collect();
                    outs.push(Tensor::from_f64_as(ty.dtype, ty.shape.clone(), &f));
                }
                _ => outs.push(t),
            }
        }
        Ok(outs)
    }

    /// Run one kernel call and return its dataflow: `prefer` (the node's earlier calls),
    /// the fixed one, the family's, or (`Auto`) the fastest of the three, each tried on
    /// its own copy of the machine (side by side when the pool has threads,
    /// `network/trials.rs`) and the winner's run kept. This is exactly the outcome of trying them one after the
    /// other from snapshots: the simulation is deterministic, a trial's time is the
    /// clock `finish` would reach, and the kept state is the winner's run (the family's
    /// after `finish`, as a kept family trial always was; another winner's as its run
    /// left it, as a re-run from the restored state would). Ties go to the family.
    /// A dataflow whose tiles do not fit (a kernel or VRF error) is skipped; any other
    /// error stops the run (the first one in trial order). If none fits, the family's
    /// runs and reports its error.
    ///
    /// Only the family's dataflow computes values (in its trial on one thread, beside
    /// its timing-only trial on more); the others run on timing-only copies
    /// (`Machine::timing_copy_into`: same cycles, counters and cache, no arithmetic).
    /// When one of them wins, the machine goes back to its state before the trials
    /// (a snapshot that keeps `out`, the kernel's output bytes: a kernel writes nothing
    /// else below the memory's end) and the winner runs again with values; its clocks
    /// and counters must equal its timing-only run's (else an internal error).
    ///
    /// With [`Characterize::Shape`], a `workload` characterized before runs the dataflow
    /// its trials chose (recorded in `dataflow_from`) and a new one's winner is recorded.
    fn run_kernel(
        &mut self,
        kind: KernelKind,
        prefer: Option<Dataflow>,
        workload: Workload,
        out: (u64, usize),
        run: &(dyn Fn(&mut Machine, Dataflow) -> Result<()> + Sync),
    ) -> Result<Dataflow> {
        let auto = prefer.is_none() && self.choice == DataflowChoice::Auto;
        let known = self.characterized.as_ref().and_then(|c| c.get(&workload));
        let prefer = match (auto, known) {
            (true, Some((df, layer))) => {
                self.dataflow_from = Some(layer.clone());
                Some(*df)
            }
            _ => prefer,
        };
        let df = self.choose_and_run(kind, prefer, out, run)?;
        if auto && let Some(c) = &mut self.characterized {
            c.insert(workload, df, &self.layer);
        }
        Ok(df)
    }

    /// [`Net::run_kernel`] without the reuse.
    fn choose_and_run(
        &mut self,
        kind: KernelKind,
        prefer: Option<Dataflow>,
        out: (u64, usize),
        run: &(dyn Fn(&mut Machine, Dataflow) -> Result<()> + Sync),
    ) -> Result<Dataflow> {
        let family = self.choice.pick(kind);
        let df = match prefer {
            Some(d) => d,
            None if self.choice != DataflowChoice::Auto => family,
            None => return self.run_trials(kind, family, out, run),
        };
        self.run_halves(df, run)?;
        Ok(df)
    }

    /// One kernel call with a known dataflow. With two or more threads its timing runs
    /// on a timing-only copy and its values on the machine itself (data-only), side by
    /// side, and the machine then takes the copy's timing: the state a single run leaves
    /// (`Machine::adopt_timing`), in about the time of the slower half.
    fn run_halves(
        &mut self,
        df: Dataflow,
        run: &(dyn Fn(&mut Machine, Dataflow) -> Result<()> + Sync),
    ) -> Result<()> {
        if rayon::current_num_threads() < 2 {
            return run(&mut self.m, df);
        }
        let mut timing = self.timing_copy();
        self.m.set_data_only(true);
        let m = &mut self.m;
        let (rt, rd) = rayon::join(|| run(&mut timing, df), || run(m, df));
        self.m.set_data_only(false);
        // The timing half meets every error a single run would, in the same order.
        rt?;
        rd?;
        self.m.adopt_timing(&timing)?;
        self.spares.push(timing);
        Ok(())
    }

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
        n.input(i)
            .ok_or_else(|| nerr(n, format!("missing input {i}")))
    }
    fn f32s(&self, n: &Node, i: usize) -> Result<Vec<f32>> {
        Ok(self.val(n, self.input(n, i)?)?.to_f32_vec())
    }
    fn zps(&self, n: &Node, i: usize) -> Result<Vec<i32>> {
        match n.input(i) {
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
        if produced_other && self.charge_layout {
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
            } if n.input(pimkit_ir::operand::qgemm::Y_SCALE).is_some() => {
                self.qmatmul(n, Some((*alpha, *trans_b)))
            }
            Op::QGemm { trans_a: true, .. } => {
                self.host_with_note(n, "QGemm with transA has no VPU kernel")
            }
            Op::QGemm { .. } => self.host_with_note(
                n,
                "QGemm without y_scale has a float output; the kernels requantize to 8 bits",
            ),
            Op::QLinearAveragePool(_) | Op::QLinearSoftmax { .. } | Op::QLinearWhere => self
                .host_with_note(
                    n,
                    "QUINN has no VPU kernel for it (the paper's kernels are convolutions and matrix products)",
                ),
            // every other op runs on the host: QUINN's kernels are convolutions and matrix products
            _ => self.host_node(n),
        }
    }
}
