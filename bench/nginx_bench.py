#!/usr/bin/env python3
"""Stock `hash $arg_k consistent;` against `chash $arg_k;` in Debian's real
nginx, on one upstream of N servers x weight W (default 2,048 x 100: 32.8M
points):

  nginx -t          wall time and peak RSS of `nginx -t` (parse + ring build)
  start, reload     wall time until the new configuration answers (reload:
                    SIGHUP to the master, what `nginx -s reload` sends after
                    parsing the configuration itself)
  memory            RSS and PSS of the master and of each worker after start
                    (/proc/PID/smaps_rollup): the ring is built in the master
                    and shared copy-on-write by the workers
  requests          wrk (Debian's) with a random key a request through the
                    upstream to a local backend (nginx itself, listening on the
                    N server ports of 127.0.0.1): requests/s, latency, and the
                    workers' CPU time a request (/proc/PID/stat), which is where
                    the balancer's cost shows

    bench/nginx_bench.py --module PATH [--servers 2048] [--weights 100,625]
                         [--seconds 10] [--workers 2] [--out FILE.json]

Not a CI test: it needs minutes and GBs (weight 625 is 204.8M points).
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "nginx"))
import harness  # noqa: E402
from harness import Nginx, Server, Upstream  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cpu_folder  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")


def smaps(pid):
    out = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            m = re.match(r"(\w+):\s+(\d+) kB", line)
            if m:
                out[m.group(1)] = int(m.group(2)) * 1024
    return out


def children(pid):
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == pid:
            kids.append(int(d))
    return kids


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def nginx_master(ngx):
    """The nginx master's PID (the harness's child may be `unshare`, which
    execs nginx in place, so it is the child itself)."""
    return ngx.proc.pid


def rss_pss(pid):
    return {k: smaps(pid)[k] for k in ("Rss", "Pss")}


def uptime():
    """`uptime`: the machine's load average, recorded before and after."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def chash_notice(err):
    """The chash module's notice in nginx's output, without its file:line."""
    notice = re.search(r"chash upstream .*", err)
    return notice.group(0).split(" in /")[0] if notice else None


def start_measured(ngx, result):
    """Starts nginx (start_s: until it answers), then records the RSS and
    PSS of the master and of each worker: (master, workers)."""
    t0 = time.monotonic()
    ngx.start(timeout=1800)
    result["start_s"] = time.monotonic() - t0
    time.sleep(1)
    master = nginx_master(ngx)
    workers = children(master)
    result["master"] = rss_pss(master)
    result["workers"] = [rss_pss(w) for w in workers]
    return master, workers


def backend_ports(n):
    """The n server ports of the upstream, from 12000 (below the ephemeral
    range): each must be free, the backend listens on them all."""
    ports = list(range(12000, 12000 + n))
    for p in ports:
        if not harness.refuses("127.0.0.1", p):
            raise SystemExit("127.0.0.1:%d is in use; the backend needs it" % p)
    return ports


def arg_parser(module_help, repeat):
    """The options of both balancer benchmarks (HTTP, stream)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--module", required=True, help=module_help)
    ap.add_argument("--servers", type=int, default=2048)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=repeat)
    ap.add_argument("--out", help="write the results as JSON here (and .txt beside); a bare "
                    "name goes into bench/results/<this CPU>/")
    return ap


def write_results(out, doc, text):
    """doc as JSON into out, text into the .txt beside it."""
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    with open(os.path.splitext(out)[0] + ".txt", "w") as f:
        f.write(text)


def timed_nginx_t(ngx):
    """Wall seconds and peak RSS (bytes) of `nginx -t`."""
    start = time.monotonic()
    p = subprocess.Popen(ngx.command("-t"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - start
    err = p.stderr.read().decode()
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError("nginx -t failed: " + err[-2000:])
    return wall, usage.ru_maxrss * 1024, err


def backend_block(ports):
    listens = "\n".join("        listen 127.0.0.1:%d;" % p for p in ports)
    return """    }
    server {
%s
        access_log off;
        location / { return 200 "ok"; }
""" % listens


def run_wrk(port, path, seconds, connections, script_dir):
    script = os.path.join(script_dir, "keys.lua")
    with open(script, "w") as f:
        f.write('math.randomseed(20261130)\n'
                'request = function()\n'
                '  return wrk.format("GET", "%s?k=" .. math.random(1, 2000000000))\n'
                'end\n' % path)
    out = subprocess.run(["wrk", "-t1", "-c%d" % connections, "-d%ds" % seconds,
                          "--latency", "-s", script, "http://127.0.0.1:%d" % port],
                         capture_output=True, text=True, timeout=seconds + 60)
    text = out.stdout
    m = re.search(r"(\d+) requests in", text)
    rps = re.search(r"Requests/sec:\s+([\d.]+)", text)
    lat = {q: re.search(r"\s%s%%\s+([\d.]+)(us|ms|s)" % q, text) for q in ("50", "99")}

    def us(mm):
        if not mm:
            return None
        v = float(mm.group(1))
        return v * {"us": 1, "ms": 1e3, "s": 1e6}[mm.group(2)]

    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    return {"requests": int(m.group(1)) if m else 0,
            "rps": float(rps.group(1)) if rps else 0.0,
            "p50_us": us(lat["50"]), "p99_us": us(lat["99"]),
            "non_2xx": int(non2xx.group(1)) if non2xx else 0,
            "raw": text}


def bench_one(args, balancer, weight, ports):
    servers = [Server("127.0.0.1:%d" % p, weight) for p in ports]
    up = Upstream("bench", balancer, servers)
    ngx = Nginx(module=args.module, workers=args.workers, error_level="notice",
                worker_connections=8192)
    result = {"balancer": balancer, "servers": len(servers), "weight": weight,
              "points_generated": len(servers) * weight * 160}
    try:
        # the backend: nginx itself on every server port of the upstream
        ngx.write_conf([up], tries=1, http_extra=backend_block(ports))
        ts = []
        for _ in range(args.repeat):
            wall, rss, err = timed_nginx_t(ngx)
            ts.append(wall)
        result["nginx_t_s"] = ts
        result["nginx_t_peak_rss"] = rss
        result["chash_notice"] = chash_notice(err)
        master, workers = start_measured(ngx, result)

        # every request must reach the backend through the upstream
        body = ngx.get("/u/bench?k=check")
        if body != "ok":
            raise RuntimeError("the backend did not answer through the upstream: %r" % body)

        rel = []
        for _ in range(args.repeat):
            # the same upstream, a new generation number: a full new cycle
            ngx.write_conf([up], tries=1, http_extra=backend_block(ports))
            t0 = time.monotonic()
            ngx.reload(timeout=1800, sighup=True)
            rel.append(time.monotonic() - t0)
        result["reload_s"] = rel
        time.sleep(1)
        workers = children(master)
        result["workers_after_reload"] = [rss_pss(w) for w in workers]

        ngx.close_conn()
        runs = []
        for _ in range(args.repeat):
            cpu0 = sum(cpu_seconds(w) for w in workers)
            w = run_wrk(ngx.port, "/u/bench", args.seconds, args.connections, ngx.prefix)
            cpu1 = sum(cpu_seconds(w2) for w2 in workers)
            w["worker_cpu_us_per_request"] = (cpu1 - cpu0) * 1e6 / max(1, w["requests"])
            del w["raw"]
            runs.append(w)
        result["wrk"] = runs
    finally:
        ngx.cleanup()
    return result


def interleaved_wrk(args, weight, ports):
    """Both upstreams in one nginx, wrk runs alternating between them: the
    same process, the same machine load, interleaved in time."""
    servers = [Server("127.0.0.1:%d" % p, weight) for p in ports]
    ups = [Upstream("bench_hash", "hash $arg_k consistent", servers),
           Upstream("bench_chash", "chash $arg_k", servers)]
    ngx = Nginx(module=args.module, workers=args.workers, worker_connections=8192)
    runs = {u.name: [] for u in ups}
    try:
        ngx.write_conf(ups, tries=1, http_extra=backend_block(ports))
        ngx.start(timeout=3600)
        workers = children(ngx.proc.pid)
        for u in ups:
            if ngx.get("/u/%s?k=check" % u.name) != "ok":
                raise RuntimeError("no answer through " + u.name)
        ngx.close_conn()
        for _ in range(args.repeat):
            for u in ups:
                cpu0 = sum(cpu_seconds(w) for w in workers)
                w = run_wrk(ngx.port, "/u/" + u.name, args.seconds, args.connections, ngx.prefix)
                cpu1 = sum(cpu_seconds(w2) for w2 in workers)
                w["worker_cpu_us_per_request"] = (cpu1 - cpu0) * 1e6 / max(1, w["requests"])
                del w["raw"]
                runs[u.name].append(w)
    finally:
        ngx.cleanup()
    return {"weight": weight, "servers": len(servers), "runs": runs}


def interleaved_summary(r):
    lines = ["interleaved in one nginx, %d servers x weight %d, wrk runs alternating:" %
             (r["servers"], r["weight"])]
    for name, runs in r["runs"].items():
        lines.append("  %-12s %s req/s, worker CPU %s us a request, p50 %s us" % (
            name, " / ".join(format(round(w["rps"]), ",") for w in runs),
            " / ".join("%.1f" % w["worker_cpu_us_per_request"] for w in runs),
            " / ".join("%.0f" % w["p50_us"] for w in runs)))
    return "\n".join(lines)


def fmt_bytes(n):
    return "%.1f MiB" % (n / 2**20)


def summary(results):
    lines = []
    for r in results:
        med = statistics.median
        wrk = r["wrk"]
        lines.append("%s, %d servers x weight %d (%s points generated):" % (
            r["balancer"], r["servers"], r["weight"], format(r["points_generated"], ",")))
        lines.append("  nginx -t          %.2f s (median of %d: %s), peak RSS %s" % (
            med(r["nginx_t_s"]), len(r["nginx_t_s"]),
            ", ".join("%.2f" % t for t in r["nginx_t_s"]), fmt_bytes(r["nginx_t_peak_rss"])))
        lines.append("  start             %.2f s" % r["start_s"])
        lines.append("  reload            %.2f s (median of %d: %s)" % (
            med(r["reload_s"]), len(r["reload_s"]), ", ".join("%.2f" % t for t in r["reload_s"])))
        lines.append("  master            RSS %s, PSS %s" % (fmt_bytes(r["master"]["Rss"]),
                                                         fmt_bytes(r["master"]["Pss"])))
        for i, w in enumerate(r["workers"]):
            lines.append("  worker %d          RSS %s, PSS %s" % (i, fmt_bytes(w["Rss"]),
                                                               fmt_bytes(w["Pss"])))
        lines.append("  requests          %s req/s, p50 %s us, p99 %s us, worker CPU %.1f us a request"
                     " (median of %d runs; non-2xx %d)" % (
                         format(round(med([w["rps"] for w in wrk])), ","),
                         "%.0f" % med([w["p50_us"] for w in wrk]),
                         "%.0f" % med([w["p99_us"] for w in wrk]),
                         med([w["worker_cpu_us_per_request"] for w in wrk]), len(wrk),
                         sum(w["non_2xx"] for w in wrk)))
        if r.get("chash_notice"):
            lines.append("  error log         " + r["chash_notice"].split("] ", 1)[-1])
    return "\n".join(lines)


def main():
    ap = arg_parser(None, repeat=3)
    ap.add_argument("--weights", default="100")
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--only-chash", action="store_true",
                    help="skip the stock hash upstream (weight 625 takes it long)")
    ap.add_argument("--interleaved", action="store_true",
                    help="only the requests: both upstreams in one nginx, wrk alternating")
    args = ap.parse_args()
    args.out = cpu_folder.out_path(args.out)
    cpu = {"cpu": cpu_folder.describe().get("model name", "?"), "cpu_folder": cpu_folder.slug()}

    ports = backend_ports(args.servers)
    if args.interleaved:
        r = interleaved_wrk(args, int(args.weights.split(",")[0]), ports)
        text = interleaved_summary(r)
        print(text)
        if args.out:
            write_results(args.out, {"command": " ".join(sys.argv), **cpu, "result": r},
                          "$ %s\n# CPU: %s (%s)\n\n%s\n" % (" ".join(sys.argv), cpu["cpu"],
                                                          cpu["cpu_folder"], text))
        return
    results = []
    for weight in [int(w) for w in args.weights.split(",")]:
        balancers = ("hash $arg_k consistent", "chash $arg_k")
        if args.only_chash:
            balancers = balancers[1:]
        for balancer in balancers:
            print("== %s, weight %d" % (balancer, weight), file=sys.stderr, flush=True)
            results.append(bench_one(args, balancer, weight, ports))
            print(summary(results[-1:]), flush=True)
    meta = {"command": " ".join(sys.argv), "machine": platform.machine(),
            "cpus": os.cpu_count(), **cpu, "kernel": platform.release(),
            "nginx": subprocess.run(["/usr/sbin/nginx", "-v"], capture_output=True,
                                    text=True).stderr.strip(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if args.out:
        write_results(args.out, {"meta": meta, "results": results},
                      "$ %s\n# %s\n\n%s\n" % (meta["command"], json.dumps(meta), summary(results)))


if __name__ == "__main__":
    main()
