// The reference rings of the other programs: HAProxy, libmemcached,
// twemproxy, libketama, Varnish's shard director, Envoy's ring and Maglev,
// each a plain transliteration of the pseudo-code in
// tests/reference/COMPATIBILITY.md (§4-§8): the program's own point list,
// its own sort, its own lookup loop (Varnish's and Envoy's bisections as
// they are written, quirks included), and a ring rebuilt from the available
// servers for masked lookups. It shares no code with the engine: its own
// hashes (bitwise or as the programs write them; MD5 through OpenSSL's EVP,
// SHA-256 through libsodium, XXH64 from its specification, MurmurHash2
// through std::hash), its own parsing, no Highway, no layout. Slow on
// purpose: the tests and fuzzers hold the engine to it.
#ifndef CHASH_ENGINE_REFERENCE_REFERENCE_PROGRAMS_H_
#define CHASH_ENGINE_REFERENCE_REFERENCE_PROGRAMS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chash/ring.h"

namespace chash::reference {

// ---- Hashes -----------------------------------------------------------------------
// Written here from the programs' sources, apart from the engine's, where
// the engine's differs in form (bitwise CRCs, FNV, one-at-a-time, OpenSSL's
// MD5, libsodium's SHA-256, XXH64 from its specification). The scalar
// hashes that both would transcribe line for line from their authors'
// published code (Hsieh, MurmurHash2 and 3, Jenkins' lookup3, HAProxy's
// full avalanche) are the engine's own (hash/program_hashes.h): a second
// copy would check nothing. The real programs' recorded answers check them
// (tests/data/libmemcached, twemproxy and haproxy).

uint32_t RefSdbm(std::string_view key);
uint32_t RefDjb2(std::string_view key);
uint32_t RefWt6(std::string_view key);
uint32_t RefOneAtATime(std::string_view key);
uint32_t RefFnv1a64(std::string_view key);
uint32_t RefFnv1_64(std::string_view key);
uint32_t RefFnv1_32(std::string_view key);
uint32_t RefFnv1a32(std::string_view key);
uint32_t RefCrc32(std::string_view key);        // CRC-32/IEEE, bitwise
uint32_t RefCrc32Bits15(std::string_view key);  // hashkit's "crc32"
uint32_t RefCrc16(std::string_view key);        // twemproxy's, bitwise (32-bit state)
void RefMd5(std::string_view data, uint8_t digest[16]);   // OpenSSL EVP
uint32_t RefSha256Last4(std::string_view data);           // libsodium
uint64_t RefXxh64(std::string_view data, uint64_t seed);  // from the specification
uint64_t RefMurmur2Std(std::string_view data);            // std::hash<std::string>

// The key hash a ring of these options and this many servers of weight > 0
// computes for `key` (Ring::KeyHash).
uint64_t RefKeyHash(const RingOptions& options, size_t weighted_servers, std::string_view key);

// ---- Rings ------------------------------------------------------------------------

struct ProgramServer {
  std::string address;
  uint32_t weight = 1;
  uint32_t server_id = 0;  // haproxy: 0 = assigned
  std::string name;        // twemproxy
};

class ProgramRing {
 public:
  static constexpr uint32_t kNoNode = Ring::kNoNode;

  // Same acceptance and StatusCode as RingBuilder (Add for every server,
  // then Build) for the flavors after resty.
  static Result<ProgramRing> Build(const RingOptions& options,
                                   const std::vector<ProgramServer>& servers);

  // The program's answer for a key hash (its width: Ring::KeyHash's).
  uint32_t Lookup(uint64_t hash) const;
  uint32_t FindNode(std::string_view key) const;
  // Envoy's chooseHost(hash, attempt); the others: the node `attempt`
  // points on along the program's walk.
  uint32_t Attempt(uint64_t hash, uint32_t attempt) const;
  // The program's walk from the key's point: `count` successive points
  // (HAProxy's next tree node, Varnish's idx + 1, Envoy's retry entries).
  std::vector<uint32_t> Walk(uint64_t hash, size_t count) const;
  // Varnish's pick order (each backend once, from the key's point on).
  std::vector<uint32_t> DistinctWalk(uint64_t hash) const;
  // The ring of the available servers (`up[node]`): the program rebuilt
  // with the others removed (haproxy keeps their ids). Its lookups and
  // walks answer the full ring's node ids.
  ProgramRing Subset(const std::vector<bool>& up) const;
  // The first node along the walk from the key that `accept` takes;
  // kNoNode if none in a turn.
  template <typename Accept>
  uint32_t WalkAccepting(uint64_t hash, const Accept& accept) const {
    for (const uint32_t node : Walk(hash, points_.size())) {
      if (accept(node)) return node;
    }
    return kNoNode;
  }

  // The points in ring order: the program's sorted array (64-bit hashes
  // for envoy-ring, table entries' node ids for envoy-maglev, hash 0).
  struct Point {
    uint64_t hash;
    uint32_t node;
  };
  const std::vector<Point>& points() const { return points_; }
  size_t size() const { return points_.size(); }
  const std::vector<ProgramServer>& servers() const { return servers_; }
  const RingOptions& options() const { return options_; }
  uint64_t KeyHash(std::string_view key) const;

 private:
  size_t StartIndex(uint64_t hash) const;

  RingOptions options_;
  std::vector<ProgramServer> servers_;  // haproxy: ids assigned
  std::vector<Point> points_;
  size_t weighted_ = 0;
  // A subset's node i is the full ring's original_[i].
  std::vector<uint32_t> original_;
};

}  // namespace chash::reference

#endif  // CHASH_ENGINE_REFERENCE_REFERENCE_PROGRAMS_H_
