#!/usr/bin/env python3
"""Every chash_* name a manual writes exists in the code.

The manuals (every tracked Markdown file but CHANGELOG.md, which records
names as they were) name C functions, types and constants, nginx directives
and Prometheus metrics, Lua and Rust names, CMake targets. Each chash_* word
there must be one of:

  - an identifier of include/chash/chash_c.h (or a prefix of some, written
    `chash_migration_*` or `chash_availability_`),
  - a directive or metric of the nginx modules (a string in tools/nginx/),
  - a name in chash.resty or the Rust crate,
  - a CMake target or function of the build (CMakeLists.txt, tests/, tools/),
  - a name of another program a manual quotes, listed below with its source.

  doc_names_test.py ROOT [--self-test]

Exit status 1 naming each unknown name and the files that write it.
"""

import re
import sys
import tempfile
from pathlib import Path

import tree_checks

# Names of other programs' code that a manual quotes.
QUOTED = {
    "chash_dequeue_srv": "HAProxy's lb_chash.c",
    "chash_key": "a benchmark's row name (bench/README.md)",
    "chash_bytes": "a column of chash plan's output",
}

NAME = re.compile(r"\bchash_\w+")


def known_names(root):
    names = set()
    texts = [root / "include/chash/chash_c.h"]
    texts += sorted((root / "tools/nginx").glob("*.[ch]"))
    texts += sorted((root / "tools/lua/lib/chash").glob("*.lua"))
    texts += sorted((root / "tools/rust/src").glob("*.rs"))
    texts += [root / "CMakeLists.txt"] + sorted(root.glob("tests/**/CMakeLists.txt"))
    texts += sorted(root.glob("tools/**/CMakeLists.txt")) + sorted(root.glob("tools/**/*.cmake"))
    texts += sorted((root / "cmake").glob("*"))
    texts += sorted((root / "tools/cli").glob("*.cc"))
    for path in texts:
        if path.is_file():
            names |= set(NAME.findall(path.read_text(errors="replace")))
    return names


def unknown_names(root, docs, names):
    unknown = {}
    for path in docs:
        for name in NAME.findall(path.read_text(errors="replace")):
            if name in names or name in QUOTED:
                continue
            # `chash_migration_*`, `chash_availability_`: a prefix of real names
            stem = name.rstrip("_")
            if name.endswith("_") and any(n.startswith(stem + "_") for n in names):
                continue
            where = path.relative_to(root) if path.is_relative_to(root) else path
            unknown.setdefault(name, set()).add(str(where))
    return unknown


def main():
    root = Path(sys.argv[1]).resolve()
    names = known_names(root)
    if "--self-test" in sys.argv:
        probe = Path(tempfile.mkdtemp(prefix="chash-doc-names-")) / "probe.md"
        probe.write_text("`chash_ring_find` and `chash_ring_walk_distinct` and `chash_migration_*`\n")
        got = unknown_names(root, [probe], names)
        probe.unlink()
        probe.parent.rmdir()
        return tree_checks.verdict(
            [] if set(got) == {"chash_ring_walk_distinct"} else
            ["the checker found %s, not chash_ring_walk_distinct alone" % sorted(got)],
            "the checker finds a name that does not exist")
    docs = [root / p for p in tree_checks.tracked(root, "*.md") if not p.endswith("CHANGELOG.md")]
    unknown = unknown_names(root, docs, names)
    return tree_checks.verdict(
        ["%s (in %s) names nothing in the code" % (name, ", ".join(sorted(where)))
         for name, where in sorted(unknown.items())],
        "%d manuals, every chash_* name exists" % len(docs))


if __name__ == "__main__":
    sys.exit(main())
