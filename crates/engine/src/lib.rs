//! The seam between pimkit's engines and everything that drives them.
//!
//! Each engine (loops/offload, xbar, puma, vpu, nas, accuracy) implements [`Engine`]:
//! an architecture type loaded by the one [`arch`] loader, an options type, and
//! `run(&Graph, &Arch, &Options, &mut dyn Progress) -> Result<Output, EngineError>`.
//! The CLI, the HTML report and the Python package are loops over that trait: they parse
//! arguments into options, call `run`, and write the output (JSON through [`result_json`],
//! the report section through [`Engine::section`]). Whether a failure is the user's
//! (exit 2, `pimkit.InputError`) or a bug (exit 1, `pimkit.InternalError`) is decided by
//! the engine, in [`EngineError::kind`], never by the caller.

pub mod arch;
mod error;
pub mod jobs;
pub mod offload_rule;
mod progress;
mod result;

pub use arch::{ArchError, ArchSpec, Checks, HostArch};
pub use error::{EngineError, ErrorKind};
pub use pimkit_report::Section;
pub use progress::{NoProgress, Progress};
pub use result::{Headline, result_json};

use pimkit_ir::Graph;
use serde::Serialize;

/// One engine behind the common contract.
pub trait Engine {
    /// Short name: the JSON `engine` field and the report section's id ("xbar").
    const NAME: &'static str;
    /// The hardware description (an architecture TOML file).
    type Arch: ArchSpec;
    /// Everything else that steers a run (search and mapping settings, modes).
    type Options;
    /// The result; its JSON is the `--json` output and the Python return value.
    type Output: Serialize;

    /// Run the engine on a static graph (control flow flattened, shapes bound).
    fn run(
        g: &Graph,
        arch: &Self::Arch,
        opts: &Self::Options,
        progress: &mut dyn Progress,
    ) -> Result<Self::Output, EngineError>;

    /// The report section for this output (tables, plots, notes, JSON).
    fn section(out: &Self::Output) -> Section;

    /// The headline figures for the report's summary table (one row per engine).
    fn headline(out: &Self::Output) -> Headline;
}
