//! The resty flavor (OpenResty's resty.chash, Apache APISIX's chash) from
//! Rust: every key of the golden sets recorded from the real resty.chash
//! inside nginx (tests/data/resty, provenance in tests/data/PROVENANCE.md)
//! routes to resty.chash's node, and the flavor reads back.

use std::path::PathBuf;

use chash::{Flavor, Ring};

fn resty_data(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/resty").join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// "ID WEIGHT" lines ('#' comments): the nodes table given to resty.chash.
fn read_nodes(name: &str) -> Vec<(String, u32)> {
    let text = String::from_utf8(resty_data(name)).expect("nodes are text");
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (id, weight) = l.rsplit_once(' ').expect("ID WEIGHT");
            (id.to_string(), weight.parse().expect("a weight"))
        })
        .collect()
}

// "key,id,index" rows, split at the last two commas (keys may hold commas).
fn read_answers(name: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let bytes = resty_data(name);
    bytes
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|row| {
            let index_comma = row.iter().rposition(|&b| b == b',').expect("key,id,index");
            let id_comma = row[..index_comma].iter().rposition(|&b| b == b',').expect("key,id");
            (row[..id_comma].to_vec(), row[id_comma + 1..index_comma].to_vec())
        })
        .collect()
}

fn check_set(nodes: &str, answers: &str) -> usize {
    let ring =
        Ring::build(Flavor::Resty, 0, read_nodes(nodes)).unwrap_or_else(|e| panic!("{nodes}: {e}"));
    assert_eq!(ring.flavor(), Some(Flavor::Resty));
    assert_eq!(ring.point_multiple(), 160);
    let answers_file = answers;
    let answers = read_answers(answers_file);
    assert!(answers.len() >= 1000, "{answers_file} holds {} keys", answers.len());
    let mut mismatches = Vec::new();
    for (key, id) in &answers {
        let got = ring.node(key).map(str::as_bytes);
        if got != Some(id.as_slice()) {
            mismatches.push(format!(
                "'{}': chash {:?}, resty.chash {}",
                String::from_utf8_lossy(key),
                got.map(String::from_utf8_lossy),
                String::from_utf8_lossy(id)
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} keys differ: {:?}",
        mismatches.len(),
        answers.len(),
        &mismatches[..mismatches.len().min(5)]
    );
    answers.len()
}

#[test]
fn ipv4_ids_route_as_resty_chash() {
    assert_eq!(check_set("ra.nodes", "ra.csv"), 10_000);
}

#[test]
fn mixed_ids_route_as_resty_chash() {
    // [IPv6]:port, names, unix: paths and bare words: ids are opaque text.
    assert_eq!(check_set("rb.nodes", "rb.csv"), 5_000);
}

#[test]
fn the_nginx_flavor_of_the_same_ids_routes_elsewhere() {
    // The golden check discriminates: nginx hashes host and port apart
    // (host \0 port), resty the id text whole, so most keys move.
    let ring = Ring::build(Flavor::Nginx, 0, read_nodes("ra.nodes")).expect("nginx ring");
    let answers = read_answers("ra.csv");
    let same = answers
        .iter()
        .filter(|(key, id)| ring.node(key).map(str::as_bytes) == Some(id.as_slice()))
        .count();
    assert!(same < answers.len() / 2, "{same} of {} keys agree across flavors", answers.len());
}
