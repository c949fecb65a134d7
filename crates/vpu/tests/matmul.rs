//! QLinearMatMul kernels bit-exact against the integer reference at many shapes.

use pimkit_vpu::arch::KernelStyle;
use pimkit_vpu::problem::{Gen, ref_matmul};
use pimkit_vpu::run::{MmKernel, run_matmul};
use pimkit_vpu::{Arch, Dataflow};
use proptest::prelude::*;

fn check(arch: &Arch, m: usize, k: usize, n: usize, seed: u64, per_col: bool, bias: bool) {
    let p = Gen::new(seed).matmul(m, k, n, per_col, bias);
    let want = ref_matmul(&p);
    for df in Dataflow::ALL {
        let (got, st) = run_matmul(arch, &p, MmKernel::Mm(df)).unwrap();
        assert_eq!(
            got, want,
            "{df:?} {m}x{k}x{n} vpus={} seed={seed}",
            arch.vpus
        );
        assert!(
            st.cycles > 0 && st.cycles == st.compute_cycles + st.dma_stall_cycles + st.host_cycles
        );
    }
    if m == 1 {
        // Both formulations of the VM kernel (paper style: no prefetch on one VPU).
        for style in [KernelStyle::Pimkit, KernelStyle::Paper] {
            let mut a = arch.clone();
            a.kernels = style;
            let (got, _) = run_matmul(&a, &p, MmKernel::Vm).unwrap();
            assert_eq!(got, want, "VM {k}x{n} vpus={} {style:?}", arch.vpus);
        }
    }
}

#[test]
fn paper_vm_stalls_on_one_vpu_and_prefetches_across_two() {
    // quinn §5.9: without a second buffer the 1-VPU VM run waits for every weight tile;
    // a second VPU restores the prefetch (1.67x in the paper).
    let p = Gen::new(13).matmul(1, 512, 256, false, true);
    let a = Arch {
        kernels: KernelStyle::Paper,
        ..Default::default()
    };
    let (_, p1) = run_matmul(&a, &p, MmKernel::Vm).unwrap();
    let (_, p2) = run_matmul(&a.with(2, 1.2), &p, MmKernel::Vm).unwrap();
    let (_, d1) = run_matmul(&Arch::default(), &p, MmKernel::Vm).unwrap();
    assert!(p1.dma_stall_cycles * 3 > p1.cycles, "{p1:?}");
    assert!(
        p2.cycles * 10 < p1.cycles * 8,
        "{} vs {}",
        p2.cycles,
        p1.cycles
    );
    assert!(
        d1.cycles < p1.cycles,
        "pimkit {} vs paper {}",
        d1.cycles,
        p1.cycles
    );
}

#[test]
fn larger_shapes_tiled_and_ragged() {
    let a = Arch::default();
    // K and M beyond one tile, N beyond one register (257 > 256), ragged tails.
    check(&a, 17, 47, 257, 1, false, true);
    check(&a, 31, 23, 40, 2, true, false);
    check(&a, 1, 95, 300, 3, true, true);
    let a4 = a.with(4, 1.2);
    check(&a4, 16, 45, 600, 4, false, true);
    check(&a4, 1, 200, 70, 5, false, false);
    let a2 = a.with(2, 0.5);
    check(&a2, 9, 61, 513, 6, true, true);
}

#[test]
fn registers_shorter_than_a_tile() {
    // VLEN 16 and 24 (2 and 3 KiB VRFs) are below the VM kernel's 30-row K-tile: the A
    // slice of a tile must still fit its register (it overflowed V31 before).
    for bytes in [2048, 3072] {
        let mut a = Arch::default();
        a.vpu.vrf_bytes = bytes;
        for vpus in [1, 2] {
            let a = a.with(vpus, 1.2);
            check(&a, 1, 40, 40, 7, false, true);
            check(&a, 5, 33, 37, 8, true, false);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    #[test]
    fn small_shapes(m in 1usize..20, k in 1usize..40, n in 1usize..40, vpus in prop::sample::select(vec![1usize, 2, 4]),
                    seed in 0u64..1000, per_col: bool, bias: bool) {
        let a = Arch::default().with(vpus, 1.2);
        check(&a, m, k, n, seed, per_col, bias);
    }
}

#[test]
fn small_vlen_arch_still_exact() {
    let mut a = Arch::default();
    a.vpu.vrf_bytes = 32 * 64; // VLEN 16
    check(&a, 20, 33, 50, 9, true, true);
}

#[test]
fn os_spills_nothing_is_ws_spill() {
    // With K spanning several tiles IS/WS spill int32 partials: more DMA bytes than OS.
    let p = Gen::new(11).matmul(64, 128, 256, false, true);
    let a = Arch::default();
    let (_, os) = run_matmul(&a, &p, MmKernel::Mm(Dataflow::Os)).unwrap();
    let (_, is) = run_matmul(&a, &p, MmKernel::Mm(Dataflow::Is)).unwrap();
    let (_, ws) = run_matmul(&a, &p, MmKernel::Mm(Dataflow::Ws)).unwrap();
    let partial = (64 * 256 * 4) as u64;
    assert!(
        is.dma_bytes > os.dma_bytes + partial,
        "{} vs {}",
        is.dma_bytes,
        os.dma_bytes
    );
    assert!(ws.dma_bytes > os.dma_bytes + partial);
    assert!(os.cycles < is.cycles && os.cycles < ws.cycles);
}

#[test]
fn vm_double_buffering_hides_dma() {
    let p = Gen::new(12).matmul(1, 512, 256, false, false);
    let a1 = Arch::default();
    // The general kernel at M = 1 cannot overlap; the dedicated one prefetches.
    let (_, g1) = run_matmul(&a1, &p, MmKernel::Mm(Dataflow::Os)).unwrap();
    let (_, s1) = run_matmul(&a1, &p, MmKernel::Vm).unwrap();
    assert!(
        s1.cycles * 10 < g1.cycles * 9,
        "dedicated {} vs general {}",
        s1.cycles,
        g1.cycles
    );
    let (_, s2) = run_matmul(&a1.with(2, 1.2), &p, MmKernel::Vm).unwrap();
    // Memory-bound: a second VPU buffer cannot beat the DMA bound either.
    assert!(
        s2.cycles * 100 <= s1.cycles * 102,
        "2 VPUs {} vs 1 VPU {}",
        s2.cycles,
        s1.cycles
    );
    // Overlapped: the run approaches max(DMA busy, VPU busy) instead of their sum.
    assert!(s2.cycles < s2.dma_busy + s2.vpu_busy / 2);
    assert!(g1.cycles >= g1.dma_busy + g1.vpu_busy / 2);
}
