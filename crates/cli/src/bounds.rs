//! clap value parsers for numbers with a sensible range: a count of 10^11 runs or a
//! negative threshold is an error at the command line, not an abort or a silent answer.

/// An integer in `LO..=HI`.
pub fn int_in<const LO: usize, const HI: usize>(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(v) if (LO..=HI).contains(&v) => Ok(v),
        _ => Err(format!("'{s}' is not an integer in {LO}..={HI}")),
    }
}

/// Most worker threads `--threads` may ask for: a pool of 2^63 threads never finishes
/// starting (a hang found by the `cli-run` fuzz target).
pub const MAX_THREADS: usize = 1024;

/// `--threads`: a count in 1..=1024.
pub fn threads(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(v) if (1..=MAX_THREADS).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a thread count in 1..={MAX_THREADS} (leave --threads out to use all cores)"
        )),
    }
}

/// `--jobs`: a count in 1..=1024 (a pool of 2^63 threads would never start).
pub fn jobs(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(v) if (1..=MAX_THREADS).contains(&v) => Ok(v),
        _ => Err(format!(
            "'{s}' is not a job count in 1..={MAX_THREADS} (leave --jobs out to use all cores)"
        )),
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
        assert_eq!(threads("4"), Ok(4));
        assert!(threads("0").is_err());
        assert!(threads("9223372036854775807").is_err());
    }
}
