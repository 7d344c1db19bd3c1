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

// The Rust type src/ffi.rs writes for a C type without pointers: integers,
// double, char and the API's own structs (declared by the same name).
fn rust_base_type(c_type: &str) -> Option<String> {
    let base = match c_type {
        "uint64_t" => "u64",
        "uint32_t" => "u32",
        "uint16_t" => "u16",
        "uint8_t" => "u8",
        "int64_t" => "i64",
        "int32_t" => "i32",
        "int" => "c_int",
        "size_t" => "usize",
        "double" => "f64",
        "char" => "c_char",
        name if name.starts_with("chash_") => name,
        _ => return None,
    };
    Some(base.to_string())
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
        let ty = ty.trim();
        let (is_const, c_type) = match ty.strip_prefix("const ") {
            Some(rest) => (true, rest),
            None => (false, ty),
        };
        let base =
            rust_base_type(c_type).unwrap_or_else(|| panic!("{name}: unmapped C type '{c_type}'"));
        for field in names {
            // `*keys` -> ("*const u8", "keys"); `opaque[4]` -> ("[u64; 4]", "opaque")
            let (ty, field) = match field.strip_prefix('*') {
                Some(f) if is_const => (format!("*const {base}"), f.to_string()),
                Some(f) => (format!("*mut {base}"), f.to_string()),
                None if is_const => panic!("{name}: a const field '{field}'"),
                None => (base.clone(), field),
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
        "chash_ring_options",
        "chash_node_fields",
        "chash_memory_usage",
        "chash_ring_stats",
        "chash_snapshot_options",
        "chash_snapshot_info",
        "chash_reloader_options",
        "chash_reload_result",
        "chash_reload_report",
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

// A C type (`const char *const *`, `chash_ring **`) as src/ffi.rs writes it.
fn rust_type(c: &str) -> String {
    let spaced = c.replace('*', " * ");
    let tokens: Vec<&str> = spaced.split_whitespace().collect();
    let mut i = 0;
    let mut is_const = false;
    if tokens.first() == Some(&"const") {
        is_const = true;
        i = 1;
    }
    let mut ty = match tokens[i] {
        "void" => "c_void".to_string(),
        other => {
            rust_base_type(other).unwrap_or_else(|| panic!("unmapped C type '{other}' in '{c}'"))
        }
    };
    i += 1;
    if tokens.get(i) == Some(&"const") {
        is_const = true;
        i += 1;
    }
    while i < tokens.len() {
        assert_eq!(tokens[i], "*", "'{c}'");
        ty = format!("*{} {ty}", if is_const { "const" } else { "mut" });
        is_const = false;
        i += 1;
        if tokens.get(i) == Some(&"const") {
            is_const = true;
            i += 1;
        }
    }
    if ty == "c_void" {
        return String::new(); // a void return
    }
    ty
}

// name -> (parameter types, return type) of every function of the header.
fn c_functions(header: &str) -> std::collections::HashMap<String, (Vec<String>, String)> {
    // The declarations, after the macros that define CHASH_C_API.
    let body = &header[header.find("extern \"C\" {").expect("extern \"C\"")..];
    let text = without_comments(body).split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = std::collections::HashMap::new();
    for decl in text.split("CHASH_C_API ").skip(1) {
        let decl = &decl[..decl.find(';').unwrap()];
        let open = decl.find('(').unwrap();
        let (head, rest) = (&decl[..open], &decl[open + 1..]);
        let params = &rest[..rest.rfind(')').unwrap()];
        let at = head.rfind([' ', '*']).unwrap() + 1;
        let (ret, name) = (&head[..at], head[at..].to_string());
        let params: Vec<String> = if params.trim() == "void" {
            Vec::new()
        } else {
            params
                .split(',')
                .map(|p| {
                    let p = p.trim();
                    // The parameter's name is its last word.
                    let at = p.rfind([' ', '*']).unwrap() + 1;
                    rust_type(&p[..at])
                })
                .collect()
        };
        out.insert(name, (params, rust_type(ret)));
    }
    out
}

// Every function src/ffi.rs declares is in the header, with the same
// parameter types and return type: a function whose return type changed
// (a position that became 64 bits) fails here instead of reading half a
// register.
#[test]
fn every_declared_function_matches_the_header() {
    let (header, ffi) = (header(), ffi());
    let c = c_functions(&header);
    assert!(c.len() >= 100, "only {} functions parsed from chash_c.h", c.len());
    let text = ffi.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut declared = 0;
    for decl in text.split("pub fn ").skip(1) {
        let decl = &decl[..decl.find(';').unwrap()];
        let open = decl.find('(').unwrap();
        let name = &decl[..open];
        let close = decl.rfind(')').unwrap();
        let params: Vec<String> = decl[open + 1..close]
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|p| p.split_once(": ").unwrap().1.to_string())
            .collect();
        let ret = decl[close + 1..].trim().trim_start_matches("->").trim().to_string();
        let (c_params, c_ret) = c.get(name).unwrap_or_else(|| panic!("{name} is not in chash_c.h"));
        assert_eq!(&params, c_params, "{name}: parameters");
        assert_eq!(&ret, c_ret, "{name}: return type");
        declared += 1;
    }
    assert!(declared >= 60, "only {declared} functions found in src/ffi.rs");
}

// Every CHASH_CHECK_* of the header is a SnapshotCheck whose code it is and
// whose name the library gives (chash_check_name), and the other way round:
// a check added to the header fails here until the crate names it.
#[test]
fn every_check_of_the_header_is_a_snapshot_check() {
    let (header, ffi) = (header(), ffi());
    let mut codes = Vec::new();
    for line in header.lines() {
        let Some(rest) = line.strip_prefix("#define CHASH_CHECK_") else { continue };
        let (name, value) = rest.split_once(' ').unwrap();
        let value: u32 =
            value.split_whitespace().next().unwrap().trim_end_matches('u').parse().unwrap();
        assert!(
            ffi.contains(&format!("pub const CHASH_CHECK_{name}: u32 = {value};")),
            "CHASH_CHECK_{name} is not in src/ffi.rs"
        );
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
