//! Readers of the golden sets in the repository's tests/data/pingora (see
//! tests/data/PROVENANCE.md): answers recorded from pingora-ketama 0.8.0.
#![allow(dead_code)]

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use chash::Bucket;

pub fn data_path(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/pingora").join(name)
}

/// The file's lines as bytes, without their '\n' (keys are not all UTF-8-safe
/// to assume).
pub fn read_lines(name: &str) -> Vec<Vec<u8>> {
    let path = data_path(name);
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut lines: Vec<Vec<u8>> = bytes.split(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
    if lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    assert!(!lines.is_empty(), "{} is empty", path.display());
    lines
}

pub fn text(bytes: &[u8]) -> &str {
    std::str::from_utf8(bytes).expect("ASCII field")
}

pub fn addr(text: &str) -> SocketAddr {
    text.parse().unwrap_or_else(|e| panic!("'{text}': {e}"))
}

/// `ADDR WEIGHT` lines, in file order.
pub fn read_servers(name: &str) -> Vec<Bucket> {
    read_lines(name)
        .iter()
        .map(|line| {
            let line = text(line);
            let (address, weight) = line.split_once(' ').unwrap_or_else(|| panic!("'{line}'"));
            Bucket::new(addr(address), weight.trim().parse().unwrap())
        })
        .collect()
}

/// Rows `KEY,FIELD,FIELD...` checked against the keys file: the key is the
/// keys file's line (keys may hold commas), the fields follow it.
pub fn read_answers(keys_file: &str, answers_file: &str) -> Vec<(Vec<u8>, Vec<String>)> {
    let keys = read_lines(keys_file);
    let rows = read_lines(answers_file);
    assert_eq!(keys.len(), rows.len(), "{keys_file} and {answers_file} differ in length");
    keys.into_iter()
        .zip(rows)
        .map(|(key, row)| {
            assert!(
                row.len() > key.len() && row.starts_with(&key) && row[key.len()] == b',',
                "{answers_file}: row '{}' is not for key '{}'",
                String::from_utf8_lossy(&row),
                String::from_utf8_lossy(&key)
            );
            let fields = text(&row[key.len() + 1..]).split(',').map(str::to_string).collect();
            (key, fields)
        })
        .collect()
}

/// The `chash` CLI of this checkout's build (target chash_cli): `CHASH_CLI`,
/// else `CHASH_LIB_DIR/tools/chash` (tools/rust/test sets CHASH_LIB_DIR),
/// else `build/tools/chash` of this repository. Panics if there is none:
/// the snapshot tests cannot run without it, and must not pass silently.
pub fn cli() -> PathBuf {
    let path = std::env::var_os("CHASH_CLI").map(PathBuf::from).unwrap_or_else(|| {
        let build = std::env::var_os("CHASH_LIB_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../build"));
        build.join("tools/chash")
    });
    assert!(
        path.is_file(),
        "{}: no chash CLI (build target chash_cli: tools/rust/test does, or set CHASH_CLI)",
        path.display()
    );
    path
}

/// Runs the CLI with `args`; panics with its stderr if it fails. Its stdout.
pub fn run_cli<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Vec<u8> {
    let output = std::process::Command::new(cli())
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{}: {e}", cli().display()));
    assert!(
        output.status.success(),
        "chash {:?}: {}",
        args.iter().map(|a| a.as_ref().to_string_lossy().into_owned()).collect::<Vec<_>>(),
        String::from_utf8_lossy(&output.stderr)
    );
    output.stdout
}

/// A fresh folder for one test, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!("chash-rust-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        TempDir(dir)
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Writes `lines` (one a line) to the file `name`; its path.
    pub fn write_lines<S: AsRef<str>>(&self, name: &str, lines: &[S]) -> PathBuf {
        let mut text = String::new();
        for line in lines {
            text.push_str(line.as_ref());
            text.push('\n');
        }
        let path = self.path(name);
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `ADDR WEIGHT` lines of `buckets`, as a servers file writes them.
pub fn server_lines(buckets: &[Bucket]) -> Vec<String> {
    buckets.iter().map(|b| format!("{} {}", b.node(), b.weight())).collect()
}

/// Runs the CLI with `head`, the caller's `extra` arguments, then `tail`;
/// its stdout.
fn run_cli_around(head: &[&OsStr], extra: &[&str], tail: &[&OsStr]) -> Vec<u8> {
    let extra = extra.iter().map(OsStr::new);
    run_cli(&head.iter().copied().chain(extra).chain(tail.iter().copied()).collect::<Vec<_>>())
}

/// `chash build` of `servers` into `out`, with extra arguments.
pub fn build_snapshot(servers: &Path, out: &Path, extra: &[&str]) {
    let head: [&OsStr; 3] = ["build".as_ref(), "--servers".as_ref(), servers.as_os_str()];
    run_cli_around(&head, extra, &["--out".as_ref(), out.as_os_str()]);
}

/// `chash route` of keys_1000.txt on the pingora-v1 ring of servers_50.txt,
/// with extra arguments: its output, a line a key.
pub fn route_keys_1000(extra: &[&str]) -> String {
    let (servers, keys) = (data_path("servers_50.txt"), data_path("keys_1000.txt"));
    let head: [&OsStr; 5] = [
        "route".as_ref(),
        "--servers".as_ref(),
        servers.as_os_str(),
        "--mode".as_ref(),
        "pingora-v1".as_ref(),
    ];
    let routed = run_cli_around(&head, extra, &["--keys".as_ref(), keys.as_os_str()]);
    String::from_utf8(routed).expect("chash route prints text")
}
