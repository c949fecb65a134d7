//! `cargo run -p xtask -- proto`: regenerate crates/onnx/src/generated/onnx.rs from the
//! vendored crates/onnx/proto/onnx.proto with protox (a pure-Rust protoc), so normal
//! builds need neither protoc nor a build script.

use anyhow::{Context, Result, bail};
use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the workspace")
        .to_path_buf()
}

fn proto() -> Result<()> {
    let dir = root().join("crates/onnx");
    let fds = protox::compile([dir.join("proto/onnx.proto")], [dir.join("proto")])
        .context("compiling onnx.proto with protox")?;
    let out = dir.join("src/generated");
    std::fs::create_dir_all(&out)?;
    prost_build::Config::new()
        .out_dir(&out)
        .compile_fds(fds)
        .context("generating Rust code")?;
    println!("wrote {}", out.join("onnx.rs").display());
    Ok(())
}

fn main() -> Result<()> {
    match std::env::args().nth(1).as_deref() {
        Some("proto") => proto(),
        other => bail!("unknown task {other:?}; tasks: proto"),
    }
}
