-- chash.resty: lua-resty-balancer's resty.chash API on libchash (LuaJIT FFI).
--
--   local resty_chash = require "chash.resty"   -- was: require "resty.chash"
--   local ring = resty_chash:new({ ["10.0.0.1:80"] = 2, ["10.0.0.2:80"] = 1 })
--   local id, pos = ring:find(ngx.var.uri)
--   id, pos = ring:next(pos)                     -- the next point of the ring
--
-- Same ring as resty.chash (points crc32(ID || le32(prev)) from prev = 0,
-- weight x 160 a node; a key goes to the first point >= crc32(key), else the
-- first), same positions, same next(). What differs (tools/lua/README.md):
-- a duplicated hash goes to the smallest id by bytes (resty.chash: whichever
-- id Lua's table order put first, which differs between processes); bad
-- input answers nil, message instead of raising or crashing the worker; the
-- ring is 6 bytes a point in libchash, not 8 bytes plus Lua tables.
--
-- Cost: new/reinit/set/delete/incr/decr rebuild the ring, O(points), on the
-- calling worker's thread (resty.chash's own updates are O(points) too).
-- find is O(|key| + log n); next O(1), O(log n log c) on rings with c
-- duplicated hashes; walk is libchash's chash_walk, one FFI call a node.
-- Objects are per worker and not shared across threads. watch (the reload
-- policy of libchash) stats, opens, verifies and releases snapshot files in
-- nginx's thread pool (ngx.run_worker_thread), never on the event loop.
--
-- new_program_ring(flavor, nodes, opts) builds the other programs' rings
-- (haproxy, ketama-md5, varnish-shard, envoy-ring, envoy-maglev) with their
-- options: find answers as the program, next walks as it retries where it
-- does (tools/lua/README.md). Additive: nothing above changes.

local ffi = require "ffi"

local ffi_new, ffi_string, ffi_gc, ffi_cast, C_NULL = ffi.new, ffi.string, ffi.gc, ffi.cast, nil
local floor, type, tostring, tonumber, pairs = math.floor, type, tostring, tonumber, pairs
local setmetatable, pcall, ipairs = setmetatable, pcall, ipairs
local str_gsub = string.gsub

-- The C declarations come from the library loaded (chash_c_declarations:
-- chash_c.h as it was built), so they always match it; the module keeps no
-- copy of the header. One change for LuaJIT: functions that return a
-- uint32_t are declared int32_t. The x86-64 ABI leaves a 32-bit return's
-- upper register half undefined, and LuaJIT's compiled code reads a uint32_t
-- return as 64 bits (a migration lookup came back as 2^32 + its node); an
-- int32_t return is read as 32 bits, and u32() below restores the unsigned
-- value where it can pass 2^31. CHASH_NO_NODE and CHASH_NO_POSITION read as
-- -1 then (a ring holds fewer than 2^31 points).
ffi.cdef [[
const char *chash_c_declarations(void);
]]

-- libchash.so from package.cpath's directories (as resty.chash finds its
-- own library), else the system's library path. An older lua-resty-balancer
-- also shipped a "libchash.so": a library without chash_c_declarations is
-- skipped (so is a libchash older than this module).
local function is_libchash(lib)
    return pcall(function() return lib.chash_c_declarations end)
end

local function load_libchash()
    for entry in package.cpath:gmatch("[^;]+") do
        local dir = entry:match("(.*/)")
        if dir then
            local path = dir .. "libchash.so"
            local f = io.open(path)
            if f then
                f:close()
                local ok, lib = pcall(ffi.load, path)
                if ok and is_libchash(lib) then return lib end
            end
        end
    end
    for _, name in ipairs({ "chash", "libchash.so.1" }) do
        local ok, lib = pcall(ffi.load, name)
        if ok and is_libchash(lib) then return lib end
    end
    return nil
end

local lib = load_libchash()
if not lib then
    error("chash.resty: cannot load a libchash.so with chash_c_declarations "
          .. "(searched package.cpath and the system path)")
end
do
    local declarations = lib.chash_c_declarations()
    if declarations == C_NULL then
        error("chash.resty: chash_c_declarations: " .. ffi_string(lib.chash_last_error()))
    end
    local text = ("\n" .. ffi_string(declarations))
        :gsub("\nuint32_t (chash_[%w_]+%s*%()", "\nint32_t %1")
    ffi.cdef(text)
end
local C = ffi.C  -- the CHASH_* constants (static const in the declarations)

local FLAVOR_RESTY = C.CHASH_FLAVOR_RESTY
local NO_NODE = -1  -- CHASH_NO_NODE read as int32_t
local MAX_WEIGHT = 4294967295
local E_IO = C.CHASH_E_IO
local CHECK_FLAVOR = C.CHASH_CHECK_FLAVOR
local RELOAD_NEW, RELOAD_SAME_RING, RELOAD_REFUSED =
    C.CHASH_RELOAD_NEW, C.CHASH_RELOAD_SAME_RING, C.CHASH_RELOAD_REFUSED
local RELOAD_NO_SHARE, RELOAD_NO_LAST_GOOD, RELOAD_NO_WRITE =
    C.CHASH_RELOAD_NO_SHARE, C.CHASH_RELOAD_NO_LAST_GOOD, C.CHASH_RELOAD_NO_WRITE
local LOAD_MODES = { sealed = C.CHASH_LOAD_SEALED, map = C.CHASH_LOAD_MAP,
                     copy = C.CHASH_LOAD_COPY }
local LOAD_MODE_NAMES = {}
for name, mode in pairs(LOAD_MODES) do LOAD_MODE_NAMES[mode] = name end

local function u32(x)
    if x < 0 then return x + 4294967296 end
    return x
end

-- _VERSION is the loaded libchash's (the module ships with it)
local _M = { _VERSION = ffi_string(lib.chash_version()),
             POINTS_PER_WEIGHT = C.CHASH_DEFAULT_POINT_MULTIPLE }
local mt = { __index = _M }

local out_builder = ffi_new("chash_builder*[1]")
local out_ring = ffi_new("chash_ring*[1]")
local out_mask = ffi_new("chash_node_mask*[1]")
local out_u32 = ffi_new("uint32_t[1]")
local out_len = ffi_new("size_t[1]")
local out_loser_hashes = ffi_new("const uint32_t*[1]")
local out_loser_nodes = ffi_new("const uint16_t*[1]")
local out_u64 = ffi_new("uint64_t[2]")
local out_side = ffi_new("uint32_t[1]")
local out_snapshot = ffi_new("chash_snapshot*[1]")
local out_walk = ffi_new("chash_walk*[1]")
-- The memory of chash_walk, one buffer a worker, grown to the largest ring
-- walked (chash_walk_size: 128 bytes and a bit a node). Each walk runs to
-- its end inside the call (no yield), so walks never interleave on it.
local walk_memory, walk_bytes = nil, 0

local function last_error()
    return ffi_string(lib.chash_last_error())
end

-- The name of a CHASH_CHECK_* as the library spells it ("checksum").
local function check_name(check)
    return ffi_string(lib.chash_check_name(check))
end

-- The check the last failed call on this thread named, by name; nil if none.
local function last_check()
    local check = lib.chash_last_check()
    if check == 0 then return nil end
    return check_name(check)
end

local function node_text(ring, node)
    local p = lib.chash_ring_node_address(ring, node, out_len)
    if p == C_NULL then return nil end
    return ffi_string(p, out_len[0])
end

-- The state a ring object keeps besides its libchash ring: resty.chash's
-- positions count every generated point, and libchash keeps one point a
-- hash (the others are its collision losers), so a position is a slot plus
-- the losers at smaller hashes.
local function attach(self, ring, ids)
    self.ring = ring
    self.ids = ids
    self.num_points = tonumber(lib.chash_ring_num_points(ring))
    lib.chash_ring_collision_losers(ring, out_loser_hashes, out_loser_nodes, out_u64)
    self.loser_hashes = out_loser_hashes[0]
    self.loser_nodes = out_loser_nodes[0]
    self.nlosers = tonumber(out_u64[0])
    self.size = self.num_points + self.nlosers
    self.npoints = self.size  -- resty.chash's field of the same name
    local index_of = {}
    for i = 1, #ids do index_of[ids[i]] = i - 1 end
    self.index_of = index_of
    self.mask = nil  -- node ids changed; the old mask is garbage-collected
    self.down = nil
end

-- Builds a libchash resty ring of `nodes` (id = weight). Returns ring, ids
-- (ids[k + 1] is node k's id, as the caller gave it), copy of the table; or
-- nil, message.
local function build(nodes, options)
    if type(nodes) ~= "table" then
        return nil, "nodes must be a table of id = weight, got " .. type(nodes)
    end
    local multiple = options and options.point_multiple or 160
    if lib.chash_builder_new(FLAVOR_RESTY, multiple, out_builder) ~= 0 then
        return nil, last_error()
    end
    local builder = out_builder[0]
    -- A worker serves while it builds: one thread, its own, unless asked.
    lib.chash_builder_set_threads(builder, options and options.build_threads or 1)
    if options and options.max_points then
        if lib.chash_builder_set_max_points(builder, options.max_points) ~= 0 then
            lib.chash_builder_free(builder)
            return nil, last_error()
        end
    end
    local ids, copy, n = {}, {}, 0
    for id, weight in pairs(nodes) do
        local id_type = type(id)
        if id_type ~= "string" and id_type ~= "number" then
            lib.chash_builder_free(builder)
            return nil, "node id must be a string, got " .. id_type
        end
        local w = tonumber(weight)
        if not w or w < 0 or w > MAX_WEIGHT or w ~= floor(w) then
            lib.chash_builder_free(builder)
            return nil, "node '" .. tostring(id) .. "': weight must be an integer 0.."
                        .. MAX_WEIGHT .. ", got " .. tostring(weight)
        end
        local text = tostring(id)  -- resty.chash hashes tostring(id)
        if lib.chash_builder_add(builder, text, #text, w) ~= 0 then
            local message = ffi_string(lib.chash_builder_error(builder))
            lib.chash_builder_free(builder)
            return nil, message
        end
        n = n + 1
        ids[n] = id
        copy[id] = w
    end
    if lib.chash_builder_build(builder, out_ring) ~= 0 then  -- frees the builder
        return nil, last_error()
    end
    return ffi_gc(out_ring[0], lib.chash_ring_free), ids, copy
end

--- new(nodes [, options]): a ring of `nodes` = { [id] = weight, ... }.
-- Called as resty.chash is (`chash:new(nodes)`) or as `chash.new(nodes)`.
-- options.point_multiple (default 160), options.build_threads (default 1),
-- options.max_points. Returns the object, or nil, message.
function _M.new(first, nodes, options)
    if first ~= _M then nodes, options = first, nodes end
    local ring, ids, copy = build(nodes, options)
    if not ring then return nil, ids end
    local self = setmetatable({ nodes = copy, options = options }, mt)
    attach(self, ring, ids)
    return self
end

--- reinit(nodes): replaces the ring. On error the old ring stays.
function _M.reinit(self, nodes)
    local ring, ids, copy = build(nodes, self.options)
    if not ring then return nil, ids end
    self.nodes = copy
    -- A rebuilt snapshot ring is a ring of its own: the snapshot's subsets
    -- (masks over the snapshot's node ids) no longer apply.
    self.snapshot, self.subsets = nil, nil
    attach(self, ring, ids)
    return true
end

local function rebuild_with(self, id, weight)
    local id_type = type(id)
    if id_type ~= "string" and id_type ~= "number" then
        return nil, "node id must be a string, got " .. id_type
    end
    local nodes = {}
    for k, w in pairs(self.nodes) do nodes[k] = w end
    nodes[id] = weight
    return _M.reinit(self, nodes)
end

local function check_weight(weight, default)
    if weight == nil then return default end
    local w = tonumber(weight)
    if not w or w < 0 or w > MAX_WEIGHT or w ~= floor(w) then
        return nil, "weight must be an integer 0.." .. MAX_WEIGHT .. ", got " .. tostring(weight)
    end
    return w
end

--- delete(id): removes the node (nothing if absent). true, or nil, message.
function _M.delete(self, id)
    if self.nodes[id] == nil then return true end
    return rebuild_with(self, id, nil)
end

--- incr(id [, weight = 1]): adds weight, adding the node if absent.
function _M.incr(self, id, weight)
    local w, err = check_weight(weight, 1)
    if not w then return nil, err end
    if w == 0 and self.nodes[id] ~= nil then return true end
    return rebuild_with(self, id, (self.nodes[id] or 0) + w)
end

--- decr(id [, weight = 1]): subtracts weight; at or below 0 the node is
-- deleted (as resty.chash does); nothing if absent.
function _M.decr(self, id, weight)
    local w, err = check_weight(weight, 1)
    if not w then return nil, err end
    local old = self.nodes[id]
    if old == nil then return true end
    if old <= w then return rebuild_with(self, id, nil) end
    if w == 0 then return true end
    return rebuild_with(self, id, old - w)
end

--- set(id, weight): the node's weight; 0 deletes it (as resty.chash does).
function _M.set(self, id, weight)
    local w, err = check_weight(weight, 0)
    if not w then return nil, err end
    local old = self.nodes[id] or 0
    if old == w then return true end
    if w == 0 then return rebuild_with(self, id, nil) end
    return rebuild_with(self, id, w)
end

-- Losers with a hash < h: a binary search over the (short) loser table.
local function losers_below(self, h)
    local lo, hi = 0, self.nlosers
    local hashes = self.loser_hashes
    while lo < hi do
        local mid = floor((lo + hi) / 2)
        if hashes[mid] < h then lo = mid + 1 else hi = mid end
    end
    return lo
end

local function position_of_slot(self, slot)
    if self.nlosers == 0 then return slot end
    lib.chash_ring_point_at(self.ring, slot, out_u32)
    return slot + losers_below(self, out_u32[0])
end

local function subset_mask(self, subset)
    if subset == nil then return self.mask end
    if type(subset) == "string" then
        local masks = self.subsets
        local mask = masks and masks[subset]
        if not mask then
            if not self.snapshot then
                return nil, "subset '" .. subset .. "': only a snapshot ring has named subsets"
            end
            if lib.chash_snapshot_subset(self.snapshot, subset, out_mask) ~= 0 then
                return nil, last_error()
            end
            mask = ffi_gc(out_mask[0], lib.chash_node_mask_free)
            self.subsets = self.subsets or {}
            self.subsets[subset] = mask
        end
        return mask
    end
    return nil, "subset must be a subset name, got " .. type(subset)
end

--- find(key [, subset]): the key's node id and its position on the ring
-- (for next). Under the node mask (set_available) or a snapshot's named
-- subset, the id is the node the ring of the available nodes would answer
-- and the position that of the key's own point. nil, message on an empty
-- ring (resty.chash reads out of bounds there) or when no node is available.
function _M.find(self, key, subset)
    if self.num_points == 0 then return nil, "empty ring: no node has points" end
    local k = tostring(key)  -- resty.chash: crc32(tostring(key))
    local hash = u32(lib.chash_crc32(k, #k))
    local ring = self.ring
    local slot = lib.chash_ring_find_position(ring, hash)
    local mask, err = subset_mask(self, subset)
    if err then return nil, err end
    local node
    if mask ~= nil then
        node = lib.chash_ring_find_available_hash(ring, mask, hash)
        if node == NO_NODE then return nil, "no node is available" end
    else
        node = lib.chash_ring_point_at(ring, slot, nil)
    end
    return self.ids[node + 1], position_of_slot(self, slot)
end

--- next(position): the id at the next point of the ring and its position,
-- as resty.chash's next: point by point, wrapping after the last, a node as
-- often as it owns points (duplicated hashes included: the smallest id
-- first). nil, message for a position that is not 0..size-1.
function _M.next(self, index)
    local size = self.size
    if size == 0 then return nil, "empty ring: no node has points" end
    local i = tonumber(index)
    if not i or i < 0 or i >= size or i ~= floor(i) then
        return nil, "position must be an integer 0.." .. (size - 1) .. ", got " .. tostring(index)
    end
    local q = (i + 1) % size
    local ring = self.ring
    if self.nlosers == 0 then
        return self.ids[lib.chash_ring_point_at(ring, q, nil) + 1], q
    end
    -- The largest slot s whose first position s + losers_below(hash[s]) <= q.
    local lo, hi = 0, self.num_points - 1
    while lo < hi do
        local mid = floor((lo + hi + 1) / 2)
        lib.chash_ring_point_at(ring, mid, out_u32)
        if mid + losers_below(self, out_u32[0]) <= q then lo = mid else hi = mid - 1 end
    end
    local node = lib.chash_ring_point_at(ring, lo, out_u32)
    local first = losers_below(self, out_u32[0])
    local offset = q - (lo + first)
    if offset > 0 then node = self.loser_nodes[first + offset - 1] end
    return self.ids[node + 1], q
end

local function walk_buffer(ring)
    local need = tonumber(lib.chash_walk_size(ring))
    if need > walk_bytes then
        local words = math.ceil(need / 8)
        walk_memory = ffi_new("uint64_t[?]", words)
        walk_bytes = words * 8
    end
    return walk_memory, walk_bytes
end

-- Up to n distinct node ids (ids[node + 1]) of chash_walk from `hash`
-- through `mask` (nil: none), appended to a new array.
local function distinct_walk(ring, mask, hash, n, ids)
    local out = {}
    local memory, bytes = walk_buffer(ring)
    if lib.chash_walk_start(memory, bytes, ring, mask, hash, out_walk) ~= 0 then
        return nil, last_error()
    end
    local walk, got = out_walk[0], 0
    while got < n do
        local node = lib.chash_walk_next(walk)
        if node == NO_NODE then break end
        got = got + 1
        out[got] = ids[node + 1]
    end
    return out
end

--- walk(key [, count [, subset]]): up to `count` (default: all) distinct
-- ids in ring order from the key's point: the retry order resty.chash users
-- build by hand with next() and a seen-set. Under the node mask or a subset
-- it is the walk of the ring of the available nodes alone, so its first id
-- is find's answer. libchash's one failover walk (chash_walk), the walk the
-- nginx module and the Rust crate retry through: one FFI call a node.
-- A Lua array; nil, message on bad input.
function _M.walk(self, key, count, subset)
    local n = count and tonumber(count) or 65536
    if not n or n < 0 then return nil, "count must be a number >= 0" end
    local mask, err = subset_mask(self, subset)
    if err then return nil, err end
    if self.num_points == 0 or n == 0 then return {} end
    local k = tostring(key)
    return distinct_walk(self.ring, mask, u32(lib.chash_crc32(k, #k)), n, self.ids)
end

--- set_available(id, available): marks a node up or down for find and
-- walk, without a rebuild: keys of a down node go where the ring without it
-- would send them; the others stay. O(1). A rebuild (set, reinit...) clears
-- the mask.
function _M.set_available(self, id, available)
    local node = self.index_of[id]
    if node == nil then return nil, "no node '" .. tostring(id) .. "'" end
    if self.mask == nil then
        if lib.chash_node_mask_new(#self.ids, 1, out_mask) ~= 0 then return nil, last_error() end
        self.mask = ffi_gc(out_mask[0], lib.chash_node_mask_free)
        self.down = {}
    end
    lib.chash_node_mask_set(self.mask, node, available and 1 or 0)
    self.down[id] = (not available) or nil
    return true
end

function _M.is_available(self, id)
    local node = self.index_of[id]
    if node == nil then return nil, "no node '" .. tostring(id) .. "'" end
    return self.mask == nil or lib.chash_node_mask_get(self.mask, node) == 1
end

--- Shape: points kept, duplicated hashes, nodes.
function _M.stats(self)
    return {
        nodes = #self.ids,
        points = self.size,
        points_kept = self.num_points,
        collisions = self.nlosers,
        generated = tonumber(lib.chash_ring_points_generated(self.ring)),
        point_multiple = lib.chash_ring_point_multiple(self.ring),
    }
end

-- ---- The other programs' rings: HAProxy, libmemcached, twemproxy, Varnish, Envoy ----

-- The other programs' flavors, from libchash's flavor table
-- (chash_flavor_property): each one's libchash number and how next() walks
-- (CHASH_RETRY_*: a distinct walk, or Envoy's attempts). Their options are
-- the table's too, set by name (chash_ring_options_set), which says what an
-- option takes and whose it is; a node's fields go to libchash as they are
-- (chash_node_fields), which refuses those of another flavor and decides
-- what the ring hashes: this module keeps no copy of either.
local RETRY_WALKS = { [C.CHASH_RETRY_DISTINCT] = "distinct",
                      [C.CHASH_RETRY_ATTEMPT] = "attempt" }
local PROP_RETRY, PROP_OTHER_PROGRAM = C.CHASH_PROPERTY_RETRY, C.CHASH_PROPERTY_OTHER_PROGRAM

local function flavor_property(flavor, property)
    local value = ffi_new("uint64_t[1]")
    if lib.chash_flavor_property(flavor, property, value) ~= 0 then return nil end
    return tonumber(value[0])
end

local PROGRAMS, PROGRAM_NAMES = {}, {}
do
    local f = 0
    while lib.chash_flavor_name(f) ~= nil do
        if flavor_property(f, PROP_OTHER_PROGRAM) == 1 then
            local name = ffi_string(lib.chash_flavor_name(f))
            PROGRAMS[name] = { flavor = f, walk = RETRY_WALKS[flavor_property(f, PROP_RETRY)] }
            PROGRAM_NAMES[#PROGRAM_NAMES + 1] = name
        end
        f = f + 1
    end
end
-- A distinct walk answers as the program does only where the ring masks
-- exactly (unweighted libmemcached: a server's points do not depend on the
-- others). The weighted ketamas (libmemcached, twemproxy, libketama)
-- rebuild every point when a server leaves: no walk answers as they do.
local NO_EXACT_WALK = " does not walk its ring on a failure: the program rebuilds it without "
    .. "the ejected server (build the ring of the other nodes)"

local program_mt = {}
program_mt.__index = program_mt

-- An option's value as the text chash_ring_options_set reads: a boolean as
-- on/off, an integer in decimal, a string as it is; nil for anything else.
local function option_text(value)
    if type(value) == "boolean" then return value and "on" or "off" end
    if type(value) == "number" then
        if value ~= floor(value) or value < 0 or value >= 2^64 then return tostring(value) end
        return string.format("%.0f", value)
    end
    if type(value) == "string" then return value end
    return nil
end

-- chash_ring_options of `opts` for `program`; nil, message.
local function program_options(name, program, opts)
    local o = ffi_new("chash_ring_options")
    o.size = ffi.sizeof(o)
    for option, value in pairs(opts) do
        if option ~= "build_threads" and option ~= "max_points" then
            if type(option) ~= "string" then
                return nil, "unknown option " .. tostring(option)
            end
            local text = option_text(value)
            if text == nil then
                return nil, option .. " must be a string, a number or a boolean, got "
                            .. type(value)
            end
            if lib.chash_ring_options_set(o, program.flavor, option, text) ~= 0 then
                return nil, last_error()
            end
        end
    end
    return o
end

local NODE_TEXTS = { "name", "hostname", "hash_key" }

-- id, weight and the chash_node_fields of node entry `i`; or nil, message.
local function program_node(entry, i)
    local fields = ffi_new("chash_node_fields")
    fields.size = ffi.sizeof(fields)
    if type(entry) == "string" then return entry, 1, fields end
    if type(entry) ~= "table" then
        return nil, "node " .. i .. " must be an id or a table { id, weight, ... }, got "
                    .. type(entry)
    end
    local id, weight = entry[1] or entry.id, entry[2] or entry.weight or 1
    if type(id) ~= "string" then
        return nil, "node " .. i .. ": the id must be a string, got " .. type(id)
    end
    local w = tonumber(weight)
    if type(weight) ~= "number" or w < 0 or w > MAX_WEIGHT then
        return nil, "node " .. i .. " '" .. id .. "': weight must be a number 0.." .. MAX_WEIGHT
                    .. ", got " .. tostring(weight)
    end
    local server_id = entry.server_id
    if server_id ~= nil then
        if type(server_id) ~= "number" or server_id < 1 or server_id > 2147483647
                or server_id ~= floor(server_id) then
            return nil, "node " .. i .. " '" .. id .. "': server_id must be an integer "
                        .. "1..2147483647, got " .. tostring(server_id)
        end
        fields.server_id = server_id
    end
    for _, field in ipairs(NODE_TEXTS) do
        local text = entry[field]
        if text ~= nil then
            if type(text) ~= "string" or text == "" then
                return nil, "node " .. i .. " '" .. id .. "': " .. field .. " must be a "
                            .. "non-empty string, got " .. tostring(text)
            end
            fields[field] = text
            fields[field .. "_len"] = #text
        end
    end
    if entry.hash_hostname ~= nil then
        if type(entry.hash_hostname) ~= "boolean" then
            return nil, "node " .. i .. " '" .. id .. "': hash_hostname must be a boolean, got "
                        .. tostring(entry.hash_hostname)
        end
        fields.hash_hostname = entry.hash_hostname and 1 or 0
    end
    -- The texts stay alive in `entry` while the builder copies them.
    return id, w, fields
end

-- The ring object of a built or loaded ring of another program's flavor.
-- ketama-md5 walks when its ring masks exactly (unweighted libmemcached: a
-- server's points do not depend on the others), which a snapshot tells as
-- well as the variant does.
local function program_ring(ring, ids, flavor)
    local walk, no_walk = PROGRAMS[flavor].walk, nil
    if walk == "distinct" and lib.chash_ring_masks_exactly(ring) == 0 then
        walk, no_walk = nil, flavor .. " (this ring's variant)" .. NO_EXACT_WALK
    end
    return setmetatable({ ring = ring, ids = ids, flavor = flavor, walk_kind = walk,
                          no_walk = no_walk, bits = lib.chash_ring_key_hash_bits(ring),
                          num_points = tonumber(lib.chash_ring_num_points(ring)) }, program_mt)
end

--- new_program_ring(flavor, nodes [, options]): another program's ring, to
-- route keys exactly as that program does. flavor: "haproxy", "ketama-md5"
-- (libmemcached, twemproxy, libketama), "varnish-shard", "envoy-ring",
-- "envoy-maglev". nodes: an array in the program's configuration order, each
-- an id (the address) or { id, weight [, server_id = N] [, name = S]
-- [, hostname = S] [, hash_key = S] [, hash_hostname = B] } (HAProxy's `id`;
-- twemproxy's server name or Varnish's ident; Envoy's hostname, hash_key and
-- use_hostname_for_hashing): libchash refuses a field the flavor does not
-- read and decides what the ring hashes (chash_node_fields); lookups
-- answer the id as given. Options: the
-- flavor's (tools/lua/README.md), build_threads, max_points. Called as
-- chash:new_program_ring(...) or chash.new_program_ring(...). The object,
-- or nil, message.
function _M.new_program_ring(first, flavor, nodes, opts)
    if first ~= _M then flavor, nodes, opts = first, flavor, nodes end
    local program = PROGRAMS[flavor]
    if not program then
        return nil, "flavor must be one of " .. table.concat(PROGRAM_NAMES, ", ") .. ", got "
                    .. tostring(flavor)
    end
    if type(nodes) ~= "table" then
        return nil, "nodes must be an array of nodes, got " .. type(nodes)
    end
    local count = 0
    for _ in pairs(nodes) do count = count + 1 end
    if count ~= #nodes then
        return nil, "nodes must be an array (configuration order), not a table of id = weight"
    end
    opts = opts or {}
    if type(opts) ~= "table" then return nil, "options must be a table" end
    local o, err = program_options(flavor, program, opts)
    if not o then return nil, err end
    local entries = {}
    for i, entry in ipairs(nodes) do
        local id, w, fields = program_node(entry, i)
        if not id then return nil, w end
        if w ~= floor(w) then
            -- A fractional weight is a real one (Varnish's REAL weights):
            -- libchash says whose it is and counts its points.
            fields.has_real_weight, fields.real_weight, w = 1, w, 0
        end
        entries[i] = { id, w, fields }
    end
    if lib.chash_builder_new_with_options(program.flavor, o, out_builder) ~= 0 then
        return nil, last_error()
    end
    local builder = out_builder[0]
    lib.chash_builder_set_threads(builder, opts.build_threads or 1)
    if opts.max_points and lib.chash_builder_set_max_points(builder, opts.max_points) ~= 0 then
        lib.chash_builder_free(builder)
        return nil, last_error()
    end
    local ids = {}
    for i, e in ipairs(entries) do
        local id = e[1]
        if lib.chash_builder_add_fields(builder, id, #id, e[2], e[3]) ~= 0 then
            local message = ffi_string(lib.chash_builder_error(builder))
            lib.chash_builder_free(builder)
            return nil, message
        end
        ids[i] = id
    end
    if lib.chash_builder_build(builder, out_ring) ~= 0 then return nil, last_error() end
    return program_ring(ffi_gc(out_ring[0], lib.chash_ring_free), ids, flavor)
end

local U64_TENTH = 1844674407370955161ULL  -- floor((2^64 - 1) / 10)

-- A key hash given to find_hash: a Lua number for 32-bit rings, a uint64_t
-- cdata for 64-bit rings; nil, message.
local function parse_hash(self, hash)
    local h
    if type(hash) == "number" then
        if hash < 0 or hash ~= floor(hash) or hash > 9007199254740992 then
            return nil, "hash must be an integer >= 0 (above 2^53 a uint64_t or a decimal "
                        .. "string), got " .. tostring(hash)
        end
        h = hash
    elseif type(hash) == "string" then
        if not hash:match("^%d+$") or #hash > 20 then
            return nil, "hash must be a decimal integer, got '" .. hash .. "'"
        end
        h = 0ULL
        for i = 1, #hash do
            local d = hash:byte(i) - 48
            if h > U64_TENTH or (h == U64_TENTH and d > 5) then
                return nil, "hash " .. hash .. " is above 2^64 - 1"
            end
            h = h * 10 + d
        end
    elseif type(hash) == "cdata" and ffi.istype("uint64_t", hash) then
        h = hash
    else
        return nil, "hash must be a number, a decimal string or a uint64_t, got " .. type(hash)
    end
    if self.bits == 64 then return 0ULL + h end
    if h > 4294967295 then
        return nil, "hash " .. tostring(h) .. " is above 2^32 - 1 (" .. self.flavor
                    .. " hashes keys to 32 bits)"
    end
    return tonumber(h)
end

local function program_answer(self, h)
    local node = lib.chash_ring_find_hash64(self.ring, h)
    if node == NO_NODE then return nil, "empty ring: no node has points" end
    return self.ids[node + 1], { hash = h, step = 0, ring = self }
end

--- ring:hash(key): the key's hash as the program computes it (HAProxy's
-- function, the ketama key hash, Varnish's SHA-256, Envoy's XXH64 or
-- MurmurHash2): a number, a uint64_t cdata on Envoy's 64-bit rings.
function program_mt.hash(self, key)
    local kt = type(key)
    if kt ~= "string" and kt ~= "number" then
        return nil, "key must be a string, got " .. kt
    end
    local k = tostring(key)
    local h = lib.chash_ring_key_hash(self.ring, k, #k)
    if self.bits == 64 then return h end
    return tonumber(h)
end

--- ring:find(key): the id the program answers for the key (the bytes it
-- hashes: HAProxy's path, whole URI or header value; the memcached key;
-- Varnish's URL or key; an Envoy header value) and a cursor for next().
function program_mt.find(self, key)
    local h, err = program_mt.hash(self, key)
    if h == nil then return nil, err end
    return program_answer(self, h)
end

--- ring:find_hash(hash): the same for a hash the program computed (Envoy's
-- request hash, Varnish's integer key): a number, a uint64_t or a decimal
-- string (64-bit hashes above 2^53).
function program_mt.find_hash(self, hash)
    local h, err = parse_hash(self, hash)
    if h == nil then return nil, err end
    return program_answer(self, h)
end

local function check_cursor(self, cursor)
    if type(cursor) ~= "table" or cursor.ring ~= self then
        return nil, "cursor must be what find or next of this ring answered"
    end
    if not self.walk_kind then return nil, self.no_walk end
    return true
end

--- ring:next(cursor): the program's next pick for the key and its cursor:
-- Envoy's retry attempt 1, 2, ... (repeats included); for haproxy,
-- varnish-shard and unweighted libmemcached the next distinct node in ring
-- order (where the program sends the key when every node before it is out:
-- HAProxy's tree without the down servers, Varnish's alt, libmemcached's
-- continuum without the ejected servers). nil, message past the last node,
-- and for the ketama rings that rebuild instead of walking.
function program_mt.next(self, cursor)
    local ok, err = check_cursor(self, cursor)
    if not ok then return nil, err end
    local step = cursor.step + 1
    local node_id
    if self.walk_kind == "attempt" then
        local node = lib.chash_ring_find_attempt(self.ring, cursor.hash, step)
        if node == NO_NODE then return nil, "empty ring: no node has points" end
        node_id = self.ids[node + 1]
    else
        local ids, werr = distinct_walk(self.ring, nil, cursor.hash, step + 1, self.ids)
        if not ids then return nil, werr end
        node_id = ids[step + 1]
        if node_id == nil then return nil, "every node has been tried" end
    end
    return node_id, { hash = cursor.hash, step = step, ring = self }
end

--- ring:walk(key [, count]): find's id and then next()'s, up to count
-- (default: the node count): a Lua array, or nil, message.
function program_mt.walk(self, key, count)
    local n = count == nil and #self.ids or tonumber(count)
    if not n or n < 0 then return nil, "count must be a number >= 0" end
    local id, cursor = program_mt.find(self, key)
    if id == nil then return nil, cursor end
    if not self.walk_kind then return nil, self.no_walk end
    if self.walk_kind == "distinct" then
        return distinct_walk(self.ring, nil, cursor.hash, n, self.ids)
    end
    local out = {}
    for attempt = 0, n - 1 do
        out[attempt + 1] = self.ids[lib.chash_ring_find_attempt(self.ring, cursor.hash,
                                                                attempt) + 1]
    end
    return out
end

--- ring:stats(): flavor, nodes, points kept, generated, key hash bits.
function program_mt.stats(self)
    return {
        flavor = self.flavor,
        nodes = #self.ids,
        points = self.num_points,
        generated = tonumber(lib.chash_ring_points_generated(self.ring)),
        key_hash_bits = self.bits,
    }
end

-- ---- Snapshots -------------------------------------------------------------------

-- chash_snapshot_options of `opts` (mode, trusted_keys, min_config_version,
-- max_file_bytes, threads, skip_checksum), and what must stay alive while
-- it is used (the keys). Reads the key files: a thread pool's work in watch.
local function snapshot_options(opts, default_threads)
    local o = ffi_new("chash_snapshot_options")
    o.size = ffi.sizeof("chash_snapshot_options")
    o.threads = default_threads or 0
    if not opts then return o end
    local mode = opts.mode or (opts.copy and "copy") or "sealed"
    if LOAD_MODES[mode] == nil then
        return nil, "mode must be \"sealed\", \"map\" or \"copy\", got " .. tostring(mode)
    end
    o.mode = LOAD_MODES[mode]
    o.flags = opts.skip_checksum and 1 or 0
    if opts.threads ~= nil then o.threads = opts.threads end
    o.min_config_version = opts.min_config_version or 0
    o.max_file_bytes = opts.max_file_bytes or 0
    local keys = opts.trusted_keys
    if keys then
        if type(keys) ~= "table" then return nil, "trusted_keys must be a table of .pub paths" end
        local buf = ffi_new("uint8_t[?]", 32 * #keys)
        for i, path in ipairs(keys) do
            if lib.chash_public_key_read(path, buf + 32 * (i - 1)) ~= 0 then
                return nil, last_error()
            end
        end
        o.trusted_keys = buf
        o.n_trusted_keys = #keys
        return o, buf  -- buf must live as long as o is used
    end
    return o
end

-- Finalizers of the handles a watch serves: the worker's event loop never
-- frees them (the last reference to a sealed copy unmaps it). They queue the
-- handle's address; the watch's next check frees the queue in its thread.
local released = {}

local function release_later(kind)
    return function(handle)
        local n = #released
        released[n + 1] = kind
        released[n + 2] = tonumber(ffi_cast("uintptr_t", handle))
    end
end

local free_snapshot_later, free_ring_later = release_later("s"), release_later("r")

-- A ring object of a snapshot handle it takes ownership of (freed by the
-- finalizers given): nil, message, check name if it is not a resty ring.
local function from_snapshot(raw, path, free_snapshot, free_ring)
    local snapshot = ffi_gc(raw, free_snapshot)
    if lib.chash_snapshot_ring(snapshot, out_ring) ~= 0 then return nil, last_error() end
    local ring = ffi_gc(out_ring[0], free_ring)
    if lib.chash_ring_flavor(ring) ~= FLAVOR_RESTY then
        return nil, "flavor: snapshot '" .. path
                    .. "' is not a resty ring (build it with --flavor resty)",
               check_name(CHECK_FLAVOR)
    end
    local info = ffi_new("chash_snapshot_info")
    info.size = ffi.sizeof(info)
    lib.chash_snapshot_get_info(snapshot, info)
    local ids, nodes = {}, {}
    for k = 0, lib.chash_ring_num_nodes(ring) - 1 do
        local id = node_text(ring, k)
        ids[k + 1] = id
        nodes[id] = u32(lib.chash_ring_node_weight(ring, k))
    end
    local expires = tonumber(info.expires_unix_seconds)
    local self = setmetatable({ nodes = nodes, snapshot = snapshot, path = path,
                                options = { point_multiple = info.point_multiple },
                                config_version = tonumber(info.config_version),
                                expires = expires ~= 0 and expires or nil,
                                mode = LOAD_MODE_NAMES[info.mode] or tostring(info.mode) }, mt)
    self.mapped = self.mode == "map"
    attach(self, ring, ids)
    return self
end

--- load(path [, options]): a ring from a signed snapshot file (`chash build`),
-- checked before use (checksum, structure, options.trusted_keys = { pub
-- paths }, options.min_config_version, options.max_file_bytes, expiry).
-- options.mode: "sealed" (default: a sealed copy in memory that nothing
-- done to the file can change), "map" (the file's pages, shared by every
-- worker; only for files never rewritten in place), "copy". The ids are the
-- snapshot's server texts. Named subsets: find(key, name). nil, message,
-- check name if a check fails. It reads the file on the calling thread: at
-- start (init_worker_by_lua); watch() reloads off the event loop.
-- The snapshot handle of load() and load_program_ring() (theirs to own):
-- raw, or nil, message, check name.
local function load_snapshot(path, opts)
    if type(path) ~= "string" then return nil, "path must be a string" end
    local o, keep = snapshot_options(opts)
    if not o then return nil, keep end
    local out = ffi_new("chash_snapshot*[1]")
    if lib.chash_snapshot_load(path, o, out) ~= 0 then return nil, last_error(), last_check() end
    local _ = keep
    return out[0]
end

function _M.load(first, path, opts)
    if first ~= _M then path, opts = first, path end
    local raw, err, check = load_snapshot(path, opts)
    if not raw then return nil, err, check end
    return from_snapshot(raw, path, lib.chash_snapshot_free, lib.chash_ring_free)
end

local PROGRAM_OF_FLAVOR = {}
for name, program in pairs(PROGRAMS) do PROGRAM_OF_FLAVOR[program.flavor] = name end

--- load_program_ring(path [, options]): another program's ring (haproxy,
-- ketama-md5, varnish-shard, envoy-ring, envoy-maglev) from a snapshot file
-- (`chash build --flavor haproxy ...`), checked as load() checks (the same
-- options); the ring object of new_program_ring, whose ids are the
-- snapshot's server texts. nil, message, check name if a check fails or the
-- file is of a CRC-32 flavor (load() takes resty's).
function _M.load_program_ring(first, path, opts)
    if first ~= _M then path, opts = first, path end
    local raw, err, check = load_snapshot(path, opts)
    if not raw then return nil, err, check end
    local snapshot = ffi_gc(raw, lib.chash_snapshot_free)
    if lib.chash_snapshot_ring(snapshot, out_ring) ~= 0 then return nil, last_error() end
    local ring = ffi_gc(out_ring[0], lib.chash_ring_free)
    local flavor = PROGRAM_OF_FLAVOR[tonumber(lib.chash_ring_flavor(ring))]
    if not flavor then
        return nil, "flavor: snapshot '" .. path .. "' is not another program's ring (haproxy, "
                    .. "ketama-md5, varnish-shard, envoy-ring, envoy-maglev): load() takes "
                    .. "resty's", check_name(CHECK_FLAVOR)
    end
    local ids = {}
    for k = 0, lib.chash_ring_num_nodes(ring) - 1 do ids[k + 1] = node_text(ring, k) end
    local self = program_ring(ring, ids, flavor)
    self.snapshot = snapshot  -- the ring shares its columns: kept while the object lives
    return self
end

-- ---- Watching a snapshot path: the reload policy of libchash -----------------

-- chash_reloader_options of a watch's options; what must stay alive while
-- they are used.
local function reloader_options(opts)
    local load, keys = snapshot_options(opts, 1)
    if not load then return nil, keys end
    local o = ffi_new("chash_reloader_options")
    o.size = ffi.sizeof(o)
    local flags = 0
    if opts.share == false then flags = flags + RELOAD_NO_SHARE end
    if opts.keep_last_good == false then flags = flags + RELOAD_NO_LAST_GOOD end
    if opts.read_only then flags = flags + RELOAD_NO_WRITE end
    o.flags = flags
    o.load = load
    o.state_dir = opts.state_dir
    o.name = opts.name
    return o, { load, keys, opts }
end

-- Creates a reloader (the first load of the path, or of BASE.good, or the
-- adoption of a sibling's copy after every check): its address as a number, or nil,
-- message, check name.
local function new_reloader(path, opts)
    local o, keep = reloader_options(opts)
    if not o then return nil, keep end
    local out = ffi_new("chash_reloader*[1]")
    if lib.chash_reloader_new(path, o, out) ~= 0 then return nil, last_error(), last_check() end
    local _ = keep
    return tonumber(ffi_cast("uintptr_t", out[0]))
end

--- thread_new(path, options), thread_check(reloader, released): what a
-- watch runs in nginx's thread pool (ngx.run_worker_thread: a Lua VM of its
-- own; numbers, strings and tables cross, so the reloader travels as its
-- address). Every stat, open, read, verification and release of a watched
-- file happens here.
function _M.thread_new(path, opts)
    return new_reloader(path, opts)
end

-- Frees the handles queued by release_later: "s"/"r", address pairs.
local function free_released(list)
    if type(list) ~= "table" then return end
    for i = 1, #list - 1, 2 do
        local kind, address = list[i], list[i + 1]
        if kind == "s" then
            lib.chash_snapshot_free(ffi_cast("chash_snapshot*", address))
        elseif kind == "r" then
            lib.chash_ring_free(ffi_cast("chash_ring*", address))
        end
    end
end

-- One look at the path: "unchanged", "same_ring", "new" (accepted, with its
-- config version, whether another process verified it, and a state error
-- or nil), "refused" (check name, message) or "error" (message, check name).
-- A new file that is not a resty ring is refused with the embedder's check
-- "flavor", so that it too is never loaded again.
function _M.thread_check(address, list)
    free_released(list)
    local reloader = ffi_cast("chash_reloader*", address)
    local result = ffi_new("chash_reload_result")
    result.size = ffi.sizeof(result)
    if lib.chash_reloader_check(reloader, result) ~= 0 then
        return "error", last_error(), last_check()
    end
    local outcome = result.outcome
    if outcome == RELOAD_REFUSED then
        return "refused", check_name(result.check), ffi_string(result.message)
    elseif outcome == RELOAD_SAME_RING then
        return "same_ring"
    elseif outcome ~= RELOAD_NEW then
        return "unchanged"
    end
    local candidate = result.snapshot
    local flavor = FLAVOR_RESTY
    if lib.chash_snapshot_ring(candidate, out_ring) == 0 then
        flavor = lib.chash_ring_flavor(out_ring[0])
        lib.chash_ring_free(out_ring[0])
    end
    lib.chash_snapshot_free(candidate)
    if flavor ~= FLAVOR_RESTY then
        local message = "not a resty ring (build it with --flavor resty)"
        lib.chash_reloader_refuse(reloader, result, CHECK_FLAVOR, message)
        return "refused", check_name(CHECK_FLAVOR), check_name(CHECK_FLAVOR) .. ": " .. message
    end
    local rc = lib.chash_reloader_accept(reloader, result)
    if rc ~= 0 and rc ~= E_IO then return "error", last_error(), last_check() end
    return "new", tonumber(result.config_version), result.adopted == 1,
           rc == E_IO and last_error() or nil
end

local holder_mt = {}
holder_mt.__index = holder_mt

-- The ring the reloader serves now, as a ring object whose handles are
-- released off the event loop. chash_reloader_current is a pointer copy.
local function served_ring(h)
    if lib.chash_reloader_current(h.reloader, out_snapshot) ~= 0 then
        return nil, last_error(), last_check()
    end
    return from_snapshot(out_snapshot[0], h.path, free_snapshot_later, free_ring_later)
end

--- watch(path [, options]): a holder of the newest good snapshot ring of
-- `path`, by libchash's reload policy (chash_reloader): a file is loaded
-- with every check when its identity (device, inode, size, mtime) changes;
-- a refused file is never verified again; versions only go up; with
-- options.state_dir they persist across restarts and reloads of nginx, the
-- last good file is kept, and the workers map each other's sealed copy
-- after every check (one copy a host).
--
-- holder.ring is the current ring. holder:check() (from ngx.timer.every or
-- a request) looks at the path once IN NGINX'S THREAD POOL
-- (ngx.run_worker_thread; `thread_pool NAME threads=N;` in nginx.conf's
-- main context, NAME = options.thread_pool, default "default"): true if it
-- swapped, false if nothing changed, nil, message, check name if refused
-- (the old ring stays; the file is not looked at again until it changes).
-- The event loop only swaps pointers and builds the id table.
--
-- Options: those of load (trusted_keys, min_config_version, max_file_bytes,
-- mode; threads, default 1), state_dir, name, share (default true),
-- keep_last_good (default true), read_only, thread_pool. Without
-- ngx.run_worker_thread watch refuses to start: checks never run on the
-- event loop. The first load runs where watch is called: in init_worker_by_lua
-- on the worker's own thread before it serves (with a state_dir, a worker
-- after the first adopts the copy verified by another, O(nodes)); from a
-- timer or a request, in the thread pool.
function _M.watch(first, path, opts)
    if first ~= _M then path, opts = first, path end
    if type(path) ~= "string" then return nil, "path must be a string" end
    opts = opts or {}
    if type(opts) ~= "table" then return nil, "options must be a table" end
    local run = ngx and ngx.run_worker_thread
    if not run then
        return nil, "chash.resty watch needs ngx.run_worker_thread (lua-nginx-module 0.10.21 or "
                    .. "later, nginx with threads): its checks never run on the event loop"
    end
    local pool = opts.thread_pool or "default"
    local phase = ngx.get_phase()
    if phase == "init" then
        return nil, "call chash.resty watch in init_worker_by_lua or later: one reloader a worker"
    end
    local address, err, check
    if phase == "init_worker" then
        address, err, check = new_reloader(path, opts)
    else
        local ok, ran, a, b, c = pcall(run, pool, "chash.resty", "thread_new", path, opts)
        if not ok then return nil, "chash.resty watch: " .. tostring(ran) end
        if not ran then
            return nil, "chash.resty watch: thread pool '" .. pool .. "': " .. tostring(a)
        end
        address, err, check = a, b, c
    end
    if not address then return nil, err, check end
    local h = setmetatable({ path = path, pool = pool, swaps = 0,
                             reloader = ffi_gc(ffi_cast("chash_reloader*", address),
                                               lib.chash_reloader_free),
                             address = address }, holder_mt)
    local ring, rerr, rcheck = served_ring(h)
    if not ring then return nil, rerr, rcheck end
    h.ring = ring
    return h
end

function holder_mt.check(h)
    if h.checking then return false end  -- another check of this holder is in flight
    if h.behind then
        -- The reloader accepted a ring the last check could not take (out
        -- of memory): take it now.
        local ring, err, check = served_ring(h)
        if not ring then return nil, err, check end
        h.ring, h.behind = ring, nil
        h.swaps = h.swaps + 1
        return true
    end
    h.checking = true
    local list = released
    released = {}
    local ok, ran, outcome, a, b, c = pcall(ngx.run_worker_thread, h.pool, "chash.resty",
                                            "thread_check", h.address, list)
    h.checking = false
    if not ok then
        return nil, "chash.resty watch: " .. tostring(ran)
    end
    if not ran then
        -- Nothing ran (no such thread pool, no Lua VM free): the handles of
        -- `list` may have been freed or not; they are not handed over again.
        h.error = "chash.resty watch: thread pool '" .. h.pool .. "': " .. tostring(outcome)
        return nil, h.error
    end
    h.error = nil
    if outcome == "new" then
        local ring, err, check = served_ring(h)
        if not ring then
            h.behind = true
            return nil, err, check
        end
        h.ring = ring
        h.swaps = h.swaps + 1
        h.state_error = c
        return true
    elseif outcome == "refused" then
        return nil, b, a
    elseif outcome == "error" then
        return nil, a, b
    end
    return false
end

--- holder:report(): what the reload policy has done (chash_reload_report;
-- memory only, never waits for a check in flight): served_version,
-- highest_version, accepted, adopted, refused (each file once), last_check
-- (a check name, nil if none), last_message, serving_last_good,
-- state_error (a message, nil if none), checking_since, expires (the ring
-- served's expiry, nil if never), serving_expired (past it: served only
-- while nothing newer passes), state_file (its last good file's path, nil
-- without a state directory).
function holder_mt.report(h)
    local r = ffi_new("chash_reload_report")
    r.size = ffi.sizeof(r)
    if lib.chash_reloader_report(h.reloader, r) ~= 0 then return nil, last_error() end
    local since = tonumber(r.checking_since_unix_seconds)
    return {
        served_version = tonumber(r.served_version),
        highest_version = tonumber(r.highest_version),
        accepted = tonumber(r.accepted),
        adopted = tonumber(r.adopted),
        refused = tonumber(r.refused),
        last_check = r.last_check ~= 0 and check_name(r.last_check) or nil,
        last_message = ffi_string(r.last_message),
        last_refused = tonumber(r.last_refused_unix_seconds),
        serving_last_good = r.serving_last_good == 1,
        state_error = r.state_error == 1 and ffi_string(r.state_message) or nil,
        checking_since = since ~= 0 and since or nil,
        expires = r.served_expires_unix_seconds ~= 0
            and tonumber(r.served_expires_unix_seconds) or nil,
        serving_expired = r.serving_expired == 1,
        state_file = r.state_file[0] ~= 0 and ffi_string(r.state_file) or nil,
    }
end

-- ---- Migration -------------------------------------------------------------------

local migration_mt = {}
migration_mt.__index = migration_mt

--- migration(old, new [, options]): both rings, each key routed by a stable
-- hash of it through one of them. options.seed, options.allow_mismatch
-- (rings of different servers). Starts closed: out of scope, rollout 0.
function _M.migration(first, old, new, opts)
    if first ~= _M then old, new, opts = first, old, new end
    if getmetatable(old) ~= mt or getmetatable(new) ~= mt then
        return nil, "old and new must be chash.resty rings"
    end
    local out = ffi_new("chash_migration*[1]")
    local seed = opts and opts.seed or 0
    if lib.chash_migration_new(old.ring, new.ring, seed, opts and opts.allow_mismatch and 1 or 0,
                               out) ~= 0 then
        return nil, last_error()
    end
    return setmetatable({ m = ffi_gc(out[0], lib.chash_migration_free), old = old, new = new },
                        migration_mt)
end

--- set_rollout(fraction 0..1), set_in_scope(boolean): any time, lock-free.
function migration_mt.set_rollout(self, fraction)
    local f = tonumber(fraction)
    if not f or lib.chash_migration_set_rollout(self.m, f) ~= 0 then
        return nil, "rollout must be a number 0..1, got " .. tostring(fraction)
    end
    return true
end

function migration_mt.set_in_scope(self, in_scope)
    lib.chash_migration_set_in_scope(self.m, in_scope and 1 or 0)
    return true
end

--- find(key): the key's id and "old" or "new", the ring that answered.
function migration_mt.find(self, key)
    local k = tostring(key)
    local node = lib.chash_migration_find(self.m, k, #k, out_side)
    if node == NO_NODE then return nil, "empty ring" end
    if out_side[0] == 1 then return self.new.ids[node + 1], "new" end
    return self.old.ids[node + 1], "old"
end

function migration_mt.counters(self)
    lib.chash_migration_counters(self.m, out_u64, out_u64 + 1)
    return tonumber(out_u64[0]), tonumber(out_u64[1])
end

-- ---- Apache APISIX ---------------------------------------------------------------

--- apisix_id("host:port"): the id APISIX's chash balancer gives resty.chash
-- (every ':' replaced by NUL); for IPv4 exactly the bytes nginx hashes for
-- `server host:port`. apisix_server(id) turns it back.
function _M.apisix_id(server)
    return (str_gsub(server, ":", "\0"))
end

function _M.apisix_server(id)
    return (str_gsub(id, "%z", ":"))
end

function _M.version()
    return ffi_string(lib.chash_version())
end

return _M
