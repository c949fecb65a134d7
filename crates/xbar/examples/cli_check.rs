//! Runs the staged `pimkit xbar` subcommand (cli/xbar.rs, to become
//! crates/cli/src/cmd/xbar.rs) with small stand-ins for the CLI crate's helpers, so that the
//! subcommand is compiled and exercised here. Example:
//! `cargo run -p pimkit-xbar --example cli_check -- map zoo:rnc_mobilenet_v3_small --budget 1`

mod error {
    pub fn user(e: impl std::fmt::Display) -> anyhow::Error {
        anyhow::anyhow!("{e}")
    }
}

mod model {
    pub fn load_model_with(
        spec: &str,
        extra: &[(String, String)],
    ) -> anyhow::Result<pimkit_ir::Graph> {
        let rest = spec
            .strip_prefix("zoo:")
            .ok_or_else(|| anyhow::anyhow!("this stand-in loads zoo:NAME models only"))?;
        let (name, mut params) = pimkit_zoo::parse_spec(rest)?;
        params.extend(extra.iter().cloned());
        Ok(pimkit_zoo::build(&name, &params)?)
    }
    pub fn model_label(spec: &str) -> String {
        spec.strip_prefix("zoo:")
            .unwrap_or(spec)
            .replace(['?', '&', '=', '/'], "_")
    }
}

mod output {
    pub fn print_json<T: serde::Serialize>(v: &T) -> anyhow::Result<()> {
        println!("{}", serde_json::to_string_pretty(v)?);
        Ok(())
    }
}

#[path = "../cli/xbar.rs"]
mod xbar;

#[derive(clap::Parser)]
struct Cli {
    #[command(subcommand)]
    cmd: xbar::XbarCmd,
}

fn main() -> anyhow::Result<()> {
    use clap::Parser;
    xbar::run(Cli::parse().cmd)
}
