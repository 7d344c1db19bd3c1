// chash keygen, build, inspect, verify: rings as signed, versioned snapshot
// files (include/chash/snapshot.h).
#include <array>
#include <cerrno>
#include <ctime>
#include <set>
#include <string_view>
#include <vector>
#include <cstdio>
#include <unordered_map>

#include "cli_common.h"
#include "commands.h"

namespace chash::cli {
namespace {

// The first argument when it is not an option (inspect and verify take the
// file first), and the rest.
std::pair<std::optional<std::string>, Args> Positional(const Args& args) {
  if (!args.empty() && args[0].substr(0, 2) != "--") {
    return {std::string(args[0]), Args(args.begin() + 1, args.end())};
  }
  return {std::nullopt, args};
}

// --subset NAME=FILE: the servers listed in FILE (one ADDR a line, as written
// in the servers file; weights and comments allowed) as a mask of `ring`.
Result<NamedSubset> SubsetFromOption(const std::string& text, const Ring& ring) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return Status(StatusCode::kBadArgument, "--subset takes NAME=FILE, got '" + text + "'");
  }
  NamedSubset subset{text.substr(0, eq), NodeMask(ring.num_nodes(), false)};
  const std::string path = text.substr(eq + 1);
  Result<std::vector<ServerEntry>> entries = ReadServersFile(path);
  if (!entries.ok()) return entries.status();
  std::unordered_map<std::string, uint32_t> ids;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) ids.emplace(ring.node(id).address.written, id);
  for (const ServerEntry& entry : entries.value()) {
    const auto it = ids.find(entry.address);
    if (it == ids.end()) {
      return Status(StatusCode::kBadArgument, path + ":" + std::to_string(entry.line) + ": '" +
                                                  entry.address +
                                                  "' is not a server of the ring (write it as "
                                                  "in the servers file)");
    }
    subset.mask.Set(it->second, true);
  }
  return subset;
}

std::string TimeText(int64_t unix_seconds) {
  const std::time_t t = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  if (gmtime_r(&t, &tm) == nullptr) return std::to_string(unix_seconds);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return text;
}

// --expires: a duration from now ("30d", "12h", "90m", "3600s") or a time
// ("2026-12-31T00:00:00Z", "@UNIXSECONDS" or UNIXSECONDS): Unix seconds.
Result<int64_t> ParseExpiry(const std::string& text, int64_t now) {
  const auto bad = [&] {
    return Status(StatusCode::kBadArgument,
                  "--expires takes a duration (30d, 12h, 90m, 3600s) or a UTC time "
                  "(2026-12-31T00:00:00Z, @UNIXSECONDS), got '" + text + "'");
  };
  if (text.empty()) return bad();
  const bool digits_only =
      text.find_first_not_of("0123456789", text[0] == '@' ? 1 : 0) == std::string::npos;
  if (digits_only) {
    const char* begin = text.c_str() + (text[0] == '@' ? 1 : 0);
    char* end = nullptr;
    errno = 0;
    const long long seconds = std::strtoll(begin, &end, 10);
    if (*begin == '\0' || errno != 0 || seconds <= 0) return bad();
    return static_cast<int64_t>(seconds);
  }
  std::tm tm{};
  if (const char* end = strptime(text.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
      end != nullptr && *end == '\0') {
    return static_cast<int64_t>(timegm(&tm));
  }
  char* end = nullptr;
  const long long count = std::strtoll(text.c_str(), &end, 10);
  if (end == text.c_str() || count <= 0 || end + 1 != text.c_str() + text.size()) return bad();
  const int64_t unit = *end == 'd' ? 86400 : *end == 'h' ? 3600 : *end == 'm' ? 60
                       : *end == 's' ? 1 : 0;
  if (unit == 0 || count > (int64_t{1} << 40) / unit) return bad();
  return now + count * unit;
}

// Indexed by TieBreak's value; TieBreak has no count, kIdOrder is its last.
constexpr std::array<std::string_view, 4> kTieBreakNames = {"config-order", "address-order",
                                                            "explicit-rank", "id-order"};
static_assert(kTieBreakNames.size() == static_cast<size_t>(TieBreak::kIdOrder) + 1);

std::string TieBreakName(TieBreak tie_break) {
  const auto index = static_cast<size_t>(tie_break);
  return std::string(index < kTieBreakNames.size() ? kTieBreakNames[index] : "?");
}

}  // namespace

int RunKeygen(const Args& args) {
  Result<Options> options = Options::Parse(args, {"out"}, {});
  if (!options.ok()) return Fail("keygen", options.status().message());
  const std::optional<std::string> base = options.value().Get("out");
  if (!base) return Fail("keygen", "--out BASE is required (writes BASE and BASE.pub)");
  Result<SecretKey> key = GenerateSecretKey();
  if (!key.ok()) return Fail("keygen", key.status().message());
  if (Status status = WriteKeyFiles(key.value(), *base); !status.ok()) {
    return Fail("keygen", status.message());
  }
  std::printf("secret key %s (mode 0600), public key %s.pub, key id %s\n", base->c_str(),
              base->c_str(), key.value().public_key().KeyIdHex().c_str());
  return 0;
}

int RunBuild(const Args& args) {
  std::set<std::string_view> valued = {"servers", "flavor", "multiple", "subset",
                                        "config-version", "label", "sign", "out", "from",
                                        "above", "expires"};
  valued.insert(ProgramValued().begin(), ProgramValued().end());
  valued.insert(kProgramConfigs.begin(), kProgramConfigs.end());
  std::set<std::string_view> flags = {"no-index", "allow-empty", "allow-expired"};
  flags.insert(ProgramFlags().begin(), ProgramFlags().end());
  Result<Options> parsed = Options::Parse(args, valued, flags, {"subset"});
  if (!parsed.ok()) return Fail("build", parsed.status().message());
  const Options& options = parsed.value();
  const std::optional<std::string> out = options.Get("out");
  if (!out) return Fail("build", "--out RINGFILE is required");
  SnapshotWriteOptions write;
  Result<uint64_t> version = options.GetUint("config-version", 0, 0, UINT64_MAX);
  if (!version.ok()) return Fail("build", version.status().message());
  write.config_version = version.value();
  if (const auto above = options.Get("above")) {
    // A version one above the file served now: a rollback (or any new
    // version) in one command, whatever the fleet's numbering.
    if (options.Has("config-version")) {
      return Fail("build", "--above FILE sets the config version: give it or --config-version");
    }
    Result<SnapshotInfo> served = ReadSnapshotInfo(*above);
    if (!served.ok()) return Fail("build", "--above: " + served.status().message());
    if (served.value().config_version == UINT64_MAX) {
      return Fail("build", "--above: " + *above + " has the highest config version there is");
    }
    write.config_version = served.value().config_version + 1;
  }
  if (const auto expires = options.Get("expires")) {
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    Result<int64_t> at = ParseExpiry(*expires, now);
    if (!at.ok()) return Fail("build", at.status().message());
    if (at.value() <= now && !options.Has("allow-expired")) {
      return Fail("build", "--expires " + *expires + " is not in the future (readers would "
                           "refuse the file; --allow-expired writes it all the same, to test them)");
    }
    write.expires_unix_seconds = at.value();
  }
  write.label = options.Get("label").value_or("");
  write.store_search_index = !options.Has("no-index");
  if (const auto base = options.Get("sign")) {
    Result<SecretKey> key = ReadSecretKeyFile(*base);
    if (!key.ok()) return Fail("build", key.status().message());
    write.signing_key = key.value();
  }

  Ring ring;
  if (const auto from = options.Get("from")) {
    // A new version of an existing snapshot's servers: how a rollback is
    // published (the old ring, under a higher config version).
    std::vector<std::string_view> refused = {"servers", "flavor", "multiple"};
    refused.insert(refused.end(), ProgramValued().begin(), ProgramValued().end());
    refused.insert(refused.end(), kProgramConfigs.begin(), kProgramConfigs.end());
    refused.insert(refused.end(), ProgramFlags().begin(), ProgramFlags().end());
    for (const std::string_view name : refused) {
      if (options.Has(name)) {
        return Fail("build", "--from takes the servers and flavor from the snapshot; --" +
                                 std::string(name) + " cannot be combined with it");
      }
    }
    if (!options.Has("config-version") && !options.Has("above")) {
      return Fail("build", "--from needs --above SERVED.chash (one version above it) or "
                           "--config-version N (higher than every version published), so that "
                           "readers accept it");
    }
    SnapshotInfo info;
    std::vector<NamedSubset> subsets;
    Result<Ring> old = LoadSnapshotRing(*from, {}, &info, &subsets);
    if (!old.ok()) return Fail("build", old.status().message());
    // The ring loaded, with every check, is the ring to republish: its
    // flavor, options and the servers' identities (HAProxy's ids,
    // twemproxy's names) come with it, which its addresses alone would not
    // give a rebuild.
    ring = std::move(old).value();
    if (!options.Has("subset") && !subsets.empty()) {
      if (MasksExactly(ring)) {
        write.subsets = std::move(subsets);
      } else {
        // chash 1.0.0 wrote subsets on these rings, which no reader uses
        // (nginx refuses the file): republishing drops them, and says so.
        std::fprintf(stderr,
                     "chash build: %s's %zu subset(s) are left out: a %s ring of these options "
                     "cannot answer a subset exactly\n",
                     from->c_str(), subsets.size(), std::string(FlavorName(ring.flavor())).c_str());
      }
    }
    if (!options.Has("label")) write.label = info.label;
  } else {
    Result<Ring> built = LoadRingFromOptions(options);
    if (!built.ok()) return Fail("build", built.status().message());
    ring = std::move(built).value();
  }
  for (const std::string& text : options.GetAll("subset")) {
    Result<NamedSubset> subset = SubsetFromOption(text, ring);
    if (!subset.ok()) return Fail("build", subset.status().message());
    write.subsets.push_back(std::move(subset).value());
  }
  // A snapshot that routes nothing is a fleet-wide outage once pushed.
  if (ring.empty() && !options.Has("allow-empty")) {
    return Fail("build", "the ring has no points (every weight is 0): pushed, it would route "
                         "no key; --allow-empty writes it all the same");
  }
  if (Status status = WriteSnapshotFile(ring, write, *out); !status.ok()) {
    if (status.code() == StatusCode::kOutOfMemory) {
      return Fail("build", "writing " + *out + ": " + status.message());
    }
    return Fail("build", status.message());
  }
  std::printf("%s: %s, %s points, %u nodes, config version %llu%s%s\n", out->c_str(),
              std::string(FlavorName(ring.flavor())).c_str(), WithCommas(ring.num_points()).c_str(),
              ring.num_nodes(), static_cast<unsigned long long>(write.config_version),
              write.signing_key
                  ? (", signed by key " + write.signing_key->public_key().KeyIdHex()).c_str()
                  : ", unsigned",
              write.expires_unix_seconds
                  ? (", expires " + TimeText(write.expires_unix_seconds)).c_str()
                  : "");
  return 0;
}

int RunInspect(const Args& args) {
  auto [path, rest] = Positional(args);
  std::set<std::string_view> valued = {"trusted-key", "min-version"};
  Result<Options> parsed = Options::Parse(rest, valued, {"json"}, kSnapshotRepeated);
  if (!parsed.ok()) return Fail("inspect", parsed.status().message());
  if (!path) return Fail("inspect", "usage: chash inspect RINGFILE [--json]");
  const Options& options = parsed.value();
  Result<SnapshotInfo> header = ReadSnapshotInfo(*path);
  if (!header.ok()) return Fail("inspect", header.status().ToString());
  Result<SnapshotLoadOptions> load = SnapshotLoadOptionsFrom(options);
  if (!load.ok()) return Fail("inspect", load.status().message());
  load.value().verify_points_digest = true;
  std::vector<NamedSubset> subsets;
  Result<Ring> ring = LoadSnapshotRing(*path, load.value(), nullptr, &subsets);
  const SnapshotInfo& info = header.value();
  const bool pass = ring.ok();
  const std::string failed = pass ? "" : std::string(SnapshotCheckName(FailedSnapshotCheck(ring.status())));
  const bool signature_checked = info.is_signed && !load.value().trusted_keys.empty() && pass;
  const double overhead =
      info.column_bytes ? static_cast<double>(info.file_bytes - info.column_bytes) /
                              static_cast<double>(info.column_bytes)
                        : 0;
  if (options.Has("json")) {
    std::string json = "{\"file\":" + JsonString(*path) +
                       ",\"format_version\":\"" + std::to_string(info.major_version) + "." +
                       std::to_string(info.minor_version) + "\"" +
                       ",\"config_version\":" + std::to_string(info.config_version) +
                       ",\"label\":" + JsonString(info.label) +
                       ",\"created\":" + JsonString(TimeText(info.created_unix_seconds)) +
                       ",\"expires\":" +
                       (info.expires_unix_seconds ? JsonString(TimeText(info.expires_unix_seconds))
                                                  : std::string("null")) +
                       ",\"flavor\":" + JsonString(FlavorName(info.flavor)) +
                       ",\"mode\":" + JsonString(FlavorName(info.flavor)) +
                       ",\"multiple\":" + std::to_string(info.point_multiple) +
                       ",\"tie_break\":" + JsonString(TieBreakName(info.tie_break)) +
                       ",\"nodes\":" + std::to_string(info.nodes) +
                       ",\"points\":" + std::to_string(info.points) +
                       ",\"points_generated\":" + std::to_string(info.points_generated) +
                       ",\"collisions\":" + std::to_string(info.losers) +
                       ",\"file_bytes\":" + std::to_string(info.file_bytes) +
                       ",\"column_bytes\":" + std::to_string(info.column_bytes) +
                       ",\"collision_table_bytes\":" + std::to_string(info.collision_bytes) +
                       ",\"index_bytes\":" + std::to_string(info.index_bytes) +
                       ",\"other_bytes\":" + std::to_string(info.other_bytes) +
                       ",\"overhead\":" + JsonNumber(overhead) +
                       ",\"fingerprint\":" + JsonString(info.fingerprint.Hex()) +
                       ",\"points_digest\":" + JsonString(info.points_digest.Hex()) +
                       ",\"subsets\":[";
    for (size_t i = 0; i < subsets.size(); ++i) {
      if (i > 0) json += ',';  // (not a "," + ... chain: GCC 12 false -Wrestrict)
      json += "{\"name\":";
      json += JsonString(subsets[i].name);
      json += ",\"servers\":";
      json += std::to_string(subsets[i].mask.count_available());
      json += '}';
    }
    json += "],\"signed\":" + std::string(info.is_signed ? "true" : "false") +
            ",\"key_id\":" + (info.is_signed ? JsonString(info.KeyIdHex()) : "null") +
            ",\"signature_verified\":" + (signature_checked ? "true" : "false") +
            ",\"checks_pass\":" + (pass ? "true" : "false") +
            ",\"failed_check\":" + (pass ? "null" : JsonString(failed)) +
            ",\"error\":" + (pass ? "null" : JsonString(ring.status().message())) + "}";
    std::printf("%s\n", json.c_str());
    return pass ? 0 : kExitUsage;
  }
  std::printf("file              %s\n", path->c_str());
  std::printf("format            chash ring snapshot %u.%u\n", info.major_version,
              info.minor_version);
  std::printf("config version    %llu\n", static_cast<unsigned long long>(info.config_version));
  std::printf("label             %s\n", info.label.c_str());
  std::printf("created           %s\n", TimeText(info.created_unix_seconds).c_str());
  std::printf("expires           %s\n",
              info.expires_unix_seconds ? TimeText(info.expires_unix_seconds).c_str() : "never");
  std::printf("mode              %s", std::string(FlavorName(info.flavor)).c_str());
  if (info.flavor == Flavor::kPingoraV2) std::printf(" (multiple %u)", info.point_multiple);
  std::printf(", tie-break %s\n", TieBreakName(info.tie_break).c_str());
  std::printf("nodes             %s\n", WithCommas(info.nodes).c_str());
  std::printf("points kept       %s\n", WithCommas(info.points).c_str());
  std::printf("points generated  %s\n", WithCommas(info.points_generated).c_str());
  std::printf("collisions        %s\n", WithCommas(info.losers).c_str());
  std::printf("file bytes        %s (columns %s, collision table %s, other %s: %.3f%% over "
              "the columns)\n",
              WithCommas(info.file_bytes).c_str(), WithCommas(info.column_bytes).c_str(),
              WithCommas(info.collision_bytes).c_str(), WithCommas(info.other_bytes).c_str(),
              100 * overhead);
  std::printf("fingerprint       %s\n", info.fingerprint.Hex().c_str());
  std::printf("points digest     %s\n", info.points_digest.Hex().c_str());
  if (subsets.empty() && !info.subset_names.empty()) {
    for (const std::string& name : info.subset_names) std::printf("subset            %s\n",
                                                                  name.c_str());
  }
  for (const NamedSubset& subset : subsets) {
    std::printf("subset            %s: %u servers\n", subset.name.c_str(),
                subset.mask.count_available());
  }
  if (info.is_signed) {
    std::printf("signature         Ed25519, key id %s (%s)\n", info.KeyIdHex().c_str(),
                signature_checked ? "verified with a trusted key"
                                  : "not verified: give --trusted-key PUB");
  } else {
    std::printf("signature         none\n");
  }
  if (pass) {
    // A verified 1.1+ signature stands in for the checksum pass
    // (chash/snapshot.h); a 1.0 file's is checked after it.
    const char* digests = !signature_checked          ? "checksum"
                          : info.minor_version >= 1 ? "signature"
                                                     : "checksum, signature";
    std::printf("checks            pass (size, header, sections, %s, columns, collisions, "
                "subsets, fingerprint, points digest)\n",
                digests);
    return 0;
  }
  std::printf("checks            FAIL: %s\n", ring.status().message().c_str());
  return kExitUsage;
}

int RunVerify(const Args& args) {
  auto [path, rest] = Positional(args);
  Result<Options> parsed =
      Options::Parse(rest, {"trusted-key", "min-version", "threads", "max-size"}, {},
                     kSnapshotRepeated);
  if (!parsed.ok()) return Fail("verify", parsed.status().message());
  if (!path) return Fail("verify", "usage: chash verify RINGFILE [--trusted-key PUB]... "
                                   "[--min-version N] [--threads N] [--max-size BYTES]");
  Result<SnapshotLoadOptions> load = SnapshotLoadOptionsFrom(parsed.value());
  if (!load.ok()) return Fail("verify", load.status().message());
  load.value().verify_points_digest = true;
  SnapshotInfo info;
  Result<Ring> ring = LoadSnapshotRing(*path, load.value(), &info);
  if (!ring.ok()) return Fail("verify", ring.status().message());
  std::printf("%s: ok, config version %llu, %s, %s\n", path->c_str(),
              static_cast<unsigned long long>(info.config_version),
              info.fingerprint.Short().c_str(),
              info.is_signed ? (load.value().trusted_keys.empty()
                                    ? "signed by key " + info.KeyIdHex() + " (not checked)"
                                    : "signature by trusted key " + info.KeyIdHex())
                                   .c_str()
                             : "unsigned");
  return 0;
}

}  // namespace chash::cli
