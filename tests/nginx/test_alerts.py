#!/usr/bin/env python3
"""The Prometheus alerting rules of tools/nginx/monitoring/chash-alerts.yml,
tested with `promtool test rules` on the module's real output.

    tests/nginx/test_alerts.py --http-module PATH --stream-module PATH
        --chash-cli PATH [--keep]

A real nginx (2 workers, an HTTP and a stream snapshot upstream, and a slow
HTTP one) is driven through the states the rules watch, and its
`chash_status?format=prometheus` answer is captured in each: every worker
on version 1, then on 2; a file refused; one worker stopped (SIGSTOP)
while its sibling swaps (the workers disagree); a request in flight across
a swap (a retired ring held). The captured samples, with the instance and
job labels a scrape adds, become promtool's input series (one capture a
span of minutes; an age gauge grows by 60 a minute from its captured
value, as it does); promtool then checks that each alert fires, with its
labels and text, exactly when it should, and not before.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_faults as tf  # noqa: E402
from harness import check, FAILURES  # noqa: E402

MONITORING = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools",
                          "nginx", "monitoring")
RULES = os.path.join(MONITORING, "chash-alerts.yml")
DASHBOARD = os.path.join(MONITORING, "chash-dashboard.json")


def check_dashboard(families, workdir):
    """The dashboard is JSON, its every query valid PromQL (promtool, as a
    recording rule each, Grafana's variables replaced) over families the
    module exposes; so are the alert rules' families."""
    with open(DASHBOARD) as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    rules = os.path.join(workdir, "dashboard-queries.yml")
    with open(rules, "w") as f:
        f.write("groups:\n  - name: dashboard\n    rules:\n")
        for i, e in enumerate(exprs):
            e = (e.replace("$__rate_interval", "5m").replace("$instance", ".*")
                 .replace("$upstream", ".*"))
            f.write("      - record: dashboard_query_%d\n        expr: %s\n" %
                    (i, json.dumps(e)))
    r = subprocess.run(["promtool", "check", "rules", rules], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "the dashboard's queries: " + r.stdout + r.stderr)
    with open(RULES) as f:
        rule_text = "".join(ln for ln in f if not ln.lstrip().startswith("#"))
    used = set(re.findall(r"\bchash_[a-z_]+", rule_text + " ".join(exprs)))
    unknown = sorted(used - families)
    check(not unknown, "families the rules or the dashboard use that the module does not "
          "expose: %s" % unknown)
    return len(exprs)


def capture(rig):
    code, body, _ = tf.http_get(rig.ngx.port, "/chash-status?format=prometheus", timeout=3)
    if code != 200:
        return None
    samples = {}
    for line in body.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.fullmatch(r'([a-z_]+)\{(.*)\} (-?\d+)', line)
        if not m:
            raise RuntimeError("not a sample: %r" % line)
        labels = tuple(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(2)))
        samples[(m.group(1), labels)] = int(m.group(3))
    return samples


def capture_retry(rig, tries=40):
    for _ in range(tries):
        got = capture(rig)
        if got:
            return got
        time.sleep(0.1)
    raise RuntimeError("no status answer")


def series_name(name, labels, instance):
    parts = ['%s="%s"' % (k, v) for k, v in labels] + ['instance="%s"' % instance,
                                                         'job="nginx"']
    return "%s{%s}" % (name, ",".join(parts))


def series(timeline, instance, grow=()):
    """promtool input series of one host: timeline is [(capture, minutes)];
    a sample missing from a capture is '_'. Families in grow are ages: they
    grow by 60 a minute from their captured value (0, none, stays 0)."""
    keys = []
    for cap, _ in timeline:
        for k in cap:
            if k not in keys:
                keys.append(k)
    out = []
    for k in keys:
        values = []
        for cap, minutes in timeline:
            if k in cap and k[0] in grow and cap[k] > 0:
                values += [str(cap[k] + 60 * i) for i in range(minutes)]
            elif k in cap:
                values += [str(cap[k])] * minutes
            else:
                values += ["_"] * minutes
        out.append({"series": series_name(k[0], k[1], instance), "values": " ".join(values)})
    return out


def yaml_dump(obj, indent=0):
    """The small YAML subset promtool's test files need."""
    pad = "  " * indent
    if isinstance(obj, dict):
        lines = []
        for k, v in obj.items():
            if isinstance(v, (dict, list)) and v:
                lines.append("%s%s:" % (pad, k))
                lines.append(yaml_dump(v, indent + 1))
            else:
                lines.append("%s%s: %s" % (pad, k, yaml_scalar(v)))
        return "\n".join(lines)
    if isinstance(obj, list):
        lines = []
        for item in obj:
            body = yaml_dump(item, indent + 1)
            first, _, rest = body.lstrip().partition("\n")
            lines.append("%s- %s" % (pad, first))
            if rest:
                lines.append(rest)
        return "\n".join(lines)
    return pad + yaml_scalar(obj)


def yaml_scalar(v):
    if isinstance(v, (list, dict)):
        return "[]" if isinstance(v, list) else "{}"
    if isinstance(v, int):
        return str(v)
    return json.dumps(str(v))


def alert(labels, summary):
    return {"exp_labels": labels, "exp_annotations": {"summary": summary}}


def rule_test(input_series, *evaluations):
    """A promtool alert rule test, one sample a minute: each evaluation
    (eval_time, alertname, exp_alerts) says which alerts fire then."""
    return {"interval": "1m", "input_series": input_series,
            "alert_rule_test": [{"eval_time": t, "alertname": name, "exp_alerts": alerts}
                                for t, name, alerts in evaluations]}


def versions_of(cap, family="chash_snapshot_config_version"):
    return {(dict(k[1]).get("protocol", ""), dict(k[1])["upstream"], dict(k[1])["ring"]): v
            for k, v in cap.items() if k[0] == family}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--http-module", required=True)
    ap.add_argument("--stream-module", required=True)
    ap.add_argument("--chash-cli", required=True)
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    args.http_module = os.path.abspath(args.http_module)
    args.stream_module = os.path.abspath(args.stream_module)
    args.legacy = False
    args.sanitized = False
    started = time.monotonic()
    rng = tf.random.Random(20261203)
    workdir = tempfile.mkdtemp(prefix="chash-alerts-")
    cli = tf.Cli(os.path.abspath(args.chash_cli), workdir)
    taken = set()
    http_ports = tf.ports(6, rng, taken)
    stream_ports = tf.ports(6, rng, taken)
    slow_ports = tf.ports(3, rng, taken)
    files = {}
    fleets = {"cache": [("127.0.0.1:%d" % q, 1) for q in http_ports],
              "db": [("127.0.0.1:%d" % q, 1) for q in stream_ports],
              "slow": [("127.0.0.1:%d" % q, 1) for q in slow_ports]}
    for name, fleet in fleets.items():
        files[name] = cli.build(os.path.join(workdir, name + ".chash"), fleet, 1)
    ups = [{"proto": "http", "name": "cache",
            "body": ["chash $arg_k flavor=pingora-v1;", "chash_snapshot %s poll=100ms;" %
                     files["cache"]]},
           {"proto": "http", "name": "slow",
            "body": ["chash $arg_k flavor=pingora-v1;", "chash_snapshot %s poll=100ms;" %
                     files["slow"]]},
           {"proto": "stream", "name": "db",
            "body": ["chash $remote_addr flavor=pingora-v1;", "chash_snapshot %s poll=100ms;" %
                     files["db"]]}]
    rig = tf.Rig(args, workers=2)
    slow = tf.SlowBackends(slow_ports, True, 12)
    stopped = None
    caps = {}
    try:
        rig.conf(ups, http_backends=http_ports, stream_backends=stream_ports)
        rig.start()
        for name in fleets:
            check(rig.wait_versions(name, 1) is not None, "%s serves 1" % name)
        caps["v1"] = capture_retry(rig)
        expires_at = int(time.time()) + 86400
        for name, fleet in fleets.items():
            cli.build(files[name], fleet, 2, expires=expires_at if name == "cache" else None)
        for name in fleets:
            check(rig.wait_versions(name, 2) is not None, "%s serves 2" % name)
        caps["v2"] = capture_retry(rig)

        bad = cli.build(files["cache"], fleets["cache"][1:], 3, rename=False)
        with open(bad, "r+b") as f:
            f.seek(os.path.getsize(bad) // 2)
            f.write(b"\xff\xff\xff\xff")
        os.rename(bad, files["cache"])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and len(rig.error_lines(
                r'upstream "cache": refused')) < 2:
            time.sleep(0.05)
        caps["refused"] = capture_retry(rig)

        # one worker stopped: its sibling alone swaps
        pids = sorted(rig.workers("cache"))
        stopped = pids[0]
        os.kill(stopped, signal.SIGSTOP)
        cli.build(files["cache"], fleets["cache"], 4)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            got = capture(rig)
            if got and got.get(("chash_snapshot_versions_served",
                                (("upstream", "cache"), ("ring", "old")))) == 2:
                caps["disagree"] = got
                break
            time.sleep(0.1)
        os.kill(stopped, signal.SIGCONT)
        stopped = None
        check("disagree" in caps, "a capture with the workers on two versions")
        check(rig.wait_versions("cache", 4) is not None, "cache serves 4 once resumed")

        # a request in flight across a swap holds the retired ring
        holder = threading.Thread(target=tf.http_get,
                                  args=(rig.ngx.port, "/u/slow?k=held", 30), daemon=True)
        holder.start()
        time.sleep(0.5)
        cli.build(files["slow"], fleets["slow"][1:], 3)
        check(rig.wait_versions("slow", 3) is not None, "slow serves 3")
        time.sleep(1.0)
        caps["pinned"] = capture_retry(rig)
        held = [v for k, v in caps["pinned"].items()
                if k[0] == "chash_worker_generations" and dict(k[1])["upstream"] == "slow"]
        check(max(held or [0]) == 2, "a worker holds 2 generations of slow: %s" % held)
    finally:
        if stopped:
            os.kill(stopped, signal.SIGCONT)
        slow.close()
        rig.cleanup()

    if FAILURES:
        print("%d checks failed; %.1f s" % (len(FAILURES), time.monotonic() - started))
        return 1

    # ---- the rules' tests, on the captures
    tests = []
    b_versions = versions_of(caps["v1"])
    a_versions = versions_of(caps["v2"])
    behind = []
    for (proto, upstream, ring), v in sorted(b_versions.items()):
        if v < a_versions.get((proto, upstream, ring), 0):
            labels = {"alertname": "ChashHostBehindFleet", "instance": "b:80",
                      "upstream": upstream, "ring": ring, "severity": "warning"}
            if proto:
                labels["protocol"] = proto
            behind.append(alert(labels, "chash upstream %s (%s ring) on b:80 serves config "
                                "version %d, behind the fleet" % (upstream, ring, v)))
    tests.append(rule_test(series([(caps["v2"], 40)], "a:80") + series([(caps["v1"], 40)], "b:80"),
                           ("5m", "ChashHostBehindFleet", []),
                           ("15m", "ChashHostBehindFleet", behind)))

    refused = []
    for k, v in caps["refused"].items():
        if k[0] == "chash_snapshot_loads_total" and ("result", "refused") in k[1] and \
                v > caps["v2"].get(k, 0):
            d = dict(k[1])
            labels = dict(d, alertname="ChashSnapshotRefused", instance="a:80", job="nginx",
                          severity="warning")
            refused.append(alert(labels, "chash upstream %s on a:80 refused a snapshot file" %
                                 d["upstream"]))
    check(len(refused) == 1, "one upstream's refusals counted: %d" % len(refused))
    tests.append(rule_test(series([(caps["v2"], 10), (caps["refused"], 20)], "a:80"),
                           ("5m", "ChashSnapshotRefused", []),
                           ("12m", "ChashSnapshotRefused", refused),
                           ("28m", "ChashSnapshotRefused", [])))

    disagree = []
    for k, v in caps["disagree"].items():
        if k[0] == "chash_snapshot_versions_served" and v > 1:
            d = dict(k[1])
            labels = {"alertname": "ChashWorkersDisagree", "instance": "a:80",
                      "upstream": d["upstream"], "ring": d["ring"], "severity": "warning"}
            if "protocol" in d:
                labels["protocol"] = d["protocol"]
            disagree.append(alert(labels, "chash upstream %s on a:80: its workers serve %d "
                                  "versions of the %s ring" % (d["upstream"], v, d["ring"])))
    check(len(disagree) == 1, "one upstream's workers disagree: %d" % len(disagree))
    tests.append(rule_test(series([(caps["v2"], 10), (caps["disagree"], 20)], "a:80"),
                           ("12m", "ChashWorkersDisagree", []),
                           ("18m", "ChashWorkersDisagree", disagree)))

    age = "chash_worker_oldest_retired_generation_seconds"
    oldest = max(v for k, v in caps["pinned"].items()
                 if k[0] == age and dict(k[1])["upstream"] == "slow")
    pinned = [alert({"alertname": "ChashGenerationsPinned", "instance": "a:80",
                     "upstream": "slow", "severity": "info"},
                    "chash upstream slow on a:80: a retired ring has been held for %d s" %
                    (oldest + 60 * 40))]
    tests.append(rule_test(series([(caps["pinned"], 60)], "a:80", grow={age}),
                           ("25m", "ChashGenerationsPinned", []),
                           ("40m", "ChashGenerationsPinned", pinned)))

    # The expiry, as the module shows it: the file's for cache, 0 (never) for
    # the others. promtool's clock starts at 0, so the test series carries
    # the captured samples with cache's expiry moved to minute 120.
    expiry = "chash_snapshot_expires_timestamp_seconds"
    shown = {dict(k[1])["upstream"]: v for k, v in caps["v2"].items() if k[0] == expiry}
    check(shown.get("cache") == expires_at, "cache's expiry shown: %s" % shown.get("cache"))
    check(all(v == 0 for u, v in shown.items() if u != "cache"),
          "no expiry shown as 0: %s" % shown)
    moved = {k: (7200 if v else v) for k, v in caps["v2"].items() if k[0] == expiry}
    expiring = [dict(k[1]) for k, v in moved.items() if v]
    soon = [alert(dict(d, alertname="ChashSnapshotExpiresSoon", instance="a:80", job="nginx",
                       severity="warning"),
                  "chash upstream %s on a:80 serves a ring that expires at 7200 (Unix time)" %
                  d["upstream"]) for d in expiring]
    expired = [alert(dict(d, alertname="ChashSnapshotExpired", instance="a:80", job="nginx",
                          severity="critical"),
                     "chash upstream %s on a:80 serves a ring that expired at 7200 (Unix time)" %
                     d["upstream"]) for d in expiring]
    check(len(expiring) == 1, "one upstream with an expiry: %d" % len(expiring))
    tests.append(rule_test(series([(moved, 130)], "a:80"),
                           ("30m", "ChashSnapshotExpiresSoon", []),
                           ("70m", "ChashSnapshotExpiresSoon", soon),
                           ("70m", "ChashSnapshotExpired", []),
                           ("125m", "ChashSnapshotExpired", expired)))

    families = {k[0] for c in caps.values() for k in c}
    queries = check_dashboard(families, workdir)
    print("dashboard: %d panels' queries are valid PromQL over the module's families (%d "
          "families seen)" % (queries, len(families)), flush=True)

    test_file = os.path.join(workdir, "chash-alerts.test.yml")
    with open(test_file, "w") as f:
        f.write("# generated by tests/nginx/test_alerts.py from a real nginx's "
                "chash_status?format=prometheus\n")
        f.write(yaml_dump({"rule_files": [os.path.abspath(RULES)], "evaluation_interval": "1m",
                           "tests": tests}) + "\n")
    r = subprocess.run(["promtool", "check", "rules", RULES], capture_output=True, text=True,
                       timeout=60)
    check(r.returncode == 0, "promtool check rules: " + r.stdout + r.stderr)
    r = subprocess.run(["promtool", "test", "rules", test_file], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, "promtool test rules:\n" + r.stdout + r.stderr)
    print("promtool test rules on %d captures of the real output (%d samples each, at most): "
          "ChashHostBehindFleet (%d alerts), ChashSnapshotRefused, ChashWorkersDisagree, "
          "ChashGenerationsPinned, ChashSnapshotExpiresSoon, ChashSnapshotExpired: %s" % (
              len(caps), max(len(c) for c in caps.values()), len(behind),
              "passed" if r.returncode == 0 else "failed"), flush=True)
    if FAILURES or args.keep:
        print("promtool test file kept: " + test_file)
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    print("%d checks failed; %.1f s" % (len(FAILURES), time.monotonic() - started))
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
