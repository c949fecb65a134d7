//! A missing or failing C compiler gives a clear error, not a panic.

use pimkit_ir::{DType, Graph, Op, TensorType, UnaryOp};
use pimkit_loops::{LoopsError, NativeOptions, compile, lower};

fn program() -> pimkit_loops::Program {
    let mut g = Graph::new("tiny");
    let x = g.add_input("x", TensorType::new(DType::F32, vec![4]));
    let y = g.op("y", Op::Unary(UnaryOp::Exp), &[x]).unwrap();
    g.outputs = vec![y];
    lower(&g).unwrap()
}

fn fresh_cache(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("pimkit-loops-cc-test-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn missing_compiler_is_a_clear_error() {
    let opts = NativeOptions {
        cc: "/nonexistent/bin/cc-does-not-exist".into(),
        cache_dir: fresh_cache("a"),
        ..Default::default()
    };
    let err = compile(&program(), &opts).err().expect("must fail");
    assert!(matches!(err, LoopsError::CompilerMissing { .. }), "{err}");
    let msg = err.to_string();
    assert!(
        msg.contains("cc-does-not-exist") && msg.contains("PIMKIT_CC"),
        "{msg}"
    );
}

#[test]
fn failing_compiler_reports_its_stderr() {
    let opts = NativeOptions {
        flags: vec!["-fno-such-flag-for-pimkit".into(), "-shared".into()],
        cache_dir: fresh_cache("b"),
        ..Default::default()
    };
    let err = compile(&program(), &opts).err().expect("must fail");
    assert!(matches!(err, LoopsError::CompilerFailed { .. }), "{err}");
    assert!(err.to_string().contains("no-such-flag"), "{err}");
}

#[test]
fn compiled_library_is_cached_by_content() {
    let opts = NativeOptions {
        cache_dir: fresh_cache("c"),
        ..Default::default()
    };
    let p = program();
    let a = compile(&p, &opts).unwrap();
    assert!(!a.cached);
    let b = compile(&p, &opts).unwrap();
    assert!(b.cached);
    assert_eq!(a.path, b.path);
}
