// Snapshot loader: maps (or copies) a file, checks it in the order
// include/chash/snapshot.h lists, and makes a Ring whose columns borrow the
// file's pages.
#include <fcntl.h>
#include <sodium/crypto_sign_ed25519.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <new>
#include <optional>
#include <set>
#include <unordered_set>

#include "builder/columns_builder.h"
#include "builder/parallel.h"
#include "chash/snapshot.h"
#include "flavors.h"
#include "layout/aligned_array.h"
#include "ops/ops_internal.h"
#include "ops/sha256.h"
#include "ring_state.h"
#include "snapshot/format.h"
#include "snapshot/loader.h"
#include "out_of_memory.h"

namespace chash {

// Friend of RingSnapshot: fills its private members.
struct SnapshotLoader {
  static Result<std::shared_ptr<RingSnapshot>> Load(std::shared_ptr<const void> backing,
                                                          const uint8_t* data, uint64_t size,
                                                          bool mapped,
                                                          const SnapshotLoadOptions& options);
  static Result<Ring> TakeRing(const std::string& path, const SnapshotLoadOptions& options,
                               SnapshotInfo* info, std::vector<NamedSubset>* subsets);
};

namespace {

using namespace internal::snapshot;  // NOLINT: the format's names

Status Bad(std::string_view check, const std::string& detail) {
  return Status(StatusCode::kBadSnapshot, std::string(check) + ": " + detail);
}
Status Untrusted(std::string_view check, const std::string& detail) {
  return Status(StatusCode::kUntrusted, std::string(check) + ": " + detail);
}

bool AllZero(const uint8_t* p, uint64_t size) {
  for (uint64_t i = 0; i < size; ++i) {
    if (p[i] != 0) return false;
  }
  return true;
}

// An OS mapping of a file, unmapped when the last ring using it goes.
struct FileMapping {
  void* data = nullptr;
  size_t size = 0;
  ~FileMapping() {
    if (data != nullptr) munmap(data, size);
  }
};

// Anonymous memory a kCopy load (or a load from bytes) reads the file into:
// 64-byte aligned, huge-page backed when large (as a built ring's columns).
struct CopiedFile {
  internal::AlignedArray<uint8_t> bytes;
};

Result<Flavor> FlavorFromCode(uint8_t code) {
  if (const std::optional<Flavor> flavor = internal::FlavorFromByte(code)) return *flavor;
  return Bad("header", "flavor code " + std::to_string(code) + " is none of " +
                           internal::FlavorByteList());
}

struct Header {
  SnapshotInfo info;
  uint32_t flags = 0;
  uint64_t offset[kSectionCount] = {};
  uint64_t length[kSectionCount] = {};
  uint64_t trailer = 0;
};

// size, magic, version, header, sections: O(1) plus the gaps between
// sections. Never reads outside [data, data + size).
Status ParseHeader(const uint8_t* data, uint64_t size, Header& h) {
  if (size < kHeaderBytes + kTrailerBytes) {
    return Bad("size", "the file has " + std::to_string(size) +
                           " bytes, less than a header and a trailer (640)");
  }
  if (std::memcmp(data + kOffMagic, kMagic, sizeof kMagic) != 0) {
    return Bad("magic", "not a chash ring snapshot (no CHASHRNG magic)");
  }
  SnapshotInfo& info = h.info;
  info.major_version = LoadU16(data + kOffMajor);
  info.minor_version = LoadU16(data + kOffMinor);
  if (info.major_version != kSnapshotMajorVersion) {
    return Bad("version", "format version " + std::to_string(info.major_version) + "." +
                              std::to_string(info.minor_version) + ": this reader knows " +
                              std::to_string(kSnapshotMajorVersion) + ".x only");
  }
  info.file_bytes = LoadU64(data + kOffFileBytes);
  if (info.file_bytes != size) {
    return Bad("size", "the header says " + std::to_string(info.file_bytes) +
                           " bytes, the file has " + std::to_string(size) +
                           (size < info.file_bytes ? " (truncated)" : " (extended)"));
  }
  if (LoadU32(data + kOffHeaderBytes) != kHeaderBytes) {
    return Bad("header", "header size " + std::to_string(LoadU32(data + kOffHeaderBytes)) +
                             ", not 512");
  }
  info.config_version = LoadU64(data + kOffConfigVersion);
  info.created_unix_seconds = static_cast<int64_t>(LoadU64(data + kOffCreated));
  if (data[kOffHashFunction] != kHashFunctionKetamaCrc32) {
    return Bad("header", "hash function " + std::to_string(data[kOffHashFunction]) +
                             " unknown (1: ketama CRC-32)");
  }
  Result<Flavor> flavor = FlavorFromCode(data[kOffFlavor]);
  if (!flavor.ok()) return flavor.status();
  info.flavor = flavor.value();
  info.tie_break = FlavorTieBreak(info.flavor);
  const uint8_t tie_code = TieBreakCode(info.tie_break);
  if (data[kOffTieBreak] != tie_code) {
    return Bad("header", "tie-break " + std::to_string(data[kOffTieBreak]) + " is not " +
                             std::string(FlavorName(info.flavor)) + "'s");
  }
  info.point_multiple = LoadU32(data + kOffMultiple);
  if (info.point_multiple == 0 ||
      ((info.flavor == Flavor::kNginx || info.flavor == Flavor::kPingoraV1) &&
       info.point_multiple != kDefaultPointMultiple)) {
    return Bad("header", "point multiple " + std::to_string(info.point_multiple) +
                             " is not valid for " + std::string(FlavorName(info.flavor)));
  }
  info.nodes = LoadU32(data + kOffNodes);
  info.points = LoadU32(data + kOffPoints);
  info.points_generated = LoadU64(data + kOffPointsGenerated);
  info.losers = LoadU32(data + kOffLosers);
  const uint32_t subsets = LoadU32(data + kOffSubsets);
  if (info.nodes == 0 || info.nodes > kMaxNodes) {
    return Bad("header", std::to_string(info.nodes) + " nodes: must be 1..65,536");
  }
  if (info.points_generated > kHardMaxPoints || info.points > info.points_generated ||
      info.losers > info.points_generated - info.points) {
    return Bad("header", "point counts inconsistent: " + std::to_string(info.points) +
                             " kept + " + std::to_string(info.losers) + " losers of " +
                             std::to_string(info.points_generated) + " generated");
  }
  h.flags = LoadU32(data + kOffFlags);
  if ((h.flags & ~kFlagSigned) != 0) {
    return Bad("header", "unknown flags " + std::to_string(h.flags));
  }
  info.is_signed = (h.flags & kFlagSigned) != 0;
  if (LoadU32(data + kOffSectionCount) != kSectionCount) {
    return Bad("header", "section count " + std::to_string(LoadU32(data + kOffSectionCount)) +
                             ", not 8");
  }
  // Reserved bytes of the minors this reader knows; a later minor may give
  // them meaning.
  if (info.minor_version <= kSnapshotMinorVersion &&
      (data[kOffReserved43] != 0 || !AllZero(data + kOffReserved, kHeaderBytes - kOffReserved))) {
    return Bad("header", "reserved header bytes are not zero");
  }
  std::memcpy(info.fingerprint.bytes.data(), data + kOffFingerprint, 32);
  std::memcpy(info.points_digest.bytes.data(), data + kOffPointsDigest, 32);

  // Sections: in order, aligned, inside [512, trailer), of the lengths the
  // counts imply; the gaps between them zero.
  h.trailer = size - kTrailerBytes;
  const uint64_t n = info.points;
  const uint64_t expected[kSectionCount] = {
      UINT64_MAX,
      UINT64_MAX,
      n == 0 ? 0 : 4 * uint64_t{internal::HashColumnSlots(n)},
      n == 0 ? 0 : 2 * uint64_t{internal::NodeColumnSlots(n)},
      4 * info.losers,
      2 * info.losers,
      UINT64_MAX,
      UINT64_MAX};
  static constexpr const char* kNames[kSectionCount] = {
      "label", "node table", "hash column", "node column", "loser hashes",
      "loser nodes", "subsets", "search index"};
  uint64_t end = kHeaderBytes;
  for (uint32_t s = 0; s < kSectionCount; ++s) {
    const uint64_t offset = LoadU64(data + kOffSections + 16 * s);
    const uint64_t length = LoadU64(data + kOffSections + 16 * s + 8);
    const std::string name = kNames[s];
    if (offset % kSectionAlign != 0) {
      return Bad("sections", name + " at offset " + std::to_string(offset) +
                                 " is not 64-byte aligned");
    }
    if (offset < end || offset > h.trailer || length > h.trailer - offset) {
      return Bad("sections", name + " [" + std::to_string(offset) + ", +" +
                                 std::to_string(length) +
                                 ") overlaps another section or lies outside the file");
    }
    if (expected[s] != UINT64_MAX && length != expected[s]) {
      return Bad("sections", name + " has " + std::to_string(length) + " bytes; the counts need " +
                                 std::to_string(expected[s]));
    }
    if (!AllZero(data + end, offset - end)) {
      return Bad("sections", "nonzero bytes before the " + name);
    }
    h.offset[s] = offset;
    h.length[s] = length;
    end = offset + length;
  }
  if (h.length[kLabel] > kMaxLabelBytes) {
    return Bad("sections", "label of " + std::to_string(h.length[kLabel]) +
                               " bytes (at most 4,096)");
  }
  if (info.minor_version == 0 && h.length[kSearchIndex] != 0) {
    return Bad("sections", "a 1.0 file has no stored search index");
  }
  if (!AllZero(data + end, h.trailer - end)) {
    return Bad("sections", "nonzero bytes before the trailer");
  }
  const uint8_t* trailer = data + h.trailer;
  if (!AllZero(trailer + kTrailReserved, kTrailChecksum - kTrailReserved)) {
    return Bad("sections", "reserved trailer bytes are not zero");
  }
  std::memcpy(info.key_id.data(), trailer + kTrailKeyId, 8);
  if (!info.is_signed && !AllZero(trailer + kTrailKeyId, kTrailReserved)) {
    return Bad("sections", "an unsigned file with a key id or signature");
  }
  std::memcpy(info.checksum.data(), trailer + kTrailChecksum, 16);
  info.column_bytes = h.length[kHashColumn] + h.length[kNodeColumn];
  info.collision_bytes = h.length[kLoserHashes] + h.length[kLoserNodes];
  info.index_bytes = h.length[kSearchIndex];
  info.other_bytes = size - info.column_bytes - info.collision_bytes - info.index_bytes;
  info.label.assign(reinterpret_cast<const char*>(data + h.offset[kLabel]), h.length[kLabel]);
  (void)subsets;
  return Status();
}

// The trusted key that signed the file (a key id lookup, O(keys)), or the
// reason there is none.
Status FindSigner(const Header& h, const std::vector<PublicKey>& trusted,
                  const PublicKey*& signer) {
  if (!h.info.is_signed) {
    return Untrusted("signature", "the snapshot is not signed and trusted keys are required");
  }
  for (const PublicKey& candidate : trusted) {
    if (candidate.KeyId() == h.info.key_id) signer = &candidate;
  }
  if (signer == nullptr) {
    return Untrusted("signature", "signed by key " + h.info.KeyIdHex() +
                                      ", which is not a trusted key");
  }
  return Status();
}

// Verifies the signature by `signer`: over BLAKE2b-256 of the file for 1.0,
// over the chunk tree `tree` has been hashing since the load began for 1.1
// and later.
Status VerifySignature(const uint8_t* data, const Header& h, const PublicKey& signer,
                       ChunkTreeJob* tree) {
  SignedMessage message;
  if (h.info.minor_version == 0 || tree == nullptr) {
    if (!MakeSignedMessage(h.info.minor_version, data, h.trailer, internal::BuildThreads(),
                           message)) {
      throw std::bad_alloc();
    }
  } else {
    std::array<uint8_t, 32> root;
    if (!tree->Finish(root)) throw std::bad_alloc();  // a digest context
    std::memcpy(message.bytes.data(), kSignatureContext11.data(), kSignatureContext11.size());
    std::memcpy(message.bytes.data() + kSignatureContext11.size(), root.data(), root.size());
    message.size = kSignatureContext11.size() + root.size();
  }
  if (crypto_sign_ed25519_verify_detached(data + h.trailer + kTrailSignature,
                                          message.bytes.data(), message.size,
                                          signer.bytes.data()) != 0) {
    return Untrusted("signature", "the Ed25519 signature by key " + h.info.KeyIdHex() +
                                      " does not verify: the file was altered after signing");
  }
  return Status();
}

// The node table: addresses parsed by the flavor, duplicates, weights.
Status ParseNodeTable(const uint8_t* data, const Header& h, std::vector<NodeInfo>& nodes) {
  const SnapshotInfo& info = h.info;
  const uint8_t* p = data + h.offset[kNodeTable];
  const uint8_t* const end = p + h.length[kNodeTable];
  std::unordered_set<std::string> hashed_seen;
  uint64_t generated = 0;
  nodes.reserve(info.nodes);
  for (uint32_t id = 0; id < info.nodes; ++id) {
    const std::string label = "node " + std::to_string(id);
    if (end - p < 8) return Bad("node_table", label + ": the table ends early");
    const uint32_t weight = LoadU32(p);
    const uint32_t length = LoadU32(p + 4);
    p += 8;
    if (length == 0 || length > kMaxAddressBytes) {
      return Bad("node_table", label + ": address of " + std::to_string(length) + " bytes");
    }
    const uint64_t padded = RoundUp(length, 4);
    if (static_cast<uint64_t>(end - p) < padded) {
      return Bad("node_table", label + ": the address overruns the table");
    }
    const std::string_view written(reinterpret_cast<const char*>(p), length);
    if (!AllZero(p + length, padded - length)) {
      return Bad("node_table", label + ": nonzero padding");
    }
    p += padded;
    Result<NodeAddress> address = ParseNodeAddress(info.flavor, written);
    if (!address.ok()) {
      // Running out of memory says nothing about the file: not a refusal.
      if (address.status().code() == StatusCode::kOutOfMemory) throw std::bad_alloc();
      return Bad("node_table", label + ": " + address.status().message());
    }
    if (!hashed_seen.insert(address.value().HashedBytes()).second) {
      return Bad("node_table", label + " '" + std::string(written) +
                                   "': a duplicate of an earlier server");
    }
    generated += uint64_t{weight} * info.point_multiple;
    if (generated > kHardMaxPoints) {
      return Bad("node_table", "the weights generate more than 2^31 - 1 points");
    }
    nodes.push_back(NodeInfo{std::move(address).value(), weight});
  }
  if (p != end) return Bad("node_table", "bytes left after the last node");
  if (generated != info.points_generated) {
    return Bad("node_table", "the weights generate " + std::to_string(generated) +
                                 " points, the header says " +
                                 std::to_string(info.points_generated));
  }
  return Status();
}

// The hash and node columns: order, sentinels and tails, node ids, and the
// bit set of the nodes that own points. Always checked, even when the
// checksum is not: the search relies on the order and the sentinels to stay
// inside the columns, and callers index the node table with the ids.
Status CheckColumns(const uint32_t* hash, const uint16_t* node, uint64_t n,
                    internal::RingState& state) {
  const std::vector<NodeInfo>& nodes = state.nodes;
  state.owns_points.assign((nodes.size() + 63) / 64, 0);
  state.nodes_with_points = 0;
  if (n == 0) {
    state.has_points = state.owns_points;
    return Status();
  }
  const uint64_t hash_slots = internal::HashColumnSlots(n);
  const uint64_t node_slots = internal::NodeColumnSlots(n);
  for (uint64_t i = 1; i < n; ++i) {
    if (hash[i] <= hash[i - 1]) {
      return Bad("hash_column", "slot " + std::to_string(i) + " (" + std::to_string(hash[i]) +
                                    ") is not above slot " + std::to_string(i - 1) + " (" +
                                    std::to_string(hash[i - 1]) + ")");
    }
  }
  for (uint64_t i = n; i < hash_slots; ++i) {
    if (hash[i] != UINT32_MAX) {
      return Bad("hash_column", "sentinel slot " + std::to_string(i) + " is not 2^32 - 1");
    }
  }
  // Node ids: one store a point into a byte table of all 65,536 ids (no
  // branch in the loop), then one pass over the table checks each id that
  // appears against the node count and its weight.
  const uint32_t num_nodes = static_cast<uint32_t>(nodes.size());
  std::vector<uint8_t> seen(kMaxNodes, 0);
  for (uint64_t i = 0; i < n; ++i) seen[node[i]] = 1;
  for (uint32_t id = 0; id < kMaxNodes; ++id) {
    if (!seen[id]) continue;
    if (id >= num_nodes) {
      const uint64_t slot = static_cast<uint64_t>(std::find(node, node + n, id) - node);
      return Bad("node_column", "slot " + std::to_string(slot) + " names node " +
                                    std::to_string(id) + " of " + std::to_string(num_nodes));
    }
    if (nodes[id].weight == 0) {
      return Bad("node_column", "node " + std::to_string(id) +
                                    " has weight 0 but owns points");
    }
    state.owns_points[id / 64] |= uint64_t{1} << (id % 64);
    ++state.nodes_with_points;
  }
  for (uint64_t i = n; i < node_slots; ++i) {
    if (node[i] != node[0]) {
      return Bad("node_column", "tail slot " + std::to_string(i) + " is not the first point's node");
    }
  }
  state.has_points = state.owns_points;
  return Status();
}

// The collision table: node ids, order, and each loser at a hash of the
// column that another node won. O(c log(n / c)).
Status CheckLosers(const uint32_t* hash, const uint16_t* node, uint64_t n,
                   const uint32_t* loser_hash, const uint16_t* loser_node, uint64_t c,
                   internal::RingState& state) {
  const uint32_t num_nodes = static_cast<uint32_t>(state.nodes.size());
  uint64_t slot = 0;  // galloping cursor into the hash column
  for (uint64_t i = 0; i < c; ++i) {
    const uint16_t id = loser_node[i];
    if (id >= num_nodes || state.nodes[id].weight == 0) {
      return Bad("collisions", "loser " + std::to_string(i) + " names node " +
                                   std::to_string(id) +
                                   (id >= num_nodes ? ", past the node table" : " of weight 0"));
    }
    state.has_points[id / 64] |= uint64_t{1} << (id % 64);
    const uint32_t h = loser_hash[i];
    if (i > 0 && h < loser_hash[i - 1]) {
      return Bad("collisions", "loser hashes not ascending at " + std::to_string(i));
    }
    // Gallop from the last slot to the first hash >= h.
    uint64_t step = 1, low = slot, high = slot;
    while (high < n && hash[high] < h) {
      low = high + 1;
      high = std::min(n, high + step);
      step *= 2;
    }
    slot = static_cast<uint64_t>(std::lower_bound(hash + low, hash + high, h) - hash);
    if (slot >= n || hash[slot] != h) {
      return Bad("collisions", "loser " + std::to_string(i) + " at hash " + std::to_string(h) +
                                   " where the ring has no point");
    }
    if (node[slot] == id) {
      return Bad("collisions", "loser " + std::to_string(i) + " is its hash's kept point");
    }
  }
  return Status();
}

Status ParseSubsets(const uint8_t* data, const Header& h, std::vector<NamedSubset>& subsets) {
  const uint32_t count = LoadU32(data + kOffSubsets);
  const uint32_t nodes = h.info.nodes;
  const uint64_t words = (uint64_t{nodes} + 63) / 64;
  const uint8_t* p = data + h.offset[kSubsets];
  const uint8_t* const end = p + h.length[kSubsets];
  std::set<std::string> names;
  for (uint32_t s = 0; s < count; ++s) {
    if (end - p < 4) return Bad("subsets", "the section ends before subset " + std::to_string(s));
    const uint32_t length = LoadU32(p);
    if (length == 0 || length > kMaxSubsetNameBytes) {
      return Bad("subsets", "subset " + std::to_string(s) + ": name of " +
                                std::to_string(length) + " bytes");
    }
    const uint64_t head = RoundUp(4 + uint64_t{length}, 8);
    if (static_cast<uint64_t>(end - p) < head + 8 * words) {
      return Bad("subsets", "subset " + std::to_string(s) + " overruns the section");
    }
    std::string name(reinterpret_cast<const char*>(p + 4), length);
    if (!ValidSubsetName(name)) {
      return Bad("subsets", "subset " + std::to_string(s) + ": bad name");
    }
    if (!AllZero(p + 4 + length, head - 4 - length)) {
      return Bad("subsets", "subset '" + name + "': nonzero padding");
    }
    if (!names.insert(name).second) return Bad("subsets", "subset '" + name + "' twice");
    p += head;
    // Create, not the constructor: a mask that could not be allocated
    // would be a subset of no node, silently.
    Result<NodeMask> made = NodeMask::Create(nodes, false);
    if (!made.ok()) throw std::bad_alloc();
    NodeMask mask = std::move(made).value();
    for (uint64_t w = 0; w < words; ++w, p += 8) {
      const uint64_t bits = LoadU64(p);
      const uint64_t first = 64 * w;
      const uint64_t valid = nodes - first >= 64 ? ~uint64_t{0}
                                                 : (uint64_t{1} << (nodes - first)) - 1;
      if ((bits & ~valid) != 0) {
        return Bad("subsets", "subset '" + name + "' names nodes past the node table");
      }
      for (uint64_t rest = bits; rest != 0; rest &= rest - 1) {
        mask.Set(static_cast<uint32_t>(first + std::countr_zero(rest)), true);
      }
    }
    subsets.push_back(NamedSubset{std::move(name), std::move(mask)});
  }
  if (p != end) return Bad("subsets", "bytes left after the last subset");
  return Status();
}

// The search index: the stored one once it is checked to be exactly the
// index of the hash column (SearchIndex::AdoptStored: no private memory), or
// one built here for files without one (1.0 files, `chash build
// --no-index`), with layout 1 (1.1 files: a prefix table this reader no
// longer searches) or with a layout of a later minor this reader does not
// know.
Status AdoptOrBuildIndex(const uint8_t* data, const Header& h, internal::Columns& columns) {
  const uint64_t length = h.length[kSearchIndex];
  const uint8_t* section = data + h.offset[kSearchIndex];
  const uint32_t layout = length >= kIndexHeaderBytes ? LoadU32(section + kIndexOffLayout) : 0;
  const bool superseded = h.info.minor_version == 1 && layout == kIndexLayoutSTree16;
  const bool later = h.info.minor_version > kSnapshotMinorVersion &&
                     length >= kIndexHeaderBytes && layout != kIndexLayoutSlotTable;
  if (length == 0 || superseded || later) {
    if (!internal::BuildColumnsIndex(columns)) {
      return Status(StatusCode::kOutOfMemory, "index: out of memory building the search index");
    }
    return Status();
  }
  if (length < kIndexHeaderBytes) {
    return Bad("index", "a section of " + std::to_string(length) + " bytes has no index header");
  }
  if (layout != kIndexLayoutSlotTable || h.info.minor_version < 2) {
    return Bad("index", "layout " + std::to_string(layout) + " in a file of version 1." +
                            std::to_string(h.info.minor_version) +
                            " (1.1 stores layout 1, 1.2 layout 2)");
  }
  if (LoadU32(section + kIndexOffEntryLevel) != 0 ||
      !AllZero(section + kIndexOffReserved, kIndexHeaderBytes - kIndexOffReserved)) {
    return Bad("index", "reserved bytes of the index header are not zero");
  }
  const uint32_t n = columns.size;
  int levels = 0;
  const uint64_t key_count = internal::SearchIndex::LevelKeyCount(n, levels);
  const uint32_t stored_levels = LoadU32(section + kIndexOffLevels);
  const uint32_t table_bits = LoadU32(section + kIndexOffTableBits);
  if (stored_levels != static_cast<uint32_t>(levels)) {
    return Bad("index", std::to_string(stored_levels) + " levels; " + std::to_string(n) +
                            " points need " + std::to_string(levels));
  }
  const int expected_bits = internal::SearchIndex::TableBitsFor(n);
  if (table_bits != static_cast<uint32_t>(expected_bits)) {
    return Bad("index", "a slot table of 2^" + std::to_string(table_bits) + " buckets; " +
                            std::to_string(n) + " points need 2^" +
                            std::to_string(expected_bits));
  }
  const uint64_t table_entries = (uint64_t{1} << table_bits) + 1;
  const uint64_t expected = kIndexHeaderBytes + 4 * (key_count + table_entries);
  if (length != expected) {
    return Bad("index", "the section has " + std::to_string(length) + " bytes; its levels and "
                        "table need " + std::to_string(expected));
  }
  const auto* keys = reinterpret_cast<const uint32_t*>(section + kIndexHeaderBytes);
  if (const char* wrong = columns.index.AdoptStored(columns.hash.data(), n, keys, key_count,
                                                    table_bits, keys + key_count,
                                                    table_entries)) {
    return Bad("index", wrong);
  }
  return Status();
}

}  // namespace

Result<std::shared_ptr<RingSnapshot>> SnapshotLoader::Load(
    std::shared_ptr<const void> backing, const uint8_t* data, uint64_t size, bool mapped,
    const SnapshotLoadOptions& options) {
  static_assert(std::endian::native == std::endian::little,
                "snapshots are mapped as little-endian columns");
  try {
    Header h;
    if (Status status = ParseHeader(data, size, h); !status.ok()) return status;
    const SnapshotInfo& info = h.info;
    // A signature's chunks are hashed on other threads (ChunkTreeJob) while
    // this one checks the content; its verdict is still reported in the
    // documented order (signature_first).
    const PublicKey* signer = nullptr;
    Status signer_status;
    std::optional<ChunkTreeJob> tree;
    if (!options.trusted_keys.empty()) {
      signer_status = FindSigner(h, options.trusted_keys, signer);
      if (signer_status.ok() && info.minor_version >= 1) {
        tree.emplace(data, h.trailer, internal::BuildThreads());
      }
    }
    // A chunk tree that verifies proves every byte before the trailer (SHA-256,
    // signed), more than the checksum's XXH3 of the same bytes: such a load
    // runs the checksum only on its way to refusing the file, so a damaged
    // file is still named by its first failed check, "checksum", and the
    // loading thread goes straight to the checks below and to the chunks.
    const bool checksum_on_refusal = options.verify && tree.has_value();
    const auto damaged = [&]() -> std::optional<Status> {
      if (Checksum(data, size - 16) == info.checksum) return std::nullopt;
      return Bad("checksum", "XXH3-128 of the file differs from the trailer's: the file is "
                             "damaged");
    };
    if (options.verify && !checksum_on_refusal) {
      if (std::optional<Status> status = damaged()) return *status;
    }
    const auto refuse = [&](Status status) -> Status {
      if (!status.ok() && checksum_on_refusal) {
        if (std::optional<Status> checksum = damaged()) return *checksum;
      }
      return status;
    };
    if (info.config_version < options.min_config_version) {
      return refuse(Untrusted("min_version", "config version " +
                                                 std::to_string(info.config_version) +
                                                 " is below the minimum " +
                                                 std::to_string(options.min_config_version)));
    }
    if (!signer_status.ok()) return signer_status;
    // The signature's verdict comes before that of every later check. The
    // checks below are safe on any bytes (they are what verify = false
    // relies on), so they run while the chunks are hashed.
    const auto signature_first = [&](Status status) -> Status {
      if (signer == nullptr) return refuse(status);
      const PublicKey& key = *signer;
      signer = nullptr;
      Status verdict = VerifySignature(data, h, key, tree ? &*tree : nullptr);
      return refuse(verdict.ok() ? status : verdict);
    };
    if (!ValidLabel(info.label)) return signature_first(Bad("label", "not UTF-8 text without NUL"));

    auto snapshot = std::make_shared<RingSnapshot>();
    auto state = std::make_unique<internal::RingState>();
    state->flavor = info.flavor;
    state->point_multiple = info.point_multiple;
    state->tie_break = info.tie_break;
    state->points_generated = info.points_generated;
    if (Status status = ParseNodeTable(data, h, state->nodes); !status.ok()) {
      return signature_first(status);
    }

    const uint64_t n = info.points;
    const auto* hash = reinterpret_cast<const uint32_t*>(data + h.offset[kHashColumn]);
    const auto* node = reinterpret_cast<const uint16_t*>(data + h.offset[kNodeColumn]);
    if (Status status = CheckColumns(hash, node, n, *state); !status.ok()) {
      return signature_first(status);
    }
    const auto* loser_hash = reinterpret_cast<const uint32_t*>(data + h.offset[kLoserHashes]);
    const auto* loser_node = reinterpret_cast<const uint16_t*>(data + h.offset[kLoserNodes]);
    if (Status status = CheckLosers(hash, node, n, loser_hash, loser_node, info.losers, *state);
        !status.ok()) {
      return signature_first(status);
    }
    if (Status status = ParseSubsets(data, h, snapshot->subsets_); !status.ok()) {
      return signature_first(status);
    }
    for (const NamedSubset& subset : snapshot->subsets_) {
      snapshot->info_.subset_names.push_back(subset.name);
    }

    if (n == 0 && h.length[kSearchIndex] != 0) {
      return signature_first(Bad("index", "a ring without points has no search index"));
    }
    if (n > 0) {
      state->columns.size = static_cast<uint32_t>(n);
      state->columns.hash.Borrow(hash, internal::HashColumnSlots(n));
      state->columns.node.Borrow(node, internal::NodeColumnSlots(n));
      if (Status status = AdoptOrBuildIndex(data, h, state->columns); !status.ok()) {
        return signature_first(status);
      }
    }
    if (info.losers > 0) {
      state->losers.borrowed_hash = {loser_hash, info.losers};
      state->losers.borrowed_node = {loser_node, info.losers};
    }
    // Before the backing moves into the ring: no helper thread may read the
    // file once a failure below could release it.
    if (Status status = signature_first(Status()); !status.ok()) return status;
    state->backing = std::move(backing);
    Ring ring = internal::RingFactory::Make(std::move(state));
    // The throwing forms: the noexcept ones answer a zero sentinel when out
    // of memory, which would fail a sound file's check instead of reporting.
    if (Sha256(internal::RingIdentityBytesOrThrow(ring)) != info.fingerprint) {
      return refuse(Bad("fingerprint", "the node table's fingerprint differs from the header's"));
    }
    if (options.verify_points_digest &&
        internal::PointsDigestOrThrow(ring) != info.points_digest) {
      return refuse(Bad("points_digest", "the points differ from the header's points digest"));
    }
    std::vector<std::string> names = std::move(snapshot->info_.subset_names);
    snapshot->info_ = info;
    snapshot->info_.subset_names = std::move(names);
    snapshot->ring_ = std::move(ring);
    snapshot->mapped_ = mapped;
    return snapshot;
  } catch (const std::bad_alloc&) {
    return internal::OutOfMemory("loading a snapshot");
  }
}

namespace {

Result<std::shared_ptr<RingSnapshot>> LoadCopy(const uint8_t* data, uint64_t size,
                                                     const SnapshotLoadOptions& options) {
  auto copy = std::make_shared<CopiedFile>();
  if (size > 0 && !copy->bytes.Allocate(size)) {
    return internal::OutOfMemory("copying a snapshot");
  }
  if (size > 0) std::memcpy(copy->bytes.data(), data, size);
  const uint8_t* bytes = copy->bytes.data();
  return SnapshotLoader::Load(std::move(copy), bytes, size, false, options);
}

}  // namespace

namespace internal {

FileIdentity IdentityOfPath(const std::string& path) noexcept {
  struct stat st {};
  FileIdentity identity;
  if (stat(path.c_str(), &st) != 0) return identity;
  identity.device = st.st_dev;
  identity.inode = st.st_ino;
  identity.size = st.st_size;
  identity.mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  return identity;
}

namespace {

// Closes a descriptor on every path out, exceptions included.
struct Descriptor {
  int fd = -1;
  ~Descriptor() {
    if (fd >= 0) close(fd);
  }
};

// An mmap failure: ENOMEM means the address space cannot hold the file
// (ulimit -v, a 32-bit process), which is running out of memory, not a bad
// file.
Status MapFailed(const std::string& path, uint64_t size, int error) {
  if (error == ENOMEM) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory: cannot map the file's " + std::to_string(size) + " bytes (" +
                      path + ")");
  }
  return Status(StatusCode::kIoError, "io: " + path + ": mmap: " + std::strerror(error));
}

// kCopy reads the file with pread, never through a mapping: a file
// truncated while it is read gives a short read (the size check), where a
// copy out of a mapping would take SIGBUS, the very crash kCopy is for.
Result<std::shared_ptr<RingSnapshot>> ReadCopy(int fd, uint64_t size,
                                               const SnapshotLoadOptions& options) {
  auto copy = std::make_shared<CopiedFile>();
  if (!copy->bytes.Allocate(size)) {
    return internal::OutOfMemory("copying a snapshot");
  }
  uint8_t* bytes = copy->bytes.data();
  uint64_t done = 0;
  while (done < size) {
    const auto chunk = static_cast<size_t>(std::min<uint64_t>(size - done, uint64_t{1} << 30));
    const ssize_t got = pread(fd, bytes + done, chunk, static_cast<off_t>(done));
    if (got < 0) {
      if (errno == EINTR) continue;
      const int error = errno;
      return Status(StatusCode::kIoError, std::string("io: read: ") + std::strerror(error));
    }
    if (got == 0) {
      return Bad("size", "the file shrank to " + std::to_string(done) + " bytes while it was "
                         "read (it had " + std::to_string(size) + ")");
    }
    done += static_cast<uint64_t>(got);
  }
  return SnapshotLoader::Load(std::move(copy), bytes, size, false, options);
}

Result<std::shared_ptr<RingSnapshot>> NamingThePath(Result<std::shared_ptr<RingSnapshot>> loaded,
                                                    const std::string& path) {
  if (!loaded.ok()) {
    const Status& status = loaded.status();
    return Status(status.code(), status.message() + " (" + path + ")");
  }
  return loaded;
}

// Opens `path` for a load: the descriptor, and its size from fstat of that
// descriptor, never of the path (a rename between open and fstat cannot
// make the two disagree). Refuses what is not a regular file or cannot hold
// a header and a trailer. `identity` (if given) receives the file's
// device, inode, size and modification time.
Status OpenSnapshotFile(const std::string& path, Descriptor& file, uint64_t& size,
                        FileIdentity* identity) {
  file.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (file.fd < 0) {
    const int error = errno;
    return Status(StatusCode::kIoError, "io: " + path + ": " + std::strerror(error));
  }
  struct stat st {};
  if (fstat(file.fd, &st) != 0) {
    const int error = errno;
    return Status(StatusCode::kIoError, "io: " + path + ": fstat: " + std::strerror(error));
  }
  if (identity != nullptr) {
    identity->device = st.st_dev;
    identity->inode = st.st_ino;
    identity->size = st.st_size;
    identity->mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  }
  if (!S_ISREG(st.st_mode)) {
    return Status(StatusCode::kIoError, "io: " + path + ": not a regular file");
  }
  size = static_cast<uint64_t>(st.st_size);
  if (size < kHeaderBytes + kTrailerBytes) {
    return Bad("size", path + " has " + std::to_string(size) +
                           " bytes, less than a header and a trailer (640)");
  }
  return Status();
}

}  // namespace

Result<std::shared_ptr<RingSnapshot>> LoadSnapshotFileMutable(const std::string& path,
                                                              const SnapshotLoadOptions& options,
                                                              FileIdentity* identity) {
  Descriptor file;
  uint64_t size = 0;
  if (Status status = OpenSnapshotFile(path, file, size, identity); !status.ok()) return status;
  if (options.mode == SnapshotLoadMode::kCopy) {
    return NamingThePath(ReadCopy(file.fd, size, options), path);
  }
  // Made before the mapping, so that nothing can throw between mmap and
  // the owner that unmaps it.
  auto mapping = std::make_shared<FileMapping>();
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED | MAP_POPULATE, file.fd, 0);
  if (map == MAP_FAILED) return MapFailed(path, size, errno);
  mapping->data = map;
  mapping->size = size;
  close(file.fd);  // the mapping keeps the file
  file.fd = -1;
  const auto* data = static_cast<const uint8_t*>(map);
  return NamingThePath(SnapshotLoader::Load(std::move(mapping), data, size, true, options), path);
}

Result<std::shared_ptr<const RingSnapshot>> LoadSnapshotFile(const std::string& path,
                                                             const SnapshotLoadOptions& options,
                                                             FileIdentity* identity) {
  return CatchOutOfMemory(
      "loading a snapshot", path, [&]() -> Result<std::shared_ptr<const RingSnapshot>> {
        Result<std::shared_ptr<RingSnapshot>> loaded =
            LoadSnapshotFileMutable(path, options, identity);
        if (!loaded.ok()) return loaded.status();
        return std::shared_ptr<const RingSnapshot>(std::move(loaded).value());
      });
}

}  // namespace internal

Result<std::shared_ptr<const RingSnapshot>> LoadSnapshot(const std::string& path,
                                                         const SnapshotLoadOptions& options) {
  return internal::LoadSnapshotFile(path, options, nullptr);
}

Result<std::shared_ptr<const RingSnapshot>> LoadSnapshotFromBytes(
    std::string_view bytes, const SnapshotLoadOptions& options) {
  return internal::CatchOutOfMemory(
      "loading a snapshot", "bytes", [&]() -> Result<std::shared_ptr<const RingSnapshot>> {
        Result<std::shared_ptr<RingSnapshot>> loaded =
            LoadCopy(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), options);
        if (!loaded.ok()) return loaded.status();
        return std::shared_ptr<const RingSnapshot>(std::move(loaded).value());
      });
}

Result<Ring> SnapshotLoader::TakeRing(const std::string& path, const SnapshotLoadOptions& options,
                                      SnapshotInfo* info, std::vector<NamedSubset>* subsets) {
  return internal::CatchOutOfMemory("loading a snapshot", path, [&]() -> Result<Ring> {
    Result<std::shared_ptr<RingSnapshot>> loaded =
        internal::LoadSnapshotFileMutable(path, options, nullptr);
    if (!loaded.ok()) return loaded.status();
    RingSnapshot& snapshot = *loaded.value();
    // The copy first, then moves that cannot fail: on an error *info and
    // *subsets are as they were.
    if (info != nullptr) {
      SnapshotInfo copy = snapshot.info_;
      *info = std::move(copy);
    }
    if (subsets != nullptr) *subsets = std::move(snapshot.subsets_);
    return std::move(snapshot.ring_);  // its state keeps the mapping alive
  });
}

Result<Ring> LoadSnapshotRing(const std::string& path, const SnapshotLoadOptions& options,
                              SnapshotInfo* info, std::vector<NamedSubset>* subsets) {
  return SnapshotLoader::TakeRing(path, options, info, subsets);
}

Result<SnapshotInfo> ReadSnapshotInfo(const std::string& path) {
  return internal::CatchOutOfMemory("reading a snapshot header", path, [&]() -> Result<SnapshotInfo> {
    // Mapped without reading ahead: only the header, the gaps, the subsets
    // and the trailer are touched.
    internal::Descriptor file;
    uint64_t size = 0;
    if (Status status = internal::OpenSnapshotFile(path, file, size, nullptr); !status.ok()) {
      return status;
    }
    FileMapping mapping;
    void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, file.fd, 0);
    if (map == MAP_FAILED) return internal::MapFailed(path, size, errno);
    mapping.data = map;
    mapping.size = size;
    const auto* data = static_cast<const uint8_t*>(map);
    Header h;
    if (Status status = ParseHeader(data, size, h); !status.ok()) return status;
    std::vector<NamedSubset> subsets;
    if (ParseSubsets(data, h, subsets).ok()) {
      for (const NamedSubset& subset : subsets) h.info.subset_names.push_back(subset.name);
    }
    return std::move(h.info);
  });
}

const NodeMask* RingSnapshot::FindSubset(std::string_view name) const noexcept {
  for (const NamedSubset& subset : subsets_) {
    if (subset.name == name) return &subset.mask;
  }
  return nullptr;
}

std::shared_ptr<const Ring> RingOf(std::shared_ptr<const RingSnapshot> snapshot) noexcept {
  if (!snapshot) return nullptr;
  const Ring* ring = &snapshot->ring();
  return std::shared_ptr<const Ring>(std::move(snapshot), ring);
}

std::string_view FailedSnapshotCheck(const Status& status) noexcept {
  if (status.code() != StatusCode::kBadSnapshot && status.code() != StatusCode::kUntrusted &&
      status.code() != StatusCode::kIoError) {
    return {};
  }
  const std::string& message = status.message();
  const size_t colon = message.find(':');
  if (colon == std::string::npos) return {};
  return std::string_view(message).substr(0, colon);
}

}  // namespace chash
