#!/usr/bin/env python3
"""A swap of a large signed snapshot in Debian's real nginx (issue 31's
measurements): one copy a host, the other workers adopt its sealed
copy (each verifying it: SECURITY.md).

  convergence   from the rename of a new version to every worker serving it
                (chash_status, polled every 5 ms)
  CPU           the CPU seconds (user + system, every thread) all workers
                spend on one swap, against one `chash verify` of the file
                (goal: at most 1.5x, whatever the worker count); `chash
                verify` also recomputes the points digest, so the swap is
                also set against one load of the file by libchash with the
                module's options (a sealed copy, the signature, every check
                but the points digest), in a process of its own
                (chash_snapshot_verify through libchash.so)
  memory        each worker's RSS, PSS, private, anonymous (its own heap)
                and shared bytes, and its share of the sealed copy
                (Pss_Shmem), from /proc/PID/smaps_rollup, after start and
                after the swaps; the master's
  refusals      a 4 GiB sparse file and an unsigned copy of the ring renamed
                over a second upstream's path (poll=10ms): from the rename to
                every worker's refusal, and the workers' CPU for it (goal:
                under 50 ms, whatever the size). The rename itself is timed
                apart: ext4 writes back a freshly written file that a rename
                replaces another with (auto_da_alloc), which takes the
                renaming process half a second for 1.23 GB here; the times
                are from the rename's return

    bench/nginx_reload_bench.py --module PATH --chash-cli PATH
        [--servers 2048] [--weight 625] [--flavor pingora-v1]
        [--workers 2,4] [--swaps 3] [--libchash build/libchash.so]
        [--out FILE.json]

Not a CI test (at 2,048 x 625 the file is 1.23 GB). The result records the
CPU model and the load average: compare figures within one run.
"""

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests",
                                "nginx"))
from harness import Nginx, Upstream  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nginx_bench import children, cpu_seconds, nginx_master, smaps, uptime  # noqa: E402
from nginx_snapshot_bench import arg_parser, machine, status  # noqa: E402

# One load of a file by libchash with the module's options (a sealed copy,
# a trusted key, every check but the points digest): argv libchash.so,
# the file, the public key.
LIBLOAD = r"""
import ctypes, sys
lib = ctypes.CDLL(sys.argv[1])
class Opt(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("mode", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("threads", ctypes.c_uint32),
                ("min_config_version", ctypes.c_uint64), ("max_file_bytes", ctypes.c_uint64),
                ("trusted_keys", ctypes.c_void_p), ("n_trusted_keys", ctypes.c_size_t)]
key = (ctypes.c_uint8 * 32)()
assert lib.chash_public_key_read(sys.argv[3].encode(), key) == 0
o = Opt()
o.size = ctypes.sizeof(Opt)
o.trusted_keys = ctypes.cast(key, ctypes.c_void_p)
o.n_trusted_keys = 1
sys.exit(lib.chash_snapshot_verify(sys.argv[2].encode(), ctypes.byref(o)) != 0)
"""


def run_timed(cmd):
    """(wall seconds, CPU seconds of the child, exit status)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, r.returncode, r.stderr.strip()


def build(args, sfile, out, version, key=None):
    cmd = [args.chash_cli, "build", "--servers", sfile, "--flavor", args.flavor,
           "--config-version", str(version), "--out", out]
    if key:
        cmd += ["--sign", key]
    wall, _, rc, err = run_timed(cmd)
    if rc != 0:
        raise RuntimeError(err)
    return wall


def memory(pid):
    s = smaps(pid)
    mib = 1 << 20
    return {"rss_mib": round(s.get("Rss", 0) / mib, 1), "pss_mib": round(s.get("Pss", 0) / mib, 1),
            "private_mib": round((s.get("Private_Clean", 0) + s.get("Private_Dirty", 0)) / mib, 1),
            # private memory of its own (heap, stacks): Private also counts
            # the pages of the shared sealed copy no other process touched
            "anonymous_mib": round(s.get("Anonymous", 0) / mib, 1),
            "shared_mib": round((s.get("Shared_Clean", 0) + s.get("Shared_Dirty", 0)) / mib, 1),
            "pss_shmem_mib": round(s.get("Pss_Shmem", 0) / mib, 1)}


def refusals(ngx, workers, pattern, since):
    n = ngx.error_log()[since:].count(pattern)
    return n >= workers


def timed_rename(tmp, path, pids, done, limit, poll):
    """Renames tmp over path, then polls done() until it holds (at most limit
    seconds): (each pid's CPU seconds before the rename, the seconds the
    rename took, the seconds from its return until done(), or None)."""
    cpu0 = {p: cpu_seconds(p) for p in pids}
    r0 = time.monotonic()
    os.rename(tmp, path)
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if done():
            return cpu0, t0 - r0, time.monotonic() - t0
        time.sleep(poll)
    return cpu0, t0 - r0, None


def run_workers(args, nworkers, files, small, pub, work):
    ngx = Nginx(module=args.module, workers=nworkers, keep=args.keep)
    live = os.path.join(work, "live.chash")
    bad = os.path.join(work, "refuse.chash")
    shutil.copyfile(files[1], live)
    shutil.copyfile(small, bad)
    ups = [Upstream("bench", "chash $arg_k", [], extra=(
               "chash_snapshot %s trusted_key=%s poll=200ms thread_pool=chash;" % (live, pub))),
           Upstream("refuse", "chash $arg_k", [], extra=(
               "chash_snapshot %s trusted_key=%s poll=10ms thread_pool=chash;" % (bad, pub)))]
    out = {"workers": nworkers}
    try:
        ngx.write_conf(ups, http_extra="        location = /chash-status { chash_status; }",
                       main_extra="thread_pool chash threads=1;")
        start = time.monotonic()
        ngx.start(timeout=600)
        out["start_seconds"] = round(time.monotonic() - start, 2)
        master = nginx_master(ngx)
        pids = sorted(children(master))
        out["memory_after_start"] = {"master": memory(master),
                                     "workers": [memory(p) for p in pids]}
        swaps = []
        for version in sorted(v for v in files if isinstance(v, int))[1:]:
            tmp = live + ".new"
            shutil.copyfile(files[version], tmp)
            time.sleep(1.0)   # the copy's page cache settles

            def serving(version=version):
                w = status(ngx.port)["workers"]
                return len(w) == nworkers and all(x["config_version"] == version for x in w)

            cpu0, renamed, took = timed_rename(tmp, live, pids, serving, 300, 0.005)
            time.sleep(1.5)   # the old ring's release on the pool
            per = {p: cpu_seconds(p) - cpu0[p] for p in pids}
            lines = [ln for ln in ngx.error_log().splitlines()
                     if "serving config version %d (ring" % version in ln]
            adopted = sum(1 for ln in lines if "verified by another process" in ln)
            verifier = [int(ln.split("] ", 1)[1].split("#")[0]) for ln in lines
                        if "verified by another process" not in ln]
            swaps.append({"version": version, "rename_s": round(renamed, 3),
                          "renamed_to_all_serving_s": round(took, 3) if took else None,
                          "workers_cpu_s": round(sum(per.values()), 3),
                          "verifier_cpu_s": [round(per[p], 3) for p in verifier if p in per],
                          "adopters_cpu_s": [round(c, 3) for p, c in per.items()
                                             if p not in verifier],
                          "verified_by": len(lines) - adopted, "adopted_by": adopted})
        out["swaps"] = swaps
        out["memory_after_swaps"] = {"master": memory(master),
                                     "workers": [memory(p) for p in pids]}
        refused = []
        for label, source in (("4 GiB sparse", files["sparse"]),
                              ("unsigned, same size as the ring", files["unsigned"])):
            tmp = bad + ".new"
            if label.startswith("4 GiB"):
                shutil.copyfile(small, tmp)
                os.truncate(tmp, 4 << 30)
            else:
                shutil.copyfile(source, tmp)
            time.sleep(1.0)
            since = len(ngx.error_log())
            cpu0, renamed, took = timed_rename(
                tmp, bad, pids,
                lambda: refusals(ngx, nworkers, 'upstream "refuse": refused', since), 60, 0.002)
            cpu = sum(cpu_seconds(p) - cpu0[p] for p in pids)
            line = [ln for ln in ngx.error_log()[since:].splitlines()
                    if 'upstream "refuse": refused' in ln][-1:]
            refused.append({"file": label, "bytes": os.path.getsize(bad),
                            "rename_s": round(renamed, 4),
                            "renamed_to_all_refused_s": round(took, 4) if took else None,
                            "poll_ms": 10, "workers_cpu_s": round(cpu, 3),
                            "check": line[0].split("check ")[1].split(":")[0] if line else None})
        out["refusals"] = refused
    finally:
        ngx.stop(timeout=120)
        if not args.keep:
            ngx.cleanup()
    return out


def main():
    ap = arg_parser(weight=625)
    ap.add_argument("--flavor", default="pingora-v1")
    ap.add_argument("--workers", default="2,4")
    ap.add_argument("--swaps", type=int, default=3)
    ap.add_argument("--libchash", default=os.path.join(os.path.dirname(os.path.abspath(
        __file__)), "..", "build", "libchash.so"))
    ap.add_argument("--out")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.module = os.path.abspath(args.module)
    args.chash_cli = os.path.abspath(args.chash_cli)
    work = tempfile.mkdtemp(prefix="chash-reload-bench-")
    result = {"machine": machine(), "command": " ".join(sys.argv),
              "servers": args.servers, "weight": args.weight, "flavor": args.flavor}
    try:
        key = os.path.join(work, "key")
        subprocess.run([args.chash_cli, "keygen", "--out", key], check=True,
                       capture_output=True)
        pub = key + ".pub"
        sfile = os.path.join(work, "servers")
        with open(sfile, "w") as f:
            for i in range(args.servers):
                f.write("10.%d.%d.%d:8080 %d\n" % (i // 62500, i // 250 % 250, i % 250 + 1,
                                                    args.weight))
        small = os.path.join(work, "small.servers")
        with open(small, "w") as f:
            f.write("10.9.9.1:8080 1\n10.9.9.2:8080 1\n")
        files = {}
        builds = []
        for v in range(1, args.swaps + 2):
            files[v] = os.path.join(work, "v%d.chash" % v)
            builds.append(build(args, sfile, files[v], v, key))
        files["unsigned"] = os.path.join(work, "unsigned.chash")
        builds.append(build(args, sfile, files["unsigned"], 99))
        files["sparse"] = None
        small_file = os.path.join(work, "small.chash")
        build(args, small, small_file, 1, key)
        result["file_bytes"] = os.path.getsize(files[1])
        result["build_seconds"] = [round(b, 1) for b in builds]
        verify = []
        loads = []
        for _ in range(3):
            wall, cpu, rc, err = run_timed([args.chash_cli, "verify", files[2], "--trusted-key",
                                            pub])
            if rc != 0:
                raise RuntimeError(err)
            verify.append({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)})
            wall, cpu, rc, err = run_timed([sys.executable, "-c", LIBLOAD,
                                            os.path.abspath(args.libchash), files[2], pub])
            if rc != 0:
                raise RuntimeError(err)
            loads.append({"wall_s": round(wall, 3), "cpu_s": round(cpu, 3)})
        result["chash_verify"] = verify
        result["libchash_sealed_load"] = loads
        result["runs"] = []
        for n in [int(x) for x in args.workers.split(",")]:
            run = run_workers(args, n, {k: v for k, v in files.items()}, small_file, pub, work)
            best_verify = min(x["cpu_s"] for x in verify)
            best_load = min(x["cpu_s"] for x in loads)
            for s in run["swaps"]:
                s["cpu_over_verify"] = round(s["workers_cpu_s"] / best_verify, 2)
                s["cpu_over_libchash_load"] = round(s["workers_cpu_s"] / best_load, 2)
            result["runs"].append(run)
            print(json.dumps(run, indent=1), flush=True)
        result["uptime_after"] = uptime()
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    text = json.dumps(result, indent=1)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
