#!/usr/bin/env python3
"""Questions the real Varnish (Debian 12: varnish 7.1.1) about the shard director.

It writes a VCL in a private temporary directory: one backend per server (declared,
never contacted: no probe, and every request ends in `synth`), a
`directors.shard()` with `add_backend(NAME[, ident=...][, weight=...])` in file order
and `reconfigure(replicas=R)`. `vcl_recv` stores the chosen backend's name in a
request header and returns `synth(200)`, whose response carries it back. varnishd
runs in the foreground (-F) on 127.0.0.1 with no CLI port (-T none), under `timeout`,
and every key goes as one HTTP/1.1 request (keep-alive, pipelined).

Servers file: `HOST:PORT WEIGHT [name=NAME] [ident=IDENT]` (HOST:PORT becomes the
backend's .host/.port; NAME is the VCL backend name, default bINDEX, 1-based; the
ring hashes IDENT, default NAME; WEIGHT a REAL >= 1, e.g. 2.5).

    python3 tests/oracles/varnish_oracle.py --servers S --keys K \
        [--by url|key|int] [--replicas 67] [--alt 0]
  url: the key is the request-target, hashed as req.url (by=URL)
  key: the key is a string, sent in header X-Key, by=KEY key=vd.key(req.http.X-Key)
  int: the key is a decimal 0..4294967295, by=KEY key=std.integer(req.http.X-Key)
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import OracleError  # noqa: E402

DESCRIPTION = "key -> backend answers of the real varnishd (shard director)"
PROGRAM = "varnish"
BYS = ("url", "key", "int")
NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,40}$")
IDENT_RE = re.compile(r"^[!#-\[\]-~]{1,60}$")  # printable ASCII but space, '"' and '\'


def add_options(p):
    p.add_argument("--by", choices=BYS, default="url")
    p.add_argument("--replicas", type=int, default=67)
    p.add_argument("--alt", type=int, default=0, help="the alt-th alternative backend")


def options_from_args(args):
    if args.replicas < 1:
        raise SystemExit("--replicas must be >= 1")
    return {"by": args.by, "replicas": args.replicas, "alt": args.alt}


def provenance():
    return common.provenance("varnishd", "varnish", "Debian 12, vmod_directors shard", __file__)


def names_of(servers):
    names = common.server_names(servers, "backend", "b", NAME_RE,
                                "a VCL identifier [A-Za-z][A-Za-z0-9_]*")
    for s in servers:
        if "ident" in s.attrs and not IDENT_RE.match(s.attrs["ident"]):
            raise OracleError(f"ident '{s.attrs['ident']}': printable ASCII, no space, quote or \\")
        if set(s.attrs) - {"name", "ident"}:
            raise OracleError(f"{s.addr}: unknown attribute(s)")
        if float(s.weight) < 1:
            raise OracleError(f"{s.addr}: weight must be >= 1 (varnish raises lower ones to 1)")
        s.host_port()
    idents = [s.attrs.get("ident", n) for s, n in zip(servers, names)]
    if len(set(idents)) != len(idents):
        raise OracleError("two backends have the same ident (varnish skips the second)")
    return names


def vcl(servers, names, o):
    lines = ["vcl 4.1;", "import directors;", "import std;", ""]
    for s, n in zip(servers, names):
        host, port = s.host_port()
        lines.append(f'backend {n} {{ .host = "{host}"; .port = "{port}"; }}')
    lines += ["", "sub vcl_init {", "    new vd = directors.shard();"]
    for s, n in zip(servers, names):
        args = [n]
        if "ident" in s.attrs:
            args.append(f'ident="{s.attrs["ident"]}"')
        if s.weight not in ("1", "1.0"):
            args.append(f"weight={float(s.weight)!r}")
        lines.append(f"    vd.add_backend({', '.join(args)});")
    lines += [f"    vd.reconfigure(replicas={o['replicas']});", "}", ""]
    alt = f", alt={o['alt']}" if o.get("alt") else ""
    if o["by"] == "url":
        pick = f"vd.backend(by=URL{alt})"
    elif o["by"] == "key":
        pick = f"vd.backend(by=KEY, key=vd.key(req.http.X-Key){alt})"
    else:
        pick = f"vd.backend(by=KEY, key=std.integer(req.http.X-Key, -1){alt})"
    lines += [
        "sub vcl_recv {",
        f"    set req.http.X-Be = {pick};",
        "    return (synth(200));",
        "}",
        "",
        "sub vcl_synth {",
        "    set resp.http.X-Be = req.http.X-Be;",
        "    return (deliver);",
        "}",
    ]
    return "\n".join(lines) + "\n"


def check_key(k, o):
    if o["by"] == "url":
        if not k.startswith(b"/") or any(b <= 0x20 or b == 0x7f for b in k):
            raise OracleError(f"URL key {k!r}: starts with '/', no byte <= 0x20 or 0x7f")
    elif o["by"] == "key":
        if not k or k != k.strip(b" \t") or any(b < 0x20 and b != 9 or b == 0x7f for b in k):
            raise OracleError(f"header key {k!r}: no control byte, no edge blank, not empty")
    else:
        if not k.isdigit() or int(k) > 0xFFFFFFFF or (len(k) > 1 and k.startswith(b"0")):
            raise OracleError(f"int key {k!r}: a decimal 0..4294967295")


def request(k, o):
    if o["by"] == "url":
        return b"GET " + k + b" HTTP/1.1\r\nHost: oracle\r\n\r\n"
    return b"GET / HTTP/1.1\r\nHost: oracle\r\nX-Key: " + k + b"\r\n\r\n"


def run(servers, keys, o, seconds=120, keep=False):
    names = names_of(servers)
    for k in keys:
        check_key(k, o)
    by_name = {n: s.addr for s, n in zip(servers, names)}
    with common.WorkDir(keep) as tmp:
        path = os.path.join(tmp, "oracle.vcl")
        with open(path, "w") as f:
            f.write(vcl(servers, names, o))

        def start(ports):
            return common.Process(
                ["varnishd", "-F", "-j", "none", "-a", f"127.0.0.1:{ports[0]}", "-T", "none",
                 "-n", os.path.join(tmp, "varnish"), "-f", path, "-s", "malloc,16m",
                 "-p", "thread_pools=1", "-p", "thread_pool_min=5",
                 "-p", "thread_pool_max=20", "-p", "http_req_hdr_len=16k",
                 "-p", "http_req_size=64k"],
                tmp, seconds + 20, "varnishd.log")

        proc, (port,) = common.start_on_free_ports(1, start, "address already in use",
                                                   seconds=60)
        try:
            got = common.http_exchange(port, [request(k, o) for k in keys], "X-Be", seconds)
        finally:
            proc.stop()
    return common.addrs_by_name(keys, got, by_name, "backend")


# ---------------------------------------------------------------- random cases

URL_ALPHABET = bytes(range(0x21, 0x7F))
KEY_ALPHABET = bytes(range(0x21, 0x7F))


def random_fleet(rng, n):
    addrs = common.loopback_addrs(rng, n, ports=(1024, 65000))
    style = rng.choice(["ones", "ones", "ints", "reals"])
    with_ident = rng.random() < 0.3
    servers = []
    for i, a in enumerate(addrs, 1):
        if style == "ones":
            w = "1"
        elif style == "ints":
            w = str(rng.randint(1, 8))
        else:
            w = repr(round(rng.uniform(1, 6), rng.choice([1, 2, 3])))
        attrs = {"name": f"be{i}"}
        if with_ident:
            attrs["ident"] = f"cache-{i:03d}.{rng.choice(['dc1', 'dc2'])}:{rng.randint(1, 65535)}"
        servers.append(common.Server(a, w, attrs))
    return servers


def random_keys(rng, n, o, servers=None):
    if o["by"] == "url":
        def make(r):
            return common.random_key(r, URL_ALPHABET, 400, high=True, prefix=b"/")
    elif o["by"] == "key":
        def make(r):
            return common.random_key(r, KEY_ALPHABET, 300, high=True, spaces=True).strip(b" ")
    else:
        def make(r):
            x = r.choice([r.randrange(2 ** 32), r.randrange(2 ** 32), 2 ** 32 - 1 - r.randrange(2 ** 20),
                          r.randrange(2 ** 20)])
            return str(x).encode()
    keys = common.unique_keys(rng, n, make)
    if o["by"] == "int" and servers is not None:
        # forge keys above the last point (varnish does not wrap) and at points
        from models import varnish_circle
        points = varnish_circle(servers, o["replicas"])
        last = points[-1][0]
        extra = {str(x).encode() for x in (last, last + 1, 2 ** 32 - 1, 0, points[0][0],
                                           points[0][0] - 1 if points[0][0] else 0)
                 if 0 <= x <= 0xFFFFFFFF}
        for p, _ in rng.sample(points, min(20, len(points))):
            extra.update(str(x).encode() for x in (p - 1, p, p + 1) if 0 <= x <= 0xFFFFFFFF)
        keys = [k for k in keys if k not in extra][:max(0, n - len(extra))] + sorted(extra)
    return keys


def random_options(rng):
    return {"by": rng.choice(BYS), "replicas": rng.choice([67, 67, 1, 10, 100, 250]),
            "alt": rng.choice([0, 0, 0, 1, 2])}


def random_fleet_and_keys(rng, n, n_keys, o):
    servers = random_fleet(rng, n)
    if o.get("alt", 0) >= len(servers):
        o = dict(o, alt=0)
    return servers, random_keys(rng, n_keys, o, servers), o


if __name__ == "__main__":
    sys.exit(common.main(sys.modules[__name__]))
