//! ModelProto -> pimkit Graph.

use crate::attr::Attrs;
use crate::convert::{ConstEntry, Ctx, NodeIn, registry, supported_in};
use crate::error::{OnnxError, Result};
use crate::proto::{ModelProto, ValueInfoProto, tensor_shape_proto::dimension, type_proto};
use crate::tensor::{dtype_from_onnx, proto_type};
use pimkit_ir::{DType, Graph, Op, Tensor, TensorType, ValueDef, ValueId, verify};
use prost::Message;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// How to import a model.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// Keep only constant types, not weight data (external data files are not read).
    pub shape_only: bool,
    /// Values for symbolic input dims (`dim_param`, `--dim NAME=VALUE`).
    pub dims: HashMap<String, usize>,
    /// Full shapes of graph inputs (`--shape INPUT=1x3x224x224`, or the shapes of the
    /// `.npy` inputs a command was given): they bind the inputs' symbolic and unknown
    /// dims, as onnxruntime binds them from the feeds. The key "" stands for the model's
    /// only input. Dims still unknown after `dims` and these become 1, with a note.
    pub input_shapes: HashMap<String, Vec<usize>>,
    /// Graph inputs replaced by constants (`--bind NAME=VALUE`): every shape, `If`
    /// condition and value that depends only on them folds at import.
    pub bind: HashMap<String, Tensor>,
    /// Keep QDQ groups (float ops between DequantizeLinear and QuantizeLinear) in float,
    /// as ONNX defines them, instead of fusing each into the integer node onnxruntime's
    /// default session runs ([`crate::qdq`]).
    pub qdq_float: bool,
}

/// A loaded graph plus notes about lossy conversions (f64 -> f32, defaulted dims).
/// The newest ai.onnx opset whose semantics pimkit implements (docs/onnx.md).
pub const NEWEST_OPSET: i64 = 23;

#[derive(Clone, Debug)]
pub struct Loaded {
    pub graph: Graph,
    pub notes: Vec<String>,
}

/// (bits, block_size) of each com.microsoft MatMulNBits node in the main graph of the ONNX
/// file at `path` (weight-only quantized layers; the importer dequantizes them, so the
/// graph no longer says how they are stored). Empty when there are none or the file does
/// not parse (the import reports that).
pub fn matmul_nbits_layers(path: &Path) -> Vec<(i64, i64)> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(model) = ModelProto::decode(&bytes[..]) else {
        return Vec::new();
    };
    let attr = |n: &crate::proto::NodeProto, name: &str, default: i64| {
        n.attribute
            .iter()
            .find(|a| a.name() == name)
            .map_or(default, |a| a.i())
    };
    model
        .graph
        .iter()
        .flat_map(|g| &g.node)
        .filter(|n| n.op_type() == "MatMulNBits" && n.domain() == crate::convert::MS)
        .map(|n| (attr(n, "bits", 4), attr(n, "block_size", 0)))
        .collect()
}

pub fn load(path: &Path) -> Result<Graph> {
    load_with(path, &LoadOptions::default())
}

pub fn load_with(path: &Path, opts: &LoadOptions) -> Result<Graph> {
    load_file_notes(path, opts).map(|l| l.graph)
}

/// Like [`load_with`], also returning import notes.
pub fn load_file_notes(path: &Path, opts: &LoadOptions) -> Result<Loaded> {
    let mut notes = Vec::new();
    let graph = load_file_collect(path, opts, &mut notes)?;
    Ok(Loaded { graph, notes })
}

/// Like [`load_with`], appending import notes to `notes` whether or not the import
/// succeeds (print them before the error: a dim set to 1 may explain it).
pub fn load_file_collect(
    path: &Path,
    opts: &LoadOptions,
    notes: &mut Vec<String>,
) -> Result<Graph> {
    let io = |source| OnnxError::Io {
        path: path.to_path_buf(),
        source,
    };
    // A device or pipe (/dev/zero) would be read until memory runs out, and protobuf
    // cannot hold a message of 2 GiB or more (larger models keep weights in external data).
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(OnnxError::Parse {
            file: path.display().to_string(),
            msg: "not a regular file; give the path of an .onnx file".into(),
        });
    }
    if meta.len() >= 1 << 31 {
        return Err(OnnxError::Parse {
            file: path.display().to_string(),
            msg: format!(
                "{} bytes, over protobuf's 2 GiB message limit; save large models with external data (onnx.save(..., save_as_external_data=True))",
                meta.len()
            ),
        });
    }
    let bytes = std::fs::read(path).map_err(io)?;
    let dir = path.parent().map(|p| {
        if p.as_os_str().is_empty() {
            Path::new(".")
        } else {
            p
        }
    });
    load_bytes_named(&bytes, dir, opts, &path.display().to_string(), notes)
}

pub fn load_bytes(bytes: &[u8], base_dir: Option<&Path>, opts: &LoadOptions) -> Result<Graph> {
    load_bytes_named(bytes, base_dir, opts, "<bytes>", &mut Vec::new())
}

fn load_bytes_named(
    bytes: &[u8],
    base_dir: Option<&Path>,
    opts: &LoadOptions,
    file: &str,
    notes: &mut Vec<String>,
) -> Result<Graph> {
    let model = ModelProto::decode(bytes).map_err(|e| {
        let m = e.to_string();
        if m.contains("recursion limit") {
            return OnnxError::Parse {
                file: file.to_string(),
                msg: format!(
                    "messages (subgraphs, attributes) are nested deeper than protobuf's limit of \
                     {} levels; a real model nests a few",
                    crate::wire::MAX_DEPTH
                ),
            };
        }
        let m = m
            .strip_prefix("failed to decode Protobuf message: ")
            .unwrap_or(&m);
        OnnxError::Parse {
            file: file.to_string(),
            msg: format!(
                "at byte {} of {}: {m}; check that it is a complete .onnx file",
                crate::wire::error_offset(bytes),
                bytes.len()
            ),
        }
    })?;
    if model.graph.is_none() {
        return Err(OnnxError::Parse {
            file: file.to_string(),
            msg: "it contains no graph (truncated or not an ONNX file?)".into(),
        });
    }
    load_model_collect(&model, base_dir, opts, notes).map_err(|e| match e {
        OnnxError::Internal(m) if file != "<bytes>" => OnnxError::Internal(format!("{file}: {m}")),
        e => e,
    })
}

/// Import an already decoded model.
pub fn load_model(
    model: &ModelProto,
    base_dir: Option<&Path>,
    opts: &LoadOptions,
) -> Result<Graph> {
    load_model_notes(model, base_dir, opts).map(|l| l.graph)
}

/// Element type and declared dims of a graph input (`None` = symbolic or unknown:
/// `dim_param`, no value, or the old Paddle conventions `dim_value: -1` and `dim_param:
/// "?"`, the latter two independent of each other).
fn declared_input(vi: &ValueInfoProto) -> Result<(DType, Vec<Option<i64>>, Vec<Option<String>>)> {
    let name = vi.name();
    let Some(type_proto::Value::TensorType(tt)) = vi.r#type.as_ref().and_then(|t| t.value.as_ref())
    else {
        return Err(OnnxError::Model(format!(
            "graph input '{name}' is not a tensor"
        )));
    };
    let dtype = dtype_from_onnx(tt.elem_type(), &format!("graph input '{name}'"))?;
    let shape = tt.shape.as_ref().ok_or_else(|| {
        OnnxError::Model(format!(
            "graph input '{name}' has no shape (not even a rank); pimkit needs static ranks: \
             give it with --shape {name}=D1xD2x..."
        ))
    })?;
    let mut dims = Vec::new();
    let mut params = Vec::new();
    for d in &shape.dim {
        match &d.value {
            Some(dimension::Value::DimValue(v)) if *v >= 0 => {
                dims.push(Some(*v));
                params.push(None);
            }
            // paddle2onnx writes "?" for every unknown dim: each is its own dim (as
            // onnxruntime treats it), not one symbol shared by all.
            Some(dimension::Value::DimParam(p)) if !p.is_empty() && p != "?" => {
                dims.push(None);
                params.push(Some(p.clone()));
            }
            _ => {
                dims.push(None);
                params.push(None);
            }
        }
    }
    Ok((dtype, dims, params))
}

/// Resolve every graph input's type: declared static dims, then `--dim` values and the
/// given input shapes (which also bind a symbolic dim's other uses), then 1 with a note.
fn input_types(
    inputs: &[&ValueInfoProto],
    opts: &LoadOptions,
    notes: &mut Vec<String>,
) -> Result<Vec<TensorType>> {
    let decl: Vec<_> = inputs
        .iter()
        .map(|vi| declared_input(vi))
        .collect::<Result<_>>()?;
    let names: Vec<&str> = inputs.iter().map(|vi| vi.name()).collect();
    let mut given: HashMap<&str, &Vec<usize>> = HashMap::new();
    for (k, shape) in &opts.input_shapes {
        let key = if k.is_empty() {
            match names.as_slice() {
                [only] => *only,
                _ => {
                    return Err(OnnxError::Model(format!(
                        "an input was given without a name, but the model has {} inputs ({}); \
                         name it: NAME=...",
                        names.len(),
                        names.join(", ")
                    )));
                }
            }
        } else if names.contains(&k.as_str()) {
            k.as_str()
        } else {
            return Err(OnnxError::Model(format!(
                "an input or shape was given for '{k}', but the model has no such input \
                 (inputs: {})",
                names.join(", ")
            )));
        };
        given.insert(key, shape);
    }
    // Symbolic dims take --dim values first, then what the given shapes say of them.
    let mut params: HashMap<String, (i64, String)> = opts
        .dims
        .iter()
        .map(|(k, &v)| (k.clone(), (v as i64, format!("--dim {k}={v}"))))
        .collect();
    for (i, (_, dims, ps)) in decl.iter().enumerate() {
        let Some(shape) = given.get(names[i]) else {
            continue;
        };
        if shape.len() != dims.len() {
            return Err(OnnxError::InputShape {
                input: names[i].to_string(),
                msg: format!(
                    "input '{}' is declared with rank {} ({}), but the given shape {} has rank {}",
                    names[i],
                    dims.len(),
                    describe_dims(dims, ps),
                    pimkit_ir::clip(&format!("{shape:?}"), 60),
                    shape.len()
                ),
            });
        }
        for (k, (&d, p)) in dims.iter().zip(ps).enumerate() {
            let v = shape[k] as i64;
            if let Some(d) = d
                && d != v
            {
                return Err(OnnxError::InputShape {
                    input: names[i].to_string(),
                    msg: format!(
                        "input '{}' is declared as {} but the given shape is {} (dim {k} must be {d})",
                        names[i],
                        describe_dims(dims, ps),
                        pimkit_ir::clip(&format!("{shape:?}"), 60)
                    ),
                });
            }
            if let Some(p) = p {
                let from = format!("input '{}' dim {k}", names[i]);
                match params.get(p) {
                    Some((w, by)) if *w != v => {
                        return Err(OnnxError::Model(format!(
                            "symbolic dim '{p}' is {v} by {from} but {w} by {by}; give consistent shapes"
                        )));
                    }
                    Some(_) => {}
                    None => {
                        params.insert(p.clone(), (v, from));
                    }
                }
            }
        }
    }
    let mut out = Vec::with_capacity(decl.len());
    for (i, (dtype, dims, ps)) in decl.iter().enumerate() {
        let name = names[i];
        let mut shape = Vec::with_capacity(dims.len());
        for (k, (&d, p)) in dims.iter().zip(ps).enumerate() {
            let v = if let Some(v) = given.get(name).map(|s| s[k] as i64) {
                v
            } else if let Some(d) = d {
                d
            } else if let Some((v, _)) = p.as_ref().and_then(|p| params.get(p)) {
                *v
            } else {
                let what = match p {
                    Some(p) => format!("symbolic dim '{p}'"),
                    None => format!("unknown dim {k}"),
                };
                notes.push(format!(
                    "graph input '{name}': {what} set to 1 (give the input, or --shape {name}=... / --dim NAME=VALUE)"
                ));
                1
            };
            shape.push(v);
        }
        let shape = crate::tensor::checked_shape(&shape, &format!("graph input '{name}'"))?;
        out.push(TensorType::new(*dtype, shape));
    }
    Ok(out)
}

fn describe_dims(dims: &[Option<i64>], params: &[Option<String>]) -> String {
    let parts: Vec<String> = dims
        .iter()
        .zip(params)
        .map(|(d, p)| match (d, p) {
            (Some(v), _) => v.to_string(),
            (None, Some(p)) => p.clone(),
            (None, None) => "?".into(),
        })
        .collect();
    pimkit_ir::clip(&format!("[{}]", parts.join(", ")), 60)
}

/// Like [`load_model`], also returning import notes. Never panics: IR helpers may index
/// or multiply on adversarial shapes that slipped past validation, so a panic is turned
/// into [`OnnxError::Internal`] as a last line of defence.
pub fn load_model_notes(
    model: &ModelProto,
    base_dir: Option<&Path>,
    opts: &LoadOptions,
) -> Result<Loaded> {
    let mut notes = Vec::new();
    let graph = load_model_collect(model, base_dir, opts, &mut notes)?;
    Ok(Loaded { graph, notes })
}

/// Like [`load_model`], appending import notes to `notes` whether or not the import
/// succeeds (a note such as "symbolic dim set to 1" may explain the error).
pub fn load_model_collect(
    model: &ModelProto,
    base_dir: Option<&Path>,
    opts: &LoadOptions,
    notes: &mut Vec<String>,
) -> Result<Graph> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        load_model_inner(model, base_dir, opts, notes)
    }))
    .unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".into());
        Err(OnnxError::Internal(msg))
    })
}

fn load_model_inner(
    model: &ModelProto,
    base_dir: Option<&Path>,
    opts: &LoadOptions,
    notes: &mut Vec<String>,
) -> Result<Graph> {
    let gp = model
        .graph
        .as_ref()
        .ok_or_else(|| OnnxError::Model("the model contains no graph".into()))?;
    let mut opsets: HashMap<String, i64> = HashMap::new();
    for o in &model.opset_import {
        let d = match o.domain() {
            "ai.onnx" => "",
            d => d,
        };
        opsets.insert(d.to_string(), o.version());
    }
    crate::validate::validate(model, &opsets)?;
    let mut opset_notes = vec![];
    if let Some(&v) = opsets.get("")
        && v > NEWEST_OPSET
    {
        opset_notes.push(format!(
            "the model imports ai.onnx opset {v}, newer than the newest pimkit knows ({NEWEST_OPSET}); ops are read with their opset-{NEWEST_OPSET} semantics"
        ));
    }
    let mut ctx = Ctx {
        g: Graph::new(gp.name()),
        opts,
        base_dir,
        inits: &gp.initializer,
        values: HashMap::new(),
        consts: HashMap::new(),
        used: HashSet::new(),
        const_order: HashMap::new(),
        init_index: HashMap::new(),
        notes: opset_notes,
        fold_failures: HashMap::new(),
        opsets: opsets.clone(),
        parent: None,
        captures: Vec::new(),
    };
    let r = convert_graph(&mut ctx, gp, &opsets);
    // Notes (a dim set to 1) may explain an error: the caller gets them either way.
    notes.append(&mut ctx.notes);
    r?;
    let mut g = ctx.g;
    reorder_consts(&mut g, &ctx.const_order);
    if !opts.qdq_float {
        let fused = crate::qdq::fuse(&mut g);
        if !fused.is_empty() {
            let list: Vec<String> = fused
                .iter()
                .map(|(op, n)| match *op {
                    crate::qdq::DROPPED => format!("{n} data-movement ops on the 8-bit codes"),
                    op => format!("{n} {op}"),
                })
                .collect();
            notes.push(format!(
                "QDQ groups imported as the integer nodes onnxruntime's default session runs: {}; --qdq-float keeps the float ops",
                list.join(", ")
            ));
        }
    }
    verify(&g).map_err(|e| OnnxError::Verify(Box::new(e)))?;
    Ok(g)
}

/// Initializers, inputs, every node (folded or converted) and the outputs.
fn convert_graph(
    ctx: &mut Ctx,
    gp: &crate::proto::GraphProto,
    _opsets: &HashMap<String, i64>,
) -> Result<()> {
    register_initializers(ctx, gp)?;
    bind_inputs(ctx, gp)?;
    collect_used(gp, &mut ctx.used);
    convert_nodes(ctx, &gp.node, "")?;
    bind_outputs(ctx, gp)?;
    Ok(())
}

/// A graph's initializers become (lazily decoded) constants.
pub(crate) fn register_initializers(ctx: &mut Ctx, gp: &crate::proto::GraphProto) -> Result<()> {
    if let Some(sp) = gp.sparse_initializer.first() {
        let name = [sp.values.as_ref(), sp.indices.as_ref()]
            .into_iter()
            .flatten()
            .map(|t| t.name())
            .find(|n| !n.is_empty())
            .unwrap_or("#0 (unnamed)")
            .to_string();
        return Err(OnnxError::Model(format!(
            "sparse initializer '{name}' is not supported; store it dense (onnx.numpy_helper.to_array)"
        )));
    }
    for (i, tp) in gp.initializer.iter().enumerate() {
        if tp.name().is_empty() {
            return Err(OnnxError::Model(format!("initializer #{i} has no name")));
        }
        let ty = proto_type(tp)?;
        ctx.init_index.insert(tp.name().to_string(), i);
        ctx.consts.insert(
            tp.name().to_string(),
            ConstEntry {
                ty,
                data: None,
                init: Some(i),
            },
        );
    }
    Ok(())
}

/// Every name some node reads (in this graph or any nested subgraph) or the graph
/// outputs list.
pub(crate) fn collect_used(gp: &crate::proto::GraphProto, used: &mut HashSet<String>) {
    for n in &gp.node {
        used.extend(n.input.iter().filter(|s| !s.is_empty()).cloned());
        for a in &n.attribute {
            for sub in a.g.iter().chain(&a.graphs) {
                collect_used(sub, used);
            }
        }
    }
    used.extend(gp.output.iter().map(|o| o.name().to_string()));
}

/// Fold or convert each node in order. Unnamed nodes are called `<prefix><OpType>_<i>`.
pub(crate) fn convert_nodes(
    ctx: &mut Ctx,
    nodes: &[crate::proto::NodeProto],
    prefix: &str,
) -> Result<()> {
    let reg = registry();
    let names: Vec<String> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| match n.name() {
            "" => format!("{prefix}{}_{i}", n.op_type()),
            s => s.to_string(),
        })
        .collect();
    for (np, name) in nodes.iter().zip(&names) {
        let domain = match np.domain() {
            "ai.onnx" => "",
            d => d,
        };
        let opset = ctx.opsets.get(domain).copied().unwrap_or(1);
        let n = NodeIn {
            name,
            op_type: np.op_type(),
            domain,
            opset,
            attrs: Attrs {
                node: name,
                op: np.op_type(),
                list: &np.attribute,
            },
            inputs: np
                .input
                .iter()
                .map(|s| (!s.is_empty()).then_some(s.as_str()))
                .collect(),
            outputs: np.output.iter().map(|s| s.as_str()).collect(),
        };
        // Inside a subgraph, the enclosing graphs' constants fold like local ones.
        if ctx.parent.is_some() {
            for i in n.inputs.iter().flatten() {
                ctx.pull_outer_const(i);
            }
        }
        let conv = reg.get(&(domain, n.op_type)).copied();
        if crate::fold::try_fold(ctx, &n, conv)? {
            continue;
        }
        let conv = conv.ok_or_else(|| OnnxError::UnsupportedOp {
            op: n.op_type.to_string(),
            domain: np.domain().to_string(),
            opset,
            node: name.clone(),
            supported: supported_in(&reg, domain, n.op_type),
        })?;
        let first = ctx.g.nodes.len();
        conv(ctx, &n)?;
        // Nodes from one framework call, or from one ONNX node that pimkit expands into
        // several IR nodes, form one operator.
        let expanded = ctx.g.nodes.len() - first > 1;
        if let Some(src) =
            source_operator(&np.metadata_props).or_else(|| expanded.then(|| name.clone()))
        {
            for node in &mut ctx.g.nodes[first..] {
                node.source = Some(src.clone());
            }
        }
    }
    Ok(())
}

/// Graph outputs; an output that is a graph input or a constant gets an Identity node so
/// that every output is produced by a node.
pub(crate) fn bind_outputs(ctx: &mut Ctx, gp: &crate::proto::GraphProto) -> Result<()> {
    if gp.output.is_empty() {
        return Err(OnnxError::Model(
            "the graph declares no outputs, so nothing would be computed; list the result values in graph.output".into(),
        ));
    }
    for o in &gp.output {
        let name = o.name();
        let id = if let Some(&id) = ctx.values.get(name) {
            if matches!(ctx.g.value(id).def, ValueDef::Node { .. }) {
                id
            } else if ctx.is_input_value(id) {
                identity(ctx, id, &format!("{name}:out"))?
            } else {
                ctx.g.values[id.idx()].name = format!("{name}:const");
                identity(ctx, id, name)?
            }
        } else if ctx.consts.contains_key(name) {
            let entry = ctx.consts.remove(name).unwrap_or_else(|| unreachable!());
            let cname = format!("{name}:const");
            ctx.consts.insert(cname.clone(), entry);
            if let Some(&i) = ctx.init_index.get(name) {
                ctx.init_index.insert(cname.clone(), i);
            }
            let c = ctx.materialize(&cname)?;
            identity(ctx, c, name)?
        } else {
            return Err(OnnxError::Model(format!(
                "graph output '{name}' is not produced by any node"
            )));
        };
        ctx.g.outputs.push(id);
        declared_shape_note(ctx, o, id);
    }
    Ok(())
}

/// A note when a graph output declares a fully static shape other than the inferred one
/// (onnxruntime warns likewise and keeps the computed shape).
fn declared_shape_note(ctx: &mut Ctx, o: &crate::proto::ValueInfoProto, id: ValueId) {
    let Some(shape) = o.r#type.as_ref().and_then(|t| match &t.value {
        Some(type_proto::Value::TensorType(tt)) => tt.shape.as_ref(),
        _ => None,
    }) else {
        return;
    };
    let dims: Option<Vec<usize>> = shape
        .dim
        .iter()
        .map(|d| match &d.value {
            Some(dimension::Value::DimValue(v)) if *v >= 0 => Some(*v as usize),
            _ => None,
        })
        .collect();
    let inferred = &ctx.g.ty(id).shape;
    if let Some(dims) = dims
        && &dims != inferred
    {
        ctx.notes.push(format!(
            "graph output '{}': declared shape {dims:?} but the graph computes {inferred:?}; pimkit uses the computed shape",
            o.name()
        ));
    }
}

fn identity(ctx: &mut Ctx, src: ValueId, out: &str) -> Result<ValueId> {
    let node = format!("Identity_{out}");
    ctx.g
        .add_node_named(
            node.clone(),
            Op::Identity,
            vec![Some(src)],
            vec![out.to_string()],
        )
        .map(|v| v[0])
        .map_err(|e| OnnxError::Ir {
            node,
            source: Box::new(e),
        })
}

/// Reorder constant values so that they appear in initializer order (then creation
/// order): the graph dump then matches the model regardless of first-use order.
fn reorder_consts(g: &mut Graph, order: &HashMap<ValueId, usize>) {
    let slots: Vec<usize> = (0..g.values.len())
        .filter(|&i| matches!(g.values[i].def, ValueDef::Const(_)))
        .collect();
    let mut sorted = slots.clone();
    sorted.sort_by_key(|&i| {
        (
            order.get(&ValueId(i as u32)).copied().unwrap_or(usize::MAX),
            i,
        )
    });
    if sorted == slots {
        return;
    }
    // Value now at slot slots[k] is the old value sorted[k].
    let mut map: Vec<u32> = (0..g.values.len() as u32).collect();
    let mut values: Vec<Option<pimkit_ir::Value>> = std::mem::take(&mut g.values)
        .into_iter()
        .map(Some)
        .collect();
    let mut new_values: Vec<Option<pimkit_ir::Value>> = vec![None; values.len()];
    for (k, &slot) in slots.iter().enumerate() {
        map[sorted[k]] = slot as u32;
    }
    for (old, v) in values.iter_mut().enumerate() {
        new_values[map[old] as usize] = v.take();
    }
    g.values = new_values.into_iter().flatten().collect();
    let m = |v: &mut ValueId| *v = ValueId(map[v.idx()]);
    for n in &mut g.nodes {
        n.inputs.iter_mut().flatten().for_each(m);
        n.outputs.iter_mut().for_each(m);
    }
    g.inputs.iter_mut().for_each(m);
    g.outputs.iter_mut().for_each(m);
}

/// The framework operator an ONNX node came from, from the metadata PyTorch's dynamo
/// exporter writes on every node: `pkg.torch.onnx.fx_node` starts with the FX node's name
/// (`%scaled_dot_product_attention : [num_users=1] = call_function[...]`); `namespace` is
/// the fallback (`__main__.Model/scaled_dot_product_attention: aten.scaled_dot_...`). All
/// nodes of one decomposed call share it, so analyses can regroup them (offload's operator
/// granularity). pimkit's exporter writes the same key.
pub(crate) fn source_operator(props: &[crate::proto::StringStringEntryProto]) -> Option<String> {
    let get = |k: &str| {
        props
            .iter()
            .find(|p| p.key.as_deref() == Some(k))
            .and_then(|p| p.value.as_deref())
    };
    if let Some(fx) = get(FX_NODE_KEY) {
        let name = fx.strip_prefix('%')?.split([' ', ':']).next()?;
        return (!name.is_empty()).then(|| name.to_string());
    }
    let ns = get("namespace")?;
    let path = ns.split(": ").next()?.trim();
    (!path.is_empty()).then(|| path.to_string())
}

/// The metadata key of PyTorch's dynamo exporter that names a node's FX node.
pub(crate) const FX_NODE_KEY: &str = "pkg.torch.onnx.fx_node";

/// Graph inputs become IR inputs, or constants when bound (`LoadOptions::bind`). Old
/// exporters list initializers among the inputs too: those are constants already.
fn bind_inputs(ctx: &mut Ctx, gp: &crate::proto::GraphProto) -> Result<()> {
    let mut seen = HashSet::new();
    let mut real: Vec<&ValueInfoProto> = Vec::new();
    for vi in &gp.input {
        if ctx.consts.contains_key(vi.name()) {
            continue;
        }
        if !seen.insert(vi.name()) {
            return Err(OnnxError::Model(format!(
                "graph input '{}' is listed twice",
                vi.name()
            )));
        }
        real.push(vi);
    }
    let names: Vec<&str> = real.iter().map(|vi| vi.name()).collect();
    if let Some(k) = ctx.opts.bind.keys().find(|k| !names.contains(&k.as_str())) {
        return Err(OnnxError::Model(format!(
            "--bind {k}: the model has no input '{k}' (inputs: {})",
            names.join(", ")
        )));
    }
    // A bound value's shape binds the input's symbolic dims like a given input's shape
    // (a scalar bound to a one-element input takes the declared shape).
    let mut opts = ctx.opts.clone();
    for (k, t) in &ctx.opts.bind {
        let vi = real.iter().find(|vi| vi.name() == k).copied();
        let declared = vi.map(declared_input).transpose()?;
        let shape = match declared {
            Some((_, dims, _)) if t.numel() == 1 && dims.iter().all(|d| *d == Some(1)) => {
                vec![1; dims.len()]
            }
            _ => t.shape.clone(),
        };
        opts.input_shapes.insert(k.clone(), shape);
    }
    let types = input_types(&real, &opts, &mut ctx.notes)?;
    for (vi, ty) in real.iter().zip(types) {
        let name = vi.name();
        match ctx.opts.bind.get(name) {
            Some(t) => {
                if ty.numel() != t.numel() {
                    return Err(OnnxError::Model(format!(
                        "--bind {name}: {} values given, input '{name}' is {ty}",
                        t.numel()
                    )));
                }
                let v = Tensor::from_f64_as(ty.dtype, ty.shape.clone(), &t.to_f64_vec());
                ctx.consts.insert(
                    name.to_string(),
                    ConstEntry {
                        ty,
                        data: Some(v),
                        init: None,
                    },
                );
            }
            None => {
                let id = ctx.g.add_input(name, ty);
                ctx.values.insert(name.to_string(), id);
            }
        }
    }
    Ok(())
}
