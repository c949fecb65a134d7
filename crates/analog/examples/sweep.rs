//! Scratch: time a sweep on a zoo model with a uniform mapping.
//! cargo run -p pimkit-analog --example sweep -- q_resnet18 2 true 8 "adc_bits=4,6,8" "variation=0,0.05,0.1"
#[path = "../tests/common/mod.rs"]
mod common;

use pimkit_analog::network::Network;
use pimkit_analog::study::{Study, grid, parse_axis};
use pimkit_analog::{AnalogSpec, Config, DeviceSpec};
use std::time::Instant;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let spec = a.get(1).cloned().unwrap_or("q_resnet18".into());
    let cell: u32 = a.get(2).map(|s| s.parse().unwrap()).unwrap_or(2);
    let diff: bool = a.get(3).map(|s| s.parse().unwrap()).unwrap_or(true);
    let trials: usize = a.get(4).map(|s| s.parse().unwrap()).unwrap_or(8);
    let axes: Vec<_> = a[5.min(a.len())..]
        .iter()
        .map(|s| parse_axis(s).unwrap())
        .collect();
    let t0 = Instant::now();
    let g = common::zoo(&spec);
    let geom = common::geom(cell, diff);
    let plan = common::plan(&g, 128, 128 / (geom.slices() * if diff { 2 } else { 1 }));
    let net = Network::new(&g, plan, geom.clone()).unwrap();
    let mut st = Study::new(net, common::inputs(&g, 1), None).unwrap();
    eprintln!("reference {:.2} s", t0.elapsed().as_secs_f64());
    let base = Config {
        geom,
        analog: AnalogSpec {
            adc_bits: 8,
            ..AnalogSpec::ideal()
        },
        device: DeviceSpec {
            on_off_ratio: 100.0,
            ..DeviceSpec::ideal()
        },
        exact: false,
    };
    let pts = grid(&base, &axes).unwrap();
    let t1 = Instant::now();
    let r = st.run(&pts, trials, 1, &|| eprint!(".")).unwrap();
    eprintln!("\nsweep {:.2} s", t1.elapsed().as_secs_f64());
    for p in &r {
        let worst = p
            .layers
            .iter()
            .map(|l| l.sqnr_db.mean)
            .fold(f64::INFINITY, f64::min);
        println!(
            "{:?} agree {:?} rel {:.4} worst layer sqnr {:.1} dB",
            p.params,
            p.agreement.map(|s| (s.mean, s.std)),
            p.rel_error.mean,
            worst
        );
    }
}
