#!/usr/bin/env python3
"""Memory that processes routing with one ring snapshot share, against
processes that each build the ring from the servers file.

Starts N `chash route` processes one after the other, each reading keys from
a pipe this script keeps open: first N with `--ring SNAPSHOT` (mapped,
verified), then N with `--servers FILE` (each builds its own ring). Each
process gets the same 65,536 keys; once its first output reaches the file it
writes to, it has loaded (or built) its ring and routed keys, and it then
waits for more keys. With all N waiting, the script reads
/proc/PID/smaps_rollup of each and prints the sums of Rss and Pss (and Pss's
anonymous and file parts), then closes their input (they exit), checks that
every process printed the same routes, and stops any that is left by PID.

  bench/snapshot_pss.py --chash build/tools/cli/chash [--procs 8]
      [--nodes 2048 --weight 625 --mode pingora-v2 --multiple 16]
      [--built-procs N] [--baseline-procs 2] [--no-index-procs N]
      [--workdir DIR] > "bench/results/$(tools/dev/lib/cpu-slug)/snapshot-pss.txt"

What a mapped ring keeps privately is measured against a baseline: a few
processes that route the same keys with a snapshot of 2 servers (the
process's own memory, its binary, allocator and keys, without a large
ring). "private per mapped process" is then the mean Pss_Anon of a mapped
process minus the baseline's mean. --no-index-procs N also maps the ring
written with `chash build --no-index` (format 1.1 readers then build the
search index themselves, as every reader of 1.0 files did).

Bounded: each process must be ready within --ready-timeout seconds (default
600), the whole run within --total-timeout (default 1800); on any failure
every process started is killed by its PID.
"""
import argparse
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

import cpu_folder  # bench/cpu_folder.py, beside this script

FIELDS = ("Rss", "Pss", "Pss_Anon", "Pss_File", "Private_Clean", "Private_Dirty",
          "Shared_Clean", "Shared_Dirty")


def smaps_rollup(pid):
    values = {}
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 3 and parts[0].endswith(":") and parts[2] == "kB":
                values[parts[0][:-1]] = int(parts[1])
    return values


def mib(kb):
    return f"{kb / 1024:9.1f}"


class Fleet:
    """The processes of one run, stopped by PID whatever happens."""

    def __init__(self):
        self.procs = []

    def start(self, argv, keys, out_path, timeout):
        out = open(out_path, "wb")
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=out,
                                stderr=subprocess.PIPE)
        out.close()
        self.procs.append(proc)
        started = time.monotonic()
        proc.stdin.write(keys)  # route reads as soon as its ring is ready
        proc.stdin.flush()
        while os.path.getsize(out_path) == 0:
            if proc.poll() is not None:
                raise RuntimeError(f"{argv} exited with {proc.returncode}: "
                                   f"{proc.stderr.read().decode(errors='replace')}")
            if time.monotonic() - started > timeout:
                raise RuntimeError(f"{argv} not ready after {timeout} s")
            time.sleep(0.05)
        return proc, time.monotonic() - started

    def finish(self, timeout=60):
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    proc.stdin.close()  # end of keys: route flushes and exits
                except BrokenPipeError:
                    pass
        deadline = time.monotonic() + timeout
        codes = []
        for proc in self.procs:
            try:
                codes.append(proc.wait(max(0.1, deadline - time.monotonic())))
            except subprocess.TimeoutExpired:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
                codes.append(None)
        self.procs = []
        return codes

    def kill(self):
        for proc in self.procs:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGKILL)
                proc.wait()
        self.procs = []


def run(args, name, argv, keys, workdir, count):
    fleet = Fleet()
    try:
        rows, outputs = [], []
        for i in range(count):
            out_path = os.path.join(workdir, f"{name}-{i}.out")
            proc, ready = fleet.start(argv, keys, out_path, args.ready_timeout)
            outputs.append(out_path)
            alone = smaps_rollup(proc.pid) if i == 0 else None
            rows.append((proc.pid, ready, alone))
        time.sleep(0.5)
        measured = [(pid, ready, alone, smaps_rollup(pid)) for pid, ready, alone in rows]
        codes = fleet.finish()
        if any(code != 0 for code in codes):
            raise RuntimeError(f"{name}: exit codes {codes}")
        return measured, outputs
    finally:
        fleet.kill()


def report(name, argv, measured):
    print(f"\n{name}: {len(measured)} x {' '.join(argv)}")
    print(f"{'pid':>8} {'ready s':>8} " + " ".join(f"{f + ' MiB':>17}" for f in FIELDS[:4]))
    total = {f: 0 for f in FIELDS}
    for pid, ready, _, values in measured:
        print(f"{pid:>8} {ready:8.2f} " +
              " ".join(f"{mib(values.get(f, 0)):>17}" for f in FIELDS[:4]))
        for f in FIELDS:
            total[f] += values.get(f, 0)
    print(f"{'sum':>8} {'':>8} " + " ".join(f"{mib(total[f]):>17}" for f in FIELDS[:4]))
    alone = measured[0][2]
    print(f"{'first, alone':>17} " + " ".join(f"{mib(alone.get(f, 0)):>17}" for f in FIELDS[:4]))
    return total, alone


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chash", required=True)
    parser.add_argument("--procs", type=int, default=8)
    parser.add_argument("--built-procs", type=int, default=None,
                        help="processes that build (default: --procs)")
    parser.add_argument("--baseline-procs", type=int, default=2)
    parser.add_argument("--no-index-procs", type=int, default=0)
    parser.add_argument("--nodes", type=int, default=2048)
    parser.add_argument("--weight", type=int, default=625)
    parser.add_argument("--mode", default="pingora-v2")
    parser.add_argument("--multiple", type=int, default=16)
    parser.add_argument("--keys", type=int, default=65536)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--ready-timeout", type=float, default=600)
    parser.add_argument("--total-timeout", type=int, default=1800)
    args = parser.parse_args()
    if not 1 <= args.procs <= 64:
        parser.error("--procs must be 1..64")
    built_procs = args.procs if args.built_procs is None else args.built_procs

    def on_alarm(signum, frame):
        raise TimeoutError(f"the whole run took more than {args.total_timeout} s")

    signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(args.total_timeout)

    workdir = args.workdir or tempfile.mkdtemp(prefix="chash-pss-")
    os.makedirs(workdir, exist_ok=True)
    servers = os.path.join(workdir, "servers.txt")
    with open(servers, "w") as f:
        for i in range(args.nodes):
            f.write(f"10.0.{i // 256}.{i % 256}:443 {args.weight}\n")
    ring_options = ["--mode", args.mode]
    if args.mode == "pingora-v2":
        ring_options += ["--multiple", str(args.multiple)]
    snapshot = os.path.join(workdir, "ring.chash")
    started = time.monotonic()
    subprocess.run([args.chash, "build", "--servers", servers, *ring_options,
                    "--config-version", "1", "--out", snapshot],
                   check=True, stdout=subprocess.DEVNULL, timeout=args.ready_timeout)
    build_seconds = time.monotonic() - started
    small_servers = os.path.join(workdir, "small-servers.txt")
    with open(small_servers, "w") as f:
        f.write("10.0.0.1:443 1\n10.0.0.2:443 1\n")
    small = os.path.join(workdir, "small.chash")
    if args.baseline_procs:
        subprocess.run([args.chash, "build", "--servers", small_servers, *ring_options,
                        "--config-version", "1", "--out", small],
                       check=True, stdout=subprocess.DEVNULL, timeout=args.ready_timeout)
    bare = os.path.join(workdir, "ring-no-index.chash")
    if args.no_index_procs:
        subprocess.run([args.chash, "build", "--servers", servers, *ring_options,
                        "--config-version", "1", "--no-index", "--out", bare],
                       check=True, stdout=subprocess.DEVNULL, timeout=args.ready_timeout)
    rng = random.Random(42)
    alphabet = "abcdefghijklmnopqrstuvwxyz0123456789/"
    keys = "".join("/" + "".join(rng.choice(alphabet) for _ in range(29)) + "\n"
                   for _ in range(args.keys)).encode()

    with open("/proc/loadavg") as f:
        load_before = f.read().strip()
    print(f"# {' '.join(sys.argv)}")
    print(f"# ring: {args.nodes} servers x weight {args.weight}, {' '.join(ring_options)}; "
          f"snapshot {os.path.getsize(snapshot)} bytes, written by `chash build` in "
          f"{build_seconds:.1f} s; {args.keys} keys a process")
    print(f"# loadavg before: {load_before}")
    print(f"# CPU: {cpu_folder.describe().get('model name', '?')} ({cpu_folder.slug()})")
    print("# MiB from /proc/PID/smaps_rollup with every process of the group started, "
          "its ring made and keys routed, waiting for more keys")

    mapped_argv = [args.chash, "route", "--ring", snapshot]
    built_argv = [args.chash, "route", "--servers", servers, *ring_options]
    results = {}
    outputs = []
    groups = (("baseline", [args.chash, "route", "--ring", small], args.baseline_procs),
              ("mapped", mapped_argv, args.procs),
              ("mapped-no-index", [args.chash, "route", "--ring", bare], args.no_index_procs),
              ("built", built_argv, built_procs))
    for name, argv, count in groups:
        if count == 0:
            continue
        measured, outs = run(args, name, argv, keys, workdir, count)
        results[name] = report(name, argv, measured)
        results[name + "/count"] = count
        if name != "baseline":  # another ring: other routes
            outputs += outs
    first = open(outputs[0], "rb").read()
    same = all(open(p, "rb").read() == first for p in outputs[1:])
    lines = first.count(b"\n")
    print(f"\nroutes: {len(outputs)} processes, {lines} lines each, "
          f"{'all identical' if same else 'DIFFERENT'}")
    if "mapped" in results and "built" in results:
        m, b = results["mapped"][0], results["built"][0]
        per_built = b["Pss"] / built_procs
        print(f"summed Pss: {args.procs} mapped {m['Pss'] / 1024:.1f} MiB, "
              f"{built_procs} built {b['Pss'] / 1024:.1f} MiB "
              f"({per_built / 1024:.1f} MiB each, so {args.procs} built "
              f"= {per_built * args.procs / 1024:.1f} MiB): "
              f"{per_built * args.procs / max(1, m['Pss']):.1f}x less mapped")
        print(f"summed Rss: {args.procs} mapped {m['Rss'] / 1024:.1f} MiB "
              f"(each counts the whole file), {built_procs} built {b['Rss'] / 1024:.1f} MiB")
    if "baseline" in results:
        base = results["baseline"][0]["Pss_Anon"] / results["baseline/count"]
        print(f"baseline: {base / 1024:.1f} MiB Pss_Anon a process (2-server ring)")
        for name in ("mapped", "mapped-no-index"):
            if name in results:
                own = results[name][0]["Pss_Anon"] / results[name + "/count"]
                print(f"private per {name} process beyond the baseline: "
                      f"{(own - base) / 1024:.1f} MiB Pss_Anon ({own / 1024:.1f} - "
                      f"{base / 1024:.1f})")
    with open("/proc/loadavg") as f:
        print(f"# loadavg after: {f.read().strip()}")
    if not args.workdir:
        for name in os.listdir(workdir):
            os.remove(os.path.join(workdir, name))
        os.rmdir(workdir)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
