// Ring identity: fingerprints that processes can log and compare.
//
//   chash::Fingerprint id = chash::RingFingerprint(ring);
//   log("ring %s", id.Hex().c_str());      // same text on every machine
//
// Three fingerprints, each SHA-256 (FIPS 180-4) of a byte serialization
// fixed below (all integers little-endian, no padding, no pointer values):
//
// RingFingerprint: the routing configuration. Equal fingerprints mean every
// key routes to the same backend (same points, same tie-break), whatever the
// process, compiler, SIMD target or architecture. O(nodes).
//   "chash-ring"       10 bytes, ASCII
//   u16 version        1
//   u8  hash function  1 = ketama chain over CRC-32/IEEE: node points
//                      crc32(HOST "\0" PORT, prev as LE u32); keys crc32(key)
//   u8  flavor         0 nginx, 1 pingora-v1, 2 pingora-v2, 3 resty or raw
//                      points (told apart by the tie-break and N = 0)
//   u8  tie-break      0 config order, 1 address order, 2 explicit rank,
//                      3 id order
//   u32 point multiple (0 for raw points)
//   u32 N, then N nodes: u32 weight, u32 length L, L bytes HOST "\0" PORT
//     The nodes of weight > 0 (a drained node routes nothing, so draining a
//     node and deleting its line give the same ring), in tie-break order:
//     configuration order, or ascending socket address for address order
//     (so a pingora-v2 ring's fingerprint ignores the order of the file).
//   Raw-point rings have no addresses: N = 0, then the routing itself:
//   u32 kept points, each u32 hash + u32 node id in ring order; u32 losers,
//   each u32 hash + u32 node id (Ring::collision_losers order).
//
// PointsDigest: the points the process actually holds, to check a build
// (and the CRC32 and sort kernels behind it) bit for bit. O(points).
//   "chash-points" 12 bytes, u16 version 1, u32 kept points, each u32 hash
//   + u32 canonical node (the node's position in RingFingerprint's list; the
//   node id for raw rings), in ring order; u32 losers, the same two fields.
//
// BackendFingerprint: the backend snapshot (which servers, which weights),
// whatever the flavor or multiple: two rings built from one snapshot have
// equal ones. RingMigration compares them. O(nodes log nodes).
//   "chash-backends" 14 bytes, u16 version 1, u32 N, then for the nodes of
//   weight > 0 sorted by identity bytes: u32 length L, L bytes BackendIdentity,
//   u32 weight.
#ifndef CHASH_IDENTITY_H_
#define CHASH_IDENTITY_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "chash/ring.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

// Allocation. The fingerprints allocate while they serialize (O(nodes), or
// O(points) for raw rings), and never throw: if memory runs out they return
// a sentinel, the all-zero Fingerprint{} (SHA-256 does not produce it), and
// the *Bytes and text calls return an empty string (never empty otherwise).
// Sha256 allocates nothing.
struct Fingerprint {
  std::array<uint8_t, 32> bytes{};

  std::string Hex() const noexcept;    // 64 lower-case hex digits; "" if out of memory
  std::string Short() const noexcept;  // the first 16, for log lines; likewise
  friend bool operator==(const Fingerprint&, const Fingerprint&) = default;
};

// SHA-256 of `bytes` (FIPS 180-4; libsodium's). No allocation.
Fingerprint Sha256(std::string_view bytes) noexcept;

// The serializations above, and their SHA-256.
std::string RingIdentityBytes(const Ring& ring) noexcept;
Fingerprint RingFingerprint(const Ring& ring) noexcept;
std::string PointsDigestBytes(const Ring& ring) noexcept;
Fingerprint PointsDigest(const Ring& ring) noexcept;
std::string BackendIdentityBytes(const Ring& ring) noexcept;
Fingerprint BackendFingerprint(const Ring& ring) noexcept;

// The canonical name of a backend, the same whichever flavor parsed it:
// an IP socket address as Rust prints it ("10.0.0.1:443", "[::1]:7777"; an
// nginx text such as "[0::1]:07777" included), any other nginx text as
// written ("unix:/run/a.sock", "cache-1:8080", "127.0.0.2"), and "#ID" for
// a raw ring's node. Diffs and migrations match nodes across rings by it.
std::string BackendIdentity(const NodeInfo& node, uint32_t id) noexcept;

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_IDENTITY_H_
