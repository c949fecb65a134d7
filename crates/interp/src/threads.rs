//! How many worker threads the kernels use.
//!
//! The kernels parallelize with rayon. [`set_threads`] first tries to size rayon's global
//! pool (so everything else a program runs on rayon follows the same setting); when that
//! pool already exists with another size, the interpreter keeps a private pool of the
//! requested size and runs every node inside it.
//!
//! Results never depend on the thread count: work is split over output elements, never
//! over a reduction, so every output is summed in the same order by one thread (integer
//! graphs are bit-identical by construction, float graphs too).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// 0 = rayon's global pool as it is (all cores unless sized otherwise).
static REQUESTED: AtomicUsize = AtomicUsize::new(0);
static PRIVATE: Mutex<Option<Arc<rayon::ThreadPool>>> = Mutex::new(None);

/// Use `n` worker threads for model execution (`0`: all cores). Call it early (before
/// anything else uses rayon) so that rayon's global pool itself gets `n` threads.
pub fn set_threads(n: usize) -> Result<(), String> {
    let global = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .build_global();
    let want = if n == 0 {
        std::thread::available_parallelism().map_or(1, |p| p.get())
    } else {
        n
    };
    let mut private = PRIVATE.lock().unwrap_or_else(|e| e.into_inner());
    *private = None;
    if global.is_err() && rayon::current_num_threads() != want {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(want)
            .build()
            .map_err(|e| format!("cannot start {want} worker threads: {e}"))?;
        *private = Some(Arc::new(pool));
    }
    REQUESTED.store(n, Ordering::Relaxed);
    Ok(())
}

/// The number of worker threads the interpreter runs on.
pub fn threads() -> usize {
    let private = PRIVATE.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match private {
        Some(p) => p.current_num_threads(),
        None => rayon::current_num_threads(),
    }
}

/// Run `f` on the interpreter's pool.
pub(crate) fn install<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let private = PRIVATE.lock().unwrap_or_else(|e| e.into_inner()).clone();
    match private {
        Some(p) => p.install(f),
        None => f(),
    }
}
