// The ring differential: a fuzz input decodes to a flavor, options, a node
// list and keys; the ring is built by the engine (RingBuilder) and by the
// reference continuum, which must both accept, or both reject with the same
// StatusCode; then every lookup must agree on every SIMD target.
//
// Input format (FuzzReader; RingCaseWriter writes it):
//   U8 flavor (% 3)     U8 option bits: 0-1 multiple mode, 2-3 cap mode
//   [multiple]           mode 0: the default 160; pingora v2 only: 1: 1+U8,
//                        2: U16, 3: U32 (mode 3 also for nginx/v1: kBadMultiple)
//   [cap]                mode 0: kFuzzMaxPoints; 1: U16; 2: U8;
//                        3: kHardMaxPoints + 1 + U8 (kBadArgument)
//   U8 op count, then ops until the count or the input ends:
//     U8 op: kind = op % 8, variant = op / 8 (see RingOp); operands; weight
//   U8 key count (% 33), each key a String(48)
//   U8 extra probe hash count (% 17), each U32
//   the failover fields of mask_case.h (node mask, loads, balance factor)
// A weight is U8 w: w%4 == 0: 0 (drained); 1: 1 + (w/4)%4; 2: U16; 3: U32.
//
// Rings stay small so each run is fast: the cap is at most kFuzzMaxPoints
// points, and kBulk reaches the 65,536-node limit with weight-0 nodes (which
// make no points).
#ifndef CHASH_FUZZ_RING_CASE_H_
#define CHASH_FUZZ_RING_CASE_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chash/ring.h"
#include "fuzz_data.h"
#include "mask_case.h"
#include "reference/reference_ring.h"

namespace chash::fuzz {

inline constexpr uint64_t kFuzzMaxPoints = 100000;
// Each node costs microseconds on both sides under ASan: ordinary inputs stay
// under kMaxPlainServers; only the one near-max bulk op goes past 65,536.
inline constexpr size_t kMaxPlainServers = 512;
inline constexpr size_t kMaxServers = 70000;  // past 65,537 nothing new happens
inline constexpr uint32_t kMaxBulk = 32;
inline constexpr uint8_t kBulkNearMaxVariant = 31;

enum RingOp : uint8_t {
  kText = 0,     // String(64): any address text
  kIpv4 = 1,     // 4 octets, U16 port. variant bit 0: no port; 1: first octet
                 // with a leading zero ("010"); 2: port with leading zeros
  kIpv6 = 2,     // U8 zero-group mask, U16 per non-zero group (bit 4 of the
                 // variant: 4 bytes of an IPv4-mapped address instead), U16
                 // port. variant bits 0-2: text form (address_model.h
                 // Ipv6Text); bit 3: no port
  kName = 3,     // U16 n: "nN.example". variant bit 0: ":PORT" (U16); bit 1:
                 // upper case
  kUnix = 4,     // U16 n: "unix:/run/sN.sock". variant bit 0: "UNIX:"; bit 1:
                 // U8 extra path bytes (to cross the 107-byte sun_path limit)
  kRespell = 5,  // U8 index of an earlier IPv4/IPv6 node: the same address in
                 // text form (variant % 8) (same identity for pingora)
  kBulk = 6,     // U16 base, U8 c: 1 + c % 32 IPv4 nodes 10.b.b.b:443 from
                 // base on, all of one weight. Variant 31 (op byte 0xFE), once
                 // an input: 65,536 - c nodes, for the node limit (slow: each
                 // such run takes about a second under ASan).
  kQuad = 7,     // 4 U8 octets, each written by 2 variant bits: as is,
                 // empty if 0, with leading zeros ("0007"), as 3 digits
};

struct RingCase {
  Flavor flavor = Flavor::kNginx;
  uint32_t point_multiple = kDefaultPointMultiple;
  uint64_t max_points = kFuzzMaxPoints;
  std::vector<reference::Server> servers;
  std::vector<std::string> keys;
  std::vector<uint32_t> hashes;
  MaskCase mask;

  std::string Describe() const;  // for mismatch reports
};

RingCase DecodeRingCase(const uint8_t* data, size_t size);

// What a run found, for the seed tests.
struct RingOutcome {
  StatusCode code = StatusCode::kOk;  // the (agreed) build result
  uint64_t points = 0;                // kept points
  uint64_t collisions = 0;
  uint32_t nodes = 0;
  uint64_t checks = 0;  // lookups compared
};

// Builds both rings and compares everything; Fail()s (aborts) on any
// difference. Costs O(points log points) plus the lookups.
RingOutcome RunRingDiff(const RingCase& ring_case);

// Writes inputs for DecodeRingCase (the named seeds).
class RingCaseWriter : public ProbesAndMaskWriter<RingCaseWriter> {
 public:
  enum class Multiple : uint8_t { kDefault = 0, kSmall = 1, kU16 = 2, kU32 = 3 };
  enum class Cap : uint8_t { kFuzzDefault = 0, kU16 = 1, kU8 = 2, kInvalid = 3 };

  RingCaseWriter(Flavor flavor, Multiple multiple_mode = Multiple::kDefault, uint32_t multiple = 0,
                 Cap cap_mode = Cap::kFuzzDefault, uint32_t cap = 0);

  RingCaseWriter& Text(std::string_view text, uint32_t weight);
  RingCaseWriter& Ipv4(std::array<uint8_t, 4> octets, uint16_t port, uint32_t weight,
                       uint8_t variant = 0);
  RingCaseWriter& Ipv6(std::array<uint16_t, 8> groups, uint16_t port, uint32_t weight,
                       uint8_t form = 0, bool with_port = true);
  RingCaseWriter& Name(uint16_t n, uint32_t weight, uint8_t variant = 0, uint16_t port = 0);
  RingCaseWriter& Unix(uint16_t n, uint32_t weight, uint8_t variant = 0, uint8_t extra = 0);
  RingCaseWriter& Respell(uint8_t index, uint8_t form, uint32_t weight);
  // near_max: 65,536 - count nodes; else count (1..32) nodes.
  RingCaseWriter& Bulk(uint16_t base, uint8_t count, bool near_max, uint32_t weight);
  RingCaseWriter& Key(std::string_view key);
  // Hash(uint32_t) and Mask(const MaskCaseWriter&): ProbesAndMaskWriter.

  std::string Bytes() const;  // the encoded input

 private:
  void Weight(FuzzWriter& w, uint32_t weight);
  // Ends an op: `w` (its byte and fields) and the node's weight.
  RingCaseWriter& Op(FuzzWriter& w, uint32_t weight);
  FuzzWriter header_;
  std::vector<std::string> ops_;
  std::vector<std::string> keys_;
};

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_RING_CASE_H_
