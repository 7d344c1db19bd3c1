-- chash.resty's other programs' rings (new_program_ring) against the real
-- programs' answers: every set of tests/data/{haproxy,libmemcached,
-- twemproxy,varnish,envoy} (haproxy 2.6, libmemcached 1.1, nutcracker 0.5
-- and varnish 7.1 as recorded, Envoy's own unit tests' expectations:
-- tests/data/PROVENANCE.md). Each set's row of its sets.txt names the
-- servers file and the program's options, mapped onto the module's options
-- as tools/rust/tests/programs.rs maps them onto the crate's; each answer is
-- `key,ADDR` (split at the last comma). Then the walks (Varnish's alt and
-- Envoy's retry attempts are recorded answers too) and the errors. Run by
-- tests/lua/test_resty.py through a content_by_lua_block, in resty_unit's
-- harness ("ok NAME" / "not ok NAME: why", then "done PASSED FAILED").
local chash = require "chash.resty"
local unit = require "resty_unit"

local test, expect_error = unit.test, unit.expect_error

local _M = {}

-- The lines of a file split at '\n' only: keys hold NUL bytes, which
-- LuaJIT's file:lines() would cut at.
local function lines(path)
    local f = assert(io.open(path, "rb"))
    local text = f:read("*a")
    f:close()
    local t = {}
    for line in text:gmatch("([^\n]*)\n") do t[#t + 1] = line end
    local tail = text:match("([^\n]+)$")
    if tail then t[#t + 1] = tail end
    return t
end

-- `ADDR [WEIGHT] [key=value ...]`; '#' starts a comment. weight is the
-- text as written (Varnish's REAL weights), attrs the key=value pairs.
local function read_servers(dir, name)
    local servers = {}
    for _, line in ipairs(lines(dir .. name)) do
        local fields = {}
        for word in line:gsub("#.*", ""):gmatch("%S+") do fields[#fields + 1] = word end
        if #fields > 0 then
            local s = { addr = fields[1], weight = "1", attrs = {} }
            local i = 2
            if fields[2] and not fields[2]:find("=", 1, true) then
                s.weight, i = fields[2], 3
            end
            for j = i, #fields do
                local k, v = fields[j]:match("^([^=]+)=(.*)$")
                s.attrs[k] = v
            end
            servers[#servers + 1] = s
        end
    end
    assert(#servers > 0, name .. ": no servers")
    return servers
end

-- `key,ADDR` rows split at the last comma; '#' lines are comments.
local function read_answers(dir, set)
    local rows = {}
    for _, line in ipairs(lines(dir .. set .. ".csv")) do
        if line ~= "" and line:sub(1, 1) ~= "#" then
            local key, addr = line:match("^(.*),([^,]*)$")
            rows[#rows + 1] = { key, addr }
        end
    end
    assert(#rows > 0, set .. ".csv: no answers")
    return rows
end

-- NAME<TAB>SERVERS<TAB>KEYS<TAB>OPTIONS rows; options "--x" -> value ("" for a flag).
local function read_sets(dir)
    local sets = {}
    for _, line in ipairs(lines(dir .. "sets.txt")) do
        if line ~= "" and line:sub(1, 1) ~= "#" then
            local columns = {}
            for c in (line .. "\t"):gmatch("([^\t]*)\t") do columns[#columns + 1] = c end
            local words, options = {}, {}
            for w in columns[4]:gmatch("%S+") do words[#words + 1] = w end
            local i = 1
            while i <= #words do
                local value = words[i + 1]
                if value and value:sub(1, 2) ~= "--" then
                    options[words[i]], i = value, i + 2
                else
                    options[words[i]], i = "", i + 1
                end
            end
            sets[#sets + 1] = { name = columns[1], servers = columns[2], keys = columns[3],
                                options = options }
        end
    end
    assert(#sets > 0, dir .. "sets.txt: no sets")
    return sets
end

-- A plan: the flavor, options, nodes (array given to new_program_ring),
-- addr_of (the ADDR each id answers as) and answer(ring, key): the id.
local function node_of(s, id, weight, extra)
    local node = { id, weight }
    for k, v in pairs(extra or {}) do node[k] = v end
    return node
end

-- What haproxy hashes of a request: `balance uri` the path before the
-- first '?', `uri whole` all of it, `hdr(X-Key)` the first comma-separated
-- value, spaces and tabs trimmed.
local function haproxy_key(key, balance)
    if balance == "uri" then return (key:match("^[^?]*")) end
    if balance == "uri-whole" then return key end
    assert(balance == "hdr", balance)
    local value = key:match("^[^,]*")
    return (value:gsub("^[ \t]+", ""):gsub("[ \t]+$", ""))
end

local function haproxy_plan(set, servers)
    local fn = set.options["--function"]
    local options = {}
    -- `hash-type consistent` alone: the module's defaults (sdbm with
    -- avalanche); a function named drops the avalanche unless asked.
    if fn ~= "default" then options.hash_function = fn end
    if set.options["--avalanche"] then options.avalanche = true end
    local nodes, addr_of = {}, {}
    for i, s in ipairs(servers) do
        local id = s.attrs.id and tonumber(s.attrs.id) or nil
        nodes[i] = node_of(s, s.addr, tonumber(s.weight), { server_id = id })
        addr_of[s.addr] = s.addr
    end
    local balance = set.options["--balance"]
    return "haproxy", options, nodes, addr_of, function(ring, key)
        return ring:find(haproxy_key(key, balance))
    end
end

local KETAMA_HASH_NAMES = { crc = "crc32", default = "one_at_a_time" }

local function ketama_nodes(servers, named)
    local nodes, addr_of = {}, {}
    for i, s in ipairs(servers) do
        nodes[i] = node_of(s, s.addr, tonumber(s.weight), { name = named and s.attrs.name or nil })
        addr_of[s.addr] = s.addr
    end
    return nodes, addr_of
end

local function find_key(ring, key) return ring:find(key) end

local function libmemcached_plan(set, servers)
    local hash = set.options["--hash"] or "keep"
    -- A server added with weight > 1 turns the weighted continuum on in
    -- every consistent mode; the key hash stays the mode's.
    local heavy = false
    for _, s in ipairs(servers) do heavy = heavy or tonumber(s.weight) > 1 end
    local options = {}
    local mode = set.options["--mode"]
    if mode == "weighted" then
        options.variant = "libmemcached-weighted"
    elseif mode == "ketama" and heavy then
        options.variant, options.key_hash = "libmemcached-weighted", "one_at_a_time"
    elseif mode == "ketama" then
        options.variant = "libmemcached-unweighted"
    elseif mode == "spy" then
        options.variant = heavy and "libmemcached-spy-weighted" or "libmemcached-spy"
    else
        error("mode " .. tostring(mode))
    end
    if hash ~= "keep" then options.key_hash = KETAMA_HASH_NAMES[hash] or hash end
    local nodes, addr_of = ketama_nodes(servers, false)
    return "ketama-md5", options, nodes, addr_of, find_key
end

local function twemproxy_plan(set, servers)
    local hash = set.options["--hash"] or "fnv1a_64"
    local options = { variant = "twemproxy", key_hash = KETAMA_HASH_NAMES[hash] or hash,
                      hash_tag = set.options["--hash-tag"] }
    local nodes, addr_of = ketama_nodes(servers, true)
    return "ketama-md5", options, nodes, addr_of, find_key
end

local function varnish_plan(set, servers)
    local options = { replicas = tonumber(set.options["--replicas"]) }
    local nodes, addr_of = {}, {}
    for i, s in ipairs(servers) do
        -- The shard's ident, else the backend's name, as the node's name
        -- (libchash hashes it); REAL weights go to the module as they are.
        local name = s.attrs.ident or s.attrs.name
        nodes[i] = node_of(s, s.addr, tonumber(s.weight), { name = name })
        -- a built ring answers the id given, a loaded one the text hashed
        addr_of[s.addr], addr_of[name] = s.addr, s.addr
    end
    local by_int = set.options["--by"] == "int"
    local alt = tonumber(set.options["--alt"] or "0")
    return "varnish-shard", options, nodes, addr_of, function(ring, key)
        -- by=KEY with an integer key takes it as the hash; alt=k: the k-th
        -- other backend up the ring, next() k times.
        local id, cursor
        if by_int then id, cursor = ring:find_hash(key) else id, cursor = ring:find(key) end
        for _ = 1, alt do
            if not id then break end
            id, cursor = ring:next(cursor)
        end
        return id, cursor
    end
end

local function gcd(a, b)
    while b ~= 0 do a, b = b, a % b end
    return a
end

-- Envoy's hosts in the order Envoy walks them (locality by locality), each
-- weight an integer proportional to Envoy's normalized weight (host weight
-- / its locality's sum x locality weight); the id: the address, with the
-- host's hash_key and hostname as its fields (libchash picks what Envoy
-- hashes).
local function envoy_plan(set, servers)
    local maglev = set.options["--lb"] == "maglev"
    local options = {}
    if maglev then
        options.table_size = tonumber(set.options["--table-size"])
    else
        options.minimum_ring_size = tonumber(set.options["--min-ring-size"])
        options.maximum_ring_size = tonumber(set.options["--max-ring-size"])
        if set.options["--hash"] == "murmur2" then options.hash_function = "murmur_hash_2" end
    end
    local use_hostname = set.options["--use-hostname"] ~= nil
    local lw = {}
    for w in (set.options["--locality-weights"] or ""):gmatch("%d+") do lw[#lw + 1] = tonumber(w) end
    local function locality(s) return tonumber(s.attrs.locality or "0") end
    local weights, order = {}, {}
    for i, s in ipairs(servers) do weights[i], order[i] = tonumber(s.weight), i end
    if #lw > 0 then
        table.sort(order, function(a, b)  -- stable: ties by file order
            local la, lb = locality(servers[a]), locality(servers[b])
            if la ~= lb then return la < lb end
            return a < b
        end)
        local sums = {}
        for l = 0, #lw - 1 do sums[l] = 0 end
        for i, s in ipairs(servers) do sums[locality(s)] = sums[locality(s)] + weights[i] end
        local common = 1
        for l = 0, #lw - 1 do
            if sums[l] ~= 0 then common = common / gcd(common, sums[l]) * sums[l] end
        end
        for i, s in ipairs(servers) do
            local l = locality(s)
            weights[i] = weights[i] * lw[l + 1] * (common / sums[l])
        end
    end
    local nodes, addr_of = {}, {}
    for k, i in ipairs(order) do
        local s = servers[i]
        nodes[k] = node_of(s, s.addr, weights[i], { hostname = s.attrs.hostname,
                                                   hash_key = s.attrs.hash_key,
                                                   hash_hostname = use_hostname })
        addr_of[s.addr] = s.addr
    end
    -- Each key is the request's hash (decimal u64).
    return maglev and "envoy-maglev" or "envoy-ring", options, nodes, addr_of,
           function(ring, key) return ring:find_hash(key) end
end

-- Builds the set's ring through the plan: ring, addr_of, answer.
local function build(program, set, servers, plan)
    local flavor, options, nodes, addr_of, answer = plan(set, servers)
    local ring, err = chash.new_program_ring(flavor, nodes, options)
    assert(ring, program .. "/" .. set.name .. ": " .. tostring(err))
    assert(ring.flavor == flavor and ring:stats().nodes == #nodes)
    return ring, addr_of, answer
end

-- Every answer of the set through the module: answers compared, or false
-- and the first that differs.
local function compare_set(dir, program, set, servers, plan)
    local ring, addr_of, answer = build(program, set, servers, plan)
    local rows = read_answers(dir, set.name)
    for i, row in ipairs(rows) do
        local id, err = answer(ring, row[1])
        local got = id and addr_of[id] or "(none: " .. tostring(err) .. ")"
        if got ~= row[2] then
            return false, program .. "/" .. set.name .. " row " .. i .. " key '" .. row[1]
                          .. "': the program " .. row[2] .. ", chash.resty " .. got
        end
    end
    return #rows
end

-- Every set of `program`: true if every answer agrees and `expected` =
-- { sets, answers } (tests/data/PROVENANCE.md's counts) were compared.
local function run_program(data, program, plan, expected)
    local dir = data .. "/" .. program .. "/"
    local sets, servers, answers = read_sets(dir), {}, 0
    for _, set in ipairs(sets) do
        if set.keys ~= "-" then
            servers[set.servers] = servers[set.servers] or read_servers(dir, set.servers)
            local n, why = compare_set(dir, program, set, servers[set.servers], plan)
            if not n then return false, why end
            answers = answers + n
        end
    end
    if #sets ~= expected[1] or answers ~= expected[2] then
        return false, program .. ": " .. #sets .. " sets, " .. answers .. " answers compared"
    end
    return true
end

-- The .expect assertions of an Envoy set that the module's API asks: the
-- ring's size, the retries (`attempt HASH N ADDR`: find_hash, then next N
-- times), the sweeps' counts and the points the tests' comments list. Not
-- asked: min/max_{hashes,entries}_per_host (a host's point counts; the
-- module has no walk over a 64-bit ring's points). checked, not asked; or
-- nil, why.
local U64_MAX = 0xFFFFFFFFFFFFFFFFULL

local function check_envoy_expect(dir, set, servers)
    local f = io.open(dir .. set.name .. ".expect", "rb")
    if not f then return 0, 0 end
    f:close()
    local ring, addr_of = build("envoy", set, servers, envoy_plan)
    local function addr(id) return id and addr_of[id] or "(none)" end
    local swept, checked, not_asked = {}, 0, 0
    for _, line in ipairs(lines(dir .. set.name .. ".expect")) do
        if line ~= "" and line:sub(1, 1) ~= "#" then
            local p = {}
            for w in line:gmatch("%S+") do p[#p + 1] = w end
            local kind, ok = p[1], true
            if kind == "ring_size" then
                ok = ring:stats().points == tonumber(p[2])
            elseif kind == "point" then
                ok = addr((ring:find_hash(p[3]))) == p[2]
            elseif kind == "attempt" then
                local id, cursor = ring:find_hash(p[2])
                for _ = 1, tonumber(p[3]) do id, cursor = ring:next(cursor) end
                ok = addr(id) == p[4]
            elseif kind == "sweep_div" or kind == "sweep_seq" then
                local n = tonumber(p[2])
                local step = U64_MAX / n
                swept = {}
                for _, s in ipairs(servers) do swept[s.addr] = 0 end
                for i = 0, n - 1 do
                    local hash = kind == "sweep_div" and step * i or i
                    local id = ring:find_hash(hash)
                    if id then swept[addr_of[id]] = swept[addr_of[id]] + 1 end
                end
            elseif kind == "count" then
                ok = swept[p[2]] == tonumber(p[3])
            elseif kind == "zero_count_hosts" then
                local zeros = 0
                for _, c in pairs(swept) do zeros = zeros + (c == 0 and 1 or 0) end
                ok = zeros == tonumber(p[2])
            elseif kind:match("^m[ai][nx]_[a-z]+_per_host$") then
                not_asked, ok = not_asked + 1, nil
            else
                return nil, set.name .. ".expect: unknown line kind " .. kind
            end
            if ok == false then return nil, set.name .. ".expect: " .. line end
            if ok then checked = checked + 1 end
        end
    end
    return checked, not_asked
end

-- load_program_ring of a snapshot tests/lua/test_resty.py built of a set's
-- servers with `chash build` (snapshots/NAME.ring): every answer of the set
-- is the program's, through the same key rules as new_program_ring's ring;
-- rows compared, or false and why.
local function compare_loaded_set(data, snapshots, program, name, plan)
    local dir = data .. "/" .. program .. "/"
    local set
    for _, s in ipairs(read_sets(dir)) do
        if s.name == name then set = s end
    end
    local _, addr_of, answer = build(program, set, read_servers(dir, set.servers), plan)
    local ring, err, check = chash.load_program_ring(snapshots .. "/" .. name .. ".ring")
    if not ring then return false, name .. ": " .. tostring(err) .. " " .. tostring(check) end
    local rows = read_answers(dir, name)
    for i, row in ipairs(rows) do
        -- a loaded ring's ids are its node texts: the servers file's
        -- addresses, Varnish's backend names (what the ring hashed)
        local id, why = answer(ring, row[1])
        if (addr_of[id] or id) ~= row[2] then
            return false, name .. " row " .. i .. ": the program " .. row[2] .. ", loaded "
                          .. tostring(id) .. " " .. tostring(why)
        end
    end
    return #rows
end

function _M.run(data, snapshots)
    unit.begin()

    test("load_program_ring_answers_as_the_programs", function()
        local total = 0
        for _, c in ipairs({ { "haproxy", "sdbm_uri_25", haproxy_plan },
                             { "twemproxy", "md5_20", twemproxy_plan },
                             { "libmemcached", "ketama_100", libmemcached_plan },
                             { "varnish", "url_20", varnish_plan } }) do
            local n, why = compare_loaded_set(data, snapshots, c[1], c[2], c[3])
            if not n then return false, why end
            if n == 0 then return false, c[2] .. ": no answers" end
            total = total + n
        end
        -- the walk a loaded unweighted ketama ring takes, and the refusal of
        -- a weighted one's (twemproxy rebuilds instead)
        local lm = chash.load_program_ring(snapshots .. "/ketama_100.ring")
        local tw = chash.load_program_ring(snapshots .. "/md5_20.ring")
        local _, lm_cursor = lm:find("k")
        local _, tw_cursor = tw:find("k")
        local lm_next, tw_next = lm:next(lm_cursor), select(2, tw:next(tw_cursor))
        if not lm_next or type(tw_next) ~= "string" or not tw_next:find("rebuilds") then
            return false, "walks: " .. tostring(lm_next) .. " / " .. tostring(tw_next)
        end
        return total > 1000, total .. " answers"
    end)

    test("load_program_ring_and_load_refuse_each_others_flavors", function()
        local ring, err, check = chash.load_program_ring(snapshots .. "/ra.ring")
        if ring or check ~= "flavor" or not err:find("load%(%) takes resty's") then
            return false, "resty file: " .. tostring(err) .. " " .. tostring(check)
        end
        ring, err, check = chash.load(snapshots .. "/sdbm_uri_25.ring")
        if ring or check ~= "flavor" or not err:find("is not a resty ring") then
            return false, "haproxy file: " .. tostring(err) .. " " .. tostring(check)
        end
        ring, err, check = chash.load_program_ring(snapshots .. "/missing.ring")
        return ring == nil and type(err) == "string" and check ~= nil,
               "missing file: " .. tostring(err) .. " " .. tostring(check)
    end)

    -- Every set of each program and tests/data/PROVENANCE.md's counts
    -- (sets, answers): varnish's with REAL weights (url_real_weights) and
    -- alt (through next()); envoy/sets.txt's 24 sets, 18 with answers.
    local programs = {
        { "haproxy", haproxy_plan, { 15, 5500 } },
        { "libmemcached", libmemcached_plan, { 17, 6500 } },
        { "twemproxy", twemproxy_plan, { 16, 6200 } },
        { "varnish", varnish_plan, { 11, 4171 } },
        { "envoy", envoy_plan, { 24, 287 } },
    }
    for _, p in ipairs(programs) do
        test(p[1] .. "_every_golden_answer", function()
            return run_program(data, p[1], p[2], p[3])
        end)
    end
    -- 1,167 .expect lines, all asked but the 46 per-host point counts;
    -- among them Envoy's retries (BasicWithRetryHostPredicate) through next().
    test("envoy_expectations_sizes_retries_sweeps", function()
        local dir = data .. "/envoy/"
        local checked, not_asked, attempts = 0, 0, 0
        for _, set in ipairs(read_sets(dir)) do
            local c, n = check_envoy_expect(dir, set, read_servers(dir, set.servers))
            if not c then return false, n end
            checked, not_asked = checked + c, not_asked + n
        end
        for _, name in ipairs({ "ring_basic", "maglev_basic" }) do
            for _, line in ipairs(lines(dir .. name .. ".expect")) do
                if line:match("^attempt ") then attempts = attempts + 1 end
            end
        end
        return checked == 1121 and not_asked == 46 and attempts > 0,
               "checked " .. checked .. ", not asked " .. not_asked .. ", attempts " .. attempts
    end)

    -- Unweighted libmemcached: next() is the node the program answers once
    -- the servers before it are ejected (the continuum built without them).
    test("libmemcached_unweighted_next_is_the_ring_without_the_first", function()
        local dir = data .. "/libmemcached/"
        local servers = read_servers(dir, "ips_100.servers")
        local opts = { variant = "libmemcached-unweighted" }
        local all = {}
        for i, s in ipairs(servers) do all[i] = s.addr end
        local ring = assert(chash.new_program_ring("ketama-md5", all, opts))
        local without, compared = {}, 0
        for i, row in ipairs(read_answers(dir, "ketama_100")) do
            if i > 300 then break end
            local first, cursor = ring:find(row[1])
            if first ~= row[2] then return false, "find " .. row[1] end
            local second = ring:next(cursor)
            if not without[first] then
                local rest = {}
                for _, addr in ipairs(all) do
                    if addr ~= first then rest[#rest + 1] = addr end
                end
                without[first] = assert(chash.new_program_ring("ketama-md5", rest, opts))
            end
            if without[first]:find(row[1]) ~= second or second == first then
                return false, row[1] .. ": next " .. tostring(second) .. ", without "
                              .. first .. " " .. tostring(without[first]:find(row[1]))
            end
            compared = compared + 1
        end
        return compared == 300, compared .. " keys"
    end)

    test("walks_end_and_refuse_as_documented", function()
        local h = assert(chash.new_program_ring("haproxy", { "10.0.0.1:80", "10.0.0.2:80" }))
        local a, c = h:find("/x")
        local b, c2 = h:next(c)
        if a == b or b == nil then return false, "haproxy next: " .. tostring(b) end
        local ok, why = expect_error("past the last node", h:next(c2))
        if not ok then return false, why end
        local w = h:walk("/x")
        if #w ~= 2 or w[1] ~= a or w[2] ~= b then return false, "haproxy walk" end
        -- Envoy retries repeat hosts: attempt k is the program's pick, not a distinct walk.
        local m = assert(chash.new_program_ring("envoy-maglev",
                                                { "127.0.0.1:90", "127.0.0.1:91" },
                                                { table_size = 7 }))
        if #m:walk("abc", 5) ~= 5 then return false, "envoy walk of 5 attempts" end
        local k = assert(chash.new_program_ring("ketama-md5", { "10.0.0.1:11211", "10.0.0.2:11211" }))
        local _, kc = k:find("key")
        local r, err = k:next(kc)
        ok, why = expect_error("weighted ketama next", r, err, "rebuilds")
        if not ok then return false, why end
        local t = assert(chash.new_program_ring("ketama-md5", { "10.0.0.1:11211" },
                                                { variant = "twemproxy" }))
        r, err = t:walk("k")
        ok, why = expect_error("twemproxy walk", r, err, "rebuilds")
        if not ok then return false, why end
        r, err = k:next(c)
        ok, why = expect_error("another ring's cursor", r, err, "cursor")
        if not ok then return false, why end
        return expect_error("empty ring", assert(chash.new_program_ring("haproxy", {})):find("/"),
                            "empty")
    end)

    test("program_ring_errors_are_nil_and_a_message", function()
        local cases = {
            { "flavor", { "nginx", {} }, "flavor must be" },
            { "resty-style table", { "haproxy", { ["10.0.0.1:80"] = 1 } }, "array" },
            { "nodes not a table", { "haproxy", "10.0.0.1:80" }, "nodes must be" },
            { "options not a table", { "haproxy", {}, 3 }, "options must be a table" },
            { "another flavor's option", { "haproxy", {}, { replicas = 10 } },
              "'replicas' is an option of varnish-shard, not of flavor haproxy" },
            { "unknown option", { "haproxy", {}, { colour = "red" } },
              "'colour' is not an option of flavor haproxy" },
            { "haproxy function", { "haproxy", {}, { hash_function = "md4" } },
              "one of sdbm, djb2, wt6, crc32" },
            { "avalanche", { "haproxy", {}, { avalanche = "yes" } }, "on or off" },
            { "option value type", { "haproxy", {}, { avalanche = {} } }, "a boolean" },
            { "server key", { "haproxy", {}, { server_key = "name" } }, "id-unfixed-30" },
            { "variant", { "ketama-md5", {}, { variant = "moxi" } }, "variant must be" },
            { "key hash", { "ketama-md5", {}, { key_hash = "sha1" } }, "key_hash must be" },
            { "default port 0", { "ketama-md5", {}, { default_port = 0 } }, "1..65535" },
            { "hash tag length", { "ketama-md5", {}, { variant = "twemproxy", hash_tag = "{" } },
              "two bytes" },
            { "hash tag NUL", { "ketama-md5", {}, { variant = "twemproxy", hash_tag = "{\0" } },
              "NUL" },
            { "hash tag not twemproxy", { "ketama-md5", {}, { hash_tag = "{}" } }, "hash_tag" },
            { "libketama key hash", { "ketama-md5", {}, { variant = "libketama",
                                                          key_hash = "fnv1a_64" } }, "MD5" },
            { "replicas 0", { "varnish-shard", {}, { replicas = 0 } }, "replicas must be" },
            { "ring sizes", { "envoy-ring", {}, { minimum_ring_size = 2048,
                                                  maximum_ring_size = 1024 } },
              "minimum_ring_size" },
            { "ring size 0", { "envoy-ring", {}, { minimum_ring_size = 0 } }, "minimum_ring_size" },
            { "table size not prime", { "envoy-maglev", {}, { table_size = 10 } }, "10" },
            { "envoy hash", { "envoy-ring", {}, { hash_function = "sdbm" } }, "xx_hash" },
            { "node type", { "haproxy", { 42 } }, "node 1" },
            { "id type", { "haproxy", { { 42, 1 } } }, "id must be a string" },
            { "negative weight", { "haproxy", { { "a:80", -1 } } }, "weight must be" },
            { "fractional weight", { "haproxy", { { "a:80", 1.5 } } },
              "a real (fractional) weight is for varnish-shard rings" },
            { "server_id 0", { "haproxy", { { "a:80", 1, server_id = 0 } } }, "server_id" },
            { "server_id elsewhere", { "ketama-md5", { { "a:11211", 1, server_id = 3 } } },
              "for haproxy rings" },
            { "name elsewhere", { "haproxy", { { "a:80", 1, name = "web" } } },
              "for ketama-md5 and varnish-shard rings" },
            { "name on libmemcached", { "ketama-md5", { { "a:11211", 1, name = "c1" } } },
              "node 0" },
            { "hostname elsewhere", { "haproxy", { { "a:80", 1, hostname = "web" } } },
              "for envoy-ring and envoy-maglev rings" },
            { "hash_hostname without hostname", { "envoy-ring", { { "10.0.0.1:80", 1,
                                                                   hash_hostname = true } } },
              "empty hostname" },
            { "hash_hostname type", { "envoy-ring", { { "10.0.0.1:80", 1, hash_hostname = 1 } } },
              "hash_hostname must be a boolean" },
            { "same server id", { "haproxy", { { "a:80", 1, server_id = 3 },
                                               { "b:80", 1, server_id = 3 } } }, "node 1" },
            { "unweighted weight 2", { "ketama-md5", { { "a:11211", 2 } },
                                       { variant = "libmemcached-unweighted" } }, "weight" },
        }
        for _, case in ipairs(cases) do
            local args = case[2]
            local r, err = chash.new_program_ring(args[1], args[2], args[3])
            local ok, why = expect_error(case[1], r, err, case[3])
            if not ok then return false, why end
        end
        -- As a method too; the same ring.
        local a = assert(chash:new_program_ring("varnish-shard", { "web1", "web2" }))
        local b = assert(chash.new_program_ring("varnish-shard", { "web1", "web2" }))
        if a:find("/x") ~= b:find("/x") then return false, "method and function differ" end
        return #cases == 35, #cases .. " cases"
    end)

    test("program_ring_lookup_errors", function()
        local v = assert(chash.new_program_ring("varnish-shard", { "web1", "web2" }))
        local e = assert(chash.new_program_ring("envoy-ring", { "127.0.0.1:90" },
                                                { minimum_ring_size = 12 }))
        local checks = {
            { "table key", v.find, v, {}, "key must be" },
            { "negative hash", v.find_hash, v, -1, "hash must be" },
            { "fractional hash", v.find_hash, v, 1.5, "hash must be" },
            { "text hash", v.find_hash, v, "0x10", "decimal" },
            { "32-bit hash above 2^32 - 1", v.find_hash, v, 4294967296, "2^32 - 1" },
            { "64-bit hash above 2^64 - 1", e.find_hash, e, "18446744073709551616", "2^64 - 1" },
            { "number above 2^53", e.find_hash, e, 2 ^ 60, "2^53" },
            { "hash of a table", e.find_hash, e, {}, "hash must be" },
            { "no cursor", v.next, v, nil, "cursor" },
            { "negative count", v.walk, v, "/x", "count", -1 },
        }
        for _, c in ipairs(checks) do
            local r, err = c[2](c[3], c[4], c[6])
            local ok, why = expect_error(c[1], r, err, c[5])
            if not ok then return false, why end
        end
        -- The same 64-bit hash three ways; 2^32 - 1 on a 32-bit ring.
        local big = e:find_hash("18446744073709551615")
        if big ~= e:find_hash(0xFFFFFFFFFFFFFFFFULL) or big == nil then return false, "u64" end
        if e:find_hash(12) ~= e:find_hash("12") then return false, "number and string" end
        if not v:find_hash(4294967295) then return false, "2^32 - 1" end
        if v:stats().key_hash_bits ~= 32 or e:stats().key_hash_bits ~= 64 then
            return false, "key hash bits"
        end
        return e:find_hash(e:hash("abc")) == e:find("abc"), "find is find_hash of hash"
    end)

    -- tools/lua/README.md's example runs as written; its Envoy answer is
    -- Envoy's (maglev_weighted.csv: the same hosts and table size).
    test("readme_example_runs", function()
        local f = assert(io.open(data .. "/../../tools/lua/README.md", "rb"))
        local readme = f:read("*a")
        f:close()
        local section = readme:sub((assert(readme:find("## The other programs' rings", 1, true))))
        local code = assert(section:match("```lua\n(.-)```"))
        local run = assert(loadstring(code .. "return server, fallback, memcached, host, retry\n"))
        local server, fallback, memcached, host, retry = run()
        local want
        for _, row in ipairs(read_answers(data .. "/envoy/", "maglev_weighted")) do
            if row[1] == "3" then want = row[2] end
        end
        if host ~= want or not want then return false, "maglev 3: " .. tostring(host) end
        if not (server and fallback and memcached and retry) or server == fallback then
            return false, "the example's answers"
        end
        return #code > 300, "the example"
    end)

    return unit.finish()
end

return _M
