//! The command-line front end lives in the `pimkit` binary (crates/cli/src/cmd/offload.rs);
//! this module only re-exports what it needs.
pub use crate::counters::CounterMode;
pub use crate::plan::Granularity;
