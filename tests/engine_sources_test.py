#!/usr/bin/env python3
"""Every source of engine/ is named in a README: its folder's or an
ancestor's within engine/, by file name or stem (`sorted_keys` names
sorted_keys.cc and sorted_keys.h), so a reader finds each file from the
manuals.

  engine_sources_test.py ROOT [--self-test]

Exit status 1 naming each source no README names.
"""

import re
import sys
from pathlib import Path

import tree_checks


def named(root, source, readme_text):
    stem = source.name.split(".")[0]
    folder = source.parent
    while folder == root / "engine" or root / "engine" in folder.parents:
        text = readme_text(folder / "README.md")
        if text and re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(stem), text):
            return True
        folder = folder.parent
    return False


def main():
    root = Path(sys.argv[1]).resolve()
    cache = {}

    def readme_text(path):
        if path not in cache:
            cache[path] = path.read_text(errors="replace") if path.is_file() else ""
        return cache[path]

    if "--self-test" in sys.argv:
        ghost = root / "engine" / "builder" / "no_readme_names_this_file.cc"
        return tree_checks.verdict(
            ["a file no README names passed"] if named(root, ghost, readme_text) else [],
            "the check finds a source no README names")
    sources = [root / p for p in tree_checks.tracked(root, "engine") if re.search(r"\.(cc|h)$", p)]
    missing = [s for s in sources if not named(root, s, readme_text)]
    return tree_checks.verdict(
        ["%s is named in no README of engine/" % s.relative_to(root) for s in missing],
        "%d engine sources, each named in a README" % len(sources))


if __name__ == "__main__":
    sys.exit(main())
