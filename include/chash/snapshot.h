// Ring snapshots: a built ring as a signed, versioned file that a control
// plane pushes to every proxy, checked before trust and served from a sealed
// copy the host's processes share, instead of each building its own ring
// from the server list.
//
//   chash::SnapshotWriteOptions write{.config_version = 42, .label = "eu-west"};
//   chash::Status s = chash::WriteSnapshotFile(ring, write, "/etc/cache/ring.chash");
//
//   chash::SnapshotLoadOptions load;             // sealed copy, every check
//   load.trusted_keys = {key};                   // require a signature
//   load.min_config_version = 42;                // refuse older policy
//   auto snapshot = chash::LoadSnapshot("/etc/cache/ring.chash", load);
//   if (!snapshot.ok()) log(snapshot.status().ToString());  // names the check
//   uint32_t node = snapshot.value()->ring().FindNode("/some/url");
//
// The file format, byte by byte, and its version rules (what a 1.x reader
// accepts and refuses): engine/snapshot/FORMAT.md. The loader's design
// (where a ring lives, who verifies, what persists): engine/snapshot/README.md.
//
// LOADING
//
// A load checks the file before it trusts a byte of it, in this order; a
// failure is a kBadSnapshot (or kUntrusted for the policy checks, kIoError
// for io and not_regular) Status whose message starts with the check's name
// (SnapshotCheckName; FailedSnapshotCheck gives the check of a Status):
//
// Before a byte of the body is read (O(1): a stat, an open that never
// blocks, and a read of the 512-byte header and the 128-byte trailer):
//   io          missing, unreadable, or open/fstat/read/mmap failed
//   not_regular a FIFO, device, socket or directory (never opened blocking)
//   max_size    larger than max_file_bytes
//   sparse      the file has holes (SEEK_HOLE): a valid header before a hole
//               of gigabytes costs nothing to refuse
//   size        smaller than a header and a trailer, or not the header's size
//   magic       not a chash snapshot
//   version     a major version this reader does not know
//   header      header bytes, flags, reserved bytes, flavor, tie-break,
//               multiple or counts out of range
//   sections    a section's offset or length outside the file, misaligned,
//               overlapping, out of order or not the length the counts imply
//   min_version (kUntrusted) config version below min_config_version
//   expired     (kUntrusted) the file's expiry (1.3) has passed
//   signature   (kUntrusted) trusted keys given and the file is unsigned, or
//               signed by a key that is not trusted
// Then the body (O(file)):
//   sections    nonzero bytes between sections or in the trailer's reserved
//               bytes, an unsigned file with a key id or signature
//   checksum    XXH3-128 differs (verify_checksum = false skips only this).
//               With trusted keys the signature's SHA-256 proves the same
//               bytes, so the pass runs only to name a refused file's damage
//   signature   (kUntrusted) the Ed25519 signature does not verify. The
//               chunks are hashed on up to `threads` threads while the
//               checks below run; their failures are reported after it
//   label       not UTF-8 text without NUL
//   node_table  an entry overruns, an address the flavor refuses, duplicate
//               servers, or points generated != sum of weight x multiple
//   options     (1.4) the flavor options section: a field out of range,
//               options the flavor refuses, a bad or duplicate server id or
//               twemproxy label, a multiple or table size other than the
//               options'
//   hash_column hashes not strictly ascending (not descending for the other
//               programs' flavors, which keep equal points), or a sentinel
//               slot != UINT32_MAX
//   low_column  (1.4, envoy-ring) the 64-bit points (hash, low) descend, or
//               a sentinel slot != UINT32_MAX
//   node_column a node id >= N, a node of weight 0, or a tail slot != node 0
//               (the last point's node on varnish-shard rings; a maglev
//               table has no tail)
//   collisions  loser hashes not ascending or not in the column, loser node
//               ids >= N, a loser equal to its hash's kept point
//   subsets     a bad name, a duplicate, or mask bits past N
//   index       a stored index that is not exactly the index of the hash
//               column, or, for a file without one, one cannot be built
//   fingerprint the header's fingerprint != the node table's
//   points_digest  (verify_points_digest only) the points differ from the
//               header's digest
//
// Where the ring lives (SnapshotLoadMode). kSealed, the default, reads the
// file once into a sealed memory file (memfd_create with F_SEAL_WRITE,
// SHRINK, GROW and SEAL) and checks it there: nothing anyone does to the
// file afterwards (a write in place, a truncation, a FIFO renamed over it)
// can change or crash a loaded ring, and a SnapshotReloader with a state
// directory lets the other processes of the host map the same sealed copy
// instead of reading and verifying the file again (one copy of the columns
// a host). kCopy reads it into this process's anonymous memory (huge pages)
// instead. kMap maps the file itself, zero-copy, for files nothing can
// rewrite (read-only media): a write in place changes the ring's answers
// (never its memory safety: every lookup stays inside the columns) and a
// truncation raises SIGBUS.
//
// Cost of a load (n points): the copy (kSealed, kCopy: one read of the file),
// one XXH3 pass at memory speed or, with trusted keys, the SHA-256 of the
// file's chunks on `threads` threads instead; one pass over each column; the
// stored index checked, O(n / 16) reads. Adopting a sibling's verified
// sealed copy (SnapshotReloader, share) costs O(nodes) instead.
#ifndef CHASH_SNAPSHOT_H_
#define CHASH_SNAPSHOT_H_

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "chash/failover.h"
#include "chash/identity.h"
#include "chash/ring.h"
#include "chash/snapshot_keys.h"
#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)

namespace chash {

inline constexpr uint16_t kSnapshotMajorVersion = 1;
// The highest minor this library reads and writes. It writes 1.4 only for
// rings of the other programs' flavors (haproxy, ketama-md5, varnish-shard,
// envoy-ring, envoy-maglev), which need its sections; nginx, pingora and
// resty rings are written as 1.3 files, byte for byte what 1.3 writers
// wrote, so that readers of 1.3 keep reading them.
inline constexpr uint16_t kSnapshotMinorVersion = 4;

// ---- Writing ----------------------------------------------------------------

// A subset of a ring's nodes stored under a name: lookups through it answer
// as the ring of only those nodes would (failover.h: masks are exact).
// Only rings that mask exactly take subsets (MasksExactly): the writers
// refuse them on weighted ketama and Envoy rings with kBadArgument.
struct NamedSubset {
  std::string name;  // 1..64 bytes of [A-Za-z0-9._-]
  NodeMask mask;     // mask.size() == the ring's num_nodes()
};

struct SnapshotWriteOptions {
  uint64_t config_version = 0;
  std::string label;                  // at most 4,096 bytes of UTF-8, no NUL
  std::vector<NamedSubset> subsets;
  int64_t created_unix_seconds = -1;  // -1: now
  // 0: never. Otherwise readers (format 1.3 and later) refuse the file from
  // this Unix time on (check `expired`): against a stale but validly signed
  // file served forever. Signed with the rest of the header.
  int64_t expires_unix_seconds = 0;
  std::optional<SecretKey> signing_key;
  // Store the search index (1/15 of the hash column and the slot table,
  // about 4.9% of the columns): every process that maps
  // the file then shares it through the page cache instead of building its
  // own copy. false: a smaller file whose readers rebuild the index.
  bool store_search_index = true;
};

// The snapshot's bytes. kBadArgument for a raw-point ring (it has no server
// list), a bad label or subset; kOutOfMemory.
Result<std::string> SerializeSnapshot(const Ring& ring, const SnapshotWriteOptions& options);
// Serializes, then writes `path` atomically: a temporary file beside it,
// fsync, rename over `path`, fsync of the directory (kIoError naming the step;
// kOutOfMemory when memory, or the address space to map the file, runs out).
// On an error before the rename, the temporary file is removed and `path`
// is untouched.
Status WriteSnapshotFile(const Ring& ring, const SnapshotWriteOptions& options,
                         const std::string& path);

// ---- Loading ----------------------------------------------------------------

enum class SnapshotLoadMode : uint8_t {
  // Read once into a sealed memory file and checked there (see LOADING):
  // immune to the file, shareable with the host's other processes.
  kSealed,
  // Zero-copy: the file's pages (MAP_SHARED, read-only). Only for files
  // nothing rewrites in place: a truncation raises SIGBUS.
  kMap,
  // Read into this process's anonymous memory: immune, not shareable.
  kCopy,
};

// Every check a snapshot can fail, in the order a load runs them (LOADING
// above), then the reload policy's own and those an embedder adds. The
// values are the C API's CHASH_CHECK_* and never change; new checks are
// appended.
enum class SnapshotCheck : uint8_t {
  kNone = 0,
  kIo = 1,
  kNotRegular = 2,
  kMaxSize = 3,
  kSparse = 4,
  kSize = 5,
  kMagic = 6,
  kVersion = 7,
  kHeader = 8,
  kSections = 9,
  kMinVersion = 10,
  kExpired = 11,
  kSignature = 12,
  kChecksum = 13,
  kLabel = 14,
  kNodeTable = 15,
  kHashColumn = 16,
  kNodeColumn = 17,
  kCollisions = 18,
  kSubsets = 19,
  kIndex = 20,
  kFingerprint = 21,
  kPointsDigest = 22,
  // The reload policy (SnapshotReloader): a config version below the one
  // served (or the highest ever served, with a state directory), and the
  // version served reused with another ring.
  kRollback = 23,
  kSameVersion = 24,
  // Memory ran out loading the file: not remembered, tried again.
  kOutOfMemory = 25,
  // An embedder's checks of a file the library accepted (SnapshotReloader::
  // Refuse): the flavor it routes with, addresses it can use, a migration
  // partner with other backends, anything else.
  kFlavor = 26,
  kAddress = 27,
  kBackendMismatch = 28,
  kEmbedder = 29,
  // 1.4: the flavor options section of the other programs' flavors (a
  // field out of range, options the flavor refuses, a bad server id or
  // label, or a point multiple other than the options'), and envoy-ring's
  // column of low halves (points not ascending as 64-bit values, a
  // sentinel slot != UINT32_MAX).
  kOptions = 30,
  kLowColumn = 31,
};
inline constexpr uint8_t kSnapshotCheckCount = 32;

// "io", "not_regular", ... as the messages spell them; "unknown" past the
// enum. Static storage, no allocation.
std::string_view SnapshotCheckName(SnapshotCheck check) noexcept;
// The check a failed load or reload names (the message's text before its
// first ':' is the check's name); kNone for an OK status or another error.
SnapshotCheck FailedSnapshotCheck(const Status& status) noexcept;
// The StatusCode a refusal by this check carries: kIoError (io,
// not_regular), kUntrusted (min_version, expired, signature, rollback,
// same_version), kOutOfMemory, else kBadSnapshot; kOk for kNone.
StatusCode CodeOfSnapshotCheck(SnapshotCheck check) noexcept;

// The default of SnapshotLoadOptions::max_file_bytes: 2 GiB, which a
// 204.8M-point ring (1.23 GB) fits and a file that doubled in size does not.
inline constexpr uint64_t kDefaultMaxSnapshotBytes = uint64_t{2} << 30;

struct SnapshotLoadOptions {
  SnapshotLoadMode mode = SnapshotLoadMode::kSealed;
  // false: skips the checksum (one XXH3 pass over the file), nothing else:
  // every structural check still runs. For files this process has verified
  // before, and for measuring what the checksum costs.
  bool verify_checksum = true;
  // Also recompute the points digest (SHA-256, 8 bytes a point: seconds for
  // 200M points) and compare it with the header's: proves the columns are
  // the points the header names, not only undamaged.
  bool verify_points_digest = false;
  // Non-empty: the snapshot must be signed by one of these keys (several
  // for rotation: trust the old and the new key while files are re-signed).
  std::vector<PublicKey> trusted_keys;
  uint64_t min_config_version = 0;
  // Larger files are refused (check max_size) before a byte of their body
  // is read. 0: kDefaultMaxSnapshotBytes.
  uint64_t max_file_bytes = 0;
  // Threads a load may hash on, the caller's included: 0 = the CPUs this
  // process may run on (its affinity mask, bounded by its cgroup's CPU
  // quota; at most 64); 1 = the calling thread only; at most 256.
  uint32_t threads = 0;
};

struct SnapshotInfo {
  uint16_t major_version = 0;
  uint16_t minor_version = 0;
  uint64_t file_bytes = 0;
  uint64_t config_version = 0;
  int64_t created_unix_seconds = 0;
  int64_t expires_unix_seconds = 0;  // 0: never
  std::string label;
  Flavor flavor = Flavor::kNginx;
  uint32_t point_multiple = 0;
  TieBreak tie_break = TieBreak::kConfigOrder;
  uint32_t nodes = 0;
  uint64_t points = 0;
  uint64_t points_generated = 0;
  uint64_t losers = 0;
  Fingerprint fingerprint;
  Fingerprint points_digest;
  std::vector<std::string> subset_names;
  bool is_signed = false;
  std::array<uint8_t, 8> key_id{};  // when signed
  // key_id as 16 hex digits; may throw std::bad_alloc, as PublicKey::KeyIdHex.
  std::string KeyIdHex() const;
  std::array<uint8_t, 16> checksum{};  // the trailer's XXH3-128
  // Bytes of the sections: the two columns, the collision table, the search
  // index, everything else (header, trailer, node table, label, subsets,
  // alignment).
  uint64_t column_bytes = 0;
  uint64_t collision_bytes = 0;
  uint64_t index_bytes = 0;  // the stored search index (0: readers build their own)
  uint64_t other_bytes = 0;
};

// A loaded snapshot: its ring, its metadata and its named subsets. Immutable
// and thread-safe; the mapping lives as long as the object (and any
// shared_ptr<const Ring> made from it by RingOf).
class RingSnapshot {
 public:
  const Ring& ring() const noexcept { return ring_; }
  const SnapshotInfo& info() const noexcept { return info_; }
  std::span<const NamedSubset> subsets() const noexcept { return subsets_; }
  // The subset of that name, nullptr if there is none.
  const NodeMask* FindSubset(std::string_view name) const noexcept;
  // Where the columns live (kSealed, kMap or kCopy).
  SnapshotLoadMode mode() const noexcept { return mode_; }
  // Whether the columns are pages other processes can share: a sealed copy
  // or the file's own pages (kSealed, kMap), not private memory (kCopy).
  bool shared() const noexcept { return mode_ != SnapshotLoadMode::kCopy; }

 private:
  friend struct SnapshotLoader;
  Ring ring_;
  SnapshotInfo info_;
  std::vector<NamedSubset> subsets_;
  SnapshotLoadMode mode_ = SnapshotLoadMode::kSealed;
};

// Maps (or copies) and checks a snapshot file; see LOADING above.
Result<std::shared_ptr<const RingSnapshot>> LoadSnapshot(const std::string& path,
                                                         const SnapshotLoadOptions& options = {});
// The same load, the ring by value (its state keeps the mapping alive): for
// callers that hold rings by value. `info` and `subsets` (if given) receive
// the snapshot's metadata and named subsets; on an error they are unchanged.
Result<Ring> LoadSnapshotRing(const std::string& path, const SnapshotLoadOptions& options = {},
                              SnapshotInfo* info = nullptr,
                              std::vector<NamedSubset>* subsets = nullptr);
// The same checks on bytes in memory; the ring copies them (the mode is
// ignored). For tests, fuzzers and files that arrive over a network.
Result<std::shared_ptr<const RingSnapshot>> LoadSnapshotFromBytes(
    std::string_view bytes, const SnapshotLoadOptions& options = {});
// The header only (magic, version, header, sections, key id), no content
// check: what `chash inspect` prints even for a file that fails a check.
Result<SnapshotInfo> ReadSnapshotInfo(const std::string& path);

// The ring of a snapshot as a shared_ptr that keeps the snapshot (and its
// mapping) alive: what readers of a SnapshotReloader hold.
std::shared_ptr<const Ring> RingOf(std::shared_ptr<const RingSnapshot> snapshot) noexcept;

}  // namespace chash

#pragma GCC visibility pop

// 1.0's callers include this header for the reloader too (it was here): it
// keeps including it. snapshot_reloader.h includes this header first, so
// either order declares everything once.
#include "chash/snapshot_reloader.h"

#endif  // CHASH_SNAPSHOT_H_
