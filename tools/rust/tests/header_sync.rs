//! src/ffi.rs declares the C API by hand: this checks it against the header
//! it mirrors (include/chash/chash_c.h of this repository), so that a changed
//! struct or constant fails here instead of corrupting memory.

use std::path::PathBuf;

fn read(path: PathBuf) -> String {
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn header() -> String {
    read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../include/chash/chash_c.h"))
}

fn ffi() -> String {
    read(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("src/ffi.rs"))
}

// The body between `open` and the next `close` after it.
fn body<'a>(text: &'a str, open: &str, close: &str) -> &'a str {
    let start = text.find(open).unwrap_or_else(|| panic!("'{open}' not found")) + open.len();
    let end = start + text[start..].find(close).unwrap();
    &text[start..end]
}

// The text with its /* ... */ comments removed.
fn without_comments(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("/*") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find("*/").expect("an unclosed comment") + start + 2;
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

// (type, name) of each field of a C struct, comments removed.
fn c_fields(header: &str, name: &str) -> Vec<(String, String)> {
    let text = without_comments(body(header, &format!("typedef struct {name} {{"), "}"));
    let mut fields = Vec::new();
    for decl in text.split(';') {
        let decl = decl.split_whitespace().collect::<Vec<_>>().join(" ");
        if decl.is_empty() {
            continue;
        }
        // `uint16_t a, b` declares two fields of one type.
        let (ty, first) = decl
            .split_once(", ")
            .map_or(decl.as_str(), |(first, _)| first)
            .rsplit_once(' ')
            .unwrap();
        let mut names = vec![first.to_string()];
        names.extend(decl.split(", ").skip(1).map(|n| n.trim().to_string()));
        let base = match ty.trim() {
            "uint64_t" => "u64",
            "uint32_t" => "u32",
            "uint16_t" => "u16",
            "uint8_t" | "const uint8_t" => "u8",
            "int64_t" => "i64",
            "int" => "c_int",
            "size_t" => "usize",
            "double" => "f64",
            other => panic!("{name}: unmapped C type '{other}'"),
        };
        for field in names {
            // `*keys` -> ("*const u8", "keys"); `opaque[4]` -> ("[u64; 4]", "opaque")
            let (ty, field) = match field.strip_prefix('*') {
                Some(f) if ty.starts_with("const ") => (format!("*const {base}"), f.to_string()),
                Some(_) => panic!("{name}: unmapped pointer field '{field}'"),
                None => (base.to_string(), field),
            };
            match field.split_once('[') {
                Some((f, n)) => {
                    let n = n.trim_end_matches(']');
                    // CHASH_KEY_ID_SIZE and the like: src/ffi.rs writes the number.
                    let n = header
                        .lines()
                        .find_map(|l| l.strip_prefix(&format!("#define {n} ")))
                        .map_or(n.to_string(), |v| {
                            v.split_whitespace().next().unwrap().to_string()
                        });
                    fields.push((format!("[{ty}; {n}]"), f.into()))
                }
                None => fields.push((ty, field)),
            }
        }
    }
    fields
}

fn rust_fields(ffi: &str, name: &str) -> Vec<(String, String)> {
    body(ffi, &format!("pub struct {name} {{"), "}")
        .lines()
        .filter_map(|line| line.trim().strip_prefix("pub "))
        .map(|decl| {
            let (field, ty) = decl.trim_end_matches(',').split_once(": ").unwrap();
            (ty.to_string(), field.to_string())
        })
        .collect()
}

#[test]
fn caller_allocated_structs_match_the_header() {
    let (header, ffi) = (header(), ffi());
    for name in [
        "chash_cursor",
        "chash_distinct_walk",
        "chash_ring_stats",
        "chash_snapshot_options",
        "chash_snapshot_info",
    ] {
        let c = c_fields(&header, name);
        assert!(!c.is_empty(), "{name}");
        assert_eq!(rust_fields(&ffi, name), c, "{name}: src/ffi.rs differs from chash_c.h");
    }
}

#[test]
fn constants_match_the_header() {
    let (header, ffi) = (header(), ffi());
    let mut checked = 0;
    for line in ffi.lines() {
        let Some(decl) = line.trim().strip_prefix("pub const ") else { continue };
        let (name, rest) = decl.split_once(':').unwrap();
        let value = rest.split('=').nth(1).unwrap().trim().trim_end_matches(';');
        let c_value = header
            .lines()
            .find_map(|l| l.strip_prefix(&format!("#define {name} ")))
            .map(|v| v.split("/*").next().unwrap().trim().to_string())
            .or_else(|| {
                // enum members: `  NAME = 1,` or `{ NAME = 0, OTHER = 1 }`
                header.lines().find_map(|l| {
                    let at = l.find(&format!("{name} = "))?;
                    let before = l[..at].chars().last();
                    if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                        return None;
                    }
                    let v = &l[at + name.len() + 3..];
                    Some(v.split([',', ' ']).next().unwrap().to_string())
                })
            })
            .unwrap_or_else(|| panic!("{name} is not in chash_c.h"));
        let normalize = |v: &str| {
            let v = v.trim_matches(|c| c == '(' || c == ')').trim_end_matches('u').replace('_', "");
            if let Some(hex) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
                i64::from_str_radix(hex, 16).unwrap()
            } else {
                v.parse::<i64>().unwrap_or_else(|_| panic!("{name}: value '{v}'"))
            }
        };
        assert_eq!(normalize(value), normalize(&c_value), "{name}");
        checked += 1;
    }
    assert!(checked >= 10, "only {checked} constants found in src/ffi.rs");
}

#[test]
fn every_declared_function_is_in_the_header() {
    let (header, ffi) = (header(), ffi());
    let mut declared = 0;
    for line in ffi.lines() {
        let Some(rest) = line.trim().strip_prefix("pub fn ") else { continue };
        let name = rest.split('(').next().unwrap();
        let found = [" ", "*"].iter().any(|before| header.contains(&format!("{before}{name}(")));
        assert!(found, "{name} is not in chash_c.h");
        declared += 1;
    }
    assert!(declared >= 20, "only {declared} functions found in src/ffi.rs");
}

// Every check the snapshot reader names (engine/snapshot/snapshot_reader.cc:
// Bad("check", ...) and Untrusted("check", ...), and the "io: " and "index: "
// messages) is a SnapshotCheck: a check added there fails here until the
// crate names it.
#[test]
fn every_snapshot_check_of_the_reader_is_named() {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../engine/snapshot/snapshot_reader.cc");
    let source = read(path);
    let mut names = vec!["io".to_string(), "index".to_string()];
    for call in ["Bad(\"", "Untrusted(\""] {
        for (at, _) in source.match_indices(call) {
            let rest = &source[at + call.len()..];
            names.push(rest[..rest.find('"').unwrap()].to_string());
        }
    }
    for prefix in ["\"io: ", "\"index: "] {
        assert!(source.contains(prefix), "no {prefix} message in snapshot_reader.cc");
    }
    names.sort();
    names.dedup();
    assert!(names.len() >= 18, "only {names:?}");
    for name in &names {
        let check = chash::SnapshotCheck::from_name(name)
            .unwrap_or_else(|| panic!("the reader's check '{name}' is no chash::SnapshotCheck"));
        assert_eq!(check.name(), name);
    }
}
