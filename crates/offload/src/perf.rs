//! Hardware counter backend (cargo feature `perf`). The event table follows torch-pim.txt
//! Table 1 on Intel and the AMD Zen 4/5 equivalents of torch-pim.md §3.3; raw configs use
//! the x86 layout (event bits 0-7 plus 32-35 on AMD, umask 8-15, cmask 24-31).

use crate::error::{OffloadError, Result};

/// The counters cannot be read here; `counters::source` falls back to the model in auto
/// mode. (Defined here, not in counters.rs, so perf.rs does not depend on its caller.)
pub(crate) fn perf_unavailable(msg: impl Into<String>) -> OffloadError {
    OffloadError::Perf(msg.into())
}

/// One raw event: (name, config).
pub type RawEvent = (&'static str, u64);

const fn raw(event: u64, umask: u64, cmask: u64) -> u64 {
    (event & 0xFF) | ((event >> 8) << 32) | (umask << 8) | (cmask << 24)
}

/// Intel events of Table 1: off-core reads, store-bound cycles, three backend terms.
pub const INTEL: [RawEvent; 5] = [
    ("offcore_requests.all_data_rd", raw(0xB0, 0x08, 0)),
    ("exe_activity.bound_on_stores", raw(0xA6, 0x40, 0)),
    ("cycle_activity.stalls_total", raw(0xA3, 0x04, 4)),
    ("exe_activity.1_ports_util", raw(0xA6, 0x02, 0)),
    ("exe_activity.2_ports_util", raw(0xA6, 0x04, 0)),
];

/// AMD Zen 4/5 equivalents (torch-pim.md §3.3): DRAM/IO fills, store-queue token stalls,
/// no-retire cycles, and retired-op cycles with cmask 1 and 2 (their difference
/// approximates "exactly one port busy").
pub const AMD: [RawEvent; 5] = [
    ("ls_any_fills_from_sys.dram_io_all", raw(0x44, 0x48, 0)),
    ("de_dispatch_stall.store_queue_rsrc", raw(0xAE, 0x04, 0)),
    ("ex_no_retire.all", raw(0xD6, 0x1B, 0)),
    ("ex_ret_ops.cmask1", raw(0xC1, 0, 1)),
    ("ex_ret_ops.cmask2", raw(0xC1, 0, 2)),
];

/// The event set for a CPU vendor string from /proc/cpuinfo.
pub fn events_for(vendor: &str) -> Option<&'static [RawEvent; 5]> {
    match vendor {
        "GenuineIntel" => Some(&INTEL),
        "AuthenticAMD" | "HygonGenuine" => Some(&AMD),
        _ => None,
    }
}

/// StoreBound = c_store / c_backend, c_backend = c_store + the backend terms (eq. 7).
pub fn store_bound(vendor: &str, v: &[u64; 5]) -> f64 {
    let c_store = v[1] as f64;
    let backend = if vendor == "GenuineIntel" {
        v[2] as f64 + v[3] as f64 + v[4] as f64
    } else {
        // AMD: no-retire cycles plus cycles retiring exactly one op (cmask1 - cmask2).
        v[2] as f64 + v[3].saturating_sub(v[4]) as f64
    };
    let d = c_store + backend;
    if d > 0.0 { c_store / d } else { 0.0 }
}

#[cfg(not(all(feature = "perf", target_os = "linux")))]
pub fn probe(_vendor: &str) -> Result<()> {
    Err(perf_unavailable(if cfg!(target_os = "linux") {
        "pimkit was built without the `perf` cargo feature (on by default: rebuild without \
         `--no-default-features`, or with `--features pimkit-offload/perf`)"
    } else {
        "hardware counters use Linux's perf_event_open, which this system does not have"
    }))
}

#[cfg(all(feature = "perf", target_os = "linux"))]
pub use imp::{CounterGroup, probe};

#[cfg(all(feature = "perf", target_os = "linux"))]
mod imp {
    use super::*;
    use perf_event::events::Raw;
    use perf_event::{Builder, Counter, Group};

    /// One group of the five raw events, enabled around each nest.
    pub struct CounterGroup {
        group: Group,
        counters: Vec<Counter>,
    }

    impl CounterGroup {
        pub fn new(vendor: &str) -> Result<CounterGroup> {
            let ev = events_for(vendor).ok_or_else(|| {
                perf_unavailable(format!("no event table for CPU vendor '{vendor}'"))
            })?;
            Self::open((*ev).map(|(name, cfg)| (name, Builder::new(Raw::new(cfg)))))
        }
        /// One group of five events, whatever their kind: the vendor's raw events, or
        /// software events where a test needs the group's plumbing without a PMU.
        pub(crate) fn open(events: [(&str, Builder<'_>); 5]) -> Result<CounterGroup> {
            let mut group =
                Group::new().map_err(|e| perf_unavailable(format!("perf_event_open: {e}")))?;
            let mut counters = vec![];
            for (name, b) in &events {
                let c = group
                    .add(b)
                    .map_err(|e| perf_unavailable(format!("event {name}: {e}")))?;
                counters.push(c);
            }
            Ok(CounterGroup { group, counters })
        }
        /// Run `f` with the group counting; the five deltas, or an error when the group was
        /// multiplexed (time_running < time_enabled).
        pub fn measure(&mut self, f: impl FnOnce()) -> Result<[u64; 5]> {
            self.group
                .reset()
                .map_err(|e| perf_unavailable(e.to_string()))?;
            self.group
                .enable()
                .map_err(|e| perf_unavailable(e.to_string()))?;
            f();
            self.group
                .disable()
                .map_err(|e| perf_unavailable(e.to_string()))?;
            let d = self
                .group
                .read()
                .map_err(|e| perf_unavailable(e.to_string()))?;
            if let (Some(en), Some(run)) = (d.time_enabled(), d.time_running())
                && run < en
            {
                return Err(perf_unavailable(
                    "the event group was multiplexed; free hardware counters",
                ));
            }
            let mut v = [0u64; 5];
            for (k, c) in self.counters.iter().enumerate() {
                v[k] = d.get(c).map(|x| x.value()).unwrap_or(0);
            }
            Ok(v)
        }
    }

    /// Open the vendor's group once and count an empty region.
    pub fn probe(vendor: &str) -> Result<()> {
        let mut g = CounterGroup::new(vendor)?;
        g.measure(|| {})?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_configs_follow_the_x86_layout() {
        // torch-pim.md §3.3: backend_stalls 0x1A0/0x1E -> 0x1_0000_1EA0 (high event nibble
        // in bits 32-35 on AMD).
        assert_eq!(raw(0x1A0, 0x1E, 0), 0x1_0000_1EA0);
        // cmask in bits 24-31: CYCLE_ACTIVITY.STALLS_TOTAL 0xA3/0x04, cmask 4.
        assert_eq!(raw(0xA3, 0x04, 4), 0x0400_04A3);
        assert_eq!(INTEL[0].1, 0x08B0);
        assert_eq!(AMD[0].1, 0x4844);
        assert_eq!(AMD[1].1, 0x04AE);
    }

    #[test]
    fn vendor_selects_the_event_table() {
        assert_eq!(events_for("GenuineIntel").unwrap()[0].0, INTEL[0].0);
        assert_eq!(events_for("AuthenticAMD").unwrap()[0].0, AMD[0].0);
        assert!(events_for("ARM").is_none());
    }

    #[test]
    fn store_bound_is_store_cycles_over_backend_cycles() {
        // Intel: c_store / (c_store + the three backend terms), eq. (7).
        assert_eq!(store_bound("GenuineIntel", &[0, 40, 30, 20, 10]), 0.4);
        // AMD: backend = no-retire + (cmask1 - cmask2).
        assert_eq!(store_bound("AuthenticAMD", &[0, 50, 30, 40, 20]), 0.5);
        assert_eq!(store_bound("AuthenticAMD", &[0; 5]), 0.0);
    }

    #[cfg(not(all(feature = "perf", target_os = "linux")))]
    #[test]
    fn without_the_feature_probe_says_how_to_enable_it() {
        let e = probe("AuthenticAMD").unwrap_err().to_string();
        let how = if cfg!(target_os = "linux") {
            "--no-default-features"
        } else {
            "perf_event_open"
        };
        assert!(e.contains(how), "{e}");
    }

    /// The group's plumbing (open, reset, enable, disable, read, the multiplexing check)
    /// with five software events, which open where hardware events do not (these KVM
    /// guests have no PMU, torch-pim.md §3.1): a region that spins for 20 ms counts that
    /// much task and CPU clock, and the next (empty) region starts from zero. Clocks, not
    /// page faults, because transparent huge pages and allocator reuse make fault counts
    /// unpredictable.
    #[cfg(all(feature = "perf", target_os = "linux"))]
    #[test]
    fn a_group_of_software_events_counts_each_region_apart() {
        use perf_event::Builder;
        use perf_event::events::Software;
        let g = CounterGroup::open([
            ("task_clock", Builder::new(Software::TASK_CLOCK)),
            ("page_faults", Builder::new(Software::PAGE_FAULTS)),
            ("cpu_clock", Builder::new(Software::CPU_CLOCK)),
            ("minor_faults", Builder::new(Software::PAGE_FAULTS_MIN)),
            ("context_switches", Builder::new(Software::CONTEXT_SWITCHES)),
        ]);
        let mut g = match g {
            Ok(g) => g,
            // A sandbox (seccomp, perf_event_paranoid 3) may forbid perf_event_open
            // itself; nothing of the group can be checked there.
            Err(e)
                if ["os error 1)", "os error 13)", "os error 38)"]
                    .iter()
                    .any(|c| e.to_string().contains(c)) =>
            {
                eprintln!("skipped: perf_event_open is not permitted here: {e}");
                return;
            }
            Err(e) => panic!("software events open without a PMU: {e}"),
        };
        const SPIN_NS: u64 = 20_000_000;
        let busy = g
            .measure(|| {
                // Spin until this thread has had SPIN_NS of CPU time (not wall time: on a
                // loaded machine a wall-clock spin is descheduled for most of it).
                let start = thread_cpu_ns();
                while thread_cpu_ns() - start < SPIN_NS {
                    std::hint::spin_loop();
                }
            })
            .unwrap();
        // Clocks count nanoseconds on the CPU; ask for half of the spin (the two clocks
        // sample at ticks).
        assert!(
            busy[0] >= SPIN_NS / 2 && busy[2] >= SPIN_NS / 2,
            "clocks counted the spin: {busy:?}"
        );
        let empty = g.measure(|| {}).unwrap();
        assert!(
            empty[0] < SPIN_NS / 20 && empty[2] < SPIN_NS / 20,
            "reset between regions: {empty:?}"
        );
    }

    /// The vendor's raw group either opens and counts a busy region (or reports that it
    /// was multiplexed), or fails with the `perf` backend's error naming what could not
    /// open: the first raw event of the vendor's table where the PMU is missing (these
    /// guests), or perf_event_open itself where it is forbidden.
    #[cfg(all(feature = "perf", target_os = "linux"))]
    #[test]
    fn the_vendor_group_counts_or_names_what_failed() {
        let (vendor, _) = crate::host::cpu_ident();
        let Some(table) = events_for(&vendor) else {
            let e = CounterGroup::new(&vendor)
                .err()
                .expect("no table, no group");
            assert!(e.to_string().contains("vendor"), "{e}");
            return;
        };
        match CounterGroup::new(&vendor) {
            Ok(mut g) => match g.measure(|| {
                let mut x = 0u64;
                for i in 0..10_000_000u64 {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(i));
                }
            }) {
                Ok(v) => assert!(v[2] + v[3] > 0, "cycles counted: {v:?}"),
                Err(e) => assert!(e.to_string().contains("multiplexed"), "{e}"),
            },
            Err(e) => {
                let e = e.to_string();
                let first = format!("event {}: ", table[0].0);
                assert!(e.contains(&first) || e.contains("perf_event_open: "), "{e}");
            }
        }
    }

    /// CPU time this thread has used, in nanoseconds.
    fn thread_cpu_ns() -> u64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: clock_gettime writes one timespec through the valid pointer.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
    }
}
