//! `--nonideal`: the MVMUs through pimkit-analog's crossbar model. With an ideal device and
//! an ADC that resolves every level it reproduces the exact fixed-point run bit for bit;
//! a perturbed device changes the outputs, the same way every run.

use pimkit_analog::mvmu::{NonIdeal, read_sections};
use pimkit_puma::{Arch, CompileOptions, SimOptions, run_graph};

fn run(arch: &Arch, ni: Option<NonIdeal>) -> Vec<f32> {
    let (name, params) = pimkit_zoo::parse_spec("lenet5").unwrap();
    let g = pimkit_zoo::build(&name, &params).unwrap();
    let so = SimOptions {
        nonideal: ni,
        ..Default::default()
    };
    let (_, outs, _) = run_graph(&g, arch, &CompileOptions::default(), &so, None).unwrap();
    outs[0].to_f32_vec()
}

#[test]
fn an_ideal_device_reproduces_the_exact_run_and_a_noisy_one_is_seeded() {
    let mut arch = Arch::default();
    // 128 rows x 1-bit DAC x 3 levels = 384 per partial sum: a 9-bit ADC resolves every level.
    arch.mvmu.adc_bits = 9;
    let (analog, mut device) = read_sections(None).unwrap();
    let exact = run(&arch, None);
    let ideal = NonIdeal {
        analog: analog.clone(),
        device: pimkit_analog::DeviceSpec::ideal(),
        seed: 0,
    };
    assert_eq!(run(&arch, Some(ideal)), exact);
    device.saf_off = 0.0;
    device.saf_on = 0.0;
    device.variation = 0.05;
    let noisy = NonIdeal {
        analog,
        device,
        seed: 1,
    };
    let a = run(&arch, Some(noisy.clone()));
    assert_ne!(a, exact);
    assert_eq!(run(&arch, Some(noisy)), a);
}
