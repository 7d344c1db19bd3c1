#include <string>

#include "address_model.h"
#include "byte_checks.h"
#include "chash/address.h"
#include "chash/servers_file.h"
#include "fuzz_data.h"
#include "flavors.h"
#include "fuzz_support.h"
#include "reference/reference_ring.h"

namespace chash::fuzz {
namespace {

constexpr uint64_t kServersMaxPoints = 20000;

std::vector<std::string_view> Fields(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t i = 0;
  while (true) {
    const size_t start = line.find_first_not_of(" \t", i);
    if (start == std::string_view::npos) return fields;
    const size_t end = std::min(line.find_first_of(" \t", start), line.size());
    fields.push_back(line.substr(start, end - start));
    i = end;
  }
}

// The engine's parse of `text` under `flavor` against the model.
void CompareAddress(Flavor flavor, std::string_view text, const std::string& description) {
  const Result<NodeAddress> engine = ParseNodeAddress(flavor, text);
  const reference::ParsedAddress model = reference::ParseAddress(flavor, text);
  const std::string where = std::string(FlavorName(flavor)) + " address " + Printable(text);
  if (engine.ok() != model.accepted) {
    Fail(where + ": engine " +
             (engine.ok() ? "accepts" : "rejects (" + engine.status().ToString() + ")") +
             ", model " + (model.accepted ? "accepts" : "rejects (" + model.why + ")"),
         description);
  }
  if (!engine.ok()) {
    CheckErrorFormat(engine.status(), description);
    if (engine.status().code() != StatusCode::kBadAddress) {
      Fail(where + ": rejected with " + engine.status().ToString() + ", expected bad_address",
           description);
    }
    return;
  }
  const NodeAddress& got = engine.value();
  if (got.host != model.host || got.port != model.port || got.written != text) {
    Fail(where + ": engine hashes host " + Printable(got.host) + " port " + Printable(got.port) +
             ", model host " + Printable(model.host) + " port " + Printable(model.port),
         description);
  }
  if (got.HashedBytes() != model.HashedBytes()) Fail(where + ": HashedBytes differs", description);
  if (!(got.order == model.order)) Fail(where + ": socket order key differs", description);
}

}  // namespace

ModelServersFile ModelParseServersText(std::string_view text) {
  ModelServersFile file;
  size_t line_number = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view() : text.substr(newline + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    line = line.substr(0, line.find('#'));
    const std::vector<std::string_view> fields = Fields(line);
    if (fields.empty()) continue;
    if (fields.size() > 2) {
      file.code = StatusCode::kBadArgument;
      file.error_line = line_number;
      return file;
    }
    ModelServerEntry entry{std::string(fields[0]), 1, line_number};
    if (fields.size() == 2) {
      // A decimal integer 0..4294967295 (leading zeros are harmless).
      uint64_t weight = 0;
      bool valid = !fields[1].empty();
      for (const char c : fields[1]) {
        if (c < '0' || c > '9' || weight > 0xFFFFFFFFu) {
          valid = false;
          break;
        }
        weight = weight * 10 + static_cast<uint64_t>(c - '0');
      }
      if (!valid || weight > 0xFFFFFFFFu) {
        file.code = StatusCode::kBadWeight;
        file.error_line = line_number;
        return file;
      }
      entry.weight = static_cast<uint32_t>(weight);
    }
    file.entries.push_back(std::move(entry));
  }
  return file;
}

size_t RunParserCheck(const uint8_t* data, size_t size) {
  FuzzReader r(data, size);
  const uint8_t mode = r.U8();
  const std::string_view text = r.Rest();
  std::string description = "parser case: mode " + std::to_string(mode) + ", text " +
                            Printable(text.substr(0, 512)) + (text.size() > 512 ? "..." : "");
  size_t compared = 0;

  if ((mode & 1) == 0) {
    for (const Flavor flavor :
         {Flavor::kNginx, Flavor::kPingoraV1, Flavor::kPingoraV2, Flavor::kResty}) {
      CompareAddress(flavor, text, description);
      ++compared;
    }
    // ParseFlavor takes exactly the names of the flavor table.
    const Result<Flavor> flavor = ParseFlavor(text);
    bool is_name = false;
    for (const internal::FlavorRow& row : internal::kFlavors) is_name = is_name || text == row.name;
    if (flavor.ok() != is_name || (is_name && FlavorName(flavor.value()) != text) ||
        (!flavor.ok() && flavor.status().code() != StatusCode::kBadArgument)) {
      Fail("ParseFlavor(" + Printable(text) + ") gives " + flavor.status().ToString(), description);
    }
    std::array<uint8_t, 16> bytes{};
    for (size_t i = 0; i < 16 && i < text.size(); ++i) bytes[i] = static_cast<uint8_t>(text[i]);
    if (FormatIpv6(bytes) != Rfc5952(bytes)) {
      Fail("FormatIpv6 gives " + FormatIpv6(bytes) + ", RFC 5952 is " + Rfc5952(bytes),
           description);
    }
    return compared;
  }

  const Flavor flavor = static_cast<Flavor>((mode >> 1) & 3);
  const uint32_t multiple =
      flavor == Flavor::kPingoraV2 || flavor == Flavor::kResty ? 1u + (mode >> 3) : 160u;
  const Result<std::vector<ServerEntry>> parsed = ParseServersText(text, "fuzz");
  const ModelServersFile model = ModelParseServersText(text);
  if (parsed.status().code() != model.code) {
    Fail("servers file: engine " + parsed.status().ToString() + ", model " +
             std::string(StatusCodeName(model.code)) + " at line " +
             std::to_string(model.error_line),
         description);
  }
  if (!parsed.ok()) {
    CheckErrorFormat(parsed.status(), description);
    const std::string prefix = "fuzz:" + std::to_string(model.error_line) + ": ";
    if (parsed.status().message().rfind(prefix, 0) != 0) {
      Fail("servers file error does not start with '" + prefix + "': " + parsed.status().ToString(),
           description);
    }
    return compared;
  }
  const std::vector<ServerEntry>& entries = parsed.value();
  if (entries.size() != model.entries.size())
    Fail("servers file: entry count differs", description);
  std::vector<reference::Server> servers;
  for (size_t i = 0; i < entries.size(); ++i) {
    const ModelServerEntry& want = model.entries[i];
    if (entries[i].address != want.address || entries[i].weight != want.weight ||
        entries[i].line != want.line) {
      Fail("servers file entry " + std::to_string(i) + ": engine " + Printable(entries[i].address) +
               " weight " + std::to_string(entries[i].weight) + " line " +
               std::to_string(entries[i].line) + ", model " + Printable(want.address) + " weight " +
               std::to_string(want.weight) + " line " + std::to_string(want.line),
           description);
    }
    CompareAddress(flavor, entries[i].address, description);
    ++compared;
    servers.push_back({entries[i].address, entries[i].weight});
  }

  const RingOptions options{
      .flavor = flavor, .point_multiple = multiple, .max_points = kServersMaxPoints};
  const Result<Ring> ring = BuildRingFromServers(entries, options, "fuzz");
  const Result<reference::ReferenceRing> ref =
      reference::ReferenceRing::Build(flavor, multiple, servers, kServersMaxPoints);
  description +=
      "\nflavor " + std::string(FlavorName(flavor)) + ", multiple " + std::to_string(multiple);
  if (ring.status().code() != ref.status().code()) {
    Fail("BuildRingFromServers: engine " + ring.status().ToString() + ", reference " +
             ref.status().ToString(),
         description);
  }
  if (!ring.ok()) {
    CheckErrorFormat(ring.status(), description);
    // The failing entry ends the shortest prefix the reference rejects (once
    // a prefix fails, every longer one does): binary search for it.
    size_t good = 0, bad = servers.size();
    while (bad - good > 1) {
      const size_t mid = good + (bad - good) / 2;
      const std::vector<reference::Server> prefix(servers.begin(), servers.begin() + mid);
      (reference::ReferenceRing::Build(flavor, multiple, prefix, kServersMaxPoints).ok() ? good
                                                                                         : bad) =
          mid;
    }
    const size_t line = bad == 0 ? 0 : entries[bad - 1].line;
    const std::string prefix = "fuzz:" + std::to_string(line) + ": ";
    if (ring.status().message().rfind(prefix, 0) != 0) {
      Fail("BuildRingFromServers error does not start with '" + prefix +
               "': " + ring.status().ToString(),
           description);
    }
  } else if (ring.value().num_points() != ref.value().points().size()) {
    Fail("BuildRingFromServers: point count differs", description);
  }
  return compared;
}

}  // namespace chash::fuzz
