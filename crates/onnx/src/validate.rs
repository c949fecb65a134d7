//! Structural checks on a decoded model before import, as strict as onnxruntime's loader
//! (and `onnx.checker` where onnxruntime only warns and then computes with one of two
//! conflicting definitions): a valid IR version, names defined once, attributes given
//! once, and every op defined by the opset the model imports.

use crate::error::{OnnxError, Result};
use crate::proto::{GraphProto, ModelProto, NodeProto};
use std::collections::{HashMap, HashSet};

/// The newest IR version accepted: onnxruntime 1.32's limit (it refuses 15 and above). The
/// vendored onnx.proto (onnx 1.22) names 13, but onnx's helpers already write 14.
pub const NEWEST_IR_VERSION: i64 = 14;

const RESAVE: &str = "fix the exporter or the file (onnx.checker.check_model)";

/// Check the model's header and every graph (subgraphs included).
pub fn validate(model: &ModelProto, opsets: &HashMap<String, i64>) -> Result<()> {
    if let Some(v) = model.ir_version
        && !(1..=NEWEST_IR_VERSION).contains(&v)
    {
        return Err(OnnxError::Model(format!(
            "ir_version {v} is not a valid ONNX IR version (1 to {NEWEST_IR_VERSION}); {RESAVE}"
        )));
    }
    for o in &model.opset_import {
        if o.version() < 1 {
            return Err(OnnxError::Model(format!(
                "opset_import of domain '{}' has version {}; opset versions start at 1; {RESAVE}",
                o.domain(),
                o.version()
            )));
        }
    }
    if let Some(g) = &model.graph {
        validate_graph(g, opsets, "")?;
    }
    Ok(())
}

/// `where_` is empty for the main graph, else "subgraph 'body' of node 'loop': ".
fn validate_graph(g: &GraphProto, opsets: &HashMap<String, i64>, where_: &str) -> Result<()> {
    let mut inits = HashSet::new();
    for t in &g.initializer {
        if !t.name().is_empty() && !inits.insert(t.name()) {
            return Err(OnnxError::Tensor {
                tensor: t.name().to_string(),
                msg: format!(
                    "{where_}two initializers have this name (onnxruntime silently keeps the last); rename or remove one; {RESAVE}"
                ),
            });
        }
    }
    // Names a node may not redefine: graph inputs (initializers may be listed among them).
    let inputs: HashSet<&str> = g.input.iter().map(|v| v.name()).collect();
    let mut produced: HashMap<&str, String> = HashMap::new();
    for (i, n) in g.node.iter().enumerate() {
        let name = match n.name() {
            "" => format!("{}_{i}", n.op_type()),
            s => s.to_string(),
        };
        validate_node(n, &name, opsets, where_)?;
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            let clash = if let Some(first) = produced.get(o.as_str()) {
                Some(format!("node '{first}' also writes it"))
            } else if inputs.contains(o.as_str()) {
                Some("it is also a graph input".to_string())
            } else if inits.contains(o.as_str()) {
                Some("it is also an initializer".to_string())
            } else {
                None
            };
            if let Some(clash) = clash {
                return Err(OnnxError::Node {
                    node: name,
                    op: n.op_type().to_string(),
                    msg: format!(
                        "{where_}output '{o}' is defined twice ({clash}); every value must have one definition; {RESAVE}"
                    ),
                });
            }
            produced.insert(o, name.clone());
        }
        for a in &n.attribute {
            for sub in a.g.iter().chain(&a.graphs) {
                let w = format!("{where_}subgraph '{}' of node '{name}': ", a.name());
                validate_graph(sub, opsets, &w)?;
            }
        }
    }
    let mut outs = HashSet::new();
    for o in &g.output {
        if !outs.insert(o.name()) {
            return Err(OnnxError::Model(format!(
                "{where_}graph output '{}' is listed twice; list each output once",
                o.name()
            )));
        }
    }
    Ok(())
}

fn validate_node(
    n: &NodeProto,
    name: &str,
    opsets: &HashMap<String, i64>,
    where_: &str,
) -> Result<()> {
    let mut seen = HashSet::new();
    for a in &n.attribute {
        if !seen.insert(a.name()) {
            return Err(OnnxError::Attribute {
                node: name.to_string(),
                op: n.op_type().to_string(),
                attr: a.name().to_string(),
                msg: format!("{where_}given twice; keep one of the two values; {RESAVE}"),
            });
        }
    }
    // Only an explicitly imported ai.onnx opset is checked: onnxruntime uses its newest
    // opset for a domain the model does not import.
    let domain = match n.domain() {
        "ai.onnx" => "",
        d => d,
    };
    if domain.is_empty()
        && let Some(&opset) = opsets.get("")
        && let Some(first) = crate::op_since::first_opset(n.op_type())
        && first > opset
    {
        return Err(OnnxError::Node {
            node: name.to_string(),
            op: n.op_type().to_string(),
            msg: format!(
                "{where_}{} is defined from ai.onnx opset {first}, but the model imports opset {opset}; \
                 re-export with opset {first} or newer (or convert it with onnx.version_converter)",
                n.op_type()
            ),
        });
    }
    Ok(())
}
