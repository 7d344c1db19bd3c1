// The differential of the other programs' flavors: a fuzz input decodes to
// a flavor (haproxy, ketama-md5, varnish-shard, envoy-ring, envoy-maglev),
// its options, a server list, keys, probe hashes and a mask with loads; the
// engine (RingBuilder) and the reference (reference_programs.h, the
// programs' own loops) build it, and must both accept or both refuse with
// the same StatusCode; then every lookup must agree on every SIMD target:
// the points, the key hash, single and batch lookups by hash and by key,
// walks, retries (FindNodeForAttempt), distinct walks, masked lookups
// against the ring of the available servers (or kMaskRefused where the
// program rebuilds), BuildAvailableRing, bounded loads.
//
// Input format (FuzzReader; ProgramCaseWriter writes it):
//   U8 flavor (% 5: haproxy, ketama-md5, varnish-shard, envoy-ring, envoy-maglev)
//   the flavor's options:
//     haproxy   U8: bits 0-1 hash function, bit 2 avalanche, bit 3 unfixed 3.0 key
//     ketama    U8 variant (% 4), U8 key hash (% 13), U8 port mode (bit 0:
//               default port 11212 instead of 11211)
//     varnish   U8 replicas: 1 + r % 80
//     envoy     U16 minimum 1 + m % 4096, U16 maximum: m2 % 16 == 0 ->
//               8388608, else minimum + (m2 >> 4) % 4096; U8 bit 0 MurmurHash2;
//               U8 bit 1: a minimum of 0 (refused)
//     maglev    U8 table size: one of kMaglevSizes (% its size), or 8 (not prime)
//   U8 cap mode: % 4 == 3: a cap of 1 + U8 points (kTooManyPoints), else
//               the fuzz cap
//   U8 server count (% 41), each server:
//     U8 address kind (% 6): IPv4:port, IPv4 alone, name:port, [IPv6]:port,
//               any bytes (String 24), a copy of an earlier server's text
//     operands (U32 / U16 / U8 as the kind needs)
//     U8 weight w: w % 8 < 5: w % 8 (0..4); 5: 1 + U8; 6: U16; 7: U32
//     U8 id mode (haproxy): 0-3 none; 4: U8; 5: U32; 6: an earlier id +
//               2^20 (same points in HAProxy 2.x); 7: an earlier id
//     U8 name mode (twemproxy): bit 0: a name "cache-" + U8
//   U8 key count (% 25), each a String(40)
//   U8 extra probe count (% 9), each U64
//   U8 mask bits a server (bit 0: up), U8 load a server, U8 capacity
#ifndef CHASH_FUZZ_PROGRAM_CASE_H_
#define CHASH_FUZZ_PROGRAM_CASE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chash/ring.h"
#include "reference/reference_programs.h"

namespace chash::fuzz {

struct ProgramCase {
  RingOptions options;
  std::vector<reference::ProgramServer> servers;
  std::vector<std::string> keys;
  std::vector<uint64_t> hashes;
  std::vector<bool> up;         // one a server
  std::vector<uint32_t> loads;  // one a server
  uint32_t capacity = 0;

  std::string Describe() const;
};

ProgramCase DecodeProgramCase(const uint8_t* data, size_t size);

// The bytes DecodeProgramCase reads back as `c`, for the named seeds:
// every address as raw bytes (at most 24), weights as U32, haproxy ids as
// U32 (an id whose low byte is 0xFF is written as is), twemproxy names
// "cache-N" (N < 256), envoy-maglev's table size one of the fuzzer's.
std::string EncodeProgramCase(const ProgramCase& c);

// The engine's outcome for the case: kOk with a ring, or the refusal.
StatusCode ProgramBuildCode(const ProgramCase& c);

// Builds the case with both and compares everything; "" if they agree,
// else the first difference (with the target). `checks` counts answers.
std::string CompareProgramCase(const ProgramCase& program_case, uint64_t* checks = nullptr);

// The fuzzer's body: CompareProgramCase, Fail() on a difference.
void RunProgramDiff(const ProgramCase& program_case);

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_PROGRAM_CASE_H_
