//! The CLI targets. `cli` parses a command line in-process with `pimkit`'s own clap
//! definitions (`pimkit_cli::parse`) and checks the usage error it would print. `cli-run`
//! also runs a command line that parses: in a child process (`pimkit-fuzz --as-pimkit
//! ARGS...`, the same `pimkit_cli::main` as the `pimkit` binary), in a fresh directory
//! holding small inputs, under an address-space limit and a timeout. The properties: no
//! panic or abort, exit status 0 or 2 (never 1 for user input), a first error line in
//! the one style, no file written outside the outputs the command line names, no
//! temporary left behind.

use crate::cli_args::{decode, specs};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How `cli-run` starts a child: the executable that answers `--as-pimkit`, and how long
/// a case may run before it is killed (and counted as slow, not as a crash).
pub struct RunConfig {
    pub exe: PathBuf,
    pub timeout: Duration,
}

static CONFIG: OnceLock<RunConfig> = OnceLock::new();

/// Set once, before `cli-run` runs (pimkit-fuzz's main and the smoke test do).
pub fn configure(c: RunConfig) {
    let _ = CONFIG.set(c);
}

/// The address space a child may use: large enough for every small model, small enough
/// that a huge tensor hits the limit (pimkit must then exit 2, not abort).
pub const CHILD_ADDRESS_SPACE: u64 = 8 << 30;

fn os_args(args: &[Vec<u8>]) -> Vec<OsString> {
    use std::os::unix::ffi::OsStringExt;
    args.iter().map(|a| OsString::from_vec(a.clone())).collect()
}

/// Check stderr of a failed command (exit 2): the first line that is not a note is
/// `pimkit: error: ...`, at most 300 chars, free of Rust debug output.
pub fn check_error_text(stderr: &str, args: &[Vec<u8>]) -> Result<(), String> {
    let first = stderr
        .lines()
        .find(|l| !l.starts_with("note: ") && !l.starts_with("warning: "))
        .unwrap_or("");
    if !first.starts_with("pimkit: error: ") {
        return Err(format!("first error line not in the style: {first:?}"));
    }
    if first.chars().count() > 300 {
        return Err(format!(
            "first error line of {} chars: {:?}...",
            first.chars().count(),
            first.chars().take(120).collect::<String>()
        ));
    }
    let given = args.iter().any(|a| {
        let a = String::from_utf8_lossy(a);
        ["Some(", "Record(", "Error {", "kind: ", "Os {"]
            .iter()
            .any(|d| a.contains(d))
    });
    for d in ["Some(", "Record(", "Error {", "kind: ", "Os {"] {
        if !given && stderr.contains(d) {
            return Err(format!("Rust debug output `{d}` in: {first:?}"));
        }
    }
    Ok(())
}

/// Target `cli`: parse in-process; a usage error must render in the one style.
pub fn parse(bytes: &[u8]) -> Result<(), String> {
    let args = decode(bytes);
    let argv = std::iter::once(OsString::from("pimkit")).chain(os_args(&args));
    match pimkit_cli::parse(argv) {
        Ok(()) => Ok(()),
        Err(e) => match pimkit_cli::usage_error(&e) {
            (_, 0) => Ok(()),
            (text, 2) => check_error_text(&text, &args),
            (_, c) => Err(format!("usage error with exit status {c}")),
        },
    }
}

/// True when every path the command line could name stays inside the case directory:
/// no absolute path, home or `../..` in any part (the harness runs as whoever runs it,
/// perhaps root; a fuzzed `-o /` must never be tried).
fn confined(args: &[Vec<u8>]) -> bool {
    args.iter().all(|a| {
        let a = String::from_utf8_lossy(a);
        !a.contains("../..")
            && a.split(['=', ',', '&', '?', ':', ';', ' '])
                .all(|p| !p.starts_with('/') && !p.starts_with('~') && p != "..")
            && !a.starts_with("zoo:/")
    })
}

/// The inputs every case can name (relative to its working directory `work/`).
fn make_case(root: &Path) -> std::io::Result<PathBuf> {
    let fx = crate::crate_dir().join("../cli/tests/fixtures");
    let work = root.join("work");
    let inp = work.join("in");
    std::fs::create_dir_all(&inp)?;
    std::fs::create_dir_all(root.join("tmp"))?;
    std::fs::create_dir_all(root.join("outside"))?;
    std::fs::write(root.join("outside/keep.txt"), b"not to be touched")?;
    std::fs::copy(fx.join("mlp.onnx"), inp.join("mlp.onnx"))?;
    std::fs::copy(fx.join("mlp_x.npy"), inp.join("mlp_x.npy"))?;
    std::fs::write(inp.join("bad.onnx"), b"\x08\x07garbage")?;
    std::fs::write(inp.join("empty"), b"")?;
    std::fs::write(inp.join("arch.toml"), b"[crossbar]\nrows = 64\n")?;
    // A calibration in the cache, so that offload does not measure the host every case.
    let cache = root.join("cache/pimkit");
    std::fs::create_dir_all(&cache)?;
    std::fs::write(cache.join("host.toml"), host_toml())?;
    Ok(work)
}

/// The host calibration of the reference machine as a cache file.
fn host_toml() -> String {
    format!(
        "# pimkit host calibration (the fuzz harness's reference values)\n{}",
        pimkit_offload::HostCalib::fixed_reference().to_toml()
    )
}

/// Every file under `dir` with its contents.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() && !p.is_symlink() {
                stack.push(p);
            } else {
                let b = std::fs::read(&p).unwrap_or_default();
                out.push((p, b));
            }
        }
    }
    out.sort();
    out
}

/// Target `cli-run`: [`parse`], then run what parses in a child process. A case that
/// runs past the timeout is killed and passes (the loop counts it as slow).
pub fn run(bytes: &[u8]) -> Result<(), String> {
    run_with(bytes, false)
}

/// [`run`] where running past the timeout is a failure: for the seeds and regressions,
/// whose work is small (a hang is a bug there).
pub fn run_strict(bytes: &[u8]) -> Result<(), String> {
    run_with(bytes, true)
}

fn run_with(bytes: &[u8], strict: bool) -> Result<(), String> {
    parse(bytes)?;
    let args = decode(bytes);
    let argv = std::iter::once(OsString::from("pimkit")).chain(os_args(&args));
    if pimkit_cli::parse(argv).is_err() || !confined(&args) {
        return Ok(());
    }
    let Some(cfg) = CONFIG.get() else {
        return Err("harness: cli-run is not configured (pimkit_fuzz::cli::configure)".into());
    };
    let root = tempfile::tempdir().map_err(|e| format!("harness: {e}"))?;
    let work = make_case(root.path()).map_err(|e| format!("harness: {e}"))?;
    let before = snapshot(root.path());
    let mut child = Command::new(&cfg.exe)
        .arg("--as-pimkit")
        .args(os_args(&args))
        .current_dir(&work)
        .env("XDG_CACHE_HOME", root.path().join("cache"))
        .env("HOME", root.path().join("home"))
        .env("TMPDIR", root.path().join("tmp"))
        .env_remove("PIMKIT_HOST_FILE")
        .env("RAYON_NUM_THREADS", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("harness: {}: {e}", cfg.exe.display()))?;
    let mut err_pipe = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        use std::io::Read;
        let mut s = Vec::new();
        let _ = err_pipe.read_to_end(&mut s);
        s
    });
    let t0 = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if t0.elapsed() > cfg.timeout => {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(format!("harness: {e}")),
        }
    };
    let stderr = String::from_utf8_lossy(&reader.join().unwrap_or_default()).to_string();
    let Some(status) = status else {
        if strict {
            return Err(format!("still running after {:?}", cfg.timeout));
        }
        // Too slow for a fuzz case (the loop counts it as slow); not a verdict.
        return Ok(());
    };
    let head = || stderr.lines().take(3).collect::<Vec<_>>().join(" | ");
    match status.code() {
        Some(0) => {}
        Some(2) => check_error_text(&stderr, &args)?,
        Some(c) => return Err(format!("exit status {c}: {}", head())),
        None => {
            use std::os::unix::process::ExitStatusExt;
            return Err(format!(
                "killed by signal {:?}: {}",
                status.signal(),
                head()
            ));
        }
    }
    check_writes(root.path(), &work, &args, &before)
}

/// Every file created or changed lies under a path the command line names (or a default
/// output of a flag) and no temporary is left.
fn check_writes(
    root: &Path,
    work: &Path,
    args: &[Vec<u8>],
    before: &[(PathBuf, Vec<u8>)],
) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let mut named: Vec<PathBuf> = vec![root.join("cache"), root.join("tmp")];
    for a in args {
        // Raw bytes: a path need not be UTF-8. The value of `--flag=VALUE` and `-oVALUE`
        // is whole (a path may hold `=`), and so is each part of `k=v`, `a,b`.
        let mut whole = vec![a.as_slice()];
        if let Some(v) = a.strip_prefix(b"--") {
            whole.extend(v.iter().position(|&b| b == b'=').map(|i| &v[i + 1..]));
        } else if a.len() > 2 && a[0] == b'-' {
            whole.push(&a[2..]);
        }
        let parts = a.split(|&b| b == b'=' || b == b',');
        for p in whole.into_iter().chain(parts) {
            if !p.is_empty() && p != b"." {
                named.push(normalize(&work.join(std::ffi::OsStr::from_bytes(p))));
            }
        }
    }
    named.extend(default_outputs().iter().map(|d| work.join(d)));
    for (p, b) in snapshot(root) {
        let unchanged = before.iter().any(|(q, c)| *q == p && *c == b);
        if unchanged {
            continue;
        }
        let name = p.file_name().unwrap_or_default().to_string_lossy();
        if name.contains(".tmp-") {
            return Err(format!("temporary left behind: {}", p.display()));
        }
        if !named.iter().any(|n| p.starts_with(n)) {
            let rel = p.strip_prefix(root).unwrap_or(&p);
            return Err(format!("wrote a file no argument names: {:?}", rel));
        }
    }
    Ok(())
}

/// `p` with `.` and `..` resolved by name (`work/../x` is `x` beside `work`).
fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c),
        }
    }
    out
}

/// The default values of every flag (a command with `-o` defaulting to `pimkit-report`
/// writes there without naming it).
fn default_outputs() -> &'static [String] {
    static D: OnceLock<Vec<String>> = OnceLock::new();
    D.get_or_init(|| {
        let mut c = pimkit_cli::command();
        c.build();
        let mut out = Vec::new();
        let mut stack = vec![c];
        while let Some(c) = stack.pop() {
            for a in c.get_arguments() {
                out.extend(
                    a.get_default_values()
                        .iter()
                        .map(|v| v.to_string_lossy().to_string())
                        .filter(|v| !v.is_empty() && v.parse::<f64>().is_err()),
                );
            }
            stack.extend(c.get_subcommands().cloned());
        }
        let _ = specs();
        out.sort();
        out.dedup();
        out
    })
}
