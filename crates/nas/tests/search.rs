//! End-to-end searches (reduced population / generations), evaluators, constraint handling,
//! outputs. The full default search is `full_default_search` (ignored; run with
//! `cargo test -p pimkit-nas --release --test search -- --ignored --nocapture`).

use pimkit_nas::eval::run_cmd;
use pimkit_nas::proxy::{ProxyConfig, naswot};
use pimkit_nas::{
    AccuracySpec, Config, Evaluator, NsgaConfig, SearchConfig, Space, SuperNet, search,
};
use pimkit_xbar::Budget;

fn space() -> Space {
    Space::load("mbv3-small").unwrap()
}

fn small(budget: Budget, pop: usize, gens: usize, seed: u64) -> SearchConfig {
    SearchConfig {
        budget,
        nsga: NsgaConfig {
            pop,
            gens,
            seed,
            ..NsgaConfig::default()
        },
        ..SearchConfig::rnc_default(space())
    }
}

#[test]
fn proxy_is_deterministic_and_discriminates() {
    let s = space();
    let net = SuperNet::new(&s, 1).unwrap();
    let cfg = ProxyConfig {
        batch: 8,
        resolution: s.proxy_resolution,
        seed: 1,
    };
    let a = naswot(&s, &s.smallest(), &net, &cfg).unwrap();
    let b = naswot(&s, &s.smallest(), &net, &cfg).unwrap();
    assert_eq!(a, b);
    let net2 = SuperNet::new(&s, 1).unwrap();
    assert_eq!(naswot(&s, &s.smallest(), &net2, &cfg).unwrap(), a);
    let big = naswot(&s, &s.largest(), &net, &cfg).unwrap();
    assert!(a.is_finite() && big.is_finite());
    // NASWOT grows with capacity (more units, more distinct codes): documented behaviour.
    assert!(big > a, "largest {big} vs smallest {a}");
    let other = naswot(
        &s,
        &s.smallest(),
        &net,
        &ProxyConfig {
            seed: 2,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert_ne!(a, other);
}

#[test]
fn cmd_evaluator_runs_the_command_with_placeholders() {
    let s = space();
    let c = s.smallest();
    let net = SuperNet::new(&s, 1).unwrap();
    let gw = pimkit_nas::build_with_weights(&s, &c, &net, s.resolution, 1).unwrap();
    assert_eq!(run_cmd("echo 0.5", &gw, &s.ofa_json(&c)).unwrap(), 0.5);
    // The placeholders name real files: the ONNX model and the configuration JSON.
    let v = run_cmd(
        "test -s {onnx} && grep -q '\"ks\"' {config} && echo 'epoch 1 loss 2.5' && echo acc=0.875",
        &gw,
        &s.ofa_json(&c),
    )
    .unwrap();
    assert_eq!(v, 0.875);
    let e = run_cmd("echo hello", &gw, &s.ofa_json(&c))
        .unwrap_err()
        .to_string();
    assert!(e.contains("no number"), "{e}");
    let e = run_cmd("echo 0.3; exit 3", &gw, &s.ofa_json(&c))
        .unwrap_err()
        .to_string();
    assert!(e.contains("exited"), "{e}");
    let ev = Evaluator::new(&"cmd:\"echo 0.25\"".parse().unwrap(), &s, 1, 8).unwrap();
    assert_eq!(ev.evaluate(&s, &c).unwrap(), Some(0.25));
    assert!(!ev.parallel());
}

#[test]
fn option_parsing() {
    use pimkit_nas::HwObjective;
    assert_eq!(
        "speed".parse::<HwObjective>().unwrap(),
        HwObjective::Latency
    );
    assert_eq!(
        "utilisation".parse::<HwObjective>().unwrap(),
        HwObjective::Utilization
    );
    assert_eq!("area".parse::<HwObjective>().unwrap(), HwObjective::Area);
    assert!("power".parse::<HwObjective>().is_err());
    assert_eq!(
        pimkit_nas::parse_objectives("accuracy, energy,latency").unwrap(),
        vec![HwObjective::Energy, HwObjective::Latency]
    );
    for bad in [
        "energy",
        "accuracy",
        "accuracy,energy,energy",
        "accuracy,power",
    ] {
        assert!(pimkit_nas::parse_objectives(bad).is_err(), "{bad}");
    }
    let mut cfg = small_cfg();
    cfg.nsga.parent_ratio = 0.0;
    assert!(search(&cfg, &mut |_| {}).is_err());
    let mut cfg = small_cfg();
    cfg.budget = Budget::Relative(-1.0);
    assert!(
        search(&cfg, &mut |_| {})
            .unwrap_err()
            .to_string()
            .contains("budget")
    );
}

#[test]
fn table_evaluator_looks_up_configs() {
    let s = space();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("acc.csv");
    let small = s.smallest().to_string();
    std::fs::write(&p, format!("config,accuracy\n{small},0.87\nbase,0.893\n")).unwrap();
    let ev = Evaluator::new(&AccuracySpec::Table(p.clone()), &s, 1, 8).unwrap();
    assert_eq!(ev.evaluate(&s, &s.smallest()).unwrap(), Some(0.87));
    assert_eq!(ev.evaluate(&s, &s.largest()).unwrap(), None);
    // A search with a table: only listed configurations can be on the front.
    let mut cfg = small_cfg();
    cfg.accuracy = AccuracySpec::Table(p);
    let r = search(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.base.accuracy, Some(0.893));
    assert!(r.front.iter().all(|c| c.config == small), "{:?}", r.front);
    assert!(!r.proxy);
}

fn small_cfg() -> SearchConfig {
    small(Budget::Relative(1.0), 8, 3, 11)
}

#[test]
fn same_seed_same_front() {
    let cfg = small_cfg();
    let mut gens = Vec::new();
    let a = search(&cfg, &mut |s| gens.push(s.generation)).unwrap();
    assert_eq!(gens, vec![0, 1, 2, 3]);
    let b = search(&cfg, &mut |_| {}).unwrap();
    assert_eq!(a, b);
    assert!(!a.front.is_empty());
    assert_eq!(a.evaluations, 8 * 4);
    assert!(a.proxy && a.evaluator.contains("proxy"));
    // The front is non-dominated and sorted by speedup.
    for w in a.front.windows(2) {
        assert!(w[0].speedup <= w[1].speedup);
        assert!(w[0].accuracy > w[1].accuracy, "{:?}", a.front);
    }
    let c = search(&small(Budget::Relative(1.0), 8, 3, 12), &mut |_| {}).unwrap();
    assert_ne!(a.front, c.front);
}

#[test]
fn thread_count_does_not_change_the_results() {
    // Candidates of a generation are evaluated in parallel (`--jobs`, and the proxy cache
    // fills in whatever order the threads run): 1, 2 and 4 item threads must give the same
    // front, CSV and JSON, byte for byte.
    let cfg = small(Budget::Relative(1.0), 10, 3, 5);
    let run = |jobs: usize| {
        let r = pimkit_engine::jobs::with_jobs(jobs, || search(&cfg, &mut |_| {}).unwrap());
        let dir = tempfile::tempdir().unwrap();
        pimkit_nas::write_outputs(std::slice::from_ref(&r), &cfg.space, dir.path()).unwrap();
        let read = |f: &str| std::fs::read(dir.path().join(f)).unwrap();
        (
            r,
            read("front.csv"),
            read("summary.csv"),
            read("front.json"),
        )
    };
    let one = run(1);
    assert!(!one.0.front.is_empty());
    for jobs in [2, 4] {
        let many = run(jobs);
        assert_eq!(one.0, many.0, "jobs {jobs}");
        assert_eq!(one.1, many.1, "front.csv, jobs {jobs}");
        assert_eq!(one.2, many.2, "summary.csv, jobs {jobs}");
        assert_eq!(one.3, many.3, "front.json, jobs {jobs}");
    }
}

#[test]
fn infeasible_candidates_never_reach_the_front() {
    // 60 crossbars: below the smallest subnet's packing (70), above its layer count (42);
    // 30: below every layer count (the mapper refuses outright).
    for n in [60, 30] {
        let r = search(&small(Budget::Crossbars(n), 6, 2, 3), &mut |_| {}).unwrap();
        assert!(r.front.is_empty(), "{:?}", r.front);
        assert_eq!(r.feasible_evaluations, 0);
        assert!(r.speed_optimal.is_none());
        assert!(!r.base.isaac_fits && !r.base.compiled_fits);
        // Constrained domination still ranks the infeasible by violation: progress is made.
        assert_eq!(r.history.len(), 3);
    }
    // A budget between (subnets need 70..157 crossbars): some fit, and every front member does.
    let r = search(&small(Budget::Crossbars(100), 10, 3, 3), &mut |_| {}).unwrap();
    assert!(r.feasible_evaluations > 0);
    assert!(r.front.iter().all(|c| c.fits && c.crossbars_used <= 100));
    assert!(
        r.unique_evaluations > r.feasible_evaluations,
        "budget 100 should reject some candidates"
    );
}

/// The acceptance at reduced population: at 0.8x / 1x / 1.2x of the base network's
/// ISAAC-like crossbars, subnets fit where the ISAAC-like base does not (0.8x), and the
/// speed-optimal subnet is several times faster than the base.
#[test]
fn acceptance_budgets_reduced() {
    let mut results = Vec::new();
    for b in [0.8, 1.0, 1.2] {
        let r = search(&small(Budget::Relative(b), 12, 4, 1), &mut |_| {}).unwrap();
        assert!(!r.front.is_empty(), "no feasible subnet at {b}x");
        let fast = r.speed_optimal.as_ref().unwrap();
        assert!(fast.fits && fast.crossbars_used <= r.budget_crossbars);
        assert!(
            fast.speedup >= 3.0,
            "speed-optimal only {:.2}x at {b}x",
            fast.speedup
        );
        results.push(r);
    }
    assert!(
        !results[0].base.isaac_fits,
        "the ISAAC-like base must not fit 0.8x"
    );
    assert!(results[1].base.isaac_fits && results[2].base.isaac_fits);
    // More crossbars never hurt the best speed found by this much (same seed).
    assert!(
        results[2].speed_optimal.as_ref().unwrap().speedup
            >= 0.8 * results[0].speed_optimal.as_ref().unwrap().speedup
    );
    let dir = tempfile::tempdir().unwrap();
    let files = pimkit_nas::write_outputs(&results, &space(), dir.path()).unwrap();
    for f in [
        "front.csv",
        "front.json",
        "front.svg",
        "summary.csv",
        "speed_optimal-0.80x.onnx",
        "accuracy_optimal-1.20x.json",
    ] {
        assert!(
            files.iter().any(|p| p.ends_with(f)),
            "missing {f}: {files:?}"
        );
    }
    let csv = std::fs::read_to_string(dir.path().join("front.csv")).unwrap();
    assert!(csv.lines().count() > 3 && csv.starts_with("budget,"));
    let svg = std::fs::read_to_string(dir.path().join("front.svg")).unwrap();
    assert!(svg.contains("<svg") && svg.contains("ISAAC"));
    let g = pimkit_onnx::load(&dir.path().join("speed_optimal-0.80x.onnx")).unwrap();
    let cfg: Config = results[0]
        .speed_optimal
        .as_ref()
        .unwrap()
        .config
        .parse()
        .unwrap();
    assert_eq!(
        g.nodes.len(),
        pimkit_nas::build_shape_only(&space(), &cfg)
            .unwrap()
            .nodes
            .len()
    );
    let sec = pimkit_nas::report_section(&results);
    assert_eq!(sec.id, "nas");
}

#[test]
#[ignore]
fn full_default_search() {
    let t = std::time::Instant::now();
    let cfg = SearchConfig::rnc_default(space());
    let r = search(&cfg, &mut |s| {
        if s.generation % 10 == 0 {
            eprintln!(
                "gen {} evals {} front {} ({:?})",
                s.generation,
                s.evaluations,
                s.front,
                t.elapsed()
            );
        }
    })
    .unwrap();
    eprintln!(
        "full search: {} evaluations ({} unique) in {:?}; front {}; speed-optimal {:.2}x {:?}; accuracy-optimal {:.2}x",
        r.evaluations,
        r.unique_evaluations,
        t.elapsed(),
        r.front.len(),
        r.speed_optimal.as_ref().unwrap().speedup,
        r.speed_optimal.as_ref().unwrap().config,
        r.accuracy_optimal.as_ref().unwrap().speedup
    );
    assert_eq!(r.evaluations, 50 * 101);
}

/// Energy and area objectives come from the cost engine: every front member is priced,
/// and none is beaten in accuracy and energy by another priced candidate of the front.
#[test]
fn cost_objectives_price_the_front() {
    use pimkit_nas::HwObjective;
    let mut cfg = small(Budget::Relative(1.0), 8, 2, 3);
    cfg.objectives = vec![HwObjective::Energy];
    let r = search(&cfg, &mut |_| {}).unwrap();
    assert_eq!(r.objectives, vec![HwObjective::Energy]);
    assert_eq!(r.components.as_deref(), Some("isaac"));
    assert!(!r.front.is_empty());
    for a in &r.front {
        let (ea, aa) = (a.energy_uj.unwrap(), a.accuracy.unwrap());
        assert!(ea > 0.0 && a.area_mm2.unwrap() > 0.0, "{}", a.config);
        for b in &r.front {
            let (eb, ab) = (b.energy_uj.unwrap(), b.accuracy.unwrap());
            assert!(
                !(eb <= ea && ab >= aa && (eb < ea || ab > aa)),
                "{} dominates {}",
                b.config,
                a.config
            );
        }
    }
    // The energy is the cost engine's for the candidate's mapping.
    let c = &r.front[0];
    let g = pimkit_nas::build_shape_only(&cfg.space, &c.config.parse().unwrap()).unwrap();
    let mut opts =
        pimkit_xbar::cost::CostOptions::new(pimkit_xbar::cost::load_components("isaac").unwrap());
    opts.map.budget = Some(Budget::Crossbars(r.budget_crossbars));
    opts.map.sdw = Some(cfg.sdw);
    opts.map.samples = Some(cfg.samples);
    use pimkit_engine::Engine;
    let out =
        pimkit_xbar::cost::Cost::run(&g, &cfg.arch, &opts, &mut pimkit_engine::NoProgress).unwrap();
    assert_eq!(Some(out.totals.energy_uj), c.energy_uj);
}
