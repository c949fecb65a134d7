#[derive(clap::Args, Debug)]
pub struct Args {
    /// Path to an .onnx file or zoo:NAME[?k=v&...]
    pub model: String,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let g = crate::model::load_model(&a.model)?;
    print!("{}", pimkit_ir::dump(&g));
    Ok(())
}
