// The servers file format (include/chash/servers_file.h).
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

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


// One case per rule of include/chash/servers_file.h.

std::vector<ServerEntry> Parse(std::string_view text) {
  const auto entries = ParseServersText(text, "t");
  EXPECT_TRUE(entries.ok()) << entries.status().ToString();
  return entries.ok() ? entries.value() : std::vector<ServerEntry>{};
}

using AddressAndWeight = std::pair<std::string, uint32_t>;

// The entries' addresses and weights, in order.
std::vector<AddressAndWeight> AddressesAndWeights(const std::vector<ServerEntry>& entries) {
  std::vector<AddressAndWeight> pairs;
  for (const ServerEntry& entry : entries) pairs.emplace_back(entry.address, entry.weight);
  return pairs;
}

TEST(ServersFile, AddressAndOptionalWeightDefaultingToOne) {
  EXPECT_EQ(AddressesAndWeights(Parse("10.0.0.1:443 100\n[::1]:7777\nunix:/run/app.sock 2\n")),
            (std::vector<AddressAndWeight>{
                {"10.0.0.1:443", 100}, {"[::1]:7777", 1}, {"unix:/run/app.sock", 2}}));
}

TEST(ServersFile, CommentStartsAnywhereOnALine) {
  const auto entries =
      Parse("# a whole-line comment\n10.0.0.1:80 3 # after the weight\n10.0.0.2:80# no space\n"
            "  # indented\n10.0.0.3:80 #5\n");
  EXPECT_EQ(AddressesAndWeights(entries),
            (std::vector<AddressAndWeight>{
                {"10.0.0.1:80", 3}, {"10.0.0.2:80", 1}, {"10.0.0.3:80", 1}}))
      << "a weight after '#' is a comment";
}

TEST(ServersFile, BlankLinesAreIgnoredButCounted) {
  const auto entries = Parse("\n\n10.0.0.1:80\n \t \n\n10.0.0.2:80 4\n\n");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].line, 3u);
  EXPECT_EQ(entries[1].line, 6u);
  EXPECT_TRUE(Parse("").empty());
  EXPECT_TRUE(Parse("\n# only comments\n\n").empty());
}

TEST(ServersFile, CrlfLinesDropTheirCarriageReturn) {
  const auto entries = Parse("# c\r\n10.0.0.1:80 7\r\n10.0.0.2:80\r\n\r\n10.0.0.3:80 # x\r\n");
  EXPECT_EQ(AddressesAndWeights(entries),
            (std::vector<AddressAndWeight>{
                {"10.0.0.1:80", 7}, {"10.0.0.2:80", 1}, {"10.0.0.3:80", 1}}))
      << "no '\\r' left in an address";
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[2].line, 5u);
  // Only a trailing '\r' is dropped: one inside a line is not a separator.
  const auto inner = ParseServersText("10.0.0.1:80\r5\n", "t");
  ASSERT_TRUE(inner.ok());
  EXPECT_EQ(inner.value()[0].address, "10.0.0.1:80\r5");
}

TEST(ServersFile, LastLineWithoutNewlineIsRead) {
  const auto entries = Parse("10.0.0.1:80\n10.0.0.2:80 9");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].weight, 9u);
  EXPECT_EQ(entries[1].line, 2u);
}

TEST(ServersFile, SpacesAndTabsSeparateFields) {
  EXPECT_EQ(AddressesAndWeights(Parse("\t 10.0.0.1:80 \t  12 \t\n")),
            (std::vector<AddressAndWeight>{{"10.0.0.1:80", 12}}));
}

TEST(ServersFile, WeightZeroIsADrainedNodeWithItsId) {
  const auto entries = Parse("10.0.0.1:80 1\n10.0.0.2:80 0\n10.0.0.3:80 1\n");
  ASSERT_EQ(entries.size(), 3u);
  EXPECT_EQ(entries[1].weight, 0u);
  const auto ring = BuildRingFromServers(entries, {.flavor = Flavor::kPingoraV1}, "t");
  ASSERT_TRUE(ring.ok()) << ring.status().ToString();
  ASSERT_EQ(ring.value().num_nodes(), 3u);
  EXPECT_EQ(ring.value().node(1).address.written, "10.0.0.2:80");
  EXPECT_EQ(ring.value().node(1).weight, 0u);
  EXPECT_FALSE(ring.value().owns_points(1)) << "the drained node owns no points";
  EXPECT_EQ(ring.value().points_generated(), 320u);
}

TEST(ServersFile, MoreThanTwoFieldsNamesTheLine) {
  const auto entries = ParseServersText("a 1\n\nb 1 2\n", "src");
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.status().code(), StatusCode::kBadArgument);
  EXPECT_EQ(entries.status().message(), "src:3: expected 'ADDR [WEIGHT]', got 3 fields");
}

TEST(ServersFile, AddressesAreCheckedByTheRingNotTheParser) {
  const auto entries = Parse("10.0.0.1:80\nnot-an-address:99999 2\n");
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[1].address, "not-an-address:99999");
  const auto ring = BuildRingFromServers(entries, {}, "fleet.txt");
  ASSERT_FALSE(ring.ok());
  EXPECT_EQ(ring.status().code(), StatusCode::kBadAddress);
  EXPECT_EQ(ring.status().message().rfind("fleet.txt:2: ", 0), 0u) << ring.status().message();
}

TEST(ServersFile, RingErrorsNameTheEntrysLine) {
  const auto entries = Parse("# header\n10.0.0.1:80\n\n10.0.0.1:80\n");
  const auto ring = BuildRingFromServers(entries, {}, "f");
  ASSERT_FALSE(ring.ok());
  EXPECT_EQ(ring.status().code(), StatusCode::kDuplicateNode);
  EXPECT_EQ(ring.status().message().rfind("f:4: ", 0), 0u) << ring.status().message();
}

TEST(ServersFile, ReadsAFileAndNamesAnUnreadableOne) {
  const std::string path = ::testing::TempDir() + "servers_file_test_" + std::to_string(getpid());
  {
    std::ofstream out(path, std::ios::binary);
    out << "10.0.0.1:80 2\r\n# c\r\n10.0.0.2:80 x\r\n";
  }
  const auto bad = ReadServersFile(path);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kBadWeight);
  EXPECT_EQ(bad.status().message().rfind(path + ":3: weight 'x'", 0), 0u)
      << bad.status().message();
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << "10.0.0.1:80 2\r\n";
  }
  const auto good = ReadServersFile(path);
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  ASSERT_EQ(good.value().size(), 1u);
  EXPECT_EQ(good.value()[0].weight, 2u);
  std::remove(path.c_str());
  const auto missing = ReadServersFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kIoError);
  EXPECT_EQ(missing.status().message().rfind(path + ": ", 0), 0u) << missing.status().message();
}

}  // namespace
}  // namespace chash
