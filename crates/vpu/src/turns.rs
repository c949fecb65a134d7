//! Fair turns for `auto`'s trials when a layer has more trials than worker threads.
//!
//! With two threads and three trials, running two trials to their ends first leaves
//! the third alone at the end: the family's trial (which usually wins and whose time
//! stops the others) holds one thread, the others share the rest by taking turns of a
//! few milliseconds each, so every loser reaches the winner's time at about the same
//! moment. At most `permits` trials run at once (with the family's own thread, the
//! `--threads` count); once the family's trial ends, its thread takes turns too. Which trial wins does not depend on the turns (see
//! `machine::TrialBound`): only the wall time does.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// How long a trial runs before it lets a waiting one go first.
const SLICE: Duration = Duration::from_millis(3);
/// Bound checks (one per DMA) between two looks at the clock.
const CHECK_EVERY: u32 = 64;

/// A first-come, first-served semaphore.
#[derive(Debug)]
pub struct Turns {
    state: Mutex<State>,
    cv: Condvar,
}

#[derive(Debug)]
struct State {
    free: usize,
    next_ticket: u64,
    waiting: VecDeque<u64>,
}

thread_local! {
    /// This thread's bound checks since its last look at the clock, and when its turn began.
    static TICKS: Cell<u32> = const { Cell::new(0) };
    static SINCE: Cell<Option<Instant>> = const { Cell::new(None) };
}

impl Turns {
    pub fn new(permits: usize) -> Turns {
        Turns {
            state: Mutex::new(State {
                free: permits.max(1),
                next_ticket: 0,
                waiting: VecDeque::new(),
            }),
            cv: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking trial thread is reported by its join; the counts stay usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wait for a turn (behind every thread already waiting), for the calling thread.
    pub fn acquire(&self) {
        let mut s = self.lock();
        let me = s.next_ticket;
        s.next_ticket += 1;
        s.waiting.push_back(me);
        while !(s.free > 0 && s.waiting.front() == Some(&me)) {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.waiting.pop_front();
        s.free -= 1;
        drop(s);
        // The next in line may find a permit too.
        self.cv.notify_all();
        TICKS.with(|t| t.set(0));
        SINCE.with(|t| t.set(Some(Instant::now())));
    }

    /// One more trial may run at once (a thread that held no turn became free).
    pub fn add_permit(&self) {
        self.lock().free += 1;
        self.cv.notify_all();
    }

    /// Give the calling thread's turn back.
    pub fn release(&self) {
        self.lock().free += 1;
        self.cv.notify_all();
        SINCE.with(|t| t.set(None));
    }

    /// Called at each bound check of a trial holding a turn: once its slice is used
    /// up and another trial waits, go to the back of the line.
    pub fn tick(&self) {
        let n = TICKS.with(|t| {
            let n = t.get() + 1;
            t.set(n % CHECK_EVERY);
            n
        });
        if n < CHECK_EVERY {
            return;
        }
        let Some(since) = SINCE.with(Cell::get) else {
            return;
        };
        if since.elapsed() < SLICE {
            return;
        }
        if self.lock().waiting.is_empty() {
            SINCE.with(|t| t.set(Some(Instant::now())));
            return;
        }
        self.release();
        self.acquire();
    }
}

/// A turn held by the calling thread until dropped (also when its trial fails).
pub struct Turn<'a>(&'a Turns);

impl<'a> Turn<'a> {
    pub fn take(t: &'a Turns) -> Turn<'a> {
        t.acquire();
        Turn(t)
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn at_most_permits_run_and_every_waiter_gets_a_turn() {
        let turns = Arc::new(Turns::new(1));
        let running = Arc::new(AtomicUsize::new(0));
        let done = Arc::new(AtomicUsize::new(0));
        std::thread::scope(|s| {
            for _ in 0..3 {
                let (turns, running, done) = (&turns, &running, &done);
                s.spawn(move || {
                    let _turn = Turn::take(turns);
                    let start = Instant::now();
                    while start.elapsed() < Duration::from_millis(20) {
                        assert_eq!(running.fetch_add(1, Ordering::SeqCst), 0);
                        running.fetch_sub(1, Ordering::SeqCst);
                        turns.tick();
                    }
                    done.fetch_add(1, Ordering::SeqCst);
                });
            }
        });
        assert_eq!(done.load(Ordering::SeqCst), 3);
    }
}
