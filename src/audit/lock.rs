//! The report folder's lock. A full audit (or its `--jobs` parent) holds it exclusively, so a
//! second audit into the same folder refuses instead of computing every cell again; `--shard`
//! processes and `--merge` hold it shared, so shards of one audit run side by side while a full
//! audit cannot start among them. Which cell a shard works on is told by the cell store's claims.
//!
//! An advisory `flock` on `<dir>/.lock` (the kernel drops it when the process dies, so a killed
//! audit never leaves the folder locked); the file holds the last holder's description, which
//! the refusal message shows.
use crate::error::{Error, Result};
use std::fs::{File, OpenOptions, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::Path;

pub const LOCK_FILE: &str = ".lock";

/// Held until dropped.
#[derive(Debug)]
pub struct FolderLock {
    _file: File,
}

impl FolderLock {
    /// Only holder of `dir`; refuses (exit 2) naming the holder when another process has it.
    pub fn exclusive(dir: &Path, what: &str) -> Result<FolderLock> {
        Self::take(dir, what, true)
    }

    /// One of several shards of the same audit; refuses while a full audit holds `dir`.
    pub fn shared(dir: &Path, what: &str) -> Result<FolderLock> {
        Self::take(dir, what, false)
    }

    fn take(dir: &Path, what: &str, exclusive: bool) -> Result<FolderLock> {
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::bad_file(&path, format!("cannot open the folder's lock: {e}")))?;
        let got = if exclusive { file.try_lock() } else { file.try_lock_shared() };
        match got {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                let holder = holder.trim();
                let holder =
                    if holder.is_empty() { "another gnnaudit process".to_string() } else { holder.to_string() };
                return Err(Error::bad_file(
                    dir,
                    format!(
                        "the report folder is in use by {holder}; wait for it to finish (`gnnaudit audit status {}`) or choose another --out",
                        dir.display()
                    ),
                ));
            }
            Err(TryLockError::Error(e)) => {
                return Err(Error::bad_file(&path, format!("cannot lock the report folder: {e}")));
            }
        }
        // Several shared holders overwrite each other's line: the message names the latest.
        let line = format!("{} (pid {} on {}, since {})\n", what, std::process::id(), hostname(), now_utc());
        let _ = file.set_len(0).and_then(|_| file.rewind()).and_then(|_| file.write_all(line.as_bytes()));
        Ok(FolderLock { _file: file })
    }
}

/// This machine's host name (for lock and claim holders).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown-host".into())
}

pub fn now_utc() -> String {
    crate::report::provenance::utc_iso(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exclusive_refuses_naming_the_holder_and_shared_coexist() {
        let dir = tempfile::tempdir().unwrap();
        let a = FolderLock::exclusive(dir.path(), "gnnaudit audit a.toml").unwrap();
        let e = FolderLock::exclusive(dir.path(), "second").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        let msg = e.to_string();
        assert!(msg.contains("gnnaudit audit a.toml") && msg.contains(&format!("pid {}", std::process::id())), "{msg}");
        assert!(FolderLock::shared(dir.path(), "shard").is_err());
        drop(a);
        let s1 = FolderLock::shared(dir.path(), "shard 1/2").unwrap();
        let _s2 = FolderLock::shared(dir.path(), "shard 2/2").unwrap();
        let e = FolderLock::exclusive(dir.path(), "full").unwrap_err().to_string();
        assert!(e.contains("shard 2/2"), "{e}");
        drop(s1);
    }
}
