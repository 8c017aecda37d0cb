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
    write(tmp.path())?;
    // Temporary files are private (0600); reports are ordinary files.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))?;
    }
    std::fs::File::open(tmp.path())?.sync_all()?;
    tmp.persist(path).map_err(|e| Error::bad_file(path, format!("cannot rename into place: {}", e.error)))?;
    Ok(())
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
    fn hex_is_lower_case_two_digits_per_byte() {
        assert_eq!(hex(&[0x00, 0x0f, 0xab]), "000fab");
    }
}
