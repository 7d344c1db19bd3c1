#include "cli_common.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>

#include "envoy_conf.h"
#include "haproxy_conf.h"
#include "nginx_conf.h"
#include "nutcracker_conf.h"
#include "proc_memory.h"
#include "progress.h"

namespace chash::cli {

int Fail(std::string_view command, std::string_view message) {
  std::fprintf(stderr, "chash %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  return kExitUsage;
}

namespace {

// Old option spelling -> the one the help text gives: `--mode` was the
// flavor's option before the vocabulary was one (engine/README.md#glossary).
constexpr std::pair<std::string_view, std::string_view> kOptionAliases[] = {
    {"mode", "flavor"},
    {"new-mode", "new-flavor"},
};

}  // namespace

Result<Options> Options::Parse(const std::vector<std::string_view>& args,
                               const std::set<std::string_view>& valued,
                               const std::set<std::string_view>& flags,
                               const std::set<std::string_view>& repeated) {
  Options options;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg.substr(0, 2) != "--") {
      return Status(StatusCode::kBadArgument, "unexpected argument '" + std::string(arg) + "'");
    }
    std::string_view name = arg.substr(2);
    std::optional<std::string_view> inline_value;
    if (const size_t eq = name.find('='); eq != std::string_view::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    // The old spellings, still accepted where scripts may use them.
    for (const auto& [old_name, canonical] : kOptionAliases) {
      if (name == old_name && valued.count(canonical)) name = canonical;
    }
    const std::string key(name);
    if (options.values_.count(key) && !repeated.count(name)) {
      return Status(StatusCode::kBadArgument, "--" + key + " given twice");
    }
    if (valued.count(name)) {
      if (inline_value) {
        options.values_[key] = std::string(*inline_value);
      } else if (i + 1 < args.size()) {
        options.values_[key] = std::string(args[++i]);
      } else {
        return Status(StatusCode::kBadArgument, "--" + key + " needs a value");
      }
      if (repeated.count(name)) options.repeated_[key].push_back(options.values_[key]);
    } else if (flags.count(name) && !inline_value) {
      options.values_[key] = "";
    } else {
      return Status(StatusCode::kBadArgument, "unknown option '" + std::string(arg) + "'");
    }
  }
  return options;
}

std::vector<std::string> Options::GetAll(std::string_view name) const {
  const auto it = repeated_.find(std::string(name));
  if (it != repeated_.end()) return it->second;
  if (const auto value = Get(name)) return {*value};
  return {};
}

std::optional<std::string> Options::Get(std::string_view name) const {
  const auto it = values_.find(std::string(name));
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

Result<uint64_t> Options::GetUint(std::string_view name, uint64_t fallback, uint64_t min,
                                  uint64_t max) const {
  const std::optional<std::string> text = Get(name);
  if (!text) return fallback;
  // Decimal digits only, 0 .. 2^64 - 1 exactly (from_chars refuses an
  // overflow, a sign, a space).
  uint64_t value = 0;
  const auto [end, error] = std::from_chars(text->data(), text->data() + text->size(), value);
  const bool valid = !text->empty() && (*text)[0] != '+' && error == std::errc() &&
                     end == text->data() + text->size();
  if (!valid || value < min || value > max) {
    return Status(StatusCode::kBadArgument, "--" + std::string(name) + " must be an integer " +
                                                std::to_string(min) + ".." +
                                                std::to_string(max) + ", got '" + *text + "'");
  }
  return value;
}

namespace {

// BuildRingFromServers with a progress line on a terminal.
Result<Ring> BuildWithProgress(const std::vector<ServerEntry>& servers, const RingOptions& options,
                               const std::string& path) {
  uint64_t points = 0;
  for (const ServerEntry& server : servers) {
    points += uint64_t{server.weight} * options.point_multiple;
  }
  ProgressPhase progress("building " + std::string(FlavorName(options.flavor)) +
                         " ring: " + WithCommas(points) + " points");
  return BuildRingFromServers(servers, options, path);
}

// Reads --OPTION K into the ring options and checks them with the library's
// ValidateRingOptions, whose message follows the option's name.
Status ApplyMultipleOption(const Options& options, std::string_view multiple_option,
                           RingOptions& ring_options) {
  Result<uint64_t> multiple = options.GetUint(multiple_option, 0, 1, UINT32_MAX);
  if (!multiple.ok()) return multiple.status();
  ring_options.point_multiple = static_cast<uint32_t>(multiple.value());
  const Status valid = ValidateRingOptions(ring_options);
  if (valid.ok()) return valid;
  return Status(valid.code(), "--" + std::string(multiple_option) + ": " + valid.message());
}

}  // namespace

Result<Options> ParseRingCommandOptions(const std::vector<std::string_view>& args,
                                        std::set<std::string_view> valued,
                                        std::set<std::string_view> flags) {
  valued.insert({"servers", "flavor", "multiple", "nginx-conf", "upstream"});
  for (const auto* names : {&kSnapshotValued, &ProgramValued(), &kProgramConfigs}) {
    valued.insert(names->begin(), names->end());
  }
  flags.insert(ProgramFlags().begin(), ProgramFlags().end());
  return Options::Parse(args, valued, flags, kSnapshotRepeated);
}

Result<RingOptions> RingOptionsFrom(const Options& options, std::string_view mode_option,
                                    std::string_view multiple_option) {
  RingOptions ring_options;
  if (const auto mode = options.Get(mode_option)) {
    Result<Flavor> flavor = ParseFlavor(*mode);
    if (!flavor.ok()) return flavor.status();
    ring_options.flavor = flavor.value();
  }
  if (Status status = ApplyProgramOptions(options, ring_options); !status.ok()) return status;
  if (options.Has(multiple_option)) {
    if (Status status = ApplyMultipleOption(options, multiple_option, ring_options);
        !status.ok()) {
      return status;
    }
  }
  return ring_options;
}

Result<Ring> NameWhatWasBuilt(Result<Ring> ring, std::string_view source,
                              const RingOptions& options) {
  if (ring.ok() || ring.status().code() != StatusCode::kOutOfMemory) return ring;
  return Status(StatusCode::kOutOfMemory,
                std::string(source) + ": building the " + std::string(FlavorName(options.flavor)) +
                    " ring (" + std::to_string(options.point_multiple) +
                    " points per weight unit): " + ring.status().message());
}

namespace {

// Which option names the servers of the ring `prefix` selects: "servers" or
// "nginx-conf" (with its upstream name), after the fallbacks of
// ReadServersInput.
struct InputChoice {
  std::string servers_option;  // set for a servers file
  std::string conf_option;     // set for an nginx config
  std::string upstream;
};

Result<InputChoice> ChooseInput(const Options& options, std::string_view prefix) {
  const std::string p(prefix);
  if (options.Has("upstream") && !options.Has("nginx-conf")) {
    return Status(StatusCode::kBadArgument, "--upstream needs --nginx-conf FILE");
  }
  if (!p.empty()) {
    if (options.Has(p + "upstream") && !options.Has(p + "nginx-conf") &&
        !options.Has("nginx-conf")) {
      return Status(StatusCode::kBadArgument,
                    "--" + p + "upstream needs --" + p + "nginx-conf or --nginx-conf");
    }
    const bool own = options.Has(p + "servers") || options.Has(p + "nginx-conf") ||
                     options.Has(p + "upstream");
    if (!own) return ChooseInput(options, "");
  }
  if (options.Has(p + "servers") && options.Has(p + "nginx-conf")) {
    return Status(StatusCode::kBadArgument,
                  "--" + p + "servers and --" + p + "nginx-conf cannot be combined");
  }
  InputChoice choice;
  if (options.Has(p + "servers")) {
    choice.servers_option = p + "servers";
    return choice;
  }
  choice.conf_option = options.Has(p + "nginx-conf") ? p + "nginx-conf" : "nginx-conf";
  if (!options.Has(choice.conf_option)) {
    return Status(StatusCode::kBadArgument,
                  "--servers FILE is required (or --nginx-conf FILE --upstream NAME)");
  }
  const std::optional<std::string> upstream =
      options.Has(p + "upstream") ? options.Get(p + "upstream") : options.Get("upstream");
  if (!upstream) {
    return Status(StatusCode::kBadArgument,
                  "--" + choice.conf_option + " needs --upstream NAME (the upstream to read)");
  }
  choice.upstream = *upstream;
  return choice;
}

}  // namespace

std::string ServersInputName(const Options& options, std::string_view prefix) {
  Result<InputChoice> choice = ChooseInput(options, prefix);
  if (!choice.ok()) return "";
  if (!choice.value().servers_option.empty()) return *options.Get(choice.value().servers_option);
  return *options.Get(choice.value().conf_option) + " upstream " + choice.value().upstream;
}

Result<ServersInput> ReadServersInput(const Options& options, std::string_view prefix,
                                      const RingOptions* ring) {
  Result<InputChoice> choice = ChooseInput(options, prefix);
  if (!choice.ok()) return choice.status();
  ServersInput input;
  input.name = ServersInputName(options, prefix);
  if (ring != nullptr && IsProgramFlavor(ring->flavor)) {
    if (choice.value().servers_option.empty()) {
      return Status(StatusCode::kBadArgument,
                    "--" + choice.value().conf_option + " reads nginx upstreams; the " +
                        std::string(FlavorName(ring->flavor)) +
                        " flavor takes its servers from --servers FILE");
    }
    const std::string path = *options.Get(choice.value().servers_option);
    std::ifstream file(path, std::ios::binary);
    if (!file.is_open()) return Status(StatusCode::kIoError, path + ": cannot be opened");
    std::ostringstream text;
    text << file.rdbuf();
    if (file.bad()) return Status(StatusCode::kIoError, path + ": cannot be read");
    Result<std::vector<ProgramServer>> servers = ParseProgramServers(
        text.str(), path, *ring, input.servers, options.Has("use-hostname-for-hashing"));
    if (!servers.ok()) return servers.status();
    input.program = std::move(servers).value();
    return input;
  }
  if (!choice.value().servers_option.empty()) {
    Result<std::vector<ServerEntry>> servers =
        ReadServersFile(*options.Get(choice.value().servers_option));
    if (!servers.ok()) return servers.status();
    input.servers = std::move(servers).value();
    return input;
  }
  Result<NginxUpstream> upstream =
      ReadNginxUpstream(*options.Get(choice.value().conf_option), choice.value().upstream);
  if (!upstream.ok()) return upstream.status();
  for (const std::string& note : upstream.value().notes) {
    std::fprintf(stderr, "chash: note: %s\n", note.c_str());
  }
  for (const NginxServer& server : upstream.value().servers) {
    input.servers.push_back({server.address, server.weight, server.line});
    input.where.push_back(server.file + ":" + std::to_string(server.line));
    if (server.down) input.down.push_back(server.address);
  }
  return input;
}

const std::string& ServerText(const Ring& ring, const ServersInput& input, uint32_t id) {
  if (!input.program.empty() && id < input.servers.size()) return input.servers[id].address;
  return ring.node(id).address.written;
}

Result<Ring> BuildServersInput(const ServersInput& input, const RingOptions& ring_options) {
  if (!input.program.empty()) {
    const RingOptions& options = ring_options;
    ProgressPhase progress("building " + std::string(FlavorName(options.flavor)) + " ring");
    RingBuilder builder(options);
    for (size_t i = 0; i < input.program.size(); ++i) {
      const ProgramServer& server = input.program[i];
      Status status = builder.Add(server.address, server.weight, server.Node());
      if (!status.ok()) {
        return Status(status.code(), input.name + ":" + std::to_string(input.servers[i].line) +
                                         ": " + status.message());
      }
    }
    return NameWhatWasBuilt(std::move(builder).Build(), input.name, options);
  }
  const RingOptions& options = ring_options;
  if (input.where.empty()) {
    return NameWhatWasBuilt(BuildWithProgress(input.servers, options, input.name), input.name,
                            options);
  }
  uint64_t points = 0;
  for (const ServerEntry& server : input.servers) {
    points += uint64_t{server.weight} * options.point_multiple;
  }
  ProgressPhase progress("building " + std::string(FlavorName(options.flavor)) +
                         " ring: " + WithCommas(points) + " points");
  RingBuilder builder(options);
  for (size_t i = 0; i < input.servers.size(); ++i) {
    Status status = builder.Add(input.servers[i].address, input.servers[i].weight);
    if (!status.ok()) return Status(status.code(), input.where[i] + ": " + status.message());
  }
  return NameWhatWasBuilt(std::move(builder).Build(), input.name, options);
}

Result<SnapshotLoadOptions> SnapshotLoadOptionsFrom(const Options& options) {
  SnapshotLoadOptions load;
  for (const std::string& path : options.GetAll("trusted-key")) {
    Result<PublicKey> key = ReadPublicKeyFile(path);
    if (!key.ok()) return key.status();
    load.trusted_keys.push_back(key.value());
  }
  Result<uint64_t> min_version = options.GetUint("min-version", 0, 0, UINT64_MAX);
  if (!min_version.ok()) return min_version.status();
  load.min_config_version = min_version.value();
  Result<uint64_t> threads = options.GetUint("threads", 0, 1, 256);
  if (!threads.ok()) return threads.status();
  load.threads = static_cast<uint32_t>(threads.value());
  Result<uint64_t> max_size = options.GetUint("max-size", 0, 640, UINT64_MAX / 2);
  if (!max_size.ok()) return max_size.status();
  load.max_file_bytes = max_size.value();
  return load;
}

Result<Ring> LoadRingFromSnapshotOption(const Options& options, std::string_view option,
                                        std::vector<NamedSubset>* subsets) {
  const std::optional<std::string> path = options.Get(option);
  if (!path) return Status(StatusCode::kBadArgument, "--" + std::string(option) + " is required");
  Result<SnapshotLoadOptions> load = SnapshotLoadOptionsFrom(options);
  if (!load.ok()) return load.status();
  Result<Ring> ring = LoadSnapshotRing(*path, load.value(), nullptr, subsets);
  if (ring.ok() || ring.status().code() != StatusCode::kOutOfMemory) return ring;
  // What ran out; the loader's message names the step and the file.
  return Status(StatusCode::kOutOfMemory, "loading the ring snapshot: " + ring.status().message());
}

namespace {

// The ring of a program's config (read.options, servers, program): the
// command line's program options apply on top, as to a servers file.
Result<Ring> BuildConfigRing(const Options& options, RingOptions ring_options, std::string name,
                             std::vector<ServerEntry> entries, std::vector<ProgramServer> program,
                             ServersInput* input) {
  if (Status status = ApplyProgramOptions(options, ring_options); !status.ok()) return status;
  ServersInput servers;
  servers.name = std::move(name);
  servers.servers = std::move(entries);
  servers.program = std::move(program);
  Result<Ring> ring = BuildServersInput(servers, ring_options);
  if (input != nullptr) *input = std::move(servers);
  return ring;
}

// The options a program's config gives, refused beside --`config`:
// `why` says what the config gives.
Status RefuseBesideConfig(const Options& options, std::string_view config,
                          std::initializer_list<std::string_view> given, std::string_view why) {
  for (const std::string_view name : given) {
    if (options.Has(name)) {
      return Status(StatusCode::kBadArgument, "--" + std::string(config) + " and --" +
                                                  std::string(name) +
                                                  " cannot be combined: " + std::string(why));
    }
  }
  return Status();
}

// --haproxy-cfg FILE --backend NAME: the flavor and its options are the
// config's (only --server-key, which HAProxy version computes the points,
// may be given).
Result<Ring> LoadHaproxyBackend(const Options& options, ServersInput* input) {
  if (Status refused = RefuseBesideConfig(
          options, "haproxy-cfg",
          {"servers", "nginx-conf", "upstream", "flavor", "multiple", "hash-function", "avalanche"},
          "the config gives the servers and the hash-type");
      !refused.ok()) {
    return refused;
  }
  const std::optional<std::string> backend = options.Get("backend");
  if (!backend) {
    return Status(StatusCode::kBadArgument, "--haproxy-cfg needs --backend NAME (the backend "
                                            "or listen section to read)");
  }
  const std::string path = *options.Get("haproxy-cfg");
  Result<HaproxyBackend> read = ReadHaproxyBackend(path, *backend);
  if (!read.ok()) return read.status();
  for (const std::string& note : read.value().notes) {
    std::fprintf(stderr, "chash: note: %s\n", note.c_str());
  }
  return BuildConfigRing(options, read.value().options, path + " backend " + *backend,
                         std::move(read.value().servers), std::move(read.value().program), input);
}

// --nutcracker-yml FILE --pool NAME: the pool's servers, hash and hash_tag.
Result<Ring> LoadNutcrackerPool(const Options& options, ServersInput* input) {
  if (Status refused =
          RefuseBesideConfig(options, "nutcracker-yml",
                             {"servers", "nginx-conf", "upstream", "flavor", "multiple", "variant",
                              "key-hash", "hash-tag", "default-port"},
                             "the config gives the servers, hash and hash_tag");
      !refused.ok()) {
    return refused;
  }
  const std::optional<std::string> pool = options.Get("pool");
  if (!pool) {
    return Status(StatusCode::kBadArgument, "--nutcracker-yml needs --pool NAME (the pool to read)");
  }
  const std::string path = *options.Get("nutcracker-yml");
  Result<NutcrackerPool> read = ReadNutcrackerPool(path, *pool);
  if (!read.ok()) return read.status();
  return BuildConfigRing(options, read.value().options, path + " pool " + *pool,
                         std::move(read.value().servers), std::move(read.value().program), input);
}

// --envoy-cluster FILE [--cluster NAME]: the cluster's policy, its options
// and endpoints.
Result<Ring> LoadEnvoyCluster(const Options& options, ServersInput* input) {
  if (Status refused = RefuseBesideConfig(
          options, "envoy-cluster",
          {"servers", "nginx-conf", "upstream", "flavor", "multiple", "min-ring-size",
           "max-ring-size", "hash-function", "table-size", "use-hostname-for-hashing"},
          "the cluster gives the endpoints and the policy");
      !refused.ok()) {
    return refused;
  }
  const std::string path = *options.Get("envoy-cluster");
  const std::string cluster = options.Get("cluster").value_or("");
  Result<EnvoyCluster> read = ReadEnvoyCluster(path, cluster);
  if (!read.ok()) return read.status();
  for (const std::string& note : read.value().notes) {
    std::fprintf(stderr, "chash: note: %s\n", note.c_str());
  }
  return BuildConfigRing(options, read.value().options,
                         path + (cluster.empty() ? "" : " cluster " + cluster),
                         std::move(read.value().servers), std::move(read.value().program), input);
}

}  // namespace

Result<Ring> LoadRingFromOptions(const Options& options, ServersInput* input,
                                 std::vector<NamedSubset>* subsets) {
  if (options.Has("ring")) {
    std::vector<std::string_view> refused = {"servers", "flavor", "multiple", "nginx-conf",
                                             "upstream", "haproxy-cfg", "backend",
                                             "nutcracker-yml", "pool", "envoy-cluster",
                                             "cluster"};
    refused.insert(refused.end(), ProgramValued().begin(), ProgramValued().end());
    refused.insert(refused.end(), ProgramFlags().begin(), ProgramFlags().end());
    for (const std::string_view name : refused) {
      if (options.Has(name)) {
        return Status(StatusCode::kBadArgument,
                      "--ring and --" + std::string(name) +
                          " cannot be combined: the snapshot holds the servers and the flavor");
      }
    }
    if (input != nullptr) input->name = *options.Get("ring");
    return LoadRingFromSnapshotOption(options, "ring", subsets);
  }
  for (const char* name : {"trusted-key", "min-version", "threads", "max-size"}) {
    if (options.Has(name)) {
      return Status(StatusCode::kBadArgument,
                    std::string("--") + name + " applies to a snapshot (--ring RINGFILE)");
    }
  }
  if (options.Has("backend") && !options.Has("haproxy-cfg")) {
    return Status(StatusCode::kBadArgument, "--backend needs --haproxy-cfg FILE");
  }
  if (options.Has("pool") && !options.Has("nutcracker-yml")) {
    return Status(StatusCode::kBadArgument, "--pool needs --nutcracker-yml FILE");
  }
  if (options.Has("cluster") && !options.Has("envoy-cluster")) {
    return Status(StatusCode::kBadArgument, "--cluster needs --envoy-cluster FILE");
  }
  if (options.Has("haproxy-cfg") + options.Has("nutcracker-yml") + options.Has("envoy-cluster") >
      1) {
    return Status(StatusCode::kBadArgument,
                  "--haproxy-cfg, --nutcracker-yml and --envoy-cluster cannot be combined");
  }
  if (options.Has("envoy-cluster")) return LoadEnvoyCluster(options, input);
  if (options.Has("haproxy-cfg")) return LoadHaproxyBackend(options, input);
  if (options.Has("nutcracker-yml")) return LoadNutcrackerPool(options, input);
  Result<RingOptions> ring_options = RingOptionsFrom(options, "flavor", "multiple");
  if (!ring_options.ok()) return ring_options.status();
  Result<ServersInput> read = ReadServersInput(options, "", &ring_options.value());
  if (!read.ok()) return read.status();
  Result<Ring> ring = BuildServersInput(read.value(), ring_options.value());
  if (input != nullptr) *input = std::move(read).value();
  return ring;
}

Result<Ring> LoadNewRingFromOptions(const Options& options, const RingOptions& old_options) {
  RingOptions ring_options = old_options;
  if (const auto mode = options.Get("new-flavor")) {
    Result<Flavor> flavor = ParseFlavor(*mode);
    if (!flavor.ok()) return flavor.status();
    if (flavor.value() != old_options.flavor) {
      // The program options given are the first ring's flavor's.
      ring_options = RingOptions{.flavor = flavor.value()};
    }
  }
  Result<ServersInput> input = ReadServersInput(options, "new-", &ring_options);
  if (!input.ok()) return input.status();
  if (!FlavorTakesPointMultiple(ring_options.flavor) ||
      ring_options.flavor != old_options.flavor) {
    ring_options.point_multiple = kDefaultPointMultiple;
  }
  if (options.Has("new-multiple")) {
    if (Status status = ApplyMultipleOption(options, "new-multiple", ring_options); !status.ok()) {
      return status;
    }
  }
  return BuildServersInput(input.value(), ring_options);
}

RingOptions FirstRingOptions(const Options& options, const Ring& ring) {
  if (!options.Has("ring")) return ring.options();
  // A mapped snapshot is a raw ring: its options are the defaults.
  RingOptions snapshot_options;
  snapshot_options.flavor = ring.flavor();
  snapshot_options.point_multiple = ring.point_multiple();
  return snapshot_options;
}

Result<FleetShape> FleetShapeFrom(const Options& options) {
  Result<uint64_t> nodes = options.GetUint("nodes", 2048, 1, kMaxNodes);
  Result<uint64_t> weight = options.GetUint("weight", 625, 1, UINT32_MAX);
  Result<uint64_t> multiple = options.GetUint("multiple", 16, 1, UINT32_MAX);
  for (const auto* value : {&nodes, &weight, &multiple}) {
    if (!value->ok()) return value->status();
  }
  return FleetShape{.nodes = static_cast<uint32_t>(nodes.value()),
                    .weight = static_cast<uint32_t>(weight.value()),
                    .multiple = static_cast<uint32_t>(multiple.value())};
}

Result<Ring> BuildFleet(const FleetShape& fleet, Flavor flavor, uint32_t multiple) {
  ProgressPhase progress("building " + std::string(FlavorName(flavor)) + " ring: " +
                         WithCommas(uint64_t{fleet.nodes} * fleet.weight * multiple) + " points");
  RingBuilder builder(
      {.flavor = flavor, .point_multiple = multiple, .max_points = kHardMaxPoints});
  for (uint32_t i = 0; i < fleet.nodes; ++i) {
    const std::string address =
        "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ":443";
    if (Status status = builder.Add(address, fleet.weight); !status.ok()) return status;
  }
  return NameWhatWasBuilt(std::move(builder).Build(),
                          "the built-in fleet (" + std::to_string(fleet.nodes) + " x " +
                              std::to_string(fleet.weight) + ")",
                          {.flavor = flavor, .point_multiple = multiple});
}

Result<double> ParseFraction(std::string_view option, std::string_view text) {
  std::string number(text);
  double scale = 1;
  if (!number.empty() && number.back() == '%') {
    number.pop_back();
    scale = 100;
  }
  char* end = nullptr;
  const double value = number.empty() ? NAN : std::strtod(number.c_str(), &end) / scale;
  if (number.empty() || end != number.c_str() + number.size() || !(value >= 0 && value <= 1)) {
    return Status(StatusCode::kBadArgument, "--" + std::string(option) +
                                                " must be a fraction 0..1 or a percentage "
                                                "0%..100%, got '" +
                                                std::string(text) + "'");
  }
  return value;
}

uint64_t PeakRssBytes() { return measure::ProcStatusKb("VmHWM:") * 1024; }

std::string Percent(double fraction, int decimals) {
  char text[48];
  std::snprintf(text, sizeof text, "%.*f%%", decimals, 100 * fraction);
  return text;
}

std::string WithCommas(uint64_t value) {
  std::string digits = std::to_string(value);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace chash::cli
