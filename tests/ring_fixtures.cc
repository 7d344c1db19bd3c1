#include "ring_fixtures.h"

#include <gtest/gtest.h>

#include <cstdio>

namespace chash::testing {

std::string RingSpec::Describe() const {
  std::string text = std::string(FlavorName(flavor)) + " multiple " + std::to_string(multiple) +
                     ", " + std::to_string(servers.size()) + " servers:";
  for (size_t i = 0; i < servers.size() && i < 6; ++i) {
    text += " " + servers[i].address + "x" + std::to_string(servers[i].weight);
  }
  if (servers.size() > 6) text += " ...";
  return text;
}

std::string RandomAddress(std::mt19937_64& rng, Flavor flavor, uint32_t i) {
  char text[128];
  const uint32_t port = 1 + static_cast<uint32_t>(rng() % 65535);
  const uint32_t forms = flavor == Flavor::kNginx ? 9 : flavor == Flavor::kResty ? 11 : 6;
  const uint32_t form = static_cast<uint32_t>(rng() % forms);
  const uint32_t r = static_cast<uint32_t>(rng());
  if (form == 9) {  // resty: APISIX's id, host NUL port
    return "10." + std::to_string(i >> 8) + "." + std::to_string(i & 255) + "." +
           std::to_string(r % 256) + std::string(1, '\0') + std::to_string(port);
  }
  if (form == 10) {  // resty: any bytes (spaces, high bytes, a shared prefix)
    return "node " + std::to_string(i) + "\xff\x01" + std::to_string(r % 7);
  }
  switch (form) {
    case 0:
    case 1:  // IPv4, unique by index in the middle octets
      std::snprintf(text, sizeof text, "%u.%u.%u.%u:%u", 1 + r % 250, i >> 8, i & 255,
                    (r >> 8) % 256, port);
      break;
    case 2:  // compressed IPv6
      std::snprintf(text, sizeof text, "[2001:db8::%x:%x]:%u", i, r & 0xFFFF, port);
      break;
    case 3:  // full, upper case, leading zeros
      std::snprintf(text, sizeof text, "[FE80:0000:0000:0000:%04X:%04X:0000:%04X]:%u", i,
                    r & 0xFFFF, (r >> 16) & 0xFFFF, port);
      break;
    case 4:  // IPv4-mapped IPv6
      std::snprintf(text, sizeof text, "[::ffff:%u.%u.%u.%u]:%u", 100 + r % 100, i >> 8,
                    i & 255, (r >> 8) % 256, port);
      break;
    case 5:  // long zero runs
      std::snprintf(text, sizeof text, "[%x::%x:0:0:%x]:%u", 1 + (r & 0xFFF), i, r >> 20,
                    port);
      break;
    case 6:  // name:port (nginx hashes the name)
      std::snprintf(text, sizeof text, "backend-%u.example:%u", i, port);
      break;
    case 7:  // no port: nginx hashes an empty PORT
      std::snprintf(text, sizeof text, "10.%u.%u.%u", i >> 8, i & 255, r % 256);
      break;
    default:
      std::snprintf(text, sizeof text, "unix:/run/chash/%u-%u.sock", i, r % 1000);
      break;
  }
  return text;
}

RingSpec RandomRingSpec(std::mt19937_64& rng, Flavor flavor, uint32_t multiple, uint32_t nodes,
                        uint32_t max_weight) {
  RingSpec spec;
  spec.flavor = flavor;
  spec.multiple = multiple;
  for (uint32_t i = 0; i < nodes; ++i) {
    const uint32_t weight = 1 + static_cast<uint32_t>(rng() % max_weight);
    spec.servers.push_back({RandomAddress(rng, flavor, i), weight});
  }
  return spec;
}

Ring BuildEngine(const RingSpec& spec) {
  RingBuilder builder(spec.options());
  for (const reference::Server& server : spec.servers) {
    const Status status = builder.Add(server.address, server.weight);
    EXPECT_TRUE(status.ok()) << status.ToString() << "\n" << spec.Describe();
  }
  Result<Ring> ring = std::move(builder).Build();
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  return ring.ok() ? std::move(ring).value() : Ring();
}

reference::ReferenceRing BuildReference(const RingSpec& spec) {
  Result<reference::ReferenceRing> ring =
      reference::ReferenceRing::Build(spec.flavor, spec.multiple, spec.servers);
  EXPECT_TRUE(ring.ok()) << ring.status().ToString() << "\n" << spec.Describe();
  return ring.ok() ? std::move(ring).value() : reference::ReferenceRing();
}

std::vector<uint32_t> BoundaryHashes(const std::vector<reference::Point>& points) {
  std::vector<uint32_t> hashes = {0u, 0xFFFFFFFFu};
  for (const reference::Point& point : points) {
    hashes.push_back(point.hash);
    hashes.push_back(point.hash - 1);
    hashes.push_back(point.hash + 1);
  }
  return hashes;
}

}  // namespace chash::testing
