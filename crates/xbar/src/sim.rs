//! Latency: a discrete-event simulation of samples streaming through the layers (the RNC
//! SimPy model, reference rnc.md §1.7). Every crossbar is a capacity-1 resource that serves
//! one box task at a time in request order; layer j of sample s starts when layer j-1 of
//! sample s is done; a layer's tasks (its pieces on all copies) run on their crossbars and the
//! layer is done when all of them are.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A layer's work for one sample: (crossbar, cycles) per box task.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SimLayer {
    pub tasks: Vec<(u32, u64)>,
}

/// Simulation result in cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SimOut {
    /// Time the last sample leaves the last layer.
    pub latency: u64,
    /// Time the first sample leaves the last layer.
    pub first_sample: u64,
    /// Sum of busy cycles over all crossbars.
    pub busy: u64,
}

/// Run `samples` samples through `layers` on `crossbars` crossbars. `in_order`: a layer also
/// waits for its previous sample (pimkit); otherwise only layer 0 serialises samples (RNC).
pub fn simulate(layers: &[SimLayer], crossbars: usize, samples: usize, in_order: bool) -> SimOut {
    let nl = layers.len();
    if nl == 0 || samples == 0 {
        return SimOut::default();
    }
    let job = |j: usize, s: usize| j * samples + s;
    let njobs = nl * samples;
    let mut deps = vec![0u8; njobs];
    for j in 0..nl {
        for s in 0..samples {
            deps[job(j, s)] = u8::from(j > 0) + u8::from(s > 0 && (j == 0 || in_order));
        }
    }
    let mut left: Vec<u32> = (0..njobs)
        .map(|k| layers[k / samples].tasks.len() as u32)
        .collect();
    let mut busy = vec![false; crossbars];
    let mut queue: Vec<VecDeque<(u32, u64)>> = vec![VecDeque::new(); crossbars];
    let mut heap: BinaryHeap<Reverse<(u64, u64, u32, u32)>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut out = SimOut::default();
    let mut first_done = false;
    // Jobs whose dependencies are met at the current time.
    let mut ready: Vec<usize> = vec![job(0, 0)];
    let mut now = 0u64;
    loop {
        while let Some(k) = ready.pop() {
            let j = k / samples;
            if left[k] == 0 {
                // A layer without work finishes at once.
                complete(
                    k,
                    now,
                    samples,
                    nl,
                    in_order,
                    &mut deps,
                    &mut ready,
                    &mut out,
                    &mut first_done,
                );
                continue;
            }
            for &(x, d) in &layers[j].tasks {
                let x = x as usize;
                if busy[x] {
                    queue[x].push_back((k as u32, d));
                } else {
                    busy[x] = true;
                    out.busy += d;
                    heap.push(Reverse((now + d, seq, x as u32, k as u32)));
                    seq += 1;
                }
            }
        }
        let Some(Reverse((t, _, x, k))) = heap.pop() else {
            break;
        };
        now = t;
        let x = x as usize;
        if let Some((k2, d)) = queue[x].pop_front() {
            out.busy += d;
            heap.push(Reverse((now + d, seq, x as u32, k2)));
            seq += 1;
        } else {
            busy[x] = false;
        }
        let k = k as usize;
        left[k] -= 1;
        if left[k] == 0 {
            complete(
                k,
                now,
                samples,
                nl,
                in_order,
                &mut deps,
                &mut ready,
                &mut out,
                &mut first_done,
            );
        }
    }
    out
}

fn complete(
    k: usize,
    now: u64,
    samples: usize,
    nl: usize,
    in_order: bool,
    deps: &mut [u8],
    ready: &mut Vec<usize>,
    out: &mut SimOut,
    first_done: &mut bool,
) {
    let (j, s) = (k / samples, k % samples);
    if j + 1 == nl {
        out.latency = out.latency.max(now);
        if !*first_done {
            *first_done = true;
            out.first_sample = now;
        }
    }
    let mut release = |kk: usize| {
        deps[kk] -= 1;
        if deps[kk] == 0 {
            ready.push(kk);
        }
    };
    if j + 1 < nl {
        release((j + 1) * samples + s);
    }
    if s + 1 < samples && (j == 0 || in_order) {
        release(j * samples + s + 1);
    }
}
