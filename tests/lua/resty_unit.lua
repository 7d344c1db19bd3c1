-- Unit tests of chash.resty inside the real OpenResty stack (nginx's Lua
-- module): every call against the answers recorded from resty.chash
-- (tests/data/resty/), edge cases and errors. Run by tests/lua/test_resty.py
-- through a content_by_lua_block; prints "ok NAME" / "not ok NAME: why" and
-- a last line "done PASSED FAILED".
local bit = require "bit"
local chash = require "chash.resty"

local _M = {}

local out, passed, failed = nil, 0, 0

local function report(name, ok, why)
    if ok then
        passed = passed + 1
        out[#out + 1] = "ok " .. name
    else
        failed = failed + 1
        out[#out + 1] = "not ok " .. name .. ": " .. tostring(why)
    end
end

-- Runs fn; fn returns true, or false and a reason; an error fails too.
local function test(name, fn)
    local ok, result, why = pcall(fn)
    if not ok then
        report(name, false, "raised " .. tostring(result))
    else
        report(name, result == true, why)
    end
end

local function lines(path)
    local f = assert(io.open(path, "rb"))
    local t = {}
    for line in f:lines() do t[#t + 1] = line end
    f:close()
    return t
end

-- prefix .. 4 bytes whose crc32 is `want`: CRC32 is linear, so the
-- register that 4 zero bytes carry to ~want, walked back with the table's
-- unique top bytes, XOR the register after prefix, gives those 4 bytes.
local crc_table, crc_back = {}, {}
for k = 0, 255 do
    local c = k
    for _ = 1, 8 do
        c = bit.band(c, 1) == 1 and bit.bxor(bit.rshift(c, 1), 0xEDB88320) or bit.rshift(c, 1)
    end
    crc_table[k] = c
    crc_back[bit.rshift(c, 24)] = bit.bxor(bit.lshift(c, 8), k)
end

local function key_with_crc32(prefix, want)
    local reg = bit.bnot(want)
    for _ = 1, 4 do
        reg = bit.bxor(bit.lshift(reg, 8), crc_back[bit.rshift(reg, 24)])
    end
    local x = bit.bxor(reg, bit.bnot(ngx.crc32_long(prefix)))
    return prefix .. string.char(bit.band(x, 255), bit.band(bit.rshift(x, 8), 255),
                                 bit.band(bit.rshift(x, 16), 255), bit.rshift(x, 24))
end

local function read_nodes(path)
    local nodes, order = {}, {}
    for _, line in ipairs(lines(path)) do
        if line ~= "" and line:sub(1, 1) ~= "#" then
            local id, w = line:match("^(.*) (%d+)$")
            nodes[id] = tonumber(w)
            order[#order + 1] = { id, tonumber(w) }
        end
    end
    return nodes, order
end

-- key,id,index rows: split at the last two commas.
local function read_answers(path)
    local rows = {}
    for _, line in ipairs(lines(path)) do
        local key, id, index = line:match("^(.*),(.*),(%d+)$")
        rows[#rows + 1] = { key, id, tonumber(index) }
    end
    return rows
end

local function expect_answers(ring, rows)
    for i, row in ipairs(rows) do
        local id, pos = ring:find(row[1])
        if id ~= row[2] or pos ~= row[3] then
            return false, "row " .. i .. " key " .. row[1] .. ": resty.chash " .. row[2] .. " @"
                          .. row[3] .. ", got " .. tostring(id) .. " @" .. tostring(pos)
        end
    end
    return #rows > 0, "no rows"
end

local function expect_error(what, value, err, pattern)
    if value ~= nil then return false, what .. ": expected nil, got " .. tostring(value) end
    if type(err) ~= "string" or (pattern and not err:find(pattern, 1, true)) then
        return false, what .. ": message " .. tostring(err) .. " lacks '" .. tostring(pattern) .. "'"
    end
    return true
end

-- The harness, for the other suites run the same way (programs_unit.lua).
_M.test, _M.lines, _M.expect_error = test, lines, expect_error

function _M.begin()
    out, passed, failed = {}, 0, 0
end

function _M.finish()
    out[#out + 1] = "done " .. passed .. " " .. failed
    return table.concat(out, "\n")
end

function _M.run(data, snapshots)
    _M.begin()
    local G = data .. "/resty/"

    -- The ring chash:new builds of the golden nodes file NAME.nodes, the
    -- nodes, and their order in the file (read_nodes).
    local function golden_ring(name)
        local nodes, order = read_nodes(G .. name .. ".nodes")
        return chash:new(nodes), nodes, order
    end

    for _, name in ipairs({ "ra", "rb", "ra_walk" }) do
        test("find_golden_" .. name, function()
            local ring, err = chash:new((read_nodes(G .. name .. ".nodes")))
            if not ring then return false, err end
            return expect_answers(ring, read_answers(G .. name .. ".csv"))
        end)
    end

    test("version_is_the_loaded_libchash", function()
        local v = chash.version()
        return chash._VERSION == v and v:match("^%d+%.%d+%.%d+$") ~= nil,
               "_VERSION " .. tostring(chash._VERSION) .. ", libchash " .. tostring(v)
    end)

    -- The module declares from chash_c_declarations, with every uint32_t
    -- return as int32_t (LuaJIT reads a uint32_t return as 64 bits). The
    -- declarations are the LuaJIT state's, so a second handle on the same
    -- library sees the module's.
    test("uint32_returns_are_declared_int32", function()
        local ffi = require "ffi"
        local lib = ffi.load(assert(package.searchpath("libchash", package.cpath)))
        local text = ffi.string(lib.chash_c_declarations())
        local seen = 0
        for name in ("\n" .. text):gmatch("\nuint32_t (chash_[%w_]+)%s*%(") do
            local declared = tostring(ffi.typeof(lib[name]))
            if declared ~= "ctype<int ()>" then return false, name .. " is " .. declared end
            seen = seen + 1
        end
        return seen >= 20, seen .. " functions return uint32_t"
    end)

    test("new_as_function_and_method_agree", function()
        local nodes = read_nodes(G .. "ra.nodes")
        local a, b = chash:new(nodes), chash.new(nodes)
        for _, row in ipairs(read_answers(G .. "ra.csv")) do
            if a:find(row[1]) ~= b:find(row[1]) then return false, row[1] end
        end
        return true
    end)

    test("next_golden_ra_walk_12_points", function()
        local ring = golden_ring("ra_walk")
        local n = 0
        for _, line in ipairs(lines(G .. "ra_walk.next12.csv")) do
            local key, rest = line:match("^(.*),(.-)$")
            local want = {}
            for id in rest:gmatch("[^ ]+") do want[#want + 1] = id end
            local id, pos = ring:find(key)
            local got = { id }
            for _ = 2, 12 do
                id, pos = ring:next(pos)
                got[#got + 1] = id
            end
            for i = 1, 12 do
                if got[i] ~= want[i] then
                    return false, key .. " step " .. i .. ": " .. want[i] .. " vs " .. tostring(got[i])
                end
            end
            n = n + 1
        end
        return n == 1000, "rows " .. n
    end)

    test("next_walks_every_position_once_with_collisions", function()
        -- rb has 10 duplicated hashes: size counts them, as resty.chash does.
        local ring = golden_ring("rb")
        local st = ring:stats()
        if st.collisions ~= 10 or st.points ~= st.generated then
            return false, "collisions " .. st.collisions .. " points " .. st.points
        end
        local seen, id, pos = {}, nil, ring.size - 1
        local count = {}
        for _ = 1, ring.size do
            id, pos = ring:next(pos)
            if seen[pos] then return false, "position " .. pos .. " twice" end
            seen[pos] = true
            count[id] = (count[id] or 0) + 1
        end
        -- every node appears weight x 160 times
        for node, w in pairs(ring.nodes) do
            if count[node] ~= w * 160 then
                return false, node .. " seen " .. tostring(count[node]) .. " times, weight " .. w
            end
        end
        return pos == ring.size - 1, "ended at " .. pos
    end)

    test("ops_golden_re_steps", function()
        local ring, nodes, order = golden_ring("re")
        local keys_ok, why = expect_answers(ring, read_answers(G .. "re.step0.csv"))
        if not keys_ok then return false, "step 0: " .. why end
        local steps = 0
        for _, line in ipairs(lines(G .. "re.ops")) do
            if line:sub(1, 1) ~= "#" and line ~= "" then
                local step, op, id, w = line:match("^(%d+) (%S+) (%S+) (%S+)")
                local ok, err
                if op == "reinit" then
                    local every_other = {}
                    for i = 1, #order, 2 do every_other[order[i][1]] = order[i][2] end
                    ok, err = ring:reinit(every_other)
                else
                    ok, err = ring[op](ring, id, tonumber(w))
                end
                if not ok then return false, "step " .. step .. " " .. op .. ": " .. tostring(err) end
                keys_ok, why = expect_answers(ring, read_answers(G .. "re.step" .. step .. ".csv"))
                if not keys_ok then return false, "step " .. step .. ": " .. why end
                steps = steps + 1
            end
        end
        return steps == 8, "steps " .. steps
    end)

    test("ops_semantics_as_resty_chash", function()
        local ring = chash:new({ a = 2, b = 1 })
        assert(ring:incr("a") and ring.nodes.a == 3)          -- default 1
        assert(ring:incr("c", 2) and ring.nodes.c == 2)       -- adds
        assert(ring:decr("c") and ring.nodes.c == 1)
        assert(ring:decr("c", 5) and ring.nodes.c == nil)     -- at/below 0: deleted
        assert(ring:decr("zz") and ring.nodes.zz == nil)      -- absent: nothing
        assert(ring:set("b", 0) and ring.nodes.b == nil)      -- 0 deletes
        assert(ring:set("d", 4) and ring.nodes.d == 4)
        assert(ring:delete("nope") == true)
        assert(ring:delete("d") and ring.nodes.d == nil)
        local id = ring:find("anything")
        return id == "a" and ring.size == 3 * 160, "id " .. tostring(id) .. " size " .. ring.size
    end)

    test("errors_are_nil_and_message", function()
        local checks = {
            { "nodes not a table", chash:new("x") },
            { "non-string id", chash:new({ [true] = 1 }) },
            { "table id", chash:new({ [{}] = 1 }) },
            { "negative weight", chash:new({ a = -1 }) },
            { "fractional weight", chash:new({ a = 1.5 }) },
            { "text weight", chash:new({ a = "heavy" }) },
            { "weight over u32", chash:new({ a = 2 ^ 32 }) },
            { "weight x 160 over u32", chash:new({ a = 2 ^ 31 }) },
            { "empty id", chash:new({ [""] = 1 }) },
            { "number id dup of text id", chash:new({ [1] = 1, ["1"] = 1 }) },
        }
        for _, c in ipairs(checks) do
            local ok, why = expect_error(c[1], c[2], c[3])
            if not ok then return false, why end
        end
        local ring = chash:new({ a = 1 })
        for _, c in ipairs({
            { "next(nil)", ring:next(nil) }, { "next(-1)", ring:next(-1) },
            { "next(size)", ring:next(ring.size) }, { "next(0.5)", ring:next(0.5) },
            { "set bad weight", ring:set("a", "x") }, { "incr bad weight", ring:incr("a", -2) },
            { "decr bad weight", ring:decr("a", 0.25) }, { "set bad id", ring:set({}, 1) },
            { "subset on a built ring", ring:find("k", "blue") },
            { "mask unknown id", ring:set_available("zz", false) },
        }) do
            local ok, why = expect_error(c[1], c[2], c[3])
            if not ok then return false, why end
        end
        -- a failed operation keeps the ring
        local id = ring:find("k")
        return id == "a" and ring.nodes.a == 1, "ring changed"
    end)

    test("empty_ring_and_weight_zero", function()
        local ring = assert(chash:new({}))
        local ok, why = expect_error("find on empty", ring:find("k"))
        if not ok then return false, why end
        ok, why = expect_error("next on empty", ring:next(0))
        if not ok then return false, why end
        local drained = assert(chash:new({ a = 0, b = 0 }))
        ok, why = expect_error("find on all weight 0", drained:find("k"), "empty ring")
        if not ok then return false, why end
        local one = assert(chash:new({ a = 0, b = 1 }))
        for i = 1, 100 do
            if one:find("k" .. i) ~= "b" then return false, "weight 0 node answered" end
        end
        assert(one:incr("a", 1))
        local seen_a = false
        for i = 1, 200 do seen_a = seen_a or one:find("k" .. i) == "a" end
        return seen_a, "a never answers after incr"
    end)

    test("too_many_nodes", function()
        local nodes = {}
        for i = 1, 65537 do nodes["n" .. i] = 0 end
        local ring, err = chash:new(nodes)
        local ok, why = expect_error("65,537 nodes", ring, err, "65,536")
        if not ok then return false, why end
        nodes["n65537"] = nil
        ring, err = chash:new(nodes)
        return ring ~= nil, err
    end)

    test("huge_total_points_refused", function()
        local ring, err = chash:new({ a = 10000000, b = 10000000 })  -- 3.2e9 points
        return expect_error("3.2e9 points", ring, err, "points")
    end)

    test("number_ids_come_back_as_numbers", function()
        local ring = assert(chash:new({ [7] = 1, [8] = 1 }))
        local text = assert(chash:new({ ["7"] = 1, ["8"] = 1 }))
        for i = 1, 200 do
            local a, b = ring:find(i), text:find(i)
            if type(a) ~= "number" or tostring(a) ~= b then
                return false, tostring(a) .. " vs " .. tostring(b)
            end
        end
        return true
    end)

    test("masked_walk_is_the_walk_of_the_ring_of_available_nodes", function()
        -- rb has 10 duplicated hashes. For each, a key whose crc32 is that
        -- hash (forged, checked with ngx.crc32_long) lands on it; its winner
        -- goes down. Then every walk under the mask must equal the walk of
        -- a ring built from the available nodes alone and start at find's
        -- answer (a walk that merely skipped down nodes would pass the
        -- loser's hidden point there).
        local ring, nodes = golden_ring("rb")
        if ring.nlosers ~= 10 then return false, "collisions " .. ring.nlosers end
        local keys, down = {}, {}
        for i = 0, ring.nlosers - 1 do
            local h = tonumber(ring.loser_hashes[i])
            local key = key_with_crc32("/collision" .. i .. "/", h)
            if ngx.crc32_long(key) ~= h then return false, "forged key misses " .. h end
            keys[#keys + 1] = key
            down[(ring:find(key))] = true
        end
        local alive = {}
        for nid, w in pairs(nodes) do
            if down[nid] then assert(ring:set_available(nid, false)) else alive[nid] = w end
        end
        local reference = chash:new(alive)
        for i = 1, 2000 do keys[#keys + 1] = "/k" .. i end
        for _, key in ipairs(keys) do
            local a, b = ring:walk(key), reference:walk(key)
            if #a ~= #b then return false, key .. ": walk lengths " .. #a .. " and " .. #b end
            for j = 1, #a do
                if a[j] ~= b[j] then return false, key .. ": step " .. j .. " " .. a[j] .. " vs " .. b[j] end
            end
            if a[1] ~= (ring:find(key)) then return false, key .. ": walk starts off find" end
        end
        return true
    end)

    test("walk_distinct_and_mask", function()
        local ring, nodes = golden_ring("ra")
        local total = 0
        for _ in pairs(nodes) do total = total + 1 end
        for i, row in ipairs(read_answers(G .. "ra.csv")) do
            if i > 500 then break end
            local walk = ring:walk(row[1], 5)
            if #walk ~= 5 or walk[1] ~= row[2] then return false, "walk of " .. row[1] end
            local seen = {}
            for _, id in ipairs(walk) do
                if seen[id] then return false, "repeat " .. id end
                seen[id] = true
            end
        end
        local all = ring:walk("/x")
        if #all ~= total then return false, "full walk " .. #all .. " of " .. total end
        -- mask the golden answer of each key: find answers the next distinct
        local rows = read_answers(G .. "ra.csv")
        for i = 1, 300 do
            local row = rows[i]
            local walk = ring:walk(row[1], 2)
            assert(ring:set_available(row[2], false))
            local id = ring:find(row[1])
            assert(ring:set_available(row[2], true))
            if id ~= walk[2] then return false, row[1] .. ": masked " .. tostring(id) .. " walk " .. walk[2] end
        end
        -- a rebuild clears the mask; a mask of every node answers nil, message
        for id in pairs(nodes) do ring:set_available(id, false) end
        local ok, why = expect_error("all down", ring:find("k"), "available")
        if not ok then return false, why end
        if #ring:walk("k") ~= 0 then return false, "walk of all-down ring" end
        assert(ring:reinit(nodes))
        return ring:find(rows[1][1]) == rows[1][2], "mask kept after reinit"
    end)

    test("apisix_ids_route_as_nginx_hash_consistent", function()
        -- nginx/a: 127.0.0.1-9:443 weight 100 with 4 duplicated hashes; APISIX's
        -- ids (":" -> NUL) give nginx's answer for every key.
        local nodes = {}
        for _, line in ipairs(lines(data .. "/nginx/a.servers")) do
            local addr, w = line:match("^(%S+) (%d+)$")
            if addr then nodes[chash.apisix_id(addr)] = tonumber(w) end
        end
        local ring = assert(chash:new(nodes))
        local keys = lines(data .. "/nginx/a.keys")
        local n = 0
        for _, line in ipairs(lines(data .. "/nginx/a.csv")) do
            if line:sub(1, 1) ~= "#" then
                n = n + 1
                local want = line:match(",([^,]*)$")
                local id = ring:find(keys[n])
                if chash.apisix_server(id) ~= want then
                    return false, keys[n] .. ": nginx " .. want .. ", chash " .. chash.apisix_server(id)
                end
                if not id:find("\0", 1, true) then return false, "id without NUL" end
            end
        end
        return n == #keys and n > 0, "rows " .. n
    end)

    if snapshots then
        test("snapshot_load_find_subset", function()
            local snap, err = chash.load(snapshots .. "/ra.ring")
            if not snap then return false, err end
            if snap.mode ~= "sealed" or snap.mapped then return false, "mode " .. tostring(snap.mode) end
            local mapped = chash.load(snapshots .. "/ra.ring", { mode = "map" })
            if not mapped or not mapped.mapped then return false, "mode map not mapped" end
            local copied = chash.load(snapshots .. "/ra.ring", { copy = true })
            if not copied or copied.mode ~= "copy" then return false, "copy = true not copied" end
            local ok, why = expect_answers(snap, read_answers(G .. "ra.csv"))
            if not ok then return false, why end
            -- the subset "even" (every other node of ra.nodes) answers as a ring of them
            local _, order = read_nodes(G .. "ra.nodes")
            local even = {}
            for i = 1, #order, 2 do even[order[i][1]] = order[i][2] end
            local small = chash:new(even)
            for _, row in ipairs(read_answers(G .. "ra.csv")) do
                local a, b = snap:find(row[1], "even"), small:find(row[1])
                if a ~= b then return false, row[1] .. ": subset " .. tostring(a) .. " ring " .. b end
            end
            ok, why = expect_error("unknown subset", snap:find("k", "nope"))
            if not ok then return false, why end
            -- an operation rebuilds it as a ring of its own, without subsets
            assert(snap:set(order[1][1], order[1][2] + 1))
            return expect_error("subset after a rebuild", snap:find("k", "even"), "only a snapshot")
        end)

        test("snapshot_policy_refusals_name_their_check", function()
            -- { what, expected check name, load(...) }: nil, message, the
            -- library's name of the check (chash_check_name).
            local cases = {
                { "missing file", "io", chash.load(snapshots .. "/none.ring") },
                { "a directory", "not_regular", chash.load(snapshots) },
                { "min version", "min_version",
                  chash.load(snapshots .. "/ra.ring", { min_config_version = 99 }) },
                { "unsigned with trusted key", "signature",
                  chash.load(snapshots .. "/ra.ring", { trusted_keys = { snapshots .. "/k.pub" } }) },
                { "size cap", "max_size", chash.load(snapshots .. "/ra.ring", { max_file_bytes = 4096 }) },
                { "corrupt", "checksum", chash.load(snapshots .. "/corrupt.ring") },
                { "nginx flavor", "flavor", chash.load(snapshots .. "/nginx.ring") },
            }
            for _, c in ipairs(cases) do
                local ok, why = expect_error(c[1], c[3], c[4], c[2])
                if not ok then return false, why end
                if c[5] ~= c[2] then
                    return false, c[1] .. ": check " .. tostring(c[5]) .. ", want " .. c[2]
                end
            end
            local bad_mode, mode_err = chash.load(snapshots .. "/ra.ring", { mode = "mmap" })
            if bad_mode ~= nil or not tostring(mode_err):find("mode", 1, true) then
                return false, "mode mmap accepted"
            end
            local signed, err = chash.load(snapshots .. "/signed.ring",
                                           { trusted_keys = { snapshots .. "/k.pub" } })
            return signed ~= nil, err
        end)

        test("watch_swaps_only_good_files_and_refuses_each_once", function()
            -- watch from a request: creation and every check run in the
            -- thread pool; refusals name their check, are counted once, and
            -- the file is never looked at again until the path changes.
            local path = snapshots .. "/live.ring"
            local function copy(from)
                local f = assert(io.open(from, "rb"))
                local bytes = f:read("*a")
                f:close()
                local tmp = path .. ".tmp"
                local g = assert(io.open(tmp, "wb"))
                g:write(bytes)
                g:close()
                assert(os.rename(tmp, path))
            end
            copy(snapshots .. "/ra.ring")
            local holder, err = chash.watch(path)
            if not holder then return false, err end
            if holder.ring.config_version ~= 1 then return false, "first ring" end
            if holder:check() ~= false then return false, "unchanged file swapped" end
            local expected = {
                { "corrupt.ring", "checksum" },   -- a damaged version 2
                { "nginx_v9.ring", "flavor" },    -- a good file, not a resty ring
            }
            for _, case in ipairs(expected) do
                copy(snapshots .. "/" .. case[1])
                local swapped, message, check = holder:check()
                if swapped ~= nil or check ~= case[2] or not tostring(message):find(case[2], 1, true) then
                    return false, case[1] .. ": " .. tostring(swapped) .. " " .. tostring(check)
                                  .. " " .. tostring(message)
                end
                for _ = 1, 10 do
                    if holder:check() ~= false then return false, case[1] .. " looked at again" end
                end
            end
            local report = holder:report()
            if report.refused ~= 2 or report.last_check ~= "flavor" then
                return false, "report: refused " .. report.refused .. " " .. tostring(report.last_check)
            end
            if holder.ring.config_version ~= 1 then return false, "ring changed" end
            copy(snapshots .. "/ra_v4.ring")
            local swapped, serr = holder:check()
            if swapped ~= true then return false, "good file refused: " .. tostring(serr) end
            if holder.ring.config_version ~= 4 or holder.swaps ~= 1 then return false, "version" end
            if holder.ring.mode ~= "sealed" then return false, "mode " .. holder.ring.mode end
            -- Versions only go up: version 2 is refused (rollback).
            copy(snapshots .. "/ra_v2.ring")
            local s2, m2, c2 = holder:check()
            if s2 ~= nil or c2 ~= "rollback" then
                return false, "older version: " .. tostring(s2) .. " " .. tostring(c2) .. " " .. tostring(m2)
            end
            report = holder:report()
            return report.served_version == 4 and report.accepted == 1 and report.refused == 3,
                   "report " .. report.served_version .. " " .. report.accepted .. " " .. report.refused
        end)

        test("watch_needs_a_thread_pool", function()
            local holder, err = chash.watch(snapshots .. "/ra.ring", { thread_pool = "no_such_pool" })
            return expect_error("watch without its pool", holder, err, "no_such_pool")
        end)
    end

    test("masked_walk_reaches_a_node_whose_points_all_lost", function()
        -- twin's id has n1's crc32, so its point chain is n1's and n1 (the
        -- smaller id) wins every point: twin owns none, yet with n1 down it
        -- owns all of them. The walk under the mask must reach it, as the
        -- walk of the ring without n1 does.
        local nodes = {}
        for i = 1, 24 do nodes["n" .. i] = 1 + i % 3 end
        local twin = key_with_crc32("twin/", ngx.crc32_long("n1"))
        if ngx.crc32_long(twin) ~= ngx.crc32_long("n1") then return false, "forged id misses" end
        nodes[twin] = nodes.n1
        local ring = assert(chash:new(nodes))
        if ring.nlosers ~= 160 * nodes.n1 then return false, "collisions " .. ring.nlosers end
        for i = 1, 50 do
            for _, id in ipairs(ring:walk("/w" .. i)) do
                if id == twin then return false, "the twin owns no point, yet walks" end
            end
        end
        assert(ring:set_available("n1", false))
        local alive = {}
        for id, w in pairs(nodes) do if id ~= "n1" then alive[id] = w end end
        local reference = assert(chash:new(alive))
        local reached = 0
        for i = 1, 500 do
            local key = "/w" .. i
            local a, b = ring:walk(key), reference:walk(key)
            if #a ~= #b or #a ~= 24 then return false, key .. ": walk lengths " .. #a .. " and " .. #b end
            for j = 1, #a do
                if a[j] ~= b[j] then return false, key .. ": step " .. j end
                if a[j] == twin then reached = reached + 1 end
            end
            if a[1] ~= (ring:find(key)) then return false, key .. ": walk starts off find" end
        end
        return reached == 500, "twin reached in " .. reached .. " walks"
    end)

    test("migration_rollout_and_scope", function()
        local old, nodes, order = golden_ring("re")
        local new = chash:new(nodes, { point_multiple = 16 })
        local m, err = chash.migration(old, new)
        if not m then return false, err end
        local rows = read_answers(G .. "re.step0.csv")
        for i = 1, 500 do
            local id, side = m:find(rows[i][1])
            if side ~= "old" or id ~= rows[i][2] then return false, "closed migration" end
        end
        assert(m:set_in_scope(true))
        assert(m:set_rollout(1))
        for i = 1, 500 do
            local id, side = m:find(rows[i][1])
            local want = new:find(rows[i][1])
            if side ~= "new" or id ~= want then
                return false, "full rollout: key " .. rows[i][1] .. " " .. tostring(id) .. " "
                              .. tostring(side) .. ", new ring " .. tostring(want)
            end
        end
        assert(m:set_rollout(0.5))
        local news = 0
        for i = 1, 2000 do
            local _, side = m:find(rows[i][1])
            if side == "new" then news = news + 1 end
        end
        if news < 850 or news > 1150 then return false, "half rollout gave " .. news end
        local ok, why = expect_error("rollout 2", m:set_rollout(2))
        if not ok then return false, why end
        local other = {}
        for i = 1, #order, 2 do other[order[i][1]] = order[i][2] end
        ok, why = expect_error("mismatched servers", chash.migration(old, chash:new(other)))
        if not ok then return false, why end
        local o, n = m:counters()
        return o + n == 3000, "counters " .. o .. "+" .. n
    end)

    return _M.finish()
end

return _M
