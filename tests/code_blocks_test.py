#!/usr/bin/env python3
"""Every code block a manual quotes from a file of the tree equals that file.

A manual quotes a file with an HTML comment on the line right before the
block's opening fence, naming the file from the repository's root:

    <!-- quoted from tools/nginx/ngx_http_upstream_chash_module.c -->
    ```c
    ...
    ```

(words after the path, before `-->`, are free text; a `:` or `,` ending
the path is not part of it). The block's non-blank
lines, each with its whitespace runs taken as one space and its ends
stripped, must appear in that file in the same order, one after the other
(the file's blank lines skipped): a quote may be any part of the file, but
not a part with lines left out, changed or added. A marker with no block
after it, or naming a file that is not in the repository, fails too.

And a block of three or more non-blank lines that is such a copy of a
tracked file, but carries no marker, fails: a copy nothing checks drifts
when its file changes, so it must say what it quotes.

The README's C and C++ examples are not quotes: tests/CMakeLists.txt
compiles and runs them (chash_readme_example), which is their check.

  code_blocks_test.py ROOT [--self-test]

Reads every tracked Markdown file (git ls-files '*.md'). Exit status 1
naming FILE:LINE of each block that differs from its source and what
differs.
"""

import re
import subprocess
import sys
import tempfile
from pathlib import Path

FENCE = re.compile(r"^\s{0,3}(```+|~~~+)(.*)$")
MARKER = re.compile(r"^\s*<!--\s*quoted from\s+(\S+?)(?:\s+[^>]*?)?\s*-->\s*$")
UNMARKED_MIN_LINES = 3


def norm(line):
    return " ".join(line.split())


def blocks(text):
    """(opening line, marker path or None, marker line, body lines) of each
    fenced block, and (line, path) of each marker no block follows."""
    found, orphans = [], []
    lines = text.split("\n")
    fence = None
    marker = None  # (line number, path) of a marker on the previous line
    for number, line in enumerate(lines, 1):
        opened = FENCE.match(line)
        if fence:
            if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence) \
                    and not opened.group(2).strip():
                found.append(current)
                fence = None
            else:
                current[3].append(line)
            continue
        if opened:
            fence = opened.group(1)
            path, marked_at = (marker[1], marker[0]) if marker else (None, None)
            current = (number, path, marked_at, [])
            marker = None
            continue
        if marker:
            orphans.append(marker)
            marker = None
        quoted = MARKER.match(line)
        if quoted:
            marker = (number, quoted.group(1).rstrip(":,;"))
    if marker:
        orphans.append(marker)
    return found, orphans


def source_lines(path, cache):
    """The file's non-blank lines, normalized, with their line numbers."""
    if path not in cache:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            cache[path] = None
        else:
            cache[path] = [(n, norm(l)) for n, l in enumerate(text.split("\n"), 1) if l.strip()]
    return cache[path]


def compare(quote, source):
    """None when quote is a contiguous run of source; else (index in the
    quote of the first line that differs, (line number, text) the source has
    there or None) for the longest run that matches from the quote's start."""
    texts = [t for _, t in source]
    best = (0, None)
    for start, text in enumerate(texts):
        if text != quote[0]:
            continue
        length = 0
        while length < len(quote) and start + length < len(texts) \
                and texts[start + length] == quote[length]:
            length += 1
        if length == len(quote):
            return None
        if length > best[0]:
            at = start + length
            best = (length, source[at] if at < len(source) else None)
    return best


def is_copy(quote, joined):
    """Whether quote is a contiguous run of one of the joined sources."""
    needle = "\n" + "\n".join(quote) + "\n"
    return next((rel for rel, text in joined.items() if needle in text), None)


def check(root, docs, sources):
    """(failures, quoted blocks checked, files that quote). docs: the
    Markdown files to read; sources: every file a block may quote (those
    not Markdown are also the files an unmarked block must not copy); paths
    relative to root."""
    failures, checked, quoting = [], 0, set()
    cache, joined = {}, None
    for doc in docs:
        text = (root / doc).read_text(encoding="utf-8", errors="replace")
        found, orphans = blocks(text)
        for number, path in orphans:
            failures.append(f"{doc}:{number}: the marker quoting {path} is not right before "
                            "a fenced block")
        for opened, path, marked_at, body in found:
            numbered = [(opened + 1 + i, norm(l)) for i, l in enumerate(body) if l.strip()]
            quote = [t for _, t in numbered]
            where = f"{doc}:{opened}"
            if path is None:
                if len(quote) < UNMARKED_MIN_LINES:
                    continue
                if joined is None:
                    joined = {}
                    for rel in sources:
                        if rel.endswith(".md"):
                            continue
                        lines = source_lines(root / rel, cache)
                        if lines:
                            joined[rel] = "\n" + "\n".join(t for _, t in lines) + "\n"
                copied = is_copy(quote, joined)
                if copied:
                    failures.append(f"{where}: the block is a copy of {copied} but says "
                                    f"nothing: put <!-- quoted from {copied} --> before its "
                                    "fence, so a change to the file shows")
                continue
            checked += 1
            quoting.add(doc)
            target = (root / path).resolve()
            if not target.is_relative_to(root) or path not in sources or not target.is_file():
                failures.append(f"{where}: quotes {path}, which is not a file of the repository")
                continue
            if not quote:
                failures.append(f"{where}: an empty block quoting {path}")
                continue
            lines = source_lines(target, cache) or []
            differs = compare(quote, lines)
            if differs is None:
                continue
            index, there = differs
            line = numbered[index][0]
            if index == 0:
                failures.append(f"{where}: the block's first line (line {line}) is nowhere in "
                                f"{path}: {quote[0]!r}")
            elif there is None:
                failures.append(f"{where}: {path} ends before the block's line {line}: "
                                f"{quote[index]!r}")
            else:
                failures.append(f"{where}: line {line} differs from {path}:{there[0]}: "
                                f"{quote[index]!r}, the file has {there[1]!r}")
    return failures, checked, quoting


def self_test():
    """A good quote passes; a wrong line, a left-out line, a marker with no
    block, a missing file and an unmarked copy each fail, named."""
    source = ("/* the protocol */\n#define ngx_chash_proto(name)  ngx_http_ ## name\n\n"
              "#define NGX_CHASH_DEFAULT_PORT  80\n#include \"ngx_chash_module.h\"\n")
    good = ("# Probe\n\n<!-- quoted from src/module.c: HTTP's names -->\n```c\n"
            "#define ngx_chash_proto(name)       ngx_http_ ## name\n"
            "#define NGX_CHASH_DEFAULT_PORT      80\n```\n\n"
            "```\nnot a quote\nof anything\nat all\n```\n")
    bad = ("<!-- quoted from src/module.c -->\n```c\n"            # 1, fence 2
           "#define ngx_chash_proto(name)  ngx_http_ ## name\n"
           "#define NGX_CHASH_DEFAULT_PORT  0\n```\n\n"           # line 4 wrong
           "<!-- quoted from src/module.c -->\n```c\n"            # 7, fence 8
           "/* the protocol */\n#include \"ngx_chash_module.h\"\n```\n\n"  # one left out
           "<!-- quoted from src/module.c -->\n\n```c\n/* the protocol */\n```\n\n"  # 13: orphan
           "<!-- quoted from src/gone.c -->\n```c\n/* the protocol */\n```\n\n"      # fence 20
           "```c\n#define ngx_chash_proto(name) ngx_http_ ## name\n"               # fence 24
           "#define NGX_CHASH_DEFAULT_PORT 80\n#include \"ngx_chash_module.h\"\n```\n")
    with tempfile.TemporaryDirectory(prefix="chash-code-blocks-") as tmp:
        root = Path(tmp).resolve()
        (root / "src").mkdir()
        (root / "src/module.c").write_text(source)
        (root / "good.md").write_text(good)
        (root / "bad.md").write_text(bad)
        sources = ["src/module.c"]
        failures, checked, _ = check(root, ["good.md"], sources)
        if failures or checked != 1:
            return [f"a good quote failed ({checked} checked): {failures}"]
        failures, checked, _ = check(root, ["bad.md"], sources)
        expected = ["bad.md:2: line 4 differs from src/module.c:4", "bad.md:8: line 10 differs",
                    "bad.md:13: the marker", "bad.md:20: quotes src/gone.c",
                    "bad.md:24: the block is a copy of src/module.c"]
        missing = [e for e in expected if not any(f.startswith(e) for f in failures)]
        if missing or len(failures) != len(expected):
            return [f"expected failures starting {expected}, got {failures}"]
    return []


def main(argv):
    if len(argv) < 2:
        print(__doc__.split("\n\n")[-2].strip(), file=sys.stderr)
        return 2
    if "--self-test" in argv[2:]:
        errors = self_test()
        print("\n".join("FAIL: " + e for e in errors) if errors else
              "ok: the checker finds a changed line, a left-out line, a marker without a "
              "block, a missing file and an unmarked copy")
        return 1 if errors else 0
    root = Path(argv[1]).resolve()

    def tracked(*pattern):
        return subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--", *pattern],
                              capture_output=True, text=True, check=True).stdout.split("\0")

    docs = sorted(p for p in tracked("*.md") if p)
    sources = sorted(p for p in tracked() if p)
    failures, checked, quoting = check(root, docs, sources)
    for failure in failures:
        print("FAIL:", failure)
    if not checked:
        print("FAIL: no quoted block found (a marker is <!-- quoted from PATH -->)")
        return 1
    if failures:
        return 1
    print(f"ok: {checked} quoted blocks in {len(quoting)} files equal their sources "
          f"({len(docs)} Markdown files read, no unmarked copy of a tracked file)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
