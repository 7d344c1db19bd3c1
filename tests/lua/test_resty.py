"""chash.resty (tools/lua/lib/chash/resty.lua) in the real OpenResty stack:
Debian's nginx with libnginx-mod-http-lua and lua-resty-core, 2 workers, as a
child on 127.0.0.1 stopped by its PID (tests/nginx/harness.py's style).

- the Lua unit tests (tests/lua/resty_unit.lua) of every call, against the
  answers recorded from resty.chash (tests/data/resty/);
- the other programs' rings (new_program_ring, tests/lua/programs_unit.lua)
  against every recorded answer of HAProxy, libmemcached, twemproxy, Varnish
  and Envoy's tests (tests/data/{haproxy,libmemcached,twemproxy,varnish,envoy});
- find() of every golden key of ra, in each worker, from the ring each
  worker built and from the snapshot every worker maps, against the golden
  data and `chash route --mode resty`;
- balancer_by_lua_block routing real requests with set_more_tries over
  backends of which a third refuse connections: first picks, retries and
  the answering backend against the golden data, `chash route --mode resty
  --down` and a model of the walk written here;
- the FFI declarations of chash.resty against include/chash/chash_c.h;
- watch, libchash's reload policy, in 2 workers sharing a state directory:
  one copy a host, a refused file never verified again however
  often the timers tick, a FIFO at the path refused without blocking the
  worker (the checks run in nginx's thread pool), and versions that only go
  up across a reload of nginx (SIGHUP).

Usage: python3 tests/lua/test_resty.py BUILD_DIR   (tools/lua/test runs it)
"""

import bisect
import ctypes
import http.client
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "tests", "data")
RESTY = os.path.join(DATA, "resty")
sys.path.insert(0, os.path.join(ROOT, "tests", "nginx"))
from harness import NGINX, free_port, main_context, refuses  # noqa: E402

BUILD = os.path.abspath(sys.argv.pop(1) if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
CHASH = os.path.join(BUILD, "tools", "chash")
MODULES = "/usr/share/nginx/modules"
REQUEST_TIMEOUT = 120  # a bound, not a speed check: the unit suite takes 2-6 s alone, 70+ on a loaded 2-core machine
PROXY_KEYS = 300  # requests per walk mode: bounded


def read_nodes(name):
    nodes = []
    with open(os.path.join(RESTY, name + ".nodes"), "rb") as f:
        for line in f.read().decode().splitlines():
            if line and not line.startswith("#"):
                ident, weight = line.rsplit(" ", 1)
                nodes.append((ident, int(weight)))
    return nodes


def read_answers(name):
    rows = []
    with open(os.path.join(RESTY, name), "rb") as f:
        for line in f.read().decode().splitlines():
            key, ident, index = line.rsplit(",", 2)
            rows.append((key, ident, int(index)))
    return rows


class Model:
    """resty.chash's ring, written from its rules: crc32(ID || le32(prev))
    from prev = 0, weight x 160 points, every point kept; equal hashes in
    chash's order (the smallest id first)."""

    def __init__(self, nodes):
        points = []
        for ident, weight in nodes:
            base = zlib.crc32(ident.encode())
            prev = 0
            for _ in range(weight * 160):
                prev = zlib.crc32(prev.to_bytes(4, "little"), base)
                points.append((prev, ident.encode(), ident))
        points.sort()
        self.hashes = [p[0] for p in points]
        self.ids = [p[2] for p in points]

    def position(self, key):
        i = bisect.bisect_left(self.hashes, zlib.crc32(key.encode()))
        return 0 if i == len(self.hashes) else i

    def distinct(self, key):
        seen, out, i = set(), [], self.position(key)
        for _ in range(len(self.ids)):
            if self.ids[i] not in seen:
                seen.add(self.ids[i])
                out.append(self.ids[i])
            i = (i + 1) % len(self.ids)
        return out


def damage(source, out):
    """A copy of snapshot `source` with one byte of its body changed: its
    header is sound, its checksum is not."""
    with open(source, "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0x55
    with open(out, "wb") as f:
        f.write(data)


def replace(path, source=None, fifo=False):
    """Puts a copy of `source` (or a FIFO) at `path` by rename, as `chash
    build` publishes: a new identity at the path in one step."""
    staged = path + ".staged"
    if fifo:
        os.mkfifo(staged)
    else:
        shutil.copyfile(source, staged)
    os.rename(staged, path)


def run(args, stdin=None):
    r = subprocess.run(args, input=stdin, capture_output=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("%s failed: %s" % (" ".join(args), r.stderr.decode()))
    return r.stdout.decode()


class OpenResty:
    """nginx + the Lua module in a temporary prefix, a child stopped by PID."""

    def __init__(self, workers, conf_body, lua_path_extra="", main_extra=""):
        self.lua_path_extra = lua_path_extra
        self.main_extra = main_extra
        self.prefix = tempfile.mkdtemp(prefix="chash-resty-")
        os.makedirs(os.path.join(self.prefix, "logs"))
        self.port = free_port()
        self.workers = workers
        self.conf_body = conf_body
        self.proc = None

    def conf(self):
        p = self.prefix
        loads = [MODULES + "/ndk_http_module.so", MODULES + "/ngx_http_lua_module.so"]
        return f"""# generated by tests/lua/test_resty.py
{main_context(p, self.workers, loads, 512, extra=self.main_extra)}
http {{
    access_log off;
    client_body_temp_path {p}/body;
    proxy_temp_path {p}/proxy;
    fastcgi_temp_path {p}/fastcgi;
    uwsgi_temp_path {p}/uwsgi;
    scgi_temp_path {p}/scgi;
    client_body_buffer_size 4m;
    client_max_body_size 8m;
    lua_package_path "{ROOT}/tools/lua/lib/?.lua;{HERE}/?.lua;{self.lua_path_extra}/usr/share/lua/5.1/?.lua;;";
    lua_package_cpath "{BUILD}/?.so;;";
{self.conf_body}
    server {{
        listen 127.0.0.1:{self.port};
        location = /ping {{ return 200 "pong"; }}
    }}
}}
"""

    def start(self, timeout=60):
        with open(os.path.join(self.prefix, "nginx.conf"), "w") as f:
            f.write(self.conf())
        self.log = open(os.path.join(self.prefix, "logs", "stderr.log"), "w")
        self.proc = subprocess.Popen(
            [NGINX, "-p", self.prefix, "-c", os.path.join(self.prefix, "nginx.conf"),
             "-e", os.path.join(self.prefix, "logs", "error.log")],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("nginx exited with %d:\n%s" % (self.proc.returncode,
                                                                   self.error_log()))
            try:
                if self.request("GET", "/ping", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("nginx did not answer on 127.0.0.1:%d" % self.port)

    def request(self, method, path, body=None, timeout=REQUEST_TIMEOUT):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers={"Connection": "close"})
            r = conn.getresponse()
            return r.status, r.read().decode("latin-1"), dict(r.getheaders())
        finally:
            conn.close()

    def error_log(self):
        try:
            with open(os.path.join(self.prefix, "logs", "error.log")) as f:
                return f.read()[-4000:]
        except OSError:
            return ""

    def stop(self, timeout=30):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
        if getattr(self, "log", None):
            self.log.close()
        shutil.rmtree(self.prefix, ignore_errors=True)


class RestyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="chash-resty-data-")
        t = cls.tmp
        ra = os.path.join(RESTY, "ra.nodes")
        nodes = read_nodes("ra")
        cls.nodes = nodes
        with open(os.path.join(t, "even.txt"), "w") as f:
            f.write("".join(ident + "\n" for ident, _ in nodes[0::2]))
        build = [CHASH, "build", "--mode", "resty", "--servers", ra,
                 "--subset", "even=" + os.path.join(t, "even.txt")]
        run(build + ["--config-version", "1", "--out", os.path.join(t, "ra.ring")])
        run(build + ["--config-version", "2", "--out", os.path.join(t, "ra_v2.ring")])
        run([CHASH, "keygen", "--out", os.path.join(t, "k")])
        run(build + ["--config-version", "3", "--sign", os.path.join(t, "k"),
                     "--out", os.path.join(t, "signed.ring")])
        run(build + ["--config-version", "4", "--out", os.path.join(t, "ra_v4.ring")])
        nginx_build = [CHASH, "build", "--servers", os.path.join(DATA, "nginx", "a.servers")]
        run(nginx_build + ["--out", os.path.join(t, "nginx.ring")])
        run(nginx_build + ["--config-version", "9", "--out", os.path.join(t, "nginx_v9.ring")])
        damage(os.path.join(t, "ra_v2.ring"), os.path.join(t, "corrupt.ring"))  # a new version, damaged
        # the other programs' rings as snapshots (programs_unit.lua loads them)
        for program, name, servers, options in (
                ("haproxy", "sdbm_uri_25", "mixed_25", ["--flavor", "haproxy",
                                                        "--hash-function", "sdbm"]),
                ("twemproxy", "md5_20", "port11211_20", ["--flavor", "ketama-md5", "--variant",
                                                         "twemproxy", "--key-hash", "md5"]),
                ("libmemcached", "ketama_100", "ips_100", ["--flavor", "ketama-md5", "--variant",
                                                           "libmemcached-unweighted"]),
                ("varnish", "url_20", "web_20", ["--flavor", "varnish-shard"])):
            run([CHASH, "build", "--servers", os.path.join(DATA, program, servers + ".servers"),
                 *options, "--out", os.path.join(t, name + ".ring")])

        # Backends: a third of the ids map to ports that refuse connections.
        cls.live_ports = [free_port() for _ in range(4)]
        dead_ports = []
        while len(dead_ports) < 3:
            p = free_port()
            if p not in cls.live_ports and refuses("127.0.0.1", p):
                dead_ports.append(p)
        cls.backend, cls.dead = {}, set()
        for i, ident in enumerate(sorted(ident for ident, _ in nodes)):
            if i % 3 == 0:
                cls.backend[ident] = dead_ports[i % 3]
                cls.dead.add(ident)
            else:
                cls.backend[ident] = cls.live_ports[i % 4]
        with open(os.path.join(t, "backends.txt"), "w") as f:
            for ident, port in sorted(cls.backend.items()):
                f.write("%s 127.0.0.1:%d\n" % (ident, port))
        with open(os.path.join(t, "dead.txt"), "w") as f:
            f.write("".join(ident + "\n" for ident in sorted(cls.dead)))

        live = "\n".join(
            "    server {{ listen 127.0.0.1:{0}; location / {{ add_header X-Port {0}; "
            "return 200 \"{0}\"; }} }}".format(p) for p in cls.live_ports)
        body = f"""
    init_worker_by_lua_block {{
        require("resty_app").init("{DATA}", "{t}/ra.ring", "{t}/backends.txt")
    }}
    upstream by_distinct {{
        server 0.0.0.1;
        balancer_by_lua_block {{ require("resty_app").balance("distinct") }}
    }}
    upstream by_next {{
        server 0.0.0.1;
        balancer_by_lua_block {{ require("resty_app").balance("next") }}
    }}
{live}
    server {{
        listen 127.0.0.1:{{port}};
        location = /unit {{
            content_by_lua_block {{
                ngx.say(require("resty_unit").run("{DATA}", "{t}"))
            }}
        }}
        location = /programs {{
            content_by_lua_block {{ ngx.say(require("programs_unit").run("{DATA}", "{t}")) }}
        }}
        location = /find {{ content_by_lua_block {{ require("resty_app").find_body() }} }}
        location /proxy/ {{
            proxy_next_upstream error timeout;
            proxy_next_upstream_tries 0;
            proxy_connect_timeout 2s;
            header_filter_by_lua_block {{ require("resty_app").headers() }}
            location = /proxy/distinct {{ proxy_pass http://by_distinct; }}
            location = /proxy/next {{ proxy_pass http://by_next; }}
        }}
    }}
"""
        cls.nginx = OpenResty(2, "", main_extra="thread_pool default threads=2;")
        cls.nginx.conf_body = body.replace("{port}", str(free_port()))
        # The app's server listens on its own port; /ping's server on nginx.port.
        cls.app_port = int(cls.nginx.conf_body.split("listen 127.0.0.1:")[-1].split(";")[0])
        cls.nginx.start()

    @classmethod
    def tearDownClass(cls):
        cls.nginx.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def app(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.app_port, timeout=REQUEST_TIMEOUT)
        try:
            conn.request(method, path, body=body, headers={"Connection": "close"})
            r = conn.getresponse()
            return r.status, r.read().decode("latin-1"), {k.lower(): v for k, v in r.getheaders()}
        finally:
            conn.close()

    def unit_suite(self, path, min_passed):
        """Runs a Lua suite of resty_unit's harness at `path`: its lines."""
        status, body, _ = self.app("GET", path)
        self.assertEqual(status, 200, self.nginx.error_log())
        lines = body.strip().splitlines()
        failures = [l for l in lines if l.startswith("not ok")]
        self.assertEqual(failures, [], "\n".join(failures))
        done = lines[-1].split()
        self.assertEqual(done[0], "done", body[-2000:])
        self.assertEqual(int(done[2]), 0)
        self.assertGreaterEqual(int(done[1]), min_passed, body)
        return lines

    def test_lua_unit_tests(self):
        self.unit_suite("/unit", 22)

    def test_program_rings_answer_as_the_programs(self):
        # tests/lua/programs_unit.lua: every recorded answer of haproxy 2.6,
        # libmemcached 1.1, nutcracker 0.5, varnish 7.1 and Envoy's unit
        # tests through new_program_ring (each set and answer count is
        # asserted there), the walks (Varnish's alt, Envoy's retries) and
        # the errors.
        lines = self.unit_suite("/programs", 13)
        for name in ("haproxy", "libmemcached", "twemproxy", "varnish", "envoy"):
            self.assertTrue(any(l.startswith("ok %s_every_golden_answer" % name) for l in lines),
                            name)
        self.assertIn("ok envoy_expectations_sizes_retries_sweeps", lines)

    def test_find_in_every_worker_and_from_the_snapshot(self):
        rows = read_answers("ra.csv")
        keys = "".join(r[0] + "\n" for r in rows).encode()
        route = run([CHASH, "route", "--mode", "resty", "--servers",
                     os.path.join(RESTY, "ra.nodes")], stdin=keys).splitlines()
        self.assertEqual(len(route), len(rows))
        for (key, ident, _), line in zip(rows, route):
            self.assertEqual(line, key + "," + ident)
        workers = set()
        for attempt in range(60):  # new connections until both workers answered
            for ring in ("ra", "snap"):
                status, body, _ = self.app("POST", "/find?ring=" + ring, keys)
                self.assertEqual(status, 200, self.nginx.error_log())
                lines = body.strip().splitlines()
                worker = lines.pop().split()
                self.assertEqual(worker[3], "sealed")  # the snapshot is a sealed copy
                workers.add(worker[1])
                self.assertEqual(len(lines), len(rows))
                for (key, ident, index), line in zip(rows, lines):
                    self.assertEqual(line, "%s,%d" % (ident, index), "%s ring %s" % (key, ring))
            if len(workers) >= 2 and attempt >= 1:
                break
        self.assertGreaterEqual(len(workers), 2, "only one worker answered")

    def proxy(self, mode, key):
        from urllib.parse import quote
        status, body, headers = self.app("GET", "/proxy/%s?k=%s" % (mode, quote(key, safe="")))
        return status, body, headers.get("x-tried", "").split(" "), headers.get("x-worker")

    def test_balancer_distinct_retries(self):
        rows = read_answers("ra.csv")[:PROXY_KEYS]
        keys = "".join(r[0] + "\n" for r in rows).encode()
        down = run([CHASH, "route", "--mode", "resty", "--servers",
                    os.path.join(RESTY, "ra.nodes"), "--down",
                    os.path.join(self.tmp, "dead.txt")], stdin=keys).splitlines()
        model = Model(self.nodes)
        workers, retried = set(), 0
        for (key, ident, _), line in zip(rows, down):
            status, body, tried, worker = self.proxy("distinct", key)
            workers.add(worker)
            self.assertEqual(status, 200, "%s: %s %s" % (key, tried, self.nginx.error_log()))
            self.assertEqual(tried[0], ident, key)                 # first pick: resty.chash's
            self.assertEqual(tried[-1], line.rsplit(",", 1)[1], key)  # chash route --down
            expected = []
            for node in model.distinct(key):
                expected.append(node)
                if node not in self.dead:
                    break
            self.assertEqual(tried, expected, key)
            self.assertEqual(int(body), self.backend[tried[-1]])
            retried += len(tried) > 1
        self.assertGreater(retried, PROXY_KEYS // 10)  # 59 of the 300 keys retry
        self.assertGreaterEqual(len(workers), 2)

    def test_balancer_next_retries_as_apisix(self):
        with open(os.path.join(RESTY, "ra_walk.next12.csv"), "rb") as f:
            rows = [l.rsplit(",", 1) for l in f.read().decode().splitlines()]
        retried = 0
        for key, walk in rows[:PROXY_KEYS]:
            walk = walk.split(" ")
            expected = []
            for node in walk:
                expected.append(node)
                if node not in self.dead:
                    break
            if expected[-1] in self.dead:
                continue  # all 12 points dead: nginx gives up with 502
            status, body, tried, _ = self.proxy("next", key)
            self.assertEqual(status, 200, key)
            self.assertEqual(tried, expected, key)  # resty.chash's own next() walk
            self.assertEqual(int(body), self.backend[tried[-1]])
            retried += len(tried) > 1
        self.assertGreater(retried, PROXY_KEYS // 10)


def c_declarations(text):
    """Structs (name -> field declarations) and functions (name -> (return
    type, parameter types)) of C declarations, comments and names dropped."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    sizes = {m.group(1): m.group(2) for m in re.finditer(
        r"(?:#define|static const \w+) (CHASH_\w+_SIZE) (?:= )?(\d+)", text)}
    structs = {}
    for m in re.finditer(r"typedef struct (\w+) \{(.*?)\} \1;", text, flags=re.S):
        fields = [" ".join(f.split()) for f in m.group(2).split(";") if f.strip()]
        structs[m.group(1)] = [re.sub(r"\[(\w+)\]", lambda x: "[%s]" % sizes.get(x.group(1), x.group(1)), f)
                               for f in fields]
    functions = {}
    body = re.sub(r"\b(CHASH_C_API|CHASH_C_NOEXCEPT)\b", " ", text)
    for m in re.finditer(r"([A-Za-z_][\w \*]*?)\b(chash_\w+)\s*\(([^;{}]*?)\)\s*;", body, flags=re.S):
        ret = " ".join(m.group(1).replace("*", " * ").split())
        params = []
        for p in m.group(3).split(","):
            p = " ".join(p.replace("*", " * ").split())
            if p and p != "void":
                params.append(" ".join(p.split(" ")[:-1]))  # the name is the last word
        functions[m.group(2)] = (ret, params)
    return structs, functions


class CdefTest(unittest.TestCase):
    """chash.resty keeps no copy of chash_c.h: it declares one function by
    hand, chash_c_declarations, and hands LuaJIT's ffi.cdef the text that
    function returns (the loaded library's own header). That text has every
    struct and function of the header, fields and parameters alike; the Lua
    unit tests run on the declarations LuaJIT made from it."""

    def test_the_module_declares_only_the_bootstrap(self):
        with open(os.path.join(ROOT, "tools", "lua", "lib", "chash", "resty.lua")) as f:
            lua = f.read()
        cdefs = re.findall(r"ffi\.cdef\s*(\[\[.*?\]\]|\()", lua, flags=re.S)
        self.assertEqual(len(cdefs), 2, cdefs)  # the bootstrap, then ffi.cdef(text)
        structs, functions = c_declarations(cdefs[0][2:-2])
        self.assertEqual(structs, {})
        self.assertEqual(list(functions), ["chash_c_declarations"])

    def test_the_library_declares_what_the_header_does(self):
        with open(os.path.join(ROOT, "include", "chash", "chash_c.h")) as f:
            header = f.read()
        lib = ctypes.CDLL(os.path.join(BUILD, "libchash.so"))
        lib.chash_c_declarations.restype = ctypes.c_char_p
        text = lib.chash_c_declarations().decode()
        c_structs, c_functions = c_declarations(header)
        l_structs, l_functions = c_declarations(text)
        self.assertGreaterEqual(len(c_functions), 120)
        self.assertGreaterEqual(len(c_structs), 10)
        self.assertEqual(l_structs, c_structs)
        self.assertEqual(l_functions, c_functions)


WATCH_APP = r"""
-- The watch application: each worker watches LIVE with a timer; /status
-- answers what its holder serves and what the reload policy reports.
local chash = require "chash.resty"
local _M = { ticks = 0 }

function _M.init(path, state_dir)
    local h, err, check = chash.watch(path, { state_dir = state_dir, name = "live" })
    if not h then
        _M.error = tostring(check) .. ": " .. tostring(err)
        ngx.log(ngx.ERR, "chash watch: ", _M.error)
        return
    end
    _M.holder = h
    ngx.timer.every(0.05, function(premature)
        if premature then return end
        local ok, message, name = h:check()
        _M.ticks = _M.ticks + 1
        if ok == nil then ngx.log(ngx.WARN, "chash watch refused: ", name, ": ", message) end
    end)
end

function _M.status()
    local h = _M.holder
    if not h then return ngx.say("error=", _M.error) end
    local r = assert(h:report())
    ngx.say("pid=", ngx.worker.pid(), " version=", h.ring.config_version, " ticks=", _M.ticks,
            " swaps=", h.swaps, " accepted=", r.accepted, " adopted=", r.adopted,
            " refused=", r.refused, " last_check=", tostring(r.last_check),
            " highest=", r.highest_version, " last_good=", tostring(r.serving_last_good),
            " mode=", h.ring.mode)
end

return _M
"""


class WatchTest(unittest.TestCase):
    """chash.resty's watch in 2 workers with one state directory. The steps
    run in order (test_1 ... test_5) on one nginx, each on the state the
    previous one left."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="chash-resty-watch-")
        t = cls.tmp
        ra = os.path.join(RESTY, "ra.nodes")
        build = [CHASH, "build", "--flavor", "resty", "--servers", ra]
        for v in (1, 2, 3):
            run(build + ["--config-version", str(v), "--out", os.path.join(t, "v%d.ring" % v)])
        damage(os.path.join(t, "v3.ring"), os.path.join(t, "corrupt_v3.ring"))
        os.makedirs(os.path.join(t, "state"))
        os.makedirs(os.path.join(t, "lua"))
        with open(os.path.join(t, "lua", "resty_watch_app.lua"), "w") as f:
            f.write(WATCH_APP)
        cls.live = os.path.join(t, "live.ring")
        replace(cls.live, os.path.join(t, "v1.ring"))
        cls.app_port = free_port()
        body = f"""
    init_worker_by_lua_block {{
        require("resty_watch_app").init("{cls.live}", "{t}/state")
    }}
    server {{
        listen 127.0.0.1:{cls.app_port};
        location = /status {{ content_by_lua_block {{ require("resty_watch_app").status() }} }}
    }}
"""
        cls.nginx = OpenResty(2, body, lua_path_extra=t + "/lua/?.lua;",
                              main_extra="thread_pool default threads=2;")
        cls.nginx.start()

    @classmethod
    def tearDownClass(cls):
        cls.nginx.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def status(self, timeout=10):
        conn = http.client.HTTPConnection("127.0.0.1", self.app_port, timeout=timeout)
        try:
            conn.request("GET", "/status", headers={"Connection": "close"})
            r = conn.getresponse()
            body = r.read().decode()
        finally:
            conn.close()
        self.assertEqual(r.status, 200, self.nginx.error_log())
        fields = dict(kv.split("=", 1) for kv in body.split())
        self.assertNotIn("error", fields, body + self.nginx.error_log())
        return fields

    def workers_until(self, done, what, timeout=30, exclude=()):
        """Each worker's status (by pid, new connections until both have
        answered) once `done(status)` holds for both; fails after timeout."""
        deadline = time.monotonic() + timeout
        seen = {}
        while time.monotonic() < deadline:
            s = self.status()
            if s["pid"] not in exclude:
                seen[s["pid"]] = s
                if len(seen) >= 2 and all(done(v) for v in seen.values()):
                    return list(seen.values())
            time.sleep(0.02)
        self.fail("%s: workers %s\n%s" % (what, seen, self.nginx.error_log()))

    def test_1_one_verification_a_host(self):
        # Both workers serve version 1 first: a worker whose init ran after
        # the replace would load version 2 at init, verifying nothing here.
        self.workers_until(lambda s: s["version"] == "1", "version 1 served by both workers")
        replace(self.live, os.path.join(self.tmp, "v2.ring"))
        workers = self.workers_until(lambda s: s["version"] == "2", "version 2 served")
        self.assertEqual([w["mode"] for w in workers], ["sealed", "sealed"])
        self.assertEqual(sum(int(w["accepted"]) for w in workers), 2, workers)
        # One worker verified the file, the other adopted its sealed copy.
        self.assertEqual(sum(int(w["adopted"]) for w in workers), 1, workers)

    def test_2_a_refused_file_is_never_verified_again(self):
        replace(self.live, os.path.join(self.tmp, "corrupt_v3.ring"))
        first = self.workers_until(lambda s: s["last_check"] == "checksum", "checksum refusal")
        ticks = {w["pid"]: int(w["ticks"]) for w in first}
        # Twenty ticks later each worker has looked at the path twenty more
        # times; the file was refused once and is never loaded again.
        later = self.workers_until(lambda s: int(s["ticks"]) >= ticks[s["pid"]] + 20,
                                   "twenty more ticks")
        for w in later:
            self.assertEqual(w["refused"], "1", later)
            self.assertEqual(w["version"], "2", later)
            self.assertEqual(w["last_check"], "checksum", later)

    def test_3_a_fifo_at_the_path_does_not_block_the_worker(self):
        # A FIFO is what a blocking open or stat of the path would wait on
        # forever (a stand-in for a hung file system): each worker's check
        # runs in the thread pool and the library refuses the FIFO unopened.
        replace(self.live, fifo=True)
        try:
            workers = self.workers_until(lambda s: s["last_check"] == "not_regular",
                                         "not_regular refusal")
            for w in workers:
                self.assertEqual(w["version"], "2", workers)
            start = {w["pid"]: int(w["ticks"]) for w in workers}
            self.workers_until(lambda s: int(s["ticks"]) >= start[s["pid"]] + 5,
                               "ticks go on with a FIFO at the path")
            status, body, _ = self.nginx.request("GET", "/ping", timeout=10)
            self.assertEqual((status, body), (200, "pong"))
        finally:
            # Unblocks a reader if a check ever opened it (so stop() works).
            try:
                fd = os.open(self.live, os.O_WRONLY | os.O_NONBLOCK)
                os.close(fd)
            except OSError:
                pass

    def test_4_versions_only_go_up_across_a_reload_of_nginx(self):
        # Version 1 at the path, then SIGHUP: the new workers start from the
        # state directory (highest version 2) and serve the last good file.
        replace(self.live, os.path.join(self.tmp, "v1.ring"))
        old = {w["pid"] for w in self.workers_until(lambda s: True, "status")}
        self.nginx.proc.send_signal(signal.SIGHUP)
        workers = self.workers_until(lambda s: True, "new workers after SIGHUP", exclude=old,
                                     timeout=60)
        for w in workers:
            self.assertEqual(w["version"], "2", workers)
            self.assertEqual(w["last_good"], "true", workers)
            self.assertEqual(w["last_check"], "rollback", workers)
            self.assertEqual(w["highest"], "2", workers)

    def test_5_a_newer_version_after_the_reload_is_served(self):
        replace(self.live, os.path.join(self.tmp, "v3.ring"))
        workers = self.workers_until(lambda s: s["version"] == "3", "version 3 served")
        self.assertEqual(sum(int(w["adopted"]) for w in workers), 1, workers)


if __name__ == "__main__":
    unittest.main(verbosity=2)
