#include "seeds.h"

#include <algorithm>
#include <cstring>
#include <string_view>

#include "address_model.h"
#include "byte_checks.h"
#include "chash/address.h"
#include "chash/crc32.h"
#include "chash/failover.h"
#include "chash/servers_file.h"
#include "chash/snapshot.h"
#include "points_case.h"
#include "program_case.h"
#include "reference/reference_ring.h"
#include "ring_case.h"
#include "snapshot/format.h"
#include "snapshot_check.h"
#include "state_record_check.h"

namespace chash::fuzz {
namespace {

using reference::ReferenceRing;
using Multiple = RingCaseWriter::Multiple;
using RingCap = RingCaseWriter::Cap;
using Nodes = PointsCaseWriter::Nodes;
using Rank = PointsCaseWriter::Rank;
using PointsCap = PointsCaseWriter::Cap;

const uint8_t* Data(const std::string& bytes) {
  return reinterpret_cast<const uint8_t*>(bytes.data());
}

std::string CodeText(StatusCode code) { return std::string(StatusCodeName(code)); }

// ---- ring_diff -------------------------------------------------------------------------

// Colliding nodes found by `chash_fuzz_seeds --find-collisions`: their
// 160-point chains (weight 1; nginx, pingora v1, or v2 with multiple 160)
// share the hash given.
constexpr uint32_t kPairHash = 0x00012352u;    // 10.0.32.117:80, 10.0.74.104:80
constexpr uint32_t kMixedHash = 0x000141AEu;   // 10.0.55.128:80, [2001:db8::26b8]:80
constexpr uint32_t kTripleHash = 0x2075F177u;  // 10.0.95.12, 10.0.119.179, 10.0.132.115 :80

Ring EngineRing(const RingCase& c) {
  RingBuilder builder(
      {.flavor = c.flavor, .point_multiple = c.point_multiple, .max_points = c.max_points});
  for (const auto& server : c.servers) {
    if (!builder.Add(server.address, server.weight).ok()) return Ring();
  }
  Result<Ring> ring = std::move(builder).Build();
  return ring.ok() ? std::move(ring).value() : Ring();
}

using RingExpectation = std::function<std::string(const RingCase&, const RingOutcome&)>;

std::function<std::string(const std::string&)> RingCheck(StatusCode code,
                                                         RingExpectation more = nullptr) {
  return [code, more](const std::string& bytes) -> std::string {
    const RingCase c = DecodeRingCase(Data(bytes), bytes.size());
    const RingOutcome outcome = RunRingDiff(c);
    if (outcome.code != code) {
      return "build gave " + CodeText(outcome.code) + ", expected " + CodeText(code);
    }
    return more ? more(c, outcome) : "";
  };
}

RingExpectation Points(uint64_t points, uint64_t collisions) {
  return [=](const RingCase&, const RingOutcome& o) -> std::string {
    if (o.points != points || o.collisions != collisions) {
      return "ring has " + std::to_string(o.points) + " points and " +
             std::to_string(o.collisions) + " collisions, expected " + std::to_string(points) +
             " and " + std::to_string(collisions);
    }
    return "";
  };
}

// The point at `hash` (where several nodes collide) belongs to node `winner`.
RingExpectation Winner(uint32_t hash, uint32_t winner, uint64_t collisions) {
  return [=](const RingCase& c, const RingOutcome& o) -> std::string {
    if (o.collisions != collisions) {
      return std::to_string(o.collisions) + " collisions, expected " + std::to_string(collisions);
    }
    const Ring ring = EngineRing(c);
    if (ring.WalkFromHash(hash).hash() != hash) return "no point at the colliding hash";
    const uint32_t got = ring.FindNodeByHash(hash);
    if (got != winner) {
      return "node " + std::to_string(got) + " owns the colliding hash, expected node " +
             std::to_string(winner);
    }
    return "";
  };
}

// Under the seed's mask, `hash` is answered by `node`.
RingExpectation MaskedAnswer(uint32_t hash, uint32_t node) {
  return [=](const RingCase& c, const RingOutcome&) -> std::string {
    const uint32_t got = FindAvailableNodeByHash(EngineRing(c), c.mask.mask, hash);
    return got == node ? "" : "masked lookup gave node " + std::to_string(got);
  };
}

std::string WrapKey(const RingCase& c, uint32_t* largest) {
  const auto ref = ReferenceRing::Build(c.flavor, c.point_multiple, c.servers, c.max_points);
  *largest = ref.value().points().back().hash;
  for (int i = 0;; ++i) {
    const std::string key = "wrap-" + std::to_string(i);
    if (Crc32(key) > *largest) return key;
  }
}

void AddRingSeeds(std::vector<Seed>& seeds) {
  auto add = [&](std::string name, const RingCaseWriter& w, auto check) {
    seeds.push_back({"ring_diff", std::move(name), w.Bytes(), check});
  };
  const std::array<uint8_t, 4> kA{10, 0, 32, 117}, kB{10, 0, 74, 104};

  add("empty_ring", RingCaseWriter(Flavor::kNginx).Key("/").Key("").Hash(0).Hash(0xFFFFFFFFu),
      RingCheck(StatusCode::kOk, Points(0, 0)));
  add("empty_ring_drained_nodes",
      RingCaseWriter(Flavor::kPingoraV1)
          .Ipv4({10, 0, 0, 1}, 443, 0)
          .Ipv4({10, 0, 0, 2}, 443, 0)
          .Ipv6({0x2001, 0xdb8, 0, 0, 0, 0, 0, 1}, 443, 0)
          .Key("k"),
      RingCheck(StatusCode::kOk, [](const RingCase&, const RingOutcome& o) -> std::string {
        return o.points == 0 && o.nodes == 3 ? "" : "expected 3 nodes and no point";
      }));
  add("single_point",
      RingCaseWriter(Flavor::kPingoraV2, Multiple::kSmall, 1)
          .Ipv4({192, 168, 1, 1}, 8080, 1)
          .Key("a")
          .Key("b")
          .Hash(0)
          .Hash(0xFFFFFFFFu),
      RingCheck(StatusCode::kOk, Points(1, 0)));
  add("single_node_nginx",
      RingCaseWriter(Flavor::kNginx).Text("127.0.0.1:8080", 1).Key("/index.html"),
      RingCheck(StatusCode::kOk, Points(160, 0)));
  {
    RingCaseWriter w(Flavor::kNginx);
    w.Ipv4({10, 0, 0, 1}, 443, 2).Ipv4({10, 0, 0, 2}, 443, 1);
    const RingCase c = DecodeRingCase(Data(w.Bytes()), w.Bytes().size());
    uint32_t largest = 0;
    const std::string key = WrapKey(c, &largest);
    w.Key(key).Hash(largest).Hash(largest + 1).Hash(0xFFFFFFFFu);
    add("wrap_around", w,
        RingCheck(StatusCode::kOk, [key](const RingCase& rc, const RingOutcome&) -> std::string {
          const Ring ring = EngineRing(rc);
          uint32_t top = 0;
          for (PointCursor p = ring.Begin(); p.hash() >= top; p.Advance()) top = p.hash();
          if (Crc32(key) <= top) return "the key is not above the largest point";
          return ring.FindNode(key) == ring.Begin().node() ? "" : "no wrap to the first point";
        }));
  }

  // Flavors and address forms.
  {
    RingCaseWriter w(Flavor::kPingoraV1);
    for (uint8_t form = 0; form < kIpv6TextForms; ++form) {
      w.Ipv6({0x2001, 0xdb8, 0, 0, form, 0, 0, 1}, static_cast<uint16_t>(7000 + form), 1, form);
    }
    w.Ipv6({0, 0, 0, 0, 0, 0xFFFF, 0x0102, 0x0304}, 80, 1, 7);  // ::ffff:1.2.3.4
    w.Ipv6({0, 0, 0, 0, 0, 0, 0, 0}, 1, 1, 0);                  // ::
    add("ipv6_text_forms_v1", w.Key("x").Key("y"), RingCheck(StatusCode::kOk));
  }
  add("ipv6_respelled_duplicate_v2",
      RingCaseWriter(Flavor::kPingoraV2, Multiple::kSmall, 16)
          .Ipv6({0x2001, 0xdb8, 0, 0, 0, 0, 0, 0xabcd}, 443, 1, 0)
          .Respell(0, 2, 1),  // 2001:0DB8:0000:...:ABCD, the same socket address
      RingCheck(StatusCode::kDuplicateNode));
  add("ipv6_brackets_nginx",
      RingCaseWriter(Flavor::kNginx)
          .Text("[::1]:7777", 1)
          .Text("[::1]:7778", 1)
          .Text("[::1]", 1)
          .Ipv6({0x2001, 0xdb8, 0, 0, 0, 0, 0, 1}, 0, 1, 1, false)
          .Key("/a")
          .Key("/b"),
      RingCheck(StatusCode::kOk, Points(640, 0)));
  add("names_and_unix_nginx",
      RingCaseWriter(Flavor::kNginx)
          .Name(1, 1)
          .Name(2, 2, 1, 8080)
          .Name(3, 1, 2)
          .Unix(1, 1)
          .Unix(2, 1, 1)
          .Text("localhost", 1)
          .Key("k"),
      RingCheck(StatusCode::kOk));
  add("unix_path_too_long_nginx", RingCaseWriter(Flavor::kNginx).Unix(1, 1, 2, 120),
      RingCheck(StatusCode::kBadAddress));
  add("pingora_rejects_names", RingCaseWriter(Flavor::kPingoraV1).Name(1, 1, 1, 80),
      RingCheck(StatusCode::kBadAddress));
  add("bad_address_empty", RingCaseWriter(Flavor::kNginx).Text("", 1),
      RingCheck(StatusCode::kBadAddress));
  add("duplicate_text_nginx",
      RingCaseWriter(Flavor::kNginx).Text("10.0.0.1:80", 1).Text("10.0.0.1:80", 1),
      RingCheck(StatusCode::kDuplicateNode));
  add("port_spellings_distinct_nginx",
      RingCaseWriter(Flavor::kNginx).Text("10.0.0.1:80", 1).Text("10.0.0.1:080", 1),
      RingCheck(StatusCode::kOk, Points(320, 0)));
  add("port_spellings_duplicate_v1",
      RingCaseWriter(Flavor::kPingoraV1).Text("10.0.0.1:80", 1).Text("10.0.0.1:080", 1),
      RingCheck(StatusCode::kDuplicateNode));

  // Options.
  add("bad_multiple_nginx", RingCaseWriter(Flavor::kNginx, Multiple::kU32, 100).Text("a", 1),
      RingCheck(StatusCode::kBadMultiple));
  add("bad_multiple_zero_v2", RingCaseWriter(Flavor::kPingoraV2, Multiple::kU16, 0),
      RingCheck(StatusCode::kBadMultiple));
  add("bad_cap_zero",
      RingCaseWriter(Flavor::kNginx, Multiple::kDefault, 0, RingCap::kU16, 0).Text("a", 1),
      RingCheck(StatusCode::kBadArgument));
  add("bad_cap_over_hard_max",
      RingCaseWriter(Flavor::kPingoraV1, Multiple::kDefault, 0, RingCap::kInvalid, 0),
      RingCheck(StatusCode::kBadArgument));

  // Overflows.
  add("overflow_node_ids_65537",
      RingCaseWriter(Flavor::kPingoraV1).Bulk(0, 0, true, 0).Ipv4({10, 9, 9, 9}, 443, 0),
      RingCheck(StatusCode::kTooManyNodes));
  add("max_nodes_65536_last_id_owns_points",
      RingCaseWriter(Flavor::kNginx).Bulk(0, 1, true, 0).Ipv4({10, 9, 9, 9}, 443, 1).Key("k"),
      RingCheck(StatusCode::kOk, [](const RingCase&, const RingOutcome& o) -> std::string {
        return o.nodes == 65536 && o.points == 160 ? "" : "expected 65,536 nodes, 160 points";
      }));
  add("overflow_weight_x_multiple_nginx",
      RingCaseWriter(Flavor::kNginx).Ipv4({10, 0, 0, 1}, 80, 26843546),  // x160 > 2^32-1
      RingCheck(StatusCode::kTooManyPoints));
  add("weight_x_multiple_at_u32_max_over_cap",
      RingCaseWriter(Flavor::kNginx).Ipv4({10, 0, 0, 1}, 80, 26843545),  // x160 <= 2^32-1
      RingCheck(StatusCode::kTooManyPoints));
  add("overflow_weight_x_multiple_v2",
      RingCaseWriter(Flavor::kPingoraV2, Multiple::kU32, 65537).Ipv4({10, 0, 0, 1}, 80, 65536),
      RingCheck(StatusCode::kTooManyPoints));
  add("overflow_total_points",
      RingCaseWriter(Flavor::kNginx, Multiple::kDefault, 0, RingCap::kU16, 1000)
          .Ipv4({10, 0, 0, 1}, 80, 3)
          .Ipv4({10, 0, 0, 2}, 80, 3)
          .Ipv4({10, 0, 0, 3}, 80, 3),
      RingCheck(StatusCode::kTooManyPoints));
  add("total_points_at_cap",
      RingCaseWriter(Flavor::kNginx, Multiple::kDefault, 0, RingCap::kU16, 480)
          .Ipv4({10, 0, 0, 1}, 80, 3),
      RingCheck(StatusCode::kOk, Points(480, 0)));

  // Collisions and tie-breaks (nodes from --find-collisions).
  add("collide_2way_nginx", RingCaseWriter(Flavor::kNginx).Ipv4(kA, 80, 1).Ipv4(kB, 80, 1),
      RingCheck(StatusCode::kOk, Winner(kPairHash, 0, 1)));
  add("collide_3way_v1",
      RingCaseWriter(Flavor::kPingoraV1)
          .Ipv4({10, 0, 132, 115}, 80, 1)
          .Ipv4({10, 0, 95, 12}, 80, 1)
          .Ipv4({10, 0, 119, 179}, 80, 1),
      RingCheck(StatusCode::kOk, Winner(kTripleHash, 0, 2)));
  add("collide_3way_v2_address_order",
      RingCaseWriter(Flavor::kPingoraV2)
          .Ipv4({10, 0, 132, 115}, 80, 1)
          .Ipv4({10, 0, 119, 179}, 80, 1)
          .Ipv4({10, 0, 95, 12}, 80, 1),
      RingCheck(StatusCode::kOk, Winner(kTripleHash, 2, 2)));
  // The same two nodes, the larger address first: nginx and v1 keep the
  // first configured, v2 the smaller address.
  add("tie_config_order_v1", RingCaseWriter(Flavor::kPingoraV1).Ipv4(kB, 80, 1).Ipv4(kA, 80, 1),
      RingCheck(StatusCode::kOk, Winner(kPairHash, 0, 1)));
  add("tie_config_order_nginx", RingCaseWriter(Flavor::kNginx).Ipv4(kB, 80, 1).Ipv4(kA, 80, 1),
      RingCheck(StatusCode::kOk, Winner(kPairHash, 0, 1)));
  add("tie_address_order_v2", RingCaseWriter(Flavor::kPingoraV2).Ipv4(kB, 80, 1).Ipv4(kA, 80, 1),
      RingCheck(StatusCode::kOk, Winner(kPairHash, 1, 1)));
  // IPv6 listed first: v2 still picks the IPv4 node (every IPv4 address
  // sorts before every IPv6 one); v1 keeps the IPv6 node.
  add("tie_ipv4_before_ipv6_v2",
      RingCaseWriter(Flavor::kPingoraV2)
          .Ipv6({0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x26b8}, 80, 1)
          .Ipv4({10, 0, 55, 128}, 80, 1),
      RingCheck(StatusCode::kOk, Winner(kMixedHash, 1, 1)));
  // Failover (failover.h): the winner of a collision down, its loser answers.
  add("mask_collision_winner_down",
      RingCaseWriter(Flavor::kNginx)
          .Ipv4(kB, 80, 1)
          .Ipv4(kA, 80, 1)
          .Key("k")
          .Mask({.which = 2,
                 .id = 0,
                 .capacity_mode = 3,
                 .capacity = 2,
                 .factor_mode = 8,
                 .factor_thousandths = 250}),
      RingCheck(StatusCode::kOk, MaskedAnswer(kPairHash, 1)));
  add("mask_none_available",
      RingCaseWriter(Flavor::kPingoraV1)
          .Ipv4({10, 0, 0, 1}, 80, 1)
          .Ipv4({10, 0, 0, 2}, 80, 1)
          .Key("k")
          .Mask({.which = 1, .factor_mode = 8, .factor_thousandths = 100}),
      RingCheck(StatusCode::kOk, MaskedAnswer(0, Ring::kNoNode)));
  add("mask_smaller_than_ring",
      RingCaseWriter(Flavor::kPingoraV2, Multiple::kSmall, 8)
          .Ipv4({10, 0, 0, 1}, 80, 1)
          .Ipv4({10, 0, 0, 2}, 80, 1)
          .Ipv4({10, 0, 0, 3}, 80, 1)
          .Key("k")
          .Mask({.which = 0, .size_mode = 1, .size_delta = 0}),  // ids 0, 1 only
      RingCheck(StatusCode::kOk, [](const RingCase& c, const RingOutcome&) -> std::string {
        for (uint32_t h = 0; h < 64; ++h) {
          if (FindAvailableNodeByHash(EngineRing(c), c.mask.mask, h << 26) == 2) {
            return "node 2 is past the mask but answered";
          }
        }
        return c.mask.mask.size() == 2 ? "" : "the mask does not cover 2 ids";
      }));
  add("bounded_load_one_node_full",
      RingCaseWriter(Flavor::kNginx)
          .Ipv4({10, 0, 0, 1}, 80, 1)
          .Ipv4({10, 0, 0, 2}, 80, 1)
          .Ipv4({10, 0, 0, 3}, 80, 1)
          .Key("k")
          .Mask({.which = 0,
                 .loads_mode = 0,
                 .load_seed = 7,
                 .capacity_mode = 3,
                 .capacity = 2,
                 .factor_mode = 8,
                 .factor_thousandths = 250}),
      RingCheck(StatusCode::kOk));
  // Found by fuzz_ring_diff: BoundedLoadCapacity gave 2^64 - 1 for any
  // factor over 1e9 (failover_test BoundedLoad.CapacityRuleForHugeFactors).
  add("bounded_load_huge_factor",
      RingCaseWriter(Flavor::kNginx)
          .Ipv4({10, 0, 0, 1}, 80, 1)
          .Key("k")
          .Mask({.which = 0, .loads_mode = 2 << 2, .factor_mode = 5}),
      RingCheck(StatusCode::kOk, [](const RingCase& c, const RingOutcome&) -> std::string {
        return BoundedLoadCapacity(0, 1, c.mask.balance_factor) == 1000000000000u
                   ? ""
                   : "capacity of factor 1e12 is not 1e12";
      }));
  add("tie_ipv6_config_order_v1",
      RingCaseWriter(Flavor::kPingoraV1)
          .Ipv6({0x2001, 0xdb8, 0, 0, 0, 0, 0, 0x26b8}, 80, 1)
          .Ipv4({10, 0, 55, 128}, 80, 1),
      RingCheck(StatusCode::kOk, Winner(kMixedHash, 0, 1)));
}

// ---- points_diff ------------------------------------------------------------------------

std::function<std::string(const std::string&)> PointsCheck(StatusCode code, int64_t points = -1,
                                                           int64_t collisions = -1) {
  return [=](const std::string& bytes) -> std::string {
    const PointsOutcome o = RunPointsDiff(DecodePointsCase(Data(bytes), bytes.size()));
    if (o.code != code) return "build gave " + CodeText(o.code) + ", expected " + CodeText(code);
    if ((points >= 0 && o.points != static_cast<uint64_t>(points)) ||
        (collisions >= 0 && o.collisions != static_cast<uint64_t>(collisions))) {
      return "ring has " + std::to_string(o.points) + " points and " +
             std::to_string(o.collisions) + " collisions";
    }
    return "";
  };
}

// The node answering for `hash` in the seed's engine ring.
std::function<std::string(const std::string&)> PointsWinner(uint32_t hash, uint32_t winner) {
  return [=](const std::string& bytes) -> std::string {
    const PointsCase c = DecodePointsCase(Data(bytes), bytes.size());
    if (RunPointsDiff(c).code != StatusCode::kOk) return "not built";
    const auto ring = BuildRingFromPoints(c.num_nodes, c.points, c.tie_rank, c.max_points);
    const uint32_t got = ring.value().FindNodeByHash(hash);
    return got == winner ? "" : "node " + std::to_string(got) + " won the tie";
  };
}

// Under the seed's mask, `hash` is answered by `node`.
std::function<std::string(const std::string&)> MaskedPointsAnswer(uint32_t hash, uint32_t node) {
  return [=](const std::string& bytes) -> std::string {
    const PointsCase c = DecodePointsCase(Data(bytes), bytes.size());
    if (RunPointsDiff(c).code != StatusCode::kOk) return "not built";
    const auto ring = BuildRingFromPoints(c.num_nodes, c.points, c.tie_rank, c.max_points);
    const uint32_t got = FindAvailableNodeByHash(ring.value(), c.mask.mask, hash);
    return got == node ? "" : "masked lookup gave node " + std::to_string(got);
  };
}

void AddPointsSeeds(std::vector<Seed>& seeds) {
  auto add = [&](std::string name, const PointsCaseWriter& w, auto check) {
    seeds.push_back({"points_diff", std::move(name), w.Bytes(), check});
  };
  add("empty_ring", PointsCaseWriter(Nodes::kSmall16, 3).Hash(0).Hash(12345),
      PointsCheck(StatusCode::kOk, 0, 0));
  add("empty_ring_no_nodes", PointsCaseWriter(Nodes::kZero, 0), PointsCheck(StatusCode::kOk, 0, 0));
  add("single_point", PointsCaseWriter(Nodes::kOne, 1).One(0x80000000u, 0).Hash(0x7FFFFFFFu),
      PointsCheck(StatusCode::kOk, 1, 0));
  add("single_point_hash_0", PointsCaseWriter(Nodes::kOne, 1).Extreme(0, 0),
      PointsCheck(StatusCode::kOk, 1, 0));
  add("single_point_hash_max", PointsCaseWriter(Nodes::kOne, 1).Extreme(3, 0),
      PointsCheck(StatusCode::kOk, 1, 0));
  add("extremes_0_1_max",
      PointsCaseWriter(Nodes::kTiny4, 4).Extreme(0, 0).Extreme(1, 1).Extreme(2, 2).Extreme(3, 3),
      PointsCheck(StatusCode::kOk, 4, 0));
  add("wrap_around",
      PointsCaseWriter(Nodes::kTwo, 2).One(1000, 1).One(0xF0000000u, 0).Hash(0xF0000001u),
      PointsWinner(0xF0000001u, 1));
  add("collide_2way_config_order",
      PointsCaseWriter(Nodes::kTwo, 2).EqualRun(0x12345678u, {1, 0}).One(7, 1),
      PointsWinner(0x12345678u, 0));
  add("collide_3way_config_order",
      PointsCaseWriter(Nodes::kSmall16, 3).EqualRun(0x12345678u, {2, 1, 0}).One(9, 2),
      PointsWinner(0x12345678u, 0));
  add("collide_all_equal", PointsCaseWriter(Nodes::kSmall16, 16).AllEqual(0xABCDEF01u, 16, 0),
      PointsCheck(StatusCode::kOk, 1, 15));
  add("collide_many_nodes_one_hash",
      PointsCaseWriter(Nodes::k256Plus, 300).AllEqual(0u, 256, 0).AllEqual(0xFFFFFFFFu, 256, 40),
      PointsCheck(StatusCode::kOk, 2, 510));
  add("runs_of_equal_hashes",
      PointsCaseWriter(Nodes::kSmall16, 8)
          .Consecutive(0xFFFFFFF8u, {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7})  // wraps
          .EqualRun(0xFFFFFFFCu, {7, 6, 5})
          .Repeat(0, 3)
          .Repeat(3, 2),
      PointsCheck(StatusCode::kOk, 16, 5));
  add("tie_rank_reversed",
      PointsCaseWriter(Nodes::kSmall16, 3, Rank::kReversed).EqualRun(0x55555555u, {0, 1, 2}),
      PointsWinner(0x55555555u, 2));
  add("tie_rank_swapped",
      PointsCaseWriter(Nodes::kSmall16, 3, Rank::kSwaps)
          .Swap(0, 1)
          .EqualRun(0x55555555u, {0, 1, 2}),
      PointsWinner(0x55555555u, 1));
  add("tie_rank_short", PointsCaseWriter(Nodes::kSmall16, 3, Rank::kBroken).BrokenRank(0).One(1, 0),
      PointsCheck(StatusCode::kBadArgument));
  add("tie_rank_long", PointsCaseWriter(Nodes::kSmall16, 3, Rank::kBroken).BrokenRank(1).One(1, 0),
      PointsCheck(StatusCode::kBadArgument));
  add("tie_rank_out_of_range",
      PointsCaseWriter(Nodes::kSmall16, 3, Rank::kBroken).BrokenRank(2, 1).One(1, 0),
      PointsCheck(StatusCode::kBadArgument));
  add("tie_rank_repeated",
      PointsCaseWriter(Nodes::kSmall16, 3, Rank::kBroken).BrokenRank(3, 0).One(1, 0),
      PointsCheck(StatusCode::kBadArgument));
  add("node_id_65535_accepted",
      PointsCaseWriter(Nodes::k65536, 0)
          .One(0x100u, 65535)
          .One(0x200u, 0)
          .EqualRun(0x300u, {65535, 1}),
      PointsCheck(StatusCode::kOk, 3, 1));
  add("node_id_65535_rejected_with_65535_nodes",
      PointsCaseWriter(Nodes::k65535, 0).One(0x100u, 65535), PointsCheck(StatusCode::kBadNodeId));
  add("overflow_node_id_65536", PointsCaseWriter(Nodes::k65536, 0).One(0x100u, 65536),
      PointsCheck(StatusCode::kBadNodeId));
  add("overflow_node_id_u32_max", PointsCaseWriter(Nodes::kTwo, 2).BadNode(5, 4),
      PointsCheck(StatusCode::kBadNodeId));
  add("node_id_equals_count", PointsCaseWriter(Nodes::kSmall16, 5).One(1, 0).BadNode(5, 0),
      PointsCheck(StatusCode::kBadNodeId));
  add("overflow_node_count_65537", PointsCaseWriter(Nodes::k65537, 0).One(1, 0),
      PointsCheck(StatusCode::kTooManyNodes));
  add("overflow_node_count_u32", PointsCaseWriter(Nodes::kU32Over, 0xFFFFFFFFu),
      PointsCheck(StatusCode::kTooManyNodes));
  add("overflow_total_points",
      PointsCaseWriter(Nodes::kSmall16, 2, Rank::kNone, PointsCap::kRelative)
          .One(1, 0)
          .One(2, 1)
          .One(3, 0)
          .CapDelta(3),  // cap = points - 1
      PointsCheck(StatusCode::kTooManyPoints));
  add("total_points_at_cap",
      PointsCaseWriter(Nodes::kSmall16, 2, Rank::kNone, PointsCap::kRelative)
          .One(1, 0)
          .One(1, 1)
          .One(3, 0)
          .CapDelta(0),  // cap = points
      PointsCheck(StatusCode::kOk, 2, 1));
  // Failover: the best-ranked available contender answers at a collision.
  add("mask_all_equal_first_down",
      PointsCaseWriter(Nodes::kSmall16, 16)
          .AllEqual(0xABCDEF01u, 16, 0)
          .Mask({.which = 2, .id = 0}),
      MaskedPointsAnswer(0xABCDEF01u, 1));
  add("mask_reversed_rank_winner_down",
      PointsCaseWriter(Nodes::kSmall16, 3, Rank::kReversed)
          .EqualRun(0x55555555u, {0, 1, 2})
          .Mask({.which = 2, .id = 2}),
      MaskedPointsAnswer(0x55555555u, 1));
  add("mask_only_one_up",
      PointsCaseWriter(Nodes::kSmall16, 8)
          .Consecutive(0x10000000u, {0, 1, 2, 3, 4, 5, 6, 7})
          .Mask({.which = 3, .id = 5}),
      MaskedPointsAnswer(0, 5));
  add("cap_zero", PointsCaseWriter(Nodes::kSmall16, 2, Rank::kNone, PointsCap::kU8, 0),
      PointsCheck(StatusCode::kBadArgument));
  add("cap_over_hard_max",
      PointsCaseWriter(Nodes::kSmall16, 2, Rank::kNone, PointsCap::kRelative)
          .One(1, 0)
          .CapDelta(255),
      PointsCheck(StatusCode::kBadArgument));
}

// ---- crc32 -------------------------------------------------------------------------------

std::string CrcInput(uint8_t h, uint32_t seed, uint16_t split, std::string_view data) {
  FuzzWriter w;
  w.U8(h);
  if ((h >> 6) == 1 || (h >> 6) == 3) w.U32(seed);
  w.U16(split).Bytes(data);
  return w.bytes();
}

std::function<std::string(const std::string&)> CrcCheck(uint32_t expected_crc_of_data = 0,
                                                        bool check_value = false) {
  return [=](const std::string& bytes) -> std::string {
    if (RunCrc32Check(Data(bytes), bytes.size()) == 0) return "no implementation compared";
    if (check_value) {
      FuzzReader r(Data(bytes), bytes.size());
      r.U8();
      r.U16();
      if (Crc32(r.Rest()) != expected_crc_of_data) return "wrong CRC-32 check value";
    }
    return "";
  };
}

void AddCrcSeeds(std::vector<Seed>& seeds) {
  auto add = [&](std::string name, std::string bytes, auto check) {
    seeds.push_back({"crc32", std::move(name), std::move(bytes), check});
  };
  std::string ramp(4096, '\0');
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = static_cast<char>(i * 7 + (i >> 8));
  add("empty", CrcInput(0, 0, 0, ""), CrcCheck());
  add("one_byte", CrcInput(0, 0, 0, "a"), CrcCheck());
  add("check_value_123456789", CrcInput(0, 0, 4, "123456789"), CrcCheck(0xCBF43926u, true));
  add("initial_crc_ffffffff", CrcInput(2 << 6 | 5, 0, 3, "hello, ring"), CrcCheck());
  add("initial_crc_u32", CrcInput(1 << 6 | 9, 0x12345678u, 100, ramp.substr(0, 300)), CrcCheck());
  add("offset_63_unaligned", CrcInput(63, 0, 17, ramp.substr(0, 200)), CrcCheck());
  add("all_ones_1024", CrcInput(32, 0, 512, std::string(1024, '\xFF')), CrcCheck());
  add("ramp_4096_split", CrcInput(17, 0, 2049, ramp), CrcCheck());
  // Lengths around 16/32/64-byte blocks, for the vector implementations.
  for (const size_t len : {7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257}) {
    add("length_" + std::to_string(len),
        CrcInput(static_cast<uint8_t>(len % 64), 0, static_cast<uint16_t>(len / 3),
                 ramp.substr(len, len)),
        CrcCheck());
  }
}

// ---- parser -------------------------------------------------------------------------------

std::function<std::string(const std::string&)> AddressCheck(bool nginx_ok, bool pingora_ok) {
  return [=](const std::string& bytes) -> std::string {
    RunParserCheck(Data(bytes), bytes.size());
    const std::string_view text = std::string_view(bytes).substr(1);
    if (ParseNginxAddress(text).ok() != nginx_ok) return "nginx acceptance differs";
    if (ParsePingoraAddress(text).ok() != pingora_ok) return "pingora acceptance differs";
    return "";
  };
}

std::function<std::string(const std::string&)> ServersCheck(StatusCode parse_code,
                                                            StatusCode build_code) {
  return [=](const std::string& bytes) -> std::string {
    RunParserCheck(Data(bytes), bytes.size());
    const uint8_t mode = static_cast<uint8_t>(bytes[0]);
    const Flavor flavor = static_cast<Flavor>(((mode >> 1) & 3) % 3);
    const auto entries = ParseServersText(std::string_view(bytes).substr(1), "seed");
    if (entries.status().code() != parse_code) {
      return "parse gave " + entries.status().ToString() + ", expected " + CodeText(parse_code);
    }
    if (!entries.ok()) return "";
    const uint32_t multiple = flavor == Flavor::kPingoraV2 ? 1u + (mode >> 3) : 160u;
    const auto ring = BuildRingFromServers(
        entries.value(), {.flavor = flavor, .point_multiple = multiple, .max_points = 20000},
        "seed");
    if (ring.status().code() != build_code) {
      return "build gave " + ring.status().ToString() + ", expected " + CodeText(build_code);
    }
    return "";
  };
}

void AddParserSeeds(std::vector<Seed>& seeds) {
  struct AddressSeed {
    const char* name;
    const char* text;
    bool nginx_ok, pingora_ok;
  };
  static constexpr AddressSeed kAddresses[] = {
      {"ipv4_port", "10.0.0.1:443", true, true},
      {"ipv4_no_port", "127.0.0.2", true, false},
      {"ipv4_port_leading_zeros", "10.0.0.1:00443", true, true},
      {"ipv4_octet_leading_zeros", "010.0.0.1:80", true, false},
      {"ipv4_nginx_empty_octets", "10..0.1:80", true, false},
      {"ipv4_nginx_all_empty", "...", true, false},
      {"ipv4_octet_256", "10.0.0.256:80", false, false},
      // nginx resolves numeric hosts that are not dotted quads with
      // getaddrinfo; glibc's inet_aton reads "127.1" as 127.0.0.1.
      {"ipv4_three_octets", "127.1:80", true, false},
      {"ipv4_inet_aton_octal", "0377.0.0.1:80", true, false},
      {"ipv4_five_parts", "1.2.3.4.5:80", false, false},
      {"port_0", "10.0.0.1:0", false, true},
      {"port_65535", "10.0.0.1:65535", true, true},
      {"port_65536", "10.0.0.1:65536", false, false},
      {"port_empty", "10.0.0.1:", false, false},
      {"ipv6_loopback", "[::1]:7777", true, true},
      {"ipv6_no_port", "[::1]", true, false},
      {"ipv6_full_upper", "[2001:0DB8:0000:0000:0000:0000:0000:0001]:80", true, true},
      {"ipv6_mapped", "[::ffff:1.2.3.4]:80", true, true},
      {"ipv6_mapped_hex", "[::ffff:102:304]:80", true, true},
      {"ipv6_embedded_ipv4", "[64:ff9b::192.0.2.33]:80", true, true},
      {"ipv6_embedded_ipv4_leading_zero", "[::01.2.3.4]:80", true, false},
      {"ipv6_leading_colon", "[:1::2]:80", true, false},
      // ngx_inet6_addr takes ngx_inet_addr's INADDR_NONE for an error.
      {"ipv6_embedded_broadcast", "[::ffff:255.255.255.255]:80", false, true},
      {"ipv6_trailing_single_group_gap", "[1:2:3:4:5:6:7::]:80", false, true},
      {"ipv6_leading_single_group_gap", "[::2:3:4:5:6:7:8]:80", true, true},
      {"ipv6_two_gaps", "[1::2::3]:80", false, false},
      {"ipv6_five_digit_group", "[1::12345]:80", false, false},
      {"ipv6_scope_id", "[fe80::1%1]:80", false, false},
      {"ipv6_unbracketed", "::1:80", false, false},
      {"ipv6_empty_brackets", "[]:80", false, false},
      {"name", "localhost", true, false},
      {"name_port", "backend-1.example.com:8080", true, false},
      {"name_bad_byte", "back!end:80", false, false},
      {"unix_socket", "unix:/run/app.sock", true, false},
      {"unix_socket_upper", "UNIX:/run/app.sock", true, false},
      {"unix_socket_with_colon", "unix:/run/a:b", true, false},
      {"unix_no_path", "unix:", false, false},
      {"comma", "10.0.0.1:80,", false, false},
      {"hash_sign", "10.0.0.1:80#", false, false},
      {"space", "10.0.0.1 :80", false, false},
      {"empty", "", false, false},
      // Flavor names (ParseFlavor); a host name to nginx.
      {"flavor_name_nginx", "nginx", true, false},
      {"flavor_name_pingora_v1", "pingora-v1", true, false},
      {"flavor_name_pingora_v2", "pingora-v2", true, false},
  };
  for (const AddressSeed& a : kAddresses) {
    seeds.push_back({"parser", std::string("address_") + a.name, std::string(1, '\0') + a.text,
                     AddressCheck(a.nginx_ok, a.pingora_ok)});
  }
  auto servers = [&](const char* name, Flavor flavor, uint8_t multiple_minus_1, std::string text,
                     StatusCode parse, StatusCode build) {
    const char mode = static_cast<char>(1 | static_cast<int>(flavor) << 1 | multiple_minus_1 << 3);
    seeds.push_back({"parser", std::string("servers_") + name, std::string(1, mode) + text,
                     ServersCheck(parse, build)});
  };
  const std::string mixed =
      "# upstream a\r\n10.0.0.1:443 100\r\n\t[::1]:7777   2  # ipv6\r\n\r\n"
      "backend.example:8080\nunix:/run/app.sock 0\n127.0.0.2 3\n";
  servers("nginx_mixed_crlf", Flavor::kNginx, 0, mixed, StatusCode::kOk, StatusCode::kOk);
  servers("pingora_v1_rejects_names", Flavor::kPingoraV1, 0, mixed, StatusCode::kOk,
          StatusCode::kBadAddress);
  servers("pingora_v2", Flavor::kPingoraV2, 15,
          "10.0.0.1:443 5\n[2001:db8::1]:443 5\n[::ffff:10.0.0.1]:443 1\n10.0.0.2:0 0\n",
          StatusCode::kOk, StatusCode::kOk);
  servers("weight_zero_padded", Flavor::kNginx, 0, "10.0.0.1:80 00000000000000000007\n",
          StatusCode::kOk, StatusCode::kOk);
  servers("weight_u32_max_over_cap", Flavor::kPingoraV2, 0, "10.0.0.1:80 4294967295\n",
          StatusCode::kOk, StatusCode::kTooManyPoints);
  servers("weight_over_u32", Flavor::kNginx, 0, "10.0.0.1:80 4294967296\n", StatusCode::kBadWeight,
          StatusCode::kOk);
  servers("weight_not_a_number", Flavor::kNginx, 0, "10.0.0.1:80 1e3\n", StatusCode::kBadWeight,
          StatusCode::kOk);
  servers("three_fields", Flavor::kNginx, 0, "10.0.0.1:80 1 2\n", StatusCode::kBadArgument,
          StatusCode::kOk);
  servers("duplicate_line", Flavor::kPingoraV1, 0, "10.0.0.1:80\n10.0.0.1:80\n", StatusCode::kOk,
          StatusCode::kDuplicateNode);
  servers("empty_file", Flavor::kNginx, 0, "", StatusCode::kOk, StatusCode::kOk);
  servers("comments_only", Flavor::kNginx, 0, "# nothing\n   \n\t# more\n", StatusCode::kOk,
          StatusCode::kOk);
  servers("no_final_newline", Flavor::kNginx, 0, "10.0.0.1:80 2\n10.0.0.2:80", StatusCode::kOk,
          StatusCode::kOk);
}

void AddSnapshotSeeds(std::vector<Seed>& seeds) {
  namespace fmt = internal::snapshot;
  // mode byte 0: the bytes as they are; 1: checksum recomputed first.
  auto add = [&](const char* name, char mode, std::string bytes, std::string expected) {
    auto check = [expected](const std::string& input) {
      const std::string got = RunSnapshotCheck(reinterpret_cast<const uint8_t*>(input.data()),
                                               input.size());
      return got == expected ? std::string() : "expected " + expected + ", got " + got;
    };
    seeds.push_back({"snapshot", name, std::string(1, mode) + bytes, check});
  };
  const std::string nginx = SnapshotSeedBytes(0, 160, 20, 1, false);
  const std::string v1 = SnapshotSeedBytes(1, 160, 30, 0, false);
  const std::string v2 = SnapshotSeedBytes(2, 1, 50, 2, false);
  const std::string signed_v2 = SnapshotSeedBytes(2, 16, 10, 1, true);
  add("valid_nginx_subset", 0, nginx, "accepted");
  add("valid_pingora_v1", 0, v1, "accepted");
  add("valid_pingora_v2_m1_two_subsets", 0, v2, "accepted");
  add("valid_signed", 0, signed_v2, "accepted");
  add("valid_checksum_recomputed", 1, v1, "accepted");
  add("empty", 0, "", "refused size");
  add("truncated", 0, v1.substr(0, v1.size() - 10), "refused size");
  add("extended", 0, v1 + std::string(64, '\0'), "refused size");
  auto edited = [](std::string bytes, size_t at, uint8_t xor_mask) {
    bytes[at] = static_cast<char>(bytes[at] ^ xor_mask);
    return bytes;
  };
  // `bytes` with the little-endian `value` (of its width) stored at `at`.
  const auto stored = [](std::string bytes, size_t at, auto value) {
    auto* p = reinterpret_cast<uint8_t*>(bytes.data()) + at;
    if constexpr (sizeof(value) == 1) *p = value;
    if constexpr (sizeof(value) == 2) fmt::StoreU16(p, value);
    if constexpr (sizeof(value) == 4) fmt::StoreU32(p, value);
    return bytes;
  };
  const auto load32 = [](const std::string& bytes, size_t at) {
    return fmt::LoadU32(reinterpret_cast<const uint8_t*>(bytes.data()) + at);
  };
  // Where a section starts: listed in the header's first list, or (format
  // 1.4's two more) in its second.
  const auto section = [](const std::string& bytes, uint32_t s) -> size_t {
    const auto* at = reinterpret_cast<const uint8_t*>(bytes.data());
    return s < fmt::kSectionCount
               ? fmt::LoadU64(at + fmt::kOffSections + 16 * s)
               : fmt::LoadU64(at + fmt::kOffSectionsMore + 16 * (s - fmt::kSectionCount));
  };
  add("bad_magic", 1, edited(v1, 0, 0x20), "refused magic");
  add("unknown_major", 1, edited(v1, fmt::kOffMajor, 0x02), "refused version");
  const auto* raw = reinterpret_cast<const uint8_t*>(v1.data());
  const size_t hash_column = section(v1, fmt::kHashColumn);
  const size_t node_column = section(v1, fmt::kNodeColumn);
  add("flipped_hash_bit", 0, edited(v1, hash_column + 41, 0x10), "refused checksum");
  add("flipped_hash_bit_checksum_fixed", 1, edited(v1, hash_column + 43, 0x80),
      "refused hash_column");
  add("node_id_out_of_range_checksum_fixed", 1, edited(v1, node_column + 21, 0x40),
      "refused node_column");
  add("fingerprint_changed_checksum_fixed", 1, edited(v1, fmt::kOffFingerprint, 1),
      "refused fingerprint");

  // Formats 1.1 and 1.2: the stored search index, checked like every other section,
  // and files without one (written with it left out, or of format 1.0).
  const std::string v1_no_index = SnapshotSeedBytes(1, 160, 30, 0, false, false);
  add("valid_no_index", 0, v1_no_index, "accepted");
  add("valid_format_1_0_checksum_fixed", 1, stored(v1_no_index, fmt::kOffMinor, uint16_t{0}),
      "accepted");
  // The minor byte XOR its own value and another's: that other minor.
  // (The seeds above are of the CRC-32 flavors: 1.3 files.)
  constexpr uint8_t kToMinor0 = fmt::kMinorCrc32Flavors ^ 0;
  constexpr uint8_t kToMinor1 = fmt::kMinorCrc32Flavors ^ 1;
  add("format_1_0_with_index_checksum_fixed", 1, edited(v1, fmt::kOffMinor, kToMinor0),
      "refused sections");
  const size_t index = section(v1, fmt::kSearchIndex);
  const size_t index_keys = index + fmt::kIndexHeaderBytes;
  const uint64_t index_bytes = fmt::LoadU64(raw + fmt::kOffSections + 16 * fmt::kSearchIndex + 8);
  add("index_flipped_bit", 0, edited(v1, index_keys + 5, 0x08), "refused checksum");
  add("index_layout_checksum_fixed", 1, edited(v1, index + fmt::kIndexOffLayout, 0x02),
      "refused index");
  // A 1.1 file's layout-1 index is superseded: the reader builds its own.
  add("index_layout_1_in_format_1_1_checksum_fixed", 1,
      edited(edited(v1, fmt::kOffMinor, kToMinor1), index + fmt::kIndexOffLayout, 0x03),
      "accepted");
  add("index_layout_1_in_format_1_2_checksum_fixed", 1,
      edited(v1, index + fmt::kIndexOffLayout, 0x03), "refused index");
  add("index_levels_checksum_fixed", 1, edited(v1, index + fmt::kIndexOffLevels, 0x01),
      "refused index");
  add("index_entry_level_checksum_fixed", 1, edited(v1, index + fmt::kIndexOffEntryLevel, 0x02),
      "refused index");
  add("index_table_bits_checksum_fixed", 1, edited(v1, index + fmt::kIndexOffTableBits, 0x01),
      "refused index");
  add("index_root_key_checksum_fixed", 1, edited(v1, index_keys + 1, 0x01), "refused index");
  add("index_table_entry_checksum_fixed", 1, edited(v1, index + index_bytes - 4, 0x01),
      "refused index");
  add("signed_index_key_checksum_fixed", 1,
      edited(signed_v2, section(signed_v2, fmt::kSearchIndex) + fmt::kIndexHeaderBytes + 2, 0x04),
      "refused index");
  // A verified signature stands in for the checksum: a wrong checksum field
  // (outside the signed bytes) loads with the key and is refused without;
  // damage inside the signed bytes is still named "checksum" with the key.
  add("signed_checksum_field_wrong", 0, edited(signed_v2, signed_v2.size() - 1, 0x01),
      "refused checksum");
  const size_t signed_hash_column = section(signed_v2, fmt::kHashColumn);
  add("signed_flipped_hash_bit", 0, edited(signed_v2, signed_hash_column + 9, 0x02),
      "refused checksum");

  // Format 1.4: the other programs' flavors, valid and damaged behind the
  // checksum (the options section, envoy-ring's low column, a maglev entry).
  const char* const program_names[] = {"haproxy", "twemproxy", "varnish", "envoy_ring", "maglev"};
  std::string program[5];
  for (int which = 0; which < 5; ++which) {
    program[which] = ProgramSnapshotSeedBytes(which, false);
    add((std::string("valid_1_4_") + program_names[which]).c_str(), 0, program[which], "accepted");
  }
  add("valid_1_4_maglev_signed", 0, ProgramSnapshotSeedBytes(4, true), "accepted");
  add("v1_4_haproxy_hash_function_checksum_fixed", 1,
      edited(program[0], section(program[0], fmt::kFlavorOptions), 0x08), "refused options");
  add("v1_4_haproxy_server_id_twice_checksum_fixed", 1,
      [&] {
        std::string bytes = program[0];
        const size_t ids = section(bytes, fmt::kFlavorOptions) + fmt::kOptionsHeadBytes;
        std::memcpy(bytes.data() + ids + 4, bytes.data() + ids, 4);
        return bytes;
      }(),
      "refused options");
  add("v1_4_twemproxy_label_length_checksum_fixed", 1,
      edited(program[1], section(program[1], fmt::kFlavorOptions) + fmt::kOptionsHeadBytes + 1,
             0x40),
      "refused options");
  add("v1_4_varnish_replicas_checksum_fixed", 1,
      edited(program[2], section(program[2], fmt::kFlavorOptions), 0x01), "refused options");
  const std::string& envoy = program[3];
  const size_t envoy_hash = section(envoy, fmt::kHashColumn);
  const size_t envoy_low = section(envoy, fmt::kLowColumn);
  add("v1_4_envoy_low_sentinel_checksum_fixed", 1,
      stored(envoy, envoy_low + 4 * load32(envoy, fmt::kOffPoints), uint8_t{0}),
      "refused low_column");
  // Points 0 and 1 one high half, their low halves descending.
  const std::string one_high = stored(envoy, envoy_hash + 4, load32(envoy, envoy_hash));
  add("v1_4_envoy_low_order_checksum_fixed", 1,
      stored(stored(one_high, envoy_low, uint32_t{2}), envoy_low + 4, uint32_t{1}),
      "refused low_column");
  add("v1_4_maglev_entry_past_nodes_checksum_fixed", 1,
      stored(program[4], section(program[4], fmt::kNodeColumn) + 2 * 66, uint16_t{6}),
      "refused node_column");
  add("v1_4_as_1_3_checksum_fixed", 1, edited(program[2], fmt::kOffMinor, 0x07),
      "refused header");
}

// ---- program_diff ----------------------------------------------------------------------

ProgramCase Program(RingOptions options, std::vector<std::string> addresses,
                    std::vector<uint32_t> weights) {
  ProgramCase c;
  options.max_points = 100000;
  c.options = options;
  for (size_t i = 0; i < addresses.size(); ++i) {
    reference::ProgramServer server;
    server.address = addresses[i];
    server.weight = i < weights.size() ? weights[i] : 1;
    c.servers.push_back(server);
    c.up.push_back(i % 3 != 0);
    c.loads.push_back(static_cast<uint32_t>(i));
  }
  c.capacity = 2;
  c.keys = {"/", "", "/index.html", "\xff\x80", "user:42"};
  c.hashes = {0, 0xFFFFFFFFu, 0xFFFFFFFFFFFFFFFFu};
  return c;
}

std::vector<std::string> Hosts(int count, const std::string& suffix = ":11212") {
  std::vector<std::string> hosts;
  for (int i = 0; i < count; ++i) hosts.push_back("10.0.0." + std::to_string(i + 1) + suffix);
  return hosts;
}

using ProgramExpectation = std::function<std::string(const ProgramCase&, const Ring&)>;

std::function<std::string(const std::string&)> ProgramCheck(StatusCode code,
                                                            ProgramExpectation more = nullptr) {
  return [code, more](const std::string& bytes) -> std::string {
    const ProgramCase c = DecodeProgramCase(Data(bytes), bytes.size());
    RunProgramDiff(c);  // aborts on a difference
    const StatusCode got = ProgramBuildCode(c);
    if (got != code) return "build gave " + CodeText(got) + ", expected " + CodeText(code);
    if (!more) return "";
    RingBuilder builder(c.options);
    for (const auto& server : c.servers) {
      (void)builder.Add(server.address, server.weight,
                        {.server_id = server.server_id, .name = server.name});
    }
    const Result<Ring> ring = std::move(builder).Build();
    return more(c, ring.value());
  };
}

// Some hash is held by points of two nodes.
std::string SharedPoint(const ProgramCase&, const Ring& ring) {
  PointCursor cursor = ring.Begin();
  uint64_t previous = cursor.hash64();
  for (uint64_t i = 1; i < ring.num_points(); ++i) {
    cursor.Advance();
    if (cursor.hash64() == previous) return "";
    previous = cursor.hash64();
  }
  return "no two points share a hash";
}

void AddProgramSeeds(std::vector<Seed>& seeds) {
  auto add = [&](std::string name, const ProgramCase& c, auto check) {
    seeds.push_back({"program_diff", std::move(name), EncodeProgramCase(c), check});
  };
  {
    // HAProxy 2.6 gives "s1 id 2147483647, s2 id 5, s3" the id 3, as the
    // real haproxy answers (COMPATIBILITY.md §4); a fourth server takes 4.
    ProgramCase c = Program({.flavor = Flavor::kHaproxy}, Hosts(4, ":80"), {1, 2, 1, 3});
    c.servers[0].server_id = 2147483647;
    c.servers[1].server_id = 5;
    add("haproxy_sdbm_avalanche_ids", c,
        ProgramCheck(StatusCode::kOk, [](const ProgramCase&, const Ring& ring) -> std::string {
          return ring.node(2).server_id == 3 && ring.node(3).server_id == 4
                     ? ""
                     : "automatic ids are not 3 and 4";
        }));
  }
  {
    ProgramCase c = Program({.flavor = Flavor::kHaproxy,
                             .haproxy = {.hash_function = HaproxyHash::kWt6, .avalanche = false}},
                            Hosts(4, ":80"), {1, 1, 1, 1});
    c.servers[0].server_id = 7;
    c.servers[2].server_id = 7 + (1u << 20);  // HAProxy 2.x: the same points
    add("haproxy_ids_congruent_2_20", c, ProgramCheck(StatusCode::kOk, SharedPoint));
  }
  add("haproxy_unfixed_3_0",
      Program({.flavor = Flavor::kHaproxy,
               .haproxy = {.hash_function = HaproxyHash::kCrc32,
                           .server_key = HaproxyServerKey::kIdUnfixed30}},
              Hosts(6, ":80"), {1, 1, 2, 1, 1, 1}),
      ProgramCheck(StatusCode::kOk));
  add("haproxy_weight_257", Program({.flavor = Flavor::kHaproxy}, Hosts(2, ":80"), {1, 257}),
      ProgramCheck(StatusCode::kBadWeight));
  {
    ProgramCase c = Program({.flavor = Flavor::kHaproxy}, Hosts(3, ":80"), {1, 1, 1});
    c.servers[0].server_id = 9;
    c.servers[2].server_id = 9;
    add("haproxy_id_twice", c, ProgramCheck(StatusCode::kDuplicateNode));
  }
  add("ketama_libmemcached_weighted",
      Program({.flavor = Flavor::kKetamaMd5}, Hosts(7), {1, 2, 3, 1, 1, 5, 1}),
      ProgramCheck(StatusCode::kOk));
  add("ketama_libmemcached_unweighted_md5",
      Program({.flavor = Flavor::kKetamaMd5,
               .ketama = {.variant = KetamaVariant::kLibmemcachedUnweighted,
                          .key_hash = KetamaKeyHash::kMd5}},
              Hosts(5, ":11211"), {1, 1, 0, 1, 1}),
      ProgramCheck(StatusCode::kOk));
  add("ketama_unweighted_weight_2",
      Program({.flavor = Flavor::kKetamaMd5,
               .ketama = {.variant = KetamaVariant::kLibmemcachedUnweighted}},
              Hosts(3), {1, 256, 1}),
      ProgramCheck(StatusCode::kBadWeight));
  {
    ProgramCase c =
        Program({.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kTwemproxy}},
                Hosts(4, ":11211"), {1, 1, 2, 1});
    c.servers[1].name = "cache-1";
    c.servers[3].name = "cache-3";
    add("ketama_twemproxy_names", c, ProgramCheck(StatusCode::kOk));
  }
  add("ketama_twemproxy_crc32_15bit",
      Program({.flavor = Flavor::kKetamaMd5,
               .ketama = {.variant = KetamaVariant::kTwemproxy, .key_hash = KetamaKeyHash::kCrc32}},
              Hosts(4), {1, 1, 1, 1}),
      ProgramCheck(StatusCode::kOk, [](const ProgramCase& c, const Ring& ring) -> std::string {
        for (const std::string& key : c.keys) {
          if (ring.KeyHash(key) > 0x7fff) return "a key hash above 32767";
        }
        return "";
      }));
  add("ketama_libketama",
      Program({.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kLibketama}},
              Hosts(7, ":11211"), {1, 1, 1, 1, 1, 1, 1}),
      ProgramCheck(StatusCode::kOk));
  add("ketama_libmemcached_spy",
      Program(
          {.flavor = Flavor::kKetamaMd5, .ketama = {.variant = KetamaVariant::kLibmemcachedSpy}},
          Hosts(5, ":11211"), {1, 1, 1, 0, 1}),
      ProgramCheck(StatusCode::kOk, [](const ProgramCase&, const Ring& ring) -> std::string {
        // "/host:port", the default port written too.
        const std::string& label = ring.node(0).address.host;
        return label.front() == '/' && label.ends_with(":11211") ? "" : "not a spy label";
      }));
  add("ketama_spy_weighted_murmur3",
      Program({.flavor = Flavor::kKetamaMd5,
               .ketama = {.variant = KetamaVariant::kLibmemcachedSpyWeighted,
                          .key_hash = KetamaKeyHash::kMurmur3}},
              Hosts(4), {1, 3, 2, 1}),
      ProgramCheck(StatusCode::kOk));
  add("ketama_twemproxy_crc16_hash_tag",
      Program({.flavor = Flavor::kKetamaMd5,
               .ketama = {.variant = KetamaVariant::kTwemproxy,
                          .key_hash = KetamaKeyHash::kCrc16,
                          .hash_tag = {'{', '}'}}},
              Hosts(4), {1, 2, 1, 1}),
      ProgramCheck(StatusCode::kOk, [](const ProgramCase&, const Ring& ring) -> std::string {
        if (ring.KeyHash("user:{42}:name") != ring.KeyHash("42")) return "the tag is not hashed";
        if (ring.KeyHash("a{}b") == ring.KeyHash("")) return "an empty tag hashes the key";
        // twemproxy's crc16 keeps 32 bits of state: 4 bytes pass 16 bits.
        return ring.KeyHash("abcd") > 0xFFFF ? "" : "crc16 kept to 16 bits";
      }));
  add("ketama_libmemcached_crc16_refused",
      Program({.flavor = Flavor::kKetamaMd5, .ketama = {.key_hash = KetamaKeyHash::kCrc16}},
              Hosts(3), {1, 1, 1}),
      ProgramCheck(StatusCode::kBadArgument));
  add("ketama_hash_tag_not_twemproxy",
      Program({.flavor = Flavor::kKetamaMd5, .ketama = {.hash_tag = {'{', '}'}}}, Hosts(3),
              {1, 1, 1}),
      ProgramCheck(StatusCode::kBadArgument));
  add("ketama_single_server_hash_0", Program({.flavor = Flavor::kKetamaMd5}, Hosts(1), {3}),
      ProgramCheck(StatusCode::kOk, [](const ProgramCase&, const Ring& ring) -> std::string {
        return ring.KeyHash("anything") == 0 ? "" : "a single server's key hash is not 0";
      }));
  add("varnish_default_67",
      Program({.flavor = Flavor::kVarnishShard}, Hosts(6, ""), {1, 2, 1, 1, 1, 1}),
      ProgramCheck(StatusCode::kOk));
  add("varnish_two_points",
      Program({.flavor = Flavor::kVarnishShard, .varnish = {.replicas = 1}}, Hosts(2, ""), {1, 1}),
      ProgramCheck(StatusCode::kOk, [](const ProgramCase&, const Ring& ring) -> std::string {
        return ring.num_points() == 2 && ring.FindNodeByHash(0) == ring.At(1).node()
                   ? ""
                   : "a key below both points does not go to the second";
      }));
  {
    std::vector<std::string> names;
    for (int i = 0; i < 13; ++i) names.push_back("be" + std::to_string(i));
    add("varnish_prefix_names_share_points",
        Program({.flavor = Flavor::kVarnishShard}, names, std::vector<uint32_t>(13, 1)),
        ProgramCheck(StatusCode::kOk, SharedPoint));
  }
  {
    ProgramCase basic =
        Program({.flavor = Flavor::kEnvoyRing, .envoy_ring = {.minimum_ring_size = 12}},
                Hosts(6, ""), std::vector<uint32_t>(6, 1));
    for (int i = 0; i < 6; ++i) basic.servers[i].address = "127.0.0.1:" + std::to_string(90 + i);
    add("envoy_ring_basic_12", basic,
        ProgramCheck(StatusCode::kOk, [](const ProgramCase&, const Ring& ring) -> std::string {
          // RingHashLoadBalancerTest.Basic: 0 goes to :94.
          return ring.num_points() == 12 && ring.FindNodeByHash64(0) == 4 ? "" : "not Envoy's ring";
        }));
    ProgramCase murmur = basic;
    murmur.options.envoy_ring.hash_function = EnvoyHash::kMurmurHash2;
    add("envoy_ring_murmur2", murmur, ProgramCheck(StatusCode::kOk));
    ProgramCase zero = basic;
    zero.options.envoy_ring.minimum_ring_size = 0;
    add("envoy_ring_minimum_0", zero, ProgramCheck(StatusCode::kBadArgument));
    ProgramCase maglev = basic;
    maglev.options = {
        .flavor = Flavor::kEnvoyMaglev, .max_points = 100000, .maglev = {.table_size = 7}};
    add("maglev_basic_7", maglev,
        ProgramCheck(StatusCode::kOk, [](const ProgramCase&, const Ring& ring) -> std::string {
          // MaglevLoadBalancerTest.Basic: entries 2, 4, 0, 1, 5, 0, 3.
          return ring.FindNodeByHash64(0) == 2 && ring.FindNodeByHash64(6) == 3
                     ? ""
                     : "not Envoy's table";
        }));
    ProgramCase eight = maglev;
    eight.options.maglev.table_size = 8;
    add("maglev_table_not_prime", eight, ProgramCheck(StatusCode::kBadArgument));
    ProgramCase small = maglev;
    small.options.maglev.table_size = 5;
    add("maglev_more_hosts_than_entries", small,
        ProgramCheck(StatusCode::kOk, [](const ProgramCase&, const Ring& ring) -> std::string {
          // Envoy fills a table of 5 with the first 5 hosts in key order
          // (:90..:94 at entries 2, 3, 0, 1, 4) and leaves :95 out.
          return ring.FindNodeByHash64(0) == 2 && ring.FindNodeByHash64(4) == 4
                     ? ""
                     : "not Envoy's table of 5";
        }));
  }
}

}  // namespace

void AddStateRecordSeeds(std::vector<Seed>& seeds) {
  auto add = [&](const char* name, std::string bytes, std::string expected) {
    auto check = [expected](const std::string& input) {
      const std::string got = RunStateRecordCheck(reinterpret_cast<const uint8_t*>(input.data()),
                                                  input.size());
      return got == expected ? std::string() : "expected " + expected + ", got " + got;
    };
    seeds.push_back({"state_record", name, std::move(bytes), check});
  };
  const std::string record = StateSeedShareRecord();
  const std::string text(1, '\0');  // mode 0: a share record's text
  const auto replaced = [&](const std::string& key, const std::string& value) {
    std::string edited = record;
    const size_t at = edited.find("\n" + key + " ") + 1;
    edited.replace(at, edited.find('\n', at) - at, key + " " + value);
    return edited;
  };
  add("share_valid", text + record, "parsed");
  add("share_version_max", text + replaced("config_version", "18446744073709551615"), "parsed");
  add("share_version_overflow", text + replaced("config_version", "18446744073709551616"),
      "refused");
  add("share_field_twice", text + record + "pid 7\n", "refused");
  add("share_of_1_0", text + "chash-reload-share 1\npid 1\n", "refused");
  // mode 1: U16 share length, the share record, then BASE.good's bytes.
  const auto state = [](const std::string& share, const std::string& good) {
    std::string bytes(1, '\1');
    bytes += static_cast<char>(share.size() & 0xff);
    bytes += static_cast<char>(share.size() >> 8);
    return bytes + share + good;
  };
  add("good_none", state(record, ""), "served path");
  add("good_newer", state(record, StateSeedSnapshot(9)), "served good");
  add("good_older", state(record, StateSeedSnapshot(2)), "served path");
  std::string forged = StateSeedSnapshot(9);
  forged[forged.size() / 2] = static_cast<char>(forged[forged.size() / 2] ^ 4);
  add("good_newer_damaged", state(record, forged), "served path");
  add("good_text", state("chash-reload-share 2\n", "chash-reload-state 1\nhighest_version 18446744073709551615\n"),
      "served path");
}

std::vector<Seed> AllSeeds() {
  std::vector<Seed> seeds;
  AddRingSeeds(seeds);
  AddPointsSeeds(seeds);
  AddCrcSeeds(seeds);
  AddParserSeeds(seeds);
  AddSnapshotSeeds(seeds);
  AddProgramSeeds(seeds);
  AddStateRecordSeeds(seeds);
  return seeds;
}

}  // namespace chash::fuzz
