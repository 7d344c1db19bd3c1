// Envoy's RING_HASH and MAGLEV against Envoy's own unit tests: Envoy is not
// packaged in Debian 12, so there is no Envoy here to ask; its test suite
// states the rings and tables it builds, every hash and host printed. The
// cases below are copied from
//   envoyproxy/envoy test/extensions/load_balancing_policies/ring_hash/ring_hash_lb_test.cc
//     (commit 13e9fdb2d4db3480ff278565a596324951e8dccd)
//   envoyproxy/envoy test/extensions/load_balancing_policies/maglev/maglev_lb_test.cc
//     (commit 08417eb62f1ecfa6ac015caa0146d25565a142ed)
// with the test's name on each. A host there is makeTestHost(info,
// "tcp://127.0.0.1:90"), whose key is its address "127.0.0.1:90", or
// makeTestHost(info, "90", ...) with use_hostname_for_hashing: the key "90".
// chooseHost(h) of a context whose hash is h is FindNodeByHash64(h);
// chooseHost with retries is FindNodeForAttempt.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "chash/chash.h"
#include "test_util.h"

namespace chash {
namespace {

// Hosts as (key, weight).
using Hosts = std::vector<std::pair<std::string, uint32_t>>;

Ring Build(const RingOptions& options, const Hosts& hosts) {
  RingBuilder builder(options);
  for (const auto& [key, weight] : hosts) {
    const Status added = builder.Add(key, weight);
    EXPECT_TRUE(added.ok()) << added.ToString();
  }
  Result<Ring> ring = std::move(builder).Build();
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  return ring.ok() ? std::move(ring).value() : Ring();
}

// The keys PREFIX + PORT for each PORT of first..last, of one weight.
Hosts Numbered(const std::string& prefix, int first, int last, uint32_t weight) {
  Hosts hosts;
  for (int port = first; port <= last; ++port) {
    hosts.emplace_back(prefix + std::to_string(port), weight);
  }
  return hosts;
}

// makeTestHost(info, "tcp://127.0.0.1:PORT"): the key "127.0.0.1:PORT".
Hosts Ports(int first, int last, uint32_t weight = 1) {
  return Numbered("127.0.0.1:", first, last, weight);
}

// makeTestHost(info, "PORT", ...) with use_hostname_for_hashing: the key "PORT".
Hosts HostnameKeys(int first, int last) { return Numbered("", first, last, 1); }

struct Entry {
  uint64_t hash;
  const char* host;
};

// The ring in order, as the test's comment prints it.
void ExpectRing(const Ring& ring, const std::vector<Entry>& expected) {
  ASSERT_EQ(ring.num_points(), expected.size());
  PointCursor cursor = ring.Begin();
  for (const Entry& entry : expected) {
    EXPECT_EQ(cursor.hash64(), entry.hash);
    EXPECT_EQ(ring.node(cursor.node()).address.written, entry.host) << entry.hash;
    cursor.Advance();
  }
}

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

// chooseHost(hash) for each (hash, host index) as the test asserts it: the
// single form and the batch form.
void ExpectHosts(const Ring& ring, const std::vector<std::pair<uint64_t, uint32_t>>& expected) {
  std::vector<uint64_t> hashes;
  std::vector<uint32_t> hosts;
  for (const auto& [hash, host] : expected) {
    EXPECT_EQ(ring.FindNodeByHash64(hash), host) << hash;
    hashes.push_back(hash);
    hosts.push_back(host);
  }
  std::vector<uint32_t> out(hashes.size());
  ASSERT_EQ(ring.FindNodesByHash64(hashes, out), hashes.size());
  EXPECT_EQ(out, hosts) << "the batch form";
}

// A Maglev table as the test lists it: hash i picks entry i % size, for
// `rounds` times round the table.
void ExpectTable(const Ring& table, const std::vector<uint32_t>& entries, uint32_t rounds) {
  std::vector<std::pair<uint64_t, uint32_t>> expected;
  for (uint32_t i = 0; i < rounds * entries.size(); ++i) {
    expected.emplace_back(i, entries[i % entries.size()]);
  }
  ExpectHosts(table, expected);
}

// Every ring test runs on every SIMD target (testing::ForEachTarget): the
// 64-bit lookup searches the high halves with the target's kernels.
// RingHashLoadBalancerTest.Basic and .BasicWithRetryHostPredicate.
TEST(EnvoyGolden, RingBasic) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring ring = Build({.flavor = Flavor::kEnvoyRing, .envoy_ring = {.minimum_ring_size = 12}},
                            Ports(90, 95));
    ExpectRing(ring, {{833437586790550860u, "127.0.0.1:94"},
                      {928266305478181108u, "127.0.0.1:92"},
                      {1033482794131418490u, "127.0.0.1:90"},
                      {3551244743356806947u, "127.0.0.1:95"},
                      {3851675632748031481u, "127.0.0.1:93"},
                      {5583722120771150861u, "127.0.0.1:91"},
                      {6311230543546372928u, "127.0.0.1:91"},
                      {7700377290971790572u, "127.0.0.1:93"},
                      {13144177310400110813u, "127.0.0.1:95"},
                      {13444792449719432967u, "127.0.0.1:92"},
                      {15516499411664133160u, "127.0.0.1:94"},
                      {16117243373044804889u, "127.0.0.1:90"}});
    ExpectHosts(ring, {{0, 4},
                       {kMax, 4},
                       {3551244743356806947u, 5},
                       {3551244743356806948u, 3},
                       {16117243373044804880u, 0}});
    // Retries: attempt a takes the entry a places on.
    EXPECT_EQ(ring.FindNodeForAttempt(0, 0), 4u);
    EXPECT_EQ(ring.FindNodeForAttempt(0, 1), 2u);   // "Second attempt chooses the next host"
    EXPECT_EQ(ring.FindNodeForAttempt(0, 2), 0u);   // "Exhausted retries return the last"
    EXPECT_EQ(ring.FindNodeForAttempt(0, 13), 2u);  // "Retries wrap around the ring"
  });
}

// RingHashLoadBalancerTest.BasicWithMurmur2.
TEST(EnvoyGolden, RingMurmur2) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring ring =
        Build({.flavor = Flavor::kEnvoyRing,
               .envoy_ring = {.minimum_ring_size = 12, .hash_function = EnvoyHash::kMurmurHash2}},
              Ports(80, 85));
    ExpectRing(ring, {{1358027074129602068u, "127.0.0.1:85"},
                      {4361834613929391114u, "127.0.0.1:83"},
                      {7224494972555149682u, "127.0.0.1:84"},
                      {7701421856454313576u, "127.0.0.1:81"},
                      {8649315368077433379u, "127.0.0.1:82"},
                      {8739448859063030639u, "127.0.0.1:84"},
                      {9887544217113020895u, "127.0.0.1:81"},
                      {10150910876324007731u, "127.0.0.1:82"},
                      {15168472011420622455u, "127.0.0.1:83"},
                      {15427156902705414897u, "127.0.0.1:80"},
                      {16375050414328759093u, "127.0.0.1:85"},
                      {17613279263364193813u, "127.0.0.1:80"}});
    ExpectHosts(ring, {{0, 5},
                       {kMax, 5},
                       {1358027074129602068u, 5},
                       {1358027074129602069u, 3},
                       {10150910876324007730u, 2}});
  });
}

// RingHashLoadBalancerTest.BasicWithHostname (keys "90".."95").
TEST(EnvoyGolden, RingHostnameKeys) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring ring = Build({.flavor = Flavor::kEnvoyRing, .envoy_ring = {.minimum_ring_size = 12}},
                            HostnameKeys(90, 95));
    ExpectRing(ring, {{1975508444536362413u, "95"},
                      {2376063919839173711u, "95"},
                      {2386806903309390596u, "93"},
                      {6749904478991551885u, "94"},
                      {6803900775736438537u, "93"},
                      {7225015537174310577u, "92"},
                      {8787465352164086522u, "90"},
                      {11282020843382717940u, "92"},
                      {13723418369486627818u, "91"},
                      {13776502110861797421u, "90"},
                      {14338313586354474791u, "91"},
                      {15364271037087512980u, "94"}});
    ExpectHosts(ring, {{0, 5}, {kMax, 5}, {7225015537174310577u, 2}, {6803900775736438537u, 3}});
  });
}

// RingHashLoadBalancerTest.UnevenHosts: a minimum of 3 over 2 hosts is a
// ring of 4, and the ring of :81 and :82 keeps :81's entries.
TEST(EnvoyGolden, RingUnevenHosts) {
  testing::ForEachTarget([&](const std::string&) {
    const RingOptions options = {.flavor = Flavor::kEnvoyRing,
                                 .envoy_ring = {.minimum_ring_size = 3}};
    const Ring first = Build(options, Ports(80, 81));
    ExpectRing(first, {{5454692015285649509u, "127.0.0.1:80"},
                       {7859399908942313493u, "127.0.0.1:81"},
                       {13838424394637650569u, "127.0.0.1:80"},
                       {16064866803292627174u, "127.0.0.1:81"}});
    ExpectHosts(first, {{0, 0}});
    const Ring second = Build(options, Ports(81, 82));
    ExpectRing(second, {{7859399908942313493u, "127.0.0.1:81"},
                        {8241336090459785962u, "127.0.0.1:82"},
                        {12882406409176325258u, "127.0.0.1:82"},
                        {16064866803292627174u, "127.0.0.1:81"}});
    ExpectHosts(second, {{0, 0}});
  });
}

// RingHashLoadBalancerTest.HostWeightedTinyRing: weights 1, 2, 3 in a ring
// of exactly 6.
TEST(EnvoyGolden, RingHostWeightedTiny) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring ring = Build({.flavor = Flavor::kEnvoyRing,
                             .envoy_ring = {.minimum_ring_size = 6, .maximum_ring_size = 6}},
                            {{"127.0.0.1:90", 1}, {"127.0.0.1:91", 2}, {"127.0.0.1:92", 3}});
    EXPECT_EQ(ring.num_points(), 6u);
    ExpectHosts(ring, {{928266305478181108u, 2},
                       {4443673547860492590u, 2},
                       {5583722120771150861u, 1},
                       {6311230543546372928u, 1},
                       {13444792449719432967u, 2},
                       {16117243373044804889u, 0}});
  });
}

// Counts of i x (2^64 - 1) / N for i < N, the hosts' shares as Envoy's
// tests sample them.
std::vector<uint32_t> Histogram(const Ring& ring, uint32_t samples) {
  std::vector<uint32_t> counts(ring.num_nodes(), 0);
  for (uint32_t i = 0; i < samples; ++i) ++counts[ring.FindNodeByHash64(i * (kMax / samples))];
  return counts;
}

// RingHashLoadBalancerTest.HostWeightedLargeRing and .LargeFractionalScale.
TEST(EnvoyGolden, RingSampledShares) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring weighted =
        Build({.flavor = Flavor::kEnvoyRing, .envoy_ring = {.minimum_ring_size = 6144}},
              {{"127.0.0.1:90", 1}, {"127.0.0.1:91", 2}, {"127.0.0.1:92", 3}});
    EXPECT_EQ(weighted.num_points(), 6144u);
    EXPECT_EQ(Histogram(weighted, 6000), (std::vector<uint32_t>{987, 1932, 3081}));
    const Ring fractional =
        Build({.flavor = Flavor::kEnvoyRing,
               .envoy_ring = {.minimum_ring_size = 1023, .maximum_ring_size = 1023}},
              Ports(90, 91));
    EXPECT_EQ(fractional.num_points(), 1023u);
    EXPECT_EQ(Histogram(fractional, 1023), (std::vector<uint32_t>{526, 497}));
  });
}

// RingHashLoadBalancerTest.SmallFractionalScale: a ring of 2 over 4 hosts
// leaves two of them out.
TEST(EnvoyGolden, RingSmallFractionalScale) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring ring = Build({.flavor = Flavor::kEnvoyRing,
                             .envoy_ring = {.minimum_ring_size = 2, .maximum_ring_size = 2}},
                            Ports(90, 93));
    EXPECT_EQ(ring.num_points(), 2u);
    const std::vector<uint32_t> counts = Histogram(ring, 1024);
    int zeroes = 0;
    for (const uint32_t count : counts) zeroes += count == 0;
    EXPECT_EQ(zeroes, 2);
  });
}

// MaglevLoadBalancerTest.Basic, .BasicStability, .BasicWithRetryHostPredicate.
TEST(EnvoyGolden, MaglevBasic) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring table =
        Build({.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 7}}, Ports(90, 95));
    ExpectTable(table, {2, 4, 0, 1, 5, 0, 3}, 3);
    EXPECT_EQ(table.FindNodeForAttempt(10, 0), 1u);  // "Confirm that i=3 is selected"
    EXPECT_EQ(table.FindNodeForAttempt(10, 1), 0u);  // "Second attempt chooses a different host"
    EXPECT_EQ(table.FindNodeForAttempt(10, 2), 5u);  // "Exhausted retries return the last"
    // The host set in another order (BasicStability shuffles it): the same table.
    Hosts shuffled = Ports(90, 95);
    std::swap(shuffled[0], shuffled[4]);
    std::swap(shuffled[1], shuffled[3]);
    const Ring again =
        Build({.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 7}}, shuffled);
    for (uint32_t i = 0; i < 7; ++i) {
      EXPECT_EQ(again.node(again.FindNodeByHash64(i)).address.written,
                table.node(table.FindNodeByHash64(i)).address.written);
    }
  });
}

// MaglevLoadBalancerTest.BasicWithHostName (keys "90".."95").
TEST(EnvoyGolden, MaglevHostnameKeys) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring table = Build({.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 7}},
                             HostnameKeys(90, 95));
    ExpectTable(table, {2, 5, 0, 3, 4, 1, 0}, 1);
  });
}

// MaglevLoadBalancerTest.Weighted: weights 1 and 2 in a table of 17.
TEST(EnvoyGolden, MaglevWeighted) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring table = Build({.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 17}},
                             {{"127.0.0.1:90", 1}, {"127.0.0.1:91", 2}});
    ExpectTable(table, {1, 0, 0, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 1, 0, 1}, 3);
  });
}

// A table smaller than the host set, which Envoy builds (maglev_lb.cc
// OriginalMaglevTable::constructImplementationInternals: iteration 1 walks
// the hosts in key order and stops when the table is full, every host's
// target starting at 0): the first table_size hosts in key order get one
// entry each, whatever their weights, and the rest none. Not one of Envoy's
// tests: the entries are tests/oracles/models.py envoy_maglev's, an
// independent model of the same fill (tests/data/PROVENANCE.md).
TEST(EnvoyGolden, MaglevTableSmallerThanTheHosts) {
  testing::ForEachTarget([&](const std::string&) {
    const Ring five =
        Build({.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 5}}, Ports(90, 95));
    ExpectTable(five, {2, 3, 0, 1, 4}, 2);  // :95, last in key order, has no entry
    // Weights 1, 2, 3 in a table of 2: :92, the heaviest, is third in key order.
    const Ring two = Build({.flavor = Flavor::kEnvoyMaglev, .maglev = {.table_size = 2}},
                           {{"127.0.0.1:92", 3}, {"127.0.0.1:91", 2}, {"127.0.0.1:90", 1}});
    ExpectTable(two, {1, 2}, 3);
  });
}

}  // namespace
}  // namespace chash
