//! Size checks before big allocations. Rust aborts the process (no error, no unwinding) when an
//! allocation fails, and libtorch throws from deep inside tch: a size that cannot fit must be
//! refused before anything is allocated, with an error naming the knob that asked for it.
//!
//! Sizes are computed in f64, so that absurd inputs (`nodes = 2^63`) cannot overflow the
//! arithmetic that is meant to catch them.
use crate::error::{Error, Result};

/// Bytes this machine can still give us: `MemAvailable` from /proc/meminfo, plus free swap is
/// not counted (a run that swaps is not one anybody waits for). None where /proc is missing.
pub fn available_bytes() -> Option<f64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024.0)
}

/// Human-readable bytes ("3.2 GiB").
pub fn show_bytes(bytes: f64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut x = bytes;
    let mut u = 0;
    while x >= 1024.0 && u + 1 < UNITS.len() {
        x /= 1024.0;
        u += 1;
    }
    if u == UNITS.len() - 1 && x >= 1024.0 {
        return format!("{bytes:.1e} B");
    }
    format!("{x:.1} {}", UNITS[u])
}

/// Refuses `bytes` (what `what` needs) when it exceeds the memory available; `field` is the knob
/// to lower. Where the available memory is unknown, anything beyond the address space the
/// allocator could ever return (isize::MAX) is still refused.
pub fn ensure_fits(field: &str, what: &str, bytes: f64) -> Result<()> {
    let limit = available_bytes().unwrap_or(isize::MAX as f64);
    if bytes.is_finite() && bytes <= limit {
        return Ok(());
    }
    Err(Error::invalid(
        field,
        format!(
            "{what} needs at least {} of memory, but {} {} available",
            show_bytes(bytes),
            show_bytes(limit),
            if available_bytes().is_some() { "are" } else { "can be" }
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_sizes_are_refused_and_small_ones_pass() {
        assert!(ensure_fits("nodes", "x", 1024.0).is_ok());
        let e = ensure_fits("nodes", "a graph of 2^63 nodes", 9.2e18 * 8.0).unwrap_err().to_string();
        assert!(e.starts_with("invalid nodes: a graph of 2^63 nodes needs at least"), "{e}");
        assert!(ensure_fits("nodes", "x", f64::INFINITY).is_err());
        assert_eq!(show_bytes(3.0 * 1024.0 * 1024.0 * 1024.0), "3.0 GiB");
    }
}
