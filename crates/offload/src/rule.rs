//! The two-stage offload rule lives in the contract crate, shared with the LLM engine's
//! `torch-pim` policy.
pub use pimkit_engine::offload_rule::*;
