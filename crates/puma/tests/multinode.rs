//! Multi-node systems: programs larger than a node span nodes over the chip-to-chip
//! link (bandwidth and energy from the architecture file).

use pimkit_puma::compile::CompileError;
use pimkit_puma::{Arch, CompileOptions, SimOptions, compile, run_graph};

#[test]
fn a_network_spans_nodes_and_pays_for_the_link() {
    let g = pimkit_zoo::build_spec("lenet5").unwrap();
    let mut arch = Arch::default();
    arch.node.tiles = 3;
    let opts = CompileOptions {
        replicate: pimkit_puma::compile::replicate::Replicate::Factor(8),
        ..Default::default()
    };
    let (res, _, p) = run_graph(&g, &arch, &opts, &SimOptions::default(), None).unwrap();
    assert!(
        p.placement.nodes_used >= 2,
        "{} nodes",
        p.placement.nodes_used
    );
    assert!(res.relative_error.unwrap() < 0.01);
    // The same program on one big node: the link adds latency and energy.
    let mut one = Arch::default();
    one.node.tiles = 138;
    let (r1, _, _) = run_graph(&g, &one, &opts, &SimOptions::default(), None).unwrap();
    assert!(res.stats.energy_breakdown_nj["network"] > r1.stats.energy_breakdown_nj["network"]);
    // A slower link is busier.
    let mut slow = arch.clone();
    slow.network.inter_node_gbytes_per_s = 0.1;
    let (rs, _, _) = run_graph(&g, &slow, &opts, &SimOptions::default(), None).unwrap();
    assert!(rs.stats.cycles > res.stats.cycles);
}

#[test]
fn too_few_nodes_is_an_error_naming_the_field() {
    let g = pimkit_zoo::build_spec("resnet18?res=32").unwrap();
    let mut arch = Arch::default();
    arch.node.tiles = 4;
    arch.node.count = 2;
    let e = compile(&g, &arch, &CompileOptions::default()).unwrap_err();
    assert!(matches!(e, CompileError::Nodes { .. }), "{e}");
    assert!(e.to_string().contains("node.count"), "{e}");
}
