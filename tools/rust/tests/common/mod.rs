//! Readers of the golden sets in the repository's tests/data/pingora (see
//! tests/data/PROVENANCE.md): answers recorded from pingora-ketama 0.8.0.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;

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
