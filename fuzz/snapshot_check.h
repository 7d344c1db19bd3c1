// The snapshot loader fuzzer: any bytes, and mutations of valid snapshots,
// give either a refusal or a ring that answers every probe as the reference
// ring built from the snapshot's own server list.
#ifndef CHASH_FUZZ_SNAPSHOT_CHECK_H_
#define CHASH_FUZZ_SNAPSHOT_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace chash::fuzz {

// Input: U8 mode, then the snapshot's bytes.
//   mode bit 0: recompute the trailer's checksum first (so that mutations
//     reach the checks behind it instead of stopping at the checksum).
// The bytes are loaded three ways: verified with the points digest, plain
// verified, and unverified (no checksum). Each must refuse with a well-formed
// error naming a check, or give a ring that answers in bounds; when the
// points-digest load accepts, its ring must answer every probe (each point
// hash and its neighbours, 0, 2^32-1), every walk, every mask and each
// stored subset exactly as the reference ring of the node table's servers.
// A 1.4 file of the other programs' flavors, when accepted, must answer
// (64-bit lookups, retries, key hashes and routes) as the ring RingBuilder
// builds from its node table, options, server ids and labels.
// Returns "accepted" or "refused CHECK" (for the named seeds).
std::string RunSnapshotCheck(const uint8_t* data, size_t size);

// The bytes of a small valid snapshot for seeds: a ring of `nodes` IPv4
// servers (weights 1 + i % 3, every fifth drained) in flavor (0 nginx,
// 1 pingora-v1, 2 pingora-v2 with `multiple`), `subsets` named subsets, a
// label, signed with a fixed test key when `sign` (FuzzSigningKey), with
// the search index stored unless `store_index` is false.
std::string SnapshotSeedBytes(int flavor, uint32_t multiple, uint32_t nodes, int subsets,
                              bool sign, bool store_index = true);

// A small valid 1.4 snapshot of the other programs' flavors: `which` 0
// haproxy (some ids given), 1 ketama-md5 twemproxy (some names, a hash
// tag), 2 varnish-shard, 3 envoy-ring (64 to 96 points), 4 envoy-maglev
// (67 entries); six servers, one drained, one subset.
std::string ProgramSnapshotSeedBytes(int which, bool sign);

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_SNAPSHOT_CHECK_H_
