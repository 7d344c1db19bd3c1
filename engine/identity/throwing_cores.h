// The allocating cores of the public identity and statistics calls. They
// throw std::bad_alloc; the public calls (identity.h, stats.h) catch it and
// return their documented sentinel, and the calls that report errors
// (RingMigration::Create, PlanPointMultiples) turn it into kOutOfMemory.
#ifndef CHASH_ENGINE_IDENTITY_THROWING_CORES_H_
#define CHASH_ENGINE_IDENTITY_THROWING_CORES_H_

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "chash/identity.h"
#include "chash/stats.h"

namespace chash::internal {

std::string RingIdentityBytesOrThrow(const Ring& ring);
std::string PointsDigestBytesOrThrow(const Ring& ring);
std::string BackendIdentityBytesOrThrow(const Ring& ring);
Fingerprint PointsDigestOrThrow(const Ring& ring);
std::string BackendIdentityOrThrow(const NodeInfo& node, uint32_t id);
std::vector<uint64_t> NodeHashSharesOrThrow(const Ring& ring);
RingStats ComputeRingStatsOrThrow(const Ring& ring);

}  // namespace chash::internal

#endif  // CHASH_ENGINE_IDENTITY_THROWING_CORES_H_
