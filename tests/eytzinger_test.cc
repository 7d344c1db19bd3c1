// The index arithmetic behind the columns: the in-order successor walk must
// visit every slot once, in the order of an explicit in-order traversal.
#include <functional>

#include "layout/eytzinger.h"
#include "test_util.h"

namespace chash::internal {
namespace {

std::vector<uint32_t> InOrder(uint32_t n) {
  std::vector<uint32_t> order;
  std::function<void(uint32_t)> visit = [&](uint32_t k) {
    if (k > n) return;
    visit(2 * k);
    order.push_back(k);
    visit(2 * k + 1);
  };
  visit(1);
  return order;
}

std::vector<uint32_t> Sizes() {
  std::vector<uint32_t> sizes;
  for (uint32_t n = 1; n <= 1000; ++n) sizes.push_back(n);
  for (int bit = 10; bit <= 20; ++bit) {
    for (int delta : {-1, 0, 1}) sizes.push_back((uint32_t{1} << bit) + delta);
  }
  return sizes;
}

TEST(Eytzinger, SuccessorWalkIsTheInOrderTraversal) {
  for (const uint32_t n : Sizes()) {
    const std::vector<uint32_t> expected = InOrder(n);
    ASSERT_EQ(expected.size(), n);
    uint32_t slot = EytzingerFirst(n);
    for (uint32_t i = 0; i < n; ++i) {
      ASSERT_EQ(slot, expected[i]) << "n=" << n << " i=" << i;
      slot = EytzingerNext(slot, n);
    }
    EXPECT_EQ(slot, 0u) << "n=" << n << ": the largest element has no successor";
  }
}

TEST(Eytzinger, LevelsCoverEverySlot) {
  for (const uint32_t n : Sizes()) {
    const int levels = EytzingerLevels(n);
    EXPECT_GE((uint64_t{1} << levels) - 1, n);
    EXPECT_LT((uint64_t{1} << (levels - 1)) - 1, n);
  }
}

}  // namespace
}  // namespace chash::internal
