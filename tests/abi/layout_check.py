#!/usr/bin/env python3
"""The C ABI beyond symbol names: every public struct's size, alignment and
field offsets, every CHASH_* constant and every prototype of
include/chash/chash_c.h, against tests/data/abi/chash_c.layout.

    tests/abi/layout_check.py [--update] [--clang clang-14] [--include DIR]

What only grows ("Structs that grow" in chash_c.h): a struct whose first
field is `uint32_t size` may grow (a larger size, new fields at its end);
every field of the baseline keeps its offset and type, every constant its
value, every prototype its text. Anything the baseline lacks is allowed
and reported (--update adds it, in the commit that adds it); anything it
has that changed or went is an ABI break: a new major version, never an
edit of the baseline. The layouts are x86-64's (clang's record layout
dump of the header, compiled as C).
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INCLUDE = os.path.join(ROOT, "include")
BASELINE = os.path.join(ROOT, "tests", "data", "abi", "chash_c.layout")
# What a release changes on purpose.
VOLATILE_CONSTANTS = re.compile(r"^CHASH_VERSION_")


def structs(text):
    return sorted(set(re.findall(r"\bstruct\s+(chash_\w+)\s*\{", text)))


def layouts(clang, include, names):
    """struct lines: 'struct NAME size N align A' and 'field NAME.F OFFSET TYPE'."""
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "layout.c")
        with open(source, "w") as f:
            f.write('#include "chash/chash_c.h"\n')
            for i, name in enumerate(names):
                f.write("int chash_layout_%d = sizeof(struct %s);\n" % (i, name))
        r = subprocess.run([clang, "-x", "c", "-std=c99", "-I", include,
                            "-fsyntax-only", "-Xclang", "-fdump-record-layouts", source],
                           capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit("layout_check: %s failed:\n%s" % (clang, r.stderr))
    lines, current = [], None
    for raw in r.stdout.splitlines():
        m = re.match(r"^\s*(\d+) \|\s*struct (chash_\w+)$", raw)
        if m and m.group(1) == "0" and current is None:
            current = m.group(2)
            continue
        m = re.match(r"^\s*(\d+) \|   (.+?) (\w+)$", raw)
        if m and current:
            lines.append("field %s.%s %s %s" % (current, m.group(3), m.group(1), m.group(2)))
            continue
        m = re.match(r"^\s*\| \[sizeof=(\d+), align=(\d+)\]$", raw)
        if m and current:
            lines.append("struct %s size %s align %s" % (current, m.group(1), m.group(2)))
            current = None
    return lines


def constants(clang, include):
    r = subprocess.run([clang, "-x", "c", "-std=c99", "-I", include,
                        "-dM", "-E", os.path.join(include, "chash", "chash_c.h")], capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        sys.exit("layout_check: %s -dM -E failed:\n%s" % (clang, r.stderr))
    out = []
    for raw in r.stdout.splitlines():
        m = re.match(r"^#define (CHASH_\w+) (.+)$", raw)
        if m and not VOLATILE_CONSTANTS.match(m.group(1)) and \
                re.fullmatch(r"\(?-?(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\)?", m.group(2).strip()):
            out.append("const %s %s" % (m.group(1), m.group(2).strip()))
    return out


def prototypes(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    out = []
    for m in re.finditer(r"CHASH_C_API\s+([^;]+?)\s*CHASH_C_NOEXCEPT\s*;", text):
        out.append("proto " + " ".join(m.group(1).split()))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--update", action="store_true")
    ap.add_argument("--clang", default="clang-14")
    ap.add_argument("--include", default=INCLUDE, help="the headers to check (a copy, to test "
                    "the checker)")
    args = ap.parse_args()
    with open(os.path.join(args.include, "chash", "chash_c.h")) as f:
        text = f.read()
    names = structs(text)
    current = (layouts(args.clang, args.include, names) + constants(args.clang, args.include) +
               prototypes(text))
    if len([c for c in current if c.startswith("struct ")]) != len(names):
        sys.exit("layout_check: %d structs in the header, %d laid out" % (
            len(names), len([c for c in current if c.startswith("struct ")])))
    if args.update:
        with open(BASELINE, "w") as f:
            f.write("".join(line + "\n" for line in sorted(current)))
        print("baseline updated: %d lines" % len(current))
        return 0
    with open(BASELINE) as f:
        baseline = [line.rstrip("\n") for line in f if line.strip()]
    now = set(current)
    growing = {m.group(1) for line in current
               for m in [re.match(r"^field (\w+)\.size 0 uint32_t$", line)] if m}
    sizes = {m.group(1): (int(m.group(2)), m.group(3)) for line in current
             for m in [re.match(r"^struct (\w+) size (\d+) align (\d+)$", line)] if m}
    broken = []
    for line in baseline:
        if line in now:
            continue
        m = re.match(r"^struct (\w+) size (\d+) align (\d+)$", line)
        if m and m.group(1) in growing and m.group(1) in sizes and \
                sizes[m.group(1)][0] > int(m.group(2)) and sizes[m.group(1)][1] == m.group(3):
            continue  # a struct that grows, grown
        broken.append(line)
    added = sorted(now - set(baseline))
    if added:
        print("new in the ABI (add them to the baseline with --update):")
        print("".join("  + %s\n" % line for line in added), end="")
    if broken:
        print("FAIL: changed or gone from the ABI (a break):")
        print("".join("  - %s\n" % line for line in broken), end="")
        return 1
    print("ok: %d structs, %d constants, %d prototypes as the baseline or grown" % (
        len(names), len([c for c in current if c.startswith("const ")]),
        len([c for c in current if c.startswith("proto ")])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
