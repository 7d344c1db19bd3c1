//! include/chash/chash_c.h as Rust: build.rs generates the declarations from
//! the header of the libchash it links (ffi_gen.rs), so there is no copy of
//! a constant, a struct or a prototype to keep in step. The test below holds
//! the generated layout against the C compiler's (tests/data/abi).
#![allow(non_camel_case_types, dead_code)]

use std::os::raw::{c_char, c_int, c_void};

include!(concat!(env!("OUT_DIR"), "/chash_c.rs"));

#[cfg(test)]
mod tests {
    // tests/data/abi/chash_c.layout: what clang prints of the header (its
    // `struct`, `field` and `const` lines; prototypes are the ABI test's).
    fn c_layout() -> Vec<String> {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/abi/chash_c.layout");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut lines = Vec::new();
        for line in text.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["struct", ..] => lines.push(line.to_string()),
                ["field", name, offset, ..] => lines.push(format!("field {name} {offset}")),
                ["const", name, value] => {
                    let digits = value.trim_matches(['(', ')']).trim_end_matches('u');
                    let number = match digits.strip_prefix("0x") {
                        Some(hex) => i64::from_str_radix(hex, 16),
                        None => digits.parse::<i64>(),
                    };
                    let number = number.unwrap_or_else(|_| panic!("{line}: not an integer"));
                    lines.push(format!("const {name} {number}"));
                }
                _ => {}
            }
        }
        lines.sort();
        lines
    }

    #[test]
    fn generated_declarations_have_the_c_compilers_layout() {
        let mut generated = super::generated_layout();
        generated.sort();
        let c = c_layout();
        assert!(c.len() >= 200, "only {} lines in the layout baseline", c.len());
        assert_eq!(generated, c);
    }
}
