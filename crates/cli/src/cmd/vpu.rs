//! Placeholder owned by the vpu engine: replaced by its subcommands.

#[derive(clap::Subcommand, Debug)]
pub enum VpuCmd {}

pub fn run(c: VpuCmd) -> anyhow::Result<()> {
    match c {}
}
