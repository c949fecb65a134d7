//! What the proxy keeps between candidates: the graph of every network piece
//! ([`Part`]) and, per configuration prefix, the activations after it together with the
//! part of NASWOT's kernel matrix that the prefix contributed. A candidate then runs only
//! the pieces after its longest prefix already seen (children share most of their
//! parents' layers). The kernel entries are agreement counts (integers in f64), so adding
//! a cached prefix's share gives the same bits as accumulating it again.
//!
//! Activations are bounded by a byte budget; the least recently used prefixes go first.
//! Eviction only costs recomputation, never changes a score, so the order in which
//! parallel evaluations fill the cache does not matter.

use crate::build::{Part, SuperNet, build_part};
use crate::error::Result;
use crate::space::Space;
use pimkit_ir::{Graph, Tensor, TensorType};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Activations after a prefix and that prefix's share of the kernel matrix.
#[derive(Clone, Debug)]
pub struct Prefix {
    pub out: Arc<Tensor>,
    pub kernel: Arc<Vec<f64>>,
}

struct Entry {
    prefix: Prefix,
    tick: u64,
    bytes: usize,
}

#[derive(Default)]
struct Acts {
    map: HashMap<Vec<Part>, Entry>,
    bytes: usize,
}

/// Caches of one evaluator (one supernet, resolution and batch).
pub struct ProxyCache {
    graphs: Mutex<HashMap<(Part, Vec<usize>), Arc<Graph>>>,
    acts: Mutex<Acts>,
    tick: AtomicU64,
    budget_bytes: usize,
}

/// Default activation budget: about 2,000 candidates' worth of new prefixes for the
/// built-in space at the proxy's 32x32 x 4 batch (tens of generations).
pub const DEFAULT_BUDGET_BYTES: usize = 96 << 20;

impl std::fmt::Debug for ProxyCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let a = self.acts.lock().unwrap_or_else(|e| e.into_inner());
        write!(f, "ProxyCache({} prefixes, {} bytes)", a.map.len(), a.bytes)
    }
}

impl ProxyCache {
    pub fn new(budget_bytes: usize) -> ProxyCache {
        ProxyCache {
            graphs: Mutex::new(HashMap::new()),
            acts: Mutex::new(Acts::default()),
            tick: AtomicU64::new(0),
            budget_bytes,
        }
    }

    /// The graph of `part` taking `x_ty` (built once, then shared).
    pub fn graph(
        &self,
        space: &Space,
        net: &SuperNet,
        part: Part,
        res: usize,
        batch: usize,
        x_ty: &TensorType,
    ) -> Result<Arc<Graph>> {
        let key = (part, x_ty.shape.clone());
        if let Some(g) = self.lock_graphs().get(&key) {
            return Ok(g.clone());
        }
        // Built outside the lock; two threads may build the same piece, both identical.
        let g = Arc::new(build_part(space, part, net, res, batch, x_ty)?);
        Ok(self.lock_graphs().entry(key).or_insert(g).clone())
    }

    /// The longest cached proper prefix of `parts`: its length and contents.
    pub fn longest(&self, parts: &[Part]) -> Option<(usize, Prefix)> {
        let tick = self.tick.fetch_add(1, Ordering::Relaxed);
        let mut a = self.lock_acts();
        for n in (1..parts.len()).rev() {
            if let Some(e) = a.map.get_mut(&parts[..n]) {
                e.tick = tick;
                return Some((n, e.prefix.clone()));
            }
        }
        None
    }

    /// Remember the activations and kernel share after `prefix`.
    pub fn put(&self, prefix: &[Part], p: Prefix) {
        let bytes = p.out.numel() * p.out.dtype().size() + p.kernel.len() * 8 + 64;
        let tick = self.tick.fetch_add(1, Ordering::Relaxed);
        let mut a = self.lock_acts();
        if a.map.contains_key(prefix) {
            return;
        }
        a.bytes += bytes;
        a.map.insert(
            prefix.to_vec(),
            Entry {
                prefix: p,
                tick,
                bytes,
            },
        );
        if a.bytes > self.budget_bytes {
            // Drop the least recently used until three quarters of the budget remain.
            let mut by_age: Vec<(u64, Vec<Part>)> =
                a.map.iter().map(|(k, e)| (e.tick, k.clone())).collect();
            by_age.sort_unstable_by_key(|(t, _)| *t);
            for (_, k) in by_age {
                if a.bytes <= self.budget_bytes / 4 * 3 {
                    break;
                }
                if let Some(e) = a.map.remove(&k) {
                    a.bytes -= e.bytes;
                }
            }
        }
    }

    /// Cached prefixes and their bytes.
    pub fn len_bytes(&self) -> (usize, usize) {
        let a = self.lock_acts();
        (a.map.len(), a.bytes)
    }

    fn lock_graphs(&self) -> std::sync::MutexGuard<'_, HashMap<(Part, Vec<usize>), Arc<Graph>>> {
        self.graphs.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn lock_acts(&self) -> std::sync::MutexGuard<'_, Acts> {
        self.acts.lock().unwrap_or_else(|e| e.into_inner())
    }
}
