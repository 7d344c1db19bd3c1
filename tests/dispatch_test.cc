// Which Highway target and CRC32 implementation run, and the hook that forces
// a target. tools/dev/test-arm sets CHASH_EXPECT_TARGET per qemu CPU model so
// that a run on the wrong target fails instead of passing quietly.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "hash/crc32_internal.h"
#include "test_util.h"

namespace chash {
namespace {

#if defined(__x86_64__)
// The target and CRC32 implementation this CPU should run, read from cpuid
// and xgetbv here rather than from chash's or Highway's tables, with the
// features Highway 1.0.3 requires of each target and chash of each CRC32.
struct ExpectedX86 {
  std::string target;
  std::string crc32;
};

ExpectedX86 ExpectedFromCpuid() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  __get_cpuid(1, &a, &b, &c, &d);
  const auto bit = [](unsigned reg, int n) { return ((reg >> n) & 1u) != 0; };
  const bool pclmul = bit(c, 1), ssse3 = bit(c, 9), fma = bit(c, 12), sse41 = bit(c, 19),
             sse42 = bit(c, 20), aes = bit(c, 25), osxsave = bit(c, 27), avx = bit(c, 28),
             f16c = bit(c, 29);
  unsigned long long xcr0 = 0;
  if (osxsave) {
    unsigned lo = 0, hi = 0;
    __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    xcr0 = (static_cast<unsigned long long>(hi) << 32) | lo;
  }
  const bool os_ymm = (xcr0 & 0x6) == 0x6, os_zmm = (xcr0 & 0xE6) == 0xE6;
  unsigned b7 = 0, c7 = 0;
  if (__get_cpuid_max(0, nullptr) >= 7) __cpuid_count(7, 0, a, b7, c7, d);
  const bool bmi1 = bit(b7, 3), avx2 = bit(b7, 5), bmi2 = bit(b7, 8), avx512f = bit(b7, 16),
             avx512dq = bit(b7, 17), avx512bw = bit(b7, 30), avx512vl = bit(b7, 31),
             vpclmulqdq = bit(c7, 10);
  const bool t_ssse3 = ssse3;
  const bool t_sse4 = t_ssse3 && sse41 && sse42 && pclmul && aes;
  const bool t_avx2 = t_sse4 && avx && avx2 && bmi1 && bmi2 && fma && f16c && os_ymm;
  const bool t_avx3 = t_avx2 && avx512f && avx512vl && avx512dq && avx512bw && os_zmm;
  ExpectedX86 expected;
  expected.target = t_avx3 ? "AVX3" : t_avx2 ? "AVX2" : t_sse4 ? "SSE4" : t_ssse3 ? "SSSE3" : "";
  const bool crc_pclmul = pclmul && sse41;
  expected.crc32 = crc_pclmul && vpclmulqdq && avx512f && avx512bw && avx512vl && os_zmm
                       ? "vpclmul-avx512"
                   : crc_pclmul ? "pclmul"
                                : "slice-by-8";
  return expected;
}

// Compares the dispatchers' choice with cpuid's, not with their own lists.
TEST(DispatchTest, TheBestTargetIsTheOneCpuidAllows) {
  const ExpectedX86 expected = ExpectedFromCpuid();
  std::printf("cpuid expects target %s, crc32 %s\n", expected.target.c_str(),
              expected.crc32.c_str());
  ASSERT_FALSE(expected.target.empty()) << "an x86-64 CPU without SSSE3: no SIMD target to expect";
  ASSERT_TRUE(ForceTarget("best").ok());
  EXPECT_EQ(std::string(ActiveTargetName()), expected.target);
  EXPECT_EQ(std::string(ActiveCrc32Name()), expected.crc32);
  EXPECT_EQ(std::string(internal::Crc32ImplementationName()), expected.crc32);
}
#endif

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
  // Every CPU model tools/dev/test-arm runs has the ARMv8 CRC32 instructions.
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
// tools/dev/test-arm runs this on max,sve256=on.)
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
