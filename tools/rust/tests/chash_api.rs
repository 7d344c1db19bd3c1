//! What chash adds to pingora-ketama's API: errors instead of panics and
//! misroutes, drained buckets, bucket indices, batches, distinct walks.

mod common;

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6};

use chash::{crc32, Bucket, Continuum, ErrorKind, Version, MAX_BUCKETS, NO_BUCKET};
use common::addr;

fn nth_addr(i: usize) -> SocketAddr {
    SocketAddr::from((Ipv4Addr::from(0x0A00_0000 + i as u32), 443))
}

#[test]
fn crc32_is_zlibs() {
    assert_eq!(crc32(b""), 0);
    assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
    assert_eq!(crc32(b"The quick brown fox jumps over the lazy dog"), 0x414F_A339);
}

#[test]
fn weight_zero_is_a_drained_bucket() {
    let buckets = [
        Bucket::new(addr("10.0.0.1:443"), 1),
        Bucket::new(addr("10.0.0.2:443"), 0),
        Bucket::new(addr("10.0.0.3:443"), 2),
    ];
    let ring = Continuum::try_new(&buckets).unwrap();
    assert_eq!(ring.num_buckets(), 3);
    assert_eq!(ring.num_points(), 3 * 160);
    assert_eq!(ring.weight(1), Some(0));
    assert_eq!(ring.weight(2), Some(2));
    assert_eq!(ring.weight(3), None);
    // The same answers as the ring without it, bucket indices kept.
    let without = Continuum::new(&[buckets[0].clone(), buckets[2].clone()]);
    for i in 0..2000 {
        let key = format!("/k/{i}");
        assert_eq!(ring.node(key.as_bytes()), without.node(key.as_bytes()), "{key}");
        assert_ne!(ring.bucket_idx(key.as_bytes()), Some(1), "{key}");
    }
    // Only drained buckets: no points, no answers.
    let drained = Continuum::new(&[Bucket::new(addr("10.0.0.9:1"), 0)]);
    assert_eq!(drained.num_points(), 0);
    assert_eq!(drained.node(b"k"), None);
    assert_eq!(drained.node_iter(b"k").next(), None);
    assert_eq!(drained.distinct_iter(b"k").next(), None);
    let mut idx = 0;
    assert_eq!(drained.get_addr(&mut idx), None);
    assert_eq!(idx, 0);
}

#[test]
fn too_many_buckets_is_an_error() {
    let mut buckets: Vec<Bucket> = (0..MAX_BUCKETS).map(|i| Bucket::new(nth_addr(i), 0)).collect();
    let ring = Continuum::try_new(&buckets).unwrap();
    assert_eq!(ring.num_buckets(), MAX_BUCKETS);
    buckets.push(Bucket::new(nth_addr(MAX_BUCKETS), 1));
    let err = Continuum::try_new(&buckets).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooManyNodes, "{err}");
}

#[test]
#[should_panic(expected = "Continuum::try_new")]
fn new_panics_where_try_new_errs() {
    let buckets: Vec<Bucket> = (0..=MAX_BUCKETS).map(|i| Bucket::new(nth_addr(i), 1)).collect();
    let _ = Continuum::new(&buckets);
}

#[test]
fn duplicates_are_errors() {
    let err = Continuum::try_new(&[
        Bucket::new(addr("10.0.0.1:443"), 1),
        Bucket::new(addr("10.0.0.2:443"), 1),
        Bucket::new(addr("10.0.0.1:443"), 2),
    ])
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DuplicateNode, "{err}");
    assert!(err.message().contains("10.0.0.1:443"), "{err}");
    // pingora hashes ip() and port() only: a scope id does not make a new server.
    let ip: Ipv6Addr = "fe80::1".parse().unwrap();
    let err = Continuum::try_new(&[
        Bucket::new(SocketAddr::V6(SocketAddrV6::new(ip, 80, 0, 0)), 1),
        Bucket::new(SocketAddr::V6(SocketAddrV6::new(ip, 80, 0, 2)), 1),
    ])
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DuplicateNode, "{err}");
}

#[test]
fn scope_id_is_not_hashed() {
    let ip: Ipv6Addr = "fe80::1".parse().unwrap();
    let scoped = SocketAddr::V6(SocketAddrV6::new(ip, 80, 7, 3));
    let plain = SocketAddr::V6(SocketAddrV6::new(ip, 80, 0, 0));
    let a = Continuum::new(&[Bucket::new(scoped, 1), Bucket::new(addr("10.0.0.1:80"), 1)]);
    let b = Continuum::new(&[Bucket::new(plain, 1), Bucket::new(addr("10.0.0.1:80"), 1)]);
    for i in 0..1000 {
        let key = format!("{i}");
        assert_eq!(a.bucket_idx(key.as_bytes()), b.bucket_idx(key.as_bytes()));
    }
    assert_eq!(a.addrs()[0], scoped, "the bucket's own address is returned");
}

#[test]
fn point_counts_over_the_limits_are_errors() {
    let err = Continuum::try_new_with_version(
        &[Bucket::new(addr("10.0.0.1:1"), 1)],
        Version::V2 { point_multiple: 0 },
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadMultiple, "{err}");
    // weight x 160 over 32 bits (pingora overflows).
    let err = Continuum::try_new(&[Bucket::new(addr("10.0.0.1:1"), u32::MAX / 100)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooManyPoints, "{err}");
    // Over the default cap of 2^30 points.
    let err = Continuum::try_new_with_version(
        &[Bucket::new(addr("10.0.0.1:1"), 1 << 20), Bucket::new(addr("10.0.0.2:1"), 1 << 20)],
        Version::V2 { point_multiple: 1 << 10 },
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::TooManyPoints, "{err}");
    assert!(!err.to_string().is_empty());
}

#[test]
fn batches_equal_single_lookups() {
    let buckets: Vec<Bucket> =
        (0..300).map(|i| Bucket::new(nth_addr(i), 1 + i as u32 % 7)).collect();
    let ring = Continuum::new_with_version(&buckets, Version::V2 { point_multiple: 40 });
    // 1,000 keys: several chunks of the batch call and a partial last one.
    let keys: Vec<String> = (0..1000).map(|i| format!("/object/{i}?v={}", i * 7919)).collect();
    let mut out = vec![0u32; keys.len() + 3];
    out[keys.len()..].fill(12345);
    ring.bucket_idxs(&keys, &mut out);
    let hashes: Vec<u32> = keys.iter().map(|k| crc32(k.as_bytes())).collect();
    let mut by_hash = vec![0u32; keys.len()];
    ring.bucket_idxs_by_hash(&hashes, &mut by_hash);
    for (i, key) in keys.iter().enumerate() {
        let single = ring.bucket_idx(key.as_bytes()).unwrap();
        assert_eq!(out[i] as usize, single, "{key}");
        assert_eq!(by_hash[i] as usize, single, "{key}");
        assert_eq!(ring.bucket_idx_by_hash(hashes[i]), Some(single));
        assert_eq!(ring.node(key.as_bytes()), Some(buckets[single].node()));
    }
    assert_eq!(&out[keys.len()..], &[12345; 3], "nothing written past the keys");
    // An empty ring answers NO_BUCKET.
    let empty = Continuum::new(&[]);
    let mut none = [0u32; 2];
    empty.bucket_idxs(&["a", "b"], &mut none);
    assert_eq!(none, [NO_BUCKET; 2]);
    assert_eq!(empty.bucket_idx_by_hash(5), None);
    assert_eq!(empty.node_idx(b"a"), 0);
}

#[test]
fn get_addr_walks_every_point_in_hash_order() {
    let buckets: Vec<Bucket> = (0..20).map(|i| Bucket::new(nth_addr(i), 1)).collect();
    let ring = Continuum::new(&buckets);
    assert_eq!(ring.num_points(), 20 * 160);
    // From the smallest point, a whole turn: positions rise, then wrap.
    let start = ring.node_idx_by_hash(0);
    let mut idx = start;
    let mut positions = vec![idx];
    let mut servers = Vec::new();
    for _ in 0..ring.num_points() {
        servers.push(*ring.get_addr(&mut idx).unwrap());
        positions.push(idx);
    }
    assert_eq!(idx, start, "a turn ends where it started");
    positions.pop();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "positions rise");
    // Each position is a point: a key of that hash lands on it and its server.
    for (position, server) in positions.iter().zip(&servers) {
        let hash = *position as u32;
        assert_eq!(ring.node_idx_by_hash(hash), *position);
        assert_eq!(ring.bucket_idx_by_hash(hash).map(|i| ring.addrs()[i]), Some(*server));
        assert_eq!(ring.node_idx_by_hash(hash.wrapping_sub(1)), *position);
    }
    // The node_iter of any key is the get_addr walk from its node_idx.
    for i in 0..100 {
        let key = format!("key-{i}");
        let mut idx = ring.node_idx(key.as_bytes());
        let walked: Vec<SocketAddr> = (0..30).map(|_| *ring.get_addr(&mut idx).unwrap()).collect();
        let iterated: Vec<SocketAddr> = ring.node_iter(key.as_bytes()).take(30).copied().collect();
        assert_eq!(walked, iterated, "{key}");
    }
    // Positions past u32::MAX are no position.
    if usize::BITS > 32 {
        let mut far = usize::MAX;
        assert_eq!(ring.get_addr(&mut far), None);
        assert_eq!(far, usize::MAX);
    }
}

#[test]
fn distinct_iter_lists_each_bucket_once() {
    let buckets: Vec<Bucket> = (0..50).map(|i| Bucket::new(nth_addr(i), (i % 4) as u32)).collect();
    let ring = Continuum::new(&buckets);
    let owners = buckets.iter().filter(|b| b.weight() > 0).count();
    for i in 0..200 {
        let key = format!("k{i}");
        let order: Vec<SocketAddr> = ring.distinct_iter(key.as_bytes()).copied().collect();
        assert_eq!(order.len(), owners, "{key}");
        assert_eq!(Some(order[0]), ring.node(key.as_bytes()));
        let mut expected = Vec::new();
        for node in ring.node_iter(key.as_bytes()).take(ring.num_points()) {
            if !expected.contains(node) {
                expected.push(*node);
            }
        }
        assert_eq!(order, expected, "{key}");
    }
}

#[test]
fn continuum_is_send_and_sync() {
    fn shared<T: Send + Sync>(_: &T) {}
    let ring = Continuum::new(&[Bucket::new(addr("10.0.0.1:1"), 1)]);
    shared(&ring);
    let ring = std::sync::Arc::new(ring);
    let threads: Vec<_> = (0..2)
        .map(|t| {
            let ring = ring.clone();
            std::thread::spawn(move || {
                (0..1000).all(|i| ring.node(format!("{t}/{i}").as_bytes()).is_some())
            })
        })
        .collect();
    for thread in threads {
        assert!(thread.join().unwrap());
    }
}
