//! The opset-aware converter registry and the conversion context shared by all
//! converters. A converter receives the node (name, op type, domain, opset version of
//! its domain, attributes, input and output names) and appends IR nodes to the graph.

mod control;
mod ctx;
mod elementwise;
mod nn;
mod quant;
mod reduce;
mod rnn;
pub(crate) mod shape;
mod upsample;

// ONNX node-suite coverage (issue #16 item 4): decompositions into existing IR ops.
mod attention;
mod causal_conv;
mod dec;
mod grid;
mod index;
mod layout;
mod linear_attention;
mod loss;
mod lp;
mod misc;
mod normalize;
mod order;
mod signal;

pub(crate) use ctx::{ConstEntry, Ctx};

use crate::attr::Attrs;
use crate::error::Result;
use std::collections::BTreeMap;

/// One ONNX node as converters see it. Empty input names (omitted optionals) are `None`.
pub(crate) struct NodeIn<'a> {
    pub name: &'a str,
    pub op_type: &'a str,
    /// "" for the default ai.onnx domain.
    pub domain: &'a str,
    /// Opset version the model imports for `domain`.
    pub opset: i64,
    pub attrs: Attrs<'a>,
    pub inputs: Vec<Option<&'a str>>,
    pub outputs: Vec<&'a str>,
}

impl NodeIn<'_> {
    pub fn input(&self, i: usize) -> Option<&str> {
        self.inputs.get(i).copied().flatten()
    }
    pub fn num_inputs(&self) -> usize {
        self.inputs.len()
    }
}

pub(crate) type Converter = fn(&mut Ctx, &NodeIn) -> Result<()>;

pub(crate) const MS: &str = "com.microsoft";

/// Map (domain, op_type) to converter. A BTreeMap keeps the "supported" lists sorted.
pub(crate) fn registry() -> BTreeMap<(&'static str, &'static str), Converter> {
    let mut r: BTreeMap<(&'static str, &'static str), Converter> = BTreeMap::new();
    elementwise::register(&mut r);
    nn::register(&mut r);
    shape::register(&mut r);
    reduce::register(&mut r);
    quant::register(&mut r);
    rnn::register(&mut r);
    upsample::register(&mut r);
    control::register(&mut r);
    // ONNX node-suite coverage (issue #16 item 4).
    attention::register(&mut r);
    causal_conv::register(&mut r);
    grid::register(&mut r);
    index::register(&mut r);
    layout::register(&mut r);
    linear_attention::register(&mut r);
    loss::register(&mut r);
    lp::register(&mut r);
    misc::register(&mut r);
    normalize::register(&mut r);
    order::register(&mut r);
    signal::register(&mut r);
    r
}

/// Comma-separated op types the registry supports in `domain` (for error messages).
pub(crate) fn supported_in(
    r: &BTreeMap<(&'static str, &'static str), Converter>,
    domain: &str,
) -> String {
    let ops: Vec<&str> = r
        .keys()
        .filter(|(d, _)| *d == domain)
        .map(|(_, o)| *o)
        .collect();
    if ops.is_empty() {
        let domains: Vec<&str> = r
            .keys()
            .map(|(d, _)| if d.is_empty() { "ai.onnx" } else { *d })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect();
        format!(
            "no operators in this domain (domains: {})",
            domains.join(", ")
        )
    } else {
        ops.join(", ")
    }
}
