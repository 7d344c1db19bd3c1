// The snapshot format's constants and little-endian field access, shared by
// the writer and the reader. The format itself is specified in
// engine/snapshot/FORMAT.md; change it only with a new version number.
#ifndef CHASH_ENGINE_SNAPSHOT_FORMAT_H_
#define CHASH_ENGINE_SNAPSHOT_FORMAT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "chash/ring.h"

namespace chash::internal::snapshot {

inline constexpr char kMagic[8] = {'C', 'H', 'A', 'S', 'H', 'R', 'N', 'G'};
inline constexpr size_t kHeaderBytes = 512;
inline constexpr size_t kTrailerBytes = 128;
// The sections of every file; files of the other programs' flavors (1.4)
// have two more (kFlavorOptions, kLowColumn), listed at kOffSectionsMore.
inline constexpr uint32_t kSectionCount = 8;
inline constexpr uint32_t kProgramSectionCount = 10;
inline constexpr uint32_t kMaxSectionCount = kProgramSectionCount;
inline constexpr size_t kSectionAlign = 64;
inline constexpr size_t kMaxLabelBytes = 4096;
inline constexpr size_t kMaxAddressBytes = 4096;
inline constexpr size_t kMaxSubsetNameBytes = 64;
inline constexpr uint8_t kHashFunctionKetamaCrc32 = 1;
// 1.4: the points and key hash are the flavor's, as its options section
// says (the flavors after resty).
inline constexpr uint8_t kHashFunctionFlavorOptions = 2;

// The header's tie-break byte: 0 config order, 1 address order (pingora v2),
// 2 id order (resty). Explicit ranks belong to raw rings, which have no
// snapshots.
inline uint8_t TieBreakCode(TieBreak tie_break) {
  switch (tie_break) {
    case TieBreak::kAddressOrder:
      return 1;
    case TieBreak::kIdOrder:
      return 2;
    default:
      return 0;
  }
}
inline constexpr uint32_t kFlagSigned = 1;
// What a signature signs, by minor version (include/chash/snapshot.h): 1.0
// the context || BLAKE2b-256 of the file; 1.1 and later the context ||
// the SHA-256 chunk tree digest of the file (ChunkTreeDigest).
inline constexpr std::string_view kSignatureContext10 = "chash-snapshot-v1";
inline constexpr std::string_view kSignatureContext11 = "chash-snapshot-v1.1-sha256-chunks";
// The chunk tree: SHA-256 of each 1 MiB chunk, then SHA-256 of the context,
// the message length (u64) and the chunk size (u32), then the chunk digests.
inline constexpr std::string_view kChunkTreeContext = "chash-sha256-chunk-tree";
inline constexpr uint64_t kDigestChunkBytes = uint64_t{1} << 20;
static_assert(kSignatureContext11.size() + 32 <= 96 && kSignatureContext10.size() + 32 <= 96);
inline constexpr std::string_view kKeyIdContext = "chash-key-id";

// Header field offsets.
inline constexpr size_t kOffMagic = 0;
inline constexpr size_t kOffMajor = 8;
inline constexpr size_t kOffMinor = 10;
inline constexpr size_t kOffHeaderBytes = 12;
inline constexpr size_t kOffFileBytes = 16;
inline constexpr size_t kOffConfigVersion = 24;
inline constexpr size_t kOffCreated = 32;
inline constexpr size_t kOffHashFunction = 40;
inline constexpr size_t kOffFlavor = 41;
inline constexpr size_t kOffTieBreak = 42;
inline constexpr size_t kOffReserved43 = 43;
inline constexpr size_t kOffMultiple = 44;
inline constexpr size_t kOffNodes = 48;
inline constexpr size_t kOffPoints = 52;
inline constexpr size_t kOffPointsGenerated = 56;
inline constexpr size_t kOffLosers = 64;
inline constexpr size_t kOffSubsets = 68;
inline constexpr size_t kOffFlags = 72;
inline constexpr size_t kOffSectionCount = 76;
inline constexpr size_t kOffFingerprint = 80;
inline constexpr size_t kOffPointsDigest = 112;
inline constexpr size_t kOffSections = 144;
inline constexpr size_t kOffExpires = kOffSections + 16 * kSectionCount;  // 272, since 1.3
inline constexpr size_t kOffReserved = kOffExpires + 8;                     // 280
// The minor that gave the expiry its meaning: reserved (zero) before.
inline constexpr uint16_t kMinorWithExpiry = 3;
// 1.4: sections 8 and 9 ({u64 offset, u64 length} each) of the other
// programs' flavors' files; reserved (zero) in files of the CRC-32 flavors.
inline constexpr size_t kOffSectionsMore = kOffReserved;               // 280
inline constexpr size_t kOffReserved14 = kOffSectionsMore + 16 * 2;    // 312
// The minor that added the other programs' flavors; the files of nginx,
// pingora and resty rings are still written as 1.3 (kMinorCrc32Flavors).
inline constexpr uint16_t kMinorWithProgramFlavors = 4;
inline constexpr uint16_t kMinorCrc32Flavors = 3;

// The flavor options section (section 8, 1.4): a 64-byte head of the
// flavor's RingOptions fields (FORMAT.md lists them), then per-node
// identity: haproxy's server ids, twemproxy's labels.
inline constexpr size_t kOptionsHeadBytes = 64;

// The fields of the options head, in their order there, each right after
// the one before (FORMAT.md's table): the one statement of that layout,
// which the writer, the reader and the ring's identity bytes (identity.cc)
// walk. `options` is a RingOptions, const or not; `visit` has
//   Byte(field)          an enumeration or a char, one byte
//   Flag(field, name)    a bool, one byte 0 or 1
//   U32(field), U64(field)  little-endian
// and each takes the field by reference. False for a flavor that has no
// options head (the CRC-32 flavors).
template <typename Options, typename Visitor>
bool ForEachStoredOption(Flavor flavor, Options& options, Visitor& visit) {
  switch (flavor) {
    case Flavor::kHaproxy:
      visit.Byte(options.haproxy.hash_function);
      visit.Flag(options.haproxy.avalanche, "avalanche");
      visit.Byte(options.haproxy.server_key);
      return true;
    case Flavor::kKetamaMd5:
      visit.Byte(options.ketama.variant);
      visit.Byte(options.ketama.key_hash);
      visit.Byte(options.ketama.hash_tag[0]);
      visit.Byte(options.ketama.hash_tag[1]);
      visit.U32(options.ketama.default_port);
      return true;
    case Flavor::kVarnishShard:
      visit.U32(options.varnish.replicas);
      return true;
    case Flavor::kEnvoyRing:
      visit.U64(options.envoy_ring.minimum_ring_size);
      visit.U64(options.envoy_ring.maximum_ring_size);
      visit.Byte(options.envoy_ring.hash_function);
      return true;
    case Flavor::kEnvoyMaglev:
      visit.U64(options.maglev.table_size);
      return true;
    case Flavor::kNginx:
    case Flavor::kPingoraV1:
    case Flavor::kPingoraV2:
    case Flavor::kResty:
      return false;
  }
  return false;
}

// Search index section (section 7, formats 1.1 and 1.2) field offsets; the
// level keys start at kIndexHeaderBytes, the table right after them.
inline constexpr size_t kIndexHeaderBytes = 64;
inline constexpr size_t kIndexOffLayout = 0;
inline constexpr size_t kIndexOffLevels = 4;
inline constexpr size_t kIndexOffEntryLevel = 8;  // layout 1 only; 0 in layout 2
inline constexpr size_t kIndexOffTableBits = 12;
inline constexpr size_t kIndexOffReserved = 16;
// Layout 1 (1.1 files): the 16-ary S+ tree under a prefix table of entry-
// level positions. This reader does not adopt it: it builds its own index.
inline constexpr uint32_t kIndexLayoutSTree16 = 1;
// Layout 2 (1.2): the same tree under the slot table of
// engine/layout/search_index.h, the index this reader builds.
inline constexpr uint32_t kIndexLayoutSlotTable = 2;

// Trailer field offsets (from the trailer's start).
inline constexpr size_t kTrailKeyId = 0;
inline constexpr size_t kTrailSignature = 8;
inline constexpr size_t kTrailReserved = 72;
inline constexpr size_t kTrailChecksum = 112;

enum Section : uint32_t {
  kLabel = 0,
  kNodeTable = 1,
  kHashColumn = 2,
  kNodeColumn = 3,
  kLoserHashes = 4,
  kLoserNodes = 5,
  kSubsets = 6,
  kSearchIndex = 7,
  kFlavorOptions = 8,  // 1.4, the other programs' flavors only
  kLowColumn = 9,      // 1.4: envoy-ring's low halves; empty for the others
};

inline uint16_t LoadU16(const uint8_t* p) noexcept {
  return static_cast<uint16_t>(p[0] | (p[1] << 8));
}
inline uint32_t LoadU32(const uint8_t* p) noexcept {
  return uint32_t{p[0]} | (uint32_t{p[1]} << 8) | (uint32_t{p[2]} << 16) | (uint32_t{p[3]} << 24);
}
inline uint64_t LoadU64(const uint8_t* p) noexcept {
  return uint64_t{LoadU32(p)} | (uint64_t{LoadU32(p + 4)} << 32);
}
inline void StoreU16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
inline void StoreU32(uint8_t* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
inline void StoreU64(uint8_t* p, uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

inline constexpr uint64_t RoundUp(uint64_t value, uint64_t multiple) noexcept {
  return (value + multiple - 1) / multiple * multiple;
}

// XXH3-128 of `bytes`, low 64 bits first then high, as 16 little-endian bytes.
std::array<uint8_t, 16> Checksum(const uint8_t* bytes, size_t size) noexcept;
// The message a snapshot's signature signs (Ed25519 over message[0, size)).
struct SignedMessage {
  std::array<uint8_t, 96> bytes{};
  size_t size = 0;
};

// SHA-256 (libcrypto) of the chunks of [bytes, bytes + size), computed in
// the background from construction on: up to threads - 1 helper threads
// start hashing chunks at once, and Finish hashes what is left on the
// calling thread, joins them and makes the tree's root. The digest is the
// same whatever the thread count. The bytes must stay readable until
// Finish returns or the job is destroyed (which stops the helpers at their
// current chunk and joins them). Never throws: a thread that cannot start
// leaves its chunks to the others.
class ChunkTreeJob {
 public:
  ChunkTreeJob(const uint8_t* bytes, uint64_t size, unsigned threads) noexcept;
  ~ChunkTreeJob();
  ChunkTreeJob(const ChunkTreeJob&) = delete;
  ChunkTreeJob& operator=(const ChunkTreeJob&) = delete;
  // False: out of memory (a digest context or the chunk digests).
  bool Finish(std::array<uint8_t, 32>& root) noexcept;

 private:
  struct State;
  State* state_;
};

// The signed message of a file of minor version `minor` whose bytes before
// the trailer are [bytes, bytes + size): for minor 0 kSignatureContext10 ||
// BLAKE2b-256 (one thread, ~0.5 GB/s), else kSignatureContext11 || the chunk
// tree digest on up to `threads` threads. False: out of memory.
bool MakeSignedMessage(uint16_t minor, const uint8_t* bytes, uint64_t size, unsigned threads,
                       SignedMessage& message) noexcept;

// Subset names: 1..64 bytes of [A-Za-z0-9._-].
bool ValidSubsetName(std::string_view name) noexcept;
// UTF-8 text without NUL, at most kMaxLabelBytes.
bool ValidLabel(std::string_view label) noexcept;

}  // namespace chash::internal::snapshot

#endif  // CHASH_ENGINE_SNAPSHOT_FORMAT_H_
