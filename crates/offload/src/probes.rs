//! Native bandwidth probes for the host calibration, compiled with the same C compiler
//! and flags as the nests (pimkit-loops' `NativeOptions`) so both see the same code quality.

use crate::error::{OffloadError, Result, io_err};
use std::process::Command;
use std::time::Instant;

const SRC: &str = r#"
#include <stdint.h>
#include <stddef.h>
/* Sum of int32 (vectorizes without reassociating floats). */
int64_t pk_probe_read(const int32_t *restrict a, size_t n) {
  int64_t s = 0;
  for (size_t i = 0; i < n; i++) s += a[i];
  return s;
}
void pk_probe_fill(float *restrict a, size_t n, float v) {
  for (size_t i = 0; i < n; i++) a[i] = v;
}
"#;

type ReadFn = unsafe extern "C" fn(*const i32, usize) -> i64;
type FillFn = unsafe extern "C" fn(*mut f32, usize, f32);

pub struct Probes {
    _lib: libloading::Library,
    read: ReadFn,
    fill: FillFn,
}

impl Probes {
    pub fn load() -> Result<Probes> {
        let o = pimkit_loops::NativeOptions::default();
        std::fs::create_dir_all(&o.cache_dir).map_err(io_err(&o.cache_dir))?;
        let tag = format!("{}", std::process::id());
        let c = o.cache_dir.join(format!("pk_probe_{tag}.c"));
        let so = o.cache_dir.join(format!("pk_probe_{tag}.so"));
        std::fs::write(&c, SRC).map_err(io_err(&c))?;
        let out = Command::new(&o.cc)
            .args(&o.flags)
            .arg("-o")
            .arg(&so)
            .arg(&c)
            .output()
            .map_err(|e| OffloadError::Usage(format!("C compiler '{}': {e}", o.cc.display())))?;
        let _ = std::fs::remove_file(&c);
        if !out.status.success() {
            return Err(OffloadError::Usage(format!(
                "C compiler '{}' failed on the calibration probes: {}",
                o.cc.display(),
                String::from_utf8_lossy(&out.stderr)
            )));
        }
        // SAFETY: our own code, no initializers.
        let lib = unsafe { libloading::Library::new(&so) }
            .map_err(|e| OffloadError::Usage(format!("loading {}: {e}", so.display())))?;
        let _ = std::fs::remove_file(&so);
        // SAFETY: the symbols have exactly these signatures (SRC above).
        let (read, fill) = unsafe {
            let r: ReadFn = *lib
                .get::<ReadFn>(b"pk_probe_read")
                .map_err(|e| OffloadError::Usage(e.to_string()))?;
            let f: FillFn = *lib
                .get::<FillFn>(b"pk_probe_fill")
                .map_err(|e| OffloadError::Usage(e.to_string()))?;
            (r, f)
        };
        Ok(Probes {
            _lib: lib,
            read,
            fill,
        })
    }

    /// Best-of-`reps` read bandwidth over `bytes` (GB/s).
    pub fn read_gbs(&self, bytes: usize, reps: usize) -> f64 {
        let n = bytes / 4;
        let a: Vec<i32> = (0..n as i32).collect();
        let mut best = 0.0f64;
        for _ in 0..reps.max(1) {
            let t = Instant::now();
            // SAFETY: a holds n elements.
            let s = unsafe { (self.read)(a.as_ptr(), n) };
            let dt = t.elapsed().as_secs_f64();
            std::hint::black_box(s);
            best = best.max(bytes as f64 / dt / 1e9);
        }
        best
    }

    /// Aggregate read bandwidth of `threads` concurrent read streams of `bytes` each
    /// (GB/s, best of `reps` rounds): what the machine's cores can pull from the memory
    /// system together. On a VM with few vCPUs this is a lower bound of the memory
    /// system's bandwidth (edit `b_mem_gbs` in the host file to the platform's figure).
    pub fn read_gbs_parallel(&self, bytes: usize, threads: usize, reps: usize) -> f64 {
        let threads = threads.max(1);
        let n = bytes / 4;
        let bufs: Vec<Vec<i32>> = (0..threads).map(|_| (0..n as i32).collect()).collect();
        let read = self.read;
        let mut best = 0.0f64;
        for _ in 0..reps.max(1) {
            let barrier = std::sync::Barrier::new(threads);
            let t0 = Instant::now();
            let ends: Vec<f64> = std::thread::scope(|s| {
                let hs: Vec<_> = bufs
                    .iter()
                    .map(|a| {
                        let b = &barrier;
                        s.spawn(move || {
                            b.wait();
                            // SAFETY: a holds n elements.
                            let r = unsafe { read(a.as_ptr(), n) };
                            std::hint::black_box(r);
                            t0.elapsed().as_secs_f64()
                        })
                    })
                    .collect();
                hs.into_iter()
                    .map(|h| h.join().unwrap_or(f64::MAX))
                    .collect()
            });
            let dt = ends.iter().copied().fold(0.0, f64::max);
            best = best.max((bytes * threads) as f64 / dt / 1e9);
        }
        best
    }

    /// Best-of-`reps` store bandwidth over `bytes` (GB/s).
    pub fn store_gbs(&self, bytes: usize, reps: usize) -> f64 {
        let n = bytes / 4;
        let mut a = vec![0f32; n];
        let mut best = 0.0f64;
        for r in 0..reps.max(1) + 1 {
            let t = Instant::now();
            // SAFETY: a holds n elements.
            unsafe { (self.fill)(a.as_mut_ptr(), n, 1.0 + r as f32) };
            let dt = t.elapsed().as_secs_f64();
            std::hint::black_box(&a);
            if r > 0 {
                best = best.max(bytes as f64 / dt / 1e9);
            }
        }
        best
    }

    /// Median effective bandwidth of a fill of `bytes` whose lines were evicted first by
    /// streaming over `evict` bytes (GB/s).
    pub fn cold_store_gbs(&self, bytes: usize, evict: usize, reps: usize) -> f64 {
        let n = (bytes / 4).max(1);
        let mut a = vec![0f32; n];
        let mut e = vec![0f32; evict / 4];
        let mut v = vec![];
        for r in 0..reps.max(1) {
            // SAFETY: e and a hold the given element counts.
            unsafe { (self.fill)(e.as_mut_ptr(), e.len(), r as f32) };
            let t = Instant::now();
            unsafe { (self.fill)(a.as_mut_ptr(), n, 2.0 + r as f32) };
            let dt = t.elapsed().as_secs_f64();
            std::hint::black_box(&a);
            v.push(bytes as f64 / dt / 1e9);
        }
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    }
}
