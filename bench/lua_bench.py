"""chash.resty inside nginx's Lua module: new() time, worker memory at rest
and at peak (RSS, and PSS with N workers), find() from Lua, and a mapped
snapshot shared by the workers. The shapes of resty.chash's recorded
figures: ids `10.a.b.c:443`, os.clock() CPU time, RSS around new() after a
full GC, find over 4,096 keys, 10^6 calls.

Usage: python3 bench/lua_bench.py BUILD_DIR OUT.txt [WORKERS]
(an OUT without a directory goes into bench/results/<this CPU>/, bench/cpu_folder.py)
nginx runs as a child on 127.0.0.1, stopped by its PID; every request is
bounded in time.
"""

import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "lua"))
sys.argv, args = sys.argv[:1], sys.argv[1:]
import test_resty  # noqa: E402  (its OpenResty launcher)

sys.path.insert(0, os.path.join(ROOT, "bench"))
import cpu_folder  # noqa: E402

BUILD = os.path.abspath(args[0])
OUT = cpu_folder.out_path(args[1])
WORKERS = int(args[2]) if len(args) > 2 else 2
CHASH = os.path.join(BUILD, "tools", "chash")
SHAPES = [(1000, 10), (2048, 10), (1000, 100)]

BENCH_LUA = r"""
local chash = require "chash.resty"
local _M = {}

local function status(field)
    for line in io.lines("/proc/self/status") do
        local v = line:match("^" .. field .. ":%s+(%d+)")
        if v then return tonumber(v) * 1024 end
    end
end

local function pss()
    for line in io.lines("/proc/self/smaps_rollup") do
        local v = line:match("^Pss:%s+(%d+)")
        if v then return tonumber(v) * 1024 end
    end
end

local function ids(n, w)
    local nodes = {}
    for i = 0, n - 1 do
        nodes[string.format("10.%d.%d.%d:443", math.floor(i / 65536) % 256,
                            math.floor(i / 256) % 256, i % 256)] = w
    end
    return nodes
end

local keep = {}

function _M.build(n, w)
    local nodes = ids(n, w)
    collectgarbage("collect")
    local f = assert(io.open("/proc/self/clear_refs", "w"))  -- resets VmHWM to VmRSS
    f:write("5")
    f:close()
    local rss0 = status("VmRSS")
    local t0 = os.clock()
    local ring = assert(chash:new(nodes))
    local seconds = os.clock() - t0
    collectgarbage("collect")
    local rss1, hwm1 = status("VmRSS"), status("VmHWM")
    keep[#keep + 1] = ring
    local keys = {}
    for i = 1, 4096 do keys[i] = "/obj/" .. i .. "/" .. (i * 7919) end
    local t1 = os.clock()
    local sink = 0
    for i = 1, 1000000 do
        local id = ring:find(keys[i % 4096 + 1])
        if id then sink = sink + 1 end
    end
    local find_ns = (os.clock() - t1) * 1e9 / 1000000
    return string.format("build n=%d w=%d points=%d new_s=%.4f rss_after=%d peak=%d find_ns=%.1f pss=%d pid=%d",
        n, w, ring.size, seconds, rss1 - rss0, hwm1 - rss0, find_ns,
        pss(), ngx.worker.pid())
end

function _M.load(path)
    collectgarbage("collect")
    local rss0, pss0 = status("VmRSS"), pss()
    local t0 = os.clock()
    local ring = assert(chash.load(path))
    local seconds = os.clock() - t0
    -- touch every page of the columns, as lookups over time do
    local sink = 0
    for i = 0, ring.size - 1, 512 do
        local id = ring:next(i)
        if id then sink = sink + 1 end
    end
    collectgarbage("collect")
    keep[#keep + 1] = ring
    return string.format("load points=%d load_s=%.4f rss_after=%d pss_after=%d mapped=%s pid=%d",
        ring.size, seconds, status("VmRSS") - rss0, pss() - pss0, tostring(ring.mapped),
        ngx.worker.pid())
end

return _M
"""


def main():
    tmp = tempfile.mkdtemp(prefix="chash-lua-bench-")
    with open(os.path.join(tmp, "lua_bench.lua"), "w") as f:
        f.write(BENCH_LUA)
    rings = {}
    for n, w in SHAPES:
        servers = os.path.join(tmp, "s%d_%d.txt" % (n, w))
        with open(servers, "w") as f:
            for i in range(n):
                f.write("10.%d.%d.%d:443 %d\n" % ((i >> 16) & 255, (i >> 8) & 255, i & 255, w))
        ring = os.path.join(tmp, "r%d_%d.ring" % (n, w))
        subprocess.run([CHASH, "build", "--mode", "resty", "--servers", servers, "--out", ring],
                       check=True, capture_output=True, timeout=600)
        rings[(n, w)] = ring
    body = f"""
    server {{
        listen 127.0.0.1:{{port}};
        location = /build {{ content_by_lua_block {{
            ngx.say(require("lua_bench").build(tonumber(ngx.var.arg_n), tonumber(ngx.var.arg_w)))
        }} }}
        location = /load {{ content_by_lua_block {{
            ngx.say(require("lua_bench").load(ngx.var.arg_p))
        }} }}
    }}
"""
    port = test_resty.free_port()
    test_resty.BUILD = BUILD
    nginx = test_resty.OpenResty(WORKERS, body.replace("{port}", str(port)), tmp + "/?.lua;")
    lines = []
    try:
        nginx.start()
        import http.client

        def get(path):
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            try:
                conn.request("GET", path, headers={"Connection": "close"})
                r = conn.getresponse()
                text = r.read().decode()
                if r.status != 200:
                    raise RuntimeError(path + ": " + text + nginx.error_log())
                return text.strip()
            finally:
                conn.close()

        for n, w in SHAPES:
            lines.append(get("/build?n=%d&w=%d" % (n, w)))
        # The mapped snapshot: one load per worker (new connections until
        # every worker has loaded each file, at most 40 tries a file).
        for n, w in SHAPES:
            pids = set()
            for _ in range(40):
                line = get("/load?p=" + rings[(n, w)])
                pid = line.rsplit("pid=", 1)[1]
                if pid not in pids:
                    pids.add(pid)
                    lines.append(line)
                if len(pids) >= WORKERS:
                    break
    finally:
        nginx.stop()
    cpu = subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True,
                         text=True).stdout.strip()
    load = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    with open(OUT, "w") as f:
        f.write("# bench/lua_bench.py: chash.resty in Debian's nginx 1.22.1 + "
                "libnginx-mod-http-lua, %d workers\n" % WORKERS)
        f.write("# %s (%s)\n# load: %s\n# %s\n" % (
            cpu, cpu_folder.slug(), load, time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())))
        f.write("# rss_after/peak/pss in bytes, per worker; find_ns per call from Lua\n")
        for line in lines:
            f.write(line + "\n")
    print(open(OUT).read())


if __name__ == "__main__":
    main()
