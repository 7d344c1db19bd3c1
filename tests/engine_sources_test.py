#!/usr/bin/env python3
"""Every source of engine/ is named in a README: its folder's or an
ancestor's within engine/, by file name or stem (`sorted_keys` names
sorted_keys.cc and sorted_keys.h), so a reader finds each file from the
manuals.

  engine_sources_test.py ROOT [--self-test]

Exit status 1 naming each source no README names.
"""

import re
import subprocess
import sys
from pathlib import Path


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
        if named(root, ghost, readme_text):
            print("FAIL: a file no README names passed")
            return 1
        print("ok: the check finds a source no README names")
        return 0
    listed = subprocess.run(["git", "-C", str(root), "ls-files", "engine"], capture_output=True,
                            text=True, check=True).stdout.split()
    sources = [root / p for p in listed if re.search(r"\.(cc|h)$", p)]
    missing = [s for s in sources if not named(root, s, readme_text)]
    for source in missing:
        print("FAIL: %s is named in no README of engine/" % source.relative_to(root))
    if missing:
        return 1
    print("ok: %d engine sources, each named in a README" % len(sources))
    return 0


if __name__ == "__main__":
    sys.exit(main())
