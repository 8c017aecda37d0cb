//! Downloading a file whose sha256 is known in advance. The bytes go to a temporary file in the
//! destination's directory and are renamed into place only once the checksum matches, so a data
//! directory never holds a partial or corrupted dataset, even after a crash or Ctrl-C.
use crate::error::{Error, Result};
use crate::fsutil::hex;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;
use tempfile::NamedTempFile;

/// Files at least this large get a progress bar (on a terminal).
const PROGRESS_BYTES: u64 = 1 << 20;

/// Refuses anything but an http(s) URL: a `file://` or other scheme would let a dataset name or a
/// mirror setting read local files or reach other protocols.
pub fn check_url(url: &str, source: &str) -> Result<()> {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") {
        Ok(())
    } else {
        Err(Error::invalid(source, format!("'{url}' is not an http:// or https:// URL")))
    }
}

/// A downloaded file, verified, still temporary: dropped, it leaves nothing behind.
pub struct Verified {
    pub file: NamedTempFile,
    pub bytes: u64,
}

/// Downloads `url` into a temporary file in `dir` and checks its sha256 against `sha256`
/// (when given). `source` names where the URL came from in errors (a flag, a variable).
pub fn download(url: &str, sha256: Option<&str>, dir: &Path, source: &str) -> Result<Verified> {
    check_url(url, source)?;
    std::fs::create_dir_all(dir).map_err(|e| Error::bad_file(dir, format!("cannot create the data directory: {e}")))?;
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(Duration::from_secs(30)))
        .timeout_recv_body(Some(Duration::from_secs(60)))
        .build()
        .into();
    let failed = |e: &dyn std::fmt::Display| Error::invalid(source, format!("cannot download {url}: {e}"));
    let mut response = agent.get(url).call().map_err(|e| failed(&e))?;
    let total = response.body().content_length();
    let mut reader = response.body_mut().with_config().limit(u64::MAX).reader();

    let mut file = tempfile::Builder::new()
        .prefix(".download-")
        .suffix(".part")
        .tempfile_in(dir)
        .map_err(|e| Error::bad_file(dir, format!("cannot create a temporary file: {e}")))?;
    let bar = progress_bar(total, url);
    let mut hasher = Sha256::new();
    let mut bytes = 0u64;
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = reader.read(&mut buf).map_err(|e| failed(&e))?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n]).map_err(|e| Error::bad_file(file.path(), e))?;
        bytes += n as u64;
        if let Some(b) = &bar {
            b.set_position(bytes);
        }
    }
    file.flush().map_err(|e| Error::bad_file(file.path(), e))?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let got = hex(&hasher.finalize());
    if let Some(want) = sha256 {
        if got != want {
            return Err(Error::invalid(
                source,
                format!("{url}: sha256 {got} ({bytes} bytes) is not the expected {want}; nothing was installed"),
            ));
        }
    }
    Ok(Verified { file, bytes })
}

/// Moves a verified download to `dest` (same directory, so the rename is atomic), readable by all.
pub fn install(verified: Verified, dest: &Path) -> Result<()> {
    let file = verified.file.as_file();
    let mut perms = file.metadata().map_err(|e| Error::bad_file(dest, e))?.permissions();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        perms.set_mode(0o644);
    }
    file.set_permissions(perms).map_err(|e| Error::bad_file(dest, e))?;
    verified.file.persist(dest).map_err(|e| Error::bad_file(dest, format!("cannot install: {}", e.error)))?;
    Ok(())
}

fn progress_bar(total: Option<u64>, url: &str) -> Option<indicatif::ProgressBar> {
    let total = total.filter(|&t| t >= PROGRESS_BYTES)?;
    let bar = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
    bar.set_style(
        indicatif::ProgressStyle::with_template("{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} eta {eta}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    bar.set_message(url.rsplit('/').next().unwrap_or(url).to_string());
    Some(bar)
}
