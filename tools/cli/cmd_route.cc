// chash route: stream keys (one a line) to "KEY,ADDR" lines.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <unordered_map>

#include "cli_common.h"
#include "commands.h"

namespace chash::cli {
namespace {

constexpr size_t kBatch = 1024;
constexpr size_t kReadChunk = size_t{1} << 20;

class OutputBuffer {
 public:
  ~OutputBuffer() { Flush(); }
  void Append(std::string_view bytes) {
    buffer_.append(bytes.data(), bytes.size());
    if (buffer_.size() >= kReadChunk) Flush();
  }
  void Append(char c) { buffer_.push_back(c); }
  void Flush() {
    if (!buffer_.empty()) std::fwrite(buffer_.data(), 1, buffer_.size(), stdout);
    buffer_.clear();
  }

 private:
  std::string buffer_;
};

// Routes a batch of keys and appends their output lines.
using Router = std::function<void(const std::vector<std::string_view>& keys, OutputBuffer& out)>;

void AppendLine(OutputBuffer& out, std::string_view key, const std::string& address) {
  out.Append(key);
  out.Append(',');
  out.Append(address);
  out.Append('\n');
}

// Node ids by address as written in the servers file (ADDR for the other
// programs' flavors, whose rings may hash a name instead).
std::unordered_map<std::string, uint32_t> IdsByAddress(const Ring& ring,
                                                       const ServersInput* input = nullptr) {
  std::unordered_map<std::string, uint32_t> ids;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    ids.emplace(input != nullptr ? ServerText(ring, *input, id) : ring.node(id).address.written,
                id);
  }
  return ids;
}

// The addresses of a --down / --subset file, one a line as written in the
// servers file ('#' comments, blank lines and a weight column allowed).
Result<std::vector<uint32_t>> ReadAddressList(const std::string& path, const Ring& ring,
                                              const std::string& servers_path,
                                              const ServersInput& input) {
  Result<std::vector<ServerEntry>> entries = ReadServersFile(path);
  if (!entries.ok()) return entries.status();
  const std::unordered_map<std::string, uint32_t> ids = IdsByAddress(ring, &input);
  std::vector<uint32_t> listed;
  for (const ServerEntry& entry : entries.value()) {
    const auto it = ids.find(entry.address);
    if (it == ids.end()) {
      return Status(StatusCode::kBadArgument, path + ":" + std::to_string(entry.line) + ": '" +
                                                  entry.address + "' is not a server of " +
                                                  servers_path + " (write it as there)");
    }
    listed.push_back(it->second);
  }
  return listed;
}

// The availability mask of --down and --subset (both may be given). With
// --ring, --subset names a subset stored in the snapshot.
Result<NodeMask> MaskFromOptions(const Options& options, const Ring& ring,
                                 const ServersInput& input,
                                 const std::vector<NamedSubset>& stored) {
  const std::string servers_path =
      options.Has("ring") ? *options.Get("ring") : ServersInputName(options);
  NodeMask mask(ring.num_nodes(), !options.Has("subset"));
  if (options.Has("ring") && options.Has("subset")) {
    const std::string name = *options.Get("subset");
    const NamedSubset* found = nullptr;
    std::string names;
    for (const NamedSubset& subset : stored) {
      if (subset.name == name) found = &subset;
      names += (names.empty() ? "" : ", ") + subset.name;
    }
    if (found == nullptr) {
      return Status(StatusCode::kBadArgument,
                    "no subset '" + name + "' in " + servers_path +
                        (names.empty() ? " (it has none)" : " (it has: " + names + ")"));
    }
    mask = found->mask;
  } else if (const auto path = options.Get("subset")) {
    Result<std::vector<uint32_t>> ids = ReadAddressList(*path, ring, servers_path, input);
    if (!ids.ok()) return ids.status();
    for (const uint32_t id : ids.value()) mask.Set(id, true);
  }
  if (const auto path = options.Get("down")) {
    Result<std::vector<uint32_t>> ids = ReadAddressList(*path, ring, servers_path, input);
    if (!ids.ok()) return ids.status();
    for (const uint32_t id : ids.value()) mask.Set(id, false);
  }
  bool any_with_points = false;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    any_with_points |= mask.available(id) && ring.owns_points(id);
  }
  if (!any_with_points) {
    return Status(StatusCode::kBadArgument,
                  "no server is available: every server with points is down or outside the "
                  "subset");
  }
  return mask;
}

// Ids of the servers an nginx config marks `down` (by their text), as a
// per-id flag; an error if no server with points is left up.
Result<std::vector<bool>> DownServers(const std::vector<std::string>& addresses, const Ring& ring,
                                      const std::string& source) {
  const std::unordered_map<std::string, uint32_t> ids = IdsByAddress(ring);
  std::vector<bool> down(ring.num_nodes(), false);
  for (const std::string& address : addresses) down[ids.at(address)] = true;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    if (!down[id] && ring.owns_points(id)) return down;
  }
  return Status(StatusCode::kBadArgument,
                source + ": every server with points is `down`: nginx has no live upstream");
}

// nginx's ngx_http_upstream_get_chash_peer for a key whose server is down:
// the next point, and the next, until a server that is not down; after 21
// points (tries > 20) nginx gives up on the ring and picks by round robin,
// which no ring predicts: counted in `round_robin_keys`, and the walk goes
// on to the next server up.
uint32_t NginxSkipDown(const Ring& ring, std::string_view key, const std::vector<bool>& is_down,
                       uint64_t& round_robin_keys) {
  PointCursor cursor = ring.Walk(key);
  for (uint64_t tries = 0; tries < ring.num_points(); ++tries, cursor.Advance()) {
    if (is_down[cursor.node()]) continue;
    if (tries > 20) ++round_robin_keys;
    return cursor.node();
  }
  return Ring::kNoNode;  // unreachable: DownServers leaves a server with points up
}

// What HAProxy hashes of a request for `balance uri` (the path before the
// first '?'), `balance uri whole` (all of it) and `balance hdr(NAME)` (the
// header's first comma-separated value, spaces and tabs trimmed).
std::string_view HaproxyKeyBytes(std::string_view key, std::string_view balance) {
  if (balance == "uri") return key.substr(0, key.find('?'));
  if (balance == "uri-whole") return key;
  std::string_view value = key.substr(0, key.find(','));
  const size_t first = value.find_first_not_of(" \t");
  if (first == std::string_view::npos) return {};
  value = value.substr(first);
  return value.substr(0, value.find_last_not_of(" \t") + 1);
}

// A key given as its hash (--by-hash): decimal, below 2^bits.
bool ParseKeyHash(std::string_view text, uint32_t bits, uint64_t& hash) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return false;
    value = value * 10 + digit;
  }
  if (bits < 64 && value >> bits != 0) return false;
  hash = value;
  return true;
}

}  // namespace

int RunRoute(const Args& args) {
  Result<Options> options = ParseRingCommandOptions(
      args,
      {"keys", "down", "subset", "new-servers", "new-flavor", "new-multiple", "rollout", "scope",
       "seed", "new-nginx-conf", "new-upstream", "new-ring", "balance", "alt"},
      {"allow-mismatch", "by-hash"});
  if (!options.ok()) return Fail("route", options.status().message());
  const Options& opts = options.value();
  ServersInput input;
  std::vector<NamedSubset> stored_subsets;
  Result<Ring> ring = LoadRingFromOptions(opts, &input, &stored_subsets);
  if (!ring.ok()) return Fail("route", ring.status().message());
  if (ring.value().empty()) {
    return Fail("route", "the ring has no points (no servers, or every weight is 0)");
  }
  const bool masked = opts.Has("down") || opts.Has("subset");
  const bool migrating = opts.Has("rollout");
  for (const char* name :
       {"new-servers", "new-flavor", "new-multiple", "scope", "seed", "allow-mismatch",
        "new-nginx-conf", "new-upstream", "new-ring"}) {
    if (opts.Has(name) && !migrating) {
      return Fail("route", std::string("--") + name + " needs --rollout (a migration)");
    }
  }
  // A migration between two snapshots routes a named subset on each side:
  // the subset of that name stored in the ring the key takes.
  const bool migrating_subset =
      migrating && opts.Has("subset") && opts.Has("ring") && opts.Has("new-ring");
  if (masked && migrating && (opts.Has("down") || !migrating_subset)) {
    return Fail("route", "--down and --rollout cannot be combined; --subset NAME with --rollout "
                         "needs --ring and --new-ring (the subset stored in each)");
  }
  if (opts.Has("new-ring")) {
    for (const char* name : {"new-servers", "new-flavor", "new-multiple", "new-nginx-conf",
                             "new-upstream"}) {
      if (opts.Has(name)) {
        return Fail("route", std::string("--new-ring cannot be combined with --") + name +
                                 " (the snapshot carries its servers, flavor and multiple)");
      }
    }
  }
  if (!input.down.empty() && (masked || migrating)) {
    return Fail("route", input.name + " marks servers `down` (routed as nginx skips them); " +
                             "--down, --subset and --rollout cannot be combined with that");
  }

  // Plain: the batch kernel. Masked: the batch kernel, then a walk for the
  // keys whose server is unavailable. Migrating: each key through the ring
  // its migration hash picks, printed as KEY,ADDR,old|new.
  std::vector<uint32_t> nodes;
  std::vector<RingSide> sides;
  Router router = [&](const std::vector<std::string_view>& keys, OutputBuffer& out) {
    nodes.resize(keys.size());
    ring.value().FindNodes(keys, nodes);
    for (size_t i = 0; i < keys.size(); ++i) {
      AppendLine(out, keys[i], ServerText(ring.value(), input, nodes[i]));
    }
  };
  // How the other programs take a request's key: HAProxy's balance, a key
  // given as its hash (Varnish's by=KEY with an integer, Envoy's request
  // hash), Varnish's alt=K.
  const Flavor flavor = ring.value().flavor();
  const bool by_hash = opts.Has("by-hash");
  const std::string balance = opts.Get("balance").value_or("");
  if (opts.Has("balance")) {
    if (flavor != Flavor::kHaproxy) return Fail("route", "--balance needs --flavor haproxy");
    if (balance != "uri" && balance != "uri-whole" && balance != "hdr") {
      return Fail("route", "--balance must be uri, uri-whole or hdr, got '" + balance + "'");
    }
    if (by_hash) return Fail("route", "--balance and --by-hash cannot be combined");
  }
  Result<uint64_t> alt = opts.GetUint("alt", 0, 0, kMaxNodes - 1);
  if (!alt.ok()) return Fail("route", alt.status().message());
  if (opts.Has("alt") && flavor != Flavor::kVarnishShard) {
    return Fail("route", "--alt is Varnish's alt=K: it needs --flavor varnish-shard");
  }
  const bool program_lookup = by_hash || opts.Has("balance") || opts.Has("alt");
  if (program_lookup && (masked || migrating || !input.down.empty())) {
    return Fail("route", "--by-hash, --balance and --alt cannot be combined with --down, "
                         "--subset or --rollout");
  }
  std::string bad_key;  // set by the router: a --by-hash key that is no hash
  if (program_lookup) {
    router = [&](const std::vector<std::string_view>& keys, OutputBuffer& out) {
      const Ring& r = ring.value();
      for (const std::string_view key : keys) {
        if (!bad_key.empty()) return;
        uint64_t hash = 0;
        if (by_hash) {
          if (!ParseKeyHash(key, r.key_hash_bits(), hash)) {
            bad_key = std::string(key.substr(0, 80));
            return;
          }
        } else {
          hash = r.KeyHash(opts.Has("balance") ? HaproxyKeyBytes(key, balance) : key);
        }
        uint32_t node = r.FindNodeByHash64(hash);
        if (alt.value() > 0) {
          // alt=K: the K-th other distinct backend walking up from the key's
          // point; past the last distinct one, the last.
          DistinctNodeWalk walk = r.WalkDistinctFromHash64(hash);
          for (uint64_t k = 0; k <= alt.value(); ++k) {
            const uint32_t next = walk.Next();
            if (next == Ring::kNoNode) break;
            node = next;
          }
        }
        AppendLine(out, key, ServerText(r, input, node));
      }
    };
  }
  // Servers the nginx config marks `down`: nginx still builds their points
  // and skips them at request time, walking the ring point by point.
  uint64_t round_robin_keys = 0;
  std::vector<bool> is_down;
  if (!input.down.empty()) {
    Result<std::vector<bool>> down = DownServers(input.down, ring.value(), input.name);
    if (!down.ok()) return Fail("route", down.status().message());
    is_down = std::move(down).value();
    router = [&](const std::vector<std::string_view>& keys, OutputBuffer& out) {
      nodes.resize(keys.size());
      ring.value().FindNodes(keys, nodes);
      for (size_t i = 0; i < keys.size(); ++i) {
        if (is_down[nodes[i]]) nodes[i] = NginxSkipDown(ring.value(), keys[i], is_down,
                                                        round_robin_keys);
        AppendLine(out, keys[i], ring.value().node(nodes[i]).address.written);
      }
    };
  }
  NodeMask mask;
  if (masked && !migrating) {
    if (!FlavorMasksExactly(ring.value().options())) {
      return Fail("route", "--down and --subset: the " +
                               std::string(FlavorName(ring.value().flavor())) +
                               " ring's points depend on every server (its program rebuilds "
                               "without the servers that are out): route a servers file without "
                               "them instead");
    }
    Result<NodeMask> built = MaskFromOptions(opts, ring.value(), input, stored_subsets);
    if (!built.ok()) return Fail("route", built.status().message());
    mask = std::move(built).value();
    router = [&](const std::vector<std::string_view>& keys, OutputBuffer& out) {
      nodes.resize(keys.size());
      FindAvailableNodes(ring.value(), mask, keys, nodes);
      for (size_t i = 0; i < keys.size(); ++i) {
        AppendLine(out, keys[i], ServerText(ring.value(), input, nodes[i]));
      }
    };
  }
  std::unique_ptr<RingMigration> migration;
  NodeMask side_masks[2];
  if (migrating) {
    std::vector<NamedSubset> new_subsets;
    Result<Ring> new_ring =
        opts.Has("new-ring") ? LoadRingFromSnapshotOption(opts, "new-ring", &new_subsets)
                             : LoadNewRingFromOptions(opts, FirstRingOptions(opts, ring.value()));
    if (!new_ring.ok()) return Fail("route", new_ring.status().message());
    Result<double> rollout = ParseFraction("rollout", *opts.Get("rollout"));
    if (!rollout.ok()) return Fail("route", rollout.status().message());
    const std::string scope = opts.Get("scope").value_or("in");
    if (scope != "in" && scope != "out") {
      return Fail("route", "--scope must be 'in' or 'out', got '" + scope + "'");
    }
    Result<uint64_t> seed = opts.GetUint("seed", 0, 0, UINT64_MAX / 2);
    if (!seed.ok()) return Fail("route", seed.status().message());
    Result<std::unique_ptr<RingMigration>> created = RingMigration::Create(
        std::make_shared<const Ring>(std::move(ring).value()),
        std::make_shared<const Ring>(std::move(new_ring).value()),
        {.seed = seed.value(), .allow_backend_mismatch = opts.Has("allow-mismatch")});
    if (!created.ok()) {
      return Fail("route", created.status().message() + " (--allow-mismatch to accept)");
    }
    migration = std::move(created).value();
    (void)migration->SetRollout(rollout.value());
    migration->SetInScope(scope == "in");
    if (migrating_subset) {
      const std::string name = *opts.Get("subset");
      for (int side = 0; side < 2; ++side) {
        const std::vector<NamedSubset>& stored = side == 0 ? stored_subsets : new_subsets;
        const std::string file = *opts.Get(side == 0 ? "ring" : "new-ring");
        const NamedSubset* found = nullptr;
        for (const NamedSubset& subset : stored) {
          if (subset.name == name) found = &subset;
        }
        if (found == nullptr) {
          return Fail("route", "no subset '" + name + "' in " + file);
        }
        side_masks[side] = found->mask;
      }
    }
    router = [&](const std::vector<std::string_view>& keys, OutputBuffer& out) {
      nodes.resize(keys.size());
      sides.resize(keys.size());
      migration->FindNodes(keys, nodes, sides);
      for (size_t i = 0; i < keys.size(); ++i) {
        if (migrating_subset) {
          const int side = sides[i] == RingSide::kNew ? 1 : 0;
          nodes[i] = FindAvailableNode(migration->ring(sides[i]), side_masks[side], keys[i]);
          if (nodes[i] == Ring::kNoNode) {
            out.Append(keys[i]);
            out.Append(sides[i] == RingSide::kNew ? std::string_view(",-,new\n")
                                                  : std::string_view(",-,old\n"));
            continue;
          }
        }
        out.Append(keys[i]);
        out.Append(',');
        out.Append(migration->ring(sides[i]).node(nodes[i]).address.written);
        out.Append(sides[i] == RingSide::kNew ? std::string_view(",new\n")
                                              : std::string_view(",old\n"));
      }
    };
  }

  int fd = STDIN_FILENO;
  std::string keys_name = "stdin";
  if (const auto path = options.value().Get("keys")) {
    fd = open(path->c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Fail("route", *path + ": " + std::strerror(errno));
    keys_name = *path;
  }

  // Lines may span reads: `pending` holds the unfinished tail of the last
  // read, and keys of a batch point into `buffer` until the batch is routed.
  std::string buffer;
  std::vector<std::string_view> keys;
  OutputBuffer out;
  size_t consumed = 0;  // bytes of `buffer` already routed
  bool eof = false;
  while (!eof) {
    buffer.erase(0, consumed);
    consumed = 0;
    const size_t old_size = buffer.size();
    buffer.resize(old_size + kReadChunk);
    const ssize_t got = read(fd, buffer.data() + old_size, kReadChunk);
    if (got < 0) {
      if (errno == EINTR) {
        buffer.resize(old_size);
        continue;
      }
      return Fail("route", keys_name + ": " + std::strerror(errno));
    }
    buffer.resize(old_size + static_cast<size_t>(got));
    eof = got == 0;
    size_t line_start = 0;
    while (true) {
      const size_t newline = buffer.find('\n', line_start);
      if (newline == std::string::npos) break;
      keys.emplace_back(buffer.data() + line_start, newline - line_start);
      line_start = newline + 1;
      if (keys.size() == kBatch) {
        router(keys, out);
        keys.clear();
      }
    }
    if (eof && line_start < buffer.size()) {  // a last line without '\n'
      keys.emplace_back(buffer.data() + line_start, buffer.size() - line_start);
      line_start = buffer.size();
    }
    router(keys, out);
    keys.clear();
    consumed = line_start;
    if (!bad_key.empty()) {
      if (fd != STDIN_FILENO) close(fd);
      out.Flush();
      return Fail("route", keys_name + ": '" + bad_key + "' is not a key hash (--by-hash: a "
                           "decimal integer below 2^" +
                               std::to_string(ring.value().key_hash_bits()) + ")");
    }
  }
  if (fd != STDIN_FILENO) close(fd);
  out.Flush();
  if (round_robin_keys > 0) {
    std::fprintf(stderr,
                 "chash route: note: %llu keys met 21 points of `down` servers in a row: nginx "
                 "falls back to round robin for them; printed is the next server up on the "
                 "ring\n",
                 static_cast<unsigned long long>(round_robin_keys));
  }
  if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
    return Fail("route", std::string("writing output: ") + std::strerror(errno));
  }
  return 0;
}

}  // namespace chash::cli
