//! `cargo run -p pimkit-loops --example dump -- NAME [k=v ...] [--c]`: print a zoo
//! entry's lowered program (or its C source).
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().ok_or("usage: dump NAME [k=v ...] [--c]")?;
    let params: Vec<(String, String)> = args[1..]
        .iter()
        .filter_map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let g = pimkit_zoo::build(name, &params)?;
    let p = pimkit_loops::lower(&g)?;
    if args.iter().any(|a| a == "--c") {
        print!("{}", pimkit_loops::codegen::emit_c(&p)?);
    } else {
        print!("{}", p.dump());
    }
    Ok(())
}
