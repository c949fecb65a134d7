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
mod contrib;
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
mod window;

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
    // onnxruntime's contrib ops (issue #35).
    contrib::register(&mut r);
    r
}

/// What the registry supports in `domain`, for the unknown op `op`: the count and the
/// most similar names (the full list is in docs/onnx.md; a 190-name list would bury the
/// error).
pub(crate) fn supported_in(
    r: &BTreeMap<(&'static str, &'static str), Converter>,
    domain: &str,
    op: &str,
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
        return format!(
            "no operators in this domain (domains: {})",
            domains.join(", ")
        );
    }
    let low = op.to_lowercase();
    let mut near: Vec<(usize, &str)> = ops
        .iter()
        .map(|o| (edit_distance(&low, &o.to_lowercase()), *o))
        .filter(|&(d, _)| d <= (op.len() / 3).max(2))
        .collect();
    near.sort();
    let near: Vec<&str> = near.iter().take(3).map(|&(_, o)| o).collect();
    let similar = if near.is_empty() {
        String::new()
    } else {
        format!(" (similar: {})", near.join(", "))
    };
    format!("{} other operators in this domain{similar}", ops.len())
}

/// Levenshtein distance (op names are short).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, &cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
