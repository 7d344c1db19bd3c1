// A C++ consumer of the installed chash: builds a ring from a servers file
// through the C++ API and checks every "key,addr" answer of a golden file
// (split at the last comma), single and batched.
//   golden_route_cxx FLAVOR MULTIPLE SERVERS GOLDEN
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chash/chash.h"
#include "chash/operators.h"
#include "chash/chash_c.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: golden_route_cxx FLAVOR MULTIPLE SERVERS GOLDEN\n");
    return 2;
  }
  if (std::strcmp(chash_version(), CHASH_VERSION_STRING) != 0) {
    std::fprintf(stderr, "compiled against %s, loaded %s\n", CHASH_VERSION_STRING, chash_version());
    return 1;
  }
  chash::Result<chash::Flavor> flavor = chash::ParseFlavor(argv[1]);
  if (!flavor.ok()) return 2;
  const auto multiple = static_cast<uint32_t>(std::strtoul(argv[2], nullptr, 10));
  chash::Result<std::vector<chash::ServerEntry>> servers = chash::ReadServersFile(argv[3]);
  if (!servers.ok()) {
    std::fprintf(stderr, "%s\n", servers.status().ToString().c_str());
    return 2;
  }
  chash::RingBuilder builder(
      {.flavor = flavor.value(),
       .point_multiple = multiple ? multiple : chash::kDefaultPointMultiple});
  for (const chash::ServerEntry& server : servers.value()) {
    if (chash::Status status = builder.Add(server.address, server.weight); !status.ok()) {
      std::fprintf(stderr, "%s\n", status.ToString().c_str());
      return 2;
    }
  }
  chash::Result<chash::Ring> ring = std::move(builder).Build();
  if (!ring.ok()) return 2;

  std::vector<std::string> keys, answers;
  std::ifstream golden(argv[4]);
  for (std::string line; std::getline(golden, line);) {
    if (line.empty() || line[0] == '#') continue;
    const size_t comma = line.rfind(',');
    if (comma == std::string::npos) return 2;
    keys.push_back(line.substr(0, comma));
    answers.push_back(line.substr(comma + 1));
  }
  if (keys.empty()) return 2;
  std::vector<std::string_view> views(keys.begin(), keys.end());
  std::vector<uint32_t> batch(keys.size());
  ring.value().FindNodes(views, batch);
  size_t wrong = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    const uint32_t node = ring.value().FindNode(keys[i]);
    if (node == chash::Ring::kNoNode || batch[i] != node ||
        ring.value().node(node).address.written != answers[i]) {
      if (++wrong <= 5)
        std::fprintf(stderr, "key '%s': want %s\n", keys[i].c_str(), answers[i].c_str());
    }
  }
  if (wrong != 0) {
    std::fprintf(stderr, "%zu of %zu keys wrong\n", wrong, keys.size());
    return 1;
  }
  std::printf("ok %zu\n", keys.size());
  return 0;
}
