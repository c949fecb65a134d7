//! NSGA-II (Deb et al. 2002) for categorical genomes, deterministic for a seed: fast
//! non-dominated sorting under constrained domination, crowding distance, binary tournament
//! on the crowded comparison, uniform crossover and per-gene resampling mutation.
//! All objectives are minimised; `violation > 0` marks an infeasible candidate.

use crate::error::{NasError, Result};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;

/// Operator settings. Defaults: RNC's search (reference rnc.md §1.8): population 50,
/// 100 generations, per-gene mutation probability 0.1, parent ratio 0.25 (the best quarter
/// of the population breeds, as in OFA's evolution finder), half the children by mutation
/// and half by uniform crossover (RNC: 25 + 25 of 50).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NsgaConfig {
    pub pop: usize,
    pub gens: usize,
    pub mutation_prob: f64,
    pub parent_ratio: f64,
    pub mutation_ratio: f64,
    pub seed: u64,
}

impl Default for NsgaConfig {
    fn default() -> Self {
        NsgaConfig {
            pop: 50,
            gens: 100,
            mutation_prob: 0.1,
            parent_ratio: 0.25,
            mutation_ratio: 0.5,
            seed: 1,
        }
    }
}

impl NsgaConfig {
    pub fn validate(&self) -> Result<()> {
        let bad = |option, msg: &str| {
            Err(NasError::Option {
                option,
                msg: msg.into(),
            })
        };
        if self.pop < 2 {
            return bad("pop", "the population needs at least 2 members");
        }
        if !(0.0..=1.0).contains(&self.mutation_prob) {
            return bad("mutation-prob", "must be within [0, 1]");
        }
        if !(self.parent_ratio > 0.0 && self.parent_ratio <= 1.0) {
            return bad("parent-ratio", "must be within (0, 1]");
        }
        if !(0.0..=1.0).contains(&self.mutation_ratio) {
            return bad("mutation-ratio", "must be within [0, 1]");
        }
        Ok(())
    }
}

/// Objective values (minimised) and constraint violation of one candidate.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fitness {
    pub objectives: Vec<f64>,
    pub violation: f64,
}

impl Fitness {
    pub fn feasible(&self) -> bool {
        self.violation <= 0.0
    }
}

/// The problem NSGA-II optimises.
pub trait Problem {
    /// Number of choices of every gene.
    fn cardinalities(&self) -> Vec<usize>;
    /// Map equivalent genomes to one representative (e.g. zero dead genes).
    fn canonicalize(&self, _genome: &mut [u8]) {}
    /// Evaluate new genomes (in order); may run them in parallel.
    fn evaluate(&self, genomes: &[Vec<u8>]) -> Result<Vec<Fitness>>;
}

/// A member of the population.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Individual {
    pub genome: Vec<u8>,
    pub fitness: Fitness,
    pub rank: usize,
    pub crowding: f64,
}

/// What the progress callback sees after each generation (generation 0 = the initial one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GenStats {
    pub generation: usize,
    pub evaluations: usize,
    pub feasible: usize,
    pub front: usize,
    /// Best (smallest) value of each objective among feasible members.
    pub best: Vec<f64>,
}

/// Constrained domination (Deb 2002): feasible beats infeasible; among infeasible the
/// smaller violation wins; among feasible, Pareto domination.
pub fn dominates(a: &Fitness, b: &Fitness) -> bool {
    match (a.feasible(), b.feasible()) {
        (true, false) => true,
        (false, true) => false,
        (false, false) => a.violation < b.violation,
        (true, true) => {
            let mut strictly = false;
            for (x, y) in a.objectives.iter().zip(&b.objectives) {
                if x > y {
                    return false;
                }
                if x < y {
                    strictly = true;
                }
            }
            strictly
        }
    }
}

/// Fast non-dominated sorting: fronts of indices, best first; each front in index order.
pub fn non_dominated_sort(f: &[Fitness]) -> Vec<Vec<usize>> {
    let n = f.len();
    let mut dominated: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut count = vec![0usize; n];
    for i in 0..n {
        for j in i + 1..n {
            if dominates(&f[i], &f[j]) {
                dominated[i].push(j);
                count[j] += 1;
            } else if dominates(&f[j], &f[i]) {
                dominated[j].push(i);
                count[i] += 1;
            }
        }
    }
    let mut fronts = Vec::new();
    let mut cur: Vec<usize> = (0..n).filter(|&i| count[i] == 0).collect();
    while !cur.is_empty() {
        let mut next = Vec::new();
        for &i in &cur {
            for &j in &dominated[i] {
                count[j] -= 1;
                if count[j] == 0 {
                    next.push(j);
                }
            }
        }
        next.sort_unstable();
        fronts.push(cur);
        cur = next;
    }
    fronts
}

/// Crowding distance of the members of one front (same order as `front`): boundary
/// members get infinity, others the normalised side lengths of their cuboid.
pub fn crowding_distance(f: &[Fitness], front: &[usize]) -> Vec<f64> {
    let n = front.len();
    let mut d = vec![0.0f64; n];
    if n <= 2 {
        return vec![f64::INFINITY; n];
    }
    let m = f[front[0]].objectives.len();
    for k in 0..m {
        let mut ord: Vec<usize> = (0..n).collect();
        ord.sort_by(|&a, &b| {
            f[front[a]].objectives[k]
                .total_cmp(&f[front[b]].objectives[k])
                .then(a.cmp(&b))
        });
        let lo = f[front[ord[0]]].objectives[k];
        let hi = f[front[ord[n - 1]]].objectives[k];
        d[ord[0]] = f64::INFINITY;
        d[ord[n - 1]] = f64::INFINITY;
        if hi - lo <= 0.0 || !(hi - lo).is_finite() {
            continue;
        }
        for w in 1..n - 1 {
            let gap = f[front[ord[w + 1]]].objectives[k] - f[front[ord[w - 1]]].objectives[k];
            d[ord[w]] += gap / (hi - lo);
        }
    }
    d
}

/// Assign rank and crowding to `pop` in place.
fn rank_population(pop: &mut [Individual]) {
    let fit: Vec<Fitness> = pop.iter().map(|i| i.fitness.clone()).collect();
    for (r, front) in non_dominated_sort(&fit).iter().enumerate() {
        let cd = crowding_distance(&fit, front);
        for (k, &i) in front.iter().enumerate() {
            pop[i].rank = r;
            pop[i].crowding = cd[k];
        }
    }
}

/// Crowded-comparison order: lower rank, then larger crowding distance.
fn crowded_better(a: &Individual, b: &Individual) -> bool {
    a.rank < b.rank || (a.rank == b.rank && a.crowding > b.crowding)
}

/// Environmental selection: the best `n` of `pool` by fronts, the last front cut by crowding.
pub fn select(pool: Vec<Individual>, n: usize) -> Vec<Individual> {
    let fit: Vec<Fitness> = pool.iter().map(|i| i.fitness.clone()).collect();
    let mut chosen = Vec::with_capacity(n);
    for front in non_dominated_sort(&fit) {
        if chosen.len() == n {
            break;
        }
        let cd = crowding_distance(&fit, &front);
        let mut idx: Vec<usize> = (0..front.len()).collect();
        if chosen.len() + front.len() > n {
            idx.sort_by(|&a, &b| cd[b].total_cmp(&cd[a]).then(a.cmp(&b)));
            idx.truncate(n - chosen.len());
            idx.sort_unstable();
        }
        for k in idx {
            chosen.push(front[k]);
        }
    }
    let mut out: Vec<Individual> = chosen.iter().map(|&i| pool[i].clone()).collect();
    rank_population(&mut out);
    out
}

/// Result of a run: the final population (ranked) and per-generation statistics.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NsgaResult {
    pub population: Vec<Individual>,
    pub history: Vec<GenStats>,
    pub evaluations: usize,
}

fn stats(generation: usize, evaluations: usize, pop: &[Individual]) -> GenStats {
    let feas: Vec<&Individual> = pop.iter().filter(|i| i.fitness.feasible()).collect();
    let m = pop.first().map(|i| i.fitness.objectives.len()).unwrap_or(0);
    GenStats {
        generation,
        evaluations,
        feasible: feas.len(),
        front: pop
            .iter()
            .filter(|i| i.rank == 0 && i.fitness.feasible())
            .count(),
        best: (0..m)
            .map(|k| {
                feas.iter()
                    .map(|i| i.fitness.objectives[k])
                    .fold(f64::INFINITY, f64::min)
            })
            .collect(),
    }
}

const RETRIES: usize = 20;

/// Run NSGA-II. `progress` is called after the initial population and every generation.
pub fn run(
    problem: &dyn Problem,
    cfg: &NsgaConfig,
    progress: &mut dyn FnMut(&GenStats),
) -> Result<NsgaResult> {
    cfg.validate()?;
    let card = problem.cardinalities();
    if card.is_empty() || card.iter().any(|&c| c == 0 || c > 256) {
        return Err(NasError::Option {
            option: "space",
            msg: "every gene needs between 1 and 256 choices".into(),
        });
    }
    let mut rng = Pcg64::seed_from_u64(cfg.seed);
    let random_genome = |rng: &mut Pcg64| -> Vec<u8> {
        let mut g: Vec<u8> = card.iter().map(|&c| rng.random_range(0..c) as u8).collect();
        problem.canonicalize(&mut g);
        g
    };

    // Initial population: distinct random genomes (duplicates allowed only when the
    // space is smaller than the population).
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut genomes = Vec::with_capacity(cfg.pop);
    while genomes.len() < cfg.pop {
        let mut g = random_genome(&mut rng);
        for _ in 0..RETRIES {
            if !seen.contains(&g) {
                break;
            }
            g = random_genome(&mut rng);
        }
        seen.insert(g.clone());
        genomes.push(g);
    }
    let fit = problem.evaluate(&genomes)?;
    let mut evaluations = genomes.len();
    let mut pop: Vec<Individual> = genomes
        .into_iter()
        .zip(fit)
        .map(|(genome, fitness)| Individual {
            genome,
            fitness,
            rank: 0,
            crowding: 0.0,
        })
        .collect();
    rank_population(&mut pop);
    let mut history = vec![stats(0, evaluations, &pop)];
    progress(&history[0]);

    let n_parents =
        ((cfg.parent_ratio * cfg.pop as f64).ceil() as usize).clamp(2.min(cfg.pop), cfg.pop);
    let n_mut = (cfg.mutation_ratio * cfg.pop as f64).round() as usize;
    for gen_ in 1..=cfg.gens {
        // Parents: the best `parent_ratio` of the population by crowded comparison.
        let mut order: Vec<usize> = (0..pop.len()).collect();
        order.sort_by(|&a, &b| {
            pop[a]
                .rank
                .cmp(&pop[b].rank)
                .then(pop[b].crowding.total_cmp(&pop[a].crowding))
                .then(a.cmp(&b))
        });
        let parents: Vec<&Individual> = order[..n_parents].iter().map(|&i| &pop[i]).collect();
        let tournament = |rng: &mut Pcg64| -> &Individual {
            let a = parents[rng.random_range(0..parents.len())];
            let b = parents[rng.random_range(0..parents.len())];
            if crowded_better(b, a) { b } else { a }
        };
        let mut taken: HashSet<Vec<u8>> = pop.iter().map(|i| i.genome.clone()).collect();
        let mut children: Vec<Vec<u8>> = Vec::with_capacity(cfg.pop);
        for c in 0..cfg.pop {
            let mut child = Vec::new();
            for _ in 0..RETRIES {
                child = if c < n_mut {
                    // Per-gene resampling among all choices (OFA/RNC); redraw if unchanged.
                    let p = tournament(&mut rng);
                    let mut g = p.genome.clone();
                    for (i, gi) in g.iter_mut().enumerate() {
                        if rng.random_bool(cfg.mutation_prob) {
                            *gi = rng.random_range(0..card[i]) as u8;
                        }
                    }
                    g
                } else {
                    let a = tournament(&mut rng);
                    let b = tournament(&mut rng);
                    a.genome
                        .iter()
                        .zip(&b.genome)
                        .map(|(&x, &y)| if rng.random_bool(0.5) { x } else { y })
                        .collect()
                };
                problem.canonicalize(&mut child);
                if !taken.contains(&child) {
                    break;
                }
            }
            taken.insert(child.clone());
            children.push(child);
        }
        let fit = problem.evaluate(&children)?;
        evaluations += children.len();
        let mut pool = pop;
        pool.extend(
            children
                .into_iter()
                .zip(fit)
                .map(|(genome, fitness)| Individual {
                    genome,
                    fitness,
                    rank: 0,
                    crowding: 0.0,
                }),
        );
        pop = select(pool, cfg.pop);
        let st = stats(gen_, evaluations, &pop);
        progress(&st);
        history.push(st);
    }
    Ok(NsgaResult {
        population: pop,
        history,
        evaluations,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(o: &[f64], v: f64) -> Fitness {
        Fitness {
            objectives: o.to_vec(),
            violation: v,
        }
    }

    #[test]
    fn sort_hand_made_fronts() {
        // Front 0: (1,5) (2,3) (4,1); front 1: (3,4) (5,2); front 2: (6,6).
        let f = vec![
            fit(&[3.0, 4.0], 0.0),
            fit(&[1.0, 5.0], 0.0),
            fit(&[6.0, 6.0], 0.0),
            fit(&[2.0, 3.0], 0.0),
            fit(&[5.0, 2.0], 0.0),
            fit(&[4.0, 1.0], 0.0),
        ];
        assert_eq!(
            non_dominated_sort(&f),
            vec![vec![1, 3, 5], vec![0, 4], vec![2]]
        );
    }

    #[test]
    fn equal_points_share_a_front() {
        let f = vec![
            fit(&[1.0, 1.0], 0.0),
            fit(&[1.0, 1.0], 0.0),
            fit(&[2.0, 2.0], 0.0),
        ];
        assert_eq!(non_dominated_sort(&f), vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn crowding_on_a_line() {
        // Points on x + y = 4 at x = 0, 1, 3, 4: interior distances (3-0)/4 + (4-1)/4 = 1.5
        // and (4-1)/4 + (3-0)/4 = 1.5; with x = 0, 1, 2, 4: (2-0)/4*2 = 1.0 and (4-1)/4*2 = 1.5.
        let f = vec![
            fit(&[0.0, 4.0], 0.0),
            fit(&[1.0, 3.0], 0.0),
            fit(&[2.0, 2.0], 0.0),
            fit(&[4.0, 0.0], 0.0),
        ];
        let d = crowding_distance(&f, &[0, 1, 2, 3]);
        assert!(d[0].is_infinite() && d[3].is_infinite());
        assert!((d[1] - 1.0).abs() < 1e-12, "{d:?}");
        assert!((d[2] - 1.5).abs() < 1e-12, "{d:?}");
    }

    #[test]
    fn constrained_domination() {
        let feas = fit(&[10.0, 10.0], 0.0);
        let small = fit(&[0.0, 0.0], 2.0);
        let big = fit(&[0.0, 0.0], 5.0);
        assert!(dominates(&feas, &small));
        assert!(!dominates(&small, &feas));
        assert!(dominates(&small, &big));
        assert!(!dominates(&big, &small));
        assert_eq!(
            non_dominated_sort(&[big.clone(), feas.clone(), small.clone()]),
            vec![vec![1], vec![2], vec![0]]
        );
        // Selection keeps feasible members first even if their objectives are worse.
        let pool: Vec<Individual> = [big, feas, small]
            .into_iter()
            .enumerate()
            .map(|(i, f)| Individual {
                genome: vec![i as u8],
                fitness: f,
                rank: 0,
                crowding: 0.0,
            })
            .collect();
        let s = select(pool, 2);
        assert_eq!(
            s.iter().map(|i| i.genome[0]).collect::<Vec<_>>(),
            vec![1, 2]
        );
    }

    /// Toy problem: minimise (sum of genes, sum of (3 - gene)); feasible when gene 0 != 3.
    struct Toy;
    impl Problem for Toy {
        fn cardinalities(&self) -> Vec<usize> {
            vec![4; 8]
        }
        fn evaluate(&self, gs: &[Vec<u8>]) -> Result<Vec<Fitness>> {
            Ok(gs
                .iter()
                .map(|g| {
                    let s: f64 = g.iter().map(|&x| x as f64).sum();
                    let t: f64 = g.iter().map(|&x| (3 - x) as f64 * (3 - x) as f64).sum();
                    fit(&[s, t], if g[0] == 3 { 1.0 } else { 0.0 })
                })
                .collect())
        }
    }

    #[test]
    fn deterministic_and_converges() {
        let cfg = NsgaConfig {
            pop: 20,
            gens: 30,
            seed: 7,
            ..NsgaConfig::default()
        };
        let mut calls = 0;
        let a = run(&Toy, &cfg, &mut |_| calls += 1).unwrap();
        assert_eq!(calls, 31);
        assert_eq!(a.evaluations, 20 * 31);
        let b = run(&Toy, &cfg, &mut |_| {}).unwrap();
        assert_eq!(a, b);
        let c = run(
            &Toy,
            &NsgaConfig {
                seed: 8,
                ..cfg.clone()
            },
            &mut |_| {},
        )
        .unwrap();
        assert_ne!(a.population, c.population);
        // Every survivor is feasible and the extremes of the trade-off are found.
        assert!(a.population.iter().all(|i| i.fitness.feasible()));
        let best_s = a
            .population
            .iter()
            .map(|i| i.fitness.objectives[0])
            .fold(f64::MAX, f64::min);
        assert_eq!(best_s, 0.0);
        let best_t = a
            .population
            .iter()
            .map(|i| i.fitness.objectives[1])
            .fold(f64::MAX, f64::min);
        assert!(best_t <= 1.0, "{best_t}");
    }

    #[test]
    fn rejects_bad_settings() {
        let cfg = NsgaConfig {
            pop: 1,
            ..NsgaConfig::default()
        };
        assert!(run(&Toy, &cfg, &mut |_| {}).is_err());
        let cfg = NsgaConfig {
            mutation_prob: 1.5,
            ..NsgaConfig::default()
        };
        assert!(run(&Toy, &cfg, &mut |_| {}).is_err());
    }
}
