"""What the checks of the source tree (tests/*_test.py, ctest's Docs.*)
share: the files git tracks, and the verdict they print and exit with."""

import subprocess


def tracked(root, pathspec):
    """The paths, relative to root, of the files git tracks there that match
    pathspec."""
    return subprocess.run(["git", "-C", str(root), "ls-files", pathspec], capture_output=True,
                          text=True, check=True).stdout.split()


def verdict(failures, ok):
    """Prints "FAIL: " and each of failures, or else "ok: " and ok; returns
    the exit status (1 on a failure)."""
    for failure in failures:
        print("FAIL: " + failure)
    if failures:
        return 1
    print("ok: " + ok)
    return 0
