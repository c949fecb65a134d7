//! The study's settings as a front end gives them (the CLI's flags, the Python package's
//! keyword arguments), turned into [`AccuracyOptions`] in one place: named settings
//! (`adc_bits`, `variation`, stuck-at rates, mitigations) become parameter overrides
//! under the names `--set` and `--sweep` use.

use super::AccuracyOptions;
use crate::error::{Result, XbarError};

/// What a user may set, each `None` keeping the architecture file's value.
#[derive(Clone, Debug, Default)]
pub struct AccuracySettings {
    pub trials: usize,
    pub seed: u64,
    pub adc_bits: Option<u32>,
    /// `full-scale`, `calibrated` or `clipped`.
    pub adc_range: Option<String>,
    /// Same as `adc_range = "calibrated"` (the CLI's `--calibrate-adc`).
    pub calibrate_adc: bool,
    pub variation: Option<f64>,
    /// `gaussian` or `lognormal`.
    pub variation_model: Option<String>,
    /// Stuck-at rates (stuck at Gmin, stuck at Gmax).
    pub saf: Option<(f64, f64)>,
    pub spare_cols: Option<usize>,
    pub redundancy: Option<usize>,
    /// Any model parameter by name (`read_noise`, `wire_resistance_ohm`...).
    pub set: Vec<(String, f64)>,
    /// Sweep axes (name, values).
    pub sweep: Vec<(String, Vec<f64>)>,
    /// Component library to price every point with (a preset or a TOML file).
    pub components: Option<String>,
}

fn bad(option: &'static str, msg: impl std::fmt::Display) -> XbarError {
    XbarError::Option {
        option,
        msg: msg.to_string(),
    }
}

impl AccuracySettings {
    pub fn options(&self) -> Result<AccuracyOptions> {
        let mut set: Vec<(String, f64)> = Vec::new();
        if let Some(b) = self.adc_bits {
            set.push(("adc_bits".into(), b as f64));
        }
        if let Some(v) = self.variation {
            set.push(("variation".into(), v));
        }
        if let Some((off, on)) = self.saf {
            set.extend([("saf_off".into(), off), ("saf_on".into(), on)]);
        }
        if let Some(n) = self.spare_cols {
            set.push(("spare_cols".into(), n as f64));
        }
        if let Some(n) = self.redundancy {
            set.push(("redundancy".into(), n as f64));
        }
        set.extend(self.set.iter().cloned());
        let adc_range = match (&self.adc_range, self.calibrate_adc) {
            (Some(_), true) => {
                return Err(bad(
                    "adc_range",
                    "give either an ADC range or calibrate_adc, not both",
                ));
            }
            (Some(r), false) => Some(r.parse().map_err(|e| bad("adc_range", e))?),
            (None, true) => Some(pimkit_analog::AdcRange::Calibrated),
            (None, false) => None,
        };
        let variation_model = self
            .variation_model
            .as_deref()
            .map(str::parse)
            .transpose()
            .map_err(|e| bad("variation_model", e))?;
        Ok(AccuracyOptions {
            trials: self.trials,
            seed: self.seed,
            set,
            adc_range,
            variation_model,
            sweep: self.sweep.clone(),
            components: self
                .components
                .as_deref()
                .map(crate::cost::load_components)
                .transpose()?,
        })
    }
}

/// Stuck-at rates as written on the command line: `RATE` (both) or `OFF,ON`.
pub fn parse_saf(s: &str) -> Result<(f64, f64)> {
    let v: Vec<f64> = s
        .split(',')
        .map(|x| x.trim().parse::<f64>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            bad(
                "saf",
                format!("{s}: write RATE or OFF,ON (e.g. 0.001,0.001)"),
            )
        })?;
    match v.as_slice() {
        [r] => Ok((*r, *r)),
        [o, n] => Ok((*o, *n)),
        _ => Err(bad("saf", format!("{s}: write RATE or OFF,ON"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_settings_become_parameters_and_conflicts_are_errors() {
        let s = AccuracySettings {
            trials: 3,
            adc_bits: Some(6),
            saf: Some(parse_saf("0.01").unwrap()),
            set: vec![("read_noise".into(), 0.02)],
            calibrate_adc: true,
            ..Default::default()
        };
        let o = s.options().unwrap();
        let names: Vec<&str> = o.set.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(names, ["adc_bits", "saf_off", "saf_on", "read_noise"]);
        assert_eq!(o.adc_range, Some(pimkit_analog::AdcRange::Calibrated));
        let both = AccuracySettings {
            adc_range: Some("clipped".into()),
            calibrate_adc: true,
            ..Default::default()
        };
        assert!(both.options().is_err());
        assert_eq!(parse_saf("0.1,0.2").unwrap(), (0.1, 0.2));
        assert!(parse_saf("x").is_err());
    }
}
