#!/usr/bin/env python3
"""Snapshot upstreams in Debian's real nginx against the configuration-built
ring (issue 18, item 8), on one upstream of N servers x weight W:

  nginx -t, start, reload   wall time: `chash_snapshot FILE` against the same
                            servers as `server` lines under `chash KEY`
  memory                    RSS and PSS of the master and each worker
                            (/proc/PID/smaps_rollup): a mapped snapshot is one
                            copy in the page cache
  convergence               time from the rename of a new version to every
                            worker serving it (chash_status's workers list,
                            polled every 5 ms)
  event-loop stall          during each swap, a probe per worker connection
                            asks a static location every 2 ms; the longest
                            gap between answers (goal: under 10 ms)
  soak                      SWAPS renames, good and bad files alternating,
                            under a small load: failed requests, worker RSS
                            after 10 swaps and after all of them

    bench/nginx_snapshot_bench.py --module PATH --chash-cli PATH
        [--servers 2048] [--weight 100] [--mode nginx|pingora-v1|pingora-v2]
        [--multiple 16] [--workers 2] [--swaps 200] [--out FILE.json]

Not a CI test: at 2,048 x 625 (pingora-v1, 204.8M points) the snapshot is
1.23 GB and each load verifies all of it. Every result file records the CPU
model and the load average: compare figures only within one run.
"""

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "nginx"))
import harness  # noqa: E402
from harness import Nginx, Server, Upstream  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nginx_bench import children, nginx_master, smaps, uptime  # noqa: E402
import cpu_folder  # noqa: E402

STATUS = "        location = /chash-status { chash_status; }\n" \
         "        location = /probe { return 200 ok; }"


def machine():
    model = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True,
                           text=True).stdout.strip()
    return {"cpu": model, "cpu_folder": cpu_folder.slug(), "uptime": uptime()}


def arg_parser(weight):
    """The options of the snapshot benchmarks: the module, the chash
    command, a fleet of --servers x --weight."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True)
    ap.add_argument("--chash-cli", required=True)
    ap.add_argument("--servers", type=int, default=2048)
    ap.add_argument("--weight", type=int, default=weight)
    return ap


def build(cli, servers_file, out, version, args, sign=None):
    cmd = [cli, "build", "--servers", servers_file, "--mode", args.mode,
           "--config-version", str(version)]
    if args.mode == "pingora-v2":
        cmd += ["--multiple", str(args.multiple)]
    if sign:
        cmd += ["--sign", sign]
    tmp = out + ".tmp"
    start = time.monotonic()
    subprocess.run(cmd + ["--out", tmp], check=True, capture_output=True)
    took = time.monotonic() - start
    return tmp, took


def timed(fn):
    start = time.monotonic()
    fn()
    return time.monotonic() - start


def worker_pids(ngx):
    master = nginx_master(ngx)
    return [p for p in children(master)] if master else []


def memory(ngx):
    master = nginx_master(ngx)
    out = {"master": smaps(master)}
    out["workers"] = [smaps(p) for p in children(master)]
    return {"master": {"rss": out["master"].get("Rss"), "pss": out["master"].get("Pss")},
            "workers": [{"rss": w.get("Rss"), "pss": w.get("Pss")} for w in out["workers"]]}


def status(port):
    """The chash_status of upstream bench."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        c.request("GET", "/chash-status")
        return json.loads(c.getresponse().read())["upstreams"]["bench"]
    finally:
        c.close()


class Probe:
    """One kept-alive connection per worker (by opening several), each asked
    /probe every 2 ms; records the longest gap between answers."""

    def __init__(self, port, conns=4):
        self.port = port
        self.stop_flag = False
        self.gaps = []
        self.threads = [threading.Thread(target=self.run, daemon=True) for _ in range(conns)]
        for t in self.threads:
            t.start()

    def run(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        last = time.monotonic()
        worst = 0.0
        deadline = time.monotonic() + 3600
        while not self.stop_flag and time.monotonic() < deadline:
            c.request("GET", "/probe")
            c.getresponse().read()
            now = time.monotonic()
            worst = max(worst, now - last)
            last = now
            time.sleep(0.002)
        self.gaps.append(worst)
        c.close()

    def stop(self):
        self.stop_flag = True
        for t in self.threads:
            t.join(timeout=60)
        return max(self.gaps) if self.gaps else None


def main():
    ap = arg_parser(weight=100)
    ap.add_argument("--mode", default="nginx")
    ap.add_argument("--multiple", type=int, default=16)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--swaps", type=int, default=200)
    ap.add_argument("--out", help="write the result as JSON here; a bare name goes into "
                    "bench/results/<this CPU>/")
    args = ap.parse_args()
    args.out = cpu_folder.out_path(args.out)
    work = tempfile.mkdtemp(prefix="chash-snapbench-")
    result = {"machine": machine(), "servers": args.servers, "weight": args.weight,
              "mode": args.mode, "workers": args.workers}
    try:
        # addresses nothing listens on (checked): every request is a refused
        # connect and a 502, whatever else runs on this machine
        servers = []
        host = 0
        while len(servers) < args.servers:
            host += 1
            addr = ("127.77.%d.%d" % (host // 250, host % 250 + 1), 10000 + host)
            if harness.refuses(*addr):
                servers.append(Server("%s:%d" % addr, args.weight))
        sfile = os.path.join(work, "servers")
        with open(sfile, "w") as f:
            f.write("".join("%s %d\n" % (s.text, s.weight) for s in servers))
        subprocess.run([args.chash_cli, "keygen", "--out", os.path.join(work, "key")],
                       check=True, capture_output=True)
        key = os.path.join(work, "key")
        path = os.path.join(work, "bench.chash")
        tmp, took = build(args.chash_cli, sfile, path, 1, args, sign=key)
        os.rename(tmp, path)
        result["snapshot_build_s"] = took
        result["snapshot_bytes"] = os.path.getsize(path)

        flavor = "" if args.mode == "nginx" else " flavor=" + args.mode
        if args.mode == "pingora-v2":
            flavor += " multiple=%d" % args.multiple
        snap = [Upstream("bench", "chash $arg_k", [], extra=(
            "chash_snapshot %s trusted_key=%s.pub poll=200ms max_fails=0;" % (path, key)))]
        lines = [Upstream("bench", "chash $arg_k" + flavor,
                          harness_servers(servers))]
        for label, ups in (("config", lines), ("snapshot", snap)):
            ngx = Nginx(module=os.path.abspath(args.module), workers=args.workers)
            try:
                ngx.write_conf(ups, tries=1, http_extra=STATUS)
                r = {"nginx_t_s": timed(ngx.test_config)}
                r["start_s"] = timed(ngx.start)
                r["memory"] = memory(ngx)
                ngx.write_conf(ups, tries=1, http_extra=STATUS)
                r["reload_s"] = timed(lambda: ngx.reload(sighup=True))
                if label == "snapshot":
                    r.update(swaps(args, ngx, sfile, path, key, work))
                result[label] = r
            finally:
                ngx.cleanup()
            print(label, json.dumps(result[label]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    return 0


def harness_servers(servers):
    return [Server(s.text, s.weight, False, "max_fails=0") for s in servers]


def swaps(args, ngx, sfile, path, key, work):
    """Convergence and event-loop stalls per swap; the soak."""
    out = {"convergence_s": [], "stall_s": [], "failed": 0, "requests": 0}
    version = 1
    bad = os.path.join(work, "bad.chash")
    load = {"stop": False, "ok": 0, "failed": 0}

    def traffic():
        i = 0
        c = None
        while not load["stop"]:
            i += 1
            try:
                if c is None:
                    c = http.client.HTTPConnection("127.0.0.1", ngx.port, timeout=30)
                c.request("GET", "/u/bench?k=%d" % i)
                c.getresponse().read()
                load["ok"] += 1
                # a 502 is the expected answer; only a broken exchange fails
            except (OSError, http.client.HTTPException) as e:
                load["failed"] += 1
                load.setdefault("errors", []).append(repr(e))
                c = None
            time.sleep(0.005)

    t = threading.Thread(target=traffic, daemon=True)
    t.start()
    # the probe's longest gap under the same load without a swap: on a
    # shared machine, what scheduling alone costs
    out["stall_baseline_s"] = []
    for _ in range(5):
        probe = Probe(ngx.port)
        time.sleep(1.0)
        out["stall_baseline_s"].append(probe.stop())
    for n in range(args.swaps):
        if n in (10, 50, 100):
            out["memory_after_%d" % n] = memory(ngx)
        good = n % 2 == 0
        version += 1
        tmp, _ = build(args.chash_cli, sfile, path, version, args,
                       sign=key if good else None)   # unsigned: refused
        probe = Probe(ngx.port)
        time.sleep(0.05)
        start = time.monotonic()
        os.rename(tmp, path if good else bad)
        if not good:
            os.rename(bad, path)
            time.sleep(0.6)
            out["stall_s"].append(probe.stop())
            version -= 1
            continue
        deadline = start + 600
        while time.monotonic() < deadline:
            workers = status(ngx.port)["workers"]
            if len(workers) >= args.workers and all(w["config_version"] == version
                                                    for w in workers):
                break
            time.sleep(0.005)
        out["convergence_s"].append(time.monotonic() - start)
        out["stall_s"].append(probe.stop())
    load["stop"] = True
    t.join(timeout=60)
    out["memory_after_all"] = memory(ngx)
    out["requests"] = load["ok"] + load["failed"]
    out["failed"] = load["failed"]
    out["status"] = status(ngx.port)["loads"]
    out["errors"] = load.get("errors", [])[:5]
    out["worker_crashes"] = ngx.error_log().count("exited on signal")
    out["uptime_after"] = machine()["uptime"]
    return out


if __name__ == "__main__":
    sys.exit(main())
