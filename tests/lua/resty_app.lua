-- The OpenResty application tests/lua/test_resty.py runs: each worker
-- builds the ra ring with chash.resty (as resty.chash users do) and maps the
-- snapshot of the same ring; balancer_by_lua routes through either walk.
local chash = require "chash.resty"
local balancer = require "ngx.balancer"

local _M = { rings = {}, backend = {} }

function _M.init(data, snapshot, backend_map)
    local nodes = {}
    for line in io.lines(data .. "/resty/ra.nodes") do
        local id, w = line:match("^([^#]%S*) (%d+)$")
        if id then nodes[id] = tonumber(w) end
    end
    local ring, err = chash:new(nodes)
    if not ring then error("chash.resty new: " .. err) end
    _M.rings.ra = ring
    local snap, serr = chash.load(snapshot)
    if not snap then error("chash.resty load: " .. serr) end
    _M.rings.snap = snap
    for line in io.lines(backend_map) do
        local id, host, port = line:match("^(%S+) (%S+):(%d+)$")
        _M.backend[id] = { host, tonumber(port) }
    end
end

-- POST body: one key a line; answers "id,position" lines, then the worker.
function _M.find_body()
    ngx.req.read_body()
    local body = ngx.req.get_body_data()
    if not body then
        local file = ngx.req.get_body_file()
        local f = assert(io.open(file, "rb"))
        body = f:read("*a")
        f:close()
    end
    local ring = _M.rings[ngx.var.arg_ring]
    if not ring then return ngx.exit(404) end
    local out = {}
    for key in body:gmatch("([^\n]*)\n") do
        local id, pos = ring:find(key)
        out[#out + 1] = tostring(id) .. "," .. tostring(pos)
    end
    out[#out + 1] = "worker " .. ngx.worker.pid() .. " mode " .. tostring(_M.rings.snap.mode)
    ngx.say(table.concat(out, "\n"))
end

-- balancer_by_lua: first pick find(key); retries through the distinct walk
-- ("distinct") or point by point with next(position), as APISIX retries.
function _M.balance(mode)
    local ctx = ngx.ctx
    local ring = _M.rings[ngx.var.arg_ring or "ra"]
    local key = ngx.unescape_uri(ngx.var.arg_k)
    local id
    if not ctx.tried then
        ctx.tried = {}
        if mode == "distinct" then
            ctx.walk = ring:walk(key, 12)
            ctx.step = 1
            id = ctx.walk[1]
        else
            id, ctx.pos = ring:find(key)
        end
        local ok, err = balancer.set_more_tries(11)
        if not ok then ngx.log(ngx.ERR, "set_more_tries: ", err) end
    elseif mode == "distinct" then
        ctx.step = ctx.step + 1
        id = ctx.walk[ctx.step]
    else
        id, ctx.pos = ring:next(ctx.pos)
    end
    if not id then return ngx.exit(502) end
    ctx.tried[#ctx.tried + 1] = id
    local peer = _M.backend[id]
    local ok, err = balancer.set_current_peer(peer[1], peer[2])
    if not ok then
        ngx.log(ngx.ERR, "set_current_peer: ", err)
        return ngx.exit(500)
    end
end

function _M.headers()
    ngx.header["X-Tried"] = table.concat(ngx.ctx.tried or {}, " ")
    ngx.header["X-Worker"] = ngx.worker.pid()
end

return _M
