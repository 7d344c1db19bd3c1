// What the C API's files share (engine/capi/chash_c*.cc): the handles
// behind chash_c.h's opaque types, this thread's last error, and the
// helpers every entry point uses to turn a C++ Status or exception into a
// C code. Not installed; not part of any API.
#ifndef CHASH_ENGINE_CAPI_CAPI_INTERNAL_H_
#define CHASH_ENGINE_CAPI_CAPI_INTERNAL_H_

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "chash/chash_c.h"
#include "chash/crc32.h"
#include "chash/dispatch.h"
#include "chash/failover.h"
#include "chash/identity.h"
#include "chash/migration.h"
#include "chash/ring.h"
#include "chash/snapshot.h"
#include "chash/stats.h"
#include "chash/status.h"
#include "flavor_options.h"
#include "flavors.h"
#include "identity/hex.h"
#include "util/status_codes.h"

struct chash_builder {
  explicit chash_builder(const chash::RingOptions& ring_options)
      : options(ring_options), builder(ring_options) {}
  chash::RingOptions options;
  chash::RingBuilder builder;
  std::string error;  // message of the last failed call, "" if none
};

// A ring with a reference count: the caller's handle is one reference and
// each migration that uses the ring holds another (through a shared_ptr
// whose deleter drops it), so the caller may free its handle at any time.
// A ring built here is owned by the handle; a snapshot's ring is shared with
// the snapshot (and keeps its mapping alive).
struct chash_ring {
  explicit chash_ring(chash::Ring built) noexcept : owned(std::move(built)), ring(owned) {}
  explicit chash_ring(std::shared_ptr<const chash::Ring> snapshot_ring) noexcept
      : shared(std::move(snapshot_ring)), ring(*shared) {}
  std::atomic<uint32_t> references{1};
  chash::Ring owned;
  std::shared_ptr<const chash::Ring> shared;
  const chash::Ring& ring;
};

struct chash_snapshot {
  std::shared_ptr<const chash::RingSnapshot> snapshot;
};

// The C++ reloader and its last candidate (what accept and refuse match by
// token), under a mutex: a reloader's calls serialize.
struct chash_reloader {
  std::unique_ptr<chash::SnapshotReloader> reloader;
  std::mutex mutex;
  chash::ReloadCandidate candidate;
};

struct chash_node_mask {
  chash::NodeMask mask;
};

struct chash_availability {
  explicit chash_availability(uint32_t num_nodes) : mask(num_nodes) {}
  chash::AvailabilityMask mask;
};

struct chash_migration {
  std::unique_ptr<chash::RingMigration> migration;
  chash_ring* rings[2] = {nullptr, nullptr};  // a reference each, for chash_migration_ring
};

namespace chash::capi {

using chash::Ring;
using chash::Status;
using chash::StatusCode;

static_assert(CHASH_NO_NODE == Ring::kNoNode);
static_assert(CHASH_MAX_NODES == chash::kMaxNodes);
static_assert(CHASH_DEFAULT_POINT_MULTIPLE == chash::kDefaultPointMultiple);
static_assert(CHASH_ROLLOUT_SCALE == chash::kRolloutScale);
static_assert(CHASH_FINGERPRINT_SIZE == sizeof(chash::Fingerprint{}.bytes));
static_assert(CHASH_FLAVOR_NGINX == static_cast<uint32_t>(chash::Flavor::kNginx));
static_assert(CHASH_FLAVOR_PINGORA_V1 == static_cast<uint32_t>(chash::Flavor::kPingoraV1));
static_assert(CHASH_FLAVOR_PINGORA_V2 == static_cast<uint32_t>(chash::Flavor::kPingoraV2));
static_assert(CHASH_FLAVOR_RESTY == static_cast<uint32_t>(chash::Flavor::kResty));
static_assert(CHASH_FLAVOR_HAPROXY == static_cast<uint32_t>(chash::Flavor::kHaproxy));
static_assert(CHASH_FLAVOR_KETAMA_MD5 == static_cast<uint32_t>(chash::Flavor::kKetamaMd5));
static_assert(CHASH_FLAVOR_VARNISH_SHARD == static_cast<uint32_t>(chash::Flavor::kVarnishShard));
static_assert(CHASH_FLAVOR_ENVOY_RING == static_cast<uint32_t>(chash::Flavor::kEnvoyRing));
static_assert(CHASH_FLAVOR_ENVOY_MAGLEV == static_cast<uint32_t>(chash::Flavor::kEnvoyMaglev));
static_assert(CHASH_HAPROXY_HASH_CRC32 == static_cast<uint32_t>(chash::HaproxyHash::kCrc32));
static_assert(CHASH_KETAMA_LIBMEMCACHED_SPY_WEIGHTED ==
              static_cast<uint32_t>(chash::KetamaVariant::kLibmemcachedSpyWeighted));
static_assert(CHASH_KETAMA_TWEMPROXY == static_cast<uint32_t>(chash::KetamaVariant::kTwemproxy));
static_assert(CHASH_KETAMA_HASH_MURMUR3 == static_cast<uint32_t>(chash::KetamaKeyHash::kMurmur3));
static_assert(CHASH_LOOKUP_SUCCESSOR == static_cast<uint32_t>(chash::LookupRule::kSuccessor));
static_assert(CHASH_LOOKUP_SUCCESSOR_CLAMPED ==
              static_cast<uint32_t>(chash::LookupRule::kSuccessorClamped));
static_assert(CHASH_LOOKUP_NEAREST == static_cast<uint32_t>(chash::LookupRule::kNearest));
static_assert(CHASH_LOOKUP_TABLE == static_cast<uint32_t>(chash::LookupRule::kTable));
static_assert(CHASH_NODE_FIELD_SERVER_ID == chash::internal::node_field::kServerId);
static_assert(CHASH_NODE_FIELD_NAME == chash::internal::node_field::kName);
static_assert(CHASH_NODE_FIELD_HOSTNAME == chash::internal::node_field::kHostname);
static_assert(CHASH_NODE_FIELD_HASH_KEY == chash::internal::node_field::kHashKey);
static_assert(CHASH_NODE_FIELD_REAL_WEIGHT == chash::internal::node_field::kRealWeight);
static_assert(CHASH_RETRY_POINT_WALK == static_cast<uint32_t>(chash::internal::Retry::kPointWalk));
static_assert(CHASH_RETRY_DISTINCT == static_cast<uint32_t>(chash::internal::Retry::kDistinct));
static_assert(CHASH_RETRY_ATTEMPT == static_cast<uint32_t>(chash::internal::Retry::kAttempt));
static_assert(CHASH_SIDE_OLD == static_cast<uint32_t>(chash::RingSide::kOld));
static_assert(CHASH_SIDE_NEW == static_cast<uint32_t>(chash::RingSide::kNew));
static_assert(CHASH_LOAD_SEALED == static_cast<uint32_t>(chash::SnapshotLoadMode::kSealed));
static_assert(CHASH_LOAD_MAP == static_cast<uint32_t>(chash::SnapshotLoadMode::kMap));
static_assert(CHASH_LOAD_COPY == static_cast<uint32_t>(chash::SnapshotLoadMode::kCopy));
static_assert(CHASH_CHECK_CHECKSUM == static_cast<uint32_t>(chash::SnapshotCheck::kChecksum));
static_assert(CHASH_CHECK_EMBEDDER == static_cast<uint32_t>(chash::SnapshotCheck::kEmbedder));
static_assert(CHASH_CHECK_OPTIONS == static_cast<uint32_t>(chash::SnapshotCheck::kOptions));
static_assert(CHASH_CHECK_LOW_COLUMN == static_cast<uint32_t>(chash::SnapshotCheck::kLowColumn));
static_assert(CHASH_CHECK_LOW_COLUMN + 1 == chash::kSnapshotCheckCount);
static_assert(CHASH_RELOAD_UNCHANGED == static_cast<uint32_t>(chash::ReloadOutcome::kUnchanged));
static_assert(CHASH_RELOAD_NEW == static_cast<uint32_t>(chash::ReloadOutcome::kNew));
static_assert(CHASH_RELOAD_SAME_RING == static_cast<uint32_t>(chash::ReloadOutcome::kSameRing));
static_assert(CHASH_RELOAD_REFUSED == static_cast<uint32_t>(chash::ReloadOutcome::kRefused));

// The caller's stack holds the C++ walk objects: their size and alignment
// must fit the opaque C structs, and a cursor must be copyable as bytes.
static_assert(std::is_trivially_copyable_v<chash::PointCursor>);
static_assert(sizeof(chash::PointCursor) <= sizeof(chash_cursor::opaque));
static_assert(alignof(chash::PointCursor) <= alignof(chash_cursor));
static_assert(std::is_trivially_destructible_v<chash::NodeWalk>);
// chash_walk_size: the walk's header, then its seen-set.
constexpr size_t kWalkHeaderBytes = 128;
static_assert(sizeof(chash::NodeWalk) <= kWalkHeaderBytes);

// Lookups convert C arrays to spans in chunks on the stack: no allocation.
constexpr size_t kChunk = 256;

inline thread_local char last_error[1024] = "";
inline thread_local uint32_t last_check = CHASH_CHECK_NONE;

inline void SetLastError(std::string_view message) noexcept {
  const size_t length = std::min(message.size(), sizeof(last_error) - 1);
  std::memcpy(last_error, message.data(), length);
  last_error[length] = '\0';
}

inline int Fail(int code, std::string_view message) noexcept {
  SetLastError(message);
  last_check = CHASH_CHECK_NONE;
  return code;
}

inline int CodeOf(StatusCode code) noexcept {
  const chash::internal::ErrorCode* row = chash::internal::FindErrorCode(code);
  return row == nullptr ? CHASH_E_INTERNAL : row->c_code;
}

inline int Fail(const Status& status) noexcept {
  if (status.ok()) return CHASH_OK;
  const int code = Fail(CodeOf(status.code()), status.message());
  last_check = static_cast<uint32_t>(chash::FailedSnapshotCheck(status));
  return code;
}

inline int NullArgument(const char* function, const char* argument) noexcept {
  char message[160];
  std::snprintf(message, sizeof(message), "%s: %s is NULL", function, argument);
  return Fail(CHASH_E_NULL_ARGUMENT, message);
}

// Copies a message into a fixed buffer of a struct, NUL-terminated.
template <size_t N>
inline void CopyMessage(char (&out)[N], std::string_view message) noexcept {
  const size_t length = std::min(message.size(), N - 1);
  std::memcpy(out, message.data(), length);
  out[length] = '\0';
}

// "Structs that grow" (chash_c.h): the smallest size a caller may pass.
constexpr uint32_t kMinStructSize = 8;

// An input struct of the caller's size as this library's struct: the
// caller's bytes up to its size, zero past it (the defaults); a caller's
// struct larger than this library's must be zero past what it knows.
template <typename T>
inline int ReadGrowingStruct(const char* function, const char* name, const T* in, T& out) noexcept {
  std::memset(static_cast<void*>(&out), 0, sizeof(T));
  out.size = sizeof(T);
  if (in == nullptr) return CHASH_OK;
  const uint32_t size = in->size;
  if (size < kMinStructSize) {
    char message[200];
    std::snprintf(message, sizeof(message), "%s: %s->size is %u; set it to sizeof the struct",
                  function, name, size);
    return Fail(CHASH_E_BAD_ARGUMENT, message);
  }
  std::memcpy(static_cast<void*>(&out), in, std::min<size_t>(size, sizeof(T)));
  const auto* bytes = reinterpret_cast<const unsigned char*>(in);
  for (size_t i = sizeof(T); i < size; ++i) {
    if (bytes[i] != 0) {
      char message[240];
      std::snprintf(message, sizeof(message),
                    "%s: %s has fields this library (%s) does not know set (byte %zu of %u)",
                    function, name, CHASH_VERSION_STRING, i, size);
      return Fail(CHASH_E_BAD_ARGUMENT, message);
    }
  }
  out.size = sizeof(T);
  return CHASH_OK;
}

// Writes this library's struct into the caller's, up to the caller's size.
template <typename T>
inline int WriteGrowingStruct(const char* function, T* out, const T& value) noexcept {
  const uint32_t size = out->size;
  if (size < kMinStructSize) {
    char message[200];
    std::snprintf(message, sizeof(message), "%s: out->size is %u; set it to sizeof the struct",
                  function, size);
    return Fail(CHASH_E_BAD_ARGUMENT, message);
  }
  std::memcpy(static_cast<void*>(out), &value, std::min<size_t>(size, sizeof(T)));
  out->size = size;
  return CHASH_OK;
}

// Runs `body` (returning an int code), turning any exception into a code.
template <typename Body>
inline int Guard(Body&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return Fail(CHASH_E_OUT_OF_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return Fail(CHASH_E_INTERNAL, e.what());
  } catch (...) {
    return Fail(CHASH_E_INTERNAL, "unexpected exception");
  }
}

// An argument an entry point needs: its name, and whether the caller
// passed NULL for it.
struct Needed {
  const char* name;
  bool is_null;
};

// CHASH_E_NULL_ARGUMENT naming the first of `needed` (in order) that is
// NULL; CHASH_OK if none is.
inline int FirstNull(const char* function, std::initializer_list<Needed> needed) noexcept {
  for (const Needed& argument : needed) {
    if (argument.is_null) return NullArgument(function, argument.name);
  }
  return CHASH_OK;
}

// An entry point that hands back a handle through `out`: `out` is checked,
// then cleared (NULL after any failure), then `needed` as FirstNull checks
// it; then `body` runs under Guard.
template <typename Handle, typename Body>
inline int HandleOut(const char* function, Handle** out, std::initializer_list<Needed> needed,
                     Body&& body) noexcept {
  if (out == nullptr) return NullArgument(function, "out");
  *out = nullptr;
  if (const int code = FirstNull(function, needed)) return code;
  return Guard(std::forward<Body>(body));
}

inline std::string_view View(const void* data, size_t length) noexcept {
  return {static_cast<const char*>(data), length};
}

// The C arrays of keys as string_views, for one chunk. False if a key is
// NULL with a length.
inline bool KeyChunk(const char* const* keys, const size_t* key_lens, size_t begin, size_t count,
                     std::string_view* views) noexcept {
  for (size_t i = 0; i < count; ++i) {
    const char* key = keys[begin + i];
    const size_t length = key_lens[begin + i];
    if (key == nullptr && length != 0) return false;
    views[i] = std::string_view(key, length);
  }
  return true;
}

inline int NullKey(const char* function, size_t index) noexcept {
  char message[160];
  std::snprintf(message, sizeof(message), "%s: keys[%zu] is NULL with a nonzero length", function,
                index);
  return Fail(CHASH_E_NULL_ARGUMENT, message);
}

// Batch lookups over C key arrays, chunk by chunk: lookup(views, out).
// `needed` (the handles the lookup reads) is checked as FirstNull does, then
// the arrays unless n is 0.
template <typename Lookup>
inline int FindKeysChunked(const char* function, std::initializer_list<Needed> needed,
                           const char* const* keys, const size_t* key_lens, size_t n, uint32_t* out,
                           const Lookup& lookup) noexcept {
  if (const int code = FirstNull(function, needed)) return code;
  if (n == 0) return CHASH_OK;
  if (const int code = FirstNull(function, {{"keys", keys == nullptr},
                                            {"key_lens", key_lens == nullptr},
                                            {"out", out == nullptr}})) {
    return code;
  }
  std::string_view views[kChunk];
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t count = std::min(kChunk, n - begin);
    if (!KeyChunk(keys, key_lens, begin, count, views)) {
      for (size_t i = 0; i < count; ++i) {
        if (keys[begin + i] == nullptr && key_lens[begin + i] != 0) {
          return NullKey(function, begin + i);
        }
      }
    }
    lookup(std::span<const std::string_view>(views, count),
           std::span<uint32_t>(out + begin, count));
  }
  return CHASH_OK;
}

inline void Release(chash_ring* ring) noexcept {
  if (ring != nullptr && ring->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete ring;
  }
}

// A shared_ptr that holds a reference to the handle. If making it throws,
// shared_ptr calls the deleter, so the reference count stays balanced.
inline std::shared_ptr<const Ring> Share(const chash_ring* handle) {
  chash_ring* ring = const_cast<chash_ring*>(handle);
  ring->references.fetch_add(1, std::memory_order_relaxed);
  return std::shared_ptr<const Ring>(&ring->ring, [ring](const Ring*) { Release(ring); });
}

inline int NewRing(chash::Result<Ring> built, chash_ring** out) {
  if (!built.ok()) return Fail(built.status());
  *out = new chash_ring(std::move(built).value());
  return CHASH_OK;
}

template <typename Digest>
inline int WriteFingerprint(const char* function, const chash_ring* ring, uint8_t* out,
                            const Digest& digest) noexcept {
  if (ring == nullptr) return NullArgument(function, "ring");
  if (out == nullptr) return NullArgument(function, "out");
  return Guard([&] {
    const chash::Fingerprint fingerprint = digest(ring->ring);
    std::memcpy(out, fingerprint.bytes.data(), fingerprint.bytes.size());
    return CHASH_OK;
  });
}

inline const chash::NodeMask* MaskOf(const chash_node_mask* mask) noexcept {
  return mask == nullptr ? nullptr : &mask->mask;
}

}  // namespace chash::capi

#endif  // CHASH_ENGINE_CAPI_CAPI_INTERNAL_H_
