//! The CLI's `--json` on zoo models against snapshots taken before the engine contract
//! (pimkit-engine) moved every command onto it: every number and key the old output had
//! is unchanged; the contract only adds the common keys (engine, model, arch, totals,
//! layers, notes). Values measured on this machine (wall and native times, and what
//! derives from them) are left out of the comparison.
//! Regenerate (only when a change is intended): PIMKIT_UPDATE_SNAPSHOTS=1 cargo test -p pimkit --test json_snapshots

use serde_json::Value;
use std::process::Command;

/// Keys whose values are measured on the running machine.
const VOLATILE: &[&str] = &[
    "wall_s",
    "speedup",
    "speedup_exact",
    "bw_read_gbs",
    "oracle_speedup",
    "store_bound",
    "t_cpu_ns",
    "compile_ms",
    "multiple",
    "one_execution_ms",
    "profiling_ms",
    "setup_ms",
    "t_cpu_total_ns",
    "time_ms",
    "times_ms",
    "cpu_times_ms",
];

fn strip(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !VOLATILE.contains(&k.as_str()))
                .map(|(k, x)| (k.clone(), strip(x)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip).collect()),
        x => x.clone(),
    }
}

/// Run `args`; compare the snapshot's keys (all, or `only`) with the output.
fn check(name: &str, args: &[&str], only: Option<&[&str]>) {
    let o = Command::new(env!("CARGO_BIN_EXE_pimkit"))
        .args(args)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let got = strip(&serde_json::from_slice::<Value>(&o.stdout).unwrap());
    for k in ["engine", "model", "arch", "totals", "layers", "notes"] {
        assert!(
            got.get(k).is_some(),
            "{name}: the common key {k} is missing"
        );
    }
    let path = format!("{}/tests/snapshots/{name}.json", env!("CARGO_MANIFEST_DIR"));
    if std::env::var_os("PIMKIT_UPDATE_SNAPSHOTS").is_some() {
        std::fs::write(&path, serde_json::to_string_pretty(&got).unwrap()).unwrap();
        return;
    }
    let want: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let keys: Vec<String> = match only {
        Some(ks) => ks.iter().map(|s| s.to_string()).collect(),
        None => want.as_object().unwrap().keys().cloned().collect(),
    };
    for k in keys {
        assert_eq!(got.get(&k), want.get(&k), "{name}: `{k}` changed");
    }
}

#[test]
fn xbar_map() {
    check("xbar", &["xbar", "map", "zoo:lenet5", "--json"], None);
}

#[test]
fn puma_run() {
    check("puma", &["puma", "run", "zoo:mlp", "--json"], None);
}

#[test]
fn vpu_run() {
    check(
        "vpu",
        &["vpu", "run", "zoo:q_mobilenet_v2?res=32", "--json"],
        None,
    );
}

#[test]
fn lower() {
    check("lower", &["lower", "zoo:mlp", "--json"], None);
}

#[test]
fn offload() {
    // The decisions' times come from native runs on this machine: only the inputs of
    // the rule are compared.
    check(
        "offload",
        &[
            "offload",
            "zoo:ew_add",
            "--host-fixed",
            "--counters",
            "model",
            "--json",
        ],
        Some(&["arch", "host", "counter_source"]),
    );
}
