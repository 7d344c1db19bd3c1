//! The crate's `SnapshotCheck` against the checks include/chash/chash_c.h
//! defines: the FFI declarations are generated from the header (build.rs),
//! but the typed enum and its names are written here, and must follow it.

use std::path::PathBuf;

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

// Every CHASH_CHECK_* of the header is a SnapshotCheck whose code it is and
// whose name the library gives (chash_check_name), and the other way round:
// a check added to the header fails here until the crate names it.
#[test]
fn every_check_of_the_header_is_a_snapshot_check() {
    let header =
        read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../include/chash/chash_c.h"));
    let mut codes = Vec::new();
    for line in header.lines() {
        let Some(rest) = line.strip_prefix("#define CHASH_CHECK_") else { continue };
        let (name, value) = rest.split_once(' ').unwrap();
        let value: u32 =
            value.split_whitespace().next().unwrap().trim_end_matches('u').parse().unwrap();
        codes.push((name.to_ascii_lowercase(), value));
    }
    assert!(codes.len() >= 30, "only {codes:?}");
    for (name, code) in &codes {
        let check = chash::SnapshotCheck::from_code(*code);
        assert!(!matches!(check, chash::SnapshotCheck::Unknown(_)), "{name}: no SnapshotCheck");
        assert_eq!(check.code(), *code, "{name}");
        assert_eq!(check.name(), name, "code {code}: the library's name");
        assert_eq!(chash::SnapshotCheck::from_name(name), Some(check));
        // The variant is the check of that name (Checksum is "checksum").
        let mut snake = String::new();
        for (i, c) in format!("{check:?}").chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                snake.push('_');
            }
            snake.push(c.to_ascii_lowercase());
        }
        assert_eq!(&snake, name, "code {code}");
    }
    let past = codes.iter().map(|&(_, c)| c).max().unwrap() + 1;
    assert_eq!(chash::SnapshotCheck::from_code(past), chash::SnapshotCheck::Unknown(past));
    assert_eq!(chash::SnapshotCheck::Unknown(past).name(), "unknown");
}
