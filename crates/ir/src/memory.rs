//! How much memory this process can still get: used to refuse, with an error, work whose
//! buffers cannot fit (an allocation failure aborts the process instead).
//!
//! The budget is the smallest of: the machine's `MemAvailable`, the room left under the
//! address-space limit (`ulimit -v`, RLIMIT_AS) after what the process already maps, and
//! the room left under its cgroup's memory limit (v2 `memory.max`, v1
//! `memory.limit_in_bytes`).

/// `MemAvailable` of /proc/meminfo in bytes; `None` where it cannot be read (not Linux).
fn meminfo_available() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// A field of /proc/self/status in bytes (`VmSize`: the address space in use).
fn self_status_bytes(field: &str) -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// Room under RLIMIT_AS, if a limit is set.
fn address_space_room() -> Option<u64> {
    #[cfg(unix)]
    {
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes one rlimit struct through a valid pointer.
        if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) } != 0
            || lim.rlim_cur == libc::RLIM_INFINITY
        {
            return None;
        }
        let used = self_status_bytes("VmSize:").unwrap_or(0);
        Some((lim.rlim_cur as u64).saturating_sub(used))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// Room under this process's cgroup memory limit (v2, else v1), if one is set.
fn cgroup_room() -> Option<u64> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let read = |p: String| {
        std::fs::read_to_string(p)
            .ok()
            .map(|s| s.trim().to_string())
    };
    for line in cg.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, ctrl, path) = (parts.next()?, parts.next()?, parts.next()?);
        if ctrl.is_empty() {
            // cgroup v2
            let base = format!("/sys/fs/cgroup{path}");
            let max = read(format!("{base}/memory.max"))?;
            if max == "max" {
                return None;
            }
            let max: u64 = max.parse().ok()?;
            let cur: u64 = read(format!("{base}/memory.current"))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            return Some(max.saturating_sub(cur));
        }
        if ctrl.split(',').any(|c| c == "memory") {
            let base = format!("/sys/fs/cgroup/memory{path}");
            let max: u64 = read(format!("{base}/memory.limit_in_bytes"))?
                .parse()
                .ok()?;
            // v1 reports "no limit" as a huge page-aligned number.
            if max >= 1 << 60 {
                return None;
            }
            let cur: u64 = read(format!("{base}/memory.usage_in_bytes"))
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            return Some(max.saturating_sub(cur));
        }
    }
    None
}

/// Bytes this process can still allocate: the smallest of the machine's available memory,
/// the room under RLIMIT_AS and the room under its cgroup limit; `None` where none of
/// them can be read (not Linux).
pub fn available_bytes() -> Option<u64> {
    [meminfo_available(), address_space_room(), cgroup_room()]
        .into_iter()
        .flatten()
        .min()
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
            "{what} needs {:.2} GiB, more than the {:.2} GiB this process may still use (available memory, ulimit -v and cgroup limits); use smaller sizes or free memory",
            bytes as f64 / (1u64 << 30) as f64,
            avail as f64 / (1u64 << 30) as f64
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_is_positive_here_and_refuses_the_absurd() {
        let b = available_bytes().expect("Linux");
        assert!(b > 0);
        assert!(check_fits(u64::MAX / 2, "a test").is_err());
        assert!(check_fits(1024, "a test").is_ok());
    }
}
