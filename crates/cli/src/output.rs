//! Printing helpers shared by the subcommands.

use serde::Serialize;

/// Print a value as pretty JSON on stdout.
pub fn print_json<T: Serialize>(v: &T) -> anyhow::Result<()> {
    println!("{}", serde_json::to_string_pretty(v)?);
    Ok(())
}

/// `make()` styled with `template`, or a hidden bar when stderr is not a terminal (pipes
/// and scripts get no progress output).
fn on_terminal(
    make: impl FnOnce() -> indicatif::ProgressBar,
    template: &str,
    fallback: fn() -> indicatif::ProgressStyle,
) -> indicatif::ProgressBar {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let pb = make();
    pb.set_style(indicatif::ProgressStyle::with_template(template).unwrap_or_else(|_| fallback()));
    pb
}

/// A progress bar on stderr, hidden when stderr is not a terminal.
pub fn progress(len: u64, msg: &str) -> indicatif::ProgressBar {
    let pb = on_terminal(
        || indicatif::ProgressBar::new(len),
        "{msg:24} [{bar:30}] {pos}/{len} {elapsed}",
        indicatif::ProgressStyle::default_bar,
    );
    pb.set_message(msg.to_string());
    pb
}

/// A spinner on stderr for work whose length is not known in advance (it counts items
/// and shows the latest); hidden when stderr is not a terminal.
pub fn spinner(msg: &str) -> indicatif::ProgressBar {
    let pb = on_terminal(
        indicatif::ProgressBar::new_spinner,
        "{spinner} {prefix}: {pos} done, {msg} {elapsed}",
        indicatif::ProgressStyle::default_spinner,
    );
    pb.set_prefix(msg.to_string());
    if !pb.is_hidden() {
        pb.enable_steady_tick(std::time::Duration::from_millis(200));
    }
    pb
}

/// [`pimkit_report::create_out_dir`] with the option's name in front of its error.
pub fn create_out_dir(dir: &std::path::Path, option: &str) -> anyhow::Result<()> {
    pimkit_report::create_out_dir(dir).map_err(|e| crate::error::user(format!("{option}: {e}")))
}

/// Write `bytes` to `path` atomically (a temporary file renamed into place), the error
/// naming the file.
pub fn write_file_atomic(path: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    pimkit_ir::fsio::write_atomic(path, bytes)
        .map_err(|e| crate::error::user(format!("cannot write {}: {e}", path.display())))
}

/// Write each tensor as `DIR/<sanitized output name>.npy`; names that collide after
/// sanitizing get `-2`, `-3`, ... (a note says which). Returns the file of each output.
pub fn write_outputs(
    dir: &std::path::Path,
    names: &[String],
    tensors: &[pimkit_ir::Tensor],
) -> anyhow::Result<Vec<std::path::PathBuf>> {
    let stems = pimkit_ir::fsio::output_file_stems(names);
    let mut files = Vec::with_capacity(names.len());
    for ((name, stem), t) in names.iter().zip(&stems).zip(tensors) {
        if *stem != pimkit_ir::fsio::sanitize(name) {
            eprintln!(
                "note: output '{name}' written as {stem}.npy (another output's name sanitizes to the same file)"
            );
        }
        let p = dir.join(format!("{stem}.npy"));
        pimkit_ir::npy::write_npy(&p, t).map_err(crate::error::user)?;
        files.push(p);
    }
    Ok(files)
}
