// The servers file format (include/chash/servers_file.h).
#include "test_util.h"

namespace chash {
namespace {

// Found by fuzz_parser: a weight of more than 10 characters was refused with
// "not an integer 0..4294967295" even when its value was in range.
TEST(ServersFile, ZeroPaddedWeightOfAnyLength) {
  const auto entries = ParseServersText("10.0.0.1:80 00000000000000000007\n", "t");
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries.value().size(), 1u);
  EXPECT_EQ(entries.value()[0].weight, 7u);
  const auto max = ParseServersText("a 0004294967295", "t");
  ASSERT_TRUE(max.ok());
  EXPECT_EQ(max.value()[0].weight, 4294967295u);
}

TEST(ServersFile, WeightOutOfRangeNamesTheLine) {
  for (const char* text :
       {"a 1\nb 4294967296\n", "a 1\nb 99999999999999999999999\n", "a 1\nb 1e3\n", "a 1\nb -1\n"}) {
    const auto entries = ParseServersText(text, "t");
    ASSERT_FALSE(entries.ok()) << text;
    EXPECT_EQ(entries.status().code(), StatusCode::kBadWeight);
    EXPECT_EQ(entries.status().message().rfind("t:2: ", 0), 0u) << entries.status().message();
  }
}

}  // namespace
}  // namespace chash
