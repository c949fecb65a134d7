//! Reinsertion (torch-pim.txt Figure 1, stage 2): the final CPU–PIM program. The nests'
//! C (pimkit-loops codegen) plus `pk_program(bufs)`, which runs them in order and brackets
//! every PIM segment with calls into a small runtime interface (`pim_runtime.h`):
//!
//! ```c
//! typedef struct { int alloc; unsigned long long bytes; } pk_span;
//! void pk_pim_segment_begin(int seg, const pk_span *reads, int n_reads,
//!                           const pk_span *writes, int n_writes);
//! void pk_pim_segment_end(int seg);
//! ```
//!
//! `reads`/`writes` are the segment's charged read and write sets of equation (8) (per
//! allocation, produced-in-segment and in-place buffers counted once). The default runtime
//! (`pim_runtime.c`) runs segments on the host and counts transitions and bytes; the
//! check compiles both, runs `pk_program` once and compares the counts with the model's
//! N_region and movement.

use crate::error::{OffloadError, Result, io_err};
use crate::movement::{SegmentAcc, segments};
use crate::workload::Workload;
use pimkit_loops::{NativeOptions, Program};
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

pub const RUNTIME_H: &str = r#"/* pimkit offload runtime interface (see docs/offload.md, "Reinsertion").
 * A PIM runtime implements these two calls; pimkit's generated program calls them
 * around every segment of consecutive offloaded loop nests. */
#ifndef PIM_RUNTIME_H
#define PIM_RUNTIME_H
typedef struct { int alloc; unsigned long long bytes; } pk_span;
/* Enter segment `seg`: `reads` must reach the PIM side first (fetch). */
void pk_pim_segment_begin(int seg, const pk_span *reads, int n_reads,
                          const pk_span *writes, int n_writes);
/* Leave segment `seg`: the write set given at begin returns to the host (flush). */
void pk_pim_segment_end(int seg);
/* Counters of the default runtime: transitions, fetched bytes, flushed bytes. */
void pk_rt_stats(unsigned long long out[3]);
void pk_rt_reset(void);
#endif
"#;

pub const RUNTIME_C: &str = r#"/* Default pimkit offload runtime: segments run on the host; count what a PIM runtime
 * would have to do (two transitions per segment, fetch at begin, flush at end). */
#include "pim_runtime.h"
static unsigned long long transitions, fetched, flushed, pending_flush;
void pk_pim_segment_begin(int seg, const pk_span *reads, int n_reads,
                          const pk_span *writes, int n_writes) {
  (void)seg;
  transitions++;
  for (int i = 0; i < n_reads; i++) fetched += reads[i].bytes;
  pending_flush = 0;
  for (int i = 0; i < n_writes; i++) pending_flush += writes[i].bytes;
}
void pk_pim_segment_end(int seg) {
  (void)seg;
  transitions++;
  flushed += pending_flush;
  pending_flush = 0;
}
void pk_rt_stats(unsigned long long out[3]) { out[0] = transitions; out[1] = fetched; out[2] = flushed; }
void pk_rt_reset(void) { transitions = fetched = flushed = pending_flush = 0; }
"#;

#[derive(Clone, Debug, Serialize)]
pub struct EmitReport {
    pub dir: PathBuf,
    pub segments: usize,
    pub model_n_region: usize,
    pub model_bytes: u64,
    pub runtime_transitions: u64,
    pub runtime_bytes: u64,
    /// Runtime counts equal the model's.
    pub consistent: bool,
}

fn spans(name: &str, v: &[(usize, u64)], out: &mut String) {
    if v.is_empty() {
        writeln!(out, "  static const pk_span {name}[1] = {{{{0, 0}}}};").unwrap();
        return;
    }
    let items: Vec<String> = v.iter().map(|(a, b)| format!("{{{a}, {b}ULL}}")).collect();
    writeln!(
        out,
        "  static const pk_span {name}[{}] = {{{}}};",
        v.len(),
        items.join(", ")
    )
    .unwrap();
}

/// The marked program's C source and the model's (N_region, bytes).
pub fn emit_program(p: &Program, w: &Workload, place: &[bool]) -> Result<(String, usize, u64)> {
    let mut s = pimkit_loops::codegen::emit_c(p)?;
    s.push_str("\n#include \"pim_runtime.h\"\n\n/* The CPU-PIM program: nests in order, PIM segments marked. */\n");
    s.push_str("void pk_program(void *const *bufs) {\n");
    let segs = segments(place);
    let mut bytes = 0u64;
    let mut i = 0;
    let mut k = 0;
    while i < p.nests.len() {
        if let Some(&(st, en)) = segs.get(k).filter(|x| x.0 == i) {
            let mut acc = SegmentAcc::default();
            for j in st..en {
                acc.push(w, j);
            }
            let (r, wr) = acc.sets();
            bytes += r.iter().chain(&wr).map(|x| x.1).sum::<u64>();
            writeln!(s, "  {{ /* PIM segment {k}: nests {st}..{} */", en - 1).unwrap();
            spans(&format!("rd{k}"), &r, &mut s);
            spans(&format!("wr{k}"), &wr, &mut s);
            writeln!(
                s,
                "  pk_pim_segment_begin({k}, rd{k}, {}, wr{k}, {});",
                r.len(),
                wr.len()
            )
            .unwrap();
            for j in st..en {
                writeln!(s, "  pk_nest_{j}(bufs);").unwrap();
            }
            writeln!(s, "  pk_pim_segment_end({k});\n  }}").unwrap();
            i = en;
            k += 1;
        } else {
            writeln!(s, "  pk_nest_{i}(bufs);").unwrap();
            i += 1;
        }
    }
    s.push_str("}\n");
    Ok((s, 2 * segs.len(), bytes))
}

type ProgFn = unsafe extern "C" fn(*const *mut u8);
type StatsFn = unsafe extern "C" fn(*mut u64);

/// Write program.c, pim_runtime.{h,c} and README.md to `dir`, compile them, run the program
/// once on the default runtime and compare its counts with the model's.
pub fn emit_and_check(p: &Program, place: &[bool], dir: &Path) -> Result<EmitReport> {
    let w = Workload::new(
        p,
        &vec![0.0; p.nests.len()],
        &[],
        &crate::PimArch::default(),
    );
    let (src, n_region, bytes) = emit_program(p, &w, place)?;
    std::fs::create_dir_all(dir).map_err(io_err(dir))?;
    let wf = |name: &str, text: &str| -> Result<PathBuf> {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(io_err(&path))?;
        Ok(path)
    };
    let prog_c = wf("program.c", &src)?;
    let rt_c = wf("pim_runtime.c", RUNTIME_C)?;
    wf("pim_runtime.h", RUNTIME_H)?;
    wf(
        "README.md",
        &format!(
            "# {}: CPU-PIM program emitted by `pimkit offload --emit`\n\n\
             `program.c` holds one function per loop nest and `pk_program(bufs)`, which runs them in \
             order with `pk_pim_segment_begin/end` around each of the {} PIM segments. `bufs[i]` is \
             allocation i (sizes in `program.c`'s header comment). `pim_runtime.c` is the default \
             runtime: it runs segments on the host and counts transitions and bytes. Link a real PIM \
             runtime instead to execute segments on PIM.\n\n\
             Build: `cc -O3 -march=native -fPIC -shared -o libprogram.so program.c pim_runtime.c -lm`\n",
            p.name,
            n_region / 2
        ),
    )?;
    let o = NativeOptions::default();
    let so = dir.join("libprogram.so");
    let out = Command::new(&o.cc)
        .args(&o.flags)
        .arg("-I")
        .arg(dir)
        .arg("-o")
        .arg(&so)
        .arg(&prog_c)
        .arg(&rt_c)
        .arg("-lm")
        .output()
        .map_err(|e| OffloadError::Reinsert(format!("C compiler '{}': {e}", o.cc.display())))?;
    if !out.status.success() {
        return Err(OffloadError::Reinsert(format!(
            "compiling {}: {}",
            prog_c.display(),
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    // SAFETY: our generated library, no initializers; signatures as declared above.
    let lib = unsafe { libloading::Library::new(&so) }
        .map_err(|e| OffloadError::Reinsert(e.to_string()))?;
    let (prog, stats) = unsafe {
        let f: ProgFn = *lib
            .get::<ProgFn>(b"pk_program")
            .map_err(|e| OffloadError::Reinsert(e.to_string()))?;
        let s: StatsFn = *lib
            .get::<StatsFn>(b"pk_rt_stats")
            .map_err(|e| OffloadError::Reinsert(e.to_string()))?;
        (f, s)
    };
    let layouts: Vec<std::alloc::Layout> = p
        .allocs
        .iter()
        .map(|a| std::alloc::Layout::from_size_align(a.bytes().max(64), 64))
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| OffloadError::Reinsert(e.to_string()))?;
    // SAFETY: non-zero sizes; freed below with the same layouts.
    let ptrs: Vec<*mut u8> = layouts
        .iter()
        .map(|l| unsafe { std::alloc::alloc_zeroed(*l) })
        .collect();
    if ptrs.iter().any(|p| p.is_null()) {
        for (q, l) in ptrs.iter().zip(&layouts) {
            if !q.is_null() {
                unsafe { std::alloc::dealloc(*q, *l) };
            }
        }
        return Err(OffloadError::Reinsert(
            "out of memory allocating the program's buffers".into(),
        ));
    }
    let mut st = [0u64; 3];
    // SAFETY: every nest indexes within its allocations (sized by the lowering).
    unsafe {
        prog(ptrs.as_ptr());
        stats(st.as_mut_ptr());
    }
    for (q, l) in ptrs.iter().zip(&layouts) {
        unsafe { std::alloc::dealloc(*q, *l) };
    }
    let rt_bytes = st[1] + st[2];
    Ok(EmitReport {
        dir: dir.to_path_buf(),
        segments: n_region / 2,
        model_n_region: n_region,
        model_bytes: bytes,
        runtime_transitions: st[0],
        runtime_bytes: rt_bytes,
        consistent: st[0] == n_region as u64 && rt_bytes == bytes,
    })
}
