// The committed seed corpora are exactly the named seeds of seeds.cc, and
// each seed is the case its name says (an overflow seed overflows, a
// collision seed collides, a tie-break seed picks the documented winner).
// Also replays every committed input through its target's check (as the
// fuzz_replay_* tests do) under gtest, so a failure names the file.
#include "seeds.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>

namespace chash::fuzz {
namespace {

namespace fs = std::filesystem;

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

const fs::path kCorpus = fs::path(CHASH_FUZZ_DIR) / "corpus";

TEST(FuzzSeeds, EachSeedIsTheCaseItIsNamedFor) {
  const std::vector<Seed> seeds = AllSeeds();
  ASSERT_GT(seeds.size(), 100u);
  std::set<std::string> names;
  for (const Seed& seed : seeds) {
    SCOPED_TRACE(seed.target + "/" + seed.name);
    EXPECT_TRUE(names.insert(seed.target + "/" + seed.name).second) << "duplicate seed name";
    EXPECT_EQ(seed.check(seed.bytes), "");
  }
}

TEST(FuzzSeeds, CommittedCorpusHoldsEverySeed) {
  for (const Seed& seed : AllSeeds()) {
    const fs::path path = kCorpus / seed.target / seed.name;
    ASSERT_TRUE(fs::is_regular_file(path))
        << path << " is missing: run chash_fuzz_seeds " << kCorpus.string();
    EXPECT_EQ(ReadFile(path), seed.bytes)
        << path << " differs from seeds.cc: run chash_fuzz_seeds " << kCorpus.string();
  }
}

// Every target has a corpus folder with the required cases named in it.
TEST(FuzzSeeds, RequiredCasesHaveNamedSeeds) {
  const std::map<std::string, std::vector<std::string>> required = {
      {"ring_diff",
       {"empty_ring", "single_point", "overflow_node_ids_65537", "overflow_weight_x_multiple_v2",
        "overflow_total_points", "collide_2way_nginx", "collide_3way_v1", "tie_config_order_v1",
        "tie_address_order_v2", "tie_ipv4_before_ipv6_v2", "wrap_around",
        "mask_collision_winner_down", "mask_none_available", "bounded_load_huge_factor"}},
      {"points_diff",
       {"empty_ring", "single_point", "overflow_node_id_65536", "overflow_node_count_65537",
        "overflow_total_points", "collide_2way_config_order", "collide_3way_config_order",
        "collide_all_equal", "tie_rank_reversed", "wrap_around", "extremes_0_1_max",
        "mask_all_equal_first_down"}},
      {"crc32", {"empty", "check_value_123456789", "offset_63_unaligned"}},
      {"parser", {"address_ipv6_mapped", "address_ipv6_scope_id", "servers_nginx_mixed_crlf"}},
      {"snapshot",
       {"valid_signed", "truncated", "extended", "unknown_major", "flipped_hash_bit",
        "flipped_hash_bit_checksum_fixed"}},
      {"program_diff",
       {"haproxy_sdbm_avalanche_ids", "haproxy_ids_congruent_2_20", "haproxy_unfixed_3_0",
        "ketama_libmemcached_weighted", "ketama_libmemcached_unweighted_md5",
        "ketama_twemproxy_names", "ketama_libketama", "varnish_two_points",
        "varnish_prefix_names_share_points", "envoy_ring_basic_12", "envoy_ring_minimum_0",
        "maglev_basic_7", "maglev_table_not_prime"}},
      {"state_record",
       {"share_valid", "share_version_max", "share_version_overflow", "share_field_twice",
        "good_newer", "good_newer_damaged", "good_text"}},
  };
  for (const auto& [target, names] : required) {
    for (const std::string& name : names) {
      EXPECT_TRUE(fs::is_regular_file(kCorpus / target / name)) << target << "/" << name;
    }
  }
}

}  // namespace
}  // namespace chash::fuzz
