//! `auto`'s dataflow trials for one kernel call: every dataflow simulated from the same
//! machine state, the fastest kept (see `Net::run_kernel` for why the outcome is that of
//! running them one after the other).
//!
//! One thread: the family's dataflow runs first with values on the machine itself,
//! then the others on timing-only copies, each stopped as soon as it cannot beat a
//! finished trial (`TrialBound`, and the conv kernel's floor of the work it has left).
//! Two or more: the family's timing (a timing-only copy) and its values (the machine,
//! data-only) start side by side, as `Net::run_halves` runs a known dataflow; the
//! other trials follow on whichever thread is free. The family's timing usually ends
//! first and its time then stops the others early.

use super::{KernelKind, Net};
use crate::error::{Result, VpuError};
use crate::kernels::Dataflow;
use crate::machine::{Machine, TrialBound};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A kernel call with a given dataflow.
pub(super) type KernelRun<'a> = &'a (dyn Fn(&mut Machine, Dataflow) -> Result<()> + Sync);

/// A trial's index in the trial order, result, time from its start and machine.
type Trial = (usize, Result<()>, u64, Machine);

/// Work for the trial threads.
enum Task {
    /// Trial `i` on a timing-only copy (or, on one thread, the family's on the machine).
    Time(usize, Machine),
    /// The family's values on the machine itself (data-only).
    Values(Machine),
}

enum Done {
    Time(Trial),
    Values(Result<()>, Machine),
}

impl Net<'_> {
    /// Try every dataflow of a `kind` kernel call (`family` last and preferred on a
    /// tie), keep the fastest one's run and return it.
    pub(super) fn run_trials(
        &mut self,
        kind: KernelKind,
        family: Dataflow,
        out: (u64, usize),
        run: KernelRun<'_>,
    ) -> Result<Dataflow> {
        // Depthwise WS is IS's schedule (the filter and output are resident in both,
        // kernels/depthwise.rs): one trial fewer.
        let tried: &[Dataflow] = if kind == KernelKind::Depthwise {
            &[Dataflow::Os, Dataflow::Is]
        } else {
            &Dataflow::ALL
        };
        // The family's dataflow last, as the order the results are scanned in.
        let order: Vec<Dataflow> = tried
            .iter()
            .copied()
            .filter(|&d| d != family)
            .chain([family])
            .collect();
        let last = order.len() - 1;
        let bound = TrialBound::new(self.m.now());
        let before = self.m.snapshot(&[out])?;
        let threads = rayon::current_num_threads();
        let split = threads >= 2;
        // The family's trial first (it usually wins, and its time stops the others),
        // then the others, the one that usually runs longest first (`first_started`).
        let mut copies: Vec<Task> = first_started(&order[..last])
            .into_iter()
            .map(|i| Task::Time(i, self.timing_copy()))
            .collect();
        let mut tasks = Vec::with_capacity(order.len() + 1);
        if split {
            tasks.push(Task::Time(last, self.timing_copy()));
        }
        let empty = Machine::empty(&self.m.arch);
        let mut own = std::mem::replace(&mut self.m, empty);
        tasks.push(if split {
            own.set_data_only(true);
            Task::Values(own)
        } else {
            Task::Time(last, own)
        });
        tasks.append(&mut copies);
        let work = |task: Task| match task {
            Task::Time(i, mut m) => {
                m.set_trial_bound(Some(bound.clone()));
                let t0 = m.now();
                let r = run(&mut m, order[i]);
                let t = m.finish_time() - t0;
                if r.is_ok() && !m.overflowed() {
                    bound.finished(t);
                }
                m.set_trial_bound(None);
                Done::Time((i, r, t, m))
            }
            Task::Values(mut m) => {
                let r = run(&mut m, family);
                m.set_data_only(false);
                Done::Values(r, m)
            }
        };
        let mut trials = Vec::with_capacity(order.len());
        let mut values = None;
        for done in in_order(tasks, threads, work)? {
            match done {
                Done::Time(tr) => trials.push(tr),
                Done::Values(r, m) => values = Some((r, m)),
            }
        }
        trials.sort_by_key(|tr| tr.0);
        let mut best: Option<(u64, usize)> = None;
        let mut results = Vec::with_capacity(trials.len());
        let mut family_err = None;
        for (i, (_, r, t, m)) in trials.into_iter().enumerate() {
            let df = order[i];
            let fits = match r {
                Ok(()) => !m.overflowed(),
                Err(e @ (VpuError::VrfTooSmall { .. } | VpuError::Kernel { .. })) => {
                    if i == last {
                        family_err = Some(e);
                    }
                    false
                }
                Err(VpuError::TrialLost) => false,
                Err(e) => return Err(e),
            };
            if fits && best.is_none_or(|(bt, _)| t < bt || (t == bt && df == family)) {
                best = Some((t, i));
            }
            results.push((df, m));
        }
        // The family's machine: with values (one thread), else its timing-only copy.
        let (_, family_m) = results.swap_remove(last);
        let df = match best {
            Some((_, i)) if i == last => {
                self.m = match values {
                    None => family_m,
                    Some((r, mut m)) => {
                        r?;
                        m.adopt_timing(&family_m)?;
                        self.spares.push(family_m);
                        m
                    }
                };
                self.m.finish();
                family
            }
            Some((_, i)) => {
                // A timing-only trial won: run it again with values from the state
                // before the trials.
                let (df, timed) = results.swap_remove(i);
                let mut m = self.values_machine(family_m, values);
                m.restore(before);
                run(&mut m, df)?;
                let same = m.counters() == timed.counters()
                    && m.finish_time() == timed.finish_time()
                    && m.now() == timed.now()
                    && m.overflowed() == timed.overflowed();
                if !same {
                    return Err(VpuError::Other(format!(
                        "the {} trial's timing-only run and its run with values differ (a pimkit-vpu bug: please report)",
                        df.name()
                    )));
                }
                self.m = m;
                self.spares.push(timed);
                df
            }
            // No trial fits: the family's ran (or runs again, when its values ran
            // apart) from the original state, as the run of the family's dataflow does
            // (it was never stopped: no trial finished); its error, or its overflowed
            // clock, which the caller reports.
            None => {
                let split = values.is_some();
                let mut m = self.values_machine(family_m, values);
                let r = if split {
                    m.restore(before);
                    run(&mut m, family)
                } else {
                    Ok(())
                };
                self.m = m;
                self.spares.extend(results.into_iter().map(|(_, m)| m));
                r?;
                return match family_err {
                    Some(e) => Err(e),
                    None => Ok(family),
                };
            }
        };
        self.spares.extend(results.into_iter().map(|(_, m)| m));
        Ok(df)
    }

    /// A timing-only copy of the machine (a spare one's memory reused).
    pub(super) fn timing_copy(&mut self) -> Machine {
        let mut copy = self
            .spares
            .pop()
            .unwrap_or_else(|| Machine::empty(&self.m.arch));
        self.m.timing_copy_into(&mut copy);
        copy
    }

    /// The machine holding the values: the family's trial (one thread) or its
    /// values half (the family's timing copy becomes a spare).
    fn values_machine(
        &mut self,
        family: Machine,
        values: Option<(Result<()>, Machine)>,
    ) -> Machine {
        match values {
            None => family,
            Some((_, m)) => {
                self.spares.push(family);
                m
            }
        }
    }
}

/// The indices of the non-family trials `others` in the order their tasks start: WS
/// first. On two threads the first of them starts beside the family's timing, before
/// its time can stop it, and WS trials run longest (filter loads and partial-sum spills
/// per channel pair; the conv floor stops them latest, as they are often close to the
/// winner), so the one that starts unbounded is the one a bound would shorten least.
/// The order changes no result: the scan for the winner keeps the trial order.
fn first_started(others: &[Dataflow]) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..others.len()).collect();
    idx.sort_by_key(|&i| others[i] != Dataflow::Ws);
    idx
}

/// `work` on every task, on up to `threads` threads, each taking the next task in order
/// when free; the results in task order.
fn in_order<T: Send, R: Send>(
    tasks: Vec<T>,
    threads: usize,
    work: impl Fn(T) -> R + Sync,
) -> Result<Vec<R>> {
    let n = tasks.len();
    let tasks: Vec<Mutex<Option<T>>> = tasks.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let outs: Vec<Mutex<Option<R>>> = (0..n).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    let worker = || {
        loop {
            let k = next.fetch_add(1, Ordering::Relaxed);
            let Some(slot) = tasks.get(k) else { break };
            let task = slot.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(task) = task {
                let r = work(task);
                *outs[k].lock().unwrap_or_else(|e| e.into_inner()) = Some(r);
            }
        }
    };
    let bug = || VpuError::Other("a dataflow trial's thread panicked (a pimkit-vpu bug)".into());
    std::thread::scope(|s| {
        let others: Vec<_> = (1..threads.min(n)).map(|_| s.spawn(worker)).collect();
        worker();
        others
            .into_iter()
            .try_for_each(|h| h.join().map_err(|_| bug()))
    })?;
    outs.into_iter()
        .map(|o| {
            o.into_inner()
                .unwrap_or_else(|e| e.into_inner())
                .ok_or_else(bug)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ws_trials_start_first_and_the_others_keep_their_order() {
        use Dataflow::{Is, Os, Ws};
        assert_eq!(first_started(&[Is, Ws]), vec![1, 0]);
        assert_eq!(first_started(&[Os, Ws]), vec![1, 0]);
        assert_eq!(first_started(&[Os, Is]), vec![0, 1]);
        assert_eq!(first_started(&[Ws, Is]), vec![0, 1]);
        assert_eq!(first_started(&[Os]), vec![0]);
    }
}
