// unique_ptr handles for the C API's objects in the C++ tests: each frees
// its object with the matching chash_*_free, on every path out of a test.
#ifndef CHASH_TESTS_CAPI_HANDLES_H_
#define CHASH_TESTS_CAPI_HANDLES_H_

#include <memory>

#include "chash/chash_c.h"

namespace chash::testing {

struct RingDeleter {
  void operator()(chash_ring* ring) const { chash_ring_free(ring); }
};
using RingHandle = std::unique_ptr<chash_ring, RingDeleter>;

struct MaskDeleter {
  void operator()(chash_node_mask* mask) const { chash_node_mask_free(mask); }
};
using MaskHandle = std::unique_ptr<chash_node_mask, MaskDeleter>;

struct SnapshotDeleter {
  void operator()(chash_snapshot* snapshot) const { chash_snapshot_free(snapshot); }
};
using SnapshotHandle = std::unique_ptr<chash_snapshot, SnapshotDeleter>;

// A struct that grows (chash_c.h), zeroed with its size set: C++'s
// spelling of C's {.size = sizeof s}, without -Wmissing-field-initializers.
template <typename T>
T Sized() {
  T value{};
  value.size = sizeof(T);
  return value;
}

}  // namespace chash::testing

#endif  // CHASH_TESTS_CAPI_HANDLES_H_
