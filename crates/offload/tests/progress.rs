//! The offload engine reports progress per nest while it times the nests (a model of
//! 20,000 nodes takes a while), counting up, and ends with `done` at the total.

use pimkit_engine::Engine;
use pimkit_offload::{HostChoice, Offload, OffloadOptions, Options, PimArch};

#[test]
fn offload_progress_counts_nests_up_to_done() {
    let g = pimkit_zoo::build("softmax", &[("n".into(), "16".into())]).unwrap();
    let opts = OffloadOptions {
        host: HostChoice::Reference,
        options: Options {
            runs: 2,
            counters: "model".parse().unwrap(),
            ..Default::default()
        },
        with_reference: false,
    };
    let mut steps: Vec<(usize, usize, String)> = vec![];
    let out = Offload::run(
        &g,
        &PimArch::default(),
        &opts,
        &mut |d: usize, t: usize, w: &str| steps.push((d, t, w.to_string())),
    )
    .unwrap();
    let nests = out.analysis.nests.len();
    let timed: Vec<_> = steps.iter().filter(|s| s.2.starts_with("time ")).collect();
    assert_eq!(timed.len(), 2 * nests, "{steps:?}");
    for (i, s) in timed.iter().enumerate() {
        assert_eq!((s.0, s.1), (i + 1, 2 * nests), "{steps:?}");
    }
    assert_eq!(
        steps.last().unwrap(),
        &(2 * nests, 2 * nests, "done".to_string())
    );
}
