// The other programs' rings (haproxy, ketama-md5, varnish-shard, envoy-ring,
// envoy-maglev) against their reference models (tests/reference/
// reference_programs.h: each program's own loops, quirks included), on
// every SIMD target: points, key hashes, single and batch lookups, walks,
// retries, masks, BuildAvailableRing and bounded loads
// (fuzz/program_case.cc compares them all). Random cases from the fuzzer's
// decoder, then the cases random inputs rarely reach: colliding points
// under each program's tie rule, Varnish's two-point ring and its
// bisection on a key equal to a shared point.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "program_case.h"
#include "test_util.h"

namespace chash {
namespace {

using fuzz::CompareProgramCase;
using fuzz::ProgramCase;
using reference::ProgramServer;

void ExpectAgree(const ProgramCase& c) {
  uint64_t checks = 0;
  EXPECT_EQ(CompareProgramCase(c, &checks), "") << c.Describe();
}

TEST(ProgramDifferential, RandomCases) {
  std::mt19937_64 rng(20261203);
  const size_t cases = testing::Scaled(1500, 50);
  size_t built = 0;
  for (size_t i = 0; i < cases; ++i) {
    std::string bytes(64 + rng() % 700, '\0');
    for (char& b : bytes) b = static_cast<char>(rng());
    const ProgramCase c =
        fuzz::DecodeProgramCase(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    uint64_t checks = 0;
    const std::string difference = CompareProgramCase(c, &checks);
    ASSERT_EQ(difference, "") << c.Describe();
    built += checks > 0 ? 1 : 0;
  }
  EXPECT_GT(built, cases / 5) << "too few cases built a ring to compare";
}

ProgramCase Fleet(const RingOptions& options, size_t servers, uint32_t weight,
                  uint64_t max_points = uint64_t{1} << 22) {
  ProgramCase c;
  c.options = options;
  c.options.max_points = max_points;
  for (size_t i = 0; i < servers; ++i) {
    ProgramServer server;
    server.address = "10.0." + std::to_string(i / 256) + "." + std::to_string(i % 256) + ":11212";
    server.weight = weight;
    c.servers.push_back(server);
    c.up.push_back(i % 3 != 1);
    c.loads.push_back(static_cast<uint32_t>(i % 7));
  }
  c.capacity = 4;
  for (int k = 0; k < 40; ++k) c.keys.push_back("/key/" + std::to_string(k * 7919));
  c.keys.push_back("");
  c.keys.push_back("\xff\x80 non-ascii");
  return c;
}

TEST(ProgramDifferential, EveryVariantOnALargerFleet) {
  const RingOptions variants[] = {
      {.flavor = Flavor::kHaproxy},
      {.flavor = Flavor::kHaproxy,
       .haproxy = {.hash_function = HaproxyHash::kWt6, .avalanche = false}},
      {.flavor = Flavor::kHaproxy,
       .haproxy = {.hash_function = HaproxyHash::kCrc32,
                   .server_key = HaproxyServerKey::kIdUnfixed30}},
      {.flavor = Flavor::kKetamaMd5},
      {.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kLibmemcachedUnweighted}},
      {.flavor = Flavor::kKetamaMd5,
       .ketama = {.variant = KetamaVariant::kLibmemcachedUnweighted,
                  .key_hash = KetamaKeyHash::kMd5}},
      {.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kTwemproxy}},
      {.flavor = Flavor::kKetamaMd5,
       .ketama = {.variant = KetamaVariant::kTwemproxy, .key_hash = KetamaKeyHash::kHsieh}},
      {.flavor = Flavor::kKetamaMd5,
       .ketama = {.variant = KetamaVariant::kTwemproxy,
                  .key_hash = KetamaKeyHash::kCrc16,
                  .hash_tag = {'{', '}'}}},
      {.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kLibketama}},
      {.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kLibmemcachedSpy}},
      {.flavor = Flavor::kKetamaMd5,
       .ketama = {.variant = KetamaVariant::kLibmemcachedSpyWeighted,
                  .key_hash = KetamaKeyHash::kMurmur3}},
      {.flavor = Flavor::kVarnishShard},
      {.flavor = Flavor::kEnvoyRing},
      {.flavor = Flavor::kEnvoyRing, .envoy_ring = {.hash_function = EnvoyHash::kMurmurHash2}},
      {.flavor = Flavor::kEnvoyMaglev},
  };
  for (const RingOptions& options : variants) {
    ProgramCase c = Fleet(options, 100, 1);
    for (size_t i = 0; i < c.servers.size(); i += 9) c.servers[i].weight = 3;
    if (options.flavor == Flavor::kKetamaMd5 &&
        (options.ketama.variant == KetamaVariant::kLibmemcachedUnweighted ||
         options.ketama.variant == KetamaVariant::kLibmemcachedSpy)) {
      for (ProgramServer& server : c.servers) server.weight = 1;
    }
    if (options.ketama.hash_tag[0] != '\0') {
      c.keys.push_back("user:{1234}:profile");
      c.keys.push_back("{}empty-tag{x}");
      c.keys.push_back("open{only");
    }
    ExpectAgree(c);
  }
}

// HAProxy 2.x: ids congruent mod 2^20 make the same points (id x 4096
// wraps); the tree keeps both, the older first: the next point of a key is
// the older server's, the point before it the newer's.
TEST(ProgramDifferential, HaproxyCollidingIds) {
  ProgramCase c = Fleet({.flavor = Flavor::kHaproxy}, 12, 2);
  c.servers[3].server_id = 7;
  c.servers[8].server_id = 7 + (1u << 20);
  c.servers[5].server_id = 9;
  c.servers[10].server_id = 9 + (2u << 20);
  c.servers[10].weight = 1;  // a subset of the other's points
  ExpectAgree(c);
  c.up.assign(c.servers.size(), true);
  c.up[3] = false;  // the older one down: the newer one answers both sides
  ExpectAgree(c);
}

// Varnish: a ring of two points answers its second point for every key;
// under a mask, so does a subset of two points.
TEST(ProgramDifferential, VarnishTwoPoints) {
  ProgramCase c = Fleet({.flavor = Flavor::kVarnishShard, .varnish = {.replicas = 1}}, 2, 1);
  c.up = {true, true};
  ExpectAgree(c);
  ProgramCase three = Fleet({.flavor = Flavor::kVarnishShard, .varnish = {.replicas = 1}}, 3, 1);
  three.up = {true, false, true};
  ExpectAgree(three);
}

// Varnish with shared points, and probes exactly on them (its bisection
// may return a later one of them). Varnish hashes a backend's name and the
// point's number with nothing between, so backends named be1 and be11
// share points: "be1" "10" and "be11" "0" are one string. Every fleet
// named name1..nameN with N >= 11 has such points.
TEST(ProgramDifferential, VarnishSharedPoints) {
  ProgramCase c = Fleet({.flavor = Flavor::kVarnishShard}, 150, 1);
  for (size_t i = 0; i < c.servers.size(); ++i) c.servers[i].address = "be" + std::to_string(i);
  c.keys.resize(5);
  ExpectAgree(c);
  for (size_t i = 0; i < c.up.size(); ++i) c.up[i] = i % 5 != 2;
  ExpectAgree(c);
}

// Envoy hashes a host without a hash key or hostname by its address as
// Envoy prints it (inet_ntop's text): [2001:db8::0]:14650 hashes as
// [2001:db8::]:14650. A fuzzer finding: the model hashed the text as
// written, the engine as Envoy prints it.
TEST(ProgramDifferential, EnvoyHashesTheAddressAsEnvoyPrintsIt) {
  for (const RingOptions& options :
       {RingOptions{.flavor = Flavor::kEnvoyRing}, RingOptions{.flavor = Flavor::kEnvoyMaglev}}) {
    ProgramCase c = Fleet(options, 7, 1);
    c.servers[0].address = "[2001:db8::0]:14650";
    c.servers[1].address = "[2001:DB8:0:0:0:0:0:1]:080";
    c.servers[2].address = "[fe80::1%007]:80";
    c.servers[3].address = "[fe80::2%0]:80";
    c.servers[4].address = "[::ffff:10.0.0.1]:80";
    c.servers[5].address = "[fe80::3%eth0]:80";  // not numeric: hashed as written
    c.servers[6].address = "10.0.0.1";           // no port: hashed as written
    ExpectAgree(c);
  }
}

}  // namespace
}  // namespace chash
