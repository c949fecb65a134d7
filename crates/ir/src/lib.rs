//! pimkit's graph IR: the one representation every engine reads.
//!
//! A [`Graph`] holds typed values and nodes in arenas (indexed by [`ValueId`] and
//! [`NodeId`]). Nodes are kept in topological order. Every op is a variant of the
//! closed [`Op`] enum, so a `match` over it in an engine is checked for completeness.
//! Shapes are static; constants may be shape-only (no data) so that huge models can be
//! mapped without allocating their weights.

mod control;
mod dtype;
mod dump;
mod einsum;
mod error;
mod flatten;
pub mod fsio;
mod graph;
mod infer;
mod infer_ext;
mod infer_shapes;
pub mod memory;
pub mod minifloat;
pub mod npy;
mod op;
mod op_ext;
pub mod operand;
mod resize;
mod stats;
mod tensor;
mod verify;

pub use dtype::DType;
pub use dump::{dump, subgraphs};
pub use einsum::{EinsumSpec, einsum_spec};
pub use error::{IrError, Result, at_offset, clip};
pub use flatten::{
    MAX_FLAT_NODES, control_inputs, flatten_control_flow, has_control_flow, into_static,
    require_static,
};
pub use graph::{Graph, Node, NodeId, Value, ValueDef, ValueId};
pub use infer::infer_types;
pub use infer_shapes::{broadcast_shapes, conv_output_hw, conv_transpose_output_hw};
pub use op::*;
pub use resize::{
    AxisTaps, resize_axis_is_identity, resize_axis_taps, resize_nearest_index, resize_source_coord,
};
pub use stats::{GraphStats, NodeCost, node_cost};
pub use tensor::{
    MAX_TENSOR_BYTES, Tensor, TensorData, TensorType, checked_bytes, code_to_f64, f64_to_code,
    numel, too_large,
};
pub use verify::verify;
