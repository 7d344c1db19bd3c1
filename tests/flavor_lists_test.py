#!/usr/bin/env python3
"""Where a manual or a public header lists the flavors, it lists them all.

The flavors and their names are the rows of engine/flavors.h (kFlavors).
A paragraph of a tracked Markdown file (CHANGELOG.md aside: it records
what was true then; bench/ too: its tables are of the flavors measured),
or a comment block of include/chash/*.h, that names
at least LIST_AT_LEAST of them is taken for a list of the flavors, and
must then name every one: one of
  - all of them,
  - the CRC-32 flavors (the rows before haproxy), or
  - the other programs' flavors (haproxy and the rows after it).
A list of four of nine, written when there were four, is how the manuals
drifted before; a new row now fails here until every list names it.

  flavor_lists_test.py ROOT [--self-test]

Exit status 1 naming each file, its line and the flavors its list lacks.
"""

import re
import sys
import tempfile
from pathlib import Path

import tree_checks

LIST_AT_LEAST = 4
ROW = re.compile(r'\{Flavor::k\w+, (\d+), "([a-z0-9-]+)"')


def flavor_names(root):
    """(all names in table order, the first program flavor's index)."""
    rows = ROW.findall((root / "engine/flavors.h").read_text())
    names = [name for _, name in rows]
    return names, names.index("haproxy")


def paragraphs(path):
    """(first line number, text) of each blank-line-separated paragraph; in
    a header, of each run of comment lines."""
    lines = path.read_text(errors="replace").splitlines()
    header = path.suffix == ".h"
    start, block = None, []
    for number, line in enumerate(lines, 1):
        part = line.strip()
        if header:
            keep = part.startswith("//") or part.startswith("/*") or part.startswith("*")
        else:
            keep = part != ""
        if keep:
            if start is None:
                start = number
            block.append(part)
        elif block:
            yield start, "\n".join(block)
            start, block = None, []
    if block:
        yield start, "\n".join(block)


def named(text, names):
    """The flavors a text names as code: in a `code span` of Markdown, a
    "string" of a header comment or the first cell of a table's row, alone
    or among others (`a|b`, `flavor=a`, "a", "b", | a, b |). Prose that
    names a program (nginx, HAProxy) is not a list."""
    spans = re.findall(r"`([^`\s]*)`", text) + re.findall(r'"([^"\s]*)"', text)
    # A Markdown table's first column names its rows: "| haproxy | ...".
    spans += [line.split("|")[1].replace(" ", "") for line in text.split("\n")
              if line.startswith("|") and "`" not in line.split("|")[1]]
    words = set()
    for span in spans:
        words |= set(re.split(r"[|=,\\]+", span))
    return [name for name in names if name in words]


def incomplete_lists(files, names, first_program, root, seen=None):
    """Failures, one a list that lacks flavors; `seen` (a list) collects
    where every list is."""
    groups = [set(names), set(names[:first_program]), set(names[first_program:])]
    failures = []
    for path in files:
        for line, text in paragraphs(path):
            found = set(named(text, names))
            if len(found) < LIST_AT_LEAST:
                continue
            if seen is not None:
                seen.append((path, line))
            if any(found == group for group in groups):
                continue
            # The smallest group holding what the list names is what it lists.
            group = min((g for g in groups if found <= g), key=len)
            missing = [n for n in names if n in group and n not in found]
            where = path.relative_to(root) if path.is_relative_to(root) else path
            failures.append("%s:%d lists %d flavors without %s" %
                            (where, line, len(found), ", ".join(missing)))
    return failures


def main():
    root = Path(sys.argv[1]).resolve()
    names, first_program = flavor_names(root)
    if "--self-test" in sys.argv:
        probe = Path(tempfile.mkdtemp(prefix="chash-flavor-lists-")) / "probe.md"
        probe.write_text("Flavors: `nginx`, `pingora-v1`, `pingora-v2`, `resty` and `haproxy`.\n\n"
                         "The CRC-32 ones: `nginx|pingora-v1|pingora-v2|resty`.\n\n"
                         "Prose: nginx, pingora-v1, pingora-v2, resty, haproxy.\n\n"
                         "| flavor | rule |\n|---|---|\n| haproxy | a |\n| ketama-md5 | b |\n"
                         "| varnish-shard | c |\n| envoy-ring | d |\n")
        # A flavor added to the table is one more missing from the probe's
        # table, not a failure of the checker.
        tabled = ("haproxy", "ketama-md5", "varnish-shard", "envoy-ring")
        got = incomplete_lists([probe], names, first_program, probe.parent)
        probe.unlink()
        probe.parent.rmdir()
        wanted = ["probe.md:1 lists 5 flavors without " + ", ".join(names[first_program + 1:]),
                  "probe.md:7 lists 4 flavors without " +
                  ", ".join(n for n in names[first_program:] if n not in tabled)]
        return tree_checks.verdict(
            [] if got == wanted else ["the checker answered %s, not %s" % (got, wanted)],
            "the checker finds a list that lacks flavors")
    # bench/: tables of what was measured, on the flavors that were.
    files = [root / p for p in tree_checks.tracked(root, "*.md")
             if not p.endswith("CHANGELOG.md") and not p.startswith("bench/")]
    files += sorted((root / "include/chash").glob("*.h"))
    lists = []
    failures = incomplete_lists(files, names, first_program, root, lists)
    return tree_checks.verdict(
        failures, "%d files, %d lists of the flavors: each names all %d, or all of its group" %
        (len(files), len(lists), len(names)))


if __name__ == "__main__":
    sys.exit(main())
