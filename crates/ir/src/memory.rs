//! How much memory this machine can still give: used to refuse, with an error, work whose
//! buffers cannot fit (an allocation failure aborts the process instead).

/// `MemAvailable` of /proc/meminfo in bytes; `None` where it cannot be read (not Linux).
pub fn available_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// `Err(message)` when `bytes` exceed the available memory, naming `what`.
pub fn check_fits(bytes: u64, what: &str) -> Result<(), String> {
    check_fits_in(bytes, available_bytes(), what)
}

/// As [`check_fits`] against a budget read earlier (so that memory a caller has since
/// allocated itself is not counted twice); `None` accepts everything.
pub fn check_fits_in(bytes: u64, budget: Option<u64>, what: &str) -> Result<(), String> {
    match budget {
        Some(avail) if bytes > avail => Err(format!(
            "{what} needs {:.2} GiB, more than the {:.2} GiB this machine has available; use smaller sizes",
            bytes as f64 / (1u64 << 30) as f64,
            avail as f64 / (1u64 << 30) as f64
        )),
        _ => Ok(()),
    }
}
