#!/usr/bin/env python3
"""Questions the real HAProxy (Debian 12: haproxy 2.6.12) about `hash-type consistent`.

For a fleet (servers file) and keys it writes a haproxy.cfg in a private temporary
directory, starts `haproxy -db` on 127.0.0.1 under `timeout`, sends every key as one
HTTP/1.1 request (keep-alive, pipelined) and reads the chosen server's name from the
response header that `http-response set-header X-Server %[srv_name]` adds. Every
server points at one loopback responder in the same haproxy (`http-request return`):
with HAProxy 2.6's `hash-key id` the addresses take no part in the ring, so the ADDR of
the servers file is only a label that names the server in the answers.

Servers file: `ADDR WEIGHT [id=N] [name=NAME]` (WEIGHT 0..256; without id HAProxy
numbers the server itself; NAME defaults to sINDEX, 1-based).

    python3 tests/oracles/haproxy_oracle.py --servers S --keys K \
        [--balance uri|uri-whole|hdr] [--function default|sdbm|djb2|wt6|crc32] [--avalanche]
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import OracleError  # noqa: E402

DESCRIPTION = "key -> server answers of the real haproxy (hash-type consistent)"
PROGRAM = "haproxy"
HEADER = "X-Key"

BALANCES = ("uri", "uri-whole", "hdr")
FUNCTIONS = ("default", "sdbm", "djb2", "wt6", "crc32")


def add_options(p):
    p.add_argument("--balance", choices=BALANCES, default="uri",
                   help="uri: the request-target up to '?'; uri-whole: all of it; "
                        "hdr: the first comma-separated value of header X-Key")
    p.add_argument("--function", choices=FUNCTIONS, default="default",
                   help="default: `hash-type consistent` alone (sdbm + avalanche)")
    p.add_argument("--avalanche", action="store_true")


def options_from_args(args):
    return {"balance": args.balance, "function": args.function, "avalanche": args.avalanche}


def provenance():
    return common.provenance("haproxy", "haproxy", "Debian 12", __file__)


NAME_RE = re.compile(r"^[A-Za-z0-9_.:-]+$")


def server_names(servers):
    names = common.server_names(servers, "server", "s", NAME_RE,
                                "characters haproxy takes: [A-Za-z0-9_.:-]")
    for s in servers:
        unknown = set(s.attrs) - {"id", "name"}
        if unknown:
            raise OracleError(f"{s.addr}: unknown attribute(s) {sorted(unknown)}")
        w = int(s.weight)
        if not 0 <= w <= 256:
            raise OracleError(f"{s.addr}: weight {w} is outside 0..256")
    return names


def config(servers, names, o, port, responder_port):
    if o["function"] == "default":
        if o["avalanche"]:
            raise OracleError("--avalanche needs an explicit --function")
        hash_type = "hash-type consistent"
    else:
        hash_type = f"hash-type consistent {o['function']}" + (" avalanche" if o["avalanche"] else "")
    balance = {"uri": "balance uri", "uri-whole": "balance uri whole",
               "hdr": f"balance hdr({HEADER})"}[o["balance"]]
    lines = [
        "global",
        "    nbthread 1",
        "    maxconn 512",
        "defaults",
        "    mode http",
        # Without it haproxy 2.6 answers 400 to '#' and to bytes >= 0x80 in a URI.
        "    option accept-invalid-http-request",
        "    timeout connect 5s",
        "    timeout client 60s",
        "    timeout server 60s",
        "frontend fe",
        f"    bind 127.0.0.1:{port}",
        "    default_backend be",
        "backend be",
        f"    {balance}",
        f"    {hash_type}",
        "    http-response set-header X-Server %[srv_name]",
    ]
    for s, name in zip(servers, names):
        line = f"    server {name} 127.0.0.1:{responder_port} weight {int(s.weight)}"
        if "id" in s.attrs:
            line += f" id {int(s.attrs['id'])}"
        lines.append(line)
    lines += [
        "listen responder",
        f"    bind 127.0.0.1:{responder_port}",
        "    http-request return status 200",
    ]
    return "\n".join(lines) + "\n"


def request(key, o):
    if o["balance"] == "hdr":
        return b"GET / HTTP/1.1\r\nHost: oracle\r\n" + HEADER.encode() + b": " + key + b"\r\n\r\n"
    return b"GET " + key + b" HTTP/1.1\r\nHost: oracle\r\n\r\n"


def check_key(key, o):
    if o["balance"] == "hdr":
        if any(b in (0, 10, 13) for b in key) or key != key.strip(b" \t") or b"," in key:
            raise OracleError(f"header key {key!r}: no NUL/CR/LF, comma or edge blanks")
        if not key:
            raise OracleError("an empty header value makes haproxy fall back to round robin")
    else:
        if not key.startswith(b"/") or any(b <= 0x20 for b in key):
            raise OracleError(f"URI key {key!r}: must start with '/' and hold no byte <= 0x20")


def run(servers, keys, o, seconds=120, keep=False):
    names = server_names(servers)
    for k in keys:
        check_key(k, o)
    by_name = {n: s.addr for s, n in zip(servers, names)}
    if not any(int(s.weight) > 0 for s in servers):
        raise OracleError("every server has weight 0")
    with common.WorkDir(keep) as tmp:
        cfg = os.path.join(tmp, "haproxy.cfg")

        def start(ports):
            with open(cfg, "w") as f:
                f.write(config(servers, names, o, *ports))
            return common.Process(["haproxy", "-db", "-f", cfg], tmp, seconds + 10, "haproxy.log")

        # the frontend's port, the responder's
        proc, (port, _) = common.start_on_free_ports(2, start, "cannot bind")
        try:
            got = common.http_exchange(port, [request(k, o) for k in keys], "X-Server", seconds)
        finally:
            proc.stop()
    return common.addrs_by_name(keys, got, by_name, "server")


# ---------------------------------------------------------------- random cases

URI_ALPHABET = bytes(b for b in common.PRINTABLE)
HDR_ALPHABET = bytes(b for b in common.PRINTABLE if b != ord(","))


def random_keys(rng, n, o):
    if o["balance"] == "hdr":
        def make(r):
            k = common.random_key(r, HDR_ALPHABET, 200, high=True, spaces=True)
            return k.strip(b" ")
    else:
        def make(r):
            k = common.random_key(r, URI_ALPHABET, 300, high=True, prefix=b"/")
            if r.random() < 0.15:
                k = k.split(b"?")[0][:40] + b"?" + common.random_key(r, URI_ALPHABET, 40)
            return k
    return common.unique_keys(rng, n, make)


def random_fleet(rng, n):
    addrs = common.loopback_addrs(rng, n)
    style = rng.choice(["ones", "mixed", "wide", "zeros"])
    weights = []
    for _ in range(n):
        if style == "ones":
            weights.append(1)
        elif style == "mixed":
            weights.append(rng.randint(1, 16))
        elif style == "wide":
            weights.append(rng.randint(1, 256))
        else:
            weights.append(rng.choice([0, 1, 1, 2, 5, 100, 256]))
    if not any(weights):
        weights[rng.randrange(n)] = 1
    id_style = rng.choice(["none", "all", "some"])
    used = set()
    servers = []
    for i, (a, w) in enumerate(zip(addrs, weights), 1):
        attrs = {}
        if id_style == "all" or (id_style == "some" and rng.random() < 0.4):
            while True:
                sid = rng.choice([rng.randint(1, 2 * n + 5), rng.randint(1, 1000000)])
                if sid not in used:
                    break
            used.add(sid)
            attrs["id"] = str(sid)
        if rng.random() < 0.2:
            attrs["name"] = f"web-{i}-{rng.randint(0, 999)}"
        servers.append(common.Server(a, w, attrs))
    return servers


def random_options(rng):
    f = rng.choice(FUNCTIONS)
    return {"balance": rng.choice(BALANCES), "function": f,
            "avalanche": f != "default" and rng.random() < 0.5}


def random_fleet_and_keys(rng, n, n_keys, o):
    return random_fleet(rng, n), random_keys(rng, n_keys, o), o


if __name__ == "__main__":
    sys.exit(common.main(sys.modules[__name__]))
