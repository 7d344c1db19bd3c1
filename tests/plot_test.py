#!/usr/bin/env python3
"""Tests of `chash plan|stats|diff --plot` and of progress on a terminal.

usage: plot_test.py --chash "CMD" --tmp DIR [unittest args, e.g. PlanPlot]

CMD runs the chash binary (through the emulator in a cross build). Each
picture must be well-formed XML, carry its title, axis titles and command,
hold in <metadata> exactly the JSON that --json prints, draw every value
where the metadata's scales map it, and render with rsvg-convert to a PNG
that shows the marks' colours. Standard library only (plus rsvg-convert).
"""
import argparse
import json
import os
import shlex
import shutil
import struct
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ET
import zlib

SVG = "{http://www.w3.org/2000/svg}"
CHASH = []
TMP = ""

FLEET = """# cache servers; weight = disk TB
10.0.0.1:443 4
10.0.0.2:443 4
10.0.0.3:443 8
10.0.0.4:443 8
10.0.0.5:443 16
10.0.0.6:443 16
"""


def write(name, text):
    path = os.path.join(TMP, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def run(*args, check=True):
    proc = subprocess.run(CHASH + list(args), capture_output=True, text=True, timeout=300)
    if check and proc.returncode != 0:
        raise AssertionError(f"chash {' '.join(args)} failed: {proc.stderr}")
    return proc


def scale(meta, name, value):
    s = meta[name]
    d0, d1 = s["domain"]
    p0, p1 = s["range"]
    if s["log"]:
        import math
        t = (math.log10(value) - math.log10(d0)) / (math.log10(d1) - math.log10(d0))
    else:
        t = (value - d0) / (d1 - d0)
    return p0 + t * (p1 - p0)


def png_pixels(path):
    """(width, height, set of RGB colours) of an 8-bit RGB/RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and colour in (2, 6), (depth, colour)
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + length
    raw = zlib.decompress(idat)
    stride = width * channels
    prev = bytearray(stride)
    colours = set()
    for row in range(height):
        start = row * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        for i in range(0, stride, channels):
            if channels == 3 or line[i + 3] == 255:
                colours.add(bytes(line[i:i + 3]))
        prev = line
    return width, height, colours


class PlotCase(unittest.TestCase):
    def load(self, path):
        """The SVG's root and its metadata, after the common checks."""
        with open(path, "rb") as f:
            text = f.read()
        root = ET.fromstring(text)  # raises on malformed XML
        self.assertEqual(root.tag, SVG + "svg")
        self.assertTrue(root.find(SVG + "title").text)
        meta = json.loads(root.find(SVG + "metadata").text)
        texts = [t.text or "" for t in root.iter(SVG + "text")]
        self.assertTrue(any(t.startswith("made by: chash ") for t in texts), texts)
        self.assertEqual(next(t for t in texts if t.startswith("made by: "))[9:], meta["command"])
        return root, meta, texts

    def render(self, path, must_show):
        """rsvg-convert renders it; the PNG has the SVG's size and shows the colours."""
        if shutil.which("rsvg-convert") is None:
            self.fail("rsvg-convert is missing (Debian librsvg2-bin, in CHASH_BUILD_PACKAGES)")
        png = path[:-4] + ".png"
        proc = subprocess.run(["rsvg-convert", "-o", png, path], capture_output=True, text=True)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        root = ET.parse(path).getroot()
        width, height, colours = png_pixels(png)
        self.assertEqual((width, height), (int(root.get("width")), int(root.get("height"))))
        for colour in must_show:
            self.assertIn(bytes.fromhex(colour[1:]), colours, f"{colour} not drawn in {png}")

    def near(self, a, b, what):
        self.assertLessEqual(abs(float(a) - b), 0.011, f"{what}: drawn at {a}, value maps to {b}")


def marks(root, series):
    return [e for e in root.iter() if e.get("data-series") == series]


def polyline_points(element):
    return [tuple(map(float, p.split(","))) for p in element.get("points").split()]


class PlanPlot(PlotCase):
    def test_values_drawn_are_the_json_values(self):
        fleet = write("plan-fleet.txt", FLEET)
        svg = os.path.join(TMP, "plan.svg")
        args = ["plan", "--servers", fleet, "--mode", "pingora-v1", "--cv-target", "3%",
                "--rings", "24", "--multiples", "1,4,16,64,256,1024", "--max-points", "20000"]
        plotted = run(*args, "--json", "--plot", svg)
        alone = run(*args, "--json")
        self.assertEqual(plotted.stdout, alone.stdout, "--plot changed --json")
        data = json.loads(alone.stdout)
        root, meta, texts = self.load(svg)
        self.assertEqual(meta["kind"], "plan")
        self.assertEqual(meta["data"], data)
        self.assertIn("K, points per weight unit (log scale)", texts)
        self.assertTrue(any(t.startswith("CV of share / weight share, %") for t in texts))
        self.assertTrue(any(t.startswith("bytes a ring") for t in texts))

        built = [c for c in data["candidates"] if not c["skipped"]]
        self.assertEqual([c["multiple"] for c in built], [1, 4, 16, 64, 256])  # 1024 x 56 > 20,000
        for series, field, axis in (("cv_measured", "cv_measured", "y"),
                                    ("cv_predicted", "cv_predicted", "y"),
                                    ("bytes_per_ring", "bytes_per_ring", "y2")):
            drawn = marks(root, series)
            self.assertEqual(len(drawn), len(built), series)
            for mark, c in zip(drawn, built):
                self.assertEqual(int(mark.get("data-k")), c["multiple"])
                self.assertEqual(float(mark.get("data-value")), c[field], series)
                if mark.tag == SVG + "circle":
                    x, y = float(mark.get("cx")), float(mark.get("cy"))
                else:
                    x = float(mark.get("x")) + float(mark.get("width")) / 2
                    y = float(mark.get("y")) + float(mark.get("height")) / 2
                self.near(x, scale(meta, "x", c["multiple"]), f"{series} K={c['multiple']} x")
                self.near(y, scale(meta, axis, c[field]), f"{series} K={c['multiple']} y")
        (target,) = marks(root, "cv_target")
        self.assertEqual(float(target.get("data-value")), data["cv_target"])
        self.near(target.get("y1"), scale(meta, "y", 0.03), "target")
        (recommended,) = marks(root, "recommended")
        self.assertEqual(int(recommended.get("data-k")), data["recommended_multiple"])
        self.near(recommended.get("x1"), scale(meta, "x", data["recommended_multiple"]), "rec")
        current = data["current"]
        for series, field in (("current_cv_measured", "cv_measured"),
                              ("current_cv_predicted", "cv_predicted")):
            (mark,) = marks(root, series)
            self.assertEqual(int(mark.get("data-k")), 160)
            self.assertEqual(float(mark.get("data-value")), current[field])
        (diamond,) = marks(root, "current_cv_measured")
        xs = [p[0] for p in polyline_points(diamond)]
        ys = [p[1] for p in polyline_points(diamond)]
        self.near((min(xs) + max(xs)) / 2, scale(meta, "x", 160), "current x")
        self.near((min(ys) + max(ys)) / 2, scale(meta, "y", current["cv_measured"]), "current y")
        self.render(svg, ["#d62728", "#1f77b4", "#8c8c8c", "#2ca02c"])

    def test_same_input_same_bytes_and_escaped_text(self):
        fleet = write("a&b<c>'q'.txt", FLEET)
        first = os.path.join(TMP, "p1.svg")
        run("plan", "--servers", fleet, "--multiples", "2,8", "--plot", first)
        with open(first, "rb") as f:
            before = f.read()
        run("plan", "--servers", fleet, "--multiples", "2,8", "--plot", first)
        with open(first, "rb") as f:
            self.assertEqual(f.read(), before)
        root, meta, texts = self.load(first)
        self.assertTrue(any("a&b<c>'q'.txt" in t for t in texts), texts)
        self.assertIn("a&b<c>'\\''q'\\''.txt' ", meta["command"])
        self.render(first, ["#d62728"])

    def test_unwritable_plot_is_an_error_naming_it(self):
        fleet = write("plan-fleet.txt", FLEET)
        proc = run("plan", "--servers", fleet, "--plot", os.path.join(TMP, "no/such/dir/p.svg"),
                   check=False)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("no/such/dir/p.svg", proc.stderr)


class StatsPlot(PlotCase):
    def check(self, servers, expect_circles):
        svg = os.path.join(TMP, "stats.svg")
        args = ["stats", "--servers", servers, "--mode", "pingora-v1"]
        data = json.loads(run(*args, "--json", "--plot", svg).stdout)
        root, meta, texts = self.load(svg)
        self.assertEqual(meta["kind"], "stats")
        self.assertEqual(meta["data"]["shares"], data["shares"])
        self.assertIn("share of key hashes / weight share (1 = fair)", texts)
        weighted = [s for s in data["shares"] if s["weight"] > 0]
        self.assertEqual(sum(s["hashes"] for s in data["shares"]), 2**32)
        ratios = sorted(s["ratio"] for s in weighted)
        self.assertAlmostEqual(ratios[-1], data["max_share_ratio"], places=6)
        self.assertAlmostEqual(ratios[0], data["min_share_ratio"], places=6)
        (line,) = marks(root, "ratio_sorted")
        points = polyline_points(line)
        self.assertEqual(len(points), len(weighted))
        for rank, ((x, y), ratio) in enumerate(zip(points, ratios), start=1):
            self.near(x, scale(meta, "x", rank), f"rank {rank} x")
            self.near(y, scale(meta, "y", ratio), f"rank {rank} y")
        circles = marks(root, "ratio")
        self.assertEqual(len(circles), len(weighted) if expect_circles else 0)
        for circle in circles:
            share = data["shares"][int(circle.get("data-node"))]
            self.assertEqual(float(circle.get("data-value")), share["ratio"])
            self.near(circle.get("cy"), scale(meta, "y", share["ratio"]), "circle y")
            self.near(circle.get("cx"), scale(meta, "x", int(circle.get("data-rank"))), "x")
        self.assertEqual(len(marks(root, "band")), 2)
        self.render(svg, ["#222222", "#1f77b4"])

    def test_small_fleet_with_a_drained_server(self):
        self.check(write("stats-fleet.txt", FLEET + "10.0.0.7:443 0\n"), expect_circles=True)

    def test_large_fleet_draws_a_line(self):
        lines = [f"10.0.{i // 256}.{i % 256}:443 {1 + i % 3}" for i in range(300)]
        self.check(write("stats-300.txt", "\n".join(lines) + "\n"), expect_circles=False)


class DiffPlot(PlotCase):
    def check(self, old, new, bars):
        svg = os.path.join(TMP, "diff.svg")
        args = ["diff", "--servers", old, "--new-servers", new, "--mode", "pingora-v1",
                "--new-mode", "pingora-v2", "--new-multiple", "100"]
        data = json.loads(run(*args, "--json", "--plot", svg).stdout)
        root, meta, texts = self.load(svg)
        self.assertEqual(meta["kind"], "diff")
        self.assertEqual(meta["data"], data)
        nodes = data["nodes"]
        for series, axis, sign in (("old_share", "y", 1), ("new_share", "y", 1),
                                   ("moved_out", "y_moved", -1), ("moved_in", "y_moved", 1)):
            drawn = marks(root, series)
            if bars:
                self.assertEqual(len(drawn), len(nodes), series)
                for rect in drawn:
                    node = nodes[int(rect.get("data-node"))]
                    self.assertEqual(float(rect.get("data-value")), node[series])
                    zero = scale(meta, axis, 0)
                    tip = scale(meta, axis, sign * node[series])
                    self.near(rect.get("y"), min(zero, tip), f"{series} top")
                    self.near(float(rect.get("y")) + float(rect.get("height")), max(zero, tip),
                              f"{series} bottom")
            else:
                (line,) = drawn
                points = polyline_points(line)
                self.assertEqual(len(points), len(nodes))
                for i, ((x, y), node) in enumerate(zip(points, nodes)):
                    self.near(x, scale(meta, "x", i + 0.5), f"{series} {i} x")
                    self.near(y, scale(meta, axis, sign * node[series]), f"{series} {i} y")
        self.render(svg, ["#1f77b4", "#ff7f0e", "#d62728", "#2ca02c"])

    def test_bars_with_a_server_added(self):
        old = write("diff-old.txt", FLEET)
        new = write("diff-new.txt", FLEET + "10.0.0.7:443 8\n")
        self.check(old, new, bars=True)

    def test_many_servers_draw_lines(self):
        lines = [f"10.0.{i // 256}.{i % 256}:443 2" for i in range(100)]
        old = write("diff-100.txt", "\n".join(lines) + "\n")
        self.check(old, old, bars=False)


class Progress(unittest.TestCase):
    """Progress on stderr when it is a terminal (script(1) gives one), never otherwise."""

    def commands(self):
        fleet = write("progress-fleet.txt", FLEET)
        return [["stats", "--servers", fleet, "--mode", "pingora-v1"],
                ["diff", "--servers", fleet, "--new-mode", "pingora-v2", "--new-multiple", "64"],
                ["plan", "--servers", fleet, "--multiples", "4,8"],
                ["demo", "--nodes", "16", "--weight", "2"]]

    def test_terminal_shows_progress(self):
        if shutil.which("script") is None:
            self.fail("script(1) is missing (Debian bsdutils / util-linux)")
        expected = {"stats": "building pingora-v1 ring: 8,960 points",
                    "diff": "diff: merging", "plan": "plan: building", "demo": "exact shares"}
        for args in self.commands():
            line = " ".join(shlex.quote(a) for a in CHASH + args) + " >/dev/null"
            proc = subprocess.run(["script", "-qec", line, "/dev/null"], capture_output=True,
                                  timeout=300)
            out = proc.stdout.decode()  # bytes: text mode would turn \r into \n
            self.assertEqual(proc.returncode, 0, out)
            self.assertIn("chash: ", out, args)
            self.assertIn(expected[args[0]], out, args)
            self.assertIn("\r", out.replace("\r\n", "\n"), args)  # the line is redrawn

    def test_pipe_shows_none(self):
        for args in self.commands():
            proc = run(*args)
            self.assertEqual(proc.stderr, "", args)


def main():
    global CHASH, TMP
    parser = argparse.ArgumentParser()
    parser.add_argument("--chash", required=True)
    parser.add_argument("--tmp", required=True)
    known, rest = parser.parse_known_args()
    CHASH = shlex.split(known.chash)
    TMP = os.path.join(known.tmp, str(os.getpid()))
    os.makedirs(TMP, exist_ok=True)
    unittest.main(argv=[sys.argv[0]] + rest, verbosity=2)


if __name__ == "__main__":
    main()
