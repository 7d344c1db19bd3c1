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

    // The baseline is clang's x86-64 layout; aarch64 (LP64 too) lays these
    // structs out alike.
    #[test]
    fn generated_declarations_have_the_c_compilers_layout() {
        let generated = super::generated_layout();
        let c = c_layout();
        assert!(c.len() >= 200, "only {} lines in the layout baseline", c.len());
        let only_generated: Vec<&String> = generated.iter().filter(|l| !c.contains(l)).collect();
        let only_c: Vec<&String> = c.iter().filter(|l| !generated.contains(l)).collect();
        assert!(
            only_generated.is_empty() && only_c.is_empty(),
            "generated from the header but not in the baseline: {only_generated:#?}\n\
             in the baseline but not generated: {only_c:#?}\n\
             (a header change the baseline lacks: tests/abi/layout_check.py --update)"
        );
        assert_eq!(generated.len(), c.len(), "a line generated twice");
    }
}
