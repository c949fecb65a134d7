//! Traffic and timing accounting where the answer is known in closed form.

use pimkit_vpu::machine::{Elem, Machine, Xfer};
use pimkit_vpu::{Arch, VpuError};

#[test]
fn streaming_copy_moves_exactly_its_bytes() {
    let a = Arch::default();
    let mut m = Machine::new(&a).unwrap();
    let v = m.vlen;
    let n = 512 * 1024; // 4x the cache: no reuse possible
    let src = m.put(Elem::U8, &vec![7; n]);
    let dst = m.alloc(n);
    let s0 = m.counters();
    for off in (0..n).step_by(v) {
        m.dma_in(&Xfer::row(0, 0, 0, v, src + off as u64, Elem::U8, v))
            .unwrap();
        m.dma_out(&Xfer::row(0, 0, 0, v, dst + off as u64, Elem::U8, v))
            .unwrap();
    }
    // Write back what is still dirty so every written byte is counted once.
    m.cache.flush();
    m.finish();
    let st = m.stats_since(&s0);
    // Every source line misses once; every destination line is allocated (miss) and
    // written back once: (misses + evictions) x 64 = read + write-allocate + write-back.
    let lines = (n / 64) as u64;
    assert_eq!(st.misses, 2 * lines);
    assert_eq!(st.evictions, lines);
    assert_eq!(st.offchip_bytes, 3 * n as u64);
    assert_eq!(st.dma_bytes, 2 * n as u64);
    assert_eq!(m.get(dst, Elem::U8, n).unwrap(), vec![7; n]);
    // Bandwidth-bound: at least the off-chip bytes / bandwidth.
    assert!(st.cycles as f64 >= 3.0 * n as f64 / a.memory.bandwidth * 0.999);
}

#[test]
fn resident_operand_hits_after_first_pass() {
    let a = Arch::default();
    let mut m = Machine::new(&a).unwrap();
    let v = m.vlen;
    let n = 64 * 1024; // half the cache
    let src = m.put(Elem::I8, &vec![-3; n]);
    let s0 = m.counters();
    for _ in 0..3 {
        for off in (0..n).step_by(v) {
            m.dma_in(&Xfer::row(0, 1, 0, v, src + off as u64, Elem::I8, v))
                .unwrap();
        }
    }
    m.finish();
    let st = m.stats_since(&s0);
    assert_eq!(st.misses, (n / 64) as u64);
    assert_eq!(st.hits, 2 * (n / 64) as u64);
    assert_eq!(st.offchip_bytes, n as u64);
    assert_eq!(m.vrf[0][v], -3, "sign-extended into the VRF");
}

#[test]
fn lower_bandwidth_means_more_cycles_same_bytes() {
    let run = |bw: f64| {
        let mut m = Machine::new(&Arch::default().with(1, bw)).unwrap();
        let v = m.vlen;
        let src = m.put(Elem::U8, &vec![1; 256 * 1024]);
        let s0 = m.counters();
        for off in (0..256 * 1024).step_by(v) {
            m.dma_in(&Xfer::row(0, 0, 0, v, src + off as u64, Elem::U8, v))
                .unwrap();
        }
        m.finish();
        m.stats_since(&s0)
    };
    let (f, s) = (run(1.2), run(0.5));
    assert_eq!(f.offchip_bytes, s.offchip_bytes);
    assert!(
        s.cycles as f64 > 1.8 * f.cycles as f64,
        "{} vs {}",
        s.cycles,
        f.cycles
    );
}

#[test]
fn zero_bandwidth_is_rejected() {
    let e = Machine::new(&Arch::default().with(1, 0.0)).err().unwrap();
    assert!(
        matches!(
            e,
            VpuError::BadArch {
                field: "memory.bandwidth",
                ..
            }
        ),
        "{e}"
    );
}

#[test]
fn out_of_range_dma_is_an_error() {
    let mut m = Machine::new(&Arch::default()).unwrap();
    let a = m.alloc(16);
    let v = m.vlen;
    assert!(
        m.dma_in(&Xfer::row(0, 0, 0, v, a, Elem::U8, 1 << 20))
            .is_err()
    );
    assert!(
        m.dma_in(&Xfer::row(3, 0, 0, v, a, Elem::U8, 4)).is_err(),
        "VPU 3 does not exist"
    );
}

#[test]
fn dma_moves_one_vrf_element_per_beat() {
    // 256 u8 elements become 256 int32 VRF words: 256 beats at 4 B/beat-cycle, not 64.
    // Warm the lines first so the off-chip side does not set the duration.
    let a = Arch::default();
    let mut m = Machine::new(&a).unwrap();
    let v = m.vlen;
    let src = m.put(Elem::U8, &vec![1; v]);
    m.dma_in(&Xfer::row(0, 0, 0, v, src, Elem::U8, v)).unwrap();
    m.finish();
    let s0 = m.counters();
    m.dma_in(&Xfer::row(0, 1, 0, v, src, Elem::U8, v)).unwrap();
    m.finish();
    let st = m.stats_since(&s0);
    let beats = (v as f64 * 4.0 / a.dma.bytes_per_cycle) as u64;
    assert_eq!(st.dma_busy, a.dma.setup_cycles + beats);
    assert_eq!(st.misses, 0);
}

#[test]
fn a_transfer_waiting_for_a_result_counts_that_wait_as_compute() {
    // One slow MAC (32 lane groups x 300 cycles), then two write-backs of its register:
    // the first waits for the MAC, and the host, programming the second, waits for the
    // first. That wait is compute; only the transfers are DMA stall.
    let mut a = Arch::default();
    a.vpu.cycles.mac = 300.0;
    let mut m = Machine::new(&a).unwrap();
    let v = m.vlen;
    let dst = m.alloc(2 * v);
    let s0 = m.counters();
    m.vmacc_vx(0, 0, 1, 1, v);
    for i in 0..2 {
        m.dma_out(&Xfer::row(0, 0, 0, v, dst + (i * v) as u64, Elem::U8, v))
            .unwrap();
    }
    m.finish();
    let st = m.stats_since(&s0);
    let mac = (v / a.vpu.lanes) as u64 * 300;
    // The host's own issue and descriptor programming overlap the MAC.
    assert!(st.compute_cycles + st.host_cycles >= mac, "{st:?}");
    // Two 256-beat transfers with their set-up and line traffic, far below the MAC.
    assert!(st.dma_stall_cycles < 2 * v as u64 + 200, "{st:?}");
    assert_eq!(
        st.cycles,
        st.compute_cycles + st.dma_stall_cycles + st.host_cycles
    );
}

#[test]
fn snapshot_restore_rolls_back_clocks_cache_registers_and_kept_memory() {
    // What `--dataflow auto` relies on between its trial runs.
    let a = Arch::default();
    let mut m = Machine::new(&a).unwrap();
    let v = m.vlen;
    let src = m.put(Elem::U8, &vec![3; v]);
    let out = m.alloc(v);
    let snap = m.snapshot(&[(out, v)]).unwrap();
    let (t0, c0, len0) = (m.now(), m.counters(), m.mem.len());
    m.dma_in(&Xfer::row(0, 0, 0, v, src, Elem::U8, v)).unwrap();
    m.vadd_vx(0, 0, 0, 1, v);
    m.dma_out(&Xfer::row(0, 0, 0, v, out, Elem::U8, v)).unwrap();
    m.alloc(4096);
    m.finish();
    assert_eq!(m.get(out, Elem::U8, v).unwrap(), vec![4; v]);
    m.restore(snap);
    assert_eq!((m.now(), m.counters(), m.mem.len()), (t0, c0, len0));
    assert_eq!(
        m.get(out, Elem::U8, v).unwrap(),
        vec![0; v],
        "kept range restored"
    );
    assert!(m.vrf[0][..v].iter().all(|&x| x == 0), "registers restored");
    // The cache is as before: the source misses again.
    m.dma_in(&Xfer::row(0, 0, 0, v, src, Elem::U8, v)).unwrap();
    m.finish();
    assert!(m.counters().misses > c0.misses);
}
