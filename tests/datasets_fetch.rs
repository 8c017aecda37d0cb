//! `gnnaudit datasets fetch` against a mirror served on loopback: it installs cora where the
//! loader finds it by name, refuses a corrupted file with exit 2 leaving nothing, refuses
//! non-http URLs; and "dataset not found" says where it looked and how to get the data.
use gnnaudit::data::{self, catalog, content_sha256};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "common/data.rs"]
mod test_data;

/// A plain HTTP/1.1 server on 127.0.0.1 serving `files` by path, in a thread that stops by
/// itself after 120 s or 32 requests. Returns its base URL and a count of requests served.
fn serve(files: HashMap<String, Vec<u8>>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let served = Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(120);
        while Instant::now() < deadline && count.load(Ordering::SeqCst) < 32 {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            stream.set_nonblocking(false).unwrap();
            stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                match stream.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => request.extend_from_slice(&buf[..n]),
                }
            }
            let line = String::from_utf8_lossy(&request).lines().next().unwrap_or_default().to_string();
            let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
            count.fetch_add(1, Ordering::SeqCst);
            let _ = match files.get(&path) {
                Some(body) => stream
                    .write_all(
                        format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", body.len())
                            .as_bytes(),
                    )
                    .and_then(|_| stream.write_all(body)),
                None => stream.write_all(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
            };
        }
    });
    (base, served)
}

/// gnnaudit with a private HOME and no data or mirror settings from the caller's environment.
fn gnnaudit(home: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gnnaudit"));
    c.args(args).current_dir(home).env("HOME", home);
    for var in ["GNNAUDIT_DATA", "GNNAUDIT_DATASETS_MIRROR", "http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"] {
        c.env_remove(var);
    }
    c.envs(envs.iter().copied()).output().expect("gnnaudit runs")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn cora_bytes() -> Vec<u8> {
    std::fs::read(test_data::fixtures_dir().join("cora.npz")).unwrap()
}

#[test]
fn fetch_installs_cora_from_a_mirror_where_the_loader_finds_it() {
    let home = tempfile::tempdir().unwrap();
    let (base, served) = serve(HashMap::from([("/mirror/cora.npz".to_string(), cora_bytes())]));
    let mirror = format!("{base}/mirror/");
    let out = gnnaudit(home.path(), &["datasets", "fetch", "cora"], &[("GNNAUDIT_DATASETS_MIRROR", &mirror)]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let installed = home.path().join(".cache/gnnaudit/datasets/cora.npz");
    assert_eq!(std::fs::read(&installed).unwrap(), cora_bytes());
    assert!(stderr(&out).contains("verified"), "{}", stderr(&out));
    assert_eq!(served.load(Ordering::SeqCst), 1);

    // The default data directory is searched by name: no GNNAUDIT_DATA, no --data-dir.
    let out = gnnaudit(home.path(), &["datasets", "describe", "cora", "--json"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!((v["nodes"].as_u64(), v["edges"].as_u64()), (Some(2708), Some(5278)));

    // Fetching again checks the installed file and downloads nothing.
    let out = gnnaudit(home.path(), &["datasets", "fetch", "cora", "--mirror", &mirror], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("already installed"), "{}", stderr(&out));
    assert_eq!(served.load(Ordering::SeqCst), 1);
}

#[test]
fn fetch_refuses_a_corrupted_file_with_exit_2_and_leaves_nothing() {
    let home = tempfile::tempdir().unwrap();
    let mut bad = cora_bytes();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x01;
    let (base, served) = serve(HashMap::from([("/cora.npz".to_string(), bad)]));
    let dir = home.path().join("data");
    let out = gnnaudit(
        home.path(),
        &["datasets", "fetch", "cora", "--mirror", &base, "--data-dir", dir.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("sha256") && err.contains("cora.npz") && err.contains("--mirror"), "{err}");
    assert_eq!(served.load(Ordering::SeqCst), 1);
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(left.is_empty(), "nothing may be left behind: {left:?}");

    // A mirror without the file: exit 2 naming the URL.
    let out = gnnaudit(
        home.path(),
        &["datasets", "fetch", "cora-ml", "--mirror", &base, "--data-dir", dir.to_str().unwrap()],
        &[],
    );
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("cora-ml.npz") && stderr(&out).contains("404"), "{}", stderr(&out));
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

/// Arguments, environment, and what the error must say.
type RefusalCase<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a [&'a str]);

#[test]
fn fetch_refuses_other_schemes_unknown_names_and_unconvertible_upstreams() {
    let home = tempfile::tempdir().unwrap();
    let cases: [RefusalCase; 4] = [
        (&["datasets", "fetch", "cora", "--mirror", "file:///etc"], &[], &["--mirror", "file:///etc", "http"]),
        (&["datasets", "fetch", "cora"], &[("GNNAUDIT_DATASETS_MIRROR", "ftp://x/")], &["GNNAUDIT_DATASETS_MIRROR"]),
        (&["datasets", "fetch", "no-such-graph"], &[], &["no-such-graph", "cora", "twitch-DE"]),
        (&["datasets", "fetch", "facebook100-Cornell5"], &[], &["Cornell5.mat", "cannot convert", "--mirror"]),
    ];
    for (args, envs, needles) in cases {
        let out = gnnaudit(home.path(), args, envs);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
        for n in needles {
            assert!(stderr(&out).contains(n), "{args:?} should say '{n}': {}", stderr(&out));
        }
    }
    assert!(!home.path().join(".cache").exists(), "a refused fetch creates nothing");
}

#[test]
fn dataset_not_found_names_the_directories_the_variable_and_the_fetch_command() {
    let home = tempfile::tempdir().unwrap();
    let out = gnnaudit(home.path(), &["datasets", "describe", "cora"], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in [
        ".cache/gnnaudit/datasets/cora.npz",
        "datasets/cora.npz",
        "GNNAUDIT_DATA is not set",
        "gnnaudit datasets fetch cora",
    ] {
        assert!(err.contains(needle), "'{needle}' in {err}");
    }
    let empty = home.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let out = gnnaudit(home.path(), &["datasets", "describe", "cora"], &[("GNNAUDIT_DATA", empty.to_str().unwrap())]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&format!("GNNAUDIT_DATA is {}", empty.display())), "{}", stderr(&out));
}

/// The catalog describes the fixture exactly: file size and sha256, and the content hash an
/// upstream conversion must reach.
#[test]
fn catalog_matches_the_cora_fixture() {
    let entry = catalog::find("cora").unwrap();
    let path = test_data::fixtures_dir().join("cora.npz");
    assert_eq!(std::fs::metadata(&path).unwrap().len(), entry.bytes);
    assert_eq!(data::file_sha256(&path).unwrap(), entry.sha256);
    let catalog::Upstream::Npz { content_sha256: want, url, .. } = entry.upstream else {
        panic!("cora is an npz upstream")
    };
    assert!(url.starts_with("https://"));
    assert_eq!(content_sha256(&data::npz::load(&path).unwrap()), want);
    assert!(data::normalise::holds_content(entry, &path));
    // Every name is unique and every checksum is 64 hex digits.
    let mut names: Vec<_> = catalog::names().collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), catalog::CATALOG.len());
    assert!(catalog::CATALOG.iter().all(|e| e.sha256.len() == 64 && e.sha256.bytes().all(|b| b.is_ascii_hexdigit())));
}
