// Snapshot loader: the checks of include/chash/snapshot.h, in its order,
// over bytes that snapshot_open.cc has read (the header and trailer first,
// then the body: a sealed copy, a private copy or the file's own pages).
#include <sodium/crypto_sign_ed25519.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <ctime>
#include <cstring>
#include <new>
#include <optional>
#include <set>
#include <unordered_set>

#include "builder/columns_builder.h"
#include "builder/flavor_points.h"
#include "builder/parallel.h"
#include "chash/snapshot.h"
#include "flavors.h"
#include "layout/aligned_array.h"
#include "identity/throwing_cores.h"
#include "identity/sha256.h"
#include "ring/ring_state.h"
#include "snapshot/format.h"
#include "snapshot/loader.h"
#include "util/out_of_memory.h"

namespace chash {

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

// A text of `length` bytes at p, zero-padded to a multiple of 4, that must
// end by `end`: its view into `text`, with p moved past the padding. Errors
// name the `check`, the entry (`label`) and what the text is (`noun`).
// (A Status and an out parameter, not a Result<std::string_view>: each
// Result type instantiated here would add a symbol to libchash.so's exports.)
Status ReadPaddedText(const uint8_t*& p, const uint8_t* end, uint32_t length,
                      std::string_view check, const std::string& label, std::string_view noun,
                      std::string_view& text) {
  const std::string what = label + ": " + std::string(noun);
  if (length == 0 || length > kMaxAddressBytes) {
    return Bad(check, what + " of " + std::to_string(length) + " bytes");
  }
  const uint64_t padded = RoundUp(length, 4);
  if (static_cast<uint64_t>(end - p) < padded) {
    return Bad(check, what + " overruns the " + std::string(check));
  }
  if (!AllZero(p + length, padded - length)) return Bad(check, label + ": nonzero padding");
  text = std::string_view(reinterpret_cast<const char*>(p), length);
  p += padded;
  return Status();
}

// Anonymous memory a load from bytes copies them into: 64-byte aligned,
// huge-page backed when large (as a built ring's columns).
struct CopiedBytes {
  internal::AlignedArray<uint8_t> bytes;
};

Result<Flavor> FlavorFromCode(uint8_t code) {
  if (const std::optional<Flavor> flavor = internal::FlavorFromByte(code)) return *flavor;
  return Bad("header", "flavor code " + std::to_string(code) + " is none of " +
                           internal::FlavorByteList());
}

}  // namespace

namespace internal {

// size, magic, version, header, sections (the table), the trailer's
// reserved bytes and key id: from the header's 512 bytes and the trailer's
// 128 alone, O(1). Never reads outside them.
Status ParseFixedHeader(const uint8_t* data, const uint8_t* trailer, uint64_t size,
                        Header& h) {
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
  if (data[kOffHashFunction] != kHashFunctionKetamaCrc32 &&
      data[kOffHashFunction] != kHashFunctionFlavorOptions) {
    return Bad("header", "hash function " + std::to_string(data[kOffHashFunction]) +
                             " unknown (1: ketama CRC-32, 2: the flavor's options)");
  }
  Result<Flavor> flavor = FlavorFromCode(data[kOffFlavor]);
  if (!flavor.ok()) return flavor.status();
  info.flavor = flavor.value();
  // The other programs' flavors (1.4): their points and key hashes are
  // their options', in section 8; the CRC-32 flavors' are the ketama chain.
  const bool program = internal::IsProgramFlavor(info.flavor);
  const std::string flavor_name(FlavorName(info.flavor));
  if (program && info.minor_version < kMinorWithProgramFlavors) {
    return Bad("header", flavor_name + " rings need format 1.4; the file says 1." +
                             std::to_string(info.minor_version));
  }
  const uint8_t hash_code = program ? kHashFunctionFlavorOptions : kHashFunctionKetamaCrc32;
  if (data[kOffHashFunction] != hash_code) {
    return Bad("header", "hash function " + std::to_string(data[kOffHashFunction]) +
                             " is not " + flavor_name + "'s (" + std::to_string(hash_code) + ")");
  }
  info.tie_break = FlavorTieBreak(info.flavor);
  const uint8_t tie_code = TieBreakCode(info.tie_break);
  if (data[kOffTieBreak] != tie_code) {
    return Bad("header", "tie-break " + std::to_string(data[kOffTieBreak]) + " is not " +
                             std::string(FlavorName(info.flavor)) + "'s");
  }
  info.point_multiple = LoadU32(data + kOffMultiple);
  // The other flavors' multiple is their options' (checked with them).
  if ((!program && info.point_multiple == 0) ||
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
      info.losers > info.points_generated - info.points || (program && info.losers != 0)) {
    return Bad("header", "point counts inconsistent: " + std::to_string(info.points) +
                             " kept + " + std::to_string(info.losers) + " losers of " +
                             std::to_string(info.points_generated) + " generated");
  }
  // The other programs' rings keep every point (a maglev table: every entry).
  if (program && info.points != info.points_generated) {
    return Bad("header", flavor_name + " rings keep every point: " + std::to_string(info.points) +
                             " kept of " + std::to_string(info.points_generated) + " generated");
  }
  h.flags = LoadU32(data + kOffFlags);
  if ((h.flags & ~kFlagSigned) != 0) {
    return Bad("header", "unknown flags " + std::to_string(h.flags));
  }
  info.is_signed = (h.flags & kFlagSigned) != 0;
  h.section_count = program ? kProgramSectionCount : kSectionCount;
  if (LoadU32(data + kOffSectionCount) != h.section_count) {
    return Bad("header", "section count " + std::to_string(LoadU32(data + kOffSectionCount)) +
                             ", not " + std::to_string(h.section_count) + " (" + flavor_name +
                             ")");
  }
  // Reserved bytes of the minors this reader knows; a later minor may give
  // them meaning. The expiry is reserved (zero) before 1.3; sections 8 and 9
  // are listed only in the other programs' flavors' files.
  const size_t reserved_from = info.minor_version < kMinorWithExpiry ? kOffExpires
                               : program                            ? kOffReserved14
                                                                    : kOffReserved;
  if (info.minor_version <= kSnapshotMinorVersion &&
      (data[kOffReserved43] != 0 ||
       !AllZero(data + reserved_from, kHeaderBytes - reserved_from))) {
    return Bad("header", "reserved header bytes are not zero");
  }
  info.expires_unix_seconds =
      info.minor_version >= kMinorWithExpiry ? static_cast<int64_t>(LoadU64(data + kOffExpires))
                                             : 0;
  if (info.expires_unix_seconds < 0) {
    return Bad("header", "expiry " + std::to_string(info.expires_unix_seconds) +
                             " is not a Unix time");
  }
  std::memcpy(info.fingerprint.bytes.data(), data + kOffFingerprint, 32);
  std::memcpy(info.points_digest.bytes.data(), data + kOffPointsDigest, 32);

  // Sections: in order, aligned, inside [512, trailer), of the lengths the
  // counts imply; the gaps between them zero.
  h.trailer = size - kTrailerBytes;
  const uint64_t n = info.points;
  // envoy-maglev: the table of n entries is the node column, without a
  // sentinel; no hash column. envoy-ring: the low halves, as the hash column.
  const bool table = info.flavor == Flavor::kEnvoyMaglev;
  const uint64_t expected[kMaxSectionCount] = {
      UINT64_MAX,
      UINT64_MAX,
      n == 0 || table ? 0 : 4 * uint64_t{internal::HashColumnSlots(n)},
      n == 0 ? 0 : table ? 2 * n : 2 * uint64_t{internal::NodeColumnSlots(n)},
      4 * info.losers,
      2 * info.losers,
      UINT64_MAX,
      UINT64_MAX,
      UINT64_MAX,
      n == 0 || info.flavor != Flavor::kEnvoyRing ? 0
                                                  : 4 * uint64_t{internal::HashColumnSlots(n)}};
  static constexpr const char* kNames[kMaxSectionCount] = {
      "label",       "node table", "hash column",    "node column", "loser hashes",
      "loser nodes", "subsets",    "search index",   "flavor options", "low column"};
  uint64_t end = kHeaderBytes;
  for (uint32_t s = 0; s < h.section_count; ++s) {
    const size_t entry =
        s < kSectionCount ? kOffSections + 16 * s : kOffSectionsMore + 16 * (s - kSectionCount);
    const uint64_t offset = LoadU64(data + entry);
    const uint64_t length = LoadU64(data + entry + 8);
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
  if (!AllZero(trailer + kTrailReserved, kTrailChecksum - kTrailReserved)) {
    return Bad("sections", "reserved trailer bytes are not zero");
  }
  std::memcpy(info.key_id.data(), trailer + kTrailKeyId, 8);
  if (!info.is_signed && !AllZero(trailer + kTrailKeyId, kTrailReserved)) {
    return Bad("sections", "an unsigned file with a key id or signature");
  }
  std::memcpy(info.checksum.data(), trailer + kTrailChecksum, 16);
  if (program && h.length[kFlavorOptions] < kOptionsHeadBytes) {
    return Bad("sections", "flavor options of " + std::to_string(h.length[kFlavorOptions]) +
                               " bytes (at least 64)");
  }
  if (table && h.length[kSearchIndex] != 0) {
    return Bad("sections", "a maglev table has no search index");
  }
  info.column_bytes = h.length[kHashColumn] + h.length[kNodeColumn] + h.length[kLowColumn];
  info.collision_bytes = h.length[kLoserHashes] + h.length[kLoserNodes];
  info.index_bytes = h.length[kSearchIndex];
  info.other_bytes = size - info.column_bytes - info.collision_bytes - info.index_bytes;
  h.subsets = subsets;
  return Status();
}

Status Precheck(const uint8_t* head, const uint8_t* trailer, uint64_t size,
                const SnapshotLoadOptions& options, const ReloadGate* gate, Prechecked& out) {
  Header& h = out.header;
  if (Status status = ParseFixedHeader(head, trailer, size, h); !status.ok()) return status;
  const SnapshotInfo& info = h.info;
  if (info.config_version < options.min_config_version) {
    return Untrusted("min_version", "config version " + std::to_string(info.config_version) +
                                        " is below the minimum " +
                                        std::to_string(options.min_config_version));
  }
  if (const ReloadGate* floor = gate; floor != nullptr && floor->has_floor) {
    if (info.config_version < floor->version) {
      return Untrusted("rollback", "config version " + std::to_string(info.config_version) +
                                       " is older than " + std::to_string(floor->version) +
                                       ", which was served: publish the old content as a new, "
                                       "higher version (chash build --from OLD "
                                       "--config-version N)");
    }
    if (info.config_version == floor->version && !(info.fingerprint == floor->fingerprint)) {
      return Untrusted("same_version", "config version " + std::to_string(info.config_version) +
                                           " was served with ring " + floor->fingerprint.Short() +
                                           "; this file has that version and ring " +
                                           info.fingerprint.Short() +
                                           ": a new ring needs a higher version");
    }
  }
  if (info.expires_unix_seconds != 0 && !(gate != nullptr && gate->allow_expired)) {
    const int64_t now = static_cast<int64_t>(std::time(nullptr));
    if (now >= info.expires_unix_seconds) {
      return Untrusted("expired", "config version " + std::to_string(info.config_version) +
                                      " expired at " + std::to_string(info.expires_unix_seconds) +
                                      " (Unix time), " +
                                      std::to_string(now - info.expires_unix_seconds) +
                                      " s ago: publish a fresh file");
    }
  }
  out.signer = nullptr;
  if (!options.trusted_keys.empty()) {
    if (!info.is_signed) {
      return Untrusted("signature", "the snapshot is not signed and trusted keys are required");
    }
    for (const PublicKey& candidate : options.trusted_keys) {
      if (candidate.KeyId() == info.key_id) out.signer = &candidate;
    }
    if (out.signer == nullptr) {
      return Untrusted("signature", "signed by key " + info.KeyIdHex() +
                                        ", which is not a trusted key");
    }
  }
  return Status();
}

}  // namespace internal

namespace {

using internal::Header;

// The body's share of the sections check: the bytes between sections and
// before the trailer are zero. O(gaps); copies the label.
Status CheckSectionGaps(const uint8_t* data, Header& h) {
  uint64_t end = kHeaderBytes;
  for (uint32_t s = 0; s < h.section_count; ++s) {
    if (!AllZero(data + end, h.offset[s] - end)) {
      return Bad("sections", "nonzero bytes before section " + std::to_string(s));
    }
    end = h.offset[s] + h.length[s];
  }
  if (!AllZero(data + end, h.trailer - end)) {
    return Bad("sections", "nonzero bytes before the trailer");
  }
  h.info.label.assign(reinterpret_cast<const char*>(data + h.offset[kLabel]), h.length[kLabel]);
  return Status();
}

// Verifies the signature by `signer`: over BLAKE2b-256 of the file for 1.0,
// over the chunk tree `tree` has been hashing since the load began for 1.1
// and later.
Status VerifySignature(const uint8_t* data, const Header& h, const PublicKey& signer,
                       ChunkTreeJob* tree, unsigned threads) {
  SignedMessage message;
  if (h.info.minor_version == 0 || tree == nullptr) {
    if (!MakeSignedMessage(h.info.minor_version, data, h.trailer, threads, message)) {
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

// What the flavor options section (1.4) holds: the options, and haproxy's
// server ids or twemproxy's labels, one a node.
struct ProgramNodes {
  RingOptions options;
  std::vector<uint32_t> server_ids;
  std::vector<std::string> labels;
};

// Reads the options head's fields one after the other; a flag other than 0
// or 1 is named in `error` (the other fields' ranges are
// ValidateRingOptions').
struct OptionHeadReader {
  explicit OptionHeadReader(const uint8_t* head) : p(head) {}
  const uint8_t* p;
  size_t used = 0;
  std::string error;
  template <typename Field>
  void Byte(Field& field) {
    field = static_cast<Field>(p[used++]);
  }
  void Flag(bool& field, std::string_view name) {
    const uint8_t byte = p[used++];
    if (byte > 1 && error.empty()) {
      error = std::string(name) + " " + std::to_string(byte) + " is not 0 or 1";
    }
    field = byte == 1;
  }
  void U32(uint32_t& field) {
    field = LoadU32(p + used);
    used += 4;
  }
  void U64(uint64_t& field) {
    field = LoadU64(p + used);
    used += 8;
  }
};

// The flavor options section: each field in range, the options valid for
// the flavor (ValidateRingOptions), the head's unused bytes zero, the
// per-node part exactly N entries, and the header's multiple the options'.
Status ParseFlavorOptions(const uint8_t* data, const Header& h, ProgramNodes& out) {
  const SnapshotInfo& info = h.info;
  const uint8_t* p = data + h.offset[kFlavorOptions];
  const uint8_t* const end = p + h.length[kFlavorOptions];  // >= the head (ParseFixedHeader)
  RingOptions& options = out.options;
  options.flavor = info.flavor;
  OptionHeadReader head(p);
  if (!ForEachStoredOption(info.flavor, options, head)) {
    return Bad("options", "flavor " + std::string(FlavorName(info.flavor)) + " has no options");
  }
  if (!head.error.empty()) return Bad("options", head.error);
  if (!AllZero(p + head.used, kOptionsHeadBytes - head.used)) {
    return Bad("options", "unused bytes of the options head are not zero");
  }
  // Enumerations past their last value, ranges, and options of another
  // variant (a hash tag on a libmemcached ring) are the builder's refusals.
  if (Status valid = ValidateRingOptions(options); !valid.ok()) {
    if (valid.code() == StatusCode::kOutOfMemory) throw std::bad_alloc();
    return Bad("options", valid.message());
  }
  const uint32_t multiple = info.flavor == Flavor::kHaproxy        ? internal::kHaproxyPointsPerWeight
                            : info.flavor == Flavor::kVarnishShard ? options.varnish.replicas
                                                                   : 0;
  if (info.point_multiple != multiple) {
    return Bad("options", "point multiple " + std::to_string(info.point_multiple) + " is not " +
                              std::to_string(multiple) + ", the options'");
  }
  if (info.flavor == Flavor::kEnvoyMaglev && info.points != 0 &&
      info.points != options.maglev.table_size) {
    return Bad("options", "a table of " + std::to_string(info.points) + " entries; the options say " +
                              std::to_string(options.maglev.table_size));
  }
  p += kOptionsHeadBytes;
  const uint32_t nodes = info.nodes;
  if (info.flavor == Flavor::kHaproxy) {
    if (static_cast<uint64_t>(end - p) != 4 * uint64_t{nodes}) {
      return Bad("options", "server ids of " + std::to_string(end - p) + " bytes; " +
                                std::to_string(nodes) + " nodes need " +
                                std::to_string(4 * uint64_t{nodes}));
    }
    std::unordered_set<uint32_t> seen;
    out.server_ids.reserve(nodes);
    for (uint32_t id = 0; id < nodes; ++id, p += 4) {
      const uint32_t server_id = LoadU32(p);
      if (server_id == 0 || server_id > internal::kHaproxyMaxServerId) {
        return Bad("options", "node " + std::to_string(id) + ": server id " +
                                  std::to_string(server_id) + " (HAProxy's are 1..2147483647)");
      }
      if (!seen.insert(server_id).second) {
        return Bad("options", "node " + std::to_string(id) + ": server id " +
                                  std::to_string(server_id) + " given twice");
      }
      out.server_ids.push_back(server_id);
    }
    return Status();
  }
  if (info.flavor == Flavor::kKetamaMd5 && options.ketama.variant == KetamaVariant::kTwemproxy) {
    out.labels.reserve(nodes);
    for (uint32_t id = 0; id < nodes; ++id) {
      const std::string label = "node " + std::to_string(id);
      if (end - p < 4) return Bad("options", label + ": the labels end early");
      const uint32_t length = LoadU32(p);
      p += 4;
      std::string_view text;
      if (Status read = ReadPaddedText(p, end, length, "options", label, "a label", text);
          !read.ok()) {
        return read;
      }
      out.labels.emplace_back(text);
    }
  }
  if (p != end) return Bad("options", "bytes left after the options");
  return Status();
}

// The node table: addresses parsed by the flavor, duplicates, weights. For
// the other programs' flavors (`program` set) each node is read as their
// builder reads it, with its server id or label.
Status ParseNodeTable(const uint8_t* data, const Header& h, std::vector<NodeInfo>& nodes,
                      const ProgramNodes* program = nullptr) {
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
    std::string_view written;
    if (Status read = ReadPaddedText(p, end, length, "node_table", label, "address", written);
        !read.ok()) {
      return read;
    }
    NodeOptions node;
    if (program != nullptr) {
      if (!program->server_ids.empty()) node.server_id = program->server_ids[id];
      if (!program->labels.empty()) node.name = program->labels[id];
    }
    Result<NodeAddress> address =
        program != nullptr ? internal::ParseProgramNode(program->options, written, weight, node)
                           : ParseNodeAddress(info.flavor, written);
    if (!address.ok()) {
      // Running out of memory says nothing about the file: not a refusal.
      if (address.status().code() == StatusCode::kOutOfMemory) throw std::bad_alloc();
      return Bad("node_table", label + ": " + address.status().message());
    }
    if (!hashed_seen.insert(address.value().HashedBytes()).second) {
      return Bad("node_table", label + " '" + std::string(written) +
                                   "': a duplicate of an earlier server");
    }
    if (program == nullptr) {
      generated += uint64_t{weight} * info.point_multiple;
      if (generated > kHardMaxPoints) {
        return Bad("node_table", "the weights generate more than 2^31 - 1 points");
      }
    }
    nodes.push_back(NodeInfo{std::move(address).value(), weight, node.server_id});
  }
  if (p != end) return Bad("node_table", "bytes left after the last node");
  if (program != nullptr) {
    // Their programs count points over the whole node set (weighted
    // ketama, Envoy): counted here as the builder counts them.
    uint64_t weights = 0;
    uint32_t weighted = 0;
    for (const NodeInfo& n : nodes) {
      weights += n.weight;
      weighted += n.weight != 0 ? 1 : 0;
    }
    const RingOptions& options = program->options;
    const bool envoy = info.flavor == Flavor::kEnvoyRing || info.flavor == Flavor::kEnvoyMaglev;
    if (envoy && weights > UINT32_MAX) {
      return Bad("node_table", "the weights add up to more than 4294967295");
    }
    if (info.flavor == Flavor::kEnvoyMaglev && weighted > options.maglev.table_size) {
      return Bad("node_table", std::to_string(weighted) + " hosts for a table of " +
                                   std::to_string(options.maglev.table_size) + " entries");
    }
    generated = info.flavor == Flavor::kEnvoyMaglev && weighted == 0
                    ? 0
                    : internal::CountProgramPoints(options, nodes).total;
  }
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
Status CheckNodeIds(const uint16_t* node, uint64_t n, internal::RingState& state);

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
  if (Status status = CheckNodeIds(node, n, state); !status.ok()) return status;
  for (uint64_t i = n; i < node_slots; ++i) {
    if (node[i] != node[0]) {
      return Bad("node_column", "tail slot " + std::to_string(i) + " is not the first point's node");
    }
  }
  state.has_points = state.owns_points;
  return Status();
}

// Node ids: one store a point into a byte table of all 65,536 ids (no
// branch in the loop), then one pass over the table checks each id that
// appears against the node count and its weight; sets owns_points,
// nodes_with_points and has_points (= owns_points: no losers yet).
Status CheckNodeIds(const uint16_t* node, uint64_t n, internal::RingState& state) {
  const std::vector<NodeInfo>& nodes = state.nodes;
  state.owns_points.assign((nodes.size() + 63) / 64, 0);
  state.nodes_with_points = 0;
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
  state.has_points = state.owns_points;
  return Status();
}

// The columns of the other programs' flavors: hashes ascending with equal
// ones kept (haproxy, ketama-md5, varnish-shard keep every point, in their
// program's order within a hash), envoy-ring's 64-bit points (hash, low)
// ascending, the sentinels, and the tail: the last point's node on
// varnish-shard rings (no wrap), the first's otherwise. A maglev table has
// only its n entries. Node ids as CheckColumns checks them.
Status CheckProgramColumns(const uint32_t* hash, const uint32_t* low, const uint16_t* node,
                           uint64_t n, internal::RingState& state) {
  const bool table = state.rule == LookupRule::kTable;
  if (n > 0 && !table) {
    const uint64_t hash_slots = internal::HashColumnSlots(n);
    for (uint64_t i = 1; i < n; ++i) {
      if (hash[i] < hash[i - 1]) {
        return Bad("hash_column", "slot " + std::to_string(i) + " (" + std::to_string(hash[i]) +
                                      ") is below slot " + std::to_string(i - 1) + " (" +
                                      std::to_string(hash[i - 1]) + ")");
      }
      if (low != nullptr && hash[i] == hash[i - 1] && low[i] < low[i - 1]) {
        return Bad("low_column", "the point at slot " + std::to_string(i) +
                                     " is below the point before it");
      }
    }
    for (uint64_t i = n; i < hash_slots; ++i) {
      if (hash[i] != UINT32_MAX) {
        return Bad("hash_column", "sentinel slot " + std::to_string(i) + " is not 2^32 - 1");
      }
      if (low != nullptr && low[i] != UINT32_MAX) {
        return Bad("low_column", "sentinel slot " + std::to_string(i) + " is not 2^32 - 1");
      }
    }
  }
  if (Status status = CheckNodeIds(node, n, state); !status.ok()) return status;
  if (n > 0 && !table) {
    const bool clamped = state.rule == LookupRule::kSuccessorClamped;
    const uint16_t tail = clamped ? node[n - 1] : node[0];
    for (uint64_t i = n; i < internal::NodeColumnSlots(n); ++i) {
      if (node[i] != tail) {
        return Bad("node_column", "tail slot " + std::to_string(i) + " is not the " +
                                      (clamped ? "last" : "first") + " point's node");
      }
    }
  }
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
  const uint32_t count = h.subsets;
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
    std::shared_ptr<const void> backing, const uint8_t* data, uint64_t size,
    SnapshotLoadMode mode, const SnapshotLoadOptions& options,
    const internal::Prechecked& pre) {
  static_assert(std::endian::native == std::endian::little,
                "snapshots are mapped as little-endian columns");
  try {
    Header h = pre.header;
    const SnapshotInfo& info = h.info;
    // A signature's chunks are hashed on other threads (ChunkTreeJob) while
    // this one checks the content; its verdict is still reported in the
    // documented order (signature_first).
    const PublicKey* signer = pre.signer;
    const unsigned threads = internal::ThreadsFor(options.threads);
    std::optional<ChunkTreeJob> tree;
    if (signer != nullptr && info.minor_version >= 1) tree.emplace(data, h.trailer, threads);
    // A chunk tree that verifies proves every byte before the trailer (SHA-256,
    // signed), more than the checksum's XXH3 of the same bytes: such a load
    // runs the checksum only on its way to refusing the file, so a damaged
    // file is still named by its first failed body check, and the loading
    // thread goes straight to the checks below and to the chunks.
    const bool checksum = options.verify_checksum;
    const bool checksum_on_refusal = checksum && tree.has_value();
    const auto damaged = [&]() -> std::optional<Status> {
      if (Checksum(data, size - 16) == info.checksum) return std::nullopt;
      return Bad("checksum", "XXH3-128 of the file differs from the trailer's: the file is "
                             "damaged");
    };
    const auto refuse = [&](Status status) -> Status {
      if (!status.ok() && checksum_on_refusal) {
        if (std::optional<Status> bad = damaged()) return *bad;
      }
      return status;
    };
    // The signature's verdict comes before that of every later check. The
    // checks below are safe on any bytes, so they run while the chunks are
    // hashed.
    const auto signature_first = [&](Status status) -> Status {
      if (signer == nullptr) return refuse(status);
      const PublicKey& key = *signer;
      signer = nullptr;
      Status verdict = VerifySignature(data, h, key, tree ? &*tree : nullptr, threads);
      return refuse(verdict.ok() ? status : verdict);
    };
    if (Status status = CheckSectionGaps(data, h); !status.ok()) return signature_first(status);
    if (checksum && !checksum_on_refusal) {
      if (std::optional<Status> bad = damaged()) return *bad;  // damage is named first
    }
    if (!ValidLabel(info.label)) return signature_first(Bad("label", "not UTF-8 text without NUL"));

    auto snapshot = std::make_shared<RingSnapshot>();
    auto state = std::make_unique<internal::RingState>();
    state->flavor = info.flavor;
    state->point_multiple = info.point_multiple;
    state->tie_break = info.tie_break;
    state->points_generated = info.points_generated;
    const bool program = internal::IsProgramFlavor(info.flavor);
    std::optional<ProgramNodes> program_nodes;
    if (program) {
      program_nodes.emplace();
      if (Status status = ParseFlavorOptions(data, h, *program_nodes); !status.ok()) {
        return signature_first(status);
      }
    }
    if (Status status = ParseNodeTable(data, h, state->nodes,
                                       program ? &*program_nodes : nullptr);
        !status.ok()) {
      return signature_first(status);
    }

    const uint64_t n = info.points;
    const auto* hash = reinterpret_cast<const uint32_t*>(data + h.offset[kHashColumn]);
    const auto* node = reinterpret_cast<const uint16_t*>(data + h.offset[kNodeColumn]);
    const uint32_t* low = info.flavor == Flavor::kEnvoyRing && n > 0
                              ? reinterpret_cast<const uint32_t*>(data + h.offset[kLowColumn])
                              : nullptr;
    if (program) {
      // What a build derives from the options, derived the same way: the
      // rule, the key hasher (which depends on how many nodes have weight:
      // one server hashes every key to 0 in some programs), Varnish's
      // bisection case.
      const RingOptions& flavor_options = program_nodes->options;
      uint32_t weighted = 0;
      for (const NodeInfo& each : state->nodes) weighted += each.weight != 0 ? 1 : 0;
      state->options = flavor_options;
      state->rule = FlavorLookupRule(info.flavor);
      state->key_hasher = internal::ProgramKeyHasher(flavor_options, weighted);
    }
    if (Status status = program ? CheckProgramColumns(hash, low, node, n, *state)
                                       : CheckColumns(hash, node, n, *state);
               !status.ok()) {
      return signature_first(status);
    }
    if (info.flavor == Flavor::kVarnishShard) {
      bool equal = false;
      for (uint64_t i = 1; i < n && !equal; ++i) equal = hash[i] == hash[i - 1];
      state->varnish_bisection = n == 2 || equal;
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
    if (n > 0 && state->rule == LookupRule::kTable) {
      // A maglev table: its entries, no hash column, no index.
      state->columns.size = static_cast<uint32_t>(n);
      state->columns.node.Borrow(node, n);
    } else if (n > 0) {
      state->columns.size = static_cast<uint32_t>(n);
      state->columns.hash.Borrow(hash, internal::HashColumnSlots(n));
      state->columns.node.Borrow(node, internal::NodeColumnSlots(n));
      if (low != nullptr) state->columns.low.Borrow(low, internal::HashColumnSlots(n));
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
    snapshot->mode_ = mode;
    return snapshot;
  } catch (const std::bad_alloc&) {
    return internal::OutOfMemory("loading a snapshot");
  }
}

Result<std::shared_ptr<RingSnapshot>> SnapshotLoader::Load(
    std::shared_ptr<const void> backing, const uint8_t* data, uint64_t size,
    SnapshotLoadMode mode, const SnapshotLoadOptions& options,
    const internal::Prechecked& pre, LoadDepth /*depth: every check, always*/) {
  return Load(std::move(backing), data, size, mode, options, pre);
}

Result<std::shared_ptr<RingSnapshot>> SnapshotLoader::LoadBytes(
    std::shared_ptr<const void> backing, const uint8_t* data, uint64_t size,
    SnapshotLoadMode mode, const SnapshotLoadOptions& options) {
  if (size < kHeaderBytes + kTrailerBytes) {
    return Bad("size", "the file has " + std::to_string(size) +
                           " bytes, less than a header and a trailer (640)");
  }
  internal::Prechecked pre;
  if (Status status =
          internal::Precheck(data, data + size - kTrailerBytes, size, options, nullptr, pre);
      !status.ok()) {
    return status;
  }
  return Load(std::move(backing), data, size, mode, options, pre);
}

Result<std::shared_ptr<const RingSnapshot>> LoadSnapshotFromBytes(
    std::string_view bytes, const SnapshotLoadOptions& options) {
  return internal::CatchOutOfMemory(
      "loading a snapshot", "bytes", [&]() -> Result<std::shared_ptr<const RingSnapshot>> {
        auto copy = std::make_shared<CopiedBytes>();
        if (!bytes.empty() && !copy->bytes.Allocate(bytes.size())) {
          return internal::OutOfMemory("copying a snapshot");
        }
        if (!bytes.empty()) std::memcpy(copy->bytes.data(), bytes.data(), bytes.size());
        const uint8_t* data = copy->bytes.data();
        Result<std::shared_ptr<RingSnapshot>> loaded = SnapshotLoader::LoadBytes(
            std::move(copy), data, bytes.size(), SnapshotLoadMode::kCopy, options);
        if (!loaded.ok()) return loaded.status();
        return std::shared_ptr<const RingSnapshot>(std::move(loaded).value());
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

namespace internal {

Result<std::vector<std::string>> SubsetNamesOf(const uint8_t* data, const Header& h) {
  std::vector<NamedSubset> subsets;
  std::vector<std::string> names;
  if (ParseSubsets(data, h, subsets).ok()) {
    for (NamedSubset& subset : subsets) names.push_back(std::move(subset.name));
  }
  return names;
}

}  // namespace internal

}  // namespace chash
