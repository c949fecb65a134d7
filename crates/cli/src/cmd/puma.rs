//! Placeholder owned by the puma engine: replaced by its subcommands.

#[derive(clap::Subcommand, Debug)]
pub enum PumaCmd {}

pub fn run(c: PumaCmd) -> anyhow::Result<()> {
    match c {}
}
