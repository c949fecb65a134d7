//! Activity counts (operations per inference, by component kind) and their energy.

use crate::components::Kind;
use crate::model::Model;
use serde::Serialize;
use std::collections::BTreeMap;

/// Operations per inference of each kind (array reads in full-array equivalents: a read
/// that drives a quarter of the rows counts 0.25; bytes for per-byte kinds).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Counts(pub BTreeMap<Kind, f64>);

impl Counts {
    pub fn add(&mut self, kind: Kind, n: f64) {
        *self.0.entry(kind).or_default() += n;
    }

    pub fn get(&self, kind: Kind) -> f64 {
        self.0.get(&kind).copied().unwrap_or(0.0)
    }

    pub fn merge(&mut self, other: &Counts) {
        for (k, v) in &other.0 {
            self.add(*k, *v);
        }
    }

    /// Every count times `f` (per inference → per `f` inferences).
    pub fn scaled(&self, f: f64) -> Counts {
        Counts(self.0.iter().map(|(k, v)| (*k, v * f)).collect())
    }

    /// Dynamic energy by component, pJ; kinds counted that no component of the library
    /// takes are returned apart (reported, not costed).
    pub fn energy(&self, m: &Model) -> (BTreeMap<String, f64>, Vec<Kind>) {
        let mut by = BTreeMap::new();
        for c in &m.components {
            let n = self.get(c.kind);
            *by.entry(c.name.clone()).or_insert(0.0) += n * c.energy_pj;
        }
        let uncosted = self
            .0
            .iter()
            .filter(|(k, v)| **v > 0.0 && !m.has(**k))
            .map(|(k, _)| *k)
            .collect();
        (by, uncosted)
    }
}
