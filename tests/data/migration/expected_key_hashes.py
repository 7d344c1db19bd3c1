#!/usr/bin/env python3
"""An independent implementation of MigrationKeyHash and MigrationBucket
(include/chash/migration.h), written from that definition; prints the
vectors tests/migration_test.cc hard-codes."""
M = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix(x):
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M
    x ^= x >> 31
    return x


def key_hash(key: bytes, seed=0):
    h = mix(seed ^ ((len(key) * GOLDEN) & M))
    whole = len(key) // 8 * 8
    for i in range(0, whole, 8):
        h = mix(h ^ int.from_bytes(key[i:i + 8], "little"))
    if len(key) > whole:
        h = mix(h ^ int.from_bytes(key[whole:], "little"))
    return mix(h ^ GOLDEN)


def bucket(h):
    return ((h >> 32) * 1000000) >> 32


for key, seed in [(b"", 0), (b"a", 0), (b"abcdefgh", 0), (b"abcdefghi", 0),
                  (b"/some/url", 0), (b"/some/url", 42), (b"\x00", 0), (b"\x00" * 8, 0)]:
    h = key_hash(key, seed)
    print(f'{{"{key.decode("latin-1").encode("unicode_escape").decode()}", {seed}, '
          f'0x{h:016x}u, {bucket(h)}}},')
