//! Bounded loads on the golden fleet: the capacity formula, idle loads give
//! the golden answers, full buckets send keys down the distinct failover
//! walk, an assignment never exceeds the capacity, and a snapshot's Ring
//! answers as the Continuum.

mod common;

use chash::{bounded_load_capacity, Continuum, ErrorKind, NodeMask, Ring};
use common::{addr, read_answers, read_lines, read_servers};

#[test]
fn the_capacity_is_ceil_c_times_total_plus_one_over_n() {
    for (total, n, c) in [(0u64, 1usize, 1.25f64), (99, 10, 1.25), (1000, 7, 1.5), (5, 50, 2.0)] {
        let want = (c * (total + 1) as f64 / n as f64).ceil() as u64;
        assert_eq!(bounded_load_capacity(total, n, c), Some(want), "{total} {n} {c}");
    }
    assert_eq!(bounded_load_capacity(u64::MAX, 1, 4.0), Some(u64::MAX));
    for c in [1.0, 0.5, f64::NAN, f64::INFINITY] {
        assert_eq!(bounded_load_capacity(10, 3, c), None, "c = {c}");
    }
    assert_eq!(bounded_load_capacity(10, 0, 1.25), None);
}

#[test]
fn idle_loads_answer_the_golden_ring_and_full_buckets_move_down_the_walk() {
    let buckets = read_servers("servers_50.txt");
    let continuum = Continuum::new(&buckets);
    let ring = Ring::from(Continuum::new(&buckets));
    let idle = vec![0u64; buckets.len()];
    let answers = read_answers("keys_10000.txt", "golden_v1_50srv.csv");
    for (key, fields) in answers.iter().take(2000) {
        let want = addr(fields.last().unwrap());
        let got = ring.bucket_idx_bounded_load(key, &idle, 1.25, None).unwrap().unwrap();
        assert_eq!(buckets[got].node(), want);
        assert_eq!(continuum.bucket_idx_bounded_load(key, &idle, 1.25, None).unwrap(), Some(got));
        assert_eq!(ring.bucket_idx_under_capacity(key, &idle, 1, None), Ok(Some(got)));
    }

    // The first two buckets of each key's walk full: the third one answers.
    let capacity = 10u64;
    let mask = {
        let mut mask = NodeMask::new(buckets.len(), true).unwrap();
        for idx in (0..buckets.len()).step_by(3) {
            mask.set(idx, false).unwrap();
        }
        mask
    };
    for key in read_lines("keys_1000.txt") {
        let walk: Vec<usize> = ring.distinct_iter(&key).collect();
        assert_eq!(walk.len(), ring.buckets_with_points());
        let mut loads = vec![0u64; buckets.len()];
        loads[walk[0]] = capacity;
        loads[walk[1]] = capacity + 5;
        let got = ring.bucket_idx_under_capacity(&key, &loads, capacity, None).unwrap();
        assert_eq!(got, Some(walk[2]));
        assert_eq!(continuum.bucket_idx_under_capacity(&key, &loads, capacity, None), Ok(got));
        // Masked: the first available bucket of the walk that is not full.
        let want = walk.iter().copied().find(|&b| mask.get(b) && loads[b] < capacity);
        assert_eq!(ring.bucket_idx_under_capacity(&key, &loads, capacity, Some(&mask)), Ok(want));
        // Every bucket full: none.
        let full = vec![capacity; buckets.len()];
        assert_eq!(ring.bucket_idx_under_capacity(&key, &full, capacity, None), Ok(None));
    }
}

#[test]
fn an_assignment_never_exceeds_the_capacity() {
    let buckets = read_servers("servers_50.txt");
    let ring = Ring::from(Continuum::new(&buckets));
    let owners = ring.buckets_with_points();
    let mut loads = vec![0u64; buckets.len()];
    let mut total = 0u64;
    let mut moved = 0;
    for key in read_lines("keys_10000.txt") {
        let capacity = bounded_load_capacity(total, owners, 1.25).unwrap();
        let idx = ring.bucket_idx_bounded_load(&key, &loads, 1.25, None).unwrap().unwrap();
        assert!(loads[idx] < capacity, "bucket {idx} at {} of {capacity}", loads[idx]);
        moved += usize::from(Some(idx) != ring.bucket_idx(&key));
        loads[idx] += 1;
        total += 1;
    }
    let capacity = bounded_load_capacity(total - 1, owners, 1.25).unwrap();
    assert!(loads.iter().all(|&l| l <= capacity), "{loads:?} over {capacity}");
    // The fleet's weights differ a lot: the bound has to move keys.
    assert!(moved > 0);
}

#[test]
fn bad_arguments_are_errors() {
    let ring = Ring::from(Continuum::new(&read_servers("servers_5.txt")));
    let loads = vec![0u64; 5];
    for c in [1.0, 0.0, f64::NAN] {
        let err = ring.bucket_idx_bounded_load(b"k", &loads, c, None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::BadArgument, "{err}");
    }
    let err = ring.bucket_idx_bounded_load(b"k", &loads[..4], 1.25, None).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument, "{err}");
    let none = NodeMask::new(5, false).unwrap();
    assert_eq!(ring.bucket_idx_bounded_load(b"k", &loads, 1.25, Some(&none)).unwrap(), None);
    // Loads past the slice are skipped: an empty slice finds nothing.
    assert_eq!(ring.bucket_idx_under_capacity(b"k", &[], 10, None), Ok(None));
}
