#!/usr/bin/env python3
"""The state directory against its own worker user (SECURITY.md): the real
nginx (Debian's 1.22.1) with a master as root and workers as nobody, and an
attacker running as nobody too, in HTTP and in stream.

    tests/nginx/test_state_dir.py --http-module PATH --stream-module PATH
        --chash-cli PATH [--protocol http|stream|both] [--only CASE,...] [--keep]

Cases (each in a fresh prefix and state directory, loopback only, every loop
bounded, nginx stopped by its PID):

  links      links planted at the records, pointing at a root-owned file:
             after pushes, `nginx -s reload` and a restart the file is as it
             was, and the records are files of the worker user's
  forged     a memory file of the attacker's, sealed, holding the signed file
             with its keys pointed elsewhere (once with its header, once with
             a raised version), named in the share record: neither the master
             at a reload nor a respawned worker serves it, and the last good
             file keeps the real bytes
  text       a share record alone, naming the new file with the version
             served: the new file is served
  fifo       FIFOs, then links to /dev/zero, as every record: `nginx -t`,
             a reload and a restart finish in bounded time and serve
  maxversion config version 2^64-1: served, and served again by a restart
  eacces     the new file unreadable to the workers for a moment (mode 000):
             refused as io, then served once readable, by every worker
  expiry     the served ring expires: the status says so, a restart serves
             it (and says so) rather than failing
  instances  two nginx with one upstream name and the default state
             directory, different files: each serves its own, across
             restarts; `nginx -t` makes no state directory

Runs only as root (a master as root is what the cases are about); prints a
skip line and exits 77 otherwise.
"""

import contextlib
import fcntl
import json
import os
import random
import re
import signal
import stat
import struct
import subprocess
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import check  # noqa: E402
import test_faults as tf  # noqa: E402

CASES = ["links", "forged", "text", "fifo", "maxversion", "eacces", "expiry", "instances"]
WORKER_USER = "nobody nogroup"
NOBODY = 65534
OFF_CONFIG_VERSION = 24
OFF_SECTIONS = 144
NODE_COLUMN = 3


def rig(args, **kw):
    return tf.Rig(args, user=WORKER_USER, **kw)


def state_file(r, name):
    """The upstream's last good file, as the status names it."""
    return r.status().get(name, {}).get("state_file", "")


def record(r, name, kind):
    good = state_file(r, name)
    check(good.endswith(".good"), "%s: the status names the last good file: %r" % (name, good))
    return good[:-len("good")] + kind


def check_serving(r, name, version, failure, n=None, timeout=15):
    """Whether every worker (n of them, else nginx's count) serves version
    within timeout; else a failed check "NAME: FAILURE: {pid: version}"."""
    ok = r.wait_versions(name, version, n=n, timeout=timeout) is not None
    check(ok, "%s: %s: %s" % (name, failure, r.workers(name)))
    return ok


def started(r, name, version, n=2, timeout=15):
    return check_serving(r, name, version, "every worker serves %s" % version, n, timeout)


def restart(r, name, upstreams, kw, n=2):
    """Stops nginx and starts it again: {pid: version} once n workers
    serve (or what serves after 15 s)."""
    r.stop()
    r.ngx.proc = None
    served = r.start_serving(name, upstreams, **kw)
    deadline = time.monotonic() + 15
    while len(served) < n and time.monotonic() < deadline and "start failed" not in served:
        time.sleep(0.05)
        served = r.workers(name)
    return served


def readable_workdir(path):
    os.chmod(path, 0o755)


def share_fields(path):
    with open(path) as f:
        lines = f.read().splitlines()
    return lines[0], dict(line.split(" ", 1) for line in lines[1:])


def write_share(path, magic, fields):
    tmp = path + ".attacker"
    with open(tmp, "w") as f:
        f.write(magic + "\n" + "".join("%s %s\n" % kv for kv in fields.items()))
    os.rename(tmp, path)


def as_nobody():
    os.setgroups([])
    os.setgid(NOBODY)
    os.setuid(NOBODY)


# ------------------------------------------------------------------- cases

@contextlib.contextmanager
def serving(args, cli, rng, proto, taken, label, version=1, params="poll=100ms", **build):
    """A case's nginx, cleaned up when the case ends: workers as nobody,
    serving the snapshot of label (version, built with build's options) on
    one upstream: (rig, backends, fleet, path, upstream, its name, Rig.conf's
    backends)."""
    r, backends, fleet, path = tf.rig_and_snapshot(args, cli, rng, proto, taken, label,
                                                   version=version, **build)
    try:
        r.user = WORKER_USER
        u = tf.snap_upstream(args, proto, label, path, params)
        kw = tf.answering(proto, backends)
        r.conf([u], **kw)
        r.start()
        started(r, u["name"], version)
        yield r, backends, fleet, path, u, u["name"], kw
    finally:
        r.cleanup()

def case_links(args, cli, rng, proto, taken):
    with serving(args, cli, rng, proto, taken, "links") as case:
        r, backends, fleet, path, u, name, kw = case
        target = os.path.join(r.p, "precious")
        with open(target, "w") as f:
            f.write("precious\n")
        os.chmod(target, 0o644)
        links = [record(r, name, kind) for kind in ("good", "share")]
        for link in links:
            if os.path.lexists(link):
                os.remove(link)
            os.symlink(target, link)
        for version in (2, 3):
            cli.build(path, fleet[version - 1:], version)
            started(r, name, version)
        time.sleep(0.5)  # the next poll writes the last good file
        r.conf([u], **kw)
        r.ngx.reload()
        served = restart(r, name, [u], kw)
        check(list(served.values()) == [3, 3], "%s: a restart serves 3: %s" % (name, served))
        with open(target) as f:
            check(f.read() == "precious\n", "%s: a planted link was followed" % name)
        for link in links:
            st = os.lstat(link)
            check(stat.S_ISREG(st.st_mode), "%s: %s is still a link" % (name, link))
        owners = {os.path.basename(p): os.lstat(p).st_uid for p in links}
        check(set(owners.values()) == {NOBODY}, "%s: the records are the worker user's: %s"
              % (name, owners))
        print("%s: links at %s: followed by nobody; records now regular files of uid %s"
              % (name, ", ".join(os.path.basename(p) for p in links), set(owners.values())),
              flush=True)


def forged_copy(real, raise_version):
    """The signed file with its first point's node changed (its keys sent to
    another server), and with a raised version if asked."""
    data = bytearray(real)
    node_column = struct.unpack_from("<Q", data, OFF_SECTIONS + 16 * NODE_COLUMN)[0]
    data[node_column] ^= 1
    if raise_version:
        struct.pack_into("<Q", data, OFF_CONFIG_VERSION, 99)
    return bytes(data)


def attacker(share, forged, version):
    """A process of the worker user holding `forged` in a sealed memory file,
    named in the share record: (pid, the pipe it waits on)."""
    ready_r, ready_w = os.pipe()
    hold_r, hold_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            as_nobody()
            fd = os.memfd_create("chash-snapshot", os.MFD_ALLOW_SEALING)
            os.write(fd, forged)
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK |
                        fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            st = os.fstat(fd)
            magic, fields = share_fields(share)
            fields.update({"pid": str(os.getpid()), "fd": str(fd), "copy_device": str(st.st_dev),
                           "copy_inode": str(st.st_ino), "copy_size": str(st.st_size),
                           "config_version": str(version)})
            write_share(share, magic, fields)
            os.write(ready_w, b"1")
            os.read(hold_r, 1)  # until the test closes it (or kills this process)
        finally:
            os._exit(0)
    os.close(ready_w)
    os.close(hold_r)
    check(os.read(ready_r, 1) == b"1", "the attacker named its copy")
    os.close(ready_r)
    return pid, hold_w


@contextlib.contextmanager
def attackers():
    """A case's attacker processes, as attacker() returns them: killed when
    the case ends."""
    pids = []
    try:
        yield pids
    finally:
        for pid, hold in pids:
            os.close(hold)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def case_forged(args, cli, rng, proto, taken):
    key = os.path.join(cli.workdir, "key")
    if not os.path.exists(key):
        cli.run("keygen", "--out", key)
    with serving(args, cli, rng, proto, taken, "forged", sign=key,
                 params="trusted_key=%s.pub poll=100ms" % key) as case, attackers() as pids:
        r, backends, fleet, path, u, name, kw = case
        cli.build(path, fleet[1:], 2, sign=key)
        started(r, name, 2)
        time.sleep(0.5)
        with open(path, "rb") as f:
            real = f.read()
        share = record(r, name, "share")
        good = record(r, name, "good")
        for raise_version in (False, True):
            what = "a raised version" if raise_version else "the file's own header"
            pid, hold = attacker(share, forged_copy(real, raise_version),
                                 99 if raise_version else 2)
            pids.append((pid, hold))
            r.conf([u], **kw)
            r.ngx.reload()
            check(started(r, name, 2), "%s: after a reload with a forged copy (%s) named"
                  % (name, what))
            before = set(r.workers(name))
            os.kill(sorted(before)[0], signal.SIGKILL)
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and (set(r.workers(name)) == before or
                                                   len(r.workers(name)) != 2):
                time.sleep(0.05)
            served = r.workers(name)
            check(sorted(served.values()) == [2, 2], "%s: a respawned worker with a forged copy "
                  "(%s) named serves %s" % (name, what, served))
            answers = {r.ask(u, tf.key_for(proto, rng)) for _ in range(20)}
            check(answers <= set(backends[1:]), "%s: answers from the real ring's servers: %s"
                  % (name, answers))
            with open(good, "rb") as f:
                check(f.read() == real, "%s: the last good file is not the real file's bytes"
                      % name)
            print("%s: a forged sealed copy with %s named by the worker user: refused by the "
                  "master at a reload and by a respawned worker" % (name, what), flush=True)


def case_text(args, cli, rng, proto, taken):
    with serving(args, cli, rng, proto, taken, "text") as case:
        r, backends, fleet, path, u, name, kw = case
        share = record(r, name, "share")
        magic, fields = share_fields(share)
        new = cli.build(path, fleet[1:], 2, rename=False)
        st = os.stat(new)
        fields.update({"pid": "1", "fd": "3", "copy_device": str(st.st_dev),
                       "copy_inode": str(st.st_ino), "copy_size": str(st.st_size),
                       "config_version": "1"})
        write_share(share, magic, fields)
        os.rename(new, path)
        check_serving(r, name, 2, "a share record alone froze the update")
        print("%s: a text-only share record naming the new file: the new file is served"
              % name, flush=True)


def case_fifo(args, cli, rng, proto, taken):
    for kind in ("FIFOs", "links to /dev/zero"):
        with serving(args, cli, rng, proto, taken, "fifo") as case:
            r, backends, fleet, path, u, name, kw = case
            records = [record(r, name, k) for k in ("good", "share", "lock")]
            for p in records:
                if os.path.lexists(p):
                    os.remove(p)
                if kind == "FIFOs":
                    os.mkfifo(p, 0o666)
                else:
                    os.symlink("/dev/zero", p)
            cli.build(path, fleet[1:], 2)
            check(r.wait_versions(name, 2) is not None, "%s: %s: a new file" % (name, kind))
            t = time.monotonic()
            rc, out = r.ngx.test_config()
            check(rc == 0, "%s: %s: nginx -t: %s" % (name, kind, out[-400:]))
            r.conf([u], **kw)
            r.ngx.reload(timeout=30)
            served = restart(r, name, [u], kw)
            took = time.monotonic() - t
            check(list(served.values()) == [2, 2], "%s: %s: a restart serves %s" % (name, kind,
                                                                                served))
            check(took < 30, "%s: %s: nginx -t, a reload and a restart took %.1f s"
                  % (name, kind, took))
            print("%s: %s as every record: nginx -t, reload and restart in %.1f s, serving %s"
                  % (name, kind, took, sorted(set(served.values()))), flush=True)


def case_maxversion(args, cli, rng, proto, taken):
    top = 2 ** 64 - 1
    with serving(args, cli, rng, proto, taken, "maxversion", version=top) as case:
        r, backends, fleet, path, u, name, kw = case
        time.sleep(0.5)
        for attempt in range(2):
            rc, out = r.ngx.test_config()
            check(rc == 0, "%s: nginx -t after version 2^64-1: %s" % (name, out[-300:]))
            served = restart(r, name, [u], kw)
            check(list(served.values()) == [top, top], "%s: restart %d after version 2^64-1: "
                  "%s" % (name, attempt + 1, served))
        print("%s: version 2^64-1 served; nginx -t and two restarts after it work" % name,
              flush=True)


def case_eacces(args, cli, rng, proto, taken):
    with serving(args, cli, rng, proto, taken, "eacces") as case:
        r, backends, fleet, path, u, name, kw = case
        new = cli.build(path, fleet[1:], 2, rename=False)
        os.chmod(new, 0)
        os.rename(new, path)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not r.error_lines(
                r'upstream "%s": refused, check io' % name):
            time.sleep(0.05)
        check(r.error_lines(r'upstream "%s": refused, check io' % name),
              "%s: the unreadable file refused as io" % name)
        os.chmod(path, 0o644)  # the same identity: chmod changes no mtime
        check_serving(r, name, 2, "once readable, every worker serves it")
        print("%s: a file unreadable for a moment: refused as io, then served by every worker"
              % name, flush=True)


def case_expiry(args, cli, rng, proto, taken):
    soon = int(time.time()) + 3
    with serving(args, cli, rng, proto, taken, "expiry", expires=soon) as case:
        r, backends, fleet, path, u, name, kw = case
        check(r.status()[name].get("expired") is False, "%s: not expired yet" % name)
        while time.time() < soon + 1:
            time.sleep(0.2)
        st = r.status()[name]
        check(st.get("expired") is True and st.get("expires") == soon,
              "%s: the status says the served ring expired: %s" % (name,
                                                                   {k: st.get(k) for k in
                                                                    ("expires", "expired")}))
        served = restart(r, name, [u], kw)
        check(list(served.values()) == [1, 1], "%s: a restart on the expired ring serves %s"
              % (name, served))
        check(r.status().get(name, {}).get("expired") is True, "%s: still said expired" % name)
        check(re.search(r'expired at %d .*served all the same' % soon,
                        r.ngx.error_log() + r.ngx.stderr_log()),
              "%s: the start logs that it serves an expired ring" % name)
        cli.build(path, fleet[1:], 2)
        check(r.wait_versions(name, 2) is not None, "%s: a fresh file is served" % name)
        check(r.status()[name].get("expired") is False, "%s: no longer expired" % name)
        print("%s: the served ring expired: said in the status, served by a restart, replaced "
              "by a fresh file" % name, flush=True)


def case_instances(args, cli, rng, proto, taken):
    rigs, dirs = [], []
    try:
        for label, version in (("a", 9), ("b", 3)):
            r = rig(args, default_state=True)
            rigs.append(r)
            backends = tf.ports(4, rng, taken)
            path = cli.build(os.path.join(cli.workdir, "%s-instance-%s.chash" % (proto, label)),
                             tf.weight_one(backends), version)
            u = {"proto": proto, "name": "%s_cache" % proto,
                 "body": [tf.chash_line(proto, "pingora-v1"),
                          tf.snap_line(args, path, "poll=100ms")]}
            r.case = (u, backends, version)
            r.conf([u], **tf.answering(proto, backends))
            rc, out = r.ngx.test_config()
            check(rc == 0, "nginx -t of instance %s: %s" % (label, out[-300:]))
        for r in rigs:
            u, backends, version = r.case
            r.start()
            started(r, u["name"], version)
            dirs.append(os.path.dirname(state_file(r, u["name"])))
        check(len(set(dirs)) == 2, "two instances, two default state directories: %s" % dirs)
        for attempt in range(2):
            for r in rigs:
                u, backends, version = r.case
                served = restart(r, u["name"], [u], tf.answering(proto, backends))
                check(list(served.values()) == [version, version],
                      "instance serving %d: after restart %d, %s" % (version, attempt + 1,
                                                                     served))
                answers = {r.ask(u, tf.key_for(proto, rng)) for _ in range(10)}
                check(answers <= set(backends), "its own servers answer: %s" % answers)
        print("%s: two instances with one upstream name and default settings: state in %s; "
              "each serves its own file across two restarts" % (proto, ", ".join(dirs)),
              flush=True)
    finally:
        for r in rigs:
            r.cleanup()
        for d in dirs:
            subprocess.run(["rm", "-rf", "--", d], check=False)


def test_leaves_no_trace(args, cli, rng, taken):
    """nginx -t with a state directory not made yet makes none."""
    r = rig(args)
    try:
        backends = tf.ports(2, rng, taken)
        path = cli.build(os.path.join(cli.workdir, "no-trace.chash"), tf.weight_one(backends), 1)
        u = tf.snap_upstream(args, "http", "trace", path)
        r.conf([u], http_backends=backends)
        rc, out = r.ngx.test_config()
        check(rc == 0, "nginx -t: %s" % out[-300:])
        check(not os.path.exists(r.state), "nginx -t made the state directory %s" % r.state)
        print("nginx -t: no state directory made", flush=True)
    finally:
        r.cleanup()


def main():
    args = tf.suite_arguments(20261205)
    if os.geteuid() != 0:
        print("tests/nginx/test_state_dir.py: skipped: needs root (a master as root, workers "
              "as nobody)")
        return 77
    return tf.run_cases(args, CASES, globals(), "chash-state-", first=test_leaves_no_trace)


if __name__ == "__main__":
    sys.exit(main())
