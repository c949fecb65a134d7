mod common;
use common::*;
use pimkit_puma::compile::{CompileOptions, Reuse, compile_with_trace};
use pimkit_puma::{Arch, SimOptions, simulate};

#[test]
fn scratch() {
    for g in [grouped_cnn(4, 300, 4), small_cnn(3), lstm_net(2, 20, 40, 1)] {
        let inputs = pimkit_interp::random_inputs(&g, 0);
        for reuse in [Reuse::Off, Reuse::WhenFull, Reuse::First] {
            for loops in [false, true] {
                let o = CompileOptions {
                    reuse,
                    loops,
                    ..Default::default()
                };
                let r = compile_with_trace(&g, &Arch::default(), &o);
                let (p, _tr) = match r {
                    Ok(x) => x,
                    Err(e) => {
                        eprintln!("{} {reuse:?}: {e}", g.name);
                        continue;
                    }
                };
                let r = simulate(&p, &inputs, &SimOptions::default());
                eprintln!(
                    "{} reuse {reuse:?} loops {loops}: {:?}",
                    g.name,
                    r.as_ref()
                        .map(|x| (x.stats.cycles, x.outputs[0].to_f32_vec()[0]))
                        .map_err(|e| e.to_string().chars().take(300).collect::<String>())
                );
            }
        }
    }
}
