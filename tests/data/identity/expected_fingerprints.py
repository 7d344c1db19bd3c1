#!/usr/bin/env python3
"""An independent implementation of the fingerprint serializations of
include/chash/identity.h (version 1), written from that specification with
Python's hashlib and zlib, sharing no code with chash. It prints the values
that tests/identity_test.cc hard-codes. Run from the repository root:

    python3 tests/data/identity/expected_fingerprints.py
"""
import hashlib
import ipaddress
import struct
import zlib

DATA = "tests/data"


def u16(v): return struct.pack("<H", v)
def u32(v): return struct.pack("<I", v)


def nginx_split(text):
    """tests/reference/COMPATIBILITY.md §2: unix: prefix, else digits after the last ':'."""
    if text[:5].lower() == "unix:":
        return text[5:], ""
    i = len(text)
    while i > 0 and text[i - 1].isdigit():
        i -= 1
    if i > 0 and text[i - 1] == ":":
        return text[:i - 1], text[i:]
    return text, ""


def chain(host, port, count):
    base = zlib.crc32((host + "\0" + port).encode())
    prev, out = 0, []
    for _ in range(count):
        prev = zlib.crc32(u32(prev), base)
        out.append(prev)
    return out


def socket_key(host, port):
    """Rust SocketAddr order: IPv4 before IPv6, then address bytes, port."""
    ip = ipaddress.ip_address(host)
    return (4 if ip.version == 4 else 6, ip.packed, port)


class Ring:
    """nodes: list of (host, port, weight, order_key or None) in config order."""

    def __init__(self, flavor, multiple, nodes, address_order):
        self.flavor, self.multiple, self.nodes = flavor, multiple, nodes
        self.address_order = address_order
        ids = [i for i, n in enumerate(nodes) if n[2] > 0]
        if address_order:
            ids.sort(key=lambda i: nodes[i][3])
        self.canonical = ids
        rank = list(range(len(nodes)))
        if address_order:
            for r, i in enumerate(sorted(range(len(nodes)), key=lambda i: nodes[i][3])):
                rank[i] = r
        points = []
        for i, (host, port, weight, _) in enumerate(nodes):
            points += [(h, rank[i], i) for h in chain(host, port, weight * multiple)]
        points.sort()
        self.kept, self.losers = [], []
        for p in points:
            if self.kept and self.kept[-1][0] == p[0]:
                if p != prev:
                    self.losers.append(p)
            else:
                self.kept.append(p)
            prev = p

    def identity_bytes(self):
        out = b"chash-ring" + u16(1) + bytes([1, self.flavor, 1 if self.address_order else 0])
        out += u32(self.multiple) + u32(len(self.canonical))
        for i in self.canonical:
            host, port, weight, _ = self.nodes[i]
            hashed = (host + "\0" + port).encode()
            out += u32(weight) + u32(len(hashed)) + hashed
        return out

    def points_bytes(self):
        number = {i: n for n, i in enumerate(self.canonical)}
        out = b"chash-points" + u16(1) + u32(len(self.kept))
        for h, _, i in self.kept:
            out += u32(h) + u32(number[i])
        out += u32(len(self.losers))
        for h, _, i in self.losers:
            out += u32(h) + u32(number[i])
        return out


def sha(b): return hashlib.sha256(b).hexdigest()


def read_servers(path):
    out = []
    for line in open(path):
        line = line.split("#")[0].split()
        if line:
            out.append((line[0], int(line[1]) if len(line) > 1 else 1))
    return out


def nginx_ring(servers):
    return Ring(0, 160, [nginx_split(a) + (w, None) for a, w in servers], False)


def pingora_ring(path, flavor, multiple):
    shown = {}
    for row in open(f"{DATA}/pingora/hash_strings_50srv.csv").read().splitlines()[1:]:
        addr, host, port = row.split(",")[:3]
        shown[addr] = (host, port)
    nodes = []
    for addr, weight in read_servers(path):
        host, port = shown[addr]
        nodes.append((host, port, weight, socket_key(host, int(port))))
    return Ring(flavor, multiple, nodes, flavor == 2)


def backend_bytes(identities):
    items = sorted((i.encode(), w) for i, w in identities if w > 0)
    out = b"chash-backends" + u16(1) + u32(len(items))
    for ident, w in items:
        out += u32(len(ident)) + ident + u32(w)
    return out


INLINE = [("10.0.0.1:443", 3), ("[::1]:7777", 1), ("127.0.0.2", 2),
          ("unix:/run/app.sock", 1), ("10.0.0.9:80", 0)]

inline = nginx_ring(INLINE)
print("inline nginx identity bytes", inline.identity_bytes().hex())
print("inline nginx fingerprint   ", sha(inline.identity_bytes()))
print("inline nginx points digest ", sha(inline.points_bytes()))
print("inline backends            ", sha(backend_bytes(
    [("10.0.0.1:443", 3), ("[::1]:7777", 1), ("127.0.0.2", 2), ("unix:/run/app.sock", 1)])))

a = nginx_ring(read_servers(f"{DATA}/nginx/a.servers"))
print("nginx a losers             ", len(a.losers))
print("nginx a fingerprint        ", sha(a.identity_bytes()))
print("nginx a points digest      ", sha(a.points_bytes()))

v2 = pingora_ring(f"{DATA}/pingora/servers_50.txt", 2, 160)
print("v2 m160 50srv losers       ", len(v2.losers))
print("v2 m160 50srv fingerprint  ", sha(v2.identity_bytes()))
print("v2 m160 50srv points digest", sha(v2.points_bytes()))

five = read_servers(f"{DATA}/pingora/servers_5.txt")
print("servers_5 backends         ", sha(backend_bytes(five)))

# Raw: points (hash, node), tie ranks; N = 0 then the routing.
raw_points = [(100, 2), (100, 0), (300, 0), (100, 1), (200, 3), (300, 0)]
raw_rank = [2, 0, 1, 3]
ordered = sorted((h, raw_rank[n], n) for h, n in raw_points)
kept, losers, prev = [], [], None
for p in ordered:
    if kept and kept[-1][0] == p[0]:
        if p != prev:
            losers.append(p)
    else:
        kept.append(p)
    prev = p
raw = b"chash-ring" + u16(1) + bytes([1, 3, 2]) + u32(0) + u32(0) + u32(len(kept))
raw += b"".join(u32(h) + u32(n) for h, _, n in kept) + u32(len(losers))
raw += b"".join(u32(h) + u32(n) for h, _, n in losers)
print("raw fingerprint            ", sha(raw))
