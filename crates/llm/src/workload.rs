//! The work of one generation step, read from a decoder graph with its KV cache.
//!
//! The graph is one step at one binding (batch B, T new tokens, L = ctx + T attended
//! positions). Each node's work is counted from its static shapes and classified (QKV
//! projection, attention score, softmax, attention context, output projection, FFN, LM
//! head, vector ops, KV append); dividing by the binding's B·T (token-linear work) or
//! B·T·L (attention work) gives per-token and per-position coefficients, so any other
//! (B, T, L) is evaluated without rebuilding the graph. The KV cache is found
//! structurally: a Concat of a graph input with the step's new keys or values.

use pimkit_ir::{Graph, NodeId, Op, ValueDef, ValueId};
use serde::Serialize;
use std::collections::HashMap;
use thiserror::Error;

/// What a node does in a decoder step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OpClass {
    /// Query, key and value projections (FC layers feeding attention).
    Qkv,
    /// Q·Kᵀ over the cached and new keys.
    AttnScore,
    Softmax,
    /// Probabilities·V over the cached and new values.
    AttnContext,
    /// The attention output projection.
    OutProj,
    /// The feed-forward layers.
    Ffn,
    /// The vocabulary projection.
    LmHead,
    /// Norms, activations, rotary embeddings, residual adds, masking.
    Vector,
    /// Appending the new keys and values to the cache.
    KvAppend,
}

impl OpClass {
    pub const ALL: [OpClass; 9] = [
        OpClass::Qkv,
        OpClass::AttnScore,
        OpClass::Softmax,
        OpClass::AttnContext,
        OpClass::OutProj,
        OpClass::Ffn,
        OpClass::LmHead,
        OpClass::Vector,
        OpClass::KvAppend,
    ];
    pub fn name(self) -> &'static str {
        match self {
            OpClass::Qkv => "qkv",
            OpClass::AttnScore => "attn_score",
            OpClass::Softmax => "softmax",
            OpClass::AttnContext => "attn_context",
            OpClass::OutProj => "out_proj",
            OpClass::Ffn => "ffn",
            OpClass::LmHead => "lm_head",
            OpClass::Vector => "vector",
            OpClass::KvAppend => "kv_append",
        }
    }
    /// Work over the KV cache (its time grows with the context).
    pub fn is_attention(self) -> bool {
        matches!(
            self,
            OpClass::AttnScore | OpClass::Softmax | OpClass::AttnContext
        )
    }
    /// Matrix-vector / matrix-matrix work on weights.
    pub fn is_fc(self) -> bool {
        matches!(
            self,
            OpClass::Qkv | OpClass::OutProj | OpClass::Ffn | OpClass::LmHead
        )
    }
}

/// One class's coefficients: work = per_token·B·T + per_position·B·T·L.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct ClassWork {
    /// Operations (a multiply-accumulate is 2) per new token.
    pub ops_per_token: f64,
    /// Operations per (new token × attended position).
    pub ops_per_position: f64,
    /// Weight elements read once per step (shared by the batch).
    pub weight_elems: f64,
    /// Activation elements read and written per new token (FC inputs and outputs).
    pub act_elems_per_token: f64,
    /// Nodes of this class in the graph.
    pub nodes: usize,
}

/// The per-step work of a decoder, independent of batch, tokens and context.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Workload {
    pub model: String,
    /// KV cache tensors found (a key and a value per layer).
    pub caches: usize,
    /// Decoder layers (caches / 2).
    pub layers: usize,
    /// Key/value heads and head size of the cache ([batch, kv_heads, positions, head_dim]).
    pub kv_heads: usize,
    pub head_dim: usize,
    /// Cache elements per position of one sequence, all layers, keys and values.
    pub kv_elems_per_position: f64,
    /// FC weight elements (the parameters streamed per step).
    pub weight_elems: f64,
    /// Every constant's elements (embeddings and norms too): what stays resident in memory.
    pub resident_elems: f64,
    /// The model width (the LM head's input size).
    pub hidden: usize,
    /// Query heads × head size (the attention context's width per token).
    pub q_dim: usize,
    /// Positions the model was made for, where the front end knows them (a zoo preset's, a
    /// config.json's `max_position_embeddings`, also the one beside an exported .onnx);
    /// `None`: unknown (a graph bound to one step's shapes has its position table folded).
    pub max_context: Option<usize>,
    /// How the model itself stores its FC weights, where the front end knows (an export's
    /// MatMulNBits layers, dequantized at import); `None`: as the graph holds them.
    pub weight_quant: Option<WeightQuant>,
    /// Per class, in `OpClass::ALL` order (absent classes have zero work).
    pub classes: Vec<(OpClass, ClassWork)>,
    /// The binding the graph was read at.
    pub binding: Binding,
}

/// Weight-only quantization of a model's FC layers (MatMulNBits).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct WeightQuant {
    pub bits: f64,
    /// Weights per scale (the block size).
    pub group: usize,
    /// Layers stored this way.
    pub layers: usize,
}

/// The graph's own batch, new tokens and cached positions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Binding {
    pub batch: usize,
    pub tokens: usize,
    pub ctx: usize,
}

impl Workload {
    pub fn class(&self, c: OpClass) -> &ClassWork {
        &self
            .classes
            .iter()
            .find(|(k, _)| *k == c)
            .expect("every class is present")
            .1
    }
}

#[derive(Debug, Error, PartialEq)]
pub enum WorkloadError {
    #[error(
        "{model}: no KV cache found (no Concat of an input with new keys/values); export it with past key/values (use_cache=True) or use e.g. zoo:llama2_7b"
    )]
    NoCache { model: String },
    #[error(
        "{model}: KV cache '{name}' has shape {shape:?}; expected [batch, kv_heads, positions, head_dim] or [kv_heads, positions, head_dim] concatenated on the positions axis"
    )]
    CacheShape {
        model: String,
        name: String,
        shape: Vec<usize>,
    },
    #[error(
        "{model}: KV caches disagree: '{a}' has {what} {x}, '{b}' has {y}; pimkit llm needs one batch, context and cache layout for every layer"
    )]
    Inconsistent {
        model: String,
        a: String,
        b: String,
        what: &'static str,
        x: usize,
        y: usize,
    },
    #[error("{model}: no projection with constant weights found; is this a decoder?")]
    NoWeights { model: String },
}

/// A cache found in the graph: its Concat node and the input it extends.
struct Cache {
    concat: NodeId,
    input: ValueId,
}

fn is_movement(op: &Op) -> bool {
    matches!(
        op,
        Op::Reshape { .. }
            | Op::Transpose { .. }
            | Op::Slice { .. }
            | Op::Concat { .. }
            | Op::Expand { .. }
            | Op::Split { .. }
            | Op::Gather { .. }
            | Op::Tile { .. }
    ) || matches!(
        op.name(),
        "Identity" | "Cast" | "Squeeze" | "Unsqueeze" | "Flatten"
    )
}

/// Values computed from constants only (weights behind Transpose/DequantizeLinear).
fn weight_like(g: &Graph) -> Vec<bool> {
    let mut w: Vec<bool> = g
        .values
        .iter()
        .map(|v| matches!(v.def, ValueDef::Const(_)))
        .collect();
    for n in &g.nodes {
        if !n.inputs.is_empty() && n.inputs.iter().flatten().all(|v| w[v.idx()]) {
            for o in &n.outputs {
                w[o.idx()] = true;
            }
        }
    }
    w
}

fn producer(g: &Graph, v: ValueId) -> Option<NodeId> {
    match g.value(v).def {
        ValueDef::Node { node, .. } => Some(node),
        _ => None,
    }
}

/// The graph input `v` is, through single-operand data movement (an exporter's
/// one-input Concat, Identity, Cast, Reshape).
fn input_behind(
    g: &Graph,
    v: ValueId,
    inputs: &std::collections::HashSet<ValueId>,
) -> Option<ValueId> {
    let mut v = v;
    for _ in 0..8 {
        if inputs.contains(&v) {
            return Some(v);
        }
        let n = g.node(producer(g, v)?);
        let ins: Vec<ValueId> = n.inputs.iter().flatten().copied().collect();
        if !is_movement(&n.op) || ins.len() != 1 {
            return None;
        }
        v = ins[0];
    }
    None
}

fn caches(g: &Graph) -> Vec<Cache> {
    let inputs: std::collections::HashSet<ValueId> = g.inputs.iter().copied().collect();
    let mut out = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let Op::Concat { .. } = n.op else { continue };
        let ins: Vec<ValueId> = n.inputs.iter().flatten().copied().collect();
        if ins.len() != 2 || g.ty(ins[0]).shape.len() < 3 {
            continue;
        }
        let behind: Vec<Option<ValueId>> =
            ins.iter().map(|v| input_behind(g, *v, &inputs)).collect();
        if let [Some(input), None] | [None, Some(input)] = behind[..] {
            out.push(Cache {
                concat: NodeId(i as u32),
                input,
            });
        }
    }
    out
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Fc { m: f64, k: f64, n: f64, bias: f64 },
    Attn { ops: f64, out: f64 },
    Softmax { elems: f64 },
    Append,
    Vector { elems: f64 },
    Move,
}

fn kind(g: &Graph, node: NodeId, wl: &[bool], cache_concats: &[NodeId]) -> Kind {
    let n = g.node(node);
    let out_numel = |i: usize| g.ty(n.outputs[i]).numel() as f64;
    if cache_concats.contains(&node) {
        return Kind::Append;
    }
    match &n.op {
        Op::MatMul | Op::Gemm { .. } => {
            let (a, b) = (n.input(0), n.input(1));
            let (Some(a), Some(b)) = (a, b) else {
                return Kind::Vector { elems: 0.0 };
            };
            let out = out_numel(0);
            let (wa, wb) = (wl[a.idx()], wl[b.idx()]);
            if wa != wb {
                let (x, w) = if wb { (a, b) } else { (b, a) };
                let ws = &g.ty(w).shape;
                let k_dim = match (&n.op, wb) {
                    (Op::Gemm { trans_b: true, .. }, true) => ws.get(1),
                    (Op::Gemm { trans_a, .. }, false) => {
                        if *trans_a {
                            ws.first()
                        } else {
                            ws.get(1)
                        }
                    }
                    (_, true) => ws.first(),
                    (_, false) => ws.last(),
                };
                let k = *k_dim.unwrap_or(&1) as f64;
                let wn = g.ty(w).numel() as f64;
                let nn = (wn / k.max(1.0)).max(1.0);
                let m = g.ty(x).numel() as f64 / k.max(1.0);
                let bias = n.input(2).map(|c| g.ty(c).numel() as f64).unwrap_or(0.0);
                return Kind::Fc { m, k, n: nn, bias };
            }
            // Both operands computed at run time: attention over the cache.
            let k = *g.ty(a).shape.last().unwrap_or(&1) as f64;
            Kind::Attn {
                ops: 2.0 * out * k,
                out,
            }
        }
        Op::Softmax { .. } => Kind::Softmax {
            elems: out_numel(0),
        },
        op if is_movement(op) => Kind::Move,
        _ => Kind::Vector {
            elems: n.outputs.iter().map(|o| g.ty(*o).numel() as f64).sum(),
        },
    }
}

/// Is a Softmax reached walking back from `v` through non-matmul nodes (≤ `depth`)?
fn after_softmax(g: &Graph, v: ValueId, depth: usize) -> bool {
    let Some(p) = producer(g, v) else {
        return false;
    };
    let n = g.node(p);
    match n.op {
        Op::Softmax { .. } => true,
        Op::MatMul | Op::Gemm { .. } => false,
        _ if depth == 0 => false,
        _ => n
            .inputs
            .iter()
            .flatten()
            .any(|i| after_softmax(g, *i, depth - 1)),
    }
}

/// Does `g` carry a KV cache (is it a decoder step [`extract`] can read)?
pub fn has_cache(g: &Graph) -> bool {
    !caches(g).is_empty()
}

/// The operations of every node of `g` as [`extract`] counts them (no cache needed: a
/// prefill graph whose empty-cache Concats were folded away still counts).
pub fn graph_ops(g: &Graph) -> f64 {
    let wl = weight_like(g);
    (0..g.nodes.len())
        .map(|i| match kind(g, NodeId(i as u32), &wl, &[]) {
            Kind::Fc { m, k, n, .. } => 2.0 * m * k * n,
            Kind::Attn { ops, .. } => ops,
            Kind::Softmax { elems } | Kind::Vector { elems } => elems,
            Kind::Append | Kind::Move => 0.0,
        })
        .sum()
}

/// Read the per-step work of decoder `g`.
pub fn extract(g: &Graph) -> Result<Workload, WorkloadError> {
    let model = g.name.clone();
    let found = caches(g);
    if found.is_empty() {
        return Err(WorkloadError::NoCache { model });
    }
    // Batch, positions and layout from the first cache; every other must agree.
    let mut layout: Option<(String, usize, usize, usize, usize, usize)> = None;
    let mut kv_elems = 0.0;
    for c in &found {
        let n = g.node(c.concat);
        let Op::Concat { axis } = n.op else {
            unreachable!("caches are Concat nodes")
        };
        let name = g.value(c.input).name.clone();
        let out = &g.ty(n.outputs[0]).shape;
        let past = &g.ty(c.input).shape;
        let (batch, heads, hd) = match (out.len(), axis) {
            (4, 2) => (out[0], out[1], out[3]),
            (3, 1) => (1, out[0], out[2]),
            _ => {
                return Err(WorkloadError::CacheShape {
                    model,
                    name,
                    shape: out.clone(),
                });
            }
        };
        let len = out[axis];
        let ctx = past[axis];
        if len == 0 || batch == 0 {
            return Err(WorkloadError::CacheShape {
                model,
                name,
                shape: out.clone(),
            });
        }
        kv_elems += (heads * hd) as f64;
        match &layout {
            None => layout = Some((name, batch, len, ctx, heads, hd)),
            Some((first, b0, l0, c0, _, _)) => {
                for (what, x, y) in [
                    ("batch", *b0, batch),
                    ("positions", *l0, len),
                    ("cached positions", *c0, ctx),
                ] {
                    if x != y {
                        return Err(WorkloadError::Inconsistent {
                            model,
                            a: first.clone(),
                            b: name,
                            what,
                            x,
                            y,
                        });
                    }
                }
            }
        }
    }
    let (_, batch, len, ctx, kv_heads, head_dim) = layout.expect("at least one cache");
    let tokens = len - ctx;
    let bt = (batch * tokens) as f64;
    let btl = bt * len as f64;

    let wl = weight_like(g);
    let concats: Vec<NodeId> = found.iter().map(|c| c.concat).collect();
    let kinds: Vec<Kind> = (0..g.nodes.len())
        .map(|i| kind(g, NodeId(i as u32), &wl, &concats))
        .collect();
    let classes = classify(g, &kinds);
    let cache_inputs: Vec<ValueId> = found.iter().map(|c| c.input).collect();
    let per_position = position_nodes(g, &kinds, len, &cache_inputs);

    let mut work: HashMap<OpClass, ClassWork> = HashMap::new();
    let mut weights = 0.0;
    let mut hidden = 0.0f64;
    let mut q_elems = 0.0;
    for (i, k) in kinds.iter().enumerate() {
        let Some(class) = classes[i] else { continue };
        let w = work.entry(class).or_default();
        w.nodes += 1;
        match *k {
            Kind::Fc { m, k, n, bias } => {
                w.ops_per_token += 2.0 * m * k * n / bt;
                w.weight_elems += k * n + bias;
                w.act_elems_per_token += m * (k + n) / bt;
                weights += k * n + bias;
                if class == OpClass::LmHead {
                    hidden = hidden.max(k);
                }
            }
            Kind::Attn { ops, out } => {
                w.ops_per_position += ops / btl;
                if class == OpClass::AttnContext {
                    q_elems += out / bt;
                }
            }
            Kind::Softmax { elems } => w.ops_per_position += elems / btl,
            // Element-wise work on scores and masks ([.., T, L]) grows with the context.
            Kind::Vector { elems } if per_position[i] => w.ops_per_position += elems / btl,
            Kind::Vector { elems } => w.ops_per_token += elems / bt,
            Kind::Append | Kind::Move => {}
        }
    }
    if weights == 0.0 {
        return Err(WorkloadError::NoWeights { model });
    }
    Ok(Workload {
        model,
        caches: found.len(),
        layers: found.len().div_ceil(2),
        kv_heads,
        head_dim,
        kv_elems_per_position: kv_elems,
        weight_elems: weights,
        resident_elems: g
            .values
            .iter()
            .filter(|v| matches!(v.def, ValueDef::Const(_)))
            .map(|v| v.ty.numel() as f64)
            .sum(),
        hidden: hidden as usize,
        max_context: None,
        weight_quant: None,
        q_dim: (q_elems / (found.len().div_ceil(2)) as f64).round() as usize,
        classes: OpClass::ALL
            .iter()
            .map(|c| (*c, work.remove(c).unwrap_or_default()))
            .collect(),
        binding: Binding { batch, tokens, ctx },
    })
}

fn last_dim(g: &Graph, node: usize) -> Option<usize> {
    let o = *g.nodes[node].outputs.first()?;
    g.ty(o).shape.last().copied()
}

/// Element-wise nodes on attention scores or masks: their last axis is the `len`
/// attended positions and they read scores, probabilities or the attention mask (an
/// input whose last axis is the positions), directly or through data movement. A shape
/// test alone would take a rotary half of the same size for one.
fn position_nodes(g: &Graph, kinds: &[Kind], len: usize, caches: &[ValueId]) -> Vec<bool> {
    let mut pos_value = vec![false; g.values.len()];
    for &i in &g.inputs {
        if !caches.contains(&i) && g.ty(i).shape.last() == Some(&len) {
            pos_value[i.idx()] = true;
        }
    }
    let mut node = vec![false; g.nodes.len()];
    for (i, n) in g.nodes.iter().enumerate() {
        let reads = n.inputs.iter().flatten().any(|v| pos_value[v.idx()]);
        let flag = match kinds[i] {
            Kind::Attn { .. } | Kind::Softmax { .. } => true,
            Kind::Move => reads,
            Kind::Vector { .. } => {
                let p = reads && last_dim(g, i) == Some(len);
                node[i] = p;
                p
            }
            Kind::Fc { .. } | Kind::Append => false,
        };
        for o in &n.outputs {
            pos_value[o.idx()] = flag;
        }
    }
    node
}

/// Each node's class (`None`: data movement, no work).
fn classify(g: &Graph, kinds: &[Kind]) -> Vec<Option<OpClass>> {
    let consumers = g.consumers();
    let outputs: std::collections::HashSet<ValueId> = g.outputs.iter().copied().collect();
    let mut class: Vec<Option<OpClass>> = vec![None; kinds.len()];
    for (i, k) in kinds.iter().enumerate() {
        let n = &g.nodes[i];
        class[i] = match k {
            Kind::Attn { .. } => Some(
                if n.inputs.iter().flatten().any(|v| after_softmax(g, *v, 6)) {
                    OpClass::AttnContext
                } else {
                    OpClass::AttnScore
                },
            ),
            Kind::Softmax { .. } => Some(OpClass::Softmax),
            Kind::Append => Some(OpClass::KvAppend),
            Kind::Vector { .. } => Some(OpClass::Vector),
            Kind::Move => None,
            Kind::Fc { .. } => None, // below
        };
    }
    // FC layers: what their output reaches before the next FC.
    for (i, k) in kinds.iter().enumerate() {
        if !matches!(k, Kind::Fc { .. }) {
            continue;
        }
        let mut reaches_attn = false;
        let mut reaches_output = false;
        let mut stack: Vec<(ValueId, usize)> = g.nodes[i].outputs.iter().map(|o| (*o, 0)).collect();
        let mut seen = std::collections::HashSet::new();
        while let Some((v, d)) = stack.pop() {
            if !seen.insert(v) {
                continue;
            }
            if outputs.contains(&v) && !matches!(class_of_output(g, v), Some(OpClass::KvAppend)) {
                reaches_output = true;
            }
            if d >= 16 {
                continue;
            }
            for c in consumers.get(&v).into_iter().flatten() {
                match kinds[c.idx()] {
                    Kind::Fc { .. } => {}
                    Kind::Attn { .. } | Kind::Append => reaches_attn = true,
                    _ => stack.extend(g.node(*c).outputs.iter().map(|o| (*o, d + 1))),
                }
            }
        }
        let from_context = g.nodes[i]
            .inputs
            .iter()
            .flatten()
            .any(|v| back_to_context(g, kinds, &class, *v, 8));
        class[i] = Some(if reaches_attn {
            OpClass::Qkv
        } else if from_context {
            OpClass::OutProj
        } else if reaches_output {
            OpClass::LmHead
        } else {
            OpClass::Ffn
        });
    }
    class
}

fn class_of_output(g: &Graph, v: ValueId) -> Option<OpClass> {
    producer(g, v)
        .and_then(|p| matches!(g.node(p).op, Op::Concat { .. }).then_some(OpClass::KvAppend))
}

/// Does `v` come from an attention-context matmul through non-FC nodes (≤ `depth`)?
fn back_to_context(
    g: &Graph,
    kinds: &[Kind],
    class: &[Option<OpClass>],
    v: ValueId,
    depth: usize,
) -> bool {
    let Some(p) = producer(g, v) else {
        return false;
    };
    if class[p.idx()] == Some(OpClass::AttnContext) {
        return true;
    }
    if depth == 0 || matches!(kinds[p.idx()], Kind::Fc { .. } | Kind::Attn { .. }) {
        return false;
    }
    g.node(p)
        .inputs
        .iter()
        .flatten()
        .any(|i| back_to_context(g, kinds, class, *i, depth - 1))
}

impl Workload {
    /// Operations of class `c` for `b` sequences, `t` new tokens each, `l` attended
    /// positions (cached + new).
    pub fn ops(&self, c: OpClass, b: f64, t: f64, l: f64) -> f64 {
        let w = self.class(c);
        w.ops_per_token * b * t + w.ops_per_position * b * t * l
    }
    /// Operations of every class.
    pub fn total_ops(&self, b: f64, t: f64, l: f64) -> f64 {
        OpClass::ALL.iter().map(|c| self.ops(*c, b, t, l)).sum()
    }
}
