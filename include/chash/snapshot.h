// Ring snapshots: a built ring as a signed, versioned file that every process
// maps read-only and shares through the page cache, instead of building its
// own copy from the server list.
//
//   chash::SnapshotWriteOptions write{.config_version = 42, .label = "eu-west"};
//   chash::Status s = chash::WriteSnapshotFile(ring, write, "/etc/cache/ring.chash");
//
//   chash::SnapshotLoadOptions load;             // map, verify every check
//   load.trusted_keys = {key};                   // require a signature
//   load.min_config_version = 42;                // refuse older policy
//   auto snapshot = chash::LoadSnapshot("/etc/cache/ring.chash", load);
//   if (!snapshot.ok()) log(snapshot.status().ToString());  // names the check
//   uint32_t node = snapshot.value()->ring().FindNode("/some/url");
//
// ============================================================================
// FORMAT, version 1.2. Every integer little-endian, no implicit padding.
// ============================================================================
//
// A file is a 512-byte header, sections at the offsets the header lists, and
// a 128-byte trailer in the file's last 128 bytes:
//
//   offset size  field
//   ---- header (512 bytes) --------------------------------------------------
//     0    8   magic              "CHASHRNG"
//     8    2   major version      1: a reader refuses any major it does not know
//    10    2   minor version      2 (files of 1.0 and 1.1 still load and
//                                 verify): a reader accepts a higher minor of
//                                 its major (minors only add meaning to
//                                 reserved bytes and sections an older reader
//                                 ignores; 1.1 changes the digest a signature
//                                 signs, see the trailer; 1.2 the search
//                                 index's layout, which a 1.1 reader then
//                                 builds for itself)
//    12    4   header bytes       512
//    16    8   file bytes         the whole file, trailer included
//    24    8   config version     chosen by the operator; monotonic per ring
//    32    8   created            Unix time, seconds (i64), informational
//    40    1   hash function      1: ketama chain over CRC-32/IEEE (identity.h)
//    41    1   flavor             0 nginx, 1 pingora-v1, 2 pingora-v2, 3 resty
//    42    1   tie-break          0 config order, 1 address order, 2 id order
//                                 (must be the flavor's)
//    43    1   reserved           0
//    44    4   point multiple     160, or >= 1 for pingora-v2 and resty
//    48    4   nodes N            1..65,536 (node table entries)
//    52    4   points n           kept points (the columns' length)
//    56    8   points generated   sum of weight x multiple over the node table
//    64    4   losers c           points collisions dropped (collision table)
//    68    4   subsets S          named subsets in the subset section
//    72    4   flags              bit 0: signed (the trailer holds a signature);
//                                 other bits 0
//    76    4   section count      8
//    80   32   fingerprint        RingFingerprint (identity.h) of the node table
//   112   32   points digest      PointsDigest (identity.h) of the points
//   144  128   section table      8 x {u64 offset, u64 length}, in this order:
//                0 label          UTF-8 text (no NUL), at most 4,096 bytes
//                1 node table     N x {u32 weight, u32 length L, L bytes: the
//                                 server as written in the servers file, then
//                                 zero bytes to a multiple of 4}
//                2 hash column    u32 x HashColumnSlots(n) = (n + 16) rounded
//                                 down to 16 (0 if n = 0): ascending point
//                                 hashes, then UINT32_MAX to the end (the
//                                 sentinel). Offset a multiple of 64.
//                3 node column    u16 x NodeColumnSlots(n) = (n + 32) rounded
//                                 down to 32 (0 if n = 0): the node of each
//                                 point, then the node of point 0 to the end.
//                                 Offset a multiple of 64.
//                4 loser hashes   u32 x c, ascending, each a hash of the column
//                                 Offset a multiple of 64.
//                5 loser nodes    u16 x c, in tie-break order within a hash
//                                 (Ring::collision_losers). Offset a multiple
//                                 of 64.
//                6 subsets        S x {u32 name length L (1..64), L bytes of
//                                 [A-Za-z0-9._-], zero bytes to a multiple of
//                                 8, u64 x ceil(N / 64) node mask: bit (id %
//                                 64) of word (id / 64) = node id in the
//                                 subset; bits past N zero}. Names unique.
//                7 search index   length 0 in 1.0 files and in files written
//                                 without it (store_search_index = false,
//                                 `chash build --no-index`): the reader then
//                                 builds the index itself. Otherwise (1.2):
//                                 offset size
//                                   0    4   layout: 2, the 16-ary S+ tree
//                                            under a slot table
//                                   4    4   levels L above the hash column
//                                            (the least L with ceil((n + 1)
//                                            / 16^L) <= 16)
//                                   8    4   0 (layout 1's entry level: now
//                                            derived from the table)
//                                  12    4   table bits b: the b with 2^b <=
//                                            n / 128 < 2^(b+1), at least
//                                            min(13, bits of n), at most 24
//                                  16   48   reserved, 0
//                                  64        level keys, levels L..1 (root
//                                            first): level l holds m_l =
//                                            ceil(m_(l-1) / 16) keys (m_0 =
//                                            n + 1, the hash column and its
//                                            sentinel), key j = key 16j + 15
//                                            of level l - 1, then UINT32_MAX
//                                            to (ceil(m_l / 16) + 1) x 16
//                                            keys (u32 each)
//                                  then      the slot table: u32 x (2^b + 1);
//                                            entry p < 2^b = the slot of the
//                                            first hash >= p << (32 - b),
//                                            entry 2^b = n
//                                 Mapped, it is shared through the page cache
//                                 like the columns, instead of each process
//                                 building its own (5.5 MB at 20.5M points,
//                                 55 MB at 204.8M). A reader checks every key
//                                 and entry against the hash column (check
//                                 "index"), so a damaged index is refused,
//                                 never searched. 1.1 files store layout 1
//                                 (the same levels under a prefix table of
//                                 positions at an entry level e, with e and
//                                 2^b entries in the header): a 1.2 reader
//                                 builds its own index for them. A later
//                                 minor may store another layout: a reader
//                                 that does not know it builds its own index,
//                                 so a change of layout never invalidates a
//                                 snapshot
//              Sections lie inside [512, file bytes - 128), in this order,
//              without overlap; bytes between them are 0.
//   272  240   reserved           0 in 1.0, 1.1 and 1.2
//   ---- trailer (the last 128 bytes) ----------------------------------------
//     0    8   key id             first 8 bytes of SHA-256("chash-key-id" ||
//                                 public key); 0 when unsigned
//     8   64   signature          Ed25519 (RFC 8032, libsodium
//                                 crypto_sign_detached) of the file's bytes
//                                 B = [0, file bytes - 128), over the 65 bytes
//                                 (1.1 and 1.2 alike)
//                                 "chash-snapshot-v1.1-sha256-chunks" ||
//                                 T(B), the SHA-256 chunk tree:
//                                   T(B) = SHA-256("chash-sha256-chunk-tree"
//                                     || u64 |B| || u32 2^20 || SHA-256(B_0)
//                                     || ... || SHA-256(B_k-1)),
//                                 B_i the i-th 1 MiB chunk of B (the last
//                                 one shorter; k = 0 for an empty B).
//                                 A 1.0 file signs the 49 bytes
//                                 "chash-snapshot-v1" || BLAKE2b-256(B).
//                                 0 when unsigned
//    72   40   reserved           0
//   112   16   checksum           XXH3-128 (xxHash 0.8) of bytes
//                                 [0, file bytes - 16), low 64 bits first
//
// Why two digests: XXH3 catches accidental damage at memory speed on every
// load that checks no signature; it is not cryptographic (anyone can forge a
// matching file), so the signature covers a cryptographic digest of the same
// bytes, and a load that verifies it needs the XXH3 pass only to name
// damage. The signed bytes include the header: the config version, the
// label, the flags (so a signature cannot be stripped from a file that says
// it is signed) and every section.
//
// Why a SHA-256 chunk tree (1.1) and not BLAKE2b (1.0): a signed load must
// cost about what an unsigned verified one does, and BLAKE2b (libsodium) is
// one sequential pass at ~0.5 GB/s, which made a signed load 3.2x (20.5M
// points) to 5.2x (204.8M) an unsigned one. SHA-256 from OpenSSL's
// libcrypto (EVP) runs on the CPU's SHA extensions (x86 SHA-NI, ARMv8 SHA2)
// at 1.5-2 GB/s a core here, and hashing fixed 1 MiB chunks makes the pass
// parallel: the loader hashes the chunks on other threads while its own
// thread runs the structural checks, then joins in. Both
// are well-kept primitives used as specified; the tree is the standard
// two-level hash list (fixed chunk size, the length and chunk size bound
// into the root, a context string apart from the leaves), so a collision of
// T is a collision of SHA-256, and the digest is the same for every thread
// count. What 1.1 costs: a 1.0 reader given trusted keys refuses a signed
// 1.1 file (check "signature": it hashes with BLAKE2b); it still loads
// unsigned 1.1 files and loads signed ones when it is not asked to verify.
// Upgrade the readers that verify before the writers. This reader verifies
// both: by the minor version, 1.0 files with BLAKE2b, later ones with T.
//
// ============================================================================
// LOADING
// ============================================================================
//
// LoadSnapshot maps the file PROT_READ/MAP_SHARED: the ring's hash, node and
// collision columns are the file's pages, shared by every process that maps
// the same file through the page cache, and so is the search index when
// the file stores it (1.2, the default); only the node table (O(nodes)), two
// bit sets per node and, for a file without a stored 1.2 index, the index
// (4.9% of the columns, built at load) are the process's own. Checks, in order; a
// failure is a kBadSnapshot (or kUntrusted for policy) Status whose message
// starts with the check's name:
//   io          open/fstat/mmap failed (kIoError; kOutOfMemory, not a check,
//               when the address space cannot hold the mapping: ENOMEM)
//   size        the mapped file (fstat of the descriptor that is mapped, never
//               the path) is smaller than header + trailer, or differs from
//               the header's file bytes (truncated or extended)
//   magic       not a chash snapshot
//   version     a major version this reader does not know
//   header      header bytes, flags, reserved bytes, flavor, tie-break,
//               multiple, counts or the section count out of range
//   sections    an offset or length outside the file, misaligned, overlapping,
//               out of order, not the length the counts imply, or nonzero
//               bytes between sections or in the trailer's reserved bytes
//   checksum    XXH3-128 differs (the only check verify = false skips).
//               With trusted keys and a 1.1+ file whose key id matches, the
//               pass runs only when the file is refused, to name the damage
//               first: a signature that verifies proves the same bytes with
//               SHA-256, so a signed load does not pay for both (a wrong
//               checksum field under a valid signature loads)
//   min_version (kUntrusted) config version below min_config_version
//   signature   (kUntrusted) trusted keys given and the file is unsigned, its
//               key id matches no trusted key, or the signature is invalid.
//               The chunks are hashed on up to the machine's hardware threads
//               (the loading one's included) while the checks below run;
//               their failures are reported only after the signature's
//   label       not UTF-8 text without NUL
//   node_table  an entry overruns, an address the flavor refuses, duplicate
//               servers, or points generated != sum of weight x multiple
//   hash_column hashes not strictly ascending, or a sentinel slot != UINT32_MAX
//   node_column a node id >= N, a node of weight 0, or a tail slot != node 0
//   collisions  loser hashes not ascending or not in the column, loser node
//               ids >= N, a loser equal to its hash's kept node
//   subsets     a bad name, a duplicate, or mask bits past N
//   index       a stored index that is not exactly the index of the hash
//               column (layout, levels, entry level, table size, a key, the
//               padding, a table entry or a bucket of 16 keys or more), or
//               for a file without one: it cannot be built (out of memory)
//   fingerprint the header's fingerprint != the node table's
//   points_digest  (verify_points_digest only: SHA-256 over 8 bytes a point)
//               the points differ from the header's digest
//
// What readers may assume. Writers (WriteSnapshotFile, `chash build`) write a
// temporary file in the target's directory, fsync it, rename it over the
// target and fsync the directory: a reader opening the path sees either the
// old complete file or the new complete file, and a ring already loaded keeps
// its inode and pages until it is released. Never truncate or rewrite a
// snapshot in place: a process that has it mapped gets SIGBUS when it touches
// a page past the new end of file (a crash in the middle of a lookup), and
// rewritten pages change a loaded ring's answers under it. A process that
// cannot rule that out (a file on a shared volume others may rewrite) loads
// with mode = SnapshotLoadMode::kCopy: the file is read into anonymous memory
// (huge-page backed for large columns, as a built ring) and checked there,
// costing the ring's memory per process again but nothing else.
//
// Cost of a verified map load (n points): one XXH3 pass over the file at
// memory speed, one pass over each column, the index check (or build): a
// read of every 16th hash and of the stored index, O(n), a small fraction of
// a build; with trusted keys, the SHA-256 of the file's chunks on every
// hardware thread instead of the XXH3 pass (measured by chash's benchmarks).
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
#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)

namespace chash {

inline constexpr uint16_t kSnapshotMajorVersion = 1;
inline constexpr uint16_t kSnapshotMinorVersion = 2;

// ---- Keys (Ed25519) ---------------------------------------------------------

struct PublicKey {
  std::array<uint8_t, 32> bytes{};
  // First 8 bytes of SHA-256("chash-key-id" || bytes): names the key in a
  // snapshot's trailer and in `chash inspect`.
  std::array<uint8_t, 8> KeyId() const noexcept;
  // KeyId() as 16 hex digits, for people and key files. May throw
  // std::bad_alloc, and nothing else: 16 characters are one more than
  // std::string holds inline. A display helper like Status::ToString; the
  // key id itself is KeyId(), which allocates nothing.
  std::string KeyIdHex() const;
  friend bool operator==(const PublicKey&, const PublicKey&) = default;
};

// libsodium's 64-byte secret key (the 32-byte seed, then the public key).
struct SecretKey {
  std::array<uint8_t, 64> bytes{};
  PublicKey public_key() const noexcept;
};

// Allocation: every call below that returns a Status or a Result reports
// kOutOfMemory when memory runs out, and then leaves its arguments and files
// as they were (a file being written is removed; a destination is replaced
// only by a complete file). Only the text helpers KeyIdHex and
// SnapshotReloader::last_error may throw std::bad_alloc (see each).

// A fresh key pair from the OS's random source (libsodium).
Result<SecretKey> GenerateSecretKey();

// Key files are one line of text: "chash-ed25519-public KEYID HEX64\n" and
// "chash-ed25519-secret KEYID HEX128\n". WriteKeyFiles writes BASE (mode
// 0600, refused if it exists) and BASE.pub. On any error neither file is
// left behind (a BASE.pub it made is removed), so the call can be retried.
Status WriteKeyFiles(const SecretKey& key, const std::string& base);
Result<PublicKey> ReadPublicKeyFile(const std::string& path);
Result<SecretKey> ReadSecretKeyFile(const std::string& path);

// ---- Writing ----------------------------------------------------------------

// A subset of a ring's nodes stored under a name: lookups through it answer
// as the ring of only those nodes would (failover.h: masks are exact).
struct NamedSubset {
  std::string name;  // 1..64 bytes of [A-Za-z0-9._-]
  NodeMask mask;     // mask.size() == the ring's num_nodes()
};

struct SnapshotWriteOptions {
  uint64_t config_version = 0;
  std::string label;                  // at most 4,096 bytes of UTF-8, no NUL
  std::vector<NamedSubset> subsets;
  int64_t created_unix_seconds = -1;  // -1: now
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
  kMap,   // zero-copy: the columns are the file's pages (MAP_SHARED, read-only)
  kCopy,  // read into anonymous memory: immune to others truncating the file
};

struct SnapshotLoadOptions {
  SnapshotLoadMode mode = SnapshotLoadMode::kMap;
  // false: skips the checksum (one XXH3 pass over the file), nothing else:
  // the header, every section, the columns' order, sentinels and node ids,
  // the collision table, the subsets and the fingerprint are always checked
  // (the search stays inside the columns only on sorted columns with their
  // sentinels, and callers index the node table with the ids), so a damaged
  // unverified file can answer lookups wrongly but never reads outside the
  // file or returns a node id >= num_nodes(). For files this process has
  // verified before, and for measuring what the checksum costs. Despite its
  // name it controls the checksum only (signatures are checked whenever
  // trusted_keys is set); its C twin says so: chash_snapshot_options's
  // skip_checksum. The name stays for source compatibility.
  bool verify = true;
  // Also recompute the points digest (SHA-256, 8 bytes a point: seconds for
  // 200M points) and compare it with the header's: proves the columns are
  // the points the header names, not only undamaged.
  bool verify_points_digest = false;
  // Non-empty: the snapshot must be signed by one of these keys (several
  // for rotation: trust the old and the new key while files are re-signed).
  std::vector<PublicKey> trusted_keys;
  uint64_t min_config_version = 0;
};

struct SnapshotInfo {
  uint16_t major_version = 0;
  uint16_t minor_version = 0;
  uint64_t file_bytes = 0;
  uint64_t config_version = 0;
  int64_t created_unix_seconds = 0;
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
  // Whether the columns are the file's pages (kMap) or this process's memory.
  bool mapped() const noexcept { return mapped_; }
  // Bytes of the file this object has mapped (0 for kCopy).
  uint64_t mapped_bytes() const noexcept { return mapped_ ? info_.file_bytes : 0; }

 private:
  friend struct SnapshotLoader;
  Ring ring_;
  SnapshotInfo info_;
  std::vector<NamedSubset> subsets_;
  bool mapped_ = false;
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

// The check a failed load names ("checksum", "signature", ...): the message's
// text before its first ':'; empty for other statuses.
std::string_view FailedSnapshotCheck(const Status& status) noexcept;

// ---- Hot reload ---------------------------------------------------------------

// Owns the current snapshot of a path and replaces it when the file at the
// path is replaced (a new inode, as WriteSnapshotFile's rename makes).
//
//   auto reloader = chash::SnapshotReloader::Create(path, options);
//   if (!reloader.ok()) return reloader.status();        // names the check
//   chash::Status watching =
//       reloader.value()->StartWatching(std::chrono::milliseconds(500));  // or Poll()
//   if (!watching.ok()) return watching;                  // no thread to spare
//   // any thread, per request or per batch:
//   std::shared_ptr<const chash::Ring> ring = reloader.value()->ring();
//
// A new file is loaded and checked with the reloader's options, off the
// readers' path; it is published only if every check passes and its config
// version is higher than the current one (equal with the same checksum:
// the same file, nothing to do). Otherwise the current ring stays and
// last_error() says why. Readers take a mutex for a pointer copy (tens of
// ns), never wait for a load; a ring they hold stays valid after a reload.
struct ReloadOptions {
  SnapshotLoadOptions load;
  // Accept a lower config version (a deliberate rollback). The better
  // rollback is a new, higher version of the old servers (`chash build
  // --from OLD.ring --config-version N`).
  bool allow_rollback = false;
};

class SnapshotReloader {
 public:
  // Loads `path` now; an error if that first load fails (kOutOfMemory
  // included).
  static Result<std::unique_ptr<SnapshotReloader>> Create(std::string path,
                                                          ReloadOptions options);
  ~SnapshotReloader();
  SnapshotReloader(const SnapshotReloader&) = delete;
  SnapshotReloader& operator=(const SnapshotReloader&) = delete;

  // A pointer copy under a mutex; allocates nothing.
  std::shared_ptr<const RingSnapshot> current() const;
  std::shared_ptr<const Ring> ring() const { return RingOf(current()); }

  // Checks the path once: if it names another file than the current one
  // (device, inode, size or modification time), loads and publishes it.
  // Returns Ok when nothing changed or the new file was published, else the
  // reason the new file was refused (also kept in last_error()). A refused
  // file is not retried until the path changes again, except one refused
  // with kOutOfMemory (memory ran out loading it): that one is tried again
  // at the next Poll, and the current snapshot stays. Thread-safe.
  Status Poll();
  // Polls every `interval` on a thread of its own until the destructor.
  // kOutOfMemory, or kIoError if the system refuses a thread (EAGAIN); Ok
  // if the thread runs (or already ran).
  Status StartWatching(std::chrono::milliseconds interval);

  uint64_t reloads() const;   // files published after the first
  uint64_t refusals() const;  // files refused
  // Of the last refused file; Ok if none. A copy of the kept Status (its
  // message allocated), so it may throw std::bad_alloc, and nothing else:
  // it is for logs and monitoring, where the same error already came back
  // from the Poll that refused the file, without a copy.
  Status last_error() const;

 private:
  struct Impl;
  explicit SnapshotReloader(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace chash

#pragma GCC visibility pop

#endif  // CHASH_SNAPSHOT_H_
