// The lookup half of the differential fuzzers: a built Ring against the
// ReferenceRing of the same input, for every lookup the API offers, on
// every SIMD target: plain, batch, failover walks, distinct walks, and the
// failover lookups of failover.h (masks, AvailabilityMask, bounded loads)
// against the reference ring of the available nodes alone.
//
// A new lookup gets a function with the LookupCheck signature, listed in
// kPerTargetChecks in lookup_diff.cc; both differential fuzzers then run it
// on every target.
#ifndef CHASH_FUZZ_LOOKUP_DIFF_H_
#define CHASH_FUZZ_LOOKUP_DIFF_H_

#include <cstdint>
#include <string>
#include <vector>

#include "chash/ring.h"
#include "mask_case.h"
#include "reference/reference_ring.h"

namespace chash::fuzz {

struct DiffContext {
  const Ring& ring;
  const reference::ReferenceRing& ref;
  const std::vector<std::string>& keys;
  const std::string& description;  // the case, for Fail()
  // Hashes every check looks up: each point's hash and its neighbours
  // (sampled on large rings), 0, 1, 2^32-2, 2^32-1, the case's extra hashes.
  std::vector<uint32_t> probes;
  std::vector<uint32_t> expected{};      // ref.FindNodeByHash(probes[i])
  std::vector<uint32_t> expected_key{};  // ref.FindNode(keys[i])
  // Distinct walks from a few probes and the first key's hash, with the
  // reference's answer for each (computed once: it is O(points)).
  std::vector<uint32_t> distinct_from{};
  std::vector<std::vector<uint32_t>> distinct_expected{};
  // Failover lookups (null: none): the mask and loads, the reference ring of
  // the available nodes, and its answers for the probes, the keys and (its
  // distinct walks) the distinct_from hashes.
  const MaskCase* mask = nullptr;
  const reference::ReferenceRing* available_ref = nullptr;
  std::vector<uint32_t> masked_expected{};
  std::vector<uint32_t> masked_expected_key{};
  std::vector<std::vector<uint32_t>> available_walks{};
  // Masked lookups check every masked_stride-th probe: a walk to the next
  // available point costs about points / available points steps, and each
  // exec must stay well under the fuzzers' timeout.
  size_t masked_stride = 1;
  std::string target{};  // the SIMD target being checked
  uint64_t checks = 0;  // answers compared so far
};

using LookupCheck = void (*)(DiffContext& context);

// A ring without state (default-constructed or moved-from) must read as the
// empty ring everywhere. Fail()s otherwise.
void CheckReadsAsEmpty(const Ring& ring, const std::string& what, const std::string& description);

// Moves `ring` out and back (move constructor and assignment), checking the
// moved-from rings read as empty in between.
void CheckMoves(Ring& ring, const std::string& description);

// Everything that does not depend on the target (sizes, the ring-order point
// sequence, hash shares), then each LookupCheck on every target. Fail()s on
// the first difference; returns the number of answers compared.
// With `mask`, also the failover lookups, against `available_ref`: the
// reference ring of the available nodes alone (same ids).
uint64_t CompareRingWithReference(const Ring& ring, const reference::ReferenceRing& ref,
                                  const std::vector<std::string>& keys,
                                  const std::vector<uint32_t>& extra_hashes,
                                  const std::string& description, const MaskCase* mask = nullptr,
                                  const reference::ReferenceRing* available_ref = nullptr);

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_LOOKUP_DIFF_H_
