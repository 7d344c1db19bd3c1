//! The Reloader (the C library's reload policy) on snapshots the CLI writes
//! over a path: reloads under reader threads (each reader's ring answers
//! exactly as the ring of its config version), refusals that keep the
//! current ring and are never verified again, versions that only go up
//! (across restarts with a state directory), the last good file, one
//! verification a host, an embedder's own refusal, symlinks, the watcher
//! thread, and rings held across reloads.

mod common;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chash::{
    Bucket, Continuum, LoadMode, LoadOptions, PublicKey, Reload, ReloadCheck, ReloadOptions,
    Reloader, SnapshotCheck,
};
use common::{build_snapshot, read_lines, read_servers, run_cli, server_lines, TempDir};

// Version v of the fleet: servers_50.txt without server v (v = 0: all).
fn fleet(version: u64) -> Vec<Bucket> {
    let mut buckets = read_servers("servers_50.txt");
    if version > 0 {
        buckets.remove(version as usize % buckets.len());
    }
    buckets
}

// Writes version v of the fleet as a pingora-v1 snapshot at `path` (the
// CLI renames a complete file over it).
fn publish(dir: &TempDir, path: &Path, version: u64) {
    let servers =
        dir.write_lines(&format!("servers_{version}.txt"), &server_lines(&fleet(version)));
    build_snapshot(
        &servers,
        path,
        &["--mode", "pingora-v1", "--config-version", &version.to_string()],
    );
}

// Version v of the fleet with one bit of its body flipped, renamed over
// `path`: a new file whose header is sound and whose checksum is not.
fn publish_damaged(dir: &TempDir, path: &Path, version: u64) {
    let staged = dir.path("staged.ring");
    publish(dir, &staged, version);
    let mut bytes = std::fs::read(&staged).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&staged, &bytes).unwrap();
    std::fs::rename(&staged, path).unwrap();
}

// A fresh folder `name` whose live.ring is version v of the fleet; the
// folder and that path.
fn live(name: &str, version: u64) -> (TempDir, PathBuf) {
    let dir = TempDir::new(name);
    let path = dir.path("live.ring");
    publish(&dir, &path, version);
    (dir, path)
}

// Each key's server on version v, from the crate's golden-tested Continuum.
fn expected(version: u64, keys: &[Vec<u8>]) -> Vec<SocketAddr> {
    let ring = Continuum::new(&fleet(version));
    keys.iter().map(|k| ring.node(k).unwrap()).collect()
}

// expected() of versions 1..=last, for reader threads.
fn expected_up_to(last: u64, keys: &[Vec<u8>]) -> Arc<HashMap<u64, Vec<SocketAddr>>> {
    Arc::new((1..=last).map(|v| (v, expected(v, keys))).collect())
}

// The server `ring` answers for `key`, as a socket address.
fn served(ring: &chash::Ring, key: &[u8]) -> SocketAddr {
    ring.node(key).unwrap().parse().unwrap()
}

// `ring` answers each key with its server in `want`.
fn assert_serves(ring: &chash::Ring, keys: &[Vec<u8>], want: &[SocketAddr]) {
    for (key, want) in keys.iter().zip(want) {
        assert_eq!(served(ring, key), *want);
    }
}

fn options() -> ReloadOptions {
    ReloadOptions::default()
}

#[test]
fn reloads_under_reader_threads_answer_as_one_version() {
    let (dir, path) = live("readers", 1);
    let reloader = Arc::new(Reloader::new(&path, options()).unwrap());
    let keys: Arc<Vec<Vec<u8>>> = Arc::new(read_lines("keys_10000.txt")[..2000].to_vec());
    let last = 6u64;
    let answers = expected_up_to(last, &keys);
    // The versions differ: a reader on the wrong ring would be noticed.
    assert_ne!(answers[&1], answers[&2]);
    let versions: Arc<HashMap<[u8; 32], u64>> = Arc::new(
        (1..=last).map(|v| (Continuum::new(&fleet(v)).fingerprint().unwrap(), v)).collect(),
    );
    assert_eq!(versions.len(), last as usize);

    let started = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + Duration::from_secs(60);
    let readers: Vec<_> = (0..3)
        .map(|t| {
            let (reloader, keys, answers) = (reloader.clone(), keys.clone(), answers.clone());
            let versions = versions.clone();
            let started = started.clone();
            std::thread::spawn(move || {
                let mut seen = Vec::new();
                let mut lookups = 0u64;
                for round in 0..10_000_000u64 {
                    // Odd rounds take the ring alone, whose version is known
                    // by its fingerprint; even rounds the whole snapshot.
                    let (ring, version) = if round % 2 == 1 {
                        let ring = reloader.ring();
                        let version = versions[&ring.fingerprint().unwrap()];
                        (ring, version)
                    } else {
                        let snapshot = reloader.snapshot();
                        (snapshot.ring(), snapshot.config_version())
                    };
                    if seen.last() != Some(&version) {
                        // Never back to an older version.
                        assert!(seen.last().is_none_or(|&v| v < version), "{seen:?} {version}");
                        seen.push(version);
                    }
                    let expected = &answers[&version];
                    for i in (t..keys.len()).step_by(7) {
                        let got = served(&ring, &keys[i]);
                        assert_eq!(got, expected[i], "version {version}, key {i}");
                        lookups += 1;
                    }
                    if round == 0 {
                        started.fetch_add(1, Ordering::SeqCst);
                    }
                    // Each reader runs until it has answered on the last
                    // version (or the deadline, which the asserts below fail).
                    if version == last || Instant::now() > deadline {
                        break;
                    }
                }
                (seen, lookups)
            })
        })
        .collect();
    while started.load(Ordering::SeqCst) < readers.len() {
        assert!(Instant::now() < deadline, "readers did not start");
        std::thread::yield_now();
    }
    for version in 2..=last {
        publish(&dir, &path, version);
        assert_eq!(
            reloader.poll().unwrap(),
            Reload::Reloaded { config_version: version, adopted: false }
        );
        assert_eq!(reloader.poll().unwrap(), Reload::Unchanged);
        std::thread::sleep(Duration::from_millis(20));
    }
    for reader in readers {
        let (seen, lookups) = reader.join().unwrap();
        assert_eq!(seen.first(), Some(&1), "{seen:?}");
        assert_eq!(seen.last(), Some(&last), "{seen:?}");
        assert!(lookups > 0);
    }
    assert_eq!(reloader.reloads(), last - 1);
    assert_eq!(reloader.refusals(), 0);
    assert!(reloader.last_error().is_none());
}

#[test]
fn refused_files_keep_the_current_ring() {
    let (dir, path) = live("refusals", 5);
    let reloader = Reloader::new(&path, options()).unwrap();
    let keys = read_lines("keys_1000.txt");
    let v5 = expected(5, &keys);
    let held = reloader.ring();
    let held_continuum = reloader.continuum().unwrap();
    assert!(Arc::ptr_eq(&held_continuum, &reloader.continuum().unwrap()), "built once");
    let check_v5 = |ring: &chash::Ring| assert_serves(ring, &keys, &v5);

    // A damaged new version renamed over the path: refused by its checksum.
    publish_damaged(&dir, &path, 6);
    let err = reloader.poll().unwrap_err();
    assert_eq!(err.check(), SnapshotCheck::Checksum, "{err}");
    assert_eq!(err.check().name(), "checksum");
    assert_eq!(reloader.last_error().map(|e| e.check()), Some(SnapshotCheck::Checksum));
    assert_eq!(reloader.refusals(), 1);
    // Never verified again: the report counts it once however often the
    // path is looked at.
    for _ in 0..5 {
        assert_eq!(reloader.poll().unwrap(), Reload::Unchanged);
    }
    assert_eq!(reloader.refusals(), 1);
    check_v5(&reloader.ring());

    // A lower config version: refused (rollback).
    publish(&dir, &path, 3);
    let err = reloader.poll().unwrap_err();
    assert_eq!(err.check(), SnapshotCheck::Rollback, "{err}");
    assert!(err.is_untrusted());
    assert_eq!(reloader.snapshot().config_version(), 5);
    // The same version with other servers: refused (same_version).
    let other = dir.write_lines("other.txt", &server_lines(&fleet(9)));
    build_snapshot(&other, &path, &["--mode", "pingora-v1", "--config-version", "5"]);
    assert_eq!(reloader.poll().unwrap_err().check(), SnapshotCheck::SameVersion);
    // The same version and servers (a rewrite of the same content): no swap.
    publish(&dir, &path, 5);
    assert_eq!(reloader.poll().unwrap(), Reload::SameRing);
    assert_eq!((reloader.reloads(), reloader.refusals()), (0, 3));
    check_v5(&reloader.ring());

    // The file vanishes: an io error, the ring stays.
    std::fs::remove_file(&path).unwrap();
    assert_eq!(reloader.poll().unwrap_err().check(), SnapshotCheck::Io);
    check_v5(&reloader.ring());

    // A good, higher version is published; the ring held since v5 still
    // answers as v5.
    publish(&dir, &path, 8);
    assert_eq!(reloader.poll().unwrap(), Reload::Reloaded { config_version: 8, adopted: false });
    let v8 = expected(8, &keys);
    assert_serves(&reloader.ring(), &keys, &v8);
    check_v5(&held);
    let continuum = reloader.continuum().unwrap();
    for ((key, v5), v8) in keys.iter().zip(&v5).zip(&v8) {
        assert_eq!(continuum.node(key), Some(*v8));
        assert_eq!(held_continuum.node(key), Some(*v5));
    }
    let report = reloader.report();
    assert_eq!((report.served_version, report.highest_version), (8, 8));
    assert_eq!((report.accepted, report.refused), (1, 4));
    assert_eq!(report.last_check, SnapshotCheck::Io);
    drop(reloader);
    // The ring outlives the reloader too.
    check_v5(&held);
}

// A sealed copy is immune to the file: a write in place over the served
// file changes nothing the reloader serves. Its header still names the ring
// served, so the library swaps nothing (same_ring); a damaged new version
// written in place is refused.
#[test]
fn a_file_rewritten_in_place_does_not_change_the_served_ring() {
    let (dir, path) = live("in-place", 4);
    let reloader = Reloader::new(&path, options()).unwrap();
    assert_eq!(reloader.snapshot().info().mode, LoadMode::Sealed);
    let keys = read_lines("keys_1000.txt");
    let v4 = expected(4, &keys);
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 4096] {
        *b ^= 0xFF;
    }
    std::fs::write(&path, &bytes).unwrap(); // in place: the same inode
    assert_serves(&reloader.ring(), &keys, &v4);
    // The damaged file is verified like any new one and refused; the sealed
    // copy keeps serving.
    assert_eq!(reloader.poll().unwrap_err().check(), SnapshotCheck::Checksum);
    let staged = dir.path("v5.ring");
    publish(&dir, &staged, 5);
    let mut v5 = std::fs::read(&staged).unwrap();
    v5[middle] ^= 1;
    std::fs::write(&path, &v5).unwrap();
    assert_eq!(reloader.poll().unwrap_err().check(), SnapshotCheck::Checksum);
    assert_serves(&reloader.ring(), &keys, &v4);
}

// With a state directory the highest version served persists: a "restart"
// on an older file is refused (rollback) and the last good file is served
// instead, never the older ring without saying so.
#[test]
fn versions_only_go_up_across_restarts() {
    let (dir, path) = live("restarts", 2);
    let state = dir.path("state");
    std::fs::create_dir(&state).unwrap();
    let with_state =
        || ReloadOptions { state_dir: Some(state.clone()), name: Some("live".into()), ..options() };
    let reloader = Reloader::new(&path, with_state()).unwrap();
    publish(&dir, &path, 7);
    assert_eq!(reloader.poll().unwrap(), Reload::Reloaded { config_version: 7, adopted: false });
    let good = reloader.report().state_file.expect("a state directory names its last good file");
    assert!(good.starts_with(state.to_str().unwrap()) && good.ends_with(".good"), "{good}");
    drop(reloader); // writes the last good file a reload left to write
    assert!(std::path::Path::new(&good).is_file());

    publish(&dir, &path, 2); // the restart finds an older file at the path
    let restarted = Reloader::new(&path, with_state()).unwrap();
    let report = restarted.report();
    assert_eq!(restarted.snapshot().config_version(), 7, "{report:?}");
    assert!(report.serving_last_good, "{report:?}");
    assert_eq!(report.last_check, SnapshotCheck::Rollback);
    assert_eq!(report.highest_version, 7);
    let keys = read_lines("keys_1000.txt");
    assert_serves(&restarted.ring(), &keys, &expected(7, &keys));
    // Without the state directory the same restart serves version 2.
    assert_eq!(Reloader::new(&path, options()).unwrap().snapshot().config_version(), 2);
    // A read-only reloader (a configuration test) writes nothing.
    let before = std::fs::read(&good).unwrap();
    publish(&dir, &path, 9);
    let read_only =
        Reloader::new(&path, ReloadOptions { write_state: false, ..with_state() }).unwrap();
    assert_eq!(read_only.snapshot().config_version(), 9);
    drop(read_only);
    assert_eq!(std::fs::read(&good).unwrap(), before, "a read-only reloader wrote");
    // Bad options are errors of their own, before any file is read.
    let err = Reloader::new(&path, ReloadOptions { name: Some("../x".into()), ..with_state() })
        .unwrap_err();
    assert_eq!(err.kind(), chash::ErrorKind::BadArgument, "{err}");
    let err = Reloader::new(
        &path,
        ReloadOptions { state_dir: Some(dir.path("missing")), ..with_state() },
    )
    .unwrap_err();
    assert_eq!(err.kind(), chash::ErrorKind::Io, "{err}");
}

// Two reloaders with one state directory stand for two processes of a
// host: the second adopts the sealed copy the first verified instead of
// verifying the file again, and a file the first refused is refused by the
// second without a load.
#[test]
fn one_verification_a_host() {
    let (dir, path) = live("host", 1);
    let state = dir.path("state");
    std::fs::create_dir(&state).unwrap();
    let shared = || ReloadOptions { state_dir: Some(state.clone()), ..options() };
    let first = Reloader::new(&path, shared()).unwrap();
    let second = Reloader::new(&path, shared()).unwrap();
    publish(&dir, &path, 2);
    assert_eq!(first.poll().unwrap(), Reload::Reloaded { config_version: 2, adopted: false });
    assert_eq!(second.poll().unwrap(), Reload::Reloaded { config_version: 2, adopted: true });
    assert_eq!(second.report().adopted, 1);

    // A damaged version 3: the first refuses it, the second knows at once.
    publish_damaged(&dir, &path, 3);
    assert_eq!(first.poll().unwrap_err().check(), SnapshotCheck::Checksum);
    assert_eq!(second.poll().unwrap_err().check(), SnapshotCheck::Checksum);

    // A third process started later catches up without reading the path.
    publish(&dir, &path, 4);
    assert_eq!(first.poll().unwrap(), Reload::Reloaded { config_version: 4, adopted: false });
    let caught_up = match second.adopt_shared().unwrap() {
        ReloadCheck::New(candidate) => {
            assert!(candidate.adopted());
            assert_eq!(candidate.config_version(), 4);
            candidate.accept().unwrap()
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(caught_up, Reload::Reloaded { config_version: 4, adopted: true });
    assert_eq!(second.snapshot().config_version(), 4);
}

// An embedder's own check of a new file (here: it routes only with pingora
// v2 rings): refused with the embedder's check, remembered, never loaded
// again; the next good file is accepted.
#[test]
fn an_embedders_refusal_is_remembered() {
    let (dir, path) = live("embedder", 1);
    let reloader = Reloader::new(&path, options()).unwrap();
    publish(&dir, &path, 2);
    match reloader.check().unwrap() {
        ReloadCheck::New(candidate) => {
            assert_eq!(candidate.snapshot().config_version(), 2);
            candidate.refuse(SnapshotCheck::Flavor, "this service routes with pingora-v2").unwrap();
        }
        other => panic!("{other:?}"),
    }
    let report = reloader.report();
    assert_eq!(report.last_check, SnapshotCheck::Flavor);
    assert_eq!(report.last_message, "flavor: this service routes with pingora-v2");
    assert!(matches!(reloader.check().unwrap(), ReloadCheck::Unchanged));
    assert_eq!(reloader.snapshot().config_version(), 1);
    // A candidate superseded by a later check cannot be accepted.
    publish(&dir, &path, 3);
    let stale = match reloader.check().unwrap() {
        ReloadCheck::New(candidate) => candidate,
        other => panic!("{other:?}"),
    };
    let stale_version = stale.config_version();
    assert_eq!(stale_version, 3);
    assert!(matches!(reloader.check().unwrap(), ReloadCheck::New(_)));
    assert_eq!(stale.accept().unwrap_err().kind(), chash::ErrorKind::BadArgument);
    assert_eq!(reloader.poll().unwrap(), Reload::Reloaded { config_version: 3, adopted: false });
}

#[test]
fn the_policy_holds_for_every_reload() {
    let dir = TempDir::new("policy");
    let key = dir.path("k");
    run_cli(&[std::ffi::OsStr::new("keygen"), "--out".as_ref(), key.as_os_str()]);
    let trusted = PublicKey::read(dir.path("k.pub")).unwrap();
    let path = dir.path("live.ring");
    let servers = dir.write_lines("servers.txt", &server_lines(&fleet(0)));
    let sign = key.to_str().unwrap();
    build_snapshot(
        &servers,
        &path,
        &["--mode", "pingora-v1", "--config-version", "1", "--sign", sign],
    );
    let load = LoadOptions::new().trust(trusted).min_config_version(1).threads(1);
    let reloader = Reloader::new(&path, ReloadOptions { load, ..options() }).unwrap();
    // Unsigned, higher version: refused by the signature check.
    build_snapshot(&servers, &path, &["--mode", "pingora-v1", "--config-version", "2"]);
    assert_eq!(reloader.poll().unwrap_err().check(), SnapshotCheck::Signature);
    build_snapshot(
        &servers,
        &path,
        &["--mode", "pingora-v1", "--config-version", "3", "--sign", sign],
    );
    assert_eq!(reloader.poll().unwrap(), Reload::Reloaded { config_version: 3, adopted: false });
    assert!(reloader.snapshot().info().key_id.is_some());
    // The size cap, before the body is read.
    build_snapshot(
        &servers,
        &path,
        &["--mode", "pingora-v1", "--config-version", "4", "--sign", sign],
    );
    let small = LoadOptions::new().trust(trusted).max_file_bytes(4096);
    let err = Reloader::new(&path, ReloadOptions { load: small, ..options() }).unwrap_err();
    assert_eq!(err.check(), SnapshotCheck::MaxSize, "{err}");
    // The first load is held to the policy as well.
    build_snapshot(&servers, &path, &["--mode", "pingora-v1", "--config-version", "4"]);
    let load = LoadOptions::new().trust(trusted);
    let err = Reloader::new(&path, ReloadOptions { load, ..options() }).unwrap_err();
    assert_eq!(err.check(), SnapshotCheck::Signature);
}

#[test]
fn the_watcher_follows_a_retargeted_symlink() {
    let dir = TempDir::new("watcher");
    let (a, b) = (dir.path("a.ring"), dir.path("b.ring"));
    publish(&dir, &a, 1);
    publish(&dir, &b, 2);
    let link = dir.path("current.ring");
    std::os::unix::fs::symlink(&a, &link).unwrap();
    let reloader = Arc::new(Reloader::new(&link, options()).unwrap());
    assert_eq!(reloader.snapshot().config_version(), 1);
    let watcher = reloader.watch(Duration::from_millis(5)).unwrap();
    // Retarget atomically: a new link renamed over the old.
    let staged = dir.path("staged.link");
    std::os::unix::fs::symlink(&b, &staged).unwrap();
    std::fs::rename(&staged, &link).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while reloader.snapshot().config_version() != 2 {
        assert!(Instant::now() < deadline, "the watcher did not reload");
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(watcher); // stops and joins the thread
    assert_eq!(Arc::strong_count(&reloader), 1, "the watcher thread still holds the reloader");
    let keys = read_lines("keys_1000.txt");
    assert_serves(&reloader.ring(), &keys, &expected(2, &keys));
}

// Files replaced faster than the watcher polls, some while it loads: it
// must end on the last one, and every reader answer must be one version's.
#[test]
fn a_watcher_under_rapid_replacements_ends_on_the_last_file() {
    let (dir, path) = live("rapid", 1);
    let reloader = Arc::new(Reloader::new(&path, options()).unwrap());
    let keys: Arc<Vec<Vec<u8>>> = Arc::new(read_lines("keys_1000.txt"));
    let last = 12u64;
    let answers = expected_up_to(last, &keys);
    let watcher = reloader.watch(Duration::from_millis(1)).unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (reloader, keys, answers, stop) =
            (reloader.clone(), keys.clone(), answers.clone(), stop.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            let mut rounds = 0u64;
            while !stop.load(Ordering::SeqCst) && Instant::now() < deadline && rounds < 1_000_000 {
                let snapshot = reloader.snapshot();
                let (ring, expected) = (snapshot.ring(), &answers[&snapshot.config_version()]);
                for (key, want) in keys.iter().zip(expected).step_by(13) {
                    assert_eq!(served(&ring, key), *want);
                }
                rounds += 1;
            }
            rounds
        })
    };
    for version in 2..=last {
        publish(&dir, &path, version);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while reloader.snapshot().config_version() != last {
        assert!(Instant::now() < deadline, "stuck at {}", reloader.snapshot().config_version());
        std::thread::sleep(Duration::from_millis(5));
    }
    stop.store(true, Ordering::SeqCst);
    assert!(reader.join().unwrap() > 0);
    drop(watcher);
    assert!((1..last).contains(&reloader.reloads()), "{} reloads", reloader.reloads());
    assert_eq!(reloader.refusals(), 0, "{:?}", reloader.last_error());
}
