//! The piece-by-piece proxy with its prefix cache gives the same bits as building and
//! running each candidate's whole graph, whatever the cache holds or evicts.

use pimkit_nas::proxy::{ProxyConfig, naswot, naswot_cached};
use pimkit_nas::proxy_cache::ProxyCache;
use pimkit_nas::{Space, SuperNet};
use rand::{RngExt, SeedableRng};

#[test]
fn cached_proxy_matches_the_whole_graph() {
    let s = Space::load("mbv3-small").unwrap();
    let net = SuperNet::new(&s, 3).unwrap();
    let cfg = ProxyConfig {
        batch: 4,
        resolution: s.proxy_resolution,
        seed: 3,
    };
    let card = s.cardinalities();
    let mut rng = rand_pcg::Pcg64::seed_from_u64(5);
    // A parent and children that differ from it in one gene: they share prefixes.
    let mut configs = vec![s.smallest(), s.largest()];
    for _ in 0..4 {
        let mut g: Vec<u8> = card.iter().map(|&c| rng.random_range(0..c) as u8).collect();
        for _ in 0..3 {
            let i = rng.random_range(0..g.len());
            g[i] = rng.random_range(0..card[i]) as u8;
            let mut h = g.clone();
            s.canonicalize(&mut h);
            configs.push(s.decode(&h).unwrap());
        }
    }
    let big = ProxyCache::new(64 << 20);
    // Budget smaller than one prefix: every insertion evicts.
    let tiny = ProxyCache::new(1);
    for round in 0..2 {
        for c in &configs {
            let want = naswot(&s, c, &net, &cfg).unwrap();
            for cache in [&big, &tiny] {
                let got = naswot_cached(&s, c, &net, &cfg, cache).unwrap();
                assert_eq!(got.to_bits(), want.to_bits(), "{c} round {round}");
            }
        }
    }
    let (n, bytes) = big.len_bytes();
    assert!(n > configs.len(), "{n} prefixes cached");
    assert!(bytes <= 64 << 20);
    assert!(tiny.len_bytes().1 <= 1 << 10);
}
