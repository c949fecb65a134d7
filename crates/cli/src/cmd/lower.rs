//! Placeholder owned by the loops engine: `pimkit lower` and `pimkit profile`.

#[derive(clap::Args, Debug)]
pub struct LowerArgs {
    pub model: String,
}

#[derive(clap::Args, Debug)]
pub struct ProfileArgs {
    pub model: String,
}

pub fn run_lower(_a: LowerArgs) -> anyhow::Result<()> {
    anyhow::bail!("pimkit lower is not available in this build")
}

pub fn run_profile(_a: ProfileArgs) -> anyhow::Result<()> {
    anyhow::bail!("pimkit profile is not available in this build")
}
