//! The crate's flavors against the library's flavor table: every flavor the
//! library has is a `Flavor` here, named as the library names it. A flavor
//! added to the table without its Rust variant fails this test.

use chash::Flavor;

#[test]
fn every_library_flavor_is_a_rust_flavor() {
    let names = Flavor::library_names();
    assert_eq!(names.len(), 9, "{names:?}");
    for name in &names {
        let flavor = Flavor::from_name(name)
            .unwrap_or_else(|e| panic!("the library's flavor {name} has no Rust variant: {e}"));
        assert_eq!(flavor.name(), *name);
    }
    assert_eq!(names[0], "nginx");
    assert_eq!(names[8], "envoy-maglev");
}

#[test]
fn an_unknown_name_is_an_error_listing_the_names() {
    let err = Flavor::from_name("ketama").unwrap_err();
    assert_eq!(err.kind(), chash::ErrorKind::BadArgument);
    assert!(err.to_string().contains("pingora-v2"), "{err}");
}
