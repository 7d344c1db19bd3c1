// Snapshot writer: lays a built ring out in the format of
// include/chash/snapshot.h, signs it, and replaces a file atomically.
#include <fcntl.h>
#include <sodium/crypto_sign_ed25519.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <new>
#include <set>
#include <string>

#include "builder/flavor_points.h"
#include "builder/parallel.h"
#include "chash/failover.h"  // MasksExactly
#include "chash/snapshot.h"
#include "flavors.h"
#include "layout/columns.h"
#include "util/out_of_memory.h"
#include "identity/throwing_cores.h"
#include "identity/sha256.h"
#include "ring/ring_state.h"
#include "util/os_handles.h"
#include "snapshot/format.h"

namespace chash {
namespace {

using namespace internal::snapshot;  // NOLINT: the format's names

struct Layout {
  uint32_t sections = kSectionCount;  // 10 for the other programs' flavors (1.4)
  uint16_t minor = kMinorCrc32Flavors;
  uint64_t offset[kMaxSectionCount] = {};
  uint64_t length[kMaxSectionCount] = {};
  uint64_t trailer = 0;
  uint64_t file_bytes = 0;
};

bool IsProgram(const Ring& ring) { return internal::IsProgramFlavor(ring.flavor()); }

bool IsTwemproxy(const Ring& ring) {
  return ring.flavor() == Flavor::kKetamaMd5 &&
         ring.options().ketama.variant == KetamaVariant::kTwemproxy;
}

// The flavor options section (FORMAT.md): the 64-byte head, then haproxy's
// server ids or twemproxy's labels.
uint64_t OptionsBytes(const Ring& ring) {
  uint64_t bytes = kOptionsHeadBytes;
  if (ring.flavor() == Flavor::kHaproxy) bytes += 4 * uint64_t{ring.num_nodes()};
  if (IsTwemproxy(ring)) {
    for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
      bytes += 4 + RoundUp(ring.node(id).address.host.size(), 4);
    }
  }
  return bytes;
}

// Writes the options head's fields one after the other.
struct OptionHeadWriter {
  uint8_t* p;
  template <typename Field>
  void Byte(const Field& field) {
    *p++ = static_cast<uint8_t>(field);
  }
  void Flag(bool field, std::string_view /*name*/) { *p++ = field ? 1 : 0; }
  void U32(uint32_t field) {
    StoreU32(p, field);
    p += 4;
  }
  void U64(uint64_t field) {
    StoreU64(p, field);
    p += 8;
  }
};

// The options head, then the per-node part: HAProxy's server ids,
// twemproxy's labels.
void FillOptions(const Ring& ring, uint8_t* p) {
  OptionHeadWriter head{p};
  if (!ForEachStoredOption(ring.flavor(), ring.options(), head)) return;
  p += kOptionsHeadBytes;
  if (ring.flavor() == Flavor::kHaproxy) {
    for (uint32_t id = 0; id < ring.num_nodes(); ++id, p += 4) {
      StoreU32(p, ring.node(id).server_id);
    }
  } else if (IsTwemproxy(ring)) {
    for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
      const std::string& label = ring.node(id).address.host;
      StoreU32(p, static_cast<uint32_t>(label.size()));
      std::memcpy(p + 4, label.data(), label.size());
      p += 4 + RoundUp(label.size(), 4);
    }
  }
}

uint64_t NodeTableBytes(const Ring& ring) {
  uint64_t bytes = 0;
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    bytes += 8 + RoundUp(ring.node(id).address.written.size(), 4);
  }
  return bytes;
}

uint64_t SubsetBytes(const std::vector<NamedSubset>& subsets, uint32_t nodes) {
  uint64_t bytes = 0;
  for (const NamedSubset& subset : subsets) {
    bytes += RoundUp(4 + subset.name.size(), 8) + 8 * ((uint64_t{nodes} + 63) / 64);
  }
  return bytes;
}

Layout PlanLayout(const Ring& ring, const SnapshotWriteOptions& options) {
  const uint64_t n = ring.num_points();
  const uint64_t c = ring.collision_losers().hashes.size();
  // envoy-maglev's table is the node column, its M entries alone (no
  // sentinel: a lookup reads entry h mod M); it has no hash column.
  const bool table = ring.lookup_rule() == LookupRule::kTable;
  Layout layout;
  if (IsProgram(ring)) {
    layout.sections = kProgramSectionCount;
    layout.minor = kMinorWithProgramFlavors;
    layout.length[kFlavorOptions] = OptionsBytes(ring);
    layout.length[kLowColumn] =
        n == 0 || ring.flavor() != Flavor::kEnvoyRing ? 0 : 4 * internal::HashColumnSlots(n);
  }
  layout.length[kLabel] = options.label.size();
  layout.length[kNodeTable] = NodeTableBytes(ring);
  layout.length[kHashColumn] = n == 0 || table ? 0 : 4 * internal::HashColumnSlots(n);
  layout.length[kNodeColumn] = n == 0 ? 0 : table ? 2 * n : 2 * internal::NodeColumnSlots(n);
  layout.length[kLoserHashes] = 4 * c;
  layout.length[kLoserNodes] = 2 * c;
  layout.length[kSubsets] = SubsetBytes(options.subsets, ring.num_nodes());
  const internal::SearchIndex& index = internal::RingFactory::StateOf(ring)->columns.index;
  layout.length[kSearchIndex] =
      n == 0 || table || !options.store_search_index
          ? 0
          : kIndexHeaderBytes + 4 * (index.level_key_count() + index.table_entries());
  uint64_t at = kHeaderBytes;
  for (uint32_t s = 0; s < layout.sections; ++s) {
    at = RoundUp(at, kSectionAlign);
    layout.offset[s] = at;
    at += layout.length[s];
  }
  layout.trailer = RoundUp(at, 8);
  layout.file_bytes = layout.trailer + kTrailerBytes;
  return layout;
}

Status CheckWritable(const Ring& ring, const SnapshotWriteOptions& options) {
  if (ring.is_raw()) {
    return Status(StatusCode::kBadArgument,
                  "a raw-point ring has no server list: only flavor rings have snapshots");
  }
  if (internal::FindFlavor(ring.flavor()) == nullptr) {
    return Status(StatusCode::kBadArgument,
                  "flavor " + std::to_string(static_cast<int>(ring.flavor())) +
                      " has no snapshot format (format " +
                      std::to_string(kSnapshotMajorVersion) + "." +
                      std::to_string(kSnapshotMinorVersion) + " stores " +
                      internal::FlavorByteList() + ")");
  }
  if (ring.num_nodes() == 0) {
    return Status(StatusCode::kBadArgument, "the ring has no nodes: nothing to snapshot");
  }
  if (!ValidLabel(options.label)) {
    return Status(StatusCode::kBadArgument,
                  "the label must be UTF-8 text without NUL, at most 4,096 bytes");
  }
  if (options.expires_unix_seconds < 0) {
    return Status(StatusCode::kBadArgument,
                  "the expiry must be a Unix time in seconds (0: never), got " +
                      std::to_string(options.expires_unix_seconds));
  }
  // A subset is a node mask. On a ring whose program rebuilds it without
  // the servers left out (weighted ketama, Envoy's), a mask answers what no
  // such program does, so every reader refuses to use it: refuse to write it.
  if (!options.subsets.empty() && !MasksExactly(ring)) {
    return Status(StatusCode::kBadArgument,
                  "subset '" + options.subsets.front().name + "': a " +
                      std::string(FlavorName(ring.flavor())) +
                      " ring of these options cannot answer a subset exactly (its program "
                      "rebuilds the ring without the servers left out): build the ring of "
                      "the subset's servers instead");
  }
  std::set<std::string_view> names;
  for (const NamedSubset& subset : options.subsets) {
    if (!ValidSubsetName(subset.name)) {
      return Status(StatusCode::kBadArgument,
                    "subset name '" + subset.name + "': 1..64 characters of A-Z a-z 0-9 . _ -");
    }
    if (!names.insert(subset.name).second) {
      return Status(StatusCode::kBadArgument, "subset '" + subset.name + "' given twice");
    }
    if (subset.mask.size() != ring.num_nodes()) {
      return Status(StatusCode::kBadArgument,
                    "subset '" + subset.name + "': its mask covers " +
                        std::to_string(subset.mask.size()) + " nodes, the ring has " +
                        std::to_string(ring.num_nodes()));
    }
  }
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    if (ring.node(id).address.written.size() > kMaxAddressBytes) {
      return Status(StatusCode::kBadArgument, "node " + std::to_string(id) +
                                                  ": address longer than 4,096 bytes");
    }
  }
  if (options.signing_key && !internal::EnsureSodium()) {
    return Status(StatusCode::kIoError, "libsodium cannot initialize");
  }
  return Status();
}

// Writes the whole file into out[0, layout.file_bytes), which is zeroed.
void Fill(const Ring& ring, const SnapshotWriteOptions& options, const Layout& layout,
          const Fingerprint& fingerprint, const Fingerprint& points_digest, uint8_t* out) {
  const internal::RingState& state = *internal::RingFactory::StateOf(ring);
  const CollisionLosers losers = ring.collision_losers();
  std::memcpy(out + kOffMagic, kMagic, sizeof kMagic);
  StoreU16(out + kOffMajor, kSnapshotMajorVersion);
  StoreU16(out + kOffMinor, layout.minor);
  StoreU32(out + kOffHeaderBytes, kHeaderBytes);
  StoreU64(out + kOffFileBytes, layout.file_bytes);
  StoreU64(out + kOffConfigVersion, options.config_version);
  const int64_t created =
      options.created_unix_seconds >= 0
          ? options.created_unix_seconds
          : std::chrono::duration_cast<std::chrono::seconds>(
                std::chrono::system_clock::now().time_since_epoch())
                .count();
  StoreU64(out + kOffCreated, static_cast<uint64_t>(created));
  out[kOffHashFunction] = IsProgram(ring) ? kHashFunctionFlavorOptions : kHashFunctionKetamaCrc32;
  out[kOffFlavor] = internal::FlavorByte(ring.flavor());
  out[kOffTieBreak] = TieBreakCode(ring.tie_break());
  StoreU32(out + kOffMultiple, ring.point_multiple());
  StoreU32(out + kOffNodes, ring.num_nodes());
  StoreU32(out + kOffPoints, static_cast<uint32_t>(ring.num_points()));
  StoreU64(out + kOffPointsGenerated, ring.points_generated());
  StoreU32(out + kOffLosers, static_cast<uint32_t>(losers.hashes.size()));
  StoreU32(out + kOffSubsets, static_cast<uint32_t>(options.subsets.size()));
  StoreU32(out + kOffFlags, options.signing_key ? kFlagSigned : 0);
  StoreU32(out + kOffSectionCount, layout.sections);
  StoreU64(out + kOffExpires, static_cast<uint64_t>(options.expires_unix_seconds));
  std::memcpy(out + kOffFingerprint, fingerprint.bytes.data(), 32);
  std::memcpy(out + kOffPointsDigest, points_digest.bytes.data(), 32);
  for (uint32_t s = 0; s < kSectionCount; ++s) {
    StoreU64(out + kOffSections + 16 * s, layout.offset[s]);
    StoreU64(out + kOffSections + 16 * s + 8, layout.length[s]);
  }
  for (uint32_t s = kSectionCount; s < layout.sections; ++s) {
    StoreU64(out + kOffSectionsMore + 16 * (s - kSectionCount), layout.offset[s]);
    StoreU64(out + kOffSectionsMore + 16 * (s - kSectionCount) + 8, layout.length[s]);
  }

  if (!options.label.empty()) {
    std::memcpy(out + layout.offset[kLabel], options.label.data(), options.label.size());
  }
  uint8_t* p = out + layout.offset[kNodeTable];
  for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
    const std::string& written = ring.node(id).address.written;
    StoreU32(p, ring.node(id).weight);
    StoreU32(p + 4, static_cast<uint32_t>(written.size()));
    std::memcpy(p + 8, written.data(), written.size());
    p += 8 + RoundUp(written.size(), 4);
  }
  // The columns as the ring holds them, sentinels and tails included (the
  // host is little-endian: the loader refuses others).
  // (A maglev table has no hash column: memcpy's source must not be null.)
  if (layout.length[kHashColumn] > 0) {
    std::memcpy(out + layout.offset[kHashColumn], state.columns.hash.data(),
                layout.length[kHashColumn]);
  }
  if (layout.length[kNodeColumn] > 0) {
    std::memcpy(out + layout.offset[kNodeColumn], state.columns.node.data(),
                layout.length[kNodeColumn]);
  }
  if (layout.length[kLowColumn] > 0) {
    std::memcpy(out + layout.offset[kLowColumn], state.columns.low.data(),
                layout.length[kLowColumn]);
  }
  if (layout.sections > kSectionCount) FillOptions(ring, out + layout.offset[kFlavorOptions]);
  if (!losers.hashes.empty()) {
    std::memcpy(out + layout.offset[kLoserHashes], losers.hashes.data(),
                layout.length[kLoserHashes]);
    std::memcpy(out + layout.offset[kLoserNodes], losers.nodes.data(),
                layout.length[kLoserNodes]);
  }
  p = out + layout.offset[kSubsets];
  for (const NamedSubset& subset : options.subsets) {
    StoreU32(p, static_cast<uint32_t>(subset.name.size()));
    std::memcpy(p + 4, subset.name.data(), subset.name.size());
    p += RoundUp(4 + subset.name.size(), 8);
    const std::span<const uint64_t> words = subset.mask.words();
    for (uint64_t w = 0; w < (uint64_t{ring.num_nodes()} + 63) / 64; ++w) {
      StoreU64(p, w < words.size() ? words[w] : 0);
      p += 8;
    }
  }

  if (layout.length[kSearchIndex] > 0) {
    const internal::SearchIndex& index = state.columns.index;
    uint8_t* section = out + layout.offset[kSearchIndex];
    StoreU32(section + kIndexOffLayout, kIndexLayoutSlotTable);
    StoreU32(section + kIndexOffLevels, static_cast<uint32_t>(index.levels()));
    // The entry level is derived from the table; its field stays 0.
    StoreU32(section + kIndexOffTableBits, static_cast<uint32_t>(index.table_bits()));
    uint8_t* keys = section + kIndexHeaderBytes;
    // A ring of at most 15 points has no level keys: memcpy's pointers must
    // not be null even for 0 bytes.
    if (index.level_key_count() > 0) {
      std::memcpy(keys, index.level_keys(), 4 * index.level_key_count());
    }
    if (index.table_entries() > 0) {
      std::memcpy(keys + 4 * index.level_key_count(), index.table(), 4 * index.table_entries());
    }
  }
  uint8_t* trailer = out + layout.trailer;
  if (options.signing_key) {
    SignedMessage message;
    if (!MakeSignedMessage(layout.minor, out, layout.trailer, internal::BuildThreads(),
                           message)) {
      throw std::bad_alloc();  // a digest context: reported as kOutOfMemory
    }
    const std::array<uint8_t, 8> id = options.signing_key->public_key().KeyId();
    std::memcpy(trailer + kTrailKeyId, id.data(), id.size());
    crypto_sign_ed25519_detached(trailer + kTrailSignature, nullptr, message.bytes.data(),
                                 message.size, options.signing_key->bytes.data());
  }
  const std::array<uint8_t, 16> checksum = Checksum(out, layout.file_bytes - 16);
  std::memcpy(trailer + kTrailChecksum, checksum.data(), checksum.size());
}

Status IoError(const std::string& path, std::string_view step, int error) {
  if (error == ENOMEM) {
    return Status(StatusCode::kOutOfMemory,
                  "out of memory: " + std::string(step) + " (" + path + ")");
  }
  return Status(StatusCode::kIoError,
                path + ": " + std::string(step) + ": " + std::strerror(error));
}

std::string DirectoryOf(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

// The temporary file WriteSnapshotFile fills: unmapped, closed and removed
// on every path out (exceptions included) unless it was renamed into place.
struct TempFile {
  std::string path;
  bool exists = false;  // created, not yet renamed into place
  internal::UniqueFd fd;
  internal::UniqueMapping map;
  ~TempFile() {
    if (exists) unlink(path.c_str());
  }
};

Status WriteSnapshotFileOrThrow(const Ring& ring, const SnapshotWriteOptions& options,
                                const std::string& path) {
  if (Status status = CheckWritable(ring, options); !status.ok()) return status;
  const Layout layout = PlanLayout(ring, options);
  // The throwing forms: the noexcept ones answer a zero sentinel when out
  // of memory, which would be written into the file as its fingerprint.
  const Fingerprint fingerprint = Sha256(internal::RingIdentityBytesOrThrow(ring));
  const Fingerprint digest = internal::PointsDigestOrThrow(ring);
  // Both names are made before the file: past the rename nothing but an
  // error message allocates.
  const std::string dir = DirectoryOf(path);
  TempFile temp;
  temp.path = path + ".tmp.XXXXXX";
  temp.fd.Reset(mkostemp(temp.path.data(), O_CLOEXEC));
  if (!temp.fd.valid()) return IoError(temp.path, "create", errno);
  temp.exists = true;
  if (fchmod(temp.fd.get(), 0644) != 0) return IoError(temp.path, "chmod", errno);
  // Blocks reserved before the mapping is written: a write fault on a sparse
  // file that finds no free block is SIGBUS (a crash of the writer on a full
  // disk); posix_fallocate reports it as ENOSPC instead.
  if (const int error = posix_fallocate(temp.fd.get(), 0, static_cast<off_t>(layout.file_bytes));
      error != 0) {
    return IoError(temp.path, "allocate", error);
  }
  // The bytes go straight into the temporary file's pages (no second copy
  // of a gigabyte ring in memory).
  temp.map.Reset(
      mmap(nullptr, layout.file_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, temp.fd.get(), 0),
      layout.file_bytes);
  if (temp.map.data() == nullptr) {
    const int error = errno;
    return IoError(temp.path, "mapping " + std::to_string(layout.file_bytes) + " bytes to write",
                   error);
  }
  Fill(ring, options, layout, fingerprint, digest, static_cast<uint8_t*>(temp.map.data()));
  const bool synced = msync(temp.map.data(), layout.file_bytes, MS_SYNC) == 0;
  const int msync_error = errno;
  temp.map.Reset();
  if (!synced) return IoError(temp.path, "msync", msync_error);
  if (fsync(temp.fd.get()) != 0) return IoError(temp.path, "fsync", errno);
  if (const int close_error = temp.fd.Close(); close_error != 0) {
    return IoError(temp.path, "close", close_error);
  }
  if (rename(temp.path.c_str(), path.c_str()) != 0) return IoError(path, "rename", errno);
  temp.exists = false;
  // The rename itself is durable once the directory is synced.
  const int dir_fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd < 0) return IoError(dir, "open directory", errno);
  const bool dir_synced = fsync(dir_fd) == 0;
  const int dir_error = errno;
  close(dir_fd);
  if (!dir_synced) return IoError(dir, "fsync directory", dir_error);
  return Status();
}

}  // namespace

Result<std::string> SerializeSnapshot(const Ring& ring, const SnapshotWriteOptions& options) {
  return internal::CatchOutOfMemory("serializing a snapshot", "in memory",
                                    [&]() -> Result<std::string> {
    if (Status status = CheckWritable(ring, options); !status.ok()) return status;
    const Layout layout = PlanLayout(ring, options);
    const Fingerprint fingerprint = Sha256(internal::RingIdentityBytesOrThrow(ring));
    const Fingerprint digest = internal::PointsDigestOrThrow(ring);
    std::string bytes(layout.file_bytes, '\0');
    Fill(ring, options, layout, fingerprint, digest, reinterpret_cast<uint8_t*>(bytes.data()));
    return bytes;
  });
}

Status WriteSnapshotFile(const Ring& ring, const SnapshotWriteOptions& options,
                         const std::string& path) {
  return internal::CatchOutOfMemory("writing a snapshot", path, [&] {
    return WriteSnapshotFileOrThrow(ring, options, path);
  });
}

}  // namespace chash
