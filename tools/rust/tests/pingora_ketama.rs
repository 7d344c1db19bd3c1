//! pingora-ketama's own expectations (the #[test]s of pingora-ketama 0.8.0,
//! src/lib.rs and tests/backwards_compat.rs), rewritten against this crate's
//! identical API: the expected answers are pingora's.

mod common;

use std::collections::BTreeSet;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use chash::{Bucket, Continuum, Version, DEFAULT_POINT_MULTIPLE};
use common::addr;

fn ring_of(hosts: &[&str], weight: u32) -> Continuum {
    let buckets: Vec<Bucket> = hosts.iter().map(|h| Bucket::new(addr(h), weight)).collect();
    Continuum::new(&buckets)
}

fn walk(ring: &Continuum, key: &[u8], steps: usize) -> Vec<SocketAddr> {
    ring.node_iter(key).take(steps).copied().collect()
}

// `host:port` for each of `ports`: servers of one host, in order.
fn on_host(host: &str, ports: &[u16]) -> Vec<SocketAddr> {
    ports.iter().map(|port| addr(&format!("{host}:{port}"))).collect()
}

#[test]
fn consistency_after_adding_host() {
    // Adding 127.0.0.11 keeps both keys where they were.
    for hosts in [10, 11] {
        let buckets: Vec<Bucket> =
            (1..=hosts).map(|u| Bucket::new(addr(&format!("127.0.0.{u}:6443")), 1)).collect();
        let ring = Continuum::new(&buckets);
        assert_eq!(ring.node(b"a"), Some(addr("127.0.0.10:6443")), "{hosts} hosts");
        assert_eq!(ring.node(b"b"), Some(addr("127.0.0.5:6443")), "{hosts} hosts");
    }
}

#[test]
fn matches_nginx_sample() {
    let ring = ring_of(&["127.0.0.1:7777", "127.0.0.1:7778"], 1);
    let expected: [(&[u8], &str); 6] = [
        (b"/some/path", "127.0.0.1:7778"),
        (b"/some/longer/path", "127.0.0.1:7777"),
        (b"/sad/zaidoon", "127.0.0.1:7778"),
        (b"/g", "127.0.0.1:7777"),
        (b"/pingora/team/is/cool/and/this/is/a/long/uri", "127.0.0.1:7778"),
        (b"/i/am/not/confident/in/this/code", "127.0.0.1:7777"),
    ];
    for (key, server) in expected {
        assert_eq!(ring.node(key), Some(addr(server)), "{}", String::from_utf8_lossy(key));
    }
}

// pingora checks 10.0.0.1-9:443 x weight 100 against nginx's log
// (test-data/sample-nginx-upstream.csv); tests/data/pingora holds the same
// ring's answers recorded from pingora-ketama itself.
#[test]
fn matches_nginx_sample_data() {
    let hosts: Vec<String> = (1..=9).map(|i| format!("10.0.0.{i}:443")).collect();
    let buckets: Vec<Bucket> = hosts.iter().map(|h| Bucket::new(addr(h), 100)).collect();
    assert_eq!(buckets, common::read_servers("servers_nginx9.txt"));
    let ring = Continuum::new(&buckets);
    let answers = common::read_answers("keys_1000.txt", "golden_v1_nginx9.csv");
    for (key, fields) in &answers {
        assert_eq!(ring.node(key), Some(addr(&fields[0])), "{}", String::from_utf8_lossy(key));
    }
}

#[test]
fn node_iter() {
    let three = ring_of(&["127.0.0.1:7777", "127.0.0.1:7778", "127.0.0.1:7779"], 1);
    assert_eq!(
        walk(&three, b"doghash", 8),
        on_host("127.0.0.1", &[7778, 7779, 7779, 7777, 7777, 7778, 7778, 7779])
    );

    // Without 127.0.0.1:7778, its points are gone and the rest stay in order.
    let two = ring_of(&["127.0.0.1:7777", "127.0.0.1:7779"], 1);
    assert_eq!(walk(&two, b"doghash", 5), on_host("127.0.0.1", &[7779, 7779, 7777, 7777, 7779]));

    // The walk is endless: num_points steps bring it back to its start.
    let one = ring_of(&["127.0.0.1:7777"], 1);
    assert_eq!(one.num_points(), 160);
    let start = one.node_idx(b"doghash");
    let mut idx = start;
    for _ in 0..one.num_points() {
        assert_eq!(one.get_addr(&mut idx), Some(&addr("127.0.0.1:7777")));
    }
    assert_eq!(idx, start);
    assert_eq!(one.node_iter(b"doghash").take(1000).count(), 1000);
}

#[test]
fn test_empty() {
    let ring = Continuum::new(&[]);
    assert!(ring.node(b"doghash").is_none());
    let mut iter = ring.node_iter(b"doghash");
    assert!(iter.next().is_none());
    assert!(iter.next().is_none());
    assert!(iter.next().is_none());
}

#[test]
fn test_ipv6_ring() {
    let ring = ring_of(&["[::1]:7777", "[::1]:7778", "[::1]:7779"], 1);
    assert_eq!(
        walk(&ring, b"doghash", 7),
        on_host("[::1]", &[7777, 7778, 7777, 7778, 7778, 7777, 7779])
    );
}

// The crate documentation's example and the output it prints.
#[test]
fn crate_doc_example() {
    let buckets: Vec<Bucket> =
        (1..=3).map(|i| Bucket::new(addr(&format!("127.0.0.{i}:12345")), i)).collect();
    let ring = Continuum::new(&buckets);
    assert_eq!(ring.node(b"some_key"), Some(addr("127.0.0.3:12345")));
    assert_eq!(ring.node(b"another_key"), Some(addr("127.0.0.3:12345")));
    assert_eq!(ring.node(b"last_key"), Some(addr("127.0.0.2:12345")));
}

// A small deterministic generator (splitmix64) in place of the `rand` crate.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn socket_addr(&mut self) -> SocketAddr {
        let port = self.next() as u16;
        if self.next() & 1 == 0 {
            SocketAddr::V4(SocketAddrV4::new(Ipv4Addr::from(self.next() as u32), port))
        } else {
            let bits = (u128::from(self.next()) << 64) | u128::from(self.next());
            SocketAddr::V6(SocketAddrV6::new(Ipv6Addr::from(bits), port, 0, 0))
        }
    }

    fn key(&mut self, len: usize) -> String {
        const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        (0..len).map(|_| CHARS[(self.next() % CHARS.len() as u64) as usize] as char).collect()
    }
}

// backwards_compat.rs, test_v2_to_old_version: on 2,000 random servers
// (sorted, weights 1..9), the v2 ring with multiple 160 sends fewer than
// 0.1% of 20,000 random keys elsewhere than the v1 ring: they differ only in
// which server wins a hash collision.
#[test]
fn v2_at_160_matches_v1_but_for_collisions() {
    let mut rng = SplitMix(0x5EED_C4A5);
    let buckets: Vec<Bucket> = (0..2000)
        .map(|_| {
            let node = rng.socket_addr();
            Bucket::new(node, 1 + (rng.next() % 9) as u32)
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let v1 = Continuum::new(&buckets);
    let v2 = Continuum::new_with_version(
        &buckets,
        Version::V2 { point_multiple: DEFAULT_POINT_MULTIPLE },
    );
    assert_eq!(v1.num_points(), v2.num_points());
    let tests = 20_000;
    let mismatches = (0..tests)
        .filter(|_| {
            let key = rng.key(20);
            let a = v1.node(key.as_bytes()).unwrap();
            let b = v2.node(key.as_bytes()).unwrap();
            a != b
        })
        .count();
    assert!((mismatches as f64) / (tests as f64) < 0.001, "{mismatches} of {tests} keys differ");
}
