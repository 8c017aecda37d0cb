//! The edge of a condition that holds below some point and fails above it (a p-value still under
//! beta, a GDP delta still above its target), found by doubling an upper end until the
//! condition fails and then bisecting: the search behind every "largest eps that ..." bound of
//! the crate.

/// Doubles `hi` (moving `lo` up to the last end where `holds` was true) until `holds(hi)` is
/// false, then halves the bracket `steps` times, keeping `holds(lo)` true and `holds(hi)` false.
/// Returns the final `(lo, hi)`, or `Err((lo, hi))` as soon as a doubling takes `hi` past `cap`
/// with the condition still holding at the previous end (`hi` not evaluated).
pub fn doubling_bisection(
    holds: impl Fn(f64) -> bool,
    mut lo: f64,
    mut hi: f64,
    cap: f64,
    steps: usize,
) -> Result<(f64, f64), (f64, f64)> {
    while holds(hi) {
        lo = hi;
        hi *= 2.0;
        if hi > cap {
            return Err((lo, hi));
        }
    }
    for _ in 0..steps {
        let mid = 0.5 * (lo + hi);
        if holds(mid) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok((lo, hi))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_the_edge_and_stops_at_the_cap() {
        let (lo, hi) = doubling_bisection(|x| x < 3.0, 0.0, 1.0, 1e3, 60).unwrap();
        assert!(lo < 3.0 && hi >= 3.0 && hi - lo < 1e-12, "{lo} {hi}");
        assert_eq!(doubling_bisection(|_| true, 0.0, 1.0, 1e3, 60), Err((512.0, 1024.0)));
    }
}
