//! Independent work items on a pool of N threads, results in item order (the CLI's
//! `--jobs N`).
//!
//! Sweep points, NAS candidates and sweep sizes are independent: [`par_map`] runs them on a
//! dedicated rayon pool of [`jobs`] threads and returns the results in the order of the
//! items, so the output never depends on N or on which item finished first. `--jobs 1`
//! runs the items one after the other on the calling thread.
//!
//! **Threads.** While items run in parallel, the kernels inside each item (the
//! interpreter's, the VPU simulator's) run on the same N threads by rayon's nested work
//! stealing, so the process computes on at most N threads; the interpreter's `--threads`
//! sizes the kernels only where items run one at a time (`--jobs 1`, or commands without
//! independent items). An interpreter pool private to `pimkit_interp` (only when rayon's
//! global pool was already sized otherwise, e.g. in the Python package) is the one
//! exception: kernels then run on that pool while the item threads wait for them.

use rayon::prelude::*;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The process-wide setting; 0 = all cores.
static JOBS: AtomicUsize = AtomicUsize::new(0);
/// The dedicated pool, rebuilt when the setting changes.
static POOL: Mutex<Option<Arc<rayon::ThreadPool>>> = Mutex::new(None);

thread_local! {
    /// [`with_jobs`]'s override for the calling thread.
    static SCOPED: Cell<Option<usize>> = const { Cell::new(None) };
}

/// Run independent items on `n` threads from now on (`0`: all cores).
pub fn set_jobs(n: usize) {
    JOBS.store(n, Ordering::Relaxed);
}

/// Run `f` with `n` item threads on the calling thread only (`0`: all cores), e.g. one
/// call of a library function from a test or from Python, without touching the
/// process-wide setting.
pub fn with_jobs<R>(n: usize, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<usize>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SCOPED.with(|s| s.set(self.0));
        }
    }
    let _restore = Restore(SCOPED.with(|s| s.replace(Some(n))));
    f()
}

/// The number of items that run at once.
pub fn jobs() -> usize {
    let n = SCOPED
        .with(Cell::get)
        .unwrap_or_else(|| JOBS.load(Ordering::Relaxed));
    if n == 0 {
        std::thread::available_parallelism().map_or(1, |p| p.get())
    } else {
        n
    }
}

/// The pool of `n` threads (`None` if the threads cannot be started: run serially).
fn pool(n: usize) -> Option<Arc<rayon::ThreadPool>> {
    let mut slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = slot.as_ref().filter(|p| p.current_num_threads() == n) {
        return Some(p.clone());
    }
    let p = rayon::ThreadPoolBuilder::new()
        .num_threads(n)
        .thread_name(|i| format!("pimkit-job-{i}"))
        .build()
        .ok()
        .map(Arc::new)?;
    *slot = Some(p.clone());
    Some(p)
}

/// Whether the calling thread is one of the item pool's (a nested [`par_map`]).
fn inside_pool() -> bool {
    let slot = POOL.lock().unwrap_or_else(|e| e.into_inner());
    slot.as_ref()
        .is_some_and(|p| p.current_thread_index().is_some())
}

/// `f` over every item on [`jobs`] threads; the results in item order.
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    par_map_progress(items, f, &mut |_, _| {})
}

/// [`par_map`], calling `done(index, &result)` on the calling thread as each item
/// finishes (in completion order, which varies from run to run; the returned results
/// are in item order). Progress displays count the calls.
pub fn par_map_progress<T: Sync, R: Send>(
    items: &[T],
    f: impl Fn(&T) -> R + Sync,
    done: &mut dyn FnMut(usize, &R),
) -> Vec<R> {
    let n = jobs();
    if n <= 1 || items.len() <= 1 {
        return serial(items, &f, done);
    }
    if inside_pool() {
        // Already on an item thread: share its pool instead of starting another.
        let out: Vec<R> = items.par_iter().map(&f).collect();
        for (i, r) in out.iter().enumerate() {
            done(i, r);
        }
        return out;
    }
    let Some(pool) = pool(n) else {
        return serial(items, &f, done);
    };
    let (tx, rx) = std::sync::mpsc::channel::<(usize, R)>();
    std::thread::scope(|s| {
        let worker = s.spawn(|| {
            pool.install(|| {
                items
                    .par_iter()
                    .enumerate()
                    .for_each_with(tx, |tx, (i, x)| {
                        // The receiver lives until every sender is gone.
                        let _ = tx.send((i, f(x)));
                    })
            })
        });
        let mut slots: Vec<Option<R>> = items.iter().map(|_| None).collect();
        for (i, r) in rx {
            done(i, &r);
            slots[i] = Some(r);
        }
        if let Err(panic) = worker.join() {
            std::panic::resume_unwind(panic);
        }
        slots
            .into_iter()
            .map(|r| r.expect("every item sends its result before the pool returns"))
            .collect()
    })
}

fn serial<T, R>(items: &[T], f: &impl Fn(&T) -> R, done: &mut dyn FnMut(usize, &R)) -> Vec<R> {
    items
        .iter()
        .enumerate()
        .map(|(i, x)| {
            let r = f(x);
            done(i, &r);
            r
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slow_square(x: &u64) -> u64 {
        // Later items finish first: the order of the results must not follow completion.
        std::thread::sleep(std::time::Duration::from_millis(20 - *x));
        x * x
    }

    #[test]
    fn results_are_in_item_order_whatever_the_thread_count() {
        let items: Vec<u64> = (0..20).collect();
        let want: Vec<u64> = items.iter().map(|x| x * x).collect();
        for n in [1, 2, 3, 8] {
            let mut seen = vec![];
            let got = with_jobs(n, || {
                par_map_progress(&items, slow_square, &mut |i, r| seen.push((i, *r)))
            });
            assert_eq!(got, want, "jobs {n}");
            seen.sort();
            let all: Vec<(usize, u64)> = want.iter().copied().enumerate().collect();
            assert_eq!(
                seen, all,
                "every item reported once with its result (jobs {n})"
            );
        }
    }

    #[test]
    fn items_run_concurrently_with_more_than_one_job() {
        use std::sync::atomic::AtomicUsize;
        let (now, most) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let items: Vec<u32> = (0..8).collect();
        with_jobs(2, || {
            par_map(&items, |_| {
                let k = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(k, Ordering::SeqCst);
                std::thread::sleep(std::time::Duration::from_millis(30));
                now.fetch_sub(1, Ordering::SeqCst);
            })
        });
        assert_eq!(
            most.load(Ordering::SeqCst),
            2,
            "two items at once, never more"
        );
        most.store(0, Ordering::SeqCst);
        with_jobs(1, || {
            par_map(&items, |_| {
                let k = now.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(k, Ordering::SeqCst);
                now.fetch_sub(1, Ordering::SeqCst);
            })
        });
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn nested_calls_share_the_pool_and_keep_the_order() {
        let outer: Vec<u64> = (0..4).collect();
        let got = with_jobs(2, || {
            par_map(&outer, |&a| {
                let inner: Vec<u64> = (0..5).map(|b| a * 10 + b).collect();
                par_map(&inner, |x| x + 1)
            })
        });
        let want: Vec<Vec<u64>> = outer
            .iter()
            .map(|a| (0..5).map(|b| a * 10 + b + 1).collect())
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn a_panicking_item_panics_the_caller() {
        let items = [1, 2, 3, 4];
        let r = std::panic::catch_unwind(|| {
            with_jobs(2, || {
                par_map(&items, |&x| if x == 3 { panic!("item 3") } else { x })
            })
        });
        assert!(r.is_err());
    }

    #[test]
    fn with_jobs_restores_the_setting() {
        let before = jobs();
        with_jobs(3, || assert_eq!(jobs(), 3));
        assert_eq!(jobs(), before);
    }
}
