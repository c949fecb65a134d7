//! `--nonideal`: every MVMU's multiply goes through pimkit-analog's crossbar model (the
//! implementation `pimkit xbar accuracy` uses): its weight slices, DAC streams, ADC,
//! conductance variation, faults and IR drop. Each MVMU is programmed on its first mvm.

use super::SimError;
use crate::arch::Arch;
use crate::fixed::{self, Fmt, NumMode, Split};
use pimkit_analog::mvmu::{Mvmu, MvmuModel, NonIdeal};

pub(super) struct Analog {
    model: MvmuModel,
    units: Vec<Option<Mvmu>>,
    acc: Vec<f64>,
}

impl Analog {
    pub fn new(arch: &Arch, ni: &NonIdeal, units: usize) -> Result<Analog, SimError> {
        let m = &arch.mvmu;
        let model = MvmuModel::new(
            m.xbar_size,
            m.bits_per_cell,
            m.dac_bits,
            m.adc_bits,
            arch.fixed.bits,
            ni.analog.clone(),
            ni.device.clone(),
            ni.seed,
        )
        .map_err(|e| SimError::Options(format!("--nonideal: {e}")))?;
        Ok(Analog {
            model,
            units: (0..units).map(|_| None).collect(),
            acc: Vec::new(),
        })
    }

    /// `out[i]` (i < rows) = the unit's Σ_j w[i][j] x[j] / 2^shift (the weights' fraction
    /// bits), rounded (ties away from zero) and fitted to the format as the exact path
    /// does. Returns how many outputs did not fit (saturated).
    #[allow(clippy::too_many_arguments)]
    pub fn mvm(
        &mut self,
        unit: usize,
        w: &[i16],
        stride: usize,
        rows: usize,
        cols: usize,
        x: &[i32],
        fmt: Fmt,
        mode: NumMode,
        shift: i32,
        out: &mut [i32],
    ) -> u64 {
        let model = &self.model;
        let u = self.units[unit]
            .get_or_insert_with(|| Mvmu::program(model, w, stride, rows, cols, unit as u64));
        self.acc.resize(rows, 0.0);
        u.mvm(x, &mut self.acc);
        let one = 2f64.powi(shift);
        let mut unfit = 0;
        for (o, &a) in out[..rows].iter_mut().zip(&self.acc) {
            let q = (a / one).round().clamp(-1e15, 1e15) as i64;
            unfit += u64::from(q < fmt.min() || q > fmt.max());
            *o = fmt.fit(q, mode);
        }
        unfit
    }
}

/// The MVM of weight block `unit`: through the crossbar model when `--nonideal` is set,
/// else [`fixed::mvm_with`] (exact or bit-serial fixed point).
#[allow(clippy::too_many_arguments)]
pub(super) fn mvm_with(
    analog: &mut Option<Analog>,
    unit: usize,
    split: &mut Split,
    fmt: Fmt,
    mode: NumMode,
    shift: i32,
    w: &[i16],
    stride: usize,
    rows: usize,
    cols: usize,
    x: &[i32],
    out: &mut [i32],
) -> u64 {
    match analog {
        Some(a) => a.mvm(unit, w, stride, rows, cols, x, fmt, mode, shift, out),
        None => fixed::mvm_with(split, fmt, mode, shift, w, stride, rows, cols, x, out),
    }
}
