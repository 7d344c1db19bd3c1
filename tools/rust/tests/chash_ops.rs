//! Node masks, statistics and fingerprints through the crate.

mod common;

use std::net::{Ipv4Addr, SocketAddr};

use chash::{Bucket, Continuum, ErrorKind, NodeMask, Version, NO_BUCKET};
use common::addr;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn fleet(order: &[usize]) -> Vec<Bucket> {
    // The README's fleet: 10.0.0.1-6:443, weights 4, 4, 8, 8, 16, 16.
    let weights = [4, 4, 8, 8, 16, 16];
    order.iter().map(|&i| Bucket::new(addr(&format!("10.0.0.{}:443", i + 1)), weights[i])).collect()
}

#[test]
fn masked_lookups_equal_the_ring_of_the_available_buckets() {
    let buckets: Vec<Bucket> = (0..40u32)
        .map(|i| Bucket::new(SocketAddr::from((Ipv4Addr::from(0x0A01_0000 + i), 80)), 1 + i % 5))
        .collect();
    for version in [Version::V1, Version::V2 { point_multiple: 16 }] {
        let ring = Continuum::new_with_version(&buckets, version);
        let mut mask = NodeMask::all_available(&ring);
        assert_eq!((mask.len(), mask.count_available()), (40, 40));
        for down in (0..40).step_by(3) {
            mask.set(down, false).unwrap();
        }
        assert!(!mask.get(3) && mask.get(4) && !mask.get(40));
        let up: Vec<Bucket> = buckets
            .iter()
            .enumerate()
            .filter(|(i, _)| mask.get(*i))
            .map(|(_, b)| b.clone())
            .collect();
        let subset = Continuum::new_with_version(&up, version);
        let keys: Vec<String> = (0..3000).map(|i| format!("/asset/{i}.js")).collect();
        let mut batch = vec![0u32; keys.len()];
        ring.bucket_idxs_available(&keys, &mask, &mut batch);
        for (key, &batched) in keys.iter().zip(&batch) {
            let got = ring.node_available(key.as_bytes(), &mask);
            assert_eq!(got, subset.node(key.as_bytes()), "{version:?} {key}");
            assert_eq!(Some(batched as usize), ring.bucket_idx_available(key.as_bytes(), &mask));
            let hash = chash::crc32(key.as_bytes());
            assert_eq!(ring.bucket_idx_available_by_hash(hash, &mask), Some(batched as usize));
        }
    }
}

#[test]
fn masks_refuse_bad_indices_and_empty_masks_answer_none() {
    let ring = Continuum::new(&fleet(&[0, 1, 2]));
    let mut mask = NodeMask::new(3, false).unwrap();
    assert_eq!(mask.count_available(), 0);
    assert_eq!(ring.node_available(b"k", &mask), None);
    let mut out = [0u32; 1];
    ring.bucket_idxs_available(&["k"], &mask, &mut out);
    assert_eq!(out, [NO_BUCKET]);
    assert_eq!(mask.set(3, true).unwrap_err().kind(), ErrorKind::BadNodeId);
    assert_eq!(NodeMask::new(65_537, true).err().map(|e| e.kind()), Some(ErrorKind::TooManyNodes));
    mask.set(1, true).unwrap();
    assert_eq!(ring.node_available(b"k", &mask), Some(addr("10.0.0.2:443")));
}

// The fingerprints the README prints for this fleet (`chash stats --servers
// fleet.txt --mode pingora-v1`).
#[test]
fn fingerprints_match_chash_stats() {
    let ring = Continuum::new(&fleet(&[0, 1, 2, 3, 4, 5]));
    assert_eq!(
        hex(&ring.fingerprint().unwrap()),
        "a110617db67335c8d2d39a07b10aecc0ffa23f26c9f85db3ff2bfb290fa89c55"
    );
    assert_eq!(
        hex(&ring.points_digest().unwrap()),
        "80bb03854b5a9551f14eb91c0892f23521ca153c701d26a082ed48d5b99ec077"
    );
    assert_eq!(
        hex(&ring.backend_fingerprint().unwrap()),
        "a57675b64128f29e19f36e59f8c91acbbfc497a0bec78074d961e257ec86419f"
    );
    // v2 routes by address order: another bucket order is the same ring.
    let v2 = |order: &[usize]| {
        Continuum::new_with_version(&fleet(order), Version::V2 { point_multiple: 256 })
    };
    let (a, b) = (v2(&[0, 1, 2, 3, 4, 5]), v2(&[5, 3, 1, 0, 2, 4]));
    assert_eq!(a.fingerprint().unwrap(), b.fingerprint().unwrap());
    assert_ne!(a.fingerprint().unwrap(), ring.fingerprint().unwrap());
    assert_eq!(a.backend_fingerprint().unwrap(), ring.backend_fingerprint().unwrap());
}

#[test]
fn stats_describe_the_ring() {
    let buckets = fleet(&[0, 1, 2, 3, 4, 5]);
    let ring = Continuum::new(&buckets);
    let stats = ring.stats().unwrap();
    assert_eq!(stats.buckets, 6);
    assert_eq!(stats.buckets_with_points, 6);
    assert_eq!(stats.points_generated, 56 * 160);
    assert_eq!(stats.points, ring.num_points() as u64);
    assert_eq!(stats.collisions, stats.points_generated - stats.points);
    assert!(stats.column_bytes >= 6 * stats.points, "{stats:?}");
    assert!(stats.bytes_per_point >= 6.0 && stats.bytes_per_point < 6.5, "{stats:?}");
    // The README's `chash plan` row for this ring: CV predicted 2.3621%, measured 4.5914%.
    assert!((stats.cv_predicted - 0.023621).abs() < 5e-6, "{stats:?}");
    assert!((stats.cv_measured - 0.045914).abs() < 5e-6, "{stats:?}");
    assert!(stats.min_share_ratio <= 1.0 && stats.max_share_ratio >= 1.0);
}

#[test]
fn availability_publishes_masks_while_lookups_run() {
    use chash::Availability;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let buckets: Vec<Bucket> = (0..12u32)
        .map(|i| Bucket::new(SocketAddr::from((Ipv4Addr::from(0x0A02_0000 + i), 80)), 2))
        .collect();
    let ring = Arc::new(Continuum::new(&buckets));
    let availability = Arc::new(Availability::new(12).unwrap());
    assert_eq!(availability.version(), 0);
    let mut down = NodeMask::all_available(&ring);
    down.set(0, false).unwrap();
    down.set(5, false).unwrap();
    let keys: Vec<String> = (0..500).map(|i| format!("u/{i}")).collect();
    // Every answer under either mask: the full ring's or the masked one's.
    let full: Vec<Option<usize>> = keys.iter().map(|k| ring.bucket_idx(k.as_bytes())).collect();
    let masked: Vec<Option<usize>> =
        keys.iter().map(|k| ring.bucket_idx_available(k.as_bytes(), &down)).collect();
    assert_ne!(full, masked);
    let stop = Arc::new(AtomicBool::new(false));
    // The reader has started before the first publish; it reads whole rounds
    // until told to stop (at least one, at most 10,000).
    let started = Arc::new(std::sync::Barrier::new(2));
    let reader = {
        let (ring, availability, stop, keys) =
            (ring.clone(), availability.clone(), stop.clone(), keys.clone());
        let (full, masked, started) = (full.clone(), masked.clone(), started.clone());
        std::thread::spawn(move || {
            started.wait();
            let mut rounds = 0;
            loop {
                for (i, key) in keys.iter().enumerate() {
                    let got = availability.bucket_idx(&ring, key.as_bytes());
                    assert!(got == full[i] || got == masked[i], "{key}: {got:?}");
                }
                rounds += 1;
                if stop.load(Ordering::Relaxed) || rounds >= 10_000 {
                    return rounds;
                }
            }
        })
    };
    started.wait();
    let all = NodeMask::all_available(&ring);
    for _ in 0..50 {
        availability.publish(&down).unwrap();
        availability.publish(&all).unwrap();
    }
    availability.publish(&down).unwrap();
    stop.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    assert_eq!(availability.version(), 101);
    let mut out = vec![0u32; keys.len()];
    availability.bucket_idxs(&ring, &keys, &mut out);
    for (i, key) in keys.iter().enumerate() {
        assert_eq!(Some(out[i] as usize), masked[i], "{key}");
        assert_eq!(availability.node(&ring, key.as_bytes()), masked[i].map(|b| ring.addrs()[b]));
    }
    let (snapshot, version) = availability.snapshot().unwrap();
    assert_eq!((snapshot.count_available(), version), (10, 101));
    let err = availability.publish(&NodeMask::new(11, true).unwrap()).unwrap_err();
    assert_eq!(err.kind(), chash::ErrorKind::BadArgument, "{err}");
    assert_eq!(availability.version(), 101);
}

#[test]
fn bounded_loads_move_keys_off_full_buckets() {
    let ring = Continuum::new(&fleet(&[0, 1, 2, 3, 4, 5]));
    let idle = [0u64; 6];
    for i in 0..300 {
        let key = format!("s/{i}");
        let home = ring.bucket_idx(key.as_bytes());
        assert_eq!(ring.bucket_idx_bounded_load(key.as_bytes(), &idle, 1.25, None).unwrap(), home);
        // The home bucket far over capacity: the next one in the walk that is not.
        let mut loads = [10u64; 6];
        loads[home.unwrap()] = 1000;
        let moved = ring.bucket_idx_bounded_load(key.as_bytes(), &loads, 1.25, None).unwrap();
        let expected = ring
            .distinct_iter(key.as_bytes())
            .map(|a| ring.addrs().iter().position(|b| b == a).unwrap())
            .nth(1);
        assert_eq!(moved, expected, "{key}");
    }
    let err = ring.bucket_idx_bounded_load(b"k", &idle, 1.0, None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument, "{err}");
    assert!(ring.bucket_idx_bounded_load(b"k", &idle[..5], 1.25, None).is_err());
    let none = NodeMask::new(6, false).unwrap();
    assert_eq!(ring.bucket_idx_bounded_load(b"k", &idle, 1.25, Some(&none)).unwrap(), None);
}
