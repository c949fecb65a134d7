//! What pimkit's front ends share above the engines. The CLI (crates/cli) and the Python
//! package (crates/python) parse their arguments their own way, then call these:
//! [`model::load`] turns a model as the user names it (an `.onnx` path or `zoo:NAME?k=v`,
//! with the dims, shapes and bindings that fix what a file leaves open) into a graph,
//! [`info::info`] gives its facts, and [`report::build`] runs every engine on it and
//! assembles the HTML/JSON report. Nothing here prints: notes and progress are returned
//! or reported through callbacks.

pub mod info;
pub mod llm;
pub mod model;
pub mod report;
pub mod samples;

pub use model::{LoadError, load, load_static, model_label};
