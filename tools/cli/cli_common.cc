#include "cli_common.h"

#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "progress.h"

namespace chash::cli {

int Fail(std::string_view command, std::string_view message) {
  std::fprintf(stderr, "chash %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  return kExitUsage;
}

Result<Options> Options::Parse(const std::vector<std::string_view>& args,
                               const std::set<std::string_view>& valued,
                               const std::set<std::string_view>& flags) {
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
    const std::string key(name);
    if (options.values_.count(key)) {
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
    } else if (flags.count(name) && !inline_value) {
      options.values_[key] = "";
    } else {
      return Status(StatusCode::kBadArgument, "unknown option '" + std::string(arg) + "'");
    }
  }
  return options;
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
  uint64_t value = 0;
  bool valid = !text->empty() && text->size() <= 19;
  for (const char c : *text) {
    if (c < '0' || c > '9') valid = false;
    if (valid) value = value * 10 + static_cast<uint64_t>(c - '0');
  }
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

}  // namespace

Result<RingOptions> RingOptionsFrom(const Options& options, std::string_view mode_option,
                                    std::string_view multiple_option) {
  RingOptions ring_options;
  if (const auto mode = options.Get(mode_option)) {
    Result<Flavor> flavor = ParseFlavor(*mode);
    if (!flavor.ok()) return flavor.status();
    ring_options.flavor = flavor.value();
  }
  if (options.Has(multiple_option)) {
    if (ring_options.flavor != Flavor::kPingoraV2) {
      return Status(StatusCode::kBadMultiple, "--" + std::string(multiple_option) +
                                                  " is only for --" + std::string(mode_option) +
                                                  " pingora-v2 (" +
                                                  std::string(FlavorName(ring_options.flavor)) +
                                                  " uses 160 points per weight unit)");
    }
    Result<uint64_t> multiple = options.GetUint(multiple_option, 0, 1, UINT32_MAX);
    if (!multiple.ok()) return multiple.status();
    ring_options.point_multiple = static_cast<uint32_t>(multiple.value());
  }
  return ring_options;
}

Result<Ring> LoadRingFromOptions(const Options& options) {
  const std::optional<std::string> servers_path = options.Get("servers");
  if (!servers_path) return Status(StatusCode::kBadArgument, "--servers FILE is required");
  Result<RingOptions> ring_options = RingOptionsFrom(options, "mode", "multiple");
  if (!ring_options.ok()) return ring_options.status();
  Result<std::vector<ServerEntry>> servers = ReadServersFile(*servers_path);
  if (!servers.ok()) return servers.status();
  return BuildWithProgress(servers.value(), ring_options.value(), *servers_path);
}

Result<Ring> LoadNewRingFromOptions(const Options& options, const RingOptions& old_options) {
  const std::optional<std::string> path =
      options.Has("new-servers") ? options.Get("new-servers") : options.Get("servers");
  if (!path) return Status(StatusCode::kBadArgument, "--servers FILE is required");
  RingOptions ring_options = old_options;
  if (const auto mode = options.Get("new-mode")) {
    Result<Flavor> flavor = ParseFlavor(*mode);
    if (!flavor.ok()) return flavor.status();
    ring_options.flavor = flavor.value();
  }
  if (ring_options.flavor != Flavor::kPingoraV2 || old_options.flavor != Flavor::kPingoraV2) {
    ring_options.point_multiple = kDefaultPointMultiple;
  }
  if (options.Has("new-multiple")) {
    if (ring_options.flavor != Flavor::kPingoraV2) {
      return Status(StatusCode::kBadMultiple, "--new-multiple is only for a pingora-v2 new ring (" +
                                                  std::string(FlavorName(ring_options.flavor)) +
                                                  " uses 160 points per weight unit)");
    }
    Result<uint64_t> multiple = options.GetUint("new-multiple", 0, 1, UINT32_MAX);
    if (!multiple.ok()) return multiple.status();
    ring_options.point_multiple = static_cast<uint32_t>(multiple.value());
  }
  Result<std::vector<ServerEntry>> servers = ReadServersFile(*path);
  if (!servers.ok()) return servers.status();
  return BuildWithProgress(servers.value(), ring_options, *path);
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
  return std::move(builder).Build();
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

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string JsonNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.10g", value);
  return text;
}

uint64_t PeakRssBytes() {
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<uint64_t>(usage.ru_maxrss) * 1024;  // Linux reports KiB
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
