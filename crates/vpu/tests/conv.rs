//! QLinearConv kernels (2-D, causal 1-D, depthwise HWC) bit-exact against the integer
//! reference for every dataflow, at many shapes.

use pimkit_vpu::arch::KernelStyle;
use pimkit_vpu::problem::{Gen, ref_conv};
use pimkit_vpu::run::{ConvKind, run_conv};
use pimkit_vpu::{Arch, Dataflow, VpuError};
use proptest::prelude::*;

/// Every dataflow in both kernel formulations (pimkit's and the paper's Table 2 one).
fn check(arch: &Arch, kind: ConvKind, p: &pimkit_vpu::problem::QConv) {
    let want = ref_conv(p);
    for (df, style) in Dataflow::ALL
        .into_iter()
        .flat_map(|d| [(d, KernelStyle::Pimkit), (d, KernelStyle::Paper)])
    {
        let mut arch = arch.clone();
        arch.kernels = style;
        let (got, st) = run_conv(&arch, p, kind, df).unwrap();
        assert_eq!(
            got, want,
            "{kind:?} {df:?} {style:?} vpus={} c{} {}x{} k{}x{} s{:?} pads{:?} d{:?}",
            arch.vpus, p.c_in, p.h, p.w, p.kh, p.kw, p.stride, p.pads, p.dil
        );
        assert_eq!(
            st.cycles,
            st.compute_cycles + st.dma_stall_cycles + st.host_cycles
        );
    }
}

#[test]
fn conv2d_shapes() {
    let a = Arch::default();
    let mut g = Gen::new(1);
    check(
        &a,
        ConvKind::Conv2d,
        &g.conv(3, 20, 30, 5, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1),
    );
    check(
        &a,
        ConvKind::Conv2d,
        &g.conv(4, 17, 19, 3, (3, 3), (2, 2), [1, 1, 1, 1], (1, 1), 1),
    );
    check(
        &a,
        ConvKind::Conv2d,
        &g.conv(2, 12, 300, 2, (5, 5), (1, 1), [2, 2, 2, 2], (1, 1), 1),
    );
    check(
        &a,
        ConvKind::Conv2d,
        &g.conv(2, 11, 13, 2, (3, 2), (1, 2), [0, 1, 1, 0], (2, 1), 1),
    );
    check(
        &a.with(4, 0.8),
        ConvKind::Conv2d,
        &g.conv(3, 23, 40, 4, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1),
    );
    check(
        &a.with(2, 1.2),
        ConvKind::Conv2d,
        &g.conv(5, 9, 9, 3, (1, 1), (1, 1), [0, 0, 0, 0], (1, 1), 1),
    );
    // Stride-1 width with a dilated width: slides by 2 and 4 (values.rs reads the band
    // rows at those offsets directly).
    for vpus in [1, 2] {
        check(
            &a.with(vpus, 1.2),
            ConvKind::Conv2d,
            &g.conv(3, 10, 21, 3, (3, 3), (1, 1), [1, 2, 1, 2], (1, 2), 1),
        );
    }
}

#[test]
fn conv1d_ws_streams_its_input_groups_instead_of_spilling() {
    // c64/K3 at L = 256 (Fig. 7): five 13-channel input groups. WS keeps each output
    // block resident through all of them, as OS does, so its traffic is OS's (quinn puts
    // every Fig. 7 configuration near the bound); spilling int32 partial sums between the
    // groups moved 2.4x the bytes.
    let p = Gen::new(4).conv(64, 1, 256, 64, (1, 3), (1, 1), [0, 2, 0, 0], (1, 1), 1);
    let a = Arch::default();
    let (_, os) = run_conv(&a, &p, ConvKind::Conv1d, Dataflow::Os).unwrap();
    let (_, ws) = run_conv(&a, &p, ConvKind::Conv1d, Dataflow::Ws).unwrap();
    assert!(
        ws.offchip_bytes * 100 <= os.offchip_bytes * 105,
        "WS {} B, OS {} B",
        ws.offchip_bytes,
        os.offchip_bytes
    );
}

#[test]
fn conv1d_causal_shapes() {
    let a = Arch::default();
    let mut g = Gen::new(2);
    for (c, k, l, d, vpus) in [
        (3usize, 3usize, 40usize, 1usize, 1usize),
        (30, 3, 300, 1, 1),
        (12, 7, 600, 2, 4),
        (5, 1, 17, 1, 2),
        (28, 3, 70, 1, 2),
        // Above 26 channels IS streams its inputs (WS above 13): 4 VPUs with two
        // chunks each.
        (40, 3, 1100, 1, 4),
        // Long filters: an output block's taps must share one register.
        (30, 16, 90, 1, 1),
        (9, 40, 60, 1, 2),
    ] {
        let p = g.conv(
            c,
            1,
            l,
            c + 1,
            (1, k),
            (1, 1),
            [0, (k - 1) * d, 0, 0],
            (1, d),
            1,
        );
        check(&a.with(vpus, 1.2), ConvKind::Conv1d, &p);
    }
}

#[test]
fn depthwise_shapes() {
    let a = Arch::default();
    let mut g = Gen::new(3);
    for (c, h, k, s, vpus) in [
        (16usize, 9usize, 3usize, 1usize, 1usize),
        (300, 7, 3, 2, 1),
        (8, 8, 5, 1, 2),
        (40, 10, 3, 1, 4),
        (24, 6, 2, 2, 1),
    ] {
        let pad = k / 2;
        let p = g.conv(
            c,
            h,
            h + 1,
            c,
            (k, k),
            (s, s),
            [pad, pad, pad, pad],
            (1, 1),
            c,
        );
        check(&a.with(vpus, 1.2), ConvKind::Depthwise, &p);
    }
    let p = g.conv(10, 9, 9, 10, (3, 3), (1, 1), [2, 2, 2, 2], (2, 2), 10);
    check(&a, ConvKind::Depthwise, &p);
}

#[test]
fn vrf_too_small_is_a_clear_error() {
    let mut a = Arch::default();
    a.vpu.vrf_bytes = 32 * 64; // 16 elements per register
    let p = Gen::new(4).conv(1, 1, 64, 1, (1, 31), (1, 1), [0, 30, 0, 0], (1, 1), 1);
    let e = run_conv(&a, &p, ConvKind::Conv1d, Dataflow::Os).unwrap_err();
    assert!(matches!(e, VpuError::VrfTooSmall { .. }), "{e}");
    assert!(e.to_string().contains("vrf_bytes"), "{e}");
    let e = run_conv(&a, &p, ConvKind::Conv2d, Dataflow::Os).unwrap_err();
    assert!(matches!(e, VpuError::VrfTooSmall { .. }), "{e}");
}

#[test]
fn depthwise_ring_reads_less_than_naive_os() {
    let p = Gen::new(5).conv(64, 14, 14, 64, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 64);
    let a = Arch::default();
    let (_, os) = run_conv(&a, &p, ConvKind::Depthwise, Dataflow::Os).unwrap();
    let (_, is) = run_conv(&a, &p, ConvKind::Depthwise, Dataflow::Is).unwrap();
    assert!(
        is.dma_bytes * 2 < os.dma_bytes,
        "IS {} vs OS {}",
        is.dma_bytes,
        os.dma_bytes
    );
    assert!(is.cycles < os.cycles);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn conv2d_small(c in 1usize..4, h in 1usize..10, w in 1usize..12, co in 1usize..4, k in 1usize..4, s in 1usize..3,
                    pad in 0usize..2, seed in 0u64..1000, vpus in prop::sample::select(vec![1usize, 2, 4])) {
        prop_assume!(h + 2 * pad >= k && w + 2 * pad >= k);
        let p = Gen::new(seed).conv(c, h, w, co, (k, k), (s, s), [pad; 4], (1, 1), 1);
        check(&Arch::default().with(vpus, 1.2), ConvKind::Conv2d, &p);
    }

    #[test]
    fn conv1d_small(c in 1usize..30, l in 1usize..40, k in 1usize..5, d in 1usize..3, seed in 0u64..1000,
                    vpus in prop::sample::select(vec![1usize, 2, 4])) {
        let p = Gen::new(seed).conv(c, 1, l, c.div_ceil(2), (1, k), (1, 1), [0, (k - 1) * d, 0, 0], (1, d), 1);
        check(&Arch::default().with(vpus, 1.2), ConvKind::Conv1d, &p);
    }

    #[test]
    fn depthwise_small(c in 1usize..20, h in 1usize..8, k in 1usize..5, s in 1usize..3, seed in 0u64..1000,
                       vpus in prop::sample::select(vec![1usize, 2, 4])) {
        let pad = k / 2;
        prop_assume!(h + 2 * pad >= k);
        let p = Gen::new(seed).conv(c, h, h, c, (k, k), (s, s), [pad; 4], (1, 1), c);
        check(&Arch::default().with(vpus, 1.2), ConvKind::Depthwise, &p);
    }
}

fn paper() -> Arch {
    Arch {
        kernels: KernelStyle::Paper,
        ..Default::default()
    }
}

#[test]
fn paper_conv2d_refetches_the_band_per_output_channel() {
    // quinn §5.9: sweeping the image inside each output channel re-fetches the input
    // band after it has left the cache: one sweep (120 KB of input plus a 40 KB output
    // plane) overflows the 128 KiB cache. pimkit's order (C_out inside each H-tile) moves
    // the input about once; the paper's order moves it about once per output channel.
    let p = Gen::new(6).conv(3, 200, 200, 8, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 1);
    let input = (3 * 200 * 200) as u64;
    let (_, ours) = run_conv(&Arch::default(), &p, ConvKind::Conv2d, Dataflow::Os).unwrap();
    let (_, theirs) = run_conv(&paper(), &p, ConvKind::Conv2d, Dataflow::Os).unwrap();
    assert!(
        theirs.offchip_bytes > ours.offchip_bytes + 5 * input,
        "paper {} vs pimkit {}",
        theirs.offchip_bytes,
        ours.offchip_bytes
    );
    // About the same DMA volume (only the filter-tap reloads follow the order): the
    // difference is the cache hit rate.
    assert!(
        theirs.dma_bytes.abs_diff(ours.dma_bytes) * 100 < ours.dma_bytes,
        "{} vs {}",
        theirs.dma_bytes,
        ours.dma_bytes
    );
}

#[test]
fn paper_depthwise_overlaps_only_across_vpus() {
    // quinn §4.3.4 / Table 2: one accumulator and a K-column ring on one VPU, so the
    // 1-VPU run cannot hide its transfers; a second VPU prefetches (Fig. 9: 1.87x).
    let p = Gen::new(7).conv(128, 12, 12, 128, (3, 3), (1, 1), [1, 1, 1, 1], (1, 1), 128);
    let run = |a: &Arch| {
        run_conv(a, &p, ConvKind::Depthwise, Dataflow::Is)
            .unwrap()
            .1
    };
    let (ours1, paper1, paper2) = (
        run(&Arch::default()),
        run(&paper()),
        run(&paper().with(2, 1.2)),
    );
    assert!(
        ours1.cycles < paper1.cycles,
        "{} vs {}",
        ours1.cycles,
        paper1.cycles
    );
    assert!(
        paper2.cycles * 10 < paper1.cycles * 7,
        "2 VPUs {} vs 1 VPU {}",
        paper2.cycles,
        paper1.cycles
    );
    // One unit-stride descriptor per pixel of the new column instead of one 2-D burst.
    assert!(paper1.descriptors > ours1.descriptors);
}
