//! Snapshots written by the CLI (`chash build`), loaded through the crate:
//! the golden pingora answers from a mapped, a copied and an in-memory
//! snapshot; every refusal naming its check; subsets as masks; rings that
//! outlive their snapshot.

mod common;

use std::sync::Arc;

use chash::{
    Continuum, ErrorKind, Flavor, LoadMode, LoadOptions, PublicKey, Ring, Snapshot, SnapshotCheck,
    Version,
};
use common::{
    addr, build_snapshot, data_path, read_answers, read_servers, route_keys_1000, run_cli, TempDir,
};

// Every golden key of `golden` through the snapshot's Ring and its
// Continuum.
fn check_golden(snapshot: &Snapshot, keys: &str, golden: &str) {
    let ring = snapshot.ring();
    let continuum = snapshot.continuum().expect("a pingora snapshot is a Continuum");
    let answers = read_answers(keys, golden);
    for (key, fields) in &answers {
        let expected = addr(fields.last().unwrap());
        let text = String::from_utf8_lossy(key);
        assert_eq!(ring.node(key).map(addr), Some(expected), "Ring, '{text}'");
        assert_eq!(continuum.node(key), Some(expected), "Continuum, '{text}'");
    }
    let keys: Vec<&[u8]> = answers.iter().map(|(k, _)| k.as_slice()).collect();
    let mut batch = vec![0u32; keys.len()];
    ring.bucket_idxs(&keys, &mut batch);
    for (key, &idx) in keys.iter().zip(&batch) {
        assert_eq!(Some(idx as usize), ring.bucket_idx(key));
    }
}

#[test]
fn golden_answers_from_sealed_mapped_copied_and_in_memory_snapshots() {
    let dir = TempDir::new("golden");
    let servers = data_path("servers_50.txt");
    let (v1, v2) = (dir.path("v1.ring"), dir.path("v2.ring"));
    build_snapshot(&servers, &v1, &["--mode", "pingora-v1", "--config-version", "7"]);
    build_snapshot(&servers, &v2, &["--mode", "pingora-v2", "--multiple", "16"]);

    let sealed = Snapshot::load(&v1, &LoadOptions::new()).unwrap();
    let info = *sealed.info();
    assert_eq!(info.mode, LoadMode::Sealed);
    assert_eq!(info.expires_unix_seconds, None);
    assert_eq!(info.fingerprint, sealed.ring().fingerprint().unwrap());
    assert_eq!(info.flavor, Some(Flavor::PingoraV1));
    assert_eq!((info.buckets, info.point_multiple, info.config_version), (50, 160, 7));
    assert_eq!(info.key_id, None);
    assert_eq!(info.file_bytes, std::fs::metadata(&v1).unwrap().len());
    assert_eq!(sealed.ring().num_buckets(), 50);
    assert_eq!(sealed.ring().num_points() as u64, info.points);
    check_golden(&sealed, "keys_10000.txt", "golden_v1_50srv.csv");
    check_golden(&sealed, "edge_keys_v1_50srv.txt", "golden_edge_v1_50srv.csv");

    let mapped = Snapshot::load(&v1, &LoadOptions::new().mode(LoadMode::Map)).unwrap();
    assert_eq!(mapped.info().mode, LoadMode::Map);
    check_golden(&mapped, "keys_10000.txt", "golden_v1_50srv.csv");

    let copied = Snapshot::load(&v1, &LoadOptions::new().mode(LoadMode::Copy)).unwrap();
    assert_eq!(copied.info().mode, LoadMode::Copy);
    check_golden(&copied, "keys_10000.txt", "golden_v1_50srv.csv");

    let bytes = std::fs::read(&v2).unwrap();
    let in_memory = Snapshot::from_bytes(&bytes, &LoadOptions::new()).unwrap();
    assert_eq!(in_memory.info().flavor, Some(Flavor::PingoraV2));
    assert_eq!(in_memory.info().point_multiple, 16);
    check_golden(&in_memory, "keys_10000.txt", "golden_v2m16_50srv.csv");
    check_golden(&in_memory, "edge_keys_v2m16_50srv.txt", "golden_edge_v2m16_50srv.csv");

    // The snapshot's ring is the ring the crate builds from the same servers.
    let built = Continuum::new_with_version(
        &read_servers("servers_50.txt"),
        Version::V2 { point_multiple: 16 },
    );
    assert_eq!(in_memory.ring().fingerprint().unwrap(), built.fingerprint().unwrap());
    let verified = Snapshot::verify(&v2, &LoadOptions::new()).unwrap();
    assert_eq!(verified.mode, LoadMode::Sealed);
    assert_eq!(chash::SnapshotInfo { mode: in_memory.info().mode, ..verified }, *in_memory.info());
}

// IPv6 text in every spelling pingora accepts: the snapshot's Continuum
// names each bucket by its SocketAddr and answers as pingora did.
#[test]
fn ipv6_spellings_from_a_snapshot_answer_as_pingora() {
    let dir = TempDir::new("ipv6");
    let servers = data_path("servers_ipv6_format.txt");
    let modes: [(&[&str], &str); 2] = [
        (&["--mode", "pingora-v1"], "golden_v1_ipv6_format.csv"),
        (&["--mode", "pingora-v2", "--multiple", "16"], "golden_v2m16_ipv6_format.csv"),
    ];
    for (i, (mode, golden)) in modes.into_iter().enumerate() {
        let out = dir.path(&format!("{i}.ring"));
        build_snapshot(&servers, &out, mode);
        let snapshot = Snapshot::load(&out, &LoadOptions::new()).unwrap();
        check_golden(&snapshot, "keys_1000.txt", golden);
    }
}

// tests/data/nginx/a.*: answers recorded from the real nginx 1.22.1
// (tests/data/PROVENANCE.md); `key,upstream_addr` rows, split at the last
// comma, '#' lines are comments.
#[test]
fn an_nginx_snapshot_gives_nginx_answers_and_is_no_continuum() {
    let nginx = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/nginx");
    let dir = TempDir::new("nginx");
    let out = dir.path("nginx.ring");
    build_snapshot(&nginx.join("a.servers"), &out, &["--mode", "nginx"]);
    let snapshot = Snapshot::load(&out, &LoadOptions::new()).unwrap();
    assert_eq!(snapshot.info().flavor, Some(Flavor::Nginx));
    assert_eq!(snapshot.info().buckets, 9);
    let err = snapshot.continuum().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument, "{err}");
    let ring = snapshot.ring();
    let rows = std::fs::read_to_string(nginx.join("a.csv")).unwrap();
    let mut checked = 0;
    for row in rows.lines().filter(|l| !l.starts_with('#')) {
        let (key, expected) = row.rsplit_once(',').unwrap();
        assert_eq!(ring.node(key.as_bytes()), Some(expected), "'{key}'");
        checked += 1;
    }
    assert_eq!(checked, 5000);
}

fn expect_refusal(
    result: Result<Snapshot, chash::SnapshotError>,
    check: SnapshotCheck,
    kind: ErrorKind,
) {
    let err = result.expect_err("the load must be refused");
    assert_eq!(err.check(), check, "{err}");
    assert_eq!(err.kind(), kind, "{err}");
    assert!(err.to_string().starts_with(check.name()), "'{err}' does not name {check}");
    assert_eq!(err.is_untrusted(), kind == ErrorKind::Untrusted, "{err}");
}

#[test]
fn every_refusal_names_its_check() {
    let dir = TempDir::new("refusals");
    let servers = data_path("servers_50.txt");
    let good = dir.path("good.ring");
    build_snapshot(&servers, &good, &["--mode", "pingora-v1", "--config-version", "3"]);
    let bytes = std::fs::read(&good).unwrap();
    let defaults = LoadOptions::new();

    expect_refusal(
        Snapshot::load(dir.path("missing.ring"), &defaults),
        SnapshotCheck::Io,
        ErrorKind::Io,
    );
    expect_refusal(
        Snapshot::load("bad\0path", &defaults),
        SnapshotCheck::Io,
        ErrorKind::BadArgument,
    );
    expect_refusal(
        Snapshot::from_bytes(&bytes[..bytes.len() - 1], &defaults),
        SnapshotCheck::Size,
        ErrorKind::BadSnapshot,
    );
    let mut not_chash = bytes.clone();
    not_chash[..8].copy_from_slice(b"NOTCHASH");
    expect_refusal(
        Snapshot::from_bytes(&not_chash, &defaults),
        SnapshotCheck::Magic,
        ErrorKind::BadSnapshot,
    );
    // One bit of the hash column flipped: only the checksum sees it...
    let mut damaged = bytes.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x10;
    let damaged_path = dir.path("damaged.ring");
    std::fs::write(&damaged_path, &damaged).unwrap();
    expect_refusal(
        Snapshot::load(&damaged_path, &defaults),
        SnapshotCheck::Checksum,
        ErrorKind::BadSnapshot,
    );
    // ... which skip_checksum skips: a structural check may still refuse it.
    if let Err(err) = Snapshot::load(&damaged_path, &LoadOptions::new().skip_checksum(true)) {
        assert_ne!(err.check(), SnapshotCheck::Checksum, "{err}");
    }
    expect_refusal(
        Snapshot::load(&good, &LoadOptions::new().min_config_version(4)),
        SnapshotCheck::MinVersion,
        ErrorKind::Untrusted,
    );
    assert!(Snapshot::load(&good, &LoadOptions::new().min_config_version(3)).is_ok());

    // Refused before a byte of the body is read: not a regular file (a
    // directory; a FIFO, which a load never waits on), over the size cap,
    // past its expiry (header offset 272, engine/snapshot/FORMAT.md).
    expect_refusal(
        Snapshot::load(dir.path(""), &defaults),
        SnapshotCheck::NotRegular,
        ErrorKind::Io,
    );
    let fifo = dir.path("fifo.ring");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    expect_refusal(Snapshot::load(&fifo, &defaults), SnapshotCheck::NotRegular, ErrorKind::Io);
    expect_refusal(
        Snapshot::load(&good, &LoadOptions::new().max_file_bytes(4096)),
        SnapshotCheck::MaxSize,
        ErrorKind::BadSnapshot,
    );
    let mut expired = bytes.clone();
    expired[272..280].copy_from_slice(&1i64.to_le_bytes());
    expect_refusal(
        Snapshot::from_bytes(&expired, &defaults),
        SnapshotCheck::Expired,
        ErrorKind::Untrusted,
    );

    // Signatures: keys from `chash keygen`.
    let (k1, k2) = (dir.path("k1"), dir.path("k2"));
    for key in [&k1, &k2] {
        run_cli(&[std::ffi::OsStr::new("keygen"), "--out".as_ref(), key.as_os_str()]);
    }
    let pub1 = PublicKey::read(dir.path("k1.pub")).unwrap();
    let pub2 = PublicKey::read(dir.path("k2.pub")).unwrap();
    assert_ne!(pub1, pub2);
    let signed = dir.path("signed.ring");
    let sign_with = k1.to_str().unwrap();
    build_snapshot(&servers, &signed, &["--mode", "pingora-v1", "--sign", sign_with]);

    let trusted = Snapshot::load(&signed, &LoadOptions::new().trust(pub1)).unwrap();
    assert!(trusted.info().key_id.is_some());
    check_golden(&trusted, "keys_10000.txt", "golden_v1_50srv.csv");
    assert!(Snapshot::load(&signed, &LoadOptions::new().trust(pub2).trust(pub1)).is_ok());
    expect_refusal(
        Snapshot::load(&signed, &LoadOptions::new().trust(pub2)),
        SnapshotCheck::Signature,
        ErrorKind::Untrusted,
    );
    expect_refusal(
        Snapshot::load(&good, &LoadOptions::new().trust(pub1)),
        SnapshotCheck::Signature,
        ErrorKind::Untrusted,
    );
    // A signed file loads without keys too: no signature was asked for.
    assert!(Snapshot::load(&signed, &defaults).is_ok());

    // Key files: unreadable, and not a key.
    let err = PublicKey::read(dir.path("none.pub")).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Io, "{err}");
    let err = PublicKey::read(&servers).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument, "{err}");
}

#[test]
fn subsets_answer_as_rings_of_their_servers() {
    let dir = TempDir::new("subsets");
    let servers = read_servers("servers_50.txt");
    let lines = common::server_lines(&servers);
    let canary: Vec<String> = lines[..5].to_vec();
    let odd: Vec<String> = lines.iter().skip(1).step_by(2).cloned().collect();
    let canary_file = dir.write_lines("canary.txt", &canary);
    let odd_file = dir.write_lines("odd.txt", &odd);
    let out = dir.path("subsets.ring");
    let canary_arg = format!("canary={}", canary_file.display());
    let odd_arg = format!("odd={}", odd_file.display());
    build_snapshot(
        &data_path("servers_50.txt"),
        &out,
        &["--mode", "pingora-v1", "--subset", &canary_arg, "--subset", &odd_arg, "--label", "two"],
    );
    let snapshot = Snapshot::load(&out, &LoadOptions::new()).unwrap();
    assert_eq!(snapshot.label(), "two");
    assert_eq!(snapshot.info().subsets, 2);
    let mut names: Vec<&str> = snapshot.subset_names().collect();
    names.sort_unstable();
    assert_eq!(names, ["canary", "odd"]);
    let err = snapshot.subset("nope").unwrap_err();
    assert_eq!(err.kind(), ErrorKind::BadArgument);
    assert!(err.message().contains("canary") && err.message().contains("odd"), "{err}");

    let ring = snapshot.ring();
    let keys = common::read_lines("keys_10000.txt");
    for (name, members) in [("canary", &servers[..5]), ("odd", &servers[1..])] {
        let members: Vec<_> = if name == "odd" {
            members.iter().step_by(2).cloned().collect()
        } else {
            members.to_vec()
        };
        let mask = snapshot.subset(name).unwrap();
        assert_eq!(mask.len(), 50);
        assert_eq!(mask.count_available(), members.len(), "{name}");
        // The golden-tested Continuum of only the subset's servers.
        let alone = Continuum::new(&members);
        let mut batch = vec![0u32; keys.len()];
        ring.bucket_idxs_available(&keys, mask, &mut batch);
        for (key, &idx) in keys.iter().zip(&batch) {
            let got = ring.bucket_idx_available(key, mask);
            assert_eq!(got, Some(idx as usize));
            assert_eq!(got, ring.bucket_idx_available_by_hash(chash::crc32(key), mask));
            let got = ring.node_available(key, mask).map(addr);
            assert_eq!(got, alone.node(key), "{name}, '{}'", String::from_utf8_lossy(key));
        }
    }
    // `chash route --subset` agrees key by key.
    let routed = route_keys_1000(&["--subset", odd_file.to_str().unwrap()]);
    let odd_mask = snapshot.subset("odd").unwrap();
    let mut checked = 0;
    for (line, key) in routed.lines().zip(common::read_lines("keys_1000.txt")) {
        let address = line.rsplit_once(',').unwrap().1;
        assert_eq!(ring.node_available(&key, odd_mask), Some(address), "{line}");
        checked += 1;
    }
    assert_eq!(checked, 1000);
}

fn assert_send_sync<T: Send + Sync>() {}

#[test]
fn rings_outlive_their_snapshot_and_file() {
    assert_send_sync::<Snapshot>();
    assert_send_sync::<Ring>();
    assert_send_sync::<Arc<Ring>>();
    let dir = TempDir::new("lifetimes");
    let path = dir.path("v1.ring");
    build_snapshot(&data_path("servers_50.txt"), &path, &["--mode", "pingora-v1"]);
    let snapshot = Snapshot::load(&path, &LoadOptions::new()).unwrap();
    let ring = snapshot.ring();
    let continuum = snapshot.continuum().unwrap();
    drop(snapshot);
    // The mapping stays with the rings: the file may even be unlinked.
    std::fs::remove_file(&path).unwrap();
    let answers = read_answers("keys_10000.txt", "golden_v1_50srv.csv");
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let ring = Arc::clone(&ring);
            let answers = answers.clone();
            std::thread::spawn(move || {
                for (key, fields) in &answers {
                    assert_eq!(ring.node(key).map(addr), Some(addr(fields.last().unwrap())));
                }
            })
        })
        .collect();
    for reader in readers {
        reader.join().unwrap();
    }
    for (key, fields) in &answers {
        assert_eq!(continuum.node(key), Some(addr(fields.last().unwrap())));
    }
}
