#!/usr/bin/env python3
"""Envoy's ring or Maglev table of a cluster YAML, and its answers, by an independent model.

Writes the expected answers of tests/data/envoy-cluster/edges*.yaml (edges/NAME.csv:
`hash,host`), which tests/cli_test.cc compares with `chash route --envoy-cluster`. A test
helper, not chash's implementation: written in Python from Envoy's source as read for
chash's reader (the files and functions are named where each rule is applied), with
PyYAML (Debian's python3-yaml) for the YAML, Python's socket module (glibc's inet_pton
and inet_ntop, as Envoy's) for the addresses, and models.py's envoy_ring and
envoy_maglev for the ring and the table. Nothing here calls or reads chash.

    python3 tests/oracles/envoy_cluster_model.py tests/data/envoy-cluster/edges.yaml \\
        tests/data/envoy-cluster/edges-bootstrap.yaml --out tests/data/envoy-cluster/edges
    ... --check   compares with the files instead of writing them, and first checks that
                  the model answers every assertion of Envoy's own tests that
                  tests/data/envoy-cluster/{clusters,localities}.yaml hold (exit 1 on a
                  difference)

The model refuses (raises Refused) what it does not cover; the golden files hold only
clusters it answers.
"""

import argparse
import math
import os
import re
import socket
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

M64 = (1 << 64) - 1


class Refused(Exception):
    pass


# ---------------------------------------------------------------- YAML as Envoy types it
# source/common/protobuf/yaml_utility.cc parseYamlNode over yaml-cpp, then protobuf's JSON
# parser (legacy syntax on).

def yamlcpp_bool(text):
    """yaml-cpp convert<bool>: y/yes/true/on, n/no/false/off; lower, UPPER or Capitalized."""
    flexible = text.islower() and text.isalpha() or (
        text[:1].isupper() and (text[1:] == "" or text[1:].islower() or text[1:].isupper()))
    if not flexible:
        return None
    low = text.lower()
    for yes, no in (("y", "n"), ("yes", "no"), ("true", "false"), ("on", "off")):
        if low == yes:
            return True
        if low == no:
            return False
    return None


def yamlcpp_int(text):
    """yaml-cpp convert<int64_t>: an istream with no base set (0x hex, leading 0 octal)."""
    m = re.fullmatch(r"([+-]?)(0[xX][0-9a-fA-F]+|0[0-7]*|[1-9][0-9]*)\s*", text)
    if not m:
        return None
    sign, digits = m.group(1), m.group(2)
    if digits[:2] in ("0x", "0X"):
        v = int(digits[2:], 16)
    elif digits.startswith("0") and len(digits) > 1:
        v = int(digits, 8)
    else:
        v = int(digits)
    v = -v if sign == "-" else v
    return v if -(1 << 63) <= v < (1 << 63) else None


def json_of(node):
    """(kind, value): what parseYamlNode makes of a node."""
    if node is None:
        return ("absent", None)
    if isinstance(node, yaml.MappingNode):
        return ("object", node)
    if isinstance(node, yaml.SequenceNode):
        return ("array", node)
    text = node.value
    if node.style is not None or node.tag == "!":
        return ("string", text)
    if text in ("", "~", "null", "Null", "NULL"):
        return ("null", None)
    b = yamlcpp_bool(text)
    if b is not None:
        return ("bool", b)
    i = yamlcpp_int(text)
    if i is not None:
        return ("number", i) if -(1 << 31) <= i < (1 << 31) else ("string", str(i))
    return ("string", text)


def get(mapping, key):
    if not isinstance(mapping, yaml.MappingNode):
        return None
    for k, v in mapping.value:
        if k.value == key:
            return v
    return None


def field(mapping, key, kind, unset, refusal):
    """key's value if it is of kind; unset if absent or null; else Refused(key + refusal)."""
    got, v = json_of(get(mapping, key))
    if got in ("absent", "null"):
        return unset
    if got != kind:
        raise Refused(key + refusal)
    return v


def message(mapping, key):
    return field(mapping, key, "object", None, " is not a mapping")


def items(mapping, key):
    node = field(mapping, key, "array", None, " is not a sequence")
    return [] if node is None else node.value


def atob(text):
    """absl::SimpleAtob, protobuf's reading of a string given for a bool."""
    low = text.lower()
    if low in ("true", "t", "yes", "y", "1"):
        return True
    if low in ("false", "f", "no", "n", "0"):
        return False
    return None


def as_bool(mapping, key):
    kind, v = json_of(get(mapping, key))
    if kind in ("absent", "null"):
        return False
    if kind == "bool":
        return v
    if kind == "string" and atob(v) is not None:
        return atob(v)
    raise Refused(f"{key}: not a bool")


def as_uint(mapping, key, default, lo, hi):
    node = get(mapping, key)
    kind, v = json_of(node)
    if kind == "object":
        kind, v = json_of(get(v, "value"))
    if kind in ("absent", "null"):
        return default
    if kind == "number":
        n = v
    elif kind == "string" and not re.search(r"\s", v):
        if re.fullmatch(r"\+?[0-9]+", v):
            n = int(v)
        else:
            try:
                d = float(v.lstrip("+")) if not v.startswith("+-") else None
            except ValueError:
                d = None
            if d is None or not math.isfinite(d) or d != int(d) or d < 0:
                raise Refused(f"{key}: not an unsigned integer")
            n = int(d)
    else:
        raise Refused(f"{key}: not an unsigned integer")
    if not lo <= n <= hi:
        raise Refused(f"{key} {n}: out of Envoy's range")
    return n


def as_string(mapping, key):
    return field(mapping, key, "string", "", ": not a string")


def as_enum(mapping, key, names):
    kind, v = json_of(get(mapping, key))
    if kind in ("absent", "null"):
        return names[0]
    if kind == "number" and 0 <= v < len(names) and names[v]:
        return names[v]
    if kind == "string" and v in names:
        return v
    raise Refused(f"{key} {v}: not one of {names}")


# ---------------------------------------------------------------- addresses
# source/common/network/utility.cc parseInternetAddressNoThrow, address_impl.cc asString.

def envoy_address(ip, port):
    try:
        return socket.inet_ntop(socket.AF_INET, socket.inet_pton(socket.AF_INET, ip)) + f":{port}"
    except OSError:
        pass
    addr, _, scope = ip.partition("%")
    try:
        text = socket.inet_ntop(socket.AF_INET6, socket.inet_pton(socket.AF_INET6, addr))
    except OSError:
        raise Refused(f"malformed IP address: {ip}")
    if "%" in ip:
        if not scope.isdigit():
            raise Refused("a scope that is not a number")
        if int(scope):
            text += f"%{int(scope)}"
    return f"[{text}]:{port}"


# ---------------------------------------------------------------- the cluster

HEALTH = ["UNKNOWN", "HEALTHY", "UNHEALTHY", "DRAINING", "TIMEOUT", "DEGRADED"]


def locality_of(mapping):
    loc = message(mapping, "locality")
    if loc is None:
        return None
    return (as_string(loc, "region"), as_string(loc, "zone"), as_string(loc, "sub_zone"))


def host_key(lb, address, use_hostname):
    """thread_aware_lb_impl.h hashKey: a non-empty string hash_key, else the hostname with
    use_hostname_for_hashing, else the address."""
    md = message(message(message(lb, "metadata"), "filter_metadata"), "envoy.lb") \
        if message(lb, "metadata") is not None and \
        message(message(lb, "metadata"), "filter_metadata") is not None else None
    kind, v = json_of(get(md, "hash_key")) if md is not None else ("absent", None)
    if kind == "string" and v:
        return v
    if use_hostname:
        name = as_string(message(lb, "endpoint"), "hostname")
        if not name:
            raise Refused("empty hostname")
        return name
    return address


def priority_loads(prios, factor, weighted, threshold):
    """load_balancer_impl.cc: the priority of each of the 100 hash slots, and the panic
    flags. prios: per priority dict(hosts, healthy, degraded, excluded, w, hw, dw, xw)."""
    n = len(prios)
    health, degr = [0] * n, [0] * n
    for i, p in enumerate(prios):
        count = p["hosts"] - p["excluded"]
        if count > 0:
            hw, dw, tw = (p["hw"], p["dw"], p["w"] - p["xw"]) if weighted else \
                (p["healthy"], p["degraded"], count)
            health[i] = min(100, factor * hw // tw)
            degr[i] = min(100, factor * dw // tw)
    avail = min(100, sum(health) + sum(degr))
    hl, dl = [0] * n, [0] * n
    if avail > 0:
        def dist(load, av, total):
            first = -1
            for i in range(n):
                if first < 0 and av[i] > 0:
                    first = i
                load[i] = min(total, av[i] * 100 // avail)
                total -= load[i]
            return first, total
        fh, left = dist(hl, health, 100)
        fd, rest = dist(dl, degr, left)
        if rest:
            if fh != -1:
                hl[fh] += rest
            else:
                dl[fd] += rest
    panic = [False] * n
    if threshold == 0 and avail == 0:
        hl = [100] + [0] * (n - 1)
    else:
        for i, p in enumerate(prios):
            count = p["hosts"] - p["excluded"]
            hp = 100.0 * p["healthy"] / count if count else 0.0
            dp = 100.0 * p["degraded"] / count if count else 0.0
            panic[i] = False if avail == 100 else hp + dp < threshold
        if all(panic):
            total = sum(p["hosts"] for p in prios)
            hl, dl = [0] * n, [0] * n
            if total == 0:
                hl[0] = 100
            else:
                first = next(i for i, p in enumerate(prios) if p["hosts"])
                for i, p in enumerate(prios):
                    hl[i] = 100 * p["hosts"] // total
                hl[first] += 100 - sum(hl)
    chosen = set()
    for slot in range(1, 101):
        agg, pick = 0, None
        for i in range(n):
            agg += hl[i]
            if pick is None and slot <= agg:
                pick = i
        for i in range(n):
            agg += dl[i]
            if pick is None and slot <= agg:
                pick = i
        chosen.add(0 if pick is None else pick)
    return chosen, panic


class Host:
    def __init__(self, addr, key, weight, health, priority, locality):
        self.addr, self.weight, self.health = addr, weight, health
        self.priority, self.locality = priority, locality
        self.attrs = {"hash_key": key}


def read_cluster(cluster, node_locality):
    policy = as_enum(cluster, "lb_policy",
                     ["ROUND_ROBIN", "LEAST_REQUEST", "RING_HASH", "RANDOM", "", "MAGLEV"])
    o = {}
    if policy == "RING_HASH":
        cfg = message(cluster, "ring_hash_lb_config")
        o["lb"] = "ring_hash"
        o["min_ring"] = as_uint(cfg, "minimum_ring_size", 1024, 1, 8388608)
        o["max_ring"] = as_uint(cfg, "maximum_ring_size", 8388608, o["min_ring"], 8388608)
        o["hash"] = {"XX_HASH": "xx_hash", "MURMUR_HASH_2": "murmur2"}[
            as_enum(cfg, "hash_function", ["XX_HASH", "MURMUR_HASH_2"])]
    elif policy == "MAGLEV":
        o["lb"] = "maglev"
        m = as_uint(message(cluster, "maglev_lb_config"), "table_size", 65537, 2, 5000011)
        if m < 2 or any(m % d == 0 for d in range(2, int(math.isqrt(m)) + 1)):
            raise Refused("table size not prime")
        o["table_size"] = m
    else:
        raise Refused(f"lb_policy {policy}")
    common = message(cluster, "common_lb_config")
    weighted_lb = message(common, "locality_weighted_lb_config") is not None
    use_hostname = as_bool(message(common, "consistent_hashing_lb_config"),
                           "use_hostname_for_hashing")
    threshold = 50
    t = message(common, "healthy_panic_threshold")
    if t is not None:
        kind, v = json_of(get(t, "value"))
        value = float(v) if kind in ("number", "string") else 0.0
        threshold = int(100 * (value / 100.0))  # ProtobufPercentHelper::convertPercent
    load = message(cluster, "load_assignment")
    pol = message(load, "policy")
    factor = as_uint(pol, "overprovisioning_factor", 140, 1, M64)
    weighted_health = as_bool(pol, "weighted_priority_health")

    hosts, weights = [], {}
    for group in items(load, "endpoints"):
        prio = as_uint(group, "priority", 0, 0, 128)
        loc = locality_of(group)
        lw = as_uint(group, "load_balancing_weight", None, 1, (1 << 32) - 1)
        if loc is not None and lw is not None:  # upstream_impl.cc initializePriorityFor
            weights[(prio, loc)] = lw
        for lb in items(group, "lb_endpoints"):
            sa = message(message(message(lb, "endpoint"), "address"), "socket_address")
            addr = envoy_address(as_string(sa, "address"), as_uint(sa, "port_value", 0, 0, 65535))
            w = as_uint(lb, "load_balancing_weight", 1, 1, (1 << 32) - 1)
            health = as_enum(lb, "health_status", HEALTH)
            hosts.append(Host(addr, host_key(lb, addr, use_hostname), w, health, prio,
                              loc or ("", "", "")))

    def state(h, draining_excluded):
        if h.health in ("UNKNOWN", "HEALTHY"):
            return "healthy"
        if h.health == "DEGRADED":
            return "degraded"
        if h.health == "DRAINING" and draining_excluded:
            return "excluded"
        return "failed"

    n = max(h.priority for h in hosts) + 1
    outcomes = []
    for excluded in (True, False):
        prios = [dict(hosts=0, healthy=0, degraded=0, excluded=0, w=0, hw=0, dw=0, xw=0)
                 for _ in range(n)]
        for h in hosts:
            p, s = prios[h.priority], state(h, excluded)
            p["hosts"] += 1
            p["w"] += h.weight
            if s == "healthy":
                p["healthy"] += 1
                p["hw"] += h.weight
            elif s == "degraded":
                p["degraded"] += 1
                p["dw"] += h.weight
            elif s == "excluded":
                p["excluded"] += 1
                p["xw"] += h.weight
        chosen, panic = priority_loads(prios, factor, weighted_health, threshold)
        outcomes.append((sorted(chosen), panic[min(chosen)]))
    if any(h.health == "DRAINING" for h in hosts) and outcomes[0] != outcomes[1]:
        raise Refused("DRAINING decides")
    chosen, in_panic = outcomes[0]
    if len(chosen) != 1:
        raise Refused("keys split between priorities")
    prio = chosen[0]
    members = [h for h in hosts if h.priority == prio]
    ring = [h for h in members if in_panic or h.health in ("UNKNOWN", "HEALTHY")]
    if weighted_lb:
        # upstream_impl.cc updateClusterPrioritySet: localities in LocalityLess order (a
        # std::map), the local locality first; thread_aware_lb_impl.cc normalizes them.
        locs = sorted({h.locality for h in members})
        if node_locality is not None and node_locality in locs:
            locs.remove(node_locality)
            locs.insert(0, node_locality)
        servers = []
        for i, loc in enumerate(locs):
            for h in ring:
                if h.locality == loc:
                    h.attrs["locality"] = i
                    servers.append(h)
        o["locality_weights"] = [weights.get((prio, loc), 0) for loc in locs]
    else:
        servers = ring
    keys = [h.attrs["hash_key"] for h in servers]
    if len(set(keys)) != len(keys):
        raise Refused("two hosts of one key")
    return servers, o


def answers(servers, o):
    """(hash, host address) rows: for a ring every entry, entry +- 1, 0, 2^64-1 and 200
    spread hashes; for a table every entry index and 100 spread hashes."""
    rows = []
    if o["lb"] == "maglev":
        table, _ = models.envoy_maglev(servers, o)
        m = len(table)
        hashes = list(range(min(m, 400))) + [M64, M64 - 1] + \
            [i * (M64 // 100) + 12345 for i in range(100)]
        for h in hashes:
            rows.append((h, servers[models.envoy_maglev_choose(table, h)].addr))
        return rows
    ring, _, _ = models.envoy_ring(servers, o)
    hashes = {0, M64}
    for point, _ in ring[:300]:
        hashes.update({point, max(point - 1, 0), min(point + 1, M64)})
    hashes.update(i * (M64 // 200) for i in range(200))
    for h in sorted(hashes):
        rows.append((h, servers[models.envoy_ring_choose(ring, h)].addr))
    return rows


def clusters_of(path):
    with open(path, "rb") as f:
        root = yaml.compose(f)
    node = message(root, "node")
    node_locality = locality_of(node) if node is not None else None
    static = message(root, "static_resources")
    found = items(static, "clusters") if static is not None else items(root, "clusters")
    return [(as_string(c, "name"), c) for c in found], node_locality


def check_envoy_tests(data):
    """The model against Envoy's own tests' assertions (envoy/NAME.csv) on the clusters of
    clusters.yaml and localities.yaml: the number of answers, of differences."""
    compared = differ = 0
    for path in ("clusters.yaml", "localities.yaml"):
        found, node_locality = clusters_of(os.path.join(data, "envoy-cluster", path))
        for name, cluster in found:
            if name == "round_robin":
                continue
            servers, o = read_cluster(cluster, node_locality)
            gold = "ring_basic" if name == "ring_basic_failover" else name
            with open(os.path.join(data, "envoy", gold + ".csv")) as f:
                rows = [line.strip().rsplit(",", 1) for line in f
                        if line.strip() and not line.startswith("#")]
            if o["lb"] == "maglev":
                table, _ = models.envoy_maglev(servers, o)
                pick = lambda h: servers[models.envoy_maglev_choose(table, h)].addr  # noqa: E731
            else:
                ring, _, _ = models.envoy_ring(servers, o)
                pick = lambda h: servers[models.envoy_ring_choose(ring, h)].addr  # noqa: E731
            for h, addr in rows:
                compared += 1
                if pick(int(h)) != addr:
                    print(f"{path} {name}: hash {h}: model {pick(int(h))}, Envoy's test {addr}")
                    differ += 1
    return compared, differ


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("files", nargs="+")
    p.add_argument("--out", required=True)
    p.add_argument("--check", action="store_true")
    a = p.parse_args()
    differ = 0
    if a.check:
        data = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data")
        compared, wrong = check_envoy_tests(data)
        print(f"{compared} assertions of Envoy's tests, {wrong} the model does not answer")
        differ += wrong
    for path in a.files:
        found, node_locality = clusters_of(path)
        for name, cluster in found:
            servers, o = read_cluster(cluster, node_locality)
            text = f"# {os.path.basename(path)} cluster {name}: Envoy's answers by " \
                   f"tests/oracles/envoy_cluster_model.py\n# rows: request hash,host\n" + \
                "".join(f"{h},{addr}\n" for h, addr in answers(servers, o))
            target = os.path.join(a.out, name + ".csv")
            if a.check:
                with open(target) as f:
                    if f.read() != text:
                        print(f"{target}: differs from the model")
                        differ += 1
            else:
                os.makedirs(a.out, exist_ok=True)
                with open(target, "w") as f:
                    f.write(text)
    print(f"{differ} differences")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
