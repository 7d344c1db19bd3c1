#!/usr/bin/env python3
"""Writes the address spellings the real nginx and Rust are asked about.

One spelling a line on stdout, deterministic (fixed seed), no duplicates.
Spellings are printable ASCII (0x20-0x7E) without '"' and '\\', so that each
can be written into an nginx config as one double-quoted token, unchanged,
and into a TAB-separated golden file.

    python3 make_spellings.py > spellings.txt
"""
import random
import sys

rng = random.Random(20261130)
out = []
seen = set()


def add(text):
    assert all(0x20 <= ord(c) <= 0x7E and c not in '"\\' for c in text), text
    if text not in seen:
        seen.add(text)
        out.append(text)


# Ports: what may follow a ':' (None: no ':' at all).
PORTS = [None, "", "0", "00", "1", "01", "80", "080", "0080", "00000000000000000080",
         "443", "8080", "65535", "065535", "65536", "99999", "100000", "4294967296",
         "4294967377", "18446744073709551696", "-1", "+80", "1a", "a", "0x50", " 80",
         "80 ", "80:80", "8_0", "80/", "80?"]
COMMON_PORTS = [None, "", "0", "80", "0080", "65535", "65536"]


def with_port(host, port):
    return host if port is None else host + ":" + port


# ---- IPv4 and other dotted numbers ------------------------------------------
OCTETS = ["0", "00", "000", "0000", "1", "01", "001", "0001", "7", "07", "08", "09", "10",
          "010", "99", "100", "0100", "199", "255", "0255", "00255", "000255", "256",
          "300", "999", "1000", "", "a", "1a", "0x1", "0X1", "0x", "-1", "+1", " 1", "1 "]
BASES = [["127", "0", "0", "1"], ["10", "0", "0", "1"], ["1", "2", "3", "4"]]
for base in BASES:
    for position in range(4):
        for octet in OCTETS:
            parts = list(base)
            parts[position] = octet
            host = ".".join(parts)
            for port in COMMON_PORTS:
                add(with_port(host, port))
SMALL_OCTETS = ["0", "00", "1", "01", "255", "0255", "256", "", "8", "010", "1000"]
for _ in range(600):
    host = ".".join(rng.choice(SMALL_OCTETS) for _ in range(4))
    add(with_port(host, rng.choice(COMMON_PORTS + ["443", "080"])))
# Other part counts, and what inet_aton (the resolver's numeric parse) takes.
for parts in range(1, 7):
    for _ in range(40):
        host = ".".join(rng.choice(["0", "1", "01", "017", "08", "127", "255", "256",
                                    "65535", "65536", "16777215", "16777216",
                                    "4294967295", "4294967296", "0x7f", "0xff", ""])
                        for _ in range(parts))
        add(with_port(host, rng.choice([None, "80"])))
for host in ["127.1", "127.0.1", "127.0.0.1.", ".127.0.0.1", "127..0.1", "127.0.0..1",
             "2130706433", "0x7f000001", "017700000001", "0x7f.1", "0x7F.0.0.1", "0177.0.0.1",
             "127.000000000000000001", "1.2.3.4.5", "...", "....", "0.0.0.0",
             "255.255.255.255", "255.255.255.256", "1.2.3.04", "1.2.3.0004", "01.02.03.04",
             "0001.0002.0003.0004", "00000000000000000000001.2.3.4", "1.2.3", "1.2",
             "1", "0", "00", "4294967295", "4294967296"]:
    for port in PORTS:
        add(with_port(host, port))

# ---- Ports on a plain address -------------------------------------------------
for host in ["127.0.0.1", "10.0.0.1", "localhost", "[::1]"]:
    for port in PORTS:
        add(with_port(host, port))
for digits in range(1, 25):
    add("127.0.0.1:" + "0" * digits + "80")
    add("127.0.0.1:" + "9" * digits)

# ---- IPv6 -----------------------------------------------------------------------
V6_ADDRESSES = [
    [0] * 8, [0] * 7 + [1], [1] + [0] * 7, list(range(1, 9)), [0x2001, 0xdb8, 0, 0, 0, 0, 0, 1],
    [0xfe80, 0, 0, 0, 0, 0, 0, 1], [0, 0, 0, 0, 0, 0xffff, 0x0102, 0x0304],
    [0, 0, 0, 0, 0, 0, 0x0102, 0x0304], [1, 0, 0, 1, 0, 0, 1, 1], [1, 0, 1, 0, 1, 0, 1, 0],
    [0x2001, 0xdb8, 0xabcd, 0xef01, 0x2345, 0x6789, 0xabcd, 0xef01],
    [1, 2, 3, 4, 5, 6, 7, 0], [0, 2, 3, 4, 5, 6, 7, 8], [0xffff] * 8,
    [0, 0, 0, 0, 0, 0xffff, 0, 0], [0x64, 0xff9b, 0, 0, 0, 0, 0xc000, 0x0280],
]


def v6_forms(groups):
    """Several spellings of one IPv6 address, valid in RFC 4291 terms."""
    forms = []
    hexes = ["%x" % g for g in groups]
    forms.append(":".join(hexes))
    forms.append(":".join("%04x" % g for g in groups))
    forms.append(":".join("%X" % g for g in groups))
    # Every run of zero groups (length >= 1) compressed to "::".
    for start in range(8):
        for end in range(start + 1, 9):
            if all(g == 0 for g in groups[start:end]):
                forms.append(":".join(hexes[:start]) + "::" + ":".join(hexes[end:]))
    # An embedded dotted quad in the last two groups.
    quad = "%d.%d.%d.%d" % (groups[6] >> 8, groups[6] & 255, groups[7] >> 8, groups[7] & 255)
    forms.append(":".join(hexes[:6]) + ":" + quad)
    for start in range(6):
        for end in range(start + 1, 7):
            if all(g == 0 for g in groups[start:end]):
                head = ":".join(hexes[:start])
                mid = ":".join(hexes[end:6])
                forms.append(head + "::" + mid + (":" if mid else "") + quad)
    return forms


V6_PORTS = [None, "", "0", "1", "80", "0080", "65535", "65536", "a"]
for groups in V6_ADDRESSES:
    for form in v6_forms(groups):
        for port in V6_PORTS:
            add(with_port("[" + form + "]", port))
        add(form)  # without brackets
        add(form + ":80")
V6_ODD = [
    "", ":", "::", ":::", "::::", "1:::2", "::1::", "1::2::3", ":1::2", ":1:2:3:4:5:6:7:8",
    "1:2:3:4:5:6:7:8:", "1:2:3:4:5:6:7::", "::2:3:4:5:6:7:8", "1::3:4:5:6:7:8",
    "1:2:3:4:5:6:7::8", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "12345::", "0000:1::",
    "00000::1", "g::1", "::g", "::1.2.3.4", "::01.2.3.4", "::001.2.3.4", "::1.2.3",
    "::1.2.3.4.5", "::1.2.3.256", "::1..3.4", "::ffff:1.2.3.4", "::FFFF:1.2.3.4",
    "::ffff:01.02.03.04", "1.2.3.4::", "1.2.3.4", "1:2:3:4:5:6:1.2.3.4",
    "1:2:3:4:5:6:7:1.2.3.4", "1:2:3:4:5::1.2.3.4", "::1.2.3.4:5", "1::1.2.3.4",
    "::0x1", "::1%eth0", "::1%1", "fe80::1%lo", "fe80::1%", "fe80::1%25", "::1/128",
    ":: 1", "::1 ", " ::1", "::1]", "[::1", "[[::1]]", "::12345", "a:b:c:d:e:f:a:b",
    "A:B:C:D:E:F:A:B", "::ffff:0:0", "::ffff:255.255.255.255", "::ffff:256.1.1.1",
    "1:2:3:4:5:6:7:8%1", "::1.2.3.4%1", "::a.b.c.d", "1:2:3:4:5:6:7:8::", "::1:2:3:4:5:6:7",
    "::1:2:3:4:5:6:7:8", "1::2:3:4:5:6:7:8",
]
for inner in V6_ODD:
    for port in [None, "80", "0", "0080"]:
        add(with_port("[" + inner + "]", port))
for text in ["[::1]x", "[::1]:80x", "[::1]80", "[::1]:80:80", "[::1]::80", "[::1]/", "[::1]:80/",
             "[::1]/x", "[::1]?", "[::1]:80?a", "[]:80", "[]", "[", "]", "[::1]]:80",
             "[::1] :80", "[::1]: 80", "x[::1]:80", "[x]:80", "[localhost]:80"]:
    add(text)

# ---- Host names -------------------------------------------------------------------
NAMES = ["localhost", "LOCALHOST", "LocalHost", "localhost.", ".localhost", "localhost..",
         "runsc", "vm", "example.com", "example.invalid", "cache-1.internal", "a", "A", "z",
         "a-b", "-a", "a-", "a_b", "_a", "a.b", "a..b", ".a", "a.", "1a", "a1", "0x", "xn--bcher-kva",
         "a" * 63, "a" * 64, ("a" * 63 + ".") * 4, "*", "a*", "a!b", "a@b", "a%b", "a+b", "a~b",
         "a$b", "a&b", "a(b)", "a=b", "a;b", "a{b}", "a,b", "a#b", "a b", "a|b", "a^b", "a`b",
         "a'b", "a<b>", "a[b]", "a]b", "a/b", "a?b", "local host", "localhost ", " localhost",
         "localhost;", "local\x7ehost"]
for name in NAMES:
    for port in [None, "80", "0", "0080", "65536", ""]:
        add(with_port(name, port))
for text in ["http://127.0.0.1", "http://localhost:80", "127.0.0.1:80/", "127.0.0.1/",
             "127.0.0.1/x", "127.0.0.1?x", "localhost/x", "localhost:80/x", "localhost?x",
             "/tmp/x", "?", "/", ":", "::", ":80", "::80", ":0", ":::", "", " ", "  ",
             "127.0.0.1 80", "127.0.0.1:80 weight=1", "127.0.0.1:80;"]:
    add(text)

# ---- unix: paths --------------------------------------------------------------------
for prefix in ["unix:", "UNIX:", "Unix:", "uNiX:", "unix", "unix::", "unix//", "unx:"]:
    for path in ["", "/", "/tmp/x.sock", "x", "relative/x.sock", "/tmp/x:80", "/tmp/x:",
                 "[::1]:80", "127.0.0.1:80", "/tmp/a b", "/tmp/a;b", "/tmp/a#b", "/tmp/a,b",
                 ":80", "/tmp/x/", "/tmp/x?y"]:
        add(prefix + path)
for length in list(range(1, 5)) + list(range(100, 112)) + [200, 300]:
    add("unix:/" + "p" * (length - 1))
    add("unix:" + "q" * length)

sys.stdout.write("".join(text + "\n" for text in out))
