//! Placeholder owned by the xbar engine: replaced by its subcommands.

#[derive(clap::Subcommand, Debug)]
pub enum XbarCmd {}

pub fn run(c: XbarCmd) -> anyhow::Result<()> {
    match c {}
}
