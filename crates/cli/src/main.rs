//! `pimkit`: the command line. Everything lives in the library (src/lib.rs), so that the
//! fuzz crate drives the same argument parsing and dispatch (crates/fuzz, target `cli`).

fn main() -> std::process::ExitCode {
    pimkit_cli::main(std::env::args_os())
}
