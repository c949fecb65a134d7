//! `--jobs N` runs independent items (sweep points, NAS candidates, sweep sizes) N at a
//! time: every output must be the same as with `--jobs 1`, byte for byte (stdout and the
//! files written), whatever order the items finish in. Each command runs on small inputs
//! (quick sweeps, a tiny NAS) so that the test takes seconds in debug builds.

use std::path::Path;
use std::process::{Command, Output};

fn pimkit(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pimkit"))
        .args(args)
        .output()
        .expect("run pimkit")
}

fn ok(o: Output) -> Output {
    assert!(
        o.status.success(),
        "exit {:?}: {}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// Every file under `dir` (relative name, contents), sorted by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = vec![];
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                let name = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((name, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Run `args` (with `{out}` replaced by a fresh directory) under `--jobs 1` and
/// `--jobs 2`; assert equal stdout (the directory's name aside) and equal files; return
/// the `--jobs 1` stdout.
fn same_with_1_and_2_jobs(args: &[&str], want_files: &[&str]) -> String {
    let run = |jobs: &str| {
        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("out");
        let out = out.to_str().unwrap();
        let mut a = vec!["--jobs", jobs];
        a.extend(args.iter().map(|s| if *s == "{out}" { out } else { s }));
        let o = ok(pimkit(&a));
        let fs = if args.contains(&"{out}") {
            files(Path::new(out))
        } else {
            vec![]
        };
        // "wrote DIR/..." lines name the (different) temporary directories.
        let stdout = String::from_utf8(o.stdout).unwrap().replace(out, "{out}");
        (stdout, fs)
    };
    let (one, two) = (run("1"), run("2"));
    assert_eq!(one.0, two.0, "stdout of {args:?}");
    let names: Vec<&str> = one.1.iter().map(|(n, _)| n.as_str()).collect();
    for f in want_files {
        assert!(names.contains(f), "{f} not written by {args:?}: {names:?}");
    }
    assert_eq!(one.1.len(), two.1.len(), "{args:?}");
    for ((n1, b1), (n2, b2)) in one.1.iter().zip(&two.1) {
        assert_eq!(n1, n2);
        assert!(
            b1 == b2,
            "{n1} differs between --jobs 1 and --jobs 2 ({args:?})"
        );
    }
    one.0
}

#[test]
fn xbar_sweep_is_the_same_with_1_and_2_jobs() {
    let json = same_with_1_and_2_jobs(
        &[
            "xbar",
            "sweep",
            "zoo:lenet5",
            "--budgets",
            "0.5,1,1.8",
            "--sdw",
            "1,5",
            "--samples",
            "1,8,64",
            "--json",
            "-o",
            "{out}",
        ],
        &["sweep.csv", "sweep.json", "speedup.svg", "sdw.svg"],
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    // 3 budgets x 2 S_DW x 3 sample counts, in grid order.
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 18);
    let key = |r: &serde_json::Value| (r["budget"].as_f64().unwrap(), r["sdw"].as_u64().unwrap());
    assert_eq!(key(&rows[0]), (0.5, 1));
    assert_eq!(key(&rows[17]), (1.8, 5));
}

#[test]
fn xbar_nas_front_is_the_same_with_1_and_2_jobs() {
    same_with_1_and_2_jobs(
        &[
            "xbar", "nas", "--pop", "6", "--gens", "2", "--seed", "3", "-o", "{out}",
        ],
        &["front.csv", "summary.csv", "front.json", "front.svg"],
    );
}

#[test]
fn vpu_roofline_and_table3_are_the_same_with_1_and_2_jobs() {
    let json = same_with_1_and_2_jobs(
        &[
            "vpu",
            "roofline",
            "--quick",
            "--kernel",
            "matmul",
            "--kernel",
            "depthwise",
            "--kernel",
            "arch",
            "--json",
            "-o",
            "{out}",
        ],
        &["matmul.csv", "depthwise.csv", "arch.csv"],
    );
    let pts: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert!(pts.as_array().unwrap().len() > 20);
    same_with_1_and_2_jobs(&["vpu", "table3", "--quick", "--json"], &[]);
}

/// The offload sweep's times are measured (they differ from run to run whatever the
/// jobs); everything decided before timing must be the same: the sizes in order, each
/// size's nests and their static figures.
#[test]
fn offload_sweep_gives_the_same_programs_with_1_and_2_jobs() {
    let run = |jobs: &str| {
        let o = ok(pimkit(&[
            "--jobs",
            jobs,
            "offload",
            "zoo:mlp?n=64",
            "--host-fixed",
            "--counters",
            "model",
            "--sweep",
            "n=16,32,48,64",
            "--json",
        ]));
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["sweep"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                let nests: Vec<serde_json::Value> = e[1]["nests"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|n| {
                        serde_json::json!([
                            n["id"],
                            n["op"],
                            n["label"],
                            n["node"],
                            n["n_iter"],
                            n["n_total"]
                        ])
                    })
                    .collect();
                (e[0].as_str().unwrap().to_string(), nests)
            })
            .collect::<Vec<_>>()
    };
    let (one, two) = (run("1"), run("2"));
    let sizes: Vec<&str> = one.iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(sizes, ["16", "32", "48", "64"]);
    assert!(one.iter().all(|(_, n)| !n.is_empty()));
    assert_eq!(one, two);
}

#[test]
fn jobs_0_exits_2_with_one_line() {
    let o = pimkit(&["--jobs", "0", "vpu", "table3", "--quick"]);
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{e}");
    // One line saying what and where (clap's usage hint may follow, as for --threads).
    let first = e.lines().next().unwrap_or_default();
    assert!(first.contains("--jobs") && first.contains("'0'"), "{e}");
    assert!(e.trim_end().lines().count() <= 3, "{e}");
}
