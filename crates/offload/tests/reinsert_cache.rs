//! Reinsertion (marked program runs and its runtime counts match the model) and the
//! footprint/cache model on small lowered programs.

use pimkit_offload::cache::{nest_access, program_traffic};
use pimkit_offload::movement::{movement_bound, segments};
use pimkit_offload::reinsert::emit_and_check;
use pimkit_offload::{PimArch, Workload};

fn lower(name: &str, n: usize) -> pimkit_loops::Program {
    let g = pimkit_zoo::build(name, &[("n".into(), n.to_string())]).unwrap();
    pimkit_loops::lower(&g).unwrap()
}

#[test]
fn marked_program_counts_equal_the_model() {
    let p = lower("softmax", 64);
    let place = [true, true, false, true, false, true, true, true];
    let dir = tempfile::tempdir().unwrap();
    let r = emit_and_check(&p, &place, dir.path()).unwrap();
    assert_eq!(r.segments, 3);
    assert_eq!(r.model_n_region, 6);
    assert_eq!(r.runtime_transitions, 6);
    assert_eq!(r.runtime_bytes, r.model_bytes);
    assert!(r.consistent);
    // The model's bytes are equation (8) for this placement.
    let w = Workload::new(&p, &[0.0; 8], &[], &PimArch::default());
    let m = movement_bound(&w, &segments(&place));
    assert_eq!((m.fetch_bytes + m.flush_bytes) as u64, r.model_bytes);
    let src = std::fs::read_to_string(dir.path().join("program.c")).unwrap();
    assert_eq!(src.matches("pk_pim_segment_begin(").count(), 3);
    assert!(dir.path().join("pim_runtime.h").exists());
}

#[test]
fn streaming_traffic_is_the_footprint() {
    // ew_add n=256: a, b, c of 256 KiB each; with a 32 KiB cache everything is cold.
    let p = lower("ew_add", 256);
    let t = program_traffic(&p, 32 << 10, 64);
    assert_eq!(t[0].0, 2.0 * 256.0 * 256.0 * 4.0);
    assert_eq!(t[0].1, 256.0 * 256.0 * 4.0);
    // With a huge cache the steady state keeps everything: no off-core reads.
    let t = program_traffic(&p, 1 << 30, 64);
    assert_eq!(t[0].0, 0.0);
}

#[test]
fn matmul_reuse_depends_on_the_cache() {
    let p = lower("matmul", 128);
    let mm = p.nests.iter().find(|n| n.label == "matmul").unwrap();
    // B (64 KiB) fits a 1 MiB cache: each operand fetched once.
    let big: f64 = nest_access(&p, mm, 1 << 20, 64)
        .iter()
        .map(|a| a.lines * a.mult)
        .sum();
    // It does not fit 16 KiB: B is re-read once per row of A.
    let small: f64 = nest_access(&p, mm, 16 << 10, 64)
        .iter()
        .map(|a| a.lines * a.mult)
        .sum();
    assert_eq!(big, 3.0 * 128.0 * 128.0 * 4.0 / 64.0);
    assert!(small > 100.0 * big / 3.0, "small {small} big {big}");
}
