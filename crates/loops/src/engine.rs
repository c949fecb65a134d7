//! The loops engine behind the common contract ([`pimkit_engine::Engine`]): lower a model
//! to loop nests (the Torch-PIM candidate space) and, when asked, time every nest natively
//! on this host. `pimkit lower`/`profile`, the report and the Python package go through
//! [`Loops::run`]. It has no hardware file: it runs on this host ([`HostArch`]).

use crate::error::LoopsError;
use crate::ir::Program;
use crate::profile::{Profile, ProfileOptions, profile_with_progress};
use crate::records::{LowerReport, report};
use crate::{LowerOptions, lower_with};
use pimkit_engine::{EngineError, Headline, HostArch, Progress, Section};
use pimkit_ir::Graph;
use serde::{Serialize, Serializer};

/// The loops engine.
pub struct Loops;

/// Lowering choices, and the native timing to run (none: lower only).
#[derive(Clone, Debug, Default)]
pub struct LoopsOptions {
    pub lower: LowerOptions,
    pub profile: Option<ProfileOptions>,
}

/// The lowered program and its per-nest timings when profiled. Its JSON is
/// [`LowerReport`]'s (the `lower --json` / `profile --json` layout).
pub struct LoopsOutput {
    pub program: Program,
    pub profile: Option<Profile>,
}

impl LoopsOutput {
    pub fn report(&self) -> LowerReport {
        report(&self.program, self.profile.as_ref())
    }
}

impl Serialize for LoopsOutput {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.report().serialize(s)
    }
}

/// Whose fault a loops error is: what the model or the setup can fix is the user's
/// (unsupported op, malformed node, no C compiler, bad input); the rest is pimkit's.
pub fn engine_error(e: LoopsError) -> EngineError {
    match e {
        LoopsError::Unsupported { .. }
        | LoopsError::Node { .. }
        | LoopsError::CompilerMissing { .. }
        | LoopsError::Input(_) => EngineError::input(e),
        LoopsError::CompilerFailed { .. }
        | LoopsError::Load { .. }
        | LoopsError::Codegen { .. }
        | LoopsError::Io { .. } => EngineError::internal(e),
    }
}

impl pimkit_engine::Engine for Loops {
    const NAME: &'static str = "loops";
    type Arch = HostArch;
    type Options = LoopsOptions;
    type Output = LoopsOutput;

    fn run(
        g: &Graph,
        _: &HostArch,
        opts: &LoopsOptions,
        progress: &mut dyn Progress,
    ) -> Result<LoopsOutput, EngineError> {
        progress.step(0, 0, "lower");
        let program = lower_with(g, &opts.lower).map_err(engine_error)?;
        // Profiling reports every nest of every run (compile first).
        let profile = match &opts.profile {
            Some(o) => Some(
                profile_with_progress(&program, o, &mut |d, t, w| progress.step(d, t, w))
                    .map_err(engine_error)?,
            ),
            None => None,
        };
        Ok(LoopsOutput { program, profile })
    }

    fn section(out: &LoopsOutput) -> Section {
        crate::report_section(&out.program, out.profile.as_ref())
    }

    fn headline(out: &LoopsOutput) -> Headline {
        let h = Headline::default().with("nests", out.program.nests.len().to_string());
        match &out.profile {
            Some(p) => h.with("host time", format!("{:.3} ms", p.total_ns / 1e6)),
            None => h,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimkit_engine::Engine;

    #[test]
    fn lowering_through_the_contract_matches_the_library() {
        let g = pimkit_zoo::build("softmax", &[("n".into(), "64".into())]).unwrap();
        let out = Loops::run(
            &g,
            &HostArch {},
            &LoopsOptions::default(),
            &mut pimkit_engine::NoProgress,
        )
        .unwrap();
        let direct = crate::lower(&g).unwrap();
        assert_eq!(out.report(), report(&direct, None));
        let h = Loops::headline(&out);
        assert_eq!(h.figures[0].1, direct.nests.len().to_string());
    }

    #[test]
    fn an_unsupported_op_is_the_users_and_a_compiler_crash_is_not() {
        let u = LoopsError::Unsupported {
            node: "n".into(),
            op: "X".into(),
            msg: "m".into(),
        };
        assert_eq!(engine_error(u).exit_code(), 2);
        let c = LoopsError::Codegen {
            nest: 0,
            msg: "m".into(),
        };
        assert_eq!(engine_error(c).exit_code(), 1);
    }
}
