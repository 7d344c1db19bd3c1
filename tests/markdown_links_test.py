#!/usr/bin/env python3
"""Every relative link in every tracked Markdown file resolves.

usage: markdown_links_test.py ROOT          check ROOT's tracked *.md files
       markdown_links_test.py --self-test   check the checker on broken links

A link resolves when its path (relative to the file that holds it) names a
file or folder inside ROOT and its #anchor, if any, is a heading or an
explicit id/name of that Markdown file, spelled as GitHub spells anchors:
the heading's text without markup, lower-cased, punctuation other than '-'
and '_' dropped, each space a '-', and '-1', '-2', ... after repeats.
Links with a scheme (https:, mailto:) are not fetched. Links inside code
(fenced blocks, `spans`) are text, not links. Exit status 1 lists each
broken link as FILE:LINE: TARGET: why.
"""

import os
import re
import subprocess
import sys
import tempfile

FENCE = re.compile(r"^\s{0,3}(```+|~~~+)")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEF = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_REF = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)=\"([^\"]+)\"", re.IGNORECASE)
HTML_ID = re.compile(r"<[a-z]+\s[^>]*?(?:id|name)=\"([^\"]+)\"", re.IGNORECASE)
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def heading_text(raw):
    """The heading as GitHub renders it to text: no code ticks, links,
    images, HTML tags or emphasis stars."""
    text = CODE_SPAN.sub(lambda m: m.group(2).strip(), raw)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    return text.replace("*", "")


def slug(text):
    text = heading_text(text).strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in "-_ ")
    return text.replace(" ", "-")


def scan(path):
    """(anchors, links) of one Markdown file; links are (line, target)."""
    anchors, links, seen = set(), [], {}
    fence = None
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            opened = FENCE.match(line)
            if fence:
                if opened and opened.group(1)[0] == fence[0] and len(opened.group(1)) >= len(fence):
                    fence = None
                continue
            if opened:
                fence = opened.group(1)
                continue
            for anchor in HTML_ID.findall(line):
                anchors.add(anchor)
            heading = HEADING.match(line)
            if heading:
                base = slug(heading.group(2))
                count = seen.get(base, 0)
                seen[base] = count + 1
                anchors.add(base if count == 0 else f"{base}-{count}")
            text = CODE_SPAN.sub("", line)
            for target in INLINE_LINK.findall(text) + HTML_REF.findall(text):
                links.append((number, target))
            definition = REFERENCE_DEF.match(text)
            if definition:
                links.append((number, definition.group(1)))
    return anchors, links


def markdown_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z", "--", "*.md"],
                             check=True, capture_output=True).stdout
        tracked = sorted(p for p in out.decode().split("\0") if p)
        if tracked:
            return tracked
    except (OSError, subprocess.CalledProcessError):
        pass
    # Not a git checkout (an unpacked tarball): every *.md outside build trees.
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(("build", "."))]
        found += [os.path.relpath(os.path.join(folder, f), root)
                  for f in files if f.endswith(".md")]
    return sorted(found)


def check(root):
    root = os.path.realpath(root)
    files = markdown_files(root)
    if not files:
        return [f"{root}: no Markdown files found"], 0
    cache, broken, count = {}, [], 0

    def anchors_of(path):
        if path not in cache:
            cache[path] = scan(path)
        return cache[path][0]

    for rel in files:
        path = os.path.join(root, rel)
        anchors_of(path)
        for number, target in cache[path][1]:
            if not target or SCHEME.match(target) or target.startswith("//"):
                continue
            count += 1
            where = f"{rel}:{number}: {target}"
            file_part, _, anchor = target.partition("#")
            file_part = file_part.split("?")[0]
            if file_part.startswith("/"):
                broken.append(f"{where}: absolute path (links must be relative)")
                continue
            dest = os.path.realpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            if dest != root and not dest.startswith(root + os.sep):
                broken.append(f"{where}: outside the repository")
                continue
            if not os.path.exists(dest):
                broken.append(f"{where}: no such file or folder")
                continue
            if anchor:
                if not dest.endswith(".md") or os.path.isdir(dest):
                    broken.append(f"{where}: an anchor into a file that is not Markdown")
                elif anchor not in anchors_of(dest):
                    broken.append(f"{where}: no heading or id '{anchor}' in "
                                  f"{os.path.relpath(dest, root)}")
    return broken, count


def self_test():
    """The checker finds each kind of broken link, and passes good ones."""
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "sub"))
        good = ("# Title\n## A `code` heading: with *stars*, dots. and (parens)\n"
                "## Repeat\n## Repeat\n<a id=\"custom\"></a>\n"
                "[a](#title) [b](#a-code-heading-with-stars-dots-and-parens) [c](#repeat-1)\n"
                "[d](sub/other.md#other-heading) [e](sub) [f](#custom) [g](https://x.invalid/#nope)\n"
                "`[not a link](missing.md)`\n```\n[not a link](missing.md)\n```\n")
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write(good)
        with open(os.path.join(root, "sub", "other.md"), "w") as f:
            f.write("## Other heading\n[up](../README.md#repeat)\n")
        broken, count = check(root)
        if broken or count != 7:
            return [f"good links reported broken ({count} checked): {broken}"]
        with open(os.path.join(root, "sub", "bad.md"), "w") as f:
            f.write("[1](missing.md)\n[2](#nowhere)\n[3](other.md#nowhere)\n"
                    "[4](../../outside.md)\n[5](/abs.md)\n[6](#repeat-2)\n"
                    "[7]: ../README.md#no-such\n")
        broken, _ = check(root)
        expected = [f"sub/bad.md:{n}:" for n in range(1, 8)]
        missing = [e for e in expected if not any(b.startswith(e) for b in broken)]
        if missing or len(broken) != len(expected):
            return [f"broken links not all found: expected {expected}, got {broken}"]
    return []


def main(argv):
    if argv[1:] == ["--self-test"]:
        errors = self_test()
        print("\n".join(errors) if errors else "ok: the checker finds 7 kinds of broken link")
        return 1 if errors else 0
    if len(argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    broken, count = check(argv[1])
    if broken:
        print("\n".join(broken))
        print(f"{len(broken)} of {count} relative links are broken")
        return 1
    print(f"ok: {count} relative links resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
