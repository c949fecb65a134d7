//! clap value parsers for numbers with a sensible range: a count of 10^11 runs or a
//! negative threshold is an error at the command line, not an abort or a silent answer.

/// An integer in `LO..=HI`.
pub fn int_in<const LO: usize, const HI: usize>(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(v) if (LO..=HI).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not an integer in {LO}..={HI}")),
    }
}

/// A finite, non-negative real.
pub fn non_negative(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(format!("'{s}' is not a finite number ≥ 0")),
    }
}

/// A finite real in (0, 1000]: a crossbar budget relative to the base network (a huge one
/// would make the search's packing run for hours).
pub fn budget(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 1000.0 => Ok(v),
        _ => Err(format!("'{s}' is not a budget in (0, 1000]")),
    }
}

/// A real in [0, 1].
pub fn fraction(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=1.0).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not a number in [0, 1]")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        assert_eq!(int_in::<1, 1000>("5"), Ok(5));
        assert!(int_in::<1, 1000>("0").is_err());
        assert!(int_in::<1, 1000>("99999999999").is_err());
        assert!(non_negative("-1").is_err());
        assert!(non_negative("nan").is_err());
        assert!(non_negative("inf").is_err());
        assert_eq!(non_negative("2.5"), Ok(2.5));
        assert!(fraction("1.5").is_err());
        assert!(fraction("nan").is_err());
        assert_eq!(fraction("0.4"), Ok(0.4));
    }
}
