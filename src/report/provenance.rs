//! Where a report came from: crate version, git commit, and UTC timestamps.
use serde::{Deserialize, Serialize};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// The tool that wrote a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolInfo {
    pub name: String,
    pub version: String,
    /// `git rev-parse HEAD` of the source tree ("unknown" outside git).
    pub git_commit: String,
    /// Uncommitted changes to tracked files at run time (None when unknown).
    pub git_dirty: Option<bool>,
}

impl ToolInfo {
    pub fn current() -> Self {
        let (git_commit, git_dirty) = git_state();
        ToolInfo { name: "gnnaudit".into(), version: env!("CARGO_PKG_VERSION").into(), git_commit, git_dirty }
    }
}

/// The commit: `GNNAUDIT_GIT_COMMIT` at build time if set (for packaged builds), otherwise `git`
/// run in the source tree the binary was built from.
fn git_state() -> (String, Option<bool>) {
    if let Some(c) = option_env!("GNNAUDIT_GIT_COMMIT") {
        return (c.to_string(), None);
    }
    let dir = env!("CARGO_MANIFEST_DIR");
    let run = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    match run(&["rev-parse", "HEAD"]) {
        Some(commit) if commit.len() >= 7 => {
            let dirty = run(&["status", "--porcelain", "--untracked-files=no"]).map(|s| !s.is_empty());
            (commit, dirty)
        }
        _ => ("unknown".into(), None),
    }
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's algorithm).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

fn parts(t: SystemTime) -> (i64, u32, u32, u64, u64, u64) {
    let secs = t.duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
    let s = secs % 86_400;
    (y, mo, d, s / 3600, (s / 60) % 60, s % 60)
}

/// "2026-11-22T06:00:37Z"
pub fn utc_iso(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = parts(t);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// "20261122T060037Z", for folder names.
pub fn utc_compact(t: SystemTime) -> String {
    let (y, mo, d, h, mi, s) = parts(t);
    format!("{y:04}{mo:02}{d:02}T{h:02}{mi:02}{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_match_known_dates() {
        assert_eq!(utc_iso(UNIX_EPOCH), "1970-01-01T00:00:00Z");
        // 2000-02-29 12:34:56 UTC (leap day) = 951827696
        assert_eq!(utc_iso(UNIX_EPOCH + Duration::from_secs(951_827_696)), "2000-02-29T12:34:56Z");
        // 2026-11-22 06:00:37 UTC = 1795327237
        assert_eq!(utc_compact(UNIX_EPOCH + Duration::from_secs(1_795_327_237)), "20261122T060037Z");
    }
}
