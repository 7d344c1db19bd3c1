//! Migration from pingora v1 to v2 (multiple 16) over the golden fleet of
//! tests/data/pingora: out of scope and at 0% every key answers as the
//! golden v1 ring, at 100% as the golden v2 ring, in between each key's
//! side is its bucket (checked against an independent implementation of
//! include/chash/migration.h's hash) and `chash route --rollout` agrees.

mod common;

use std::sync::Arc;

use chash::{Continuum, ErrorKind, Flavor, Migration, Ring, Route, Side, Version, ROLLOUT_SCALE};
use common::{addr, read_answers, read_lines, read_servers, route_keys_1000};

const SEED: u64 = 7;

// tests/data/migration/expected_key_hashes.py, in Rust: MigrationKeyHash and
// MigrationBucket written from their definition.
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xBF58476D1CE4E5B9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94D049BB133111EB);
    x ^ (x >> 31)
}

fn key_hash(key: &[u8], seed: u64) -> u64 {
    const GOLDEN: u64 = 0x9E3779B97F4A7C15;
    let mut h = mix(seed ^ (key.len() as u64).wrapping_mul(GOLDEN));
    let mut chunks = key.chunks_exact(8);
    for chunk in &mut chunks {
        h = mix(h ^ u64::from_le_bytes(chunk.try_into().unwrap()));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        h = mix(h ^ u64::from_le_bytes(last));
    }
    mix(h ^ GOLDEN)
}

fn bucket(hash: u64) -> u32 {
    (((hash >> 32) * 1_000_000) >> 32) as u32
}

fn v1_to_v2() -> Migration {
    let buckets = read_servers("servers_50.txt");
    let old = Ring::from(Continuum::new(&buckets));
    let new = Ring::from(Continuum::new_with_version(&buckets, Version::V2 { point_multiple: 16 }));
    Migration::new(Arc::new(old), Arc::new(new), SEED).unwrap()
}

fn golden(file: &str) -> Vec<(Vec<u8>, std::net::SocketAddr)> {
    read_answers("keys_10000.txt", file)
        .into_iter()
        .map(|(key, fields)| (key, addr(fields.last().unwrap())))
        .collect()
}

#[test]
fn the_key_hash_is_the_specified_one() {
    for key in read_lines("keys_10000.txt").iter().take(2000) {
        for seed in [0, SEED, u64::MAX] {
            assert_eq!(Migration::key_hash(key, seed), key_hash(key, seed));
            assert_eq!(Migration::key_bucket(key, seed), bucket(key_hash(key, seed)));
        }
    }
    assert_eq!(Migration::key_hash(b"", 0), key_hash(b"", 0));
}

#[test]
fn rollouts_route_each_key_through_its_ring() {
    let (old_golden, new_golden) =
        (golden("golden_v1_50srv.csv"), golden("golden_v2m16_50srv.csv"));
    let migration = v1_to_v2();
    assert!(migration.backends_match());
    assert_eq!((migration.in_scope(), migration.rollout_ppm()), (false, 0));
    let node = |key: &[u8]| {
        let (address, side) = migration.node(key).unwrap();
        (addr(address), side)
    };

    // Closed: every key on the old ring, even at 100% out of scope.
    migration.set_rollout(1.0).unwrap();
    for (key, want) in &old_golden {
        assert_eq!(node(key), (*want, Side::Old));
    }
    migration.set_in_scope(true);
    for (key, want) in &new_golden {
        assert_eq!(node(key), (*want, Side::New));
    }
    migration.set_rollout_ppm(0).unwrap();
    for (key, want) in &old_golden {
        assert_eq!(node(key), (*want, Side::Old));
    }
    assert_eq!(
        migration.counters(),
        chash::MigrationCounters { old: 2 * old_golden.len() as u64, new: new_golden.len() as u64 }
    );

    // 30%: the key's bucket picks the ring.
    migration.set_rollout(0.3).unwrap();
    assert_eq!(migration.rollout_ppm(), 300_000);
    let mut on_new = 0;
    let mut at_30 = Vec::new();
    for ((key, old), (_, new)) in old_golden.iter().zip(&new_golden) {
        let side = if bucket(key_hash(key, SEED)) < 300_000 { Side::New } else { Side::Old };
        let want = if side == Side::New { *new } else { *old };
        assert_eq!(node(key), (want, side), "'{}'", String::from_utf8_lossy(key));
        on_new += usize::from(side == Side::New);
        at_30.push(side);
    }
    // A stable hash: about 30% of 10,000 keys.
    assert!((2700..3300).contains(&on_new), "{on_new} keys on the new ring");

    // Raising the rollout only moves keys from old to new.
    migration.set_rollout(0.6).unwrap();
    for ((key, _), side) in old_golden.iter().zip(&at_30) {
        if *side == Side::New {
            assert_eq!(migration.route(key).unwrap().side, Side::New);
        }
    }

    // The batch answers as the single lookups.
    let keys: Vec<&[u8]> = old_golden.iter().map(|(k, _)| k.as_slice()).collect();
    let mut routes: Vec<Option<Route>> = vec![None; keys.len()];
    migration.routes(&keys, &mut routes);
    for (key, route) in keys.iter().zip(&routes) {
        assert_eq!(*route, migration.route(key));
    }

    // Bad controls change nothing.
    assert_eq!(migration.set_rollout(1.5).unwrap_err().kind(), ErrorKind::BadArgument);
    assert_eq!(migration.set_rollout(f64::NAN).unwrap_err().kind(), ErrorKind::BadArgument);
    let err = migration.set_rollout_ppm(ROLLOUT_SCALE + 1).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    assert_eq!(migration.rollout_ppm(), 600_000);
}

#[test]
fn the_cli_rollout_agrees() {
    let migration = v1_to_v2();
    migration.set_in_scope(true);
    migration.set_rollout(0.3).unwrap();
    let seed = SEED.to_string();
    let routed = route_keys_1000(&[
        "--rollout",
        "0.3",
        "--new-mode",
        "pingora-v2",
        "--new-multiple",
        "16",
        "--seed",
        &seed,
    ]);
    let keys = read_lines("keys_1000.txt");
    assert_eq!(routed.lines().count(), keys.len());
    for (line, key) in routed.lines().zip(&keys) {
        let (rest, side) = line.rsplit_once(',').unwrap();
        let address = rest.rsplit_once(',').unwrap().1;
        let (got, got_side) = migration.node(key).unwrap();
        assert_eq!(got, address, "{line}");
        assert_eq!(got_side, if side == "new" { Side::New } else { Side::Old }, "{line}");
    }
}

#[test]
fn rings_of_other_servers_need_an_explicit_mismatch() {
    let servers = read_servers("servers_50.txt");
    let old = Arc::new(Ring::from(Continuum::new(&servers)));
    let new = Arc::new(Ring::from(Continuum::new(&servers[1..])));
    let err = Migration::new(old.clone(), new.clone(), SEED).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument, "{err}");
    let migration = Migration::with_backend_mismatch(old, new.clone(), SEED).unwrap();
    assert!(!migration.backends_match());
    migration.set_in_scope(true);
    migration.set_rollout(1.0).unwrap();
    // Bucket ids are the new ring's: its bucket 0 is servers[1].
    for key in read_lines("keys_1000.txt") {
        let route = migration.route(&key).unwrap();
        assert_eq!(route, Route { side: Side::New, bucket: new.bucket_idx(&key).unwrap() });
        let want = servers[1 + route.bucket].node();
        assert_eq!(migration.node(&key).map(|(a, _)| addr(a)), Some(want));
    }
}

#[test]
fn lookups_run_while_the_rollout_moves() {
    let migration = Arc::new(v1_to_v2());
    migration.set_in_scope(true);
    let (old_golden, new_golden) =
        (golden("golden_v1_50srv.csv"), golden("golden_v2m16_50srv.csv"));
    let answers: Arc<Vec<_>> = Arc::new(
        old_golden.into_iter().zip(new_golden).map(|((k, o), (_, n))| (k, o, n)).collect(),
    );
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (migration, answers) = (migration.clone(), answers.clone());
            std::thread::spawn(move || {
                for (key, old, new) in answers.iter() {
                    let (address, side) = migration.node(key).unwrap();
                    let want = if side == Side::New { new } else { old };
                    assert_eq!(addr(address), *want);
                }
            })
        })
        .collect();
    for ppm in (0..=ROLLOUT_SCALE).step_by(50_000) {
        migration.set_rollout_ppm(ppm).unwrap();
    }
    for reader in readers {
        reader.join().unwrap();
    }
    let counters = migration.counters();
    assert_eq!(counters.old + counters.new, 2 * answers.len() as u64);
}

#[test]
fn a_ring_built_from_text_is_the_continuum_of_the_same_servers() {
    let servers = read_servers("servers_50.txt");
    let lines = common::server_lines(&servers);
    let text = lines.iter().map(|l| {
        let (address, weight) = l.rsplit_once(' ').unwrap();
        (address.to_string(), weight.parse::<u32>().unwrap())
    });
    let ring = Ring::build(Flavor::PingoraV2, 16, text).unwrap();
    assert_eq!(ring.flavor(), Some(Flavor::PingoraV2));
    assert_eq!(ring.point_multiple(), 16);
    for (key, want) in golden("golden_v2m16_50srv.csv") {
        assert_eq!(ring.node(&key).map(addr), Some(want));
    }
    let continuum = ring.into_continuum().unwrap();
    for (key, want) in golden("golden_v2m16_50srv.csv") {
        assert_eq!(continuum.node(&key), Some(want));
    }
    let err =
        Ring::build(Flavor::PingoraV1, 0, [("10.0.0.1:80", 1), ("10.0.0.1:80", 2)]).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DuplicateNode, "{err}");
}
