#!/usr/bin/env python3
"""The config readers against the real programs, on edge configs.

Each reader's corpus is a folder of configs, tests/data/<reader>/edges/
(haproxy-cfg, nutcracker-yml, nginx-conf), with cases.tsv naming each config,
what chash must do with it, and why it is there:

  FILE<TAB>KIND<TAB>WHAT
  KIND  ring           the program takes it; chash builds the ring of the same
                       servers (HAProxy: the same addresses and weights, backup
                       and maintenance servers owning no points)
        refused        the program refuses it; so does chash, naming the line
                       (the program's line where the program names one)
        no-ring        the program takes it but keeps no ring (round robin,
                       modula, a fallback it warns about); chash refuses it
        chash-refuses  the program takes it; chash refuses it by name (what it
                       does not read), saying "chash"

and verdicts.tsv, what the real program said, written by --record:

  FILE<TAB>VERDICT<TAB>LINE<TAB>DETAIL
  VERDICT  accepted or refused
  LINE     the line the program's first error names, "-" if none
  DETAIL   refused: the program's first error; accepted: haproxy's servers of
           backend b (NAME ADDR WEIGHT BACKUP STATUS;...), nutcracker's servers
           of pool a (NAME,...), nginx "-"

The programs: haproxy 2.6 (`haproxy -c -f FILE`, then for a config it takes,
haproxy started on it with a stats socket and asked `show stat`), nutcracker
0.5.0 (`nutcracker -t -c FILE`; its reason from a start that fails at once;
for a config it takes, started on loopback and asked its stats port), nginx
1.22 (`nginx -t -c FILE` with a prefix in a temporary folder). Each runs on
127.0.0.1 only, in a temporary folder, bounded in time, stopped by its PID.

  reader_edges.py --record [READER...]         run the programs, write verdicts.tsv
  reader_edges.py --check --chash CHASH [...]  run the programs, compare with
                                               verdicts.tsv, and chash with them (CI)
  reader_edges.py --replay --chash CHASH [...] chash against verdicts.tsv only (ctest)

chash is asked for backend b, pool a, upstream u. Exit status 1 on any
difference.
"""

import argparse
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
READERS = {
    "haproxy-cfg": ("--haproxy-cfg", "--backend", "b", "haproxy", "haproxy"),
    "nutcracker-yml": ("--nutcracker-yml", "--pool", "a", "nutcracker", "nutcracker"),
    "nginx-conf": ("--nginx-conf", "--upstream", "u", "nginx", "nginx"),
}
SECONDS = 10  # each program run's bound
LISTEN = re.compile(r"(listen:\s*127\.0\.0\.1:)\d+")


def folder(reader):
    return os.path.join(DATA, reader, "edges")


def read_cases(reader):
    cases = []
    with open(os.path.join(folder(reader), "cases.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, kind, what = line.rstrip("\n").split("\t")
            if kind not in ("ring", "refused", "no-ring", "chash-refuses"):
                raise SystemExit(f"{reader}/edges/cases.tsv: {name}: unknown kind {kind}")
            cases.append((name, kind, what))
    return cases


def read_verdicts(reader):
    verdicts = {}
    with open(os.path.join(folder(reader), "verdicts.tsv"), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, verdict, where, detail = line.rstrip("\n").split("\t")
            verdicts[name] = (verdict, where, detail)
    return verdicts


def run(cmd, cwd, seconds=SECONDS):
    out = subprocess.run(common.nice_cmd(cmd, seconds), cwd=cwd, capture_output=True,
                         stdin=subprocess.DEVNULL, timeout=seconds + 10)
    return out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")


def one_line(text):
    return re.sub(r"\s+", " ", text).strip()


def read_all(sock):
    """Everything a connected socket sends until the other side closes it."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


# ------------------------------------------------------------------ haproxy


def haproxy_verdict(path, tmp):
    rc, out, err = run(["haproxy", "-c", "-f", path], tmp)
    if rc == 1:
        alerts = [l for l in err.splitlines() if "[ALERT]" in l and "Error(s) found" not in l
                  and "Fatal errors found" not in l]
        first = alerts[0] if alerts else one_line(err)
        m = re.search(r"\[[^\]]*?:(\d+)\]", first)
        message = re.sub(r"^\[ALERT\]\s*\(\d+\)\s*:\s*(config\s*:\s*)?", "", first)
        return "refused", m.group(1) if m else "-", one_line(message.replace(path, os.path.basename(path)))
    if rc not in (0, 2):
        raise common.OracleError(f"haproxy -c {path}: exit {rc}: {err}")
    # Start it on a stats socket (no listeners: the configs have none) and
    # ask for backend b's servers.
    sock = os.path.join(tmp, "stats.sock")
    glob = os.path.join(tmp, "global.cfg")
    with open(glob, "w") as f:
        f.write(f"global\n    stats socket {sock} level admin\n")
    proc = common.Process(["haproxy", "-db", "-f", glob, "-f", path], tmp, SECONDS, "haproxy.log")
    try:
        deadline = time.monotonic() + SECONDS
        rows = None
        while time.monotonic() < deadline and proc.alive():
            if os.path.exists(sock):
                try:
                    with socket.socket(socket.AF_UNIX) as s:
                        s.settimeout(2)
                        s.connect(sock)
                        s.sendall(b"show stat\n")
                        rows = read_all(s).decode()
                    break
                except OSError:
                    pass
            time.sleep(0.05)
        if rows is None:
            raise common.OracleError(f"haproxy on {path}: no stats:\n{proc.log_tail()}")
    finally:
        proc.stop()
    lines = rows.splitlines()
    head = lines[0].lstrip("# ").split(",")
    servers = []
    for line in lines[1:]:
        row = dict(zip(head, line.split(",")))
        if row.get("pxname") != "b" or row.get("svname") in ("FRONTEND", "BACKEND", None):
            continue
        servers.append(" ".join([row["svname"], row["addr"], row["weight"], row["bck"],
                                 row["status"]]))
    return "accepted", "-", ";".join(servers) if servers else "-"


# ------------------------------------------------------------------ nutcracker


def nutcracker_verdict(path, tmp):
    rc, out, err = run(["nutcracker", "-t", "-c", path], tmp)
    stats_port = common.free_port()
    log = os.path.join(tmp, "nutcracker.log")
    cmd = ["nutcracker", "-c", path, "-o", log, "-v", "5", "-s", str(stats_port), "-a",
           "127.0.0.1", "-p", os.path.join(tmp, "nutcracker.pid")]
    if rc == 1:
        # A start on a config it refuses logs the reason and exits at once.
        run(cmd, tmp)
        with open(log, errors="replace") as f:
            reasons = [l for l in f.read().splitlines() if "nc_conf.c" in l]
        first = reasons[0] if reasons else "syntax is invalid"
        first = re.sub(r"^.*?conf: ", "", first).replace(path, os.path.basename(path))
        return "refused", "-", one_line(first)
    if rc != 0:
        raise common.OracleError(f"nutcracker -t {path}: exit {rc}: {out}{err}")
    # The configs' listen ports are fixed and fall in the ephemeral range, so
    # any outgoing connection on the host may hold one: nutcracker runs on a
    # copy listening on free ports (its stats port last), retried on others
    # if one is taken in the meantime. Its log goes to the Process's log.
    with open(path, encoding="utf-8") as f:
        text = f.read()
    listens = len(LISTEN.findall(text))
    copy = os.path.join(tmp, os.path.basename(path))

    def start(ports):
        numbered = iter(ports)
        with open(copy, "w", encoding="utf-8") as f:
            f.write(LISTEN.sub(lambda m: f"{m.group(1)}{next(numbered)}", text))
        return common.Process(["nutcracker", "-c", copy, "-v", "5", "-s", str(ports[-1]),
                               "-a", "127.0.0.1", "-p", os.path.join(tmp, "nutcracker.pid")],
                              tmp, SECONDS, "nutcracker.out")

    proc, ports = common.start_on_free_ports(listens + 1, start, "address already in use",
                                             seconds=SECONDS)
    try:
        with socket.create_connection(("127.0.0.1", ports[-1]), timeout=2) as s:
            data = read_all(s)
    finally:
        proc.stop()
    stats = json.loads(data.decode())
    pool = stats.get("a", {})
    names = [k for k, v in pool.items() if isinstance(v, dict)]
    return "accepted", "-", ",".join(names) if names else "-"


# ------------------------------------------------------------------ nginx


def nginx_verdict(path, tmp):
    prefix = os.path.join(tmp, "prefix")
    os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
    rc, out, err = run(["nginx", "-t", "-q", "-e", "stderr", "-p", prefix + "/", "-c", path], tmp)
    if rc == 0:
        return "accepted", "-", "-"
    first = next((l for l in err.splitlines() if "[emerg]" in l or "[crit]" in l), one_line(err))
    m = re.search(r" in \S+:(\d+)$", first)
    message = re.sub(r"^.*?\[(emerg|crit)\] \d+#\d+: ", "", first)
    message = re.sub(r" in \S+:\d+$", "", message)
    return "refused", m.group(1) if m else "-", one_line(message.replace(os.path.dirname(path) + "/", ""))


VERDICT = {"haproxy-cfg": haproxy_verdict, "nutcracker-yml": nutcracker_verdict,
           "nginx-conf": nginx_verdict}


def program_verdicts(reader):
    got = {}
    for name, _, _ in read_cases(reader):
        path = os.path.join(folder(reader), name)
        tmp = tempfile.mkdtemp(prefix="chash-edges-")
        try:
            got[name] = VERDICT[reader](path, tmp)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return got


# ------------------------------------------------------------------ chash


def chash_stats(chash, reader, path):
    option, name_option, name = READERS[reader][:3]
    cmd = chash.split() + ["stats", "--json", option, path, name_option, name]
    out = subprocess.run(["timeout", "60"] + cmd, capture_output=True, stdin=subprocess.DEVNULL)
    return out.returncode, out.stdout.decode(errors="replace"), out.stderr.decode(errors="replace")


def compare(reader, chash, verdicts):
    """Each case's chash answer against the program's verdict; the problems."""
    problems = []
    for name, kind, what in read_cases(reader):
        path = os.path.join(folder(reader), name)
        if name not in verdicts:
            problems.append(f"{reader}/{name}: no recorded verdict (run --record)")
            continue
        verdict, where, detail = verdicts[name]
        expected = "refused" if kind == "refused" else "accepted"
        if verdict != expected:
            problems.append(f"{reader}/{name}: the program {verdict} it ({detail}); cases.tsv "
                            f"says {kind}")
            continue
        rc, out, err = chash_stats(chash, reader, path)
        if kind == "ring":
            if rc != 0:
                problems.append(f"{reader}/{name}: the program takes it, chash refuses: {err.strip()}")
                continue
            shares = re.findall(r'"address":"([^"]*)","weight":(\d+)', out)
            if reader == "haproxy-cfg":
                want = []
                for server in detail.split(";") if detail != "-" else []:
                    srv, addr, weight, backup, status = server.split(" ", 4)
                    owns = backup == "0" and not status.startswith("MAINT")
                    want.append((addr, weight if owns else "0"))
                if shares != want:
                    problems.append(f"{reader}/{name}: haproxy's servers {want}, chash's {shares}")
            elif reader == "nutcracker-yml":
                want = detail.split(",") if detail != "-" else []
                if len(shares) != len(want):
                    problems.append(f"{reader}/{name}: nutcracker's servers {want}, chash's {shares}")
            continue
        # refused, no-ring, chash-refuses: chash refuses, naming FILE:LINE.
        m = re.match(r"chash stats: " + re.escape(path) + r":(\d+): (.*)", err)
        if rc != 2 or not m:
            problems.append(f"{reader}/{name}: chash must refuse it naming {name}:LINE; exit "
                            f"{rc}, {err.strip() or out.strip()[:200]}")
            continue
        if kind == "refused" and where != "-" and m.group(1) != where:
            problems.append(f"{reader}/{name}: the program names line {where} ({detail}), chash "
                            f"line {m.group(1)}: {m.group(2)}")
        if kind == "chash-refuses" and "chash" not in m.group(2):
            problems.append(f"{reader}/{name}: chash must say it is chash's refusal: {m.group(2)}")
    return problems


def write_verdicts(reader, got):
    package = READERS[reader][4]
    with open(os.path.join(folder(reader), "verdicts.tsv"), "w", encoding="utf-8") as f:
        f.write(f"# {package} {common.dpkg_version(package)}: written by "
                f"tests/oracles/reader_edges.py --record (see its docstring)\n")
        for name, _, _ in read_cases(reader):
            f.write("\t".join((name,) + tuple(got[name])) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--record", action="store_true")
    mode.add_argument("--check", action="store_true")
    mode.add_argument("--replay", action="store_true")
    p.add_argument("--chash", help="the chash command (required but for --record)")
    p.add_argument("readers", nargs="*", metavar="READER", help=", ".join(READERS) + " (default: all)")
    args = p.parse_args()
    readers = args.readers or list(READERS)
    for reader in readers:
        if reader not in READERS:
            p.error(f"unknown reader {reader} (readers: {', '.join(READERS)})")
    if not args.record and not args.chash:
        p.error("--chash is required")
    problems = []
    counts = []
    for reader in readers:
        started = time.monotonic()
        if args.record:
            write_verdicts(reader, program_verdicts(reader))
            print(f"{reader}: {len(read_cases(reader))} verdicts recorded")
            continue
        recorded = read_verdicts(reader)
        if args.check:
            fresh = program_verdicts(reader)
            for name, verdict in fresh.items():
                if recorded.get(name, (None,))[0:2] != verdict[0:2]:
                    problems.append(f"{reader}/{name}: the program now says {verdict}, recorded "
                                    f"{recorded.get(name)}")
            recorded = fresh
        found = compare(reader, args.chash, recorded)
        problems += found
        cases = read_cases(reader)
        kinds = {k: sum(1 for _, kind, _ in cases if kind == k) for k in
                 ("ring", "refused", "no-ring", "chash-refuses")}
        counts.append(f"{reader}: {len(cases)} cases ({', '.join(f'{v} {k}' for k, v in kinds.items())}), "
                      f"{len(found)} differ, {time.monotonic() - started:.1f} s")
    for line in problems:
        print(line)
    for line in counts:
        print(line)
    if not args.record:
        total = sum(len(read_cases(r)) for r in readers)
        failed = len({line.split(":")[0] for line in problems})
        print(f"{total - failed} passed, {failed} failed")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
