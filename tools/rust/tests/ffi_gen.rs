//! build.rs's generator of src/ffi.rs (ffi_gen.rs): every prototype of the
//! header is declared, and what it cannot read stops it, naming the text.

#[path = "../ffi_gen.rs"]
mod ffi_gen;

fn header() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../include/chash/chash_c.h");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn every_prototype_of_the_header_is_declared() {
    let header = header();
    let rust = ffi_gen::generate(&header).expect("the header reads");
    let declared: Vec<&str> = rust
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub fn "))
        .map(|l| &l[..l.find('(').unwrap()])
        .collect();
    let in_header = header.matches("\nCHASH_C_API ").count();
    assert!(in_header >= 100, "only {in_header} prototypes in chash_c.h");
    assert_eq!(declared.len(), in_header);
    assert!(declared.contains(&"chash_builder_add_fields"));
    assert!(rust.contains(
        "pub fn chash_ring_find_keys(ring: *const chash_ring, keys: *const *const c_char, \
         key_lens: *const usize, n: usize, out: *mut u32) -> c_int;"
    ));
    assert!(rust.contains("pub const CHASH_E_BAD_ADDRESS: c_int = -1;"));
    assert!(rust.contains("pub const CHASH_NO_NODE: u32 = 4294967295;"));
    assert!(rust.contains("pub const CHASH_MESSAGE_SIZE: usize = 512;"));
}

fn refusal(header: &str) -> String {
    ffi_gen::generate(header).expect_err("a header the generator should refuse")
}

const PROTOTYPE: &str = "extern \"C\" {\nCHASH_C_API int chash_f(void) CHASH_C_NOEXCEPT;\n";

#[test]
fn what_it_cannot_read_stops_the_build() {
    let float_field = format!("typedef struct chash_s {{ float x; }} chash_s;\n{PROTOTYPE}");
    assert!(refusal(&float_field).contains("unmapped C type 'float'"), "{}", refusal(&float_field));
    let pointer_param = "extern \"C\" {\nCHASH_C_API int chash_f(long *x) CHASH_C_NOEXCEPT;\n";
    assert!(refusal(pointer_param).contains("chash_f: unmapped C type 'long'"));
    let expression = format!("#define CHASH_X (1u << 3)\n{PROTOTYPE}");
    assert!(refusal(&expression).contains("CHASH_X"), "{}", refusal(&expression));
    let unterminated = "extern \"C\" {\nCHASH_C_API int chash_f(void);\n";
    assert!(refusal(unterminated).contains("CHASH_C_NOEXCEPT"));
    let other_name = format!("typedef struct chash_s {{ int x; }} chash_t;\n{PROTOTYPE}");
    assert!(refusal(&other_name).contains("names differ"));
    let array_length = format!("typedef struct chash_s {{ char x[N]; }} chash_s;\n{PROTOTYPE}");
    assert!(refusal(&array_length).contains("array length 'N'"));
    assert!(refusal("/* no API */").contains("extern"));
}
