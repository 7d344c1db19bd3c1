//! Every golden set of tests/data/pingora (answers recorded from
//! pingora-ketama 0.8.0, tests/data/PROVENANCE.md), key by key, through
//! node(), node_idx() + get_addr(), the batch lookups and node_iter().

mod common;

use std::net::SocketAddr;

use chash::{crc32, Bucket, Continuum, Version};
use common::{addr, read_answers, read_lines, read_servers, text};

// A #[test] a case, `name: check(arguments);`: each golden set its own test.
macro_rules! cases {
    ($($name:ident: $check:ident($($arg:expr),* $(,)?);)*) => {$(
        #[test]
        fn $name() {
            $check($($arg),*);
        }
    )*};
}

fn v2m16() -> Version {
    Version::V2 { point_multiple: 16 }
}

fn key_text(key: &[u8]) -> String {
    String::from_utf8_lossy(key).into_owned()
}

// Each key's server through every lookup path the crate has.
fn check_ring(servers: &str, version: Version, keys: &str, golden: &str) {
    let buckets = read_servers(servers);
    let ring = Continuum::try_new_with_version(&buckets, version)
        .unwrap_or_else(|e| panic!("{servers} {version:?}: {e}"));
    let answers = read_answers(keys, golden);
    let keys: Vec<&[u8]> = answers.iter().map(|(k, _)| k.as_slice()).collect();
    let mut batch = vec![0u32; keys.len()];
    ring.bucket_idxs(&keys, &mut batch);
    let hashes: Vec<u32> = keys.iter().map(|k| crc32(k)).collect();
    let mut by_hash = vec![0u32; keys.len()];
    ring.bucket_idxs_by_hash(&hashes, &mut by_hash);

    let mut mismatches = Vec::new();
    for (i, (key, fields)) in answers.iter().enumerate() {
        let expected = addr(fields.last().unwrap());
        let got = ring.node(key);
        if got != Some(expected) && mismatches.len() < 5 {
            mismatches.push(format!("'{}': {got:?}, pingora {expected}", key_text(key)));
        }
        let single = ring.bucket_idx(key).expect("a non-empty ring");
        assert_eq!(batch[i] as usize, single, "batch, '{}'", key_text(key));
        assert_eq!(by_hash[i] as usize, single, "by hash, '{}'", key_text(key));
        assert_eq!(ring.addrs()[single], ring.node(key).unwrap());
        let mut idx = ring.node_idx(key);
        assert_eq!(
            ring.get_addr(&mut idx),
            Some(&ring.addrs()[single]),
            "get_addr, '{}'",
            key_text(key)
        );
    }
    assert!(mismatches.is_empty(), "{golden}: {}", mismatches.join("; "));
}

cases! {
    v1_50_servers: check_ring(
        "servers_50.txt",
        Version::V1,
        "keys_10000.txt",
        "golden_v1_50srv.csv",
    );
    v2m16_50_servers: check_ring(
        "servers_50.txt",
        v2m16(),
        "keys_10000.txt",
        "golden_v2m16_50srv.csv",
    );
    v1_ipv6_3_servers: check_ring(
        "servers_ipv6_3.txt",
        Version::V1,
        "keys_1000.txt",
        "golden_v1_ipv6_3srv.csv",
    );
    v1_ipv6_text_forms: check_ring(
        "servers_ipv6_format.txt",
        Version::V1,
        "keys_1000.txt",
        "golden_v1_ipv6_format.csv",
    );
    v2m16_ipv6_text_forms: check_ring(
        "servers_ipv6_format.txt",
        v2m16(),
        "keys_1000.txt",
        "golden_v2m16_ipv6_format.csv",
    );
    v1_nginx_9_servers: check_ring(
        "servers_nginx9.txt",
        Version::V1,
        "keys_1000.txt",
        "golden_v1_nginx9.csv",
    );
}

// Forged keys at CRC32 0, 1, 2^32-1, 2^32-2, the first and last points +-1
// (wrap-around) and random points +-1: `key,crc32hex,addr`.
fn check_edges(version: Version, keys: &str, golden: &str) {
    let ring = Continuum::new_with_version(&read_servers("servers_50.txt"), version);
    for (key, fields) in read_answers(keys, golden) {
        let hash = u32::from_str_radix(&fields[0], 16).unwrap();
        assert_eq!(crc32(&key), hash, "crc32 of '{}'", key_text(&key));
        let expected = addr(&fields[1]);
        assert_eq!(ring.node(&key), Some(expected), "'{}' (crc {hash:08x})", key_text(&key));
        assert_eq!(ring.bucket_idx_by_hash(hash).map(|i| ring.addrs()[i]), Some(expected));
    }
}

cases! {
    v1_edge_keys: check_edges(Version::V1, "edge_keys_v1_50srv.txt", "golden_edge_v1_50srv.csv");
    v2m16_edge_keys: check_edges(
        v2m16(),
        "edge_keys_v2m16_50srv.txt",
        "golden_edge_v2m16_50srv.csv",
    );
}

// node_iter's first 10 servers, repeats included.
fn check_iter(servers: &str, version: Version, golden: &str) {
    let ring = Continuum::new_with_version(&read_servers(servers), version);
    for (key, fields) in read_answers("keys_1000.txt", golden) {
        let expected: Vec<SocketAddr> = fields.iter().map(|f| addr(f)).collect();
        assert_eq!(expected.len(), 10);
        let got: Vec<SocketAddr> = ring.node_iter(&key).take(10).copied().collect();
        assert_eq!(got, expected, "node_iter('{}')", key_text(&key));
        // The same walk through node_idx and get_addr.
        let mut idx = ring.node_idx(&key);
        let by_idx: Vec<SocketAddr> = (0..10).map(|_| *ring.get_addr(&mut idx).unwrap()).collect();
        assert_eq!(by_idx, expected, "get_addr walk of '{}'", key_text(&key));
    }
}

cases! {
    v1_node_iter: check_iter("servers_5.txt", Version::V1, "golden_iter10_v1_5srv.csv");
    v2m16_node_iter: check_iter("servers_5.txt", v2m16(), "golden_iter10_v2m16_5srv.csv");
    v1_ipv6_node_iter: check_iter(
        "servers_ipv6_3.txt",
        Version::V1,
        "golden_iter10_v1_ipv6_3srv.csv",
    );
}

// The first 5 distinct servers of node_iter: the failover order.
#[test]
fn v1_distinct_failover_order() {
    let ring = Continuum::new(&read_servers("servers_5.txt"));
    for (key, fields) in read_answers("keys_1000.txt", "golden_iterdistinct_v1_5srv.csv") {
        let expected: Vec<SocketAddr> = fields.iter().map(|f| addr(f)).collect();
        let mut seen = Vec::new();
        for node in ring.node_iter(&key).take(ring.num_points()) {
            if !seen.contains(node) {
                seen.push(*node);
            }
        }
        assert_eq!(seen, expected, "distinct walk of '{}'", key_text(&key));
        let got: Vec<SocketAddr> = ring.distinct_iter(&key).copied().collect();
        assert_eq!(got, expected, "distinct_iter('{}')", key_text(&key));
    }
}

// `addr,ip_display,port,point0,point1,point2`: the first three points of each
// server's chain, which exist only if chash hashed pingora's exact text.
fn check_hash_strings(golden: &str) {
    let rows = read_lines(golden);
    assert!(text(&rows[0]).starts_with("addr,"));
    for row in &rows[1..] {
        let fields: Vec<&str> = text(row).split(',').collect();
        let node = addr(fields[0]);
        let ring = Continuum::new(&[Bucket::new(node, 1)]);
        for point in &fields[3..6] {
            let hash = u32::from_str_radix(point, 16).unwrap();
            // The first point at or after `hash` is `hash` itself.
            assert_eq!(ring.node_idx_by_hash(hash), hash as usize, "{node}: no point {point}");
        }
    }
}

cases! {
    hashed_text_50_servers: check_hash_strings("hash_strings_50srv.csv");
    hashed_text_ipv6_forms: check_hash_strings("hash_strings_ipv6_format.csv");
}

// The one duplicated hash of servers_50's v1 ring: v1 keeps the server listed
// first (pingora's winner here), v2 the smallest address.
#[test]
fn collision_winners() {
    let buckets = read_servers("servers_50.txt");
    let rows = read_lines("collide_50srv_collisions.csv");
    assert_eq!(rows.len(), 2);
    let fields: Vec<&str> = text(&rows[1]).split(',').collect();
    let hash = u32::from_str_radix(fields[0], 16).unwrap();
    let v1 = Continuum::new(&buckets);
    let v2 = Continuum::new_with_version(&buckets, Version::V2 { point_multiple: 160 });
    let winner = |ring: &Continuum| ring.bucket_idx_by_hash(hash).map(|i| ring.addrs()[i]);
    assert_eq!(winner(&v1), Some(addr(fields[3])));
    assert_eq!(winner(&v2), Some(addr(fields[4])));
    assert_eq!(fields[2], fields[4], "v2's winner is the smallest address");
    // One point fewer than generated: the collision dropped one.
    let generated: usize = buckets.iter().map(|b| b.weight() as usize * 160).sum();
    assert_eq!(v1.points_generated(), generated as u64);
    assert_eq!(v1.num_points(), generated - 1);
}
