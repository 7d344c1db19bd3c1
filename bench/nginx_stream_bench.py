#!/usr/bin/env python3
"""Stock stream `hash $remote_addr consistent;` against `chash $remote_addr;`
in Debian's real nginx and libnginx-mod-stream, on one stream upstream of N
servers x weight W (default 2,048 x 100: 32.8M points):

  nginx -t          wall time and peak RSS of `nginx -t` (parse + ring build)
  start, reload     wall time until the new configuration answers (reload:
                    SIGHUP to the master)
  memory            RSS and PSS of the master and of each worker after start
                    (/proc/PID/smaps_rollup)
  connections       short TCP connections from a client of our own (threads,
                    each connection from a random 127.x.y.z source address,
                    so the key varies): through the upstream to a local
                    backend (a stream `return` server of the same nginx on
                    the N server ports), connections/s and the workers' CPU
                    time a connection (/proc/PID/stat)

    bench/nginx_stream_bench.py --module STREAM_SO [--servers 2048] [--weight 100]
                                [--seconds 10] [--workers 2] [--out FILE.json]

Not a CI test: stock nginx needs minutes and a GB per ring at weight 100.
"""

import json
import os
import platform
import random
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "nginx"))
sys.path.insert(0, HERE)
import harness  # noqa: E402
from harness import Server  # noqa: E402
import nginx_bench as nb  # noqa: E402  (smaps, children, cpu_seconds, timed_nginx_t)
import stream_harness as sh  # noqa: E402
import cpu_folder  # noqa: E402
from stream_harness import StreamNginx, StreamUpstream  # noqa: E402


def backend_block(ports):
    listens = "\n".join("        listen 127.0.0.1:%d;" % p for p in ports)
    return "    server {\n%s\n        access_log off;\n        return \"ok\";\n    }" % listens


def load(port, seconds, threads):
    """Short TCP connections for `seconds`: (connections, failures)."""
    stop = time.monotonic() + seconds
    counts = [0] * threads
    fails = [0] * threads

    def run(t):
        rng = random.Random(t)
        while time.monotonic() < stop:
            src = harness.v4_text(rng, first=1)
            try:
                _, data = sh.tcp_session(src, port, timeout=10)
                if data == b"ok":
                    counts[t] += 1
                else:
                    fails[t] += 1
            except OSError:
                fails[t] += 1

    ts = [threading.Thread(target=run, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(timeout=seconds + 60)
    return sum(counts), sum(fails)


def write_conf(ngx, upstreams, ports):
    """The upstreams and the backend on the server ports, without an access
    log: under load the balancer's cost, not the log's."""
    ngx.write_text(ngx.stream_conf_text(upstreams, tries=1, stream_extra=backend_block(ports),
                                        log_ring=False).replace(
        "    access_log %s/logs/access.log s;" % ngx.prefix, "    access_log off;"))


def bench_one(args, balancer, ports):
    servers = [Server("127.0.0.1:%d" % p, args.weight) for p in ports]
    up = StreamUpstream("bench", balancer, servers, [sh.listen_port()])
    ngx = StreamNginx(stream_module=args.module, workers=args.workers)
    result = {"balancer": balancer, "servers": len(servers), "weight": args.weight,
              "points_generated": len(servers) * args.weight * 160}
    try:
        write_conf(ngx, [up], ports)
        wall, rss, err = nb.timed_nginx_t(ngx)
        result["nginx_t_s"] = wall
        result["nginx_t_peak_rss"] = rss
        result["chash_notice"] = nb.chash_notice(err)
        master, workers = nb.start_measured(ngx, result)

        _, data = sh.tcp_session("127.0.0.2", up.ports[0])
        if data != b"ok":
            raise RuntimeError("the backend did not answer through the upstream: %r" % data)

        # the same configuration, a new generation: a full new cycle
        write_conf(ngx, [up], ports)
        t0 = time.monotonic()
        ngx.reload(timeout=1800)
        result["reload_s"] = time.monotonic() - t0
        time.sleep(2)
        workers = nb.children(master)

        runs = []
        for _ in range(args.repeat):
            cpu0 = sum(nb.cpu_seconds(w) for w in workers)
            t0 = time.monotonic()
            n, fails = load(up.ports[0], args.seconds, args.threads)
            elapsed = time.monotonic() - t0
            cpu1 = sum(nb.cpu_seconds(w) for w in workers)
            runs.append({"connections": n, "failures": fails, "per_s": n / elapsed,
                         "worker_cpu_us_per_connection": (cpu1 - cpu0) * 1e6 / max(1, n)})
        result["load"] = runs
    finally:
        ngx.cleanup()
    return result


def interleaved(args, ports):
    """Both upstreams in one nginx, load runs alternating between them: the
    same workers, the same machine load, interleaved in time."""
    servers = [Server("127.0.0.1:%d" % p, args.weight) for p in ports]
    ups = [StreamUpstream("bench_chash", "chash $remote_addr", servers, [sh.listen_port()]),
           StreamUpstream("bench_hash", "hash $remote_addr consistent", servers,
                          [sh.listen_port()])]
    ngx = StreamNginx(stream_module=args.module, workers=args.workers)
    runs = {u.balancer: [] for u in ups}
    try:
        write_conf(ngx, ups, ports)
        ngx.start(timeout=1800)
        time.sleep(1)
        workers = nb.children(ngx.proc.pid)
        for u in ups:
            _, data = sh.tcp_session("127.0.0.2", u.ports[0])
            if data != b"ok":
                raise RuntimeError("%s: no answer through the upstream: %r" % (u.name, data))
        for _ in range(args.repeat):
            for u in ups:
                cpu0 = sum(nb.cpu_seconds(w) for w in workers)
                t0 = time.monotonic()
                n, fails = load(u.ports[0], args.seconds, args.threads)
                elapsed = time.monotonic() - t0
                cpu1 = sum(nb.cpu_seconds(w) for w in workers)
                runs[u.balancer].append({
                    "connections": n, "failures": fails, "per_s": n / elapsed,
                    "worker_cpu_us_per_connection": (cpu1 - cpu0) * 1e6 / max(1, n)})
    finally:
        ngx.cleanup()
    return runs


def interleaved_summary(runs, meta):
    import statistics
    lines = ["# CPU: %s; load before: %s" % (meta["cpu"], meta["uptime_before"]),
             "# load after: %s" % meta["uptime_after"],
             "both upstreams in one nginx, load runs alternating (chash, hash, chash, ...):"]
    med = {}
    for bal, rs in runs.items():
        med[bal] = statistics.median(r["worker_cpu_us_per_connection"] for r in rs)
        lines.append("  %-30s worker CPU a connection %s us (median %.1f); %s connections/s" % (
            bal, ", ".join("%.1f" % r["worker_cpu_us_per_connection"] for r in rs), med[bal],
            ", ".join(format(round(r["per_s"]), ",") for r in rs)))
    c, h = med["chash $remote_addr"], med["hash $remote_addr consistent"]
    lines.append("  ratio hash / chash (worker CPU a connection, medians): %.2f" % (h / c))
    return "\n".join(lines)


def summary(results, meta):
    fb = nb.fmt_bytes
    lines = ["# CPU: %s; load before: %s" % (meta["cpu"], meta["uptime_before"]),
             "# load after: %s" % meta["uptime_after"]]
    for r in results:
        lines.append("%s, %d servers x weight %d (%s points generated):" % (
            r["balancer"], r["servers"], r["weight"], format(r["points_generated"], ",")))
        lines.append("  nginx -t          %.2f s, peak RSS %s" % (r["nginx_t_s"],
                                                               fb(r["nginx_t_peak_rss"])))
        lines.append("  start             %.2f s" % r["start_s"])
        lines.append("  reload            %.2f s" % r["reload_s"])
        lines.append("  master            RSS %s, PSS %s" % (fb(r["master"]["Rss"]),
                                                         fb(r["master"]["Pss"])))
        for i, w in enumerate(r["workers"]):
            lines.append("  worker %d          RSS %s, PSS %s" % (i, fb(w["Rss"]), fb(w["Pss"])))
        for run in r["load"]:
            lines.append("  connections       %s/s, worker CPU %.1f us a connection (%d "
                         "connections, %d failed)" % (format(round(run["per_s"]), ","),
                                                      run["worker_cpu_us_per_connection"],
                                                      run["connections"], run["failures"]))
        if r.get("chash_notice"):
            lines.append("  error log         " + r["chash_notice"].split("] ", 1)[-1])
    return "\n".join(lines)


def main():
    ap = nb.arg_parser("ngx_stream_upstream_chash_module.so", repeat=2)
    ap.add_argument("--weight", type=int, default=100)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--interleaved", action="store_true",
                    help="only the connections: both upstreams in one nginx, runs alternating")
    args = ap.parse_args()
    args.out = cpu_folder.out_path(args.out)

    ports = nb.backend_ports(args.servers)
    cpu = next((line.split(":", 1)[1].strip() for line in
                subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines()
                if line.startswith("Model name")), "?")
    meta = {"command": " ".join(sys.argv), "machine": platform.machine(),
            "cpus": os.cpu_count(), "cpu": cpu, "cpu_folder": cpu_folder.slug(),
            "kernel": platform.release(), "uptime_before": nb.uptime(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.interleaved:
        doc = {"runs": interleaved(args, ports)}
    else:
        doc = {"results": []}
        for balancer in ("chash $remote_addr", "hash $remote_addr consistent"):
            print("== " + balancer, file=sys.stderr, flush=True)
            doc["results"].append(bench_one(args, balancer, ports))
    meta["uptime_after"] = nb.uptime()
    text = (interleaved_summary(doc["runs"], meta) if args.interleaved
            else summary(doc["results"], meta))
    print(text)
    if args.out:
        nb.write_results(args.out, {"meta": meta, **doc},
                         "$ %s\n# %s\n%s\n" % (meta["command"], json.dumps(meta), text))


if __name__ == "__main__":
    main()
