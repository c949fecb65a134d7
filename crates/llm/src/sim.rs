//! Time and energy of prefill and decode steps on a system, per op class and place.
//!
//! Each class's work (operations, weight bytes, KV-cache bytes, activation bytes; from
//! [`crate::workload`]) runs where the placement policy puts it, at the roofline of that
//! place: time = max(operations / (peak · utilisation), bytes / (bandwidth ·
//! utilisation)). Classes run one after another, except where the system enables AttAcc's
//! head pipelining and FFN split (docs/llm.md). Tensor-parallel xPUs exchange each layer's
//! activations twice (an all-reduce after attention and after the FFN) over their links;
//! attention placed in PIM sends the queries to the PIM devices and the context back.
//! Energy = operations · pJ/op + bytes read · pJ/byte at that place + bytes over links ·
//! pJ/byte.

use crate::system::{Pim, System};
use crate::workload::{OpClass, Workload};
use pimkit_engine::offload_rule::Decision;
use serde::Serialize;

/// Where a class runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    Xpu,
    Pim,
    /// The links between devices (tensor-parallel all-reduce, xPU <-> PIM transfers).
    Link,
}

/// Which classes go to PIM.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Everything on the xPUs (the baseline).
    Xpu,
    /// Attention (score, softmax, context) in PIM, everything else on the xPUs (AttAcc).
    AttnPim,
    /// The FC layers in PIM (weights streamed inside the memory), attention on the xPUs:
    /// what HBM-PIM/AiM-style GEMV units do at small batches.
    FcPim,
    /// Attention and FC layers in PIM.
    AllPim,
    /// Each class at the place where it is faster (an oracle: both places are costed).
    Auto,
    /// Torch-PIM's two-stage rule (torch-pim.txt §4.4) applied to each op class of each
    /// step, as the offload engine applies it to each loop nest: [`torch_pim_rule`].
    TorchPim,
}

impl Policy {
    pub const ALL: [Policy; 6] = [
        Policy::Xpu,
        Policy::AttnPim,
        Policy::FcPim,
        Policy::AllPim,
        Policy::Auto,
        Policy::TorchPim,
    ];
    pub fn name(self) -> &'static str {
        match self {
            Policy::Xpu => "xpu",
            Policy::AttnPim => "attn-pim",
            Policy::FcPim => "fc-pim",
            Policy::AllPim => "all-pim",
            Policy::Auto => "auto",
            Policy::TorchPim => "torch-pim",
        }
    }
    pub fn parse(s: &str) -> Option<Policy> {
        Policy::ALL.iter().copied().find(|p| p.name() == s)
    }
    /// A front end's policy option (`flag` names it in the error): none is the default.
    pub fn from_option(flag: &str, s: Option<&str>) -> Result<Option<Policy>, String> {
        s.map(|p| {
            Policy::parse(p).ok_or_else(|| {
                format!("{flag} {p}: use xpu, attn-pim, fc-pim, all-pim, auto or torch-pim")
            })
        })
        .transpose()
    }
}

/// Precisions of weights, KV cache and activations, bits.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Precision {
    pub weight_bits: f64,
    pub kv_bits: f64,
    pub act_bits: f64,
    /// Group size of weight scales (MatMulNBits-style block quantization: one 16-bit scale
    /// per `group` weights); 0: no scales.
    pub weight_group: usize,
}

impl Precision {
    pub fn weight_bytes(&self, elems: f64) -> f64 {
        let scales = if self.weight_group > 0 {
            elems / self.weight_group as f64 * 2.0
        } else {
            0.0
        };
        elems * self.weight_bits / 8.0 + scales
    }
}

/// One class in one step.
#[derive(Clone, Debug, Serialize)]
pub struct ClassCost {
    /// The op class's name, or "allreduce" / "to_pim" for transfers over links.
    pub class: &'static str,
    pub place: Place,
    pub ops: f64,
    /// Bytes read or written at the place (weights, KV cache, activations).
    pub bytes: f64,
    pub time_s: f64,
    pub energy_j: f64,
    /// "compute" or "memory": which roofline side bound it.
    pub bound: &'static str,
}

/// One step (prefill of `tokens` tokens, or one decode step) for `batch` sequences.
#[derive(Clone, Debug, Serialize)]
pub struct StepCost {
    pub batch: usize,
    pub tokens: usize,
    /// Attended positions (cached + new).
    pub positions: usize,
    pub time_s: f64,
    pub energy_j: f64,
    pub classes: Vec<ClassCost>,
    /// Torch-PIM's rule per class (policy `torch-pim` only).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rule: Vec<RuleCall>,
}

impl StepCost {
    pub fn time_at(&self, place: Place) -> f64 {
        self.classes
            .iter()
            .filter(|c| c.place == place)
            .map(|c| c.time_s)
            .sum::<f64>()
            + 0.0 // an empty sum is -0.0, printed "-0.000"
    }
}

struct Roof {
    ops_per_s: f64,
    bytes_per_s: f64,
    pj_op: f64,
    pj_byte: f64,
}

fn xpu_roof(s: &System, n: f64) -> Roof {
    let x = &s.xpu;
    Roof {
        ops_per_s: n * x.tflops * 1e12 * x.compute_util,
        bytes_per_s: n * x.memory_gbs * 1e9 * x.memory_util,
        pj_op: x.pj_per_op,
        pj_byte: x.pj_per_byte_memory + x.pj_per_byte_cache,
    }
}

fn pim_roof(p: &Pim, n: f64, util: f64) -> Roof {
    Roof {
        ops_per_s: n * p.tflops * 1e12 * util,
        bytes_per_s: n * p.internal_gbs * 1e9 * util,
        pj_op: p.pj_per_op,
        pj_byte: p.pj_per_byte_memory,
    }
}

fn on(r: &Roof, class: &'static str, place: Place, ops: f64, bytes: f64) -> ClassCost {
    let tc = ops / r.ops_per_s;
    let tm = bytes / r.bytes_per_s;
    ClassCost {
        class,
        place,
        ops,
        bytes,
        time_s: tc.max(tm),
        energy_j: (ops * r.pj_op + bytes * r.pj_byte) * 1e-12,
        bound: if tc >= tm { "compute" } else { "memory" },
    }
}

/// Bytes class `c` reads and writes for `b` sequences, `t` new tokens, `l` positions.
pub fn class_bytes(w: &Workload, c: OpClass, p: &Precision, b: f64, t: f64, l: f64) -> f64 {
    let k = w.class(c);
    let act = k.act_elems_per_token * b * t * p.act_bits / 8.0;
    let kv_half = w.kv_elems_per_position / 2.0 * p.kv_bits / 8.0;
    match c {
        OpClass::AttnScore | OpClass::AttnContext => b * l * kv_half + act,
        OpClass::KvAppend => b * t * 2.0 * kv_half,
        OpClass::Vector => {
            (k.ops_per_token * b * t + k.ops_per_position * b * t * l) * 2.0 * p.act_bits / 8.0
        }
        OpClass::Softmax => 0.0,
        _ => p.weight_bytes(k.weight_elems) + act,
    }
}

/// Which place runs `c` under `policy` (`None`: `Auto` picks the faster).
fn place_of(policy: Policy, c: OpClass, has_pim: bool) -> Option<Place> {
    if !has_pim {
        return Some(Place::Xpu);
    }
    let attn = c.is_attention() || c == OpClass::KvAppend;
    Some(match policy {
        Policy::Xpu => Place::Xpu,
        Policy::AttnPim if attn => Place::Pim,
        Policy::FcPim if c.is_fc() => Place::Pim,
        Policy::AllPim if attn || c.is_fc() => Place::Pim,
        Policy::Auto | Policy::TorchPim => return None,
        _ => Place::Xpu,
    })
}

/// The PIM roofs: FC layers and the rest, attention (its own efficiency where the system
/// gives one: `pim.attn_util`).
struct PimRoofs {
    fc: Roof,
    attn: Roof,
}

/// A class on PIM: FC layers stream their weights once per token of each sequence (the
/// units hold one input vector, not a batch: AttAcc's GEMV units, HBM-PIM, AiM; `bt` =
/// sequences x new tokens), attention reads each sequence's own cache anyway.
#[allow(clippy::too_many_arguments)]
fn on_pim(
    r: &PimRoofs,
    w: &Workload,
    p: &Precision,
    c: OpClass,
    ops: f64,
    bytes: f64,
    bt: f64,
) -> ClassCost {
    let bytes = if c.is_fc() {
        bytes + (bt - 1.0).max(0.0) * p.weight_bytes(w.class(c).weight_elems)
    } else {
        bytes
    };
    let roof = if c.is_attention() { &r.attn } else { &r.fc };
    on(roof, c.name(), Place::Pim, ops, bytes)
}

/// How many devices of each kind one step runs on: all of them, or a pipeline stage's
/// share (fractional when several stages share a device).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Devices {
    pub xpu: f64,
    pub pim: f64,
}

impl Devices {
    pub fn all(s: &System) -> Devices {
        Devices {
            xpu: s.xpu.devices as f64,
            pim: s.pim.as_ref().map_or(0.0, |p| p.devices as f64),
        }
    }
    /// One of `stages` pipeline stages: `floor(n / stages)` devices when there are at
    /// least as many devices as stages, else `1 / ceil(stages / n)` of one (CENT's
    /// assignment: a device holding k stages gives each 1/k of its channels).
    pub fn stage(s: &System, stages: usize) -> Devices {
        let share = |n: f64| {
            let p = stages as f64;
            if n >= p {
                (n / p).floor()
            } else {
                1.0 / (p / n).ceil()
            }
        };
        let a = Devices::all(s);
        Devices {
            xpu: share(a.xpu),
            pim: if a.pim > 0.0 { share(a.pim) } else { 0.0 },
        }
    }
}

/// Cost of one step: `batch` sequences, `tokens` new tokens each, `positions` attended
/// positions (cached + new).
pub fn step(
    w: &Workload,
    s: &System,
    policy: Policy,
    p: &Precision,
    batch: usize,
    tokens: usize,
    positions: usize,
) -> StepCost {
    step_on(w, s, Devices::all(s), policy, p, batch, tokens, positions)
}

/// [`step`] of the whole model on `dev` devices (a pipeline stage's share: the time is
/// then the latency of the batch through every stage).
#[allow(clippy::too_many_arguments)]
pub fn step_on(
    w: &Workload,
    s: &System,
    dev: Devices,
    policy: Policy,
    p: &Precision,
    batch: usize,
    tokens: usize,
    positions: usize,
) -> StepCost {
    let (b, t, l) = (batch as f64, tokens as f64, positions as f64);
    let xr = xpu_roof(s, dev.xpu);
    let pr = s.pim.as_ref().map(|pim| PimRoofs {
        fc: pim_roof(pim, dev.pim, pim.util),
        attn: pim_roof(pim, dev.pim, pim.attn_util.unwrap_or(pim.util)),
    });
    let mut classes: Vec<(OpClass, ClassCost)> = Vec::new();
    let mut rule = Vec::new();
    for c in OpClass::ALL {
        let ops = w.ops(c, b, t, l);
        let bytes = class_bytes(w, c, p, b, t, l);
        if ops == 0.0 && bytes == 0.0 {
            continue;
        }
        let on_x = on(&xr, c.name(), Place::Xpu, ops, bytes);
        let cost = match (place_of(policy, c, pr.is_some()), &pr) {
            (Some(Place::Pim), Some(r)) => on_pim(r, w, p, c, ops, bytes, b * t),
            (None, Some(r)) => {
                let on_p = on_pim(r, w, p, c, ops, bytes, b * t);
                let offload = if policy == Policy::TorchPim {
                    let call = torch_pim_rule(w, s, dev, p, c, &on_x, b * t);
                    let offload = call.decision.offload;
                    rule.push(call);
                    offload
                } else {
                    on_p.time_s < on_x.time_s
                };
                if offload { on_p } else { on_x }
            }
            _ => on_x,
        };
        classes.push((c, cost));
    }
    let xpu = &s.xpu;
    let n = dev.xpu;
    let layers = w.layers as f64;
    // Element-wise kernels' fixed time per layer.
    if let Some((_, v)) = classes
        .iter_mut()
        .find(|(c, k)| *c == OpClass::Vector && k.place == Place::Xpu)
    {
        v.time_s += layers * xpu.vector_us_per_layer * 1e-6;
    }
    let time_of = |cl: &[(OpClass, ClassCost)], f: &dyn Fn(OpClass) -> bool| -> f64 {
        cl.iter()
            .filter(|(c, k)| f(*c) && k.place == Place::Pim)
            .map(|(_, k)| k.time_s)
            .sum()
    };
    let t_attn = time_of(&classes, &|c| c.is_attention());
    let pim_attention = t_attn > 0.0;
    let mut links = Vec::new();
    let act = p.act_bits / 8.0;
    // Tensor-parallel all-reduce after attention and after the FFN, ring over n devices.
    if n > 1.0 {
        let size = b * t * w.hidden as f64 * act;
        let one =
            (n - 1.0) * (xpu.allreduce_latency_us * 1e-6 + size / n / (xpu.allreduce_gbs * 1e9));
        links.push(ClassCost {
            class: "allreduce",
            place: Place::Link,
            ops: 0.0,
            bytes: 2.0 * layers * size * n,
            time_s: 2.0 * layers * one,
            energy_j: 2.0 * layers * size * n * xpu.pj_per_byte_link * 1e-12,
            bound: "memory",
        });
    }
    if let (true, Some(pim)) = (pim_attention, &s.pim) {
        // Queries, new keys and values to the PIM devices; the context back.
        let kv_dim = w.kv_elems_per_position / (2.0 * layers);
        let per_layer = b * t * (2.0 * w.q_dim as f64 + 2.0 * kv_dim) * act;
        let bytes = layers * per_layer;
        let mut time = bytes / (dev.pim.min(dev.xpu) * pim.link_gbs * 1e9);
        if pim.head_pipelining {
            // AttAcc's _pipeline: transfers overlap the attention of the previous heads.
            let r = head_fraction(w, dev.xpu);
            time = if t_attn > time {
                time * r
            } else {
                time - t_attn * (1.0 - r)
            };
        }
        links.push(ClassCost {
            class: "to_pim",
            place: Place::Link,
            ops: 0.0,
            bytes,
            time_s: time,
            energy_j: bytes * pim.pj_per_byte_link * 1e-12,
            bound: "memory",
        });
        if pim.head_pipelining {
            // The QKV and output projections of one head group overlap the attention of
            // the previous one (AttAcc's _pipeline, r = 1 / heads per xPU).
            let r = head_fraction(w, dev.xpu);
            let tq = classes
                .iter()
                .find(|(c, _)| *c == OpClass::Qkv)
                .map_or(0.0, |(_, k)| k.time_s);
            let to = classes
                .iter()
                .find(|(c, _)| *c == OpClass::OutProj)
                .map_or(0.0, |(_, k)| k.time_s);
            let (nq, no) = if t_attn > tq + to {
                (tq * r, to * r)
            } else {
                (
                    tq - t_attn * (1.0 - r) * 0.75,
                    to - t_attn * (1.0 - r) * 0.25,
                )
            };
            for (c, k) in classes.iter_mut() {
                if *c == OpClass::Qkv && k.place == Place::Xpu {
                    k.time_s = nq.max(0.0);
                }
                if *c == OpClass::OutProj && k.place == Place::Xpu {
                    k.time_s = no.max(0.0);
                }
            }
        }
    }
    if let (Some(pim), Some(r)) = (&s.pim, &pr)
        && pim.ffn_split
        && pim_attention
    {
        // AttAcc's _ff_parallel: the PIM units take a share of the FFN so both sides
        // finish together (PIM streams the weights once per sequence).
        for (c, k) in classes.iter_mut() {
            if *c == OpClass::Ffn && k.place == Place::Xpu {
                let on_p = on_pim(r, w, p, *c, k.ops, k.bytes, b * t);
                k.time_s = 1.0 / (1.0 / k.time_s + 1.0 / on_p.time_s);
            }
        }
    }
    let mut all: Vec<ClassCost> = classes.into_iter().map(|(_, k)| k).collect();
    all.extend(links);
    StepCost {
        batch,
        tokens,
        positions,
        time_s: all.iter().map(|c| c.time_s).sum(),
        energy_j: all.iter().map(|c| c.energy_j).sum(),
        classes: all,
        rule,
    }
}

/// Torch-PIM's rule on one op class of a step ([`pimkit_engine::offload_rule::decide`]):
/// the class is the region; T_cpu its time on the xPUs; N_total its operations (I_min = 1
/// operation per iteration) on PIM units of one 32-byte column access per ns each
/// (devices x internal_gbs / 32 units, the PIM's peak together); N_iter its independent
/// outputs (operations / 2 / hidden: one dot product of the hidden size each); T_ctx
/// moving its activations to PIM and back over the links (plus their latency); θ = 0.12 x
/// the xPUs' memory bandwidth (the paper's 2.0 of 16.754 GB/s); C4 (store-bound above σ)
/// holds for the KV append alone, whose bytes are all stores.
fn torch_pim_rule(
    w: &Workload,
    s: &System,
    dev: Devices,
    p: &Precision,
    c: OpClass,
    on_x: &ClassCost,
    bt: f64,
) -> RuleCall {
    use pimkit_engine::offload_rule::{RegionFacts, RuleParams, SIGMA, THETA_RATIO, decide};
    let pim = s.pim.as_ref().expect("the rule runs on systems with PIM");
    let units = (dev.pim * pim.internal_gbs / 32.0).max(1.0);
    let peak_ops_per_ns = dev.pim * pim.tflops * 1e3;
    let act = w.class(c).act_elems_per_token * bt * p.act_bits / 8.0;
    let links = dev.pim.min(dev.xpu).max(1.0) * pim.link_gbs;
    let facts = RegionFacts {
        t_cpu_ns: on_x.time_s * 1e9,
        n_total: on_x.ops.round() as u64,
        n_iter: (on_x.ops / 2.0 / w.hidden.max(1) as f64).round() as u64,
        read_bytes: on_x.bytes,
        store_bound: if c == OpClass::KvAppend { 1.0 } else { 0.0 },
    };
    let k = RuleParams {
        t_ctx_ns: pim.link_latency_us * 1e3 + 2.0 * act / links,
        i_min: 1.0,
        f_pim_ghz: peak_ops_per_ns / units,
        theta_gbs: THETA_RATIO * dev.xpu * s.xpu.memory_gbs,
        sigma: SIGMA,
    };
    let units = units.min(u32::MAX as f64) as u32;
    RuleCall {
        class: c.name(),
        decision: decide(&facts, units, &k),
        facts,
        units,
        params: k,
    }
}

/// The rule's decision for one class (`--policy torch-pim`), with what it was given.
#[derive(Clone, Debug, Serialize)]
pub struct RuleCall {
    pub class: &'static str,
    pub decision: Decision,
    pub facts: pimkit_engine::offload_rule::RegionFacts,
    /// PIM units (the rule's N_core).
    pub units: u32,
    pub params: pimkit_engine::offload_rule::RuleParams,
}

/// 1 / (query heads per xPU): the share of a layer's attention one head group is.
fn head_fraction(w: &Workload, devices: f64) -> f64 {
    let heads = (w.q_dim / w.head_dim.max(1)).max(1) as f64;
    (devices.max(1.0) / heads).min(1.0)
}

/// One step of `batch` sequences on a pipeline of `stages` stages (layers split evenly;
/// each stage on [`Devices::stage`], tensor-parallel inside it). The batch is cut into
/// micro-batches of `ceil(batch / stages)` that follow each other through the stages,
/// so the step lasts one micro-batch's latency through all of them (CENT's model:
/// throughput = in-flight sequences / token latency), plus one hop per stage over the
/// PIM devices' links (`pim.link_latency_us` + bytes / `pim.link_gbs`); its energy is
/// every micro-batch's. `stages = 1` is [`step`].
#[allow(clippy::too_many_arguments)]
pub fn pipelined(
    w: &Workload,
    s: &System,
    stages: usize,
    policy: Policy,
    p: &Precision,
    batch: usize,
    tokens: usize,
    positions: usize,
) -> StepCost {
    if stages <= 1 {
        return step(w, s, policy, p, batch, tokens, positions);
    }
    let mb = batch.div_ceil(stages);
    let n_mb = batch.div_ceil(mb) as f64;
    let mut st = step_on(
        w,
        s,
        Devices::stage(s, stages),
        policy,
        p,
        mb,
        tokens,
        positions,
    );
    for c in &mut st.classes {
        c.ops *= n_mb;
        c.bytes *= n_mb;
        c.energy_j *= n_mb;
    }
    let bytes = (mb * tokens * w.hidden) as f64 * p.act_bits / 8.0;
    let (gbs, lat_us, pj) = match &s.pim {
        Some(pim) => (pim.link_gbs, pim.link_latency_us, pim.pj_per_byte_link),
        None => (
            s.xpu.link_gbs,
            s.xpu.allreduce_latency_us,
            s.xpu.pj_per_byte_link,
        ),
    };
    let hops = stages as f64;
    st.classes.push(ClassCost {
        class: "stage_hop",
        place: Place::Link,
        ops: 0.0,
        bytes: hops * bytes * n_mb,
        time_s: hops * (lat_us * 1e-6 + bytes / (gbs * 1e9)),
        energy_j: hops * bytes * n_mb * pj * 1e-12,
        bound: "memory",
    });
    st.batch = batch;
    st.time_s = st.classes.iter().map(|c| c.time_s).sum();
    st.energy_j = st.classes.iter().map(|c| c.energy_j).sum();
    st
}
