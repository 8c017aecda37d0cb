//! File writes that a reader never sees half done, and the hex form of digests used in file
//! names. One copy for the whole crate: reports, the cell store, Slurm scripts and checkpoints.
//!
//! Content goes to a temporary file in the target's folder, is flushed to disk, then renamed
//! over the target (rename is atomic within one file system).
use crate::error::{Error, Result};
use std::io::Write;
use std::path::Path;

/// Writes `bytes` to `path` atomically (temp file in the same folder, fsync, rename).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic_with(path, |tmp| {
        let mut f = std::fs::OpenOptions::new().write(true).truncate(true).open(tmp)?;
        f.write_all(bytes)?;
        Ok(())
    })
}

/// Like [`write_atomic`], for writers that want a path (safetensors, libtorch): `write` fills
/// the temporary file at the path it is given, which is then synced and renamed over `path`.
pub fn write_atomic_with(path: &Path, write: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| Error::bad_file(dir, format!("cannot create folder: {e}")))?;
    let tmp = tempfile::Builder::new()
        .prefix(".tmp-")
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| Error::bad_file(dir, format!("cannot create a temporary file: {e}")))?;
    write(tmp.path()).map_err(|e| match e {
        Error::Io(io) => cannot_write(path, io),
        e => e,
    })?;
    // Temporary files are private (0600); reports are ordinary files.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))
            .map_err(|e| cannot_write(path, e))?;
    }
    // A full disk often shows only here, when the written pages reach the disk.
    std::fs::File::open(tmp.path()).and_then(|f| f.sync_all()).map_err(|e| cannot_write(path, e))?;
    tmp.persist(path).map_err(|e| Error::bad_file(path, format!("cannot rename into place: {}", e.error)))?;
    Ok(())
}

/// A failed write of `path`, named: the file the user will look for (not the temporary one),
/// and for a full disk or quota the fix. Bad input (exit 2): the output location is the user's.
pub fn cannot_write(path: &Path, e: std::io::Error) -> Error {
    let full = matches!(e.kind(), std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded)
        || e.raw_os_error() == Some(libc::ENOSPC)
        || e.raw_os_error() == Some(libc::EDQUOT);
    if full {
        Error::bad_file(path, format!("cannot write: {e} (free some space there, or write elsewhere)"))
    } else {
        Error::bad_file(path, format!("cannot write: {e}"))
    }
}

/// Lower-case hex of a digest (fingerprints and cache keys that end up in file names).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp_files() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/out.json");
        write_atomic(&p, b"first").unwrap();
        write_atomic(&p, b"second").unwrap();
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "second");
        write_atomic_with(&dir.path().join("sub/other.bin"), |tmp| Ok(std::fs::write(tmp, b"x")?)).unwrap();
        let mut names: Vec<_> =
            std::fs::read_dir(p.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["other.bin", "out.json"], "{names:?}");
    }

    #[test]
    fn a_full_disk_names_the_file_and_is_bad_input() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("report.json");
        // What the writer gets from write(2) on a full file system.
        let e = write_atomic_with(&p, |_| Err(std::io::Error::from_raw_os_error(libc::ENOSPC).into())).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{e}");
        let text = e.to_string();
        assert!(text.starts_with(&format!("{}: cannot write: ", p.display())), "{text}");
        assert!(text.contains("No space left on device") && text.contains("free some space"), "{text}");
        assert!(!p.exists() && std::fs::read_dir(dir.path()).unwrap().next().is_none(), "nothing half-written");
    }

    #[test]
    fn hex_is_lower_case_two_digits_per_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xab]), "000fab");
    }
}
