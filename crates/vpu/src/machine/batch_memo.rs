//! Memoized runs of vector instructions (no DMA, no cache): a 2-D conv repeats the same
//! slides and MACs for every channel pair, and its timing state before them repeats
//! too. The schedule of such a run is a function of the state it reads, taken relative
//! to the host clock: every time it computes is a max or a sum of times and cycle
//! counts, compared with each other or with the host clock, and a time below the host
//! clock only ever meets the host clock (or later times) in a max or a comparison.
//! So a run from a state equal to an earlier one's up to a shift of every time at or
//! after the host clock (times before it counted as "before") leaves the earlier run's
//! result shifted the same: the same clocks, counters and register times as
//! scheduling it instruction by instruction (tested against that).

use super::{Batch, RegTime};
use rustc_hash::FxHashMap;

/// What a run did, relative to the host clock it started at: the clock's and the
/// counters' advance, and the state entries it changed (times relative to that clock,
/// other entries as values).
struct Effect {
    host: u64,
    control: u64,
    comp: u64,
    stall: u64,
    instrs: u64,
    busy: u64,
    changes: Vec<(u32, u64)>,
}

/// The effects of the runs seen so far, keyed by their operation list's name and the
/// relative state they read. Kept per kernel call; bounded.
#[derive(Default)]
pub(crate) struct OpsMemo {
    map: FxHashMap<Vec<u64>, Effect>,
    key: Vec<u64>,
    before: Vec<u64>,
    after: Vec<u64>,
    /// Per state entry: whether it is a time (shifted with the host clock).
    is_time: Vec<bool>,
}

/// Runs shorter than this are not remembered.
const MIN_OPS: u64 = 48;

/// Past this many distinct states the memo starts over (memory stays bounded).
const MAX_ENTRIES: usize = 4096;

impl OpsMemo {
    /// Run `ops` on `b` (they read and write only the registers `regs` of each VPU, issue
    /// only vector instructions, register reads by the host and host loop steps, about
    /// `count` of them, and `name` identifies them with their cycle counts), or apply the
    /// effect of an earlier run from the same relative state. A short run just runs
    /// (looking it up would cost more).
    pub(crate) fn run(
        &mut self,
        b: &mut Batch<'_>,
        name: &[u64],
        regs: &[usize],
        count: u64,
        ops: impl FnOnce(&mut Batch<'_>),
    ) {
        if count < MIN_OPS {
            ops(b);
            return;
        }
        b.state_into(regs, &mut self.before, &mut self.is_time);
        let host0 = b.host;
        self.key.clear();
        self.key.extend_from_slice(name);
        self.key.extend(
            self.before
                .iter()
                .zip(&self.is_time)
                .map(|(&x, &time)| match time {
                    // 0: before the host clock; else the offset from it, plus one.
                    true if x < host0 => 0,
                    true => x - host0 + 1,
                    false => x,
                }),
        );
        if let Some(e) = self.map.get(&self.key) {
            b.apply(regs, host0, e);
            return;
        }
        let c0 = (b.control, b.comp, b.stall, b.instrs, b.busy);
        ops(b);
        b.state_into(regs, &mut self.after, &mut self.is_time);
        // A changed time was written by the run: at or after the host clock it started at.
        let changes = (self.before.iter().zip(&self.after).zip(&self.is_time))
            .enumerate()
            .filter(|(_, ((x, y), _))| x != y)
            .map(|(i, ((_, &y), &time))| (i as u32, if time { y - host0 } else { y }))
            .collect();
        let e = Effect {
            host: b.host - host0,
            control: b.control - c0.0,
            comp: b.comp - c0.1,
            stall: b.stall - c0.2,
            instrs: b.instrs - c0.3,
            busy: b.busy - c0.4,
            changes,
        };
        if self.map.len() >= MAX_ENTRIES {
            self.map.clear();
        }
        self.map.insert(self.key.clone(), e);
    }
}

/// Entries per VPU before its registers: its clock, DMA idle, queue position and
/// fullness.
const VPU_HEAD: usize = 4;

impl Batch<'_> {
    /// The state a run of vector instructions on registers `regs` reads, into `out`
    /// (per VPU: clock, DMA idle, queue position, fullness, queue starts, then each of
    /// `regs`' avail, free and DMA flag), and which entries are times.
    fn state_into(&mut self, regs: &[usize], out: &mut Vec<u64>, is_time: &mut Vec<bool>) {
        self.store();
        let t = &*self.t;
        let (d, vr) = (t.queue.depth, t.vregs);
        out.clear();
        for p in 0..t.vpu_t.len() {
            out.extend([
                t.vpu_t[p],
                t.dma_idle[p],
                t.queue.next[p] as u64,
                u64::from(t.queue.full[p]),
            ]);
            out.extend_from_slice(&t.queue.starts[p * d..(p + 1) * d]);
            for &r in regs {
                let rt = &t.regs[p * vr + r];
                out.extend([rt.avail, rt.free, u64::from(rt.dma)]);
            }
        }
        if is_time.len() != out.len() {
            let per = VPU_HEAD + d + 3 * regs.len();
            is_time.clear();
            is_time.extend((0..out.len()).map(|i| {
                let o = i % per;
                match o {
                    0 => true,
                    1..VPU_HEAD => false,
                    _ if o < VPU_HEAD + d => true,
                    _ => (o - VPU_HEAD - d) % 3 != 2,
                }
            }));
        }
    }

    /// Apply effect `e` of a run that started from the same relative state at host
    /// clock `host0` (the current one).
    fn apply(&mut self, regs: &[usize], host0: u64, e: &Effect) {
        let t = &mut *self.t;
        let (d, vr) = (t.queue.depth, t.vregs);
        let per = VPU_HEAD + d + 3 * regs.len();
        for &(i, v) in &e.changes {
            let (p, o) = (i as usize / per, i as usize % per);
            match o {
                0 => t.vpu_t[p] = host0 + v,
                1 => t.dma_idle[p] = v,
                2 => t.queue.next[p] = v as usize,
                3 => t.queue.full[p] = v != 0,
                _ if o < VPU_HEAD + d => t.queue.starts[p * d + o - VPU_HEAD] = host0 + v,
                _ => {
                    let k = o - VPU_HEAD - d;
                    let rt: &mut RegTime = &mut t.regs[p * vr + regs[k / 3]];
                    match k % 3 {
                        0 => rt.avail = host0 + v,
                        1 => rt.free = host0 + v,
                        _ => rt.dma = v != 0,
                    }
                }
            }
        }
        self.host += e.host;
        self.control += e.control;
        self.comp += e.comp;
        self.stall += e.stall;
        self.instrs += e.instrs;
        self.busy += e.busy;
        self.reload();
    }
}

#[cfg(test)]
mod tests {
    use super::OpsMemo;
    use crate::machine::batch::tests::setup_after;
    use crate::machine::{Batch, Machine};

    const REGS: [usize; 6] = [0, 1, 2, 19, 21, 22];

    fn ops(b: &mut Batch<'_>) {
        b.op(0, 0, 19, 4);
        b.op(0, 19, 21, 7);
        b.op(1, 0, 22, 7);
        b.host_loop();
        b.op(0, 1, 19, 4);
        b.op(0, 19, 22, 7);
        b.op(1, 1, 21, 9);
        b.op(1, 2, 22, 3);
        b.host_loop();
    }

    fn memo_run(m: &mut Machine, memo: &mut OpsMemo) {
        let (b, _) = m.batch(8, 9, 2).unwrap();
        let mut b = b.unwrap();
        memo.run(&mut b, &[7], &REGS, super::MIN_OPS, ops);
        b.end();
    }

    fn direct(m: &mut Machine) {
        let (b, _) = m.batch(8, 9, 2).unwrap();
        let mut b = b.unwrap();
        ops(&mut b);
        b.end();
    }

    /// Same clocks, counters and register times (probed by later instructions).
    fn assert_same(a: &mut Machine, b: &mut Machine) {
        assert_eq!(a.counters(), b.counters());
        assert_eq!((a.now(), a.finish_time()), (b.now(), b.finish_time()));
        for p in 0..2 {
            for r in REGS {
                assert_eq!(a.issue(p, &[r], Some(25), 1), b.issue(p, &[r], Some(25), 1));
                assert_eq!(a.issue(p, &[26], Some(r), 1), b.issue(p, &[26], Some(r), 1));
            }
        }
    }

    #[test]
    fn a_remembered_run_shifts_with_the_host_clock() {
        for depth in [1, 2, 3, 32] {
            let mut memo = OpsMemo::default();
            // Recorded: the run itself.
            let (mut a, mut b) = (setup_after(depth, 0), setup_after(depth, 0));
            memo_run(&mut a, &mut memo);
            direct(&mut b);
            assert_eq!(memo.map.len(), 1);
            // Applied: from the same state 1000 cycles later, and twice in a row (the
            // second run starts from the state the first left, new to the memo or not).
            let (mut c, mut d) = (setup_after(depth, 1000), setup_after(depth, 1000));
            memo_run(&mut c, &mut memo);
            direct(&mut d);
            assert_eq!(memo.map.len(), 1, "the shifted state is the same entry");
            memo_run(&mut c, &mut memo);
            direct(&mut d);
            memo_run(&mut c, &mut memo);
            direct(&mut d);
            assert_same(&mut c, &mut d);
            assert_same(&mut a, &mut b);
        }
    }
}
