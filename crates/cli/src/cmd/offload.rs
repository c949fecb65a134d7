//! Placeholder owned by the offload engine: `pimkit offload` and `pimkit calibrate`.

#[derive(clap::Args, Debug)]
pub struct OffloadArgs {
    pub model: String,
}

#[derive(clap::Args, Debug)]
pub struct CalibrateArgs {}

pub fn run_offload(_a: OffloadArgs) -> anyhow::Result<()> {
    anyhow::bail!("pimkit offload is not available in this build")
}

pub fn run_calibrate(_a: CalibrateArgs) -> anyhow::Result<()> {
    anyhow::bail!("pimkit calibrate is not available in this build")
}
