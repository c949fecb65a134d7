//! Every kernel and dataflow runs to the same cycles, counters and cache state on a
//! timing-only copy of a machine as on the machine itself (what `auto`'s losing trials
//! rely on, network.rs `run_kernel`), and to the same values and timing when run as a
//! data-only half plus a timing-only half (network.rs `run_halves`).

use super::{Dataflow, conv1d, conv2d, depthwise, matmul};
use crate::arch::{Arch, KernelStyle};
use crate::machine::Machine;
use crate::problem::{Gen, QConv};
use crate::run::place_matmul;

/// Run `k` on `m` and on a timing-only copy of it; both must end alike. And run it in
/// halves (network.rs `run_halves`): on a data-only clone of `m` and a timing-only copy,
/// after which the clone takes the copy's timing and must equal `m` in values and timing.
fn same_timing(m: &mut Machine, what: &str, k: impl Fn(&mut Machine) -> crate::error::Result<()>) {
    let mut copy = Machine::empty(&m.arch);
    m.timing_copy_into(&mut copy);
    let mut data = m.clone();
    let mut timing = Machine::empty(&m.arch);
    m.timing_copy_into(&mut timing);
    k(m).unwrap();
    k(&mut copy).unwrap();
    assert_eq!(m.counters(), copy.counters(), "{what}");
    assert_eq!(m.finish_time(), copy.finish_time(), "{what}");
    assert_eq!(m.now(), copy.now(), "{what}");
    assert!(!copy.has_data());

    data.set_data_only(true);
    k(&mut data).unwrap();
    k(&mut timing).unwrap();
    data.set_data_only(false);
    data.adopt_timing(&timing).unwrap();
    assert_eq!(data.counters(), m.counters(), "{what} in halves");
    assert_eq!(data.finish_time(), m.finish_time(), "{what} in halves");
    assert_eq!(data.now(), m.now(), "{what} in halves");
    assert!(
        data.mem == m.mem && data.vrf == m.vrf,
        "{what} in halves: values"
    );
}

fn arches() -> Vec<Arch> {
    let mut v = Vec::new();
    for vpus in [1, 2] {
        for style in [KernelStyle::Pimkit, KernelStyle::Paper] {
            v.push(Arch {
                vpus,
                kernels: style,
                ..Arch::default()
            });
        }
    }
    v
}

#[test]
fn every_kernel_times_alike_without_data() {
    let mut g = Gen::new(7);
    let convs: Vec<QConv> = vec![
        g.conv(3, 20, 24, 5, (3, 3), (1, 1), [1; 4], (1, 1), 1),
        g.conv(4, 17, 15, 3, (3, 3), (2, 2), [1, 0, 1, 0], (1, 2), 1),
    ];
    let c1 = g.conv(6, 1, 40, 7, (1, 3), (1, 1), [0, 2, 0, 0], (1, 1), 1);
    let dw = g.conv(12, 9, 11, 12, (3, 3), (1, 1), [1; 4], (1, 1), 12);
    let mms = [
        g.matmul(9, 40, 21, true, true),
        g.matmul(1, 70, 33, false, true),
    ];
    for arch in arches() {
        let tag = format!("{} VPUs, {:?}", arch.vpus, arch.kernels);
        for df in Dataflow::ALL {
            let mut m = Machine::new(&arch).unwrap();
            for p in &convs {
                let job = conv2d::place(&mut m, p);
                same_timing(&mut m, &format!("conv2d {df:?} {tag}"), |m| {
                    conv2d::conv2d(m, &job, df)
                });
            }
            let job = conv2d::place(&mut m, &c1);
            same_timing(&mut m, &format!("conv1d {df:?} {tag}"), |m| {
                conv1d::conv1d(m, &job, df)
            });
            let job = depthwise::place(&mut m, &dw);
            same_timing(&mut m, &format!("depthwise {df:?} {tag}"), |m| {
                depthwise::depthwise(m, &job, df)
            });
            let job = place_matmul(&mut m, &mms[0]);
            same_timing(&mut m, &format!("matmul {df:?} {tag}"), |m| {
                matmul::matmul(m, &job, df)
            });
        }
        let mut m = Machine::new(&arch).unwrap();
        let job = place_matmul(&mut m, &mms[1]);
        same_timing(&mut m, &format!("vecmat {tag}"), |m| {
            matmul::vecmat(m, &job)
        });
    }
}
