#!/usr/bin/env python3
"""Asks the real nginx which spellings it takes as an upstream `server` line.

For each spelling (one a line on stdin), writes a config whose only upstream
is the one `hash consistent` builds its ring from,

    events {}
    http { upstream u { hash $request_uri consistent; server "SPELLING"; } }

and runs `nginx -t` on it (parse and test only: the config has no `server {}`
block, so nothing listens). `nginx -t` stops at the first error, hence one
spelling a config. Prints `SPELLING<TAB>ok` or `SPELLING<TAB>err<TAB>MESSAGE`
with nginx's [emerg] text, its "in FILE:LINE" suffix removed.

    python3 nginx_verdicts.py [--nginx /usr/sbin/nginx] [--jobs 2] < spellings.txt

Host names are resolved by nginx when it reads the config: without a network
only the names in /etc/hosts resolve, and every other name is refused with
"host not found in upstream".
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

CONFIG = """pid {prefix}/nginx.pid;
error_log stderr;
events {{}}
http {{
  access_log off;
  upstream u {{
    hash $request_uri consistent;
    server "{spelling}";
  }}
}}
"""
EMERG = re.compile(r"\[emerg\] \d+#\d+: (.*?)(?: in \S+:\d+)?$")


def verdict(nginx, spelling):
    # A fresh prefix a run: nothing of one run can leak into the next, and a
    # prefix removed by someone else's /tmp cleaning fails loudly.
    prefix = tempfile.mkdtemp(prefix="address-golden-nginx-")
    try:
        conf = os.path.join(prefix, "nginx.conf")
        with open(conf, "w", encoding="ascii") as f:
            f.write(CONFIG.format(prefix=prefix, spelling=spelling))
        run = subprocess.run([nginx, "-t", "-q", "-e", "stderr", "-p", prefix + "/", "-c", conf],
                             capture_output=True, text=True, timeout=30, check=False)
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
    if run.returncode == 0:
        return "ok"
    for line in run.stderr.splitlines():
        match = EMERG.search(line)
        if match and not match.group(1).startswith("open() "):
            return "err\t" + match.group(1)
    raise RuntimeError("nginx -t failed on %r without a verdict: %r" % (spelling, run.stderr))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--nginx", default="/usr/sbin/nginx")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    spellings = sys.stdin.read().split("\n")
    if spellings and spellings[-1] == "":
        spellings.pop()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        answers = pool.map(lambda spelling: verdict(args.nginx, spelling), spellings)
        for spelling, answer in zip(spellings, answers):
            sys.stdout.write(spelling + "\t" + answer + "\n")

if __name__ == "__main__":
    main()
