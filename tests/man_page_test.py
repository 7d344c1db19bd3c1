#!/usr/bin/env python3
"""chash(1) renders, and carries every command and option of the help.

usage: man_page_test.py --man build/tools/chash.1 --chash "CHASH COMMAND"

Renders the page with `man -l` (man-db, groff) with groff's warnings on and
fails on any warning, on a missing NAME, SYNOPSIS or DESCRIPTION section, on
a command without its own heading, and on any --option of `chash help --all`
that the rendered page does not show.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--man", required=True)
    parser.add_argument("--chash", required=True)
    args = parser.parse_args()
    errors = []
    if not os.path.isfile(args.man):
        print(f"{args.man}: no such file (the chash_man target makes it)")
        return 1
    env = dict(os.environ, LC_ALL="C", MANWIDTH="80", MAN_KEEP_FORMATTING="")
    env.pop("MANPAGER", None)
    env.pop("PAGER", None)
    rendered = subprocess.run(["man", "--warnings=w", "-E", "ascii", "-l", args.man],
                              capture_output=True, text=True, env=env)
    if rendered.returncode != 0:
        errors.append(f"man -l exited {rendered.returncode}")
    if rendered.stderr.strip():
        errors.append("man -l warned:\n" + rendered.stderr.strip())
    page = rendered.stdout
    for section in ("NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"):
        if not re.search(rf"^{section}$", page, re.MULTILINE):
            errors.append(f"no {section} section")
    if not re.search(r"^NAME\n\s+chash - ", page, re.MULTILINE):
        errors.append("NAME does not read 'chash - ...'")

    help_all = subprocess.run(shlex.split(args.chash) + ["help", "--all"],
                              capture_output=True, text=True)
    if help_all.returncode != 0:
        errors.append(f"chash help --all exited {help_all.returncode}: {help_all.stderr}")
    commands = re.findall(r"^chash (\w+):$", help_all.stdout, re.MULTILINE)
    if len(commands) < 10:
        errors.append(f"chash help --all lists {len(commands)} commands: {commands}")
    for command in commands:
        if not re.search(rf"^\s+chash {command}:$", page, re.MULTILINE):
            errors.append(f"no heading for 'chash {command}' in the page")
    flat = " ".join(page.split())
    options = sorted(set(re.findall(r"--[a-z][a-z-]*", help_all.stdout)))
    if len(options) < 30:
        errors.append(f"only {len(options)} options in chash help --all")
    for option in options:
        if not re.search(re.escape(option) + r"(?![a-z-])", flat):
            errors.append(f"option {option} is not in the rendered page")
    if errors:
        print("\n".join(errors))
        return 1
    print(f"ok: chash(1) renders with {len(commands)} commands and {len(options)} options")
    return 0


if __name__ == "__main__":
    sys.exit(main())
