//! Work that does not fit the memory this process may use is refused with exit 2 and a
//! message, never an allocation abort (issue #22): each case runs under an address-space
//! limit (RLIMIT_AS, as `ulimit -v` or `prlimit --as` sets it) far below what it needs.

use std::os::unix::process::CommandExt;
use std::process::Command;

/// 3 GB of address space: enough for the binary and small work, not for the cases.
const LIMIT: u64 = 3 << 30;

fn limited(args: &[&str]) -> std::process::Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pimkit"));
    c.args(args);
    // SAFETY: setrlimit is async-signal-safe and only affects the child.
    unsafe {
        c.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: LIMIT as libc::rlim_t,
                rlim_max: LIMIT as libc::rlim_t,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    c.output().expect("run pimkit")
}

#[test]
fn oversized_work_exits_2_under_an_address_space_limit() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("big.onnx");
    let cases: Vec<Vec<&str>> = vec![
        vec!["exec", "zoo:zeroing?n=65536", "--random", "0"],
        vec!["exec", "zoo:gemv?n=46341", "--random", "0"],
        vec!["exec", "zoo:matmul?n=40000", "--random", "0"],
        vec!["lower", "zoo:mlp?n=30000"],
        vec![
            "zoo",
            "export",
            "mlp",
            "--param",
            "n=30000",
            "-o",
            out.to_str().unwrap(),
        ],
        vec!["exec", "zoo:q_mobilenet_v2?calib=2147483648"],
    ];
    for args in cases {
        let o = limited(&args);
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.starts_with("pimkit: error:"), "{args:?}: {e}");
        assert!(!e.contains("memory allocation"), "{args:?}: {e}");
    }
    assert!(!out.exists(), "a refused export leaves no file");
}
