#!/usr/bin/env python3
"""Every row of the flavor table has what a flavor needs, on every surface.

The flavors are read from the built libchash (chash_flavor_name,
chash_flavor_property, chash_flavor_option_name), never from a list here.
For each one this checks what engine/README.md's "Adding a flavor" checklist
asks, and names every place a new row still lacks:

  works     a two-node ring of the flavor builds through the C API with its
            default options and answers a key (its point generator and key
            hasher exist); each of its options names what it takes
  C         include/chash/chash_c.h's CHASH_FLAVOR_<NAME> is its value
  reference tests/reference/ models it (Flavor::kName)
  golden    a golden test (tests/*golden*_test.cc, pingora_compat_test.cc)
            compares it with its program's recorded answers
  snapshot  a snapshot test writes and loads it (tests/*snapshot*_test.cc)
  fuzz      a fuzzer drives it (fuzz/*.cc)
  Rust      the crate names it (Flavor::Name in tools/rust/src/ring.rs) and
            a Rust test uses it (tools/rust/tests/)
  Lua       a chash.resty test uses it (tests/lua/), except where the row's
            reason says chash.resty does not serve the flavor
  nginx     an nginx test routes it (flavor=NAME in tests/nginx/)

  flavor_rows_test.py ROOT LIBCHASH.so

Exit status 1, naming each missing piece, if any row lacks one.
"""

import ctypes
import glob
import os
import re
import sys

# Rows that a surface does not serve, each with its reason.
NOT_SERVED = {
    ("Lua", "nginx"): "chash.resty routes resty rings and the other programs' (nginx's own "
                      "hash consistent serves OpenResty)",
    ("Lua", "pingora-v1"): "pingora's rings are the Rust crate's",
    ("Lua", "pingora-v2"): "pingora's rings are the Rust crate's",
}

# chash.resty's own flavor is its module's ring, built by chash.new.
LUA_NEEDLE = {"resty": "chash.new("}

PROPERTY_OTHER_PROGRAM = 6


def camel(name):
    """'envoy-maglev' -> 'EnvoyMaglev', 'pingora-v1' -> 'PingoraV1'."""
    return "".join(part[:1].upper() + part[1:] for part in name.split("-"))


def read_all(pattern):
    text = {}
    for path in sorted(glob.glob(pattern)):
        with open(path, encoding="utf-8", errors="replace") as f:
            text[path] = f.read()
    return text


def main():
    root, lib_path = sys.argv[1], sys.argv[2]
    lib = ctypes.CDLL(lib_path)
    lib.chash_flavor_name.restype = ctypes.c_char_p
    lib.chash_flavor_name.argtypes = [ctypes.c_uint32]
    lib.chash_flavor_option_name.restype = ctypes.c_char_p
    lib.chash_flavor_option_name.argtypes = [ctypes.c_uint32, ctypes.c_uint32]
    lib.chash_flavor_option_values.restype = ctypes.c_char_p
    lib.chash_flavor_option_values.argtypes = [ctypes.c_uint32, ctypes.c_uint32]
    lib.chash_flavor_property.argtypes = [ctypes.c_uint32, ctypes.c_uint32,
                                          ctypes.POINTER(ctypes.c_uint64)]
    lib.chash_builder_new_with_options.argtypes = [ctypes.c_uint32, ctypes.c_void_p,
                                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.chash_builder_add.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                      ctypes.c_uint32]
    lib.chash_builder_build.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.chash_ring_find.restype = ctypes.c_uint32
    lib.chash_ring_find.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.chash_ring_free.argtypes = [ctypes.c_void_p]
    lib.chash_last_error.restype = ctypes.c_char_p

    flavors = []
    while True:
        name = lib.chash_flavor_name(len(flavors))
        if name is None:
            break
        flavors.append(name.decode())
    missing = []
    if len(flavors) < 9:
        missing.append("the library lists %d flavors: %s" % (len(flavors), flavors))

    header = read_all(os.path.join(root, "include/chash/chash_c.h"))
    reference = read_all(os.path.join(root, "tests/reference/*.cc"))
    golden = read_all(os.path.join(root, "tests/*golden*_test.cc"))
    golden.update(read_all(os.path.join(root, "tests/pingora_compat_test.cc")))
    snapshot = read_all(os.path.join(root, "tests/*snapshot*_test.cc"))
    fuzz = read_all(os.path.join(root, "fuzz/*.cc"))
    rust_src = read_all(os.path.join(root, "tools/rust/src/ring.rs"))
    rust_tests = read_all(os.path.join(root, "tools/rust/tests/*.rs"))
    lua_tests = read_all(os.path.join(root, "tests/lua/*.lua"))
    nginx_tests = read_all(os.path.join(root, "tests/nginx/*.py"))

    def anywhere(texts, needle):
        return any(needle in t for t in texts.values())

    for value, name in enumerate(flavors):
        enum = "Flavor::k" + camel(name)
        macro = "CHASH_FLAVOR_" + name.upper().replace("-", "_")
        lacks = []

        # works: builds, answers, options say what they take.
        builder = ctypes.c_void_p()
        ring = ctypes.c_void_p()
        if lib.chash_builder_new_with_options(value, None, ctypes.byref(builder)) != 0:
            lacks.append("a builder: " + lib.chash_last_error().decode())
        else:
            ok = all(lib.chash_builder_add(builder, a, len(a), 1) == 0
                     for a in (b"10.0.0.1:80", b"10.0.0.2:80"))
            if not ok or lib.chash_builder_build(builder, ctypes.byref(ring)) != 0:
                lacks.append("a two-node ring: " + lib.chash_last_error().decode())
            else:
                if lib.chash_ring_find(ring, b"/key", 4) not in (0, 1):
                    lacks.append("an answer for a key")
                lib.chash_ring_free(ring)
        other = ctypes.c_uint64()
        if lib.chash_flavor_property(value, PROPERTY_OTHER_PROGRAM, ctypes.byref(other)) != 0:
            lacks.append("its properties")
        i = 0
        while lib.chash_flavor_option_name(value, i) is not None:
            if not lib.chash_flavor_option_values(value, i):
                lacks.append("what option %d takes" % i)
            i += 1

        if not re.search(r"#define %s %du\b" % (macro, value), "".join(header.values())):
            lacks.append("C: #define %s %du in chash_c.h" % (macro, value))
        for surface, texts, needle in (
                ("reference: tests/reference/", reference, enum),
                ("golden: a tests/*golden*_test.cc", golden, enum),
                ("snapshot: a tests/*snapshot*_test.cc", snapshot, enum),
                ("fuzz: fuzz/*.cc", fuzz, enum),
                ("Rust: the crate's variant", rust_src, "Flavor::" + camel(name) + " =>"),
                ("Rust: a tools/rust/tests/ test", rust_tests, "Flavor::" + camel(name)),
                ("Lua: a tests/lua/ test", lua_tests, LUA_NEEDLE.get(name, '"%s"' % name)),
                ("nginx: a tests/nginx/ test", nginx_tests, "flavor=" + name)):
            key = (surface.split(":")[0], name)
            if key in NOT_SERVED:
                continue
            if not anywhere(texts, needle):
                lacks.append("%s naming %s" % (surface, needle))
        if lacks:
            missing.append("%s lacks: %s" % (name, "; ".join(lacks)))
        print("%-14s %s" % (name, "complete" if not lacks else "INCOMPLETE"))

    for (surface, name), reason in NOT_SERVED.items():
        if name not in flavors:
            missing.append("NOT_SERVED names %s, which the library does not have" % name)
        print("%-14s not on %s: %s" % (name, surface, reason))
    if missing:
        print("\n".join(missing), file=sys.stderr)
        return 1
    print("ok: %d flavors, every row complete" % len(flavors))
    return 0


if __name__ == "__main__":
    sys.exit(main())
