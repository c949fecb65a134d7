#[derive(clap::Args, Debug)]
pub struct Args {
    /// Path to an .onnx file or zoo:NAME[?k=v&...]
    pub model: String,
    #[command(flatten)]
    pub load: crate::model::LoadArgs,
}

pub fn run(a: Args) -> anyhow::Result<()> {
    let g = crate::model::load_model_full(&a.model, &[], &a.load, &[])?;
    print!("{}", pimkit_ir::dump(&g));
    Ok(())
}
