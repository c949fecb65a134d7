//! Command lines as fuzz inputs: the byte format (one argument per line), the real
//! subcommands and flags taken from clap's `Command` (never a second list), and a
//! structure-aware mutator that builds command lines from them with hostile values.

use rand::RngExt;
use rand_pcg::Pcg64;
use std::sync::OnceLock;

/// One argument per line. In an argument, `\n`, `\t`, `\\` and `\xHH` (any byte, so
/// invalid UTF-8 too) are escapes; a NUL byte (which no argv can hold) is dropped.
pub fn decode(bytes: &[u8]) -> Vec<Vec<u8>> {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() {
        return vec![];
    }
    bytes.split(|&b| b == b'\n').map(unescape).collect()
}

fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        let next = s.get(i + 1).copied();
        let hex = |j: usize| {
            s.get(j..j + 2)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        };
        let (byte, used) = match (b, next) {
            (b'\\', Some(b'n')) => (Some(b'\n'), 2),
            (b'\\', Some(b't')) => (Some(b'\t'), 2),
            (b'\\', Some(b'\\')) => (Some(b'\\'), 2),
            (b'\\', Some(b'x')) if hex(i + 2).is_some() => (hex(i + 2), 4),
            _ => (Some(b), 1),
        };
        out.extend(byte);
        i += used;
    }
    out.retain(|&b| b != 0);
    out
}

/// The inverse of [`decode`].
pub fn encode(args: &[Vec<u8>]) -> Vec<u8> {
    let mut out = Vec::new();
    for a in args {
        for &b in a {
            match b {
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\t' => out.extend_from_slice(b"\\t"),
                b'\\' => out.extend_from_slice(b"\\\\"),
                0x20..=0x7e => out.push(b),
                _ if b >= 0x80 => out.push(b),
                _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
            }
        }
        out.push(b'\n');
    }
    out
}

/// A flag or positional of a subcommand, as clap defines it.
#[derive(Debug, Clone)]
pub struct Flag {
    pub id: String,
    pub long: Option<String>,
    pub short: Option<char>,
    pub takes_value: bool,
    pub possible: Vec<String>,
}

/// A leaf subcommand (`["xbar", "map"]`) with its flags (globals included) and positionals.
#[derive(Debug, Clone)]
pub struct Spec {
    pub path: Vec<String>,
    pub flags: Vec<Flag>,
    pub positionals: Vec<Flag>,
}

/// Every leaf subcommand of `pimkit`, from `pimkit_cli::command()`.
pub fn specs() -> &'static [Spec] {
    static SPECS: OnceLock<Vec<Spec>> = OnceLock::new();
    SPECS.get_or_init(|| {
        let mut c = pimkit_cli::command();
        c.build(); // propagates the global flags into every subcommand
        let mut out = Vec::new();
        walk(&c, &mut vec![], &mut out);
        out
    })
}

fn walk(c: &clap::Command, path: &mut Vec<String>, out: &mut Vec<Spec>) {
    let subs: Vec<&clap::Command> = c.get_subcommands().collect();
    if subs.is_empty() && !path.is_empty() {
        let flag = |a: &clap::Arg| Flag {
            id: a.get_id().as_str().to_string(),
            long: a.get_long().map(str::to_string),
            short: a.get_short(),
            takes_value: a.get_action().takes_values(),
            possible: a
                .get_possible_values()
                .iter()
                .map(|p| p.get_name().to_string())
                .collect(),
        };
        out.push(Spec {
            path: path.clone(),
            flags: c
                .get_arguments()
                .filter(|a| !a.is_positional())
                .map(flag)
                .collect(),
            positionals: c.get_positionals().map(flag).collect(),
        });
    }
    for s in subs {
        path.push(s.get_name().to_string());
        walk(s, path, out);
        path.pop();
    }
}

/// The spec whose path the command line starts with (the longest such).
pub fn spec_of(args: &[Vec<u8>]) -> Option<&'static Spec> {
    specs()
        .iter()
        .filter(|s| {
            s.path.len() <= args.len() && s.path.iter().zip(args).all(|(p, a)| p.as_bytes() == a)
        })
        .max_by_key(|s| s.path.len())
}

/// Numbers at the edges: zero, negatives, overflow, NaN, exponents, other scripts' digits.
const NUMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "8",
    "-1",
    "1000",
    "1001",
    "65536",
    "4294967296",
    "9223372036854775807",
    "18446744073709551616",
    "-9223372036854775808",
    "1e308",
    "1.8e19",
    "-0",
    "0.5",
    "1e-300",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "0x10",
    "1_000",
    " 1",
    "+1",
    "١",
    "１",
    "",
];

/// Strings: empty, separators, long, odd unicode (right-to-left override, emoji,
/// combining marks), newlines, format specifiers, things that look like flags.
const STRINGS: &[&str] = &[
    "",
    " ",
    "x",
    "a=b",
    "=",
    "==",
    "é",
    "\u{202e}gnp.x",
    "💥",
    "e\u{301}\u{301}\u{301}",
    "a\nb",
    "%s%n{}",
    "-",
    "--",
    "-x",
    "--help",
    "\u{feff}",
    "a,b,,",
    "?",
    "&",
];

/// Paths inside the case's working directory (`in/` holds the inputs; see cli.rs).
const PATHS: &[&str] = &[
    "in/mlp.onnx",
    "in/mlp_x.npy",
    "in/bad.onnx",
    "in/empty",
    "in/arch.toml",
    "in",
    "missing.onnx",
    "missing/dir/x.npy",
    "out",
    "out/sub/deep",
    "in/mlp.onnx/x",
    ".",
    "..",
    "../outside",
    "out.onnx",
    "out.npy",
    "",
];

/// Small models that run fast, plus odd zoo specs.
const MODELS: &[&str] = &[
    "in/mlp.onnx",
    "zoo:mlp?n=4",
    "zoo:matmul?n=8",
    "zoo:softmax?n=8",
    "zoo:",
    "zoo:nosuch",
    "zoo:mlp?",
    "zoo:mlp?n=4&n=5",
    "zoo:mlp?n",
    "zoo:mlp?=4",
    "zoo:mlp?n=4&&",
    "zoo:mlp?seed=-1",
    "zoo:matmul?n=40000",
];

fn pick<'a>(rng: &mut Pcg64, v: &[&'a str]) -> &'a str {
    v[rng.random_range(0..v.len())]
}

/// `zoo:NAME?k=v&...` with a real entry's parameters, mostly small values.
fn zoo_spec(rng: &mut Pcg64) -> String {
    static ENTRIES: OnceLock<Vec<pimkit_zoo::Entry>> = OnceLock::new();
    let es = ENTRIES.get_or_init(pimkit_zoo::entries);
    let e = &es[rng.random_range(0..es.len())];
    let mut s = format!("zoo:{}", e.name);
    let k = rng.random_range(0..=e.params.len().min(3));
    for i in 0..k {
        let p = &e.params[rng.random_range(0..e.params.len())];
        let v = if rng.random_bool(0.7) {
            pick(rng, &["1", "2", "4", "8"]).to_string()
        } else {
            pick(rng, NUMBERS).to_string()
        };
        s.push(if i == 0 { '?' } else { '&' });
        s.push_str(&format!("{}={v}", p.name));
    }
    s
}

/// A value for `f`: one of its possible values most of the time when it has them, else
/// a pool chosen by its name.
fn value(rng: &mut Pcg64, f: &Flag) -> String {
    if !f.possible.is_empty() && rng.random_bool(0.7) {
        return f.possible[rng.random_range(0..f.possible.len())].clone();
    }
    if rng.random_bool(0.1) {
        return "x".repeat(rng.random_range(200..3000));
    }
    let id = f.id.as_str();
    match id {
        "model" | "name" => {
            if rng.random_bool(0.5) {
                zoo_spec(rng)
            } else {
                pick(rng, MODELS).to_string()
            }
        }
        "dims" | "shapes" | "binds" | "params" | "sweep" => {
            let k = pick(rng, &["x", "n", "N", "", "batch", "input"]);
            let v = match rng.random_range(0..3) {
                0 => pick(rng, NUMBERS).to_string(),
                1 => pick(
                    rng,
                    &["1x4", "1x", "x", "scalar", "0x0", "99999999999x99999999"],
                )
                .to_string(),
                _ => pick(rng, PATHS).to_string(),
            };
            format!("{k}={v}")
        }
        _ if id.contains("out")
            || id.contains("path")
            || id.contains("arch")
            || id.contains("input")
            || id.contains("dir")
            || id.contains("emit")
            || id.contains("host")
            || id.contains("calib")
            || id.contains("labels")
            || id.contains("files") =>
        {
            pick(rng, PATHS).to_string()
        }
        _ => match rng.random_range(0..4) {
            0..=1 => pick(rng, NUMBERS).to_string(),
            2 => format!("{},{}", pick(rng, NUMBERS), pick(rng, NUMBERS)),
            _ => pick(rng, STRINGS).to_string(),
        },
    }
}

/// `f` as it appears on a command line: `--long VALUE`, `--long=VALUE`, `-s VALUE`.
fn flag_args(rng: &mut Pcg64, f: &Flag) -> Vec<String> {
    let name = match (&f.long, f.short) {
        (Some(l), Some(s)) => {
            if rng.random_bool(0.5) {
                format!("--{l}")
            } else {
                format!("-{s}")
            }
        }
        (Some(l), None) => format!("--{l}"),
        (None, Some(s)) => format!("-{s}"),
        (None, None) => return vec![],
    };
    if !f.takes_value {
        return vec![name];
    }
    let v = value(rng, f);
    if name.starts_with("--") && rng.random_bool(0.3) {
        vec![format!("{name}={v}")]
    } else {
        vec![name, v]
    }
}

/// A fresh command line for a random subcommand: its positionals and a few flags.
fn fresh(rng: &mut Pcg64) -> Vec<String> {
    let s = &specs()[rng.random_range(0..specs().len())];
    let mut a = s.path.clone();
    for p in &s.positionals {
        if rng.random_bool(0.9) {
            a.push(value(rng, p));
        }
    }
    for _ in 0..rng.random_range(0..4) {
        if !s.flags.is_empty() {
            let f = &s.flags[rng.random_range(0..s.flags.len())];
            a.extend(flag_args(rng, f));
        }
    }
    a
}

/// Structure-aware mutation of an encoded command line (see [`decode`]).
pub fn mutate(rng: &mut Pcg64, input: &[u8]) -> Option<Vec<u8>> {
    let mut args = decode(input);
    for _ in 0..rng.random_range(1..=3) {
        edit(rng, &mut args);
    }
    Some(encode(&args))
}

fn edit(rng: &mut Pcg64, args: &mut Vec<Vec<u8>>) {
    let spec = spec_of(args);
    let fixed = spec.map_or(0, |s| s.path.len());
    let n = args.len();
    let b = |s: String| s.into_bytes();
    match rng.random_range(0..8) {
        0 => *args = fresh(rng).into_iter().map(b).collect(),
        1 => {
            // A flag of this subcommand (or of another one: clap must reject it cleanly).
            let s = match spec {
                Some(s) if rng.random_bool(0.9) => s,
                _ => &specs()[rng.random_range(0..specs().len())],
            };
            if !s.flags.is_empty() {
                let f = &s.flags[rng.random_range(0..s.flags.len())];
                let at = rng.random_range(fixed.min(n)..=n);
                let new: Vec<Vec<u8>> = flag_args(rng, f).into_iter().map(b).collect();
                args.splice(at..at, new);
            }
        }
        2 if n > fixed => {
            // Another value in place of an argument: whatever the flag before it is.
            let i = rng.random_range(fixed..n);
            let f = spec
                .and_then(|s| {
                    let prev = String::from_utf8_lossy(args.get(i.wrapping_sub(1))?).to_string();
                    s.flags
                        .iter()
                        .find(|f| f.long.as_ref().is_some_and(|l| prev == format!("--{l}")))
                        .cloned()
                })
                .unwrap_or_else(|| Flag {
                    id: ["model", "out", "value"][rng.random_range(0..3)].to_string(),
                    long: None,
                    short: None,
                    takes_value: true,
                    possible: vec![],
                });
            args[i] = b(value(rng, &f));
        }
        3 if n > 0 => {
            args.remove(rng.random_range(0..n));
        }
        4 if n > 0 => {
            let i = rng.random_range(0..n);
            let a = args[i].clone();
            args.insert(rng.random_range(0..=n), a);
        }
        5 => {
            // The same arguments under another subcommand.
            let s = &specs()[rng.random_range(0..specs().len())];
            args.splice(0..fixed.min(n), s.path.iter().cloned().map(b));
        }
        6 if n > fixed => {
            // Digits in an argument replaced by an edge number.
            let i = rng.random_range(fixed..n);
            let s = String::from_utf8_lossy(&args[i]).to_string();
            if let Some(p) = s.find(|c: char| c.is_ascii_digit()) {
                let end = s[p..]
                    .find(|c: char| !c.is_ascii_digit())
                    .map_or(s.len(), |e| p + e);
                args[i] = b(format!("{}{}{}", &s[..p], pick(rng, NUMBERS), &s[end..]));
            }
        }
        _ => {
            // A global flag anywhere, or a stray argument.
            let g = pick(
                rng,
                &[
                    "--threads",
                    "--ort-kernels",
                    "--json",
                    "--help",
                    "-V",
                    "extra",
                ],
            );
            let at = rng.random_range(0..=n);
            args.insert(at, b(g.to_string()));
            if g == "--threads" || g == "--ort-kernels" {
                let v = pick(rng, &["1", "0", "64", "100000", "-1", "avx2", "bogus", ""]);
                args.insert(at + 1, b(v.to_string()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_decode_round_trip() {
        let a = vec![
            b"exec".to_vec(),
            b"a\nb\\x\t".to_vec(),
            vec![0xff, 0x01, b'z'],
            vec![],
        ];
        assert_eq!(decode(&encode(&a)), a);
    }

    #[test]
    fn specs_come_from_clap() {
        let s = specs();
        assert!(s.iter().any(|s| s.path == ["xbar", "map"]));
        let exec = s.iter().find(|s| s.path == ["exec"]).unwrap();
        // Global flags are propagated into every subcommand.
        assert!(
            exec.flags
                .iter()
                .any(|f| f.long.as_deref() == Some("threads"))
        );
        assert!(exec.positionals.iter().any(|f| f.id == "model"));
    }
}
