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
-- duplicated hashes. Objects are per worker and not shared across threads.

local ffi = require "ffi"

local ffi_new, ffi_string, ffi_gc, C_NULL = ffi.new, ffi.string, ffi.gc, nil
local floor, type, tostring, tonumber, pairs = math.floor, type, tostring, tonumber, pairs
local setmetatable, pcall = setmetatable, pcall
local str_gsub, str_sub, str_byte = string.gsub, string.sub, string.byte

-- Functions that return a uint32_t are declared int32_t here: the x86-64
-- ABI leaves a 32-bit return's upper register half undefined, and LuaJIT's
-- compiled code reads a uint32_t return as 64 bits (a migration lookup came
-- back as 2^32 + its node). An int32_t return is read as 32 bits; u32()
-- below restores the unsigned value where it can pass 2^31.
ffi.cdef [[
typedef struct chash_builder chash_builder;
typedef struct chash_ring chash_ring;
typedef struct chash_node_mask chash_node_mask;
typedef struct chash_snapshot chash_snapshot;
typedef struct chash_migration chash_migration;
typedef struct chash_distinct_walk { uint64_t opaque[1032]; } chash_distinct_walk;
typedef struct chash_snapshot_options {
  int copy;
  int skip_checksum;
  uint64_t min_config_version;
  const uint8_t *trusted_keys;
  size_t n_trusted_keys;
} chash_snapshot_options;
typedef struct chash_snapshot_info {
  uint16_t major_version, minor_version;
  uint64_t file_bytes;
  uint64_t config_version;
  int64_t created_unix_seconds;
  int flavor;
  uint32_t point_multiple;
  uint32_t nodes;
  uint64_t points;
  uint64_t points_generated;
  uint32_t subsets;
  int is_signed;
  uint8_t key_id[8];
  int mapped;
} chash_snapshot_info;

const char *chash_last_error(void);
const char *chash_version(void);
int32_t chash_crc32(const void *data, size_t len);

int chash_builder_new(int flavor, uint32_t point_multiple, chash_builder **out);
int chash_builder_set_threads(chash_builder *builder, uint32_t threads);
int chash_builder_set_max_points(chash_builder *builder, uint64_t max_points);
int chash_builder_add(chash_builder *builder, const char *address, size_t address_len,
                      uint32_t weight);
const char *chash_builder_error(const chash_builder *builder);
int chash_builder_build(chash_builder *builder, chash_ring **out);
void chash_builder_free(chash_builder *builder);

void chash_ring_free(chash_ring *ring);
int32_t chash_ring_find_position(const chash_ring *ring, uint32_t hash);
int32_t chash_ring_point_at(const chash_ring *ring, uint64_t position, uint32_t *hash);
int chash_ring_owns_points(const chash_ring *ring, uint32_t node);
int chash_ring_collision_losers(const chash_ring *ring, const uint32_t **hashes,
                                const uint16_t **nodes, uint64_t *count);
int32_t chash_ring_num_nodes(const chash_ring *ring);
uint64_t chash_ring_num_points(const chash_ring *ring);
uint64_t chash_ring_points_generated(const chash_ring *ring);
int chash_ring_flavor(const chash_ring *ring);
int32_t chash_ring_point_multiple(const chash_ring *ring);
const char *chash_ring_node_address(const chash_ring *ring, uint32_t node, size_t *len);
int32_t chash_ring_node_weight(const chash_ring *ring, uint32_t node);
int chash_ring_walk_distinct(const chash_ring *ring, uint32_t hash, chash_distinct_walk *walk);
int32_t chash_distinct_walk_next(chash_distinct_walk *walk);

int chash_node_mask_new(uint32_t num_nodes, int available, chash_node_mask **out);
int chash_node_mask_set(chash_node_mask *mask, uint32_t node, int available);
int chash_node_mask_get(const chash_node_mask *mask, uint32_t node);
int32_t chash_node_mask_count_available(const chash_node_mask *mask);
void chash_node_mask_free(chash_node_mask *mask);
int32_t chash_ring_find_available_hash(const chash_ring *ring, const chash_node_mask *mask,
                                        uint32_t hash);

int chash_snapshot_load(const char *path, const chash_snapshot_options *options,
                        chash_snapshot **out);
void chash_snapshot_free(chash_snapshot *snapshot);
int chash_snapshot_ring(const chash_snapshot *snapshot, chash_ring **out);
int chash_snapshot_get_info(const chash_snapshot *snapshot, chash_snapshot_info *out);
const char *chash_snapshot_label(const chash_snapshot *snapshot);
const char *chash_snapshot_subset_name(const chash_snapshot *snapshot, uint32_t i);
int chash_snapshot_subset(const chash_snapshot *snapshot, const char *name,
                          chash_node_mask **out);
int chash_public_key_read(const char *path, uint8_t *out);

int chash_migration_new(const chash_ring *old_ring, const chash_ring *new_ring, uint64_t seed,
                        int allow_backend_mismatch, chash_migration **out);
int chash_migration_set_rollout(chash_migration *migration, double fraction);
int chash_migration_set_in_scope(chash_migration *migration, int in_scope);
int32_t chash_migration_rollout_ppm(const chash_migration *migration);
int chash_migration_in_scope(const chash_migration *migration);
int32_t chash_migration_find(const chash_migration *migration, const void *key, size_t key_len,
                              int *side);
int chash_migration_counters(const chash_migration *migration, uint64_t *old_ring,
                             uint64_t *new_ring);
void chash_migration_free(chash_migration *migration);
]]

local FLAVOR_RESTY = 3
local NO_NODE = -1  -- CHASH_NO_NODE read as int32_t
local MAX_WEIGHT = 4294967295

local function u32(x)
    if x < 0 then return x + 4294967296 end
    return x
end

-- libchash.so from package.cpath's directories (as resty.chash finds its
-- own library), else the system's library path. An older lua-resty-balancer
-- also shipped a "libchash.so": a library without chash_version is skipped.
local function is_libchash(lib)
    return pcall(function() return lib.chash_version end)
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
    for _, name in ipairs({ "chash", "libchash.so.0" }) do
        local ok, lib = pcall(ffi.load, name)
        if ok and is_libchash(lib) then return lib end
    end
    return nil
end

local lib = load_libchash()
if not lib then
    error("chash.resty: cannot load libchash.so (searched package.cpath and the system path)")
end

local _M = { _VERSION = "0.2.0", POINTS_PER_WEIGHT = 160 }
local mt = { __index = _M }

local out_builder = ffi_new("chash_builder*[1]")
local out_ring = ffi_new("chash_ring*[1]")
local out_mask = ffi_new("chash_node_mask*[1]")
local out_u32 = ffi_new("uint32_t[1]")
local out_len = ffi_new("size_t[1]")
local out_loser_hashes = ffi_new("const uint32_t*[1]")
local out_loser_nodes = ffi_new("const uint16_t*[1]")
local out_u64 = ffi_new("uint64_t[2]")
local out_side = ffi_new("int[1]")
-- One distinct walk serves every call: each walk runs to its end inside the
-- call (no yield), so calls never interleave on it.
local distinct_walk = ffi_new("chash_distinct_walk")

local function last_error()
    return ffi_string(lib.chash_last_error())
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

-- The first available node among the collision losers at hash h (losers of
-- one hash are kept in the order of the ring's collision rule), or nil.
local function first_available_loser(self, h, mask)
    local hashes, nodes = self.loser_hashes, self.loser_nodes
    local i = losers_below(self, h)
    while i < self.nlosers and hashes[i] == h do
        if lib.chash_node_mask_get(mask, nodes[i]) == 1 then return nodes[i] end
        i = i + 1
    end
    return nil
end

-- Under a mask: the distinct walk of the ring of the available nodes alone,
-- point by point. A point whose winner is down belongs to the first
-- available loser at its hash (as find answers), so the walk starts with
-- find's node. Stops once every available node that owns points was seen:
-- O(points between them), at most one pass over the ring.
local function walk_available(self, hash, n, mask, out)
    local ring, ids = self.ring, self.ids
    local reachable = 0
    for node = 0, #ids - 1 do
        if lib.chash_node_mask_get(mask, node) == 1 and lib.chash_ring_owns_points(ring, node) == 1 then
            reachable = reachable + 1
        end
    end
    local points = self.num_points
    local slot = lib.chash_ring_find_position(ring, hash)
    local seen, got = {}, 0
    for _ = 1, points do
        if got >= n or got >= reachable then break end
        local node = lib.chash_ring_point_at(ring, slot, out_u32)
        if lib.chash_node_mask_get(mask, node) ~= 1 then
            node = self.nlosers > 0 and first_available_loser(self, out_u32[0], mask) or nil
        end
        if node ~= nil and not seen[node] then
            seen[node] = true
            got = got + 1
            out[got] = ids[node + 1]
        end
        slot = slot + 1
        if slot == points then slot = 0 end
    end
    return out
end

--- walk(key [, count [, subset]]): up to `count` (default: all) distinct
-- ids in ring order from the key's point: the retry order resty.chash users
-- build by hand with next() and a seen-set. Under the node mask or a subset
-- it is the walk of the ring of the available nodes alone, so its first id
-- is find's answer. A Lua array; nil, message on bad input.
function _M.walk(self, key, count, subset)
    local n = count and tonumber(count) or 65536
    if not n or n < 0 then return nil, "count must be a number >= 0" end
    local mask, err = subset_mask(self, subset)
    if err then return nil, err end
    local out = {}
    if self.num_points == 0 or n == 0 then return out end
    local k = tostring(key)
    local hash = u32(lib.chash_crc32(k, #k))
    if mask ~= nil then return walk_available(self, hash, n, mask, out) end
    lib.chash_ring_walk_distinct(self.ring, hash, distinct_walk)
    local got = 0
    while got < n do
        local node = lib.chash_distinct_walk_next(distinct_walk)
        if node == NO_NODE then break end
        got = got + 1
        out[got] = self.ids[node + 1]
    end
    return out
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

-- ---- Snapshots -------------------------------------------------------------------

local function snapshot_options(opts)
    local o = ffi_new("chash_snapshot_options")
    if not opts then return o end
    o.copy = opts.copy and 1 or 0
    o.min_config_version = opts.min_config_version or 0
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

--- load(path [, options]): a ring from a signed snapshot file (`chash build`),
-- checked before use (checksum, structure, options.trusted_keys = { pub
-- paths }, options.min_config_version); mapped read-only, so every worker's
-- ring is the same page-cache pages. The ids are the snapshot's server texts.
-- Named subsets: find(key, name). nil, message if any check fails.
function _M.load(first, path, opts)
    if first ~= _M then path, opts = first, path end
    if type(path) ~= "string" then return nil, "path must be a string" end
    local o, keep = snapshot_options(opts)
    if not o then return nil, keep end
    local out = ffi_new("chash_snapshot*[1]")
    if lib.chash_snapshot_load(path, o, out) ~= 0 then return nil, last_error() end
    local snapshot = ffi_gc(out[0], lib.chash_snapshot_free)
    local _ = keep
    if lib.chash_snapshot_ring(snapshot, out_ring) ~= 0 then return nil, last_error() end
    local ring = ffi_gc(out_ring[0], lib.chash_ring_free)
    if lib.chash_ring_flavor(ring) ~= FLAVOR_RESTY then
        return nil, "snapshot '" .. path .. "' is not a resty ring (build it with --mode resty)"
    end
    local info = ffi_new("chash_snapshot_info")
    lib.chash_snapshot_get_info(snapshot, info)
    local ids, nodes = {}, {}
    for k = 0, lib.chash_ring_num_nodes(ring) - 1 do
        local id = node_text(ring, k)
        ids[k + 1] = id
        nodes[id] = u32(lib.chash_ring_node_weight(ring, k))
    end
    local self = setmetatable({ nodes = nodes, snapshot = snapshot, path = path,
                                options = { point_multiple = info.point_multiple },
                                config_version = tonumber(info.config_version),
                                mapped = info.mapped == 1 }, mt)
    attach(self, ring, ids)
    return self
end

-- The header's first 144 bytes (magic, version, size, config version,
-- creation time, shape, fingerprint, points digest): a new file differs
-- there. Read without loading the file.
local function peek_header(path)
    local f = io.open(path, "rb")
    if not f then return nil end
    local head = f:read(144)
    f:close()
    if not head or #head < 144 or str_sub(head, 1, 8) ~= "CHASHRNG" then return nil end
    return head
end

--- watch(path [, options]): a holder of the newest good snapshot ring.
-- holder.ring is the current ring; holder:check() (from ngx.timer.every)
-- loads the file when its header changed and swaps only after every check
-- passes and its config version is not older: true if swapped, false if
-- unchanged, nil, message if refused (the old ring stays, and the next
-- check loads the file again). Publish files by rename (`chash build`
-- does): the old ring keeps its own mapping.
function _M.watch(first, path, opts)
    if first ~= _M then path, opts = first, path end
    local ring, err = _M.load(path, opts)
    if not ring then return nil, err end
    local holder = { ring = ring, path = path, opts = opts, swaps = 0 }
    holder.seen = peek_header(path)
    function holder.check(h)
        local head = peek_header(h.path)
        if head == nil then return nil, "cannot read the header of " .. h.path end
        if head == h.seen then return false end
        local fresh, load_err = _M.load(h.path, h.opts)
        if not fresh then return nil, load_err end
        if fresh.config_version < h.ring.config_version then
            return nil, "config version " .. fresh.config_version .. " is older than "
                        .. h.ring.config_version
        end
        h.ring = fresh
        h.seen = head
        h.swaps = h.swaps + 1
        return true
    end
    return holder
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
