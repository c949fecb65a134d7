//! A weight-replication plan (`--replicate`): how many copies of each weighted layer's
//! crossbars the compiler places, under which MVMU budget. Plain data, shared by the
//! compiler (compile::replicate builds it), the program and the results.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// One weighted layer of the plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerPlan {
    pub node: String,
    /// Matrix-vector products per inference.
    pub vectors: usize,
    pub mvmus_per_copy: usize,
    pub copies: usize,
    /// Estimated MVM cycles of the layer's stage: ⌈vectors / copies⌉ · MVM latency.
    pub stage_cycles: u64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    pub budget_mvmus: usize,
    pub mvmus: usize,
    pub layers: Vec<LayerPlan>,
}

impl Plan {
    pub fn replicas(&self) -> HashMap<String, usize> {
        self.layers
            .iter()
            .map(|l| (l.node.clone(), l.copies))
            .collect()
    }
}
