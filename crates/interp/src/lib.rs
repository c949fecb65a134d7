//! pimkit's reference interpreter: the one implementation of op semantics every engine
//! is checked against.
//!
//! * Float ops compute in f32 as onnxruntime does (f16 tensors are widened to f32,
//!   computed, and rounded back).
//! * Quantized ops are bit-exact with onnxruntime's CPU kernels: int32 accumulation with
//!   wrap-around, then [`quant::requant_f32`] (f32 multiply, round half to even).
//! * Nothing panics on user input: missing or mistyped inputs, shape-only constants and
//!   unsupported attribute combinations are [`InterpError`]s that name what is wrong.
//!
//! ```
//! use pimkit_ir::{DType, Graph, Op, Tensor, TensorType, UnaryOp};
//! use std::collections::HashMap;
//! let mut g = Graph::new("relu");
//! let x = g.add_input("x", TensorType::new(DType::F32, vec![3]));
//! let y = g.op("y", Op::Unary(UnaryOp::Relu), &[x]).unwrap();
//! g.outputs.push(y);
//! let inputs = HashMap::from([("x".to_string(), Tensor::from_f32(vec![3], vec![-1.0, 0.0, 2.0]))]);
//! let out = pimkit_interp::run(&g, &inputs).unwrap();
//! assert_eq!(out[0].as_f32().unwrap(), &[0.0, 0.0, 2.0]);
//! ```

#[doc(hidden)]
pub mod bench_api;
mod elem;
mod erf;
mod error;
mod exec;
mod kernels;
mod ops;
mod ort_kernels;
mod prepared;
pub mod quant;
mod random;
mod threads;

pub use error::InterpError;
pub use exec::{Substitute, eval_node, run, run_observed, run_substituted};
pub use kernels::isa_name;
pub use ops::elementwise::sigmoid_f32;
pub use ort_kernels::{
    OrtKernels, exact_products_active, ort_kernels, set_ort_kernels, with_exact_products,
};
pub use prepared::Session;
pub use random::{check_memory, min_run_bytes, random_inputs};

/// The output extent of an op whose output size depends on its input data (NonZero,
/// Unique, Compress, NonMaxSuppression: the `count` attribute) for these constant
/// inputs, computed by the op's own kernel. The importer uses it to give such ops a
/// static shape when their inputs are constants.
pub fn data_dependent_count(
    op: &pimkit_ir::Op,
    inputs: &[Option<&pimkit_ir::Tensor>],
) -> Result<usize, String> {
    ops::data_dependent_count(op, inputs).map_err(|e| match e {
        error::OpError::Unsupported(m) | error::OpError::Invalid(m) => m,
    })
}
pub use threads::{set_threads, threads};
