// Random rings for differential and property tests.
#ifndef CHASH_TESTS_RING_FIXTURES_H_
#define CHASH_TESTS_RING_FIXTURES_H_

#include <random>
#include <set>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "chash/operators.h"
#include "reference/reference_ring.h"

namespace chash::testing {

struct RingSpec {
  Flavor flavor = Flavor::kNginx;
  uint32_t multiple = kDefaultPointMultiple;
  std::vector<reference::Server> servers;

  RingOptions options() const { return {.flavor = flavor, .point_multiple = multiple}; }
  std::string Describe() const;  // for failure messages
};

// A random, valid server address for the flavor, unique by its index `i`:
// IPv4 or IPv6 in varied text forms (compressed, full, upper case,
// IPv4-mapped); nginx also gets names, unix: paths and port-less servers.
std::string RandomAddress(std::mt19937_64& rng, Flavor flavor, uint32_t i);

// `nodes` servers with weights 1..max_weight.
RingSpec RandomRingSpec(std::mt19937_64& rng, Flavor flavor, uint32_t multiple, uint32_t nodes,
                        uint32_t max_weight);

// Builds through the engine; fails the test on error.
Ring BuildEngine(const RingSpec& spec);
reference::ReferenceRing BuildReference(const RingSpec& spec);

// Hashes at which every answer of `points` is decided: 0, 2^32-1, each point
// hash and +-1 (answers are constant between consecutive points).
std::vector<uint32_t> BoundaryHashes(const std::vector<reference::Point>& points);

}  // namespace chash::testing

#endif  // CHASH_TESTS_RING_FIXTURES_H_
