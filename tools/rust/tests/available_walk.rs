//! Failover among the available buckets of a plain ring (built here, no
//! snapshot): `distinct_iter_available` against the walk of the ring built
//! from the available buckets alone (collisions included), against the
//! masked lookup, against the golden walks recorded from resty.chash
//! (tests/data/resty, provenance in tests/data/PROVENANCE.md); masks
//! published through `Availability` on a `Ring`; the collision table.

mod common;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use chash::{Availability, Bucket, Continuum, Flavor, NodeMask, Ring, Version, NO_BUCKET};

// 2,000 servers x weight 10: 3.2M points, about 1,200 of them on a hash
// another server also has (CRC32 birthday collisions), so that the masked
// walk's collision rule is exercised.
fn crowded_fleet() -> Vec<(String, u32)> {
    (0..2000u32).map(|i| (format!("10.{}.{}.{}:80", 1 + i / 250, i % 250, 1 + i % 7), 10)).collect()
}

// Every third bucket down, and every seventh from 1 on.
fn some_down(len: usize) -> NodeMask {
    let mut mask = NodeMask::new(len, true).unwrap();
    for i in (0..len).filter(|i| i % 3 == 0 || i % 7 == 1) {
        mask.set(i, false).unwrap();
    }
    mask
}

fn available(servers: &[(String, u32)], mask: &NodeMask) -> Vec<(String, u32)> {
    servers.iter().enumerate().filter(|(i, _)| mask.get(*i)).map(|(_, s)| s.clone()).collect()
}

// The first `take` buckets of the subset ring's walk from `hash`, as
// indices of the full ring.
fn subset_walk(subset: &Ring, full: &HashMap<&str, usize>, hash: u32, take: usize) -> Vec<usize> {
    subset
        .distinct_iter_by_hash(hash)
        .take(take)
        .map(|i| full[subset.address(i).unwrap()])
        .collect()
}

#[test]
fn masked_walk_is_the_walk_of_the_ring_of_the_available_buckets() {
    let servers = crowded_fleet();
    for (flavor, multiple) in [(Flavor::Nginx, 0), (Flavor::Resty, 0), (Flavor::PingoraV2, 160)] {
        let ring = Ring::build(flavor, multiple, servers.clone()).unwrap();
        let losers: Vec<(u32, usize)> = ring.collision_losers().collect();
        assert!(losers.len() > 500, "{flavor:?}: only {} collisions", losers.len());
        let full: HashMap<&str, usize> =
            servers.iter().enumerate().map(|(i, (a, _))| (a.as_str(), i)).collect();
        let mask = some_down(servers.len());
        let subset = Ring::build(flavor, multiple, available(&servers, &mask)).unwrap();
        // Keys, and the hashes of collisions whose winner is down while a
        // loser there is up: the points a walk that only skipped the down
        // buckets of the full ring would miss.
        let mut hashes: Vec<u32> =
            (0..300).map(|i| chash::crc32(format!("/k/{i}").as_bytes())).collect();
        let hidden: Vec<u32> = losers
            .iter()
            .filter(|&&(hash, loser)| {
                !mask.get(ring.bucket_idx_by_hash(hash).unwrap()) && mask.get(loser)
            })
            .map(|&(hash, _)| hash)
            .take(200)
            .collect();
        assert!(hidden.len() >= 50, "{flavor:?}: {} hidden points", hidden.len());
        hashes.extend(&hidden);
        let expected_len = (0..servers.len()).filter(|&i| mask.get(i)).count();
        let mut differs_from_skipping = 0;
        for (n, &hash) in hashes.iter().enumerate() {
            // The whole walk for some, the first 40 buckets for the others.
            let take = if n % 50 == 0 { usize::MAX } else { 40 };
            let expected = subset_walk(&subset, &full, hash, take);
            let got: Vec<usize> =
                ring.distinct_iter_available_by_hash(hash, &mask).take(take).collect();
            assert_eq!(got, expected, "{flavor:?} hash {hash:#x}");
            if take == usize::MAX {
                assert_eq!(got.len(), expected_len, "{flavor:?}: every available bucket once");
            }
            assert_eq!(got.first().copied(), ring.bucket_idx_available_by_hash(hash, &mask));
            let skipped: Vec<usize> =
                ring.distinct_iter_by_hash(hash).filter(|&i| mask.get(i)).take(got.len()).collect();
            differs_from_skipping += usize::from(skipped != got);
        }
        // The collision rule matters: skipping gets these walks wrong.
        assert!(differs_from_skipping >= hidden.len() / 2, "{flavor:?}: {differs_from_skipping}");
    }
}

#[test]
fn collision_losers_are_points_another_bucket_won() {
    let servers = crowded_fleet();
    let ring = Ring::build(Flavor::Nginx, 0, servers.clone()).unwrap();
    let losers: Vec<(u32, usize)> = ring.collision_losers().collect();
    assert_eq!(ring.collision_losers().len(), losers.len());
    assert!(losers.windows(2).all(|w| w[0].0 <= w[1].0), "hashes ascending");
    assert_eq!(losers.iter().collect::<HashSet<_>>().len(), losers.len(), "each pair once");
    assert!(losers.len() as u64 <= ring.points_generated() - ring.num_points() as u64);
    for &(hash, loser) in &losers {
        let winner = ring.bucket_idx_by_hash(hash).unwrap();
        assert_ne!(winner, loser, "{hash:#x}");
        // nginx's tie-break: the server listed first wins.
        assert!(winner < loser, "{hash:#x}: winner {winner}, loser {loser}");
        // Without the winner, the ring answers the loser (the first listed
        // among the losers of this hash) for a key of exactly that hash.
        let mut mask = NodeMask::new(servers.len(), true).unwrap();
        mask.set(winner, false).unwrap();
        let first_loser = losers.iter().find(|&&(h, _)| h == hash).unwrap().1;
        assert_eq!(ring.bucket_idx_available_by_hash(hash, &mask), Some(first_loser));
    }
    let quiet = Ring::build(Flavor::Nginx, 0, [("10.0.0.1:80", 1), ("10.0.0.2:80", 1)]).unwrap();
    assert_eq!(quiet.collision_losers().len(), 0);
}

#[test]
fn masked_walk_starts_where_the_masked_lookup_answers() {
    let servers: Vec<(String, u32)> = (0..64u32)
        .map(|i| (format!("192.168.{}.{}:8080", i / 16, i % 16 + 1), 1 + i % 9))
        .collect();
    let ring = Ring::build(Flavor::Nginx, 0, servers.clone()).unwrap();
    let len = servers.len();
    let mut masks = vec![some_down(len), NodeMask::new(len, true).unwrap()];
    let mut one_up = NodeMask::new(len, false).unwrap();
    one_up.set(17, true).unwrap();
    masks.push(one_up);
    for (m, mask) in masks.iter().enumerate() {
        let up = (0..len).filter(|&i| mask.get(i)).count();
        for i in 0..2000 {
            let key = format!("/img/{i}.png");
            let walk: Vec<usize> = ring.distinct_iter_available(key.as_bytes(), mask).collect();
            assert_eq!(walk.first().copied(), ring.bucket_idx_available(key.as_bytes(), mask));
            assert_eq!(walk.len(), up, "mask {m}: every available bucket, once");
            assert!(walk.iter().all(|&b| mask.get(b)), "mask {m}: only available buckets");
            assert_eq!(walk.iter().collect::<HashSet<_>>().len(), walk.len());
        }
    }
}

#[test]
fn every_bucket_available_walks_as_distinct_iter() {
    let servers: Vec<(String, u32)> =
        (0..50u32).map(|i| (format!("node-{i}"), 1 + i % 4)).collect();
    let ring = Ring::build(Flavor::Resty, 0, servers).unwrap();
    let all = NodeMask::new(ring.num_buckets(), true).unwrap();
    for i in 0..1000 {
        let key = format!("user:{i}");
        let plain: Vec<usize> = ring.distinct_iter(key.as_bytes()).collect();
        let masked: Vec<usize> = ring.distinct_iter_available(key.as_bytes(), &all).collect();
        assert_eq!(masked, plain, "{key}");
    }
}

#[test]
fn drained_masked_out_and_unknown_buckets_never_come() {
    let servers = [("10.0.0.1:80", 3), ("10.0.0.2:80", 0), ("10.0.0.3:80", 2), ("10.0.0.4:80", 5)];
    let ring = Ring::build(Flavor::Nginx, 0, servers).unwrap();
    assert!(!ring.owns_points(1) && ring.owns_points(0) && !ring.owns_points(4));
    // A mask shorter than the ring: bucket 3 is past its end, unavailable.
    let short = NodeMask::new(3, true).unwrap();
    let nothing = NodeMask::new(4, false).unwrap();
    for i in 0..500 {
        let key = format!("{i}");
        let walk: Vec<usize> = ring.distinct_iter_available(key.as_bytes(), &short).collect();
        let mut sorted = walk.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 2], "{key}: drained bucket 1 and unknown bucket 3 never come");
        assert_eq!(ring.distinct_iter_available(key.as_bytes(), &nothing).next(), None);
    }
    let empty = Ring::build(Flavor::Nginx, 0, [("10.0.0.1:80", 0)]).unwrap();
    let all = NodeMask::new(1, true).unwrap();
    assert_eq!(empty.distinct_iter_available(b"k", &all).next(), None);
}

fn resty_data(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/resty").join(name);
    String::from_utf8(std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display())))
        .expect("text")
}

// ra_walk.next12.csv: resty.chash's find(key) then next() 11 times, point by
// point (no ra_walk walk crosses a duplicated hash, PROVENANCE.md), so the
// distinct available ids among those 12 points are the first ones of the
// walk of the ring without the down ids.
#[test]
fn golden_resty_walks_with_ids_down() {
    let nodes: Vec<(String, u32)> = resty_data("ra_walk.nodes")
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (id, weight) = l.rsplit_once(' ').expect("ID WEIGHT");
            (id.to_string(), weight.parse().expect("a weight"))
        })
        .collect();
    let ring = Ring::build(Flavor::Resty, 0, nodes.clone()).unwrap();
    let index = |id: &str| nodes.iter().position(|(n, _)| n == id).unwrap();
    let keys = resty_data("ra_walk.keys");
    let rows = resty_data("ra_walk.next12.csv");
    let (mut checked, mut compared) = (0, 0);
    for (n, (key, row)) in keys.lines().zip(rows.lines()).enumerate() {
        let points = row.strip_prefix(key).and_then(|r| r.strip_prefix(',')).expect("key,ids");
        let points: Vec<usize> = points.split(' ').map(index).collect();
        assert_eq!(points.len(), 12, "{key}");
        let mut mask = NodeMask::new(nodes.len(), true).unwrap();
        // The key's own node down, and a few others by the key's row number.
        mask.set(points[0], false).unwrap();
        for i in (n % 5..nodes.len()).step_by(5) {
            mask.set(i, false).unwrap();
        }
        let mut expected = Vec::new();
        for &p in &points {
            if mask.get(p) && !expected.contains(&p) {
                expected.push(p);
            }
        }
        let got: Vec<usize> =
            ring.distinct_iter_available(key.as_bytes(), &mask).take(expected.len()).collect();
        assert_eq!(got, expected, "{key}");
        let mut plain = Vec::new();
        for &p in &points {
            if !plain.contains(&p) {
                plain.push(p);
            }
        }
        let unmasked: Vec<usize> = ring.distinct_iter(key.as_bytes()).take(plain.len()).collect();
        assert_eq!(unmasked, plain, "{key}");
        checked += 1;
        compared += expected.len();
    }
    assert_eq!(checked, 1000);
    assert!(compared > 3000, "{compared} golden steps compared");
}

#[test]
fn continuum_masked_walk_is_the_ring_walk_as_socket_addresses() {
    let buckets: Vec<Bucket> = (0..40u32)
        .map(|i| Bucket::new(SocketAddr::from(([10, 9, 0, 1 + i as u8], 443)), 1 + i % 6))
        .collect();
    for version in [Version::V1, Version::V2 { point_multiple: 16 }] {
        let continuum = Continuum::new_with_version(&buckets, version);
        let flavor = if version == Version::V1 { Flavor::PingoraV1 } else { Flavor::PingoraV2 };
        let servers: Vec<(String, u32)> =
            buckets.iter().map(|b| (b.node().to_string(), b.weight())).collect();
        let ring = Ring::build(flavor, version.point_multiple(), servers).unwrap();
        let mask = some_down(buckets.len());
        for i in 0..500 {
            let key = format!("/v/{i}");
            let got: Vec<SocketAddr> =
                continuum.distinct_iter_available(key.as_bytes(), &mask).copied().collect();
            let expected: Vec<SocketAddr> = ring
                .distinct_iter_available(key.as_bytes(), &mask)
                .map(|b| buckets[b].node())
                .collect();
            assert_eq!(got, expected, "{version:?} {key}");
            assert_eq!(got.first().copied(), continuum.node_available(key.as_bytes(), &mask));
        }
    }
}

#[test]
fn masks_published_for_a_plain_ring() {
    let servers: Vec<(String, u32)> =
        (0..32u32).map(|i| (format!("cache-{i}.internal:80"), 2)).collect();
    let ring = Arc::new(Ring::build(Flavor::Nginx, 0, servers).unwrap());
    let keys: Vec<String> = (0..512).map(|i| format!("/o/{i}")).collect();
    let health = Arc::new(Availability::new(ring.num_buckets()).unwrap());
    let all = NodeMask::new(ring.num_buckets(), true).unwrap();
    let down = some_down(ring.num_buckets());
    let answers = |mask: &NodeMask| -> Vec<Option<usize>> {
        keys.iter().map(|k| ring.bucket_idx_available(k.as_bytes(), mask)).collect()
    };
    let (under_all, under_down) = (answers(&all), answers(&down));
    assert_ne!(under_all, under_down);
    for (mask, expected) in [(&down, &under_down), (&all, &under_all)] {
        health.publish(mask).unwrap();
        let mut batch = vec![0u32; keys.len()];
        ring.bucket_idxs_published(&keys, &health, &mut batch);
        for (i, key) in keys.iter().enumerate() {
            assert_eq!(ring.bucket_idx_published(key.as_bytes(), &health), expected[i]);
            assert_eq!(Some(batch[i]).filter(|&b| b != NO_BUCKET).map(|b| b as usize), expected[i]);
            let address = expected[i].and_then(|b| ring.address(b));
            assert_eq!(ring.node_published(key.as_bytes(), &health), address);
        }
    }
    // A checker flips the mask while readers route: each answer is the one
    // of one of the two masks (bounded: 200 publishes, 20,000 lookups a reader).
    let stop = Arc::new(AtomicBool::new(false));
    let publisher = {
        let (health, stop) = (health.clone(), stop.clone());
        let masks = [NodeMask::new(32, true).unwrap(), some_down(32)];
        std::thread::spawn(move || {
            for n in 0..200 {
                health.publish(&masks[n % 2]).unwrap();
                std::thread::yield_now();
            }
            stop.store(true, Ordering::Release);
        })
    };
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (ring, health, keys) = (ring.clone(), health.clone(), keys.clone());
            let (under_all, under_down) = (under_all.clone(), under_down.clone());
            std::thread::spawn(move || {
                for n in 0..20_000 {
                    let i = (n * 7 + r) % keys.len();
                    let got = ring.bucket_idx_published(keys[i].as_bytes(), &health);
                    assert!(got == under_all[i] || got == under_down[i], "{}: {got:?}", keys[i]);
                }
            })
        })
        .collect();
    for reader in readers {
        reader.join().unwrap();
    }
    publisher.join().unwrap();
    assert!(stop.load(Ordering::Acquire));
    assert!(health.version() >= 202);
}

// The point-by-point walk of a Ring (chash_cursor) is pingora's node_iter,
// cycles after num_points steps, and its distinct buckets in order are the
// distinct walk.
#[test]
fn point_iter_is_node_iter_and_its_distinct_buckets_the_distinct_walk() {
    let buckets: Vec<Bucket> = (0..20u32)
        .map(|i| Bucket::new(SocketAddr::from(([10, 7, 0, 1 + i as u8], 80)), 1 + i % 3))
        .collect();
    let continuum = Continuum::new(&buckets);
    let ring = Ring::from(Continuum::new(&buckets));
    let points = ring.num_points();
    for i in 0..300 {
        let key = format!("/p/{i}");
        let mut walk = ring.point_iter(key.as_bytes());
        assert_eq!(walk.peek_hash(), Some(continuum.node_idx(key.as_bytes()) as u32), "{key}");
        let steps: Vec<usize> = walk.by_ref().take(points + 3).collect();
        assert_eq!(steps.len(), points + 3);
        assert_eq!(steps[..3], steps[points..], "{key}: back at its start after a turn");
        assert_eq!(Some(steps[0]), ring.bucket_idx(key.as_bytes()));
        let pingora: Vec<SocketAddr> =
            continuum.node_iter(key.as_bytes()).take(points + 3).copied().collect();
        let ours: Vec<SocketAddr> = steps.iter().map(|&b| buckets[b].node()).collect();
        assert_eq!(ours, pingora, "{key}");
        let mut distinct = Vec::new();
        for &b in &steps[..points] {
            if !distinct.contains(&b) {
                distinct.push(b);
            }
        }
        assert_eq!(ring.distinct_iter(key.as_bytes()).collect::<Vec<_>>(), distinct, "{key}");
        let hash = chash::crc32(key.as_bytes());
        assert_eq!(ring.point_iter_by_hash(hash).next(), Some(steps[0]));
    }
    let empty = Ring::build(Flavor::Nginx, 0, [("10.0.0.1:80", 0)]).unwrap();
    assert_eq!(empty.point_iter(b"k").next(), None);
    assert_eq!(empty.point_iter(b"k").peek_hash(), None);
}

// A mask published for a ring answers by hash as by key.
#[test]
fn published_lookups_by_hash_are_lookups_by_key() {
    let servers: Vec<(String, u32)> = (0..16u32).map(|i| (format!("h{i}.example:80"), 1)).collect();
    let ring = Ring::build(Flavor::Nginx, 0, servers).unwrap();
    let health = Availability::new(ring.num_buckets()).unwrap();
    health.publish(&some_down(ring.num_buckets())).unwrap();
    for i in 0..500 {
        let key = format!("/h/{i}");
        let by_key = ring.bucket_idx_published(key.as_bytes(), &health);
        assert!(by_key.is_some_and(|b| b % 3 != 0 && b % 7 != 1), "{key}: {by_key:?}");
        assert_eq!(
            ring.bucket_idx_published_by_hash(chash::crc32(key.as_bytes()), &health),
            by_key
        );
    }
}
