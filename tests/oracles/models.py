"""Independent pure-Python models of the rings the oracles question.

A test helper, not chash's implementation: each model is written from the algorithm
as described in /work/shared/notes/other-rings.md and tests/oracles/README.md (the
programs' behaviour in words), and check_models.py compares it with the answers
recorded from the real programs. Where two independent implementations (this one and
chash's engine) agree with the real program on the golden data and on fresh random
cases, the engine has a second oracle that needs no running program.

Every model takes the same servers (common.Server list) and options dict as its
oracle driver, and returns one ADDR per key.
"""

import hashlib
import struct
import zlib
from bisect import bisect_left

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF


def f32(x):
    """Rounds a Python float to IEEE single precision (C's float)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def sbyte(b):
    """A C `char` (signed on x86-64) widened to uint32: bytes >= 0x80 sign-extend."""
    return (b - 256) & M32 if b >= 0x80 else b


def rotl32(x, r):
    return ((x << r) | (x >> (32 - r))) & M32


# ============================================================== HAProxy 2.6


def haproxy_full_hash(a):
    a &= M32
    a = (a + 0x7ed55d16 + (a << 12)) & M32
    a = (a ^ 0xc761c23c ^ (a >> 19)) & M32
    a = (a + 0x165667b1 + (a << 5)) & M32
    a = ((a + 0xd3a2646c) ^ (a << 9)) & M32
    a = (a + 0xfd7046c5 + (a << 3)) & M32
    a = (a ^ 0xb55a4f09 ^ (a >> 16)) & M32
    return (a * 3221225473) & M32


def haproxy_sdbm(data):
    h = 0
    for c in data:
        h = (c + (h << 6) + (h << 16) - h) & M32
    return h


def haproxy_djb2(data):
    h = 5381
    for c in data:
        h = ((h << 5) + h + c) & M32
    return h


def haproxy_wt6(data):
    h0, h1, step0, step1 = 0xa53c965a, 0x5ca6953a, 6, 18
    for c in data:
        h0 = ~(h0 ^ c) & M32
        h1 = ~(h1 + c) & M32
        t = ((h1 << step0) | (h1 >> (32 - step0))) & M32
        h1 = ((h0 << step1) | (h0 >> (32 - step1))) & M32
        h0 = t
        t = ((h0 >> 16) ^ h1) & 0xffff
        step0 = t & 0x1f
        step1 = t >> 11
    return h0 ^ h1


def haproxy_crc32(data):
    return zlib.crc32(data) & M32


HAPROXY_FUNCTIONS = {"sdbm": haproxy_sdbm, "djb2": haproxy_djb2, "wt6": haproxy_wt6,
                     "crc32": haproxy_crc32}


def haproxy_ids(servers):
    """HAProxy 2.6 server ids: explicit `id`, else the first unused id at or above a
    counter that starts at 1 and goes up by one after every server."""
    used = {int(s.attrs["id"]) for s in servers if "id" in s.attrs}
    ids = []
    next_id = 1
    for s in servers:
        if "id" in s.attrs:
            ids.append(int(s.attrs["id"]))
        else:
            while next_id in used:
                next_id += 1
            used.add(next_id)
            ids.append(next_id)
        next_id += 1
    return ids


def haproxy_ring(servers):
    """Sorted (key, server index) nodes: weight*16 nodes full_hash(id*4096 + j)."""
    nodes = []
    for index, (s, puid) in enumerate(zip(servers, haproxy_ids(servers))):
        for j in range(int(s.weight) * 16):
            nodes.append((haproxy_full_hash(puid * 4096 + j), index))
    nodes.sort()  # keys cannot collide: full_hash is a bijection
    return nodes


def haproxy_key_bytes(key, balance):
    if balance == "uri":
        return key.split(b"?", 1)[0]
    if balance == "uri-whole":
        return key
    if balance == "hdr":
        return key.split(b",", 1)[0].strip(b" \t")
    raise ValueError(balance)


def haproxy_key_hash(key, o):
    data = haproxy_key_bytes(key, o["balance"])
    if o["function"] == "default":
        return haproxy_full_hash(haproxy_sdbm(data))
    h = HAPROXY_FUNCTIONS[o["function"]](data)
    return haproxy_full_hash(h) if o["avalanche"] else h


def haproxy_lookup(nodes, keys_only, h):
    """The nearest node either side; an exact tie goes to the previous node."""
    i = bisect_left(keys_only, h)
    nxt = i if i < len(nodes) else 0
    prv = nxt - 1 if nxt > 0 else len(nodes) - 1
    dp = (h - nodes[prv][0]) & M32
    dn = (nodes[nxt][0] - h) & M32
    return nodes[prv][1] if dp <= dn else nodes[nxt][1]


def haproxy_route(servers, o, keys):
    nodes = haproxy_ring(servers)
    keys_only = [k for k, _ in nodes]
    used = sum(1 for s in servers if int(s.weight) > 0)
    out = []
    for key in keys:
        h = 0 if used == 1 else haproxy_key_hash(key, o)
        out.append(servers[haproxy_lookup(nodes, keys_only, h)].addr)
    return out


# ============================================================== memcached hash functions
# (libhashkit of libmemcached 1.1 and twemproxy's hashkit share these)


def md5_u32(data, word=0):
    d = hashlib.md5(data).digest()
    return struct.unpack_from("<I", d, 4 * word)[0]


def one_at_a_time(data):
    v = 0
    for b in data:
        v = (v + sbyte(b)) & M32
        v = (v + (v << 10)) & M32
        v ^= v >> 6
    v = (v + (v << 3)) & M32
    v ^= v >> 11
    v = (v + (v << 15)) & M32
    return v


def crc32_15bit(data):
    """The memcached-family "crc": ((~crc32) >> 16) & 0x7fff, i.e. 15 bits."""
    return ((zlib.crc32(data) & M32) >> 16) & 0x7fff


def crc32_full(data):
    return zlib.crc32(data) & M32


def fnv1_64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = (h * 0x100000001b3) & M64
        h ^= sbyte(b) | (0xFFFFFFFF00000000 if b >= 0x80 else 0)
    return h & M32


def fnv1a_state32(data, basis, prime):
    """FNV-1a of the signed bytes with a 32-bit state."""
    h = basis
    for b in data:
        h ^= sbyte(b)
        h = (h * prime) & M32
    return h


def fnv1a_64(data):
    """Not a 64-bit FNV: a 32-bit state from the low halves of the 64-bit constants."""
    return fnv1a_state32(data, 0x84222325, 0x1b3)


def fnv1_32(data):
    h = 2166136261
    for b in data:
        h = (h * 16777619) & M32
        h ^= sbyte(b)
    return h


def fnv1a_32(data):
    return fnv1a_state32(data, 2166136261, 16777619)


def hsieh(data):
    n = len(data)
    if n == 0:
        return 0
    h = 0
    rem = n & 3
    i = 0
    for _ in range(n >> 2):
        h = (h + (data[i] | data[i + 1] << 8)) & M32
        tmp = (((data[i + 2] | data[i + 3] << 8) << 11) ^ h) & M32
        h = ((h << 16) ^ tmp) & M32
        i += 4
        h = (h + (h >> 11)) & M32
    if rem == 3:
        h = (h + (data[i] | data[i + 1] << 8)) & M32
        h ^= (h << 16) & M32
        h ^= (sbyte(data[i + 2]) << 18) & M32  # a signed char
        h = (h + (h >> 11)) & M32
    elif rem == 2:
        h = (h + (data[i] | data[i + 1] << 8)) & M32
        h ^= (h << 11) & M32
        h = (h + (h >> 17)) & M32
    elif rem == 1:
        h = (h + data[i]) & M32
        h ^= (h << 10) & M32
        h = (h + (h >> 1)) & M32
    h ^= (h << 3) & M32
    h = (h + (h >> 5)) & M32
    h ^= (h << 4) & M32
    h = (h + (h >> 17)) & M32
    h ^= (h << 25) & M32
    h = (h + (h >> 6)) & M32
    return h


def murmur2_memcached(data):
    m = 0x5bd1e995
    n = len(data)
    h = ((0xdeadbeef * n) & M32) ^ (n & M32)
    i = 0
    while n - i >= 4:
        k = struct.unpack_from("<I", data, i)[0]
        k = (k * m) & M32
        k ^= k >> 24
        k = (k * m) & M32
        h = (h * m) & M32
        h ^= k
        i += 4
    rest = n - i
    if rest == 3:
        h ^= data[i + 2] << 16
    if rest >= 2:
        h ^= data[i + 1] << 8
    if rest >= 1:
        h ^= data[i]
        h = (h * m) & M32
    h ^= h >> 13
    h = (h * m) & M32
    h ^= h >> 15
    return h


def murmur3_x86_32(data, seed):
    c1, c2 = 0xcc9e2d51, 0x1b873593
    h = seed & M32
    n = len(data)
    nblocks = n // 4
    for i in range(nblocks):
        k = struct.unpack_from("<I", data, 4 * i)[0]
        k = (k * c1) & M32
        k = rotl32(k, 15)
        k = (k * c2) & M32
        h ^= k
        h = rotl32(h, 13)
        h = (h * 5 + 0xe6546b64) & M32
    tail = data[4 * nblocks:]
    k = 0
    if len(tail) >= 3:
        k ^= tail[2] << 16
    if len(tail) >= 2:
        k ^= tail[1] << 8
    if len(tail) >= 1:
        k ^= tail[0]
        k = (k * c1) & M32
        k = rotl32(k, 15)
        k = (k * c2) & M32
        h ^= k
    h ^= n & M32
    h ^= h >> 16
    h = (h * 0x85ebca6b) & M32
    h ^= h >> 13
    h = (h * 0xc2b2ae35) & M32
    h ^= h >> 16
    return h


def murmur3_memcached(data):
    return murmur3_x86_32(data, (0xdeadbeef * len(data)) & M32)


def _jenkins_mix(a, b, c):
    a = (a - c) & M32; a ^= rotl32(c, 4); c = (c + b) & M32
    b = (b - a) & M32; b ^= rotl32(a, 6); a = (a + c) & M32
    c = (c - b) & M32; c ^= rotl32(b, 8); b = (b + a) & M32
    a = (a - c) & M32; a ^= rotl32(c, 16); c = (c + b) & M32
    b = (b - a) & M32; b ^= rotl32(a, 19); a = (a + c) & M32
    c = (c - b) & M32; c ^= rotl32(b, 4); b = (b + a) & M32
    return a, b, c


def _jenkins_final(a, b, c):
    c ^= b; c = (c - rotl32(b, 14)) & M32
    a ^= c; a = (a - rotl32(c, 11)) & M32
    b ^= a; b = (b - rotl32(a, 25)) & M32
    c ^= b; c = (c - rotl32(b, 16)) & M32
    a ^= c; a = (a - rotl32(c, 4)) & M32
    b ^= a; b = (b - rotl32(a, 14)) & M32
    c ^= b; c = (c - rotl32(b, 24)) & M32
    return a, b, c


def jenkins(data):
    """Bob Jenkins' lookup3 hashlittle with initval 13 (little-endian words)."""
    n = len(data)
    a = b = c = (0xdeadbeef + n + 13) & M32
    if n == 0:
        return c
    i = 0
    while n - i > 12:
        w = struct.unpack_from("<III", data, i)
        a = (a + w[0]) & M32
        b = (b + w[1]) & M32
        c = (c + w[2]) & M32
        a, b, c = _jenkins_mix(a, b, c)
        i += 12
    tail = data[i:] + b"\0" * 12
    w = struct.unpack_from("<III", tail, 0)
    a = (a + w[0]) & M32
    b = (b + w[1]) & M32
    c = (c + w[2]) & M32
    a, b, c = _jenkins_final(a, b, c)
    return c


def _crc16_xmodem_table():
    table = []
    for i in range(256):
        c = i << 8
        for _ in range(8):
            c = ((c << 1) ^ 0x1021) & 0xFFFF if c & 0x8000 else (c << 1) & 0xFFFF
        table.append(c)
    return table


CRC16_TABLE = _crc16_xmodem_table()


def crc16_twemproxy(data):
    """twemproxy 0.5.0's "crc16": the CRC-16/XMODEM table update in a 32-bit state
    that is never masked to 16 bits, crc = (crc << 8) ^ T[((crc >> 8) ^ b) & 0xff],
    so after two bytes the value grows past 16 bits and keeps 32."""
    crc = 0
    for b in data:
        crc = ((crc << 8) ^ CRC16_TABLE[((crc >> 8) ^ b) & 0xff]) & M32
    return crc


MEMCACHED_HASHES = {
    "one_at_a_time": one_at_a_time, "default": one_at_a_time, "md5": md5_u32,
    "crc": crc32_15bit, "crc32": crc32_15bit, "crc32a": crc32_full, "crc16": crc16_twemproxy,
    "fnv1_64": fnv1_64, "fnv1a_64": fnv1a_64, "fnv1_32": fnv1_32, "fnv1a_32": fnv1a_32,
    "hsieh": hsieh, "murmur": murmur2_memcached, "jenkins": jenkins,
    "murmur3": murmur3_memcached,
}


def ketama_lower_bound(points, h):
    """The first point >= h; past the last point, point 0 (wrap)."""
    i = bisect_left(points, (h, -1))
    return points[i if i < len(points) else 0][1]


# ============================================================== libmemcached 1.1


def libmemcached_continuum(servers, mode, hash_name):
    """(value, server index) points as update_continuum() builds them.

    mode: weighted | ketama | spy. A server added with weight > 1 switches on the
    weighted continuum in every consistent mode (server_add())."""
    weighted = mode == "weighted" or any(int(s.weight) > 1 for s in servers)
    keyhash = MEMCACHED_HASHES[hash_name]
    total = sum(int(s.weight) for s in servers)
    live = len(servers)
    points = []
    for index, s in enumerate(servers):
        host, port = s.host_port()
        if weighted:
            pct = f32(f32(int(s.weight)) / f32(total))
            x = f32(f32(f32(pct * f32(160.0)) / f32(4.0)) * f32(float(live)))
            x = f32(x + f32(1e-10))
            per_server = int(x // 1) * 4
            per_hash = 4
        else:
            per_server, per_hash = 100, 1
        for k in range(per_server // per_hash):
            if mode == "spy":
                label = f"/{host}:{port}-{k}"
            elif port == 11211:
                label = f"{host}-{k}"
            else:
                label = f"{host}:{port}-{k}"
            label = label.encode()
            if weighted:
                digest = hashlib.md5(label).digest()
                for w in range(per_hash):
                    points.append((struct.unpack_from("<I", digest, 4 * w)[0], index))
            else:
                points.append((keyhash(label), index))
    points.sort()  # ties: lower server index first (continuum_item_cmp)
    return points


def libmemcached_key_hash_name(mode, hash_name):
    if hash_name != "keep":
        return hash_name
    return "md5" if mode == "weighted" else "default"


def libmemcached_route(servers, o, keys):
    hname = libmemcached_key_hash_name(o["mode"], o["hash"])
    points = libmemcached_continuum(servers, o["mode"], hname)
    keyhash = MEMCACHED_HASHES[hname]
    out = []
    for key in keys:
        h = 0 if len(servers) == 1 else keyhash(key)
        out.append(servers[ketama_lower_bound(points, h)].addr)
    return out


# ============================================================== twemproxy 0.5


def twemproxy_name(s):
    if "name" in s.attrs:
        return s.attrs["name"]
    host, port = s.host_port()
    return host if port == 11211 else f"{host}:{port}"


def twemproxy_continuum(servers):
    total = sum(int(s.weight) for s in servers)
    live = len(servers)
    points = []
    for index, s in enumerate(servers):
        pct = f32(f32(int(s.weight)) / f32(total))
        x = f32(f32(f32(pct * f32(160.0)) / f32(4.0)) * f32(float(live)))
        x = f32(x + 1e-10)  # a double added, then cast back to float
        per_server = int(x // 1) * 4
        name = twemproxy_name(s).encode()
        for k in range(per_server // 4):
            digest = hashlib.md5(name + b"-" + str(k).encode()).digest()
            for w in range(4):
                points.append((struct.unpack_from("<I", digest, 4 * w)[0], index))
    # qsort by value only; glibc's qsort (a merge sort here) keeps insertion order on ties
    points.sort(key=lambda p: p[0])
    return points


def twemproxy_hashed_part(key, tag):
    if tag:
        start = key.find(tag[0:1])
        if start >= 0:
            end = key.find(tag[1:2], start + 1)
            if end >= 0 and end - start > 1:
                return key[start + 1:end]
    return key


def twemproxy_route(servers, o, keys):
    points = twemproxy_continuum(servers)
    keyhash = MEMCACHED_HASHES[o["hash"]]
    tag = o.get("hash_tag", "").encode()
    out = []
    for key in keys:
        if len(servers) == 1:
            out.append(servers[0].addr)
            continue
        part = twemproxy_hashed_part(key, tag)
        h = keyhash(part) if part else 0
        i = _lower_bound_value(points, h)
        out.append(servers[points[i][1]].addr)
    return out


def _lower_bound_value(points, h):
    lo, hi = 0, len(points)
    while lo < hi:
        mid = (lo + hi) // 2
        if points[mid][0] < h:
            lo = mid + 1
        else:
            hi = mid
    return lo if lo < len(points) else 0


# ============================================================== Varnish 7.1 shard


def varnish_hash32(*strings):
    """VRT_HashStrands32: SHA-256 of the concatenation, last 4 bytes little-endian."""
    d = hashlib.sha256(b"".join(strings)).digest()
    return struct.unpack_from("<I", d, 28)[0]


def varnish_replicas(weight, replicas):
    w = max(float(weight), 1.0)
    return min(int(replicas * w), M32)


def varnish_circle(servers, replicas):
    n = len(servers)
    rmax = (M32 - 1) // n
    points = []
    for index, s in enumerate(servers):
        ident = (s.attrs.get("ident") or s.attrs["name"]).encode()
        r = min(varnish_replicas(s.weight, replicas), rmax)
        for j in range(r):
            points.append((varnish_hash32(ident, str(j).encode()), index))
    points.sort(key=lambda p: p[0])
    return points


def varnish_lookup(points, key):
    """shard_lookup(): a bisection; a point equal to the key is taken, a key above
    the last point takes the LAST point (no wrap)."""
    n = len(points)
    low, high = 0, n
    while True:
        i = (high + low) // 2
        p = points[i][0]
        if p == key:
            return i
        if i == n - 1:
            return n - 1
        if p < key <= points[i + 1][0]:
            return i + 1
        if p > key:
            if i == 0:
                return 0
            high = i
        else:
            low = i


def varnish_key(key, by):
    if by == "url" or by == "key":
        return varnish_hash32(key)
    if by == "int":
        return int(key)
    raise ValueError(by)


def varnish_route(servers, o, keys):
    """alt=0: the backend of the key's point; alt=k: the k-th other distinct backend
    met walking the circle upwards from there (wrapping), as shard_next() with every
    backend healthy."""
    points = varnish_circle(servers, o["replicas"])
    alt = o.get("alt", 0)
    out = []
    for key in keys:
        idx = varnish_lookup(points, varnish_key(key, o["by"]))
        seen = []
        for step in range(len(points)):
            host = points[(idx + step) % len(points)][1]
            if host not in seen:
                seen.append(host)
                if len(seen) > alt:
                    break
        out.append(servers[seen[min(alt, len(seen) - 1)]].addr)
    return out


# ============================================================== Envoy (xxHash64, MurmurHash2-64)

P64_1, P64_2, P64_3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
P64_4, P64_5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5


def rotl64(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def _xxh64_round(acc, lane):
    acc = (acc + lane * P64_2) & M64
    acc = rotl64(acc, 31)
    return (acc * P64_1) & M64


def _xxh64_merge(acc, val):
    acc ^= _xxh64_round(0, val)
    return (acc * P64_1 + P64_4) & M64


def xxh64(data, seed=0):
    n = len(data)
    i = 0
    if n >= 32:
        v1 = (seed + P64_1 + P64_2) & M64
        v2 = (seed + P64_2) & M64
        v3 = seed & M64
        v4 = (seed - P64_1) & M64
        while n - i >= 32:
            a, b, c, d = struct.unpack_from("<QQQQ", data, i)
            v1 = _xxh64_round(v1, a)
            v2 = _xxh64_round(v2, b)
            v3 = _xxh64_round(v3, c)
            v4 = _xxh64_round(v4, d)
            i += 32
        h = (rotl64(v1, 1) + rotl64(v2, 7) + rotl64(v3, 12) + rotl64(v4, 18)) & M64
        for v in (v1, v2, v3, v4):
            h = _xxh64_merge(h, v)
    else:
        h = (seed + P64_5) & M64
    h = (h + n) & M64
    while n - i >= 8:
        k = _xxh64_round(0, struct.unpack_from("<Q", data, i)[0])
        h ^= k
        h = (rotl64(h, 27) * P64_1 + P64_4) & M64
        i += 8
    if n - i >= 4:
        h ^= (struct.unpack_from("<I", data, i)[0] * P64_1) & M64
        h = (rotl64(h, 23) * P64_2 + P64_3) & M64
        i += 4
    while i < n:
        h ^= (data[i] * P64_5) & M64
        h = (rotl64(h, 11) * P64_1) & M64
        i += 1
    h ^= h >> 33
    h = (h * P64_2) & M64
    h ^= h >> 29
    h = (h * P64_3) & M64
    h ^= h >> 32
    return h


STD_HASH_SEED = 0xc70f6907


def murmur2_64_libstdcxx(data, seed=STD_HASH_SEED):
    """libstdc++'s _Hash_bytes on 64-bit (std::hash<std::string>), as Envoy's
    MURMUR_HASH_2 ring hash function."""
    mul = 0xc6a4a7935bd1e995
    n = len(data)

    def shift_mix(v):
        return v ^ (v >> 47)

    aligned = n & ~7
    h = (seed ^ ((n * mul) & M64)) & M64
    for i in range(0, aligned, 8):
        d = (shift_mix((struct.unpack_from("<Q", data, i)[0] * mul) & M64) * mul) & M64
        h ^= d
        h = (h * mul) & M64
    if n & 7:
        d = 0
        for b in reversed(data[aligned:]):
            d = ((d << 8) + b) & M64
        h ^= d
        h = (h * mul) & M64
    h = (shift_mix(h) * mul) & M64
    return shift_mix(h)


def envoy_host_key(s, o):
    """metadata envoy.lb hash_key if set, else hostname with use_hostname_for_hashing,
    else the address string."""
    if s.attrs.get("hash_key"):
        return s.attrs["hash_key"]
    if o.get("use_hostname") and "hostname" in s.attrs:
        return s.attrs["hostname"]
    return s.addr


def envoy_normalized(servers, o):
    """(server index, normalized weight) in Envoy's order, min and max weights
    (thread_aware_lb_impl.cc normalizeWeights)."""
    lw = o.get("locality_weights")
    out = []
    if not lw:
        total = sum(int(s.weight) for s in servers)
        out = [(i, int(s.weight) * 1.0 / total) for i, s in enumerate(servers)]
    else:
        lsum = sum(lw)
        if lsum == 0:
            return [], 1.0, 0.0
        for loc, w in enumerate(lw):
            if w == 0:
                continue
            members = [i for i, s in enumerate(servers) if int(s.attrs.get("locality", 0)) == loc]
            if not members:
                continue
            nlw = w / lsum
            total = sum(int(servers[i].weight) for i in members)
            out += [(i, int(servers[i].weight) * nlw / total) for i in members]
    mn = min([1.0] + [w for _, w in out])
    mx = max([0.0] + [w for _, w in out])
    return out, mn, mx


def envoy_ring(servers, o):
    """Sorted (hash, server index) entries, plus per-server counts and the ring size."""
    import math
    norm, mn, _ = envoy_normalized(servers, o)
    if not norm:
        return [], {}, 0
    min_ring = o.get("min_ring", 1024)
    max_ring = o.get("max_ring", 8388608)
    scale = min(math.ceil(mn * min_ring) / mn, float(max_ring))
    ring_size = math.ceil(scale)
    hfun = murmur2_64_libstdcxx if o.get("hash") == "murmur2" else xxh64
    ring, counts = [], {}
    current = target = 0.0
    for index, w in norm:
        key = envoy_host_key(servers[index], o).encode()
        target += scale * w
        i = 0
        while current < target:
            ring.append((hfun(key + b"_" + str(i).encode()), index))
            i += 1
            current += 1
        counts[index] = i
    ring.sort(key=lambda e: e[0])  # std::sort: equal 64-bit hashes keep no defined order
    return ring, counts, ring_size


def envoy_ring_lookup(ring, h):
    """Ketama-style search as ring_hash_lb.cc: the first entry with hash >= h,
    past the last entry entry 0."""
    lowp, highp = 0, len(ring)
    while True:
        midp = (lowp + highp) // 2
        if midp == len(ring):
            return 0
        midval = ring[midp][0]
        midval1 = 0 if midp == 0 else ring[midp - 1][0]
        if midval1 < h <= midval:
            return midp
        if midval < h:
            lowp = midp + 1
        else:
            highp = midp - 1
        if lowp > highp:
            return 0


def envoy_ring_choose(ring, h, attempt=0):
    i = envoy_ring_lookup(ring, h)
    if attempt > 0:
        i = (i + attempt) % len(ring)
    return ring[i][1]


def envoy_maglev(servers, o):
    """The Maglev table (server index per slot) and per-server entry counts."""
    m = o.get("table_size", 65537)
    norm, _, mx = envoy_normalized(servers, o)
    if not norm:
        return [], {}
    # sorted by (key string, host pointer, weight): the pointer orders equal keys in a
    # way no model can reproduce; equal key strings are refused here
    entries = sorted(((envoy_host_key(servers[i], o), i, w) for i, w in norm),
                     key=lambda e: e[0])
    keys = [e[0] for e in entries]
    if len(set(keys)) != len(keys):
        raise ValueError("two hosts share a hash key: Envoy orders them by pointer")
    build = []
    for key, index, w in entries:
        kb = key.encode()
        build.append({"index": index, "offset": xxh64(kb) % m,
                      "skip": xxh64(kb, 1) % (m - 1) + 1, "weight": w,
                      "target": 0.0, "next": 0, "count": 0})
    # Envoy walks the entries once per iteration (1, 2, ...) and lets an entry place
    # one slot when iteration * weight >= its target (then target += max weight).
    # Replayed here with a heap of (next iteration the entry is eligible, entry
    # order): the same picks in the same order without visiting idle entries.
    import heapq
    import math

    def eligible_from(e, after):
        if e["target"] <= 0:
            return after
        k = max(after, int(math.ceil(e["target"] / e["weight"])))
        while k > after and (k - 1) * e["weight"] >= e["target"]:
            k -= 1
        while k * e["weight"] < e["target"]:
            k += 1
        return k

    table = [None] * m
    filled = 0
    heap = [(1, order) for order in range(len(build))]
    while filled < m:
        iteration, order = heapq.heappop(heap)
        e = build[order]
        e["target"] += mx
        c = (e["offset"] + e["skip"] * e["next"]) % m
        while table[c] is not None:
            e["next"] += 1
            c = (e["offset"] + e["skip"] * e["next"]) % m
        table[c] = e["index"]
        e["next"] += 1
        e["count"] += 1
        filled += 1
        heapq.heappush(heap, (eligible_from(e, iteration + 1), order))
    return table, {e["index"]: e["count"] for e in build}


def envoy_maglev_choose(table, h, attempt=0):
    if attempt > 0:
        h ^= (M64 - attempt + 1) & M64
    return table[h % len(table)]
