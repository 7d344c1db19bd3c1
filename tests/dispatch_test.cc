// Which Highway target and CRC32 implementation run, and the hook that forces
// a target. tools/test-arm sets CHASH_EXPECT_TARGET per qemu CPU model so
// that a run on the wrong target fails instead of passing quietly.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "hash/crc32_internal.h"
#include "test_util.h"

namespace chash {
namespace {

TEST(DispatchTest, TheExpectedTargetRuns) {
  const std::string active(ActiveTargetName());
  std::string supported;
  for (const std::string& target : SupportedTargetNames()) supported += target + " ";
  std::printf("chash target: %s (supported: %s) crc32: %s\n", active.c_str(), supported.c_str(),
              internal::Crc32ImplementationName());
  ASSERT_FALSE(SupportedTargetNames().empty());
  EXPECT_EQ(active, SupportedTargetNames().front()) << "the best supported target runs";
  if (const char* expected = std::getenv("CHASH_EXPECT_TARGET")) {
    EXPECT_EQ(active, expected);
  }
#if defined(__aarch64__)
  // Every CPU model tools/test-arm runs has the ARMv8 CRC32 instructions.
  EXPECT_EQ(std::string(internal::Crc32ImplementationName()), "armv8-crc32");
#endif
}

TEST(DispatchTest, ForceTargetRunsEachSupportedTarget) {
  for (const std::string& target : SupportedTargetNames()) {
    ASSERT_TRUE(ForceTarget(target).ok()) << target;
    EXPECT_EQ(ActiveTargetName(), target);
  }
  const Status bad = ForceTarget("NO_SUCH_TARGET");
  EXPECT_EQ(bad.code(), StatusCode::kBadArgument);
  EXPECT_NE(bad.message().find("NO_SUCH_TARGET"), std::string::npos) << bad.message();
  ASSERT_TRUE(ForceTarget("").ok());
  EXPECT_EQ(ActiveTargetName(), SupportedTargetNames().front());
}

// Listing or forcing targets must not change which target runs afterwards.
// (On an SVE_256 CPU, Highway 1.0.3's SupportedTargets() left SVE2 chosen;
// tools/test-arm runs this on max,sve256=on.)
TEST(DispatchTest, ListingTargetsKeepsTheBestOneActive) {
  const std::string best(ActiveTargetName());
  const std::vector<std::string> names = SupportedTargetNames();
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(ActiveTargetName(), best);
  EXPECT_EQ(ActiveTargetName(), names.front());
  for (const std::string& target : names) {
    ASSERT_TRUE(ForceTarget(target).ok()) << target;
    EXPECT_EQ(SupportedTargetNames(), names) << "forced " << target;
    EXPECT_EQ(ActiveTargetName(), target) << "after listing the targets";
  }
  EXPECT_EQ(ForceTarget("NO_SUCH_TARGET").code(), StatusCode::kBadArgument);
  EXPECT_EQ(ActiveTargetName(), best) << "an unknown name leaves the best target";
  ASSERT_TRUE(ForceTarget("best").ok());
  EXPECT_EQ(ActiveTargetName(), best);
}

}  // namespace
}  // namespace chash
