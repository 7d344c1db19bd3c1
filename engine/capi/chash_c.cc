// The C API (include/chash/chash_c.h) over the C++ one. Every entry point is
// noexcept and catches everything the C++ side may throw (std::bad_alloc
// above all) at this boundary: a C host has no way to handle an exception.
#include "chash/chash_c.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

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
#include "status_codes.h"

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

namespace {

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
static_assert(CHASH_NODE_FIELD_NONE == static_cast<uint32_t>(chash::internal::NodeField::kNone));
static_assert(CHASH_NODE_FIELD_SERVER_ID ==
              static_cast<uint32_t>(chash::internal::NodeField::kServerId));
static_assert(CHASH_NODE_FIELD_NAME == static_cast<uint32_t>(chash::internal::NodeField::kName));
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

thread_local char last_error[1024] = "";
thread_local uint32_t last_check = CHASH_CHECK_NONE;

void SetLastError(std::string_view message) noexcept {
  const size_t length = std::min(message.size(), sizeof(last_error) - 1);
  std::memcpy(last_error, message.data(), length);
  last_error[length] = '\0';
}

int Fail(int code, std::string_view message) noexcept {
  SetLastError(message);
  last_check = CHASH_CHECK_NONE;
  return code;
}

int CodeOf(StatusCode code) noexcept {
  const chash::internal::ErrorCode* row = chash::internal::FindErrorCode(code);
  return row == nullptr ? CHASH_E_INTERNAL : row->c_code;
}

int Fail(const Status& status) noexcept {
  if (status.ok()) return CHASH_OK;
  const int code = Fail(CodeOf(status.code()), status.message());
  last_check = static_cast<uint32_t>(chash::FailedSnapshotCheck(status));
  return code;
}

int NullArgument(const char* function, const char* argument) noexcept {
  char message[160];
  std::snprintf(message, sizeof(message), "%s: %s is NULL", function, argument);
  return Fail(CHASH_E_NULL_ARGUMENT, message);
}

// Copies a message into a fixed buffer of a struct, NUL-terminated.
template <size_t N>
void CopyMessage(char (&out)[N], std::string_view message) noexcept {
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
int ReadGrowingStruct(const char* function, const char* name, const T* in, T& out) noexcept {
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
int WriteGrowingStruct(const char* function, T* out, const T& value) noexcept {
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
int Guard(Body&& body) noexcept {
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

std::string_view View(const void* data, size_t length) noexcept {
  return {static_cast<const char*>(data), length};
}

// The C arrays of keys as string_views, for one chunk. False if a key is
// NULL with a length.
bool KeyChunk(const char* const* keys, const size_t* key_lens, size_t begin, size_t count,
              std::string_view* views) noexcept {
  for (size_t i = 0; i < count; ++i) {
    const char* key = keys[begin + i];
    const size_t length = key_lens[begin + i];
    if (key == nullptr && length != 0) return false;
    views[i] = std::string_view(key, length);
  }
  return true;
}

int NullKey(const char* function, size_t index) noexcept {
  char message[160];
  std::snprintf(message, sizeof(message), "%s: keys[%zu] is NULL with a nonzero length", function,
                index);
  return Fail(CHASH_E_NULL_ARGUMENT, message);
}

// Batch lookups over C key arrays, chunk by chunk: lookup(views, out).
template <typename Lookup>
int FindKeysChunked(const char* function, const char* const* keys, const size_t* key_lens, size_t n,
                    uint32_t* out, const Lookup& lookup) noexcept {
  if (n == 0) return CHASH_OK;
  if (keys == nullptr) return NullArgument(function, "keys");
  if (key_lens == nullptr) return NullArgument(function, "key_lens");
  if (out == nullptr) return NullArgument(function, "out");
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

void Release(chash_ring* ring) noexcept {
  if (ring != nullptr && ring->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    delete ring;
  }
}

// A shared_ptr that holds a reference to the handle. If making it throws,
// shared_ptr calls the deleter, so the reference count stays balanced.
std::shared_ptr<const Ring> Share(const chash_ring* handle) {
  chash_ring* ring = const_cast<chash_ring*>(handle);
  ring->references.fetch_add(1, std::memory_order_relaxed);
  return std::shared_ptr<const Ring>(&ring->ring, [ring](const Ring*) { Release(ring); });
}

int NewRing(chash::Result<Ring> built, chash_ring** out) {
  if (!built.ok()) return Fail(built.status());
  *out = new chash_ring(std::move(built).value());
  return CHASH_OK;
}

template <typename Digest>
int WriteFingerprint(const char* function, const chash_ring* ring, uint8_t* out,
                     const Digest& digest) noexcept {
  if (ring == nullptr) return NullArgument(function, "ring");
  if (out == nullptr) return NullArgument(function, "out");
  return Guard([&] {
    const chash::Fingerprint fingerprint = digest(ring->ring);
    std::memcpy(out, fingerprint.bytes.data(), fingerprint.bytes.size());
    return CHASH_OK;
  });
}

const chash::NodeMask* MaskOf(const chash_node_mask* mask) noexcept {
  return mask == nullptr ? nullptr : &mask->mask;
}

}  // namespace

extern "C" {

// ---- Library --------------------------------------------------------------------

// The names are string literals (NUL-terminated) in one table.
const char* chash_strerror(int code) noexcept {
  const chash::internal::ErrorCode* row = chash::internal::FindCErrorCode(code);
  return row == nullptr ? "unknown" : row->name.data();
}

const char* chash_last_error(void) noexcept { return last_error; }

uint32_t chash_last_check(void) noexcept { return last_check; }

const char* chash_check_name(uint32_t check) noexcept {
  if (check >= chash::kSnapshotCheckCount) return "unknown";
  // The names are static string literals, NUL-terminated.
  return chash::SnapshotCheckName(static_cast<chash::SnapshotCheck>(check)).data();
}

const char* chash_version(void) noexcept { return CHASH_VERSION_STRING; }

uint32_t chash_version_number(void) noexcept { return CHASH_VERSION_NUMBER; }

// Both names are string literals inside the library (NUL-terminated).
const char* chash_simd_target(void) noexcept { return chash::ActiveTargetName().data(); }

const char* chash_crc32_implementation(void) noexcept { return chash::ActiveCrc32Name().data(); }

uint32_t chash_crc32(const void* data, size_t len) noexcept {
  if (data == nullptr) return 0;  // the CRC of no bytes; len > 0 is a caller bug
  return chash::Crc32(data, len);
}

uint32_t chash_crc32_extend(uint32_t crc, const void* data, size_t len) noexcept {
  if (data == nullptr) return crc;
  return chash::Crc32Extend(crc, data, len);
}

// ---- The flavor table ----------------------------------------------------------------

namespace {

// The row of a C flavor value; nullptr past the table.
const chash::internal::FlavorRow* FlavorRowOf(uint32_t flavor) noexcept {
  return flavor > 0xFF ? nullptr
                       : chash::internal::FindFlavor(static_cast<chash::Flavor>(flavor));
}

// The i-th option row of a flavor; nullptr past its last.
const chash::internal::FlavorOption* FlavorOptionOf(uint32_t flavor, uint32_t i) noexcept {
  if (FlavorRowOf(flavor) == nullptr) return nullptr;
  uint32_t seen = 0;
  for (const chash::internal::FlavorOption& row : chash::internal::FlavorOptions()) {
    if (static_cast<uint32_t>(row.flavor) != flavor) continue;
    if (seen++ == i) return &row;
  }
  return nullptr;
}

// FlavorOptionValues of every row, made once: static strings for the C API.
// nullptr if they could not be allocated.
const std::vector<std::string>* OptionValueTexts() noexcept {
  static const std::unique_ptr<const std::vector<std::string>> texts =
      []() noexcept -> std::unique_ptr<const std::vector<std::string>> {
    try {
      auto made = std::make_unique<std::vector<std::string>>();
      for (const chash::internal::FlavorOption& row : chash::internal::FlavorOptions()) {
        made->push_back(chash::internal::FlavorOptionValues(row));
      }
      return made;
    } catch (const std::bad_alloc&) {
      return nullptr;
    }
  }();
  return texts.get();
}

}  // namespace

// The names are string literals (NUL-terminated) of the flavor table.
const char* chash_flavor_name(uint32_t flavor) noexcept {
  const chash::internal::FlavorRow* row = FlavorRowOf(flavor);
  return row == nullptr ? nullptr : row->name.data();
}

int chash_flavor_from_name(const char* name, size_t name_len, uint32_t* flavor) noexcept {
  if (name == nullptr && name_len != 0) return NullArgument("chash_flavor_from_name", "name");
  if (flavor == nullptr) return NullArgument("chash_flavor_from_name", "flavor");
  return Guard([&] {
    chash::Result<chash::Flavor> parsed = chash::ParseFlavor(View(name, name_len));
    if (!parsed.ok()) return Fail(parsed.status());
    *flavor = static_cast<uint32_t>(parsed.value());
    return CHASH_OK;
  });
}

int chash_flavor_property(uint32_t flavor, uint32_t property, uint64_t* value) noexcept {
  if (value == nullptr) return NullArgument("chash_flavor_property", "value");
  const chash::internal::FlavorRow* row = FlavorRowOf(flavor);
  if (row == nullptr) {
    return Guard([&] {
      return Fail(CHASH_E_BAD_ARGUMENT, "chash_flavor_property: unknown flavor " +
                                            std::to_string(flavor) + " (" +
                                            chash::internal::FlavorByteList() + ")");
    });
  }
  switch (property) {
    case CHASH_PROPERTY_KEY_HASH_BITS:
      *value = row->key_hash_bits;
      return CHASH_OK;
    case CHASH_PROPERTY_LOOKUP_RULE:
      *value = static_cast<uint64_t>(row->rule);
      return CHASH_OK;
    case CHASH_PROPERTY_TAKES_MULTIPLE:
      *value = chash::FlavorTakesPointMultiple(row->flavor) ? 1 : 0;
      return CHASH_OK;
    case CHASH_PROPERTY_NODE_FIELD:
      *value = static_cast<uint64_t>(row->node_field);
      return CHASH_OK;
    case CHASH_PROPERTY_RETRY:
      *value = static_cast<uint64_t>(row->retry);
      return CHASH_OK;
    case CHASH_PROPERTY_REMOVES_DOWN:
      *value = row->removes_down ? 1 : 0;
      return CHASH_OK;
    case CHASH_PROPERTY_OTHER_PROGRAM:
      *value = chash::internal::IsProgramFlavor(row->flavor) ? 1 : 0;
      return CHASH_OK;
    default:
      return Guard([&] {
        return Fail(CHASH_E_BAD_ARGUMENT,
                    "chash_flavor_property: unknown property " + std::to_string(property));
      });
  }
}

const char* chash_flavor_option_name(uint32_t flavor, uint32_t i) noexcept {
  const chash::internal::FlavorOption* row = FlavorOptionOf(flavor, i);
  return row == nullptr ? nullptr : row->name.data();
}

const char* chash_flavor_option_alias(uint32_t flavor, uint32_t i) noexcept {
  const chash::internal::FlavorOption* row = FlavorOptionOf(flavor, i);
  return row == nullptr ? nullptr : row->alias.data();
}

const char* chash_flavor_option_values(uint32_t flavor, uint32_t i) noexcept {
  const chash::internal::FlavorOption* row = FlavorOptionOf(flavor, i);
  const std::vector<std::string>* texts = OptionValueTexts();
  if (row == nullptr || texts == nullptr) return nullptr;
  return (*texts)[static_cast<size_t>(row - chash::internal::FlavorOptions().data())].c_str();
}

const char* chash_flavor_option_default(uint32_t flavor, uint32_t i) noexcept {
  const chash::internal::FlavorOption* row = FlavorOptionOf(flavor, i);
  return row == nullptr ? nullptr : row->default_text.data();
}

const char* chash_flavor_option_what(uint32_t flavor, uint32_t i) noexcept {
  const chash::internal::FlavorOption* row = FlavorOptionOf(flavor, i);
  return row == nullptr ? nullptr : row->what.data();
}

int chash_ring_options_set(chash_ring_options* options, uint32_t flavor, const char* name,
                           const char* value) noexcept {
  if (options == nullptr) return NullArgument("chash_ring_options_set", "options");
  if (name == nullptr) return NullArgument("chash_ring_options_set", "name");
  if (value == nullptr) return NullArgument("chash_ring_options_set", "value");
  if (options->size < sizeof(chash_ring_options)) {
    // Every field an option sets is in the 1.0 struct; a smaller size is
    // a caller that did not set it.
    return Fail(CHASH_E_BAD_ARGUMENT,
                "chash_ring_options_set: options->size is not sizeof(chash_ring_options)");
  }
  if (FlavorRowOf(flavor) == nullptr) {
    return Guard([&] {
      return Fail(CHASH_E_BAD_ARGUMENT, "chash_ring_options_set: unknown flavor " +
                                            std::to_string(flavor) + " (" +
                                            chash::internal::FlavorByteList() + ")");
    });
  }
  return Fail(chash::internal::SetFlavorOption(*options, static_cast<chash::Flavor>(flavor),
                                               name, value));
}

// ---- Building ---------------------------------------------------------------------

namespace {

int NewBuilder(const char* function, uint32_t flavor_value, const chash_ring_options& in,
               chash_builder** out) {
  // A flavor value past the enum is refused by the check, not converted.
  const uint8_t flavor_byte = static_cast<uint8_t>(flavor_value > 0xFF ? 0xFF : flavor_value);
  if (chash::internal::FindFlavor(static_cast<chash::Flavor>(flavor_byte)) == nullptr) {
    return Fail(Status(StatusCode::kBadArgument,
                       std::string(function) + ": unknown flavor " +
                           std::to_string(flavor_value) + " (" +
                           chash::internal::FlavorByteList() + ")"));
  }
  chash::RingOptions options;
  options.point_multiple =
      in.point_multiple == 0 ? chash::kDefaultPointMultiple : in.point_multiple;
  if (const Status converted = chash::internal::RingOptionsFromC(
          static_cast<chash::Flavor>(flavor_byte), in, options);
      !converted.ok()) {
    return Fail(CHASH_E_BAD_ARGUMENT,
                std::string(function) + ": " + std::string(converted.message()));
  }
  if (Status status = chash::ValidateRingOptions(options); !status.ok()) return Fail(status);
  *out = new chash_builder(options);
  return CHASH_OK;
}

}  // namespace

int chash_builder_new(uint32_t flavor, uint32_t point_multiple, chash_builder** out) noexcept {
  if (out == nullptr) return NullArgument("chash_builder_new", "out");
  *out = nullptr;
  return Guard([&] {
    chash_ring_options options{};
    options.size = sizeof options;
    options.point_multiple = point_multiple;
    return NewBuilder("chash_builder_new", flavor, options, out);
  });
}

int chash_builder_new_with_options(uint32_t flavor, const chash_ring_options* options,
                                   chash_builder** out) noexcept {
  if (out == nullptr) return NullArgument("chash_builder_new_with_options", "out");
  *out = nullptr;
  chash_ring_options in;
  if (const int code =
          ReadGrowingStruct("chash_builder_new_with_options", "options", options, in);
      code != CHASH_OK) {
    return code;
  }
  return Guard([&] { return NewBuilder("chash_builder_new_with_options", flavor, in, out); });
}

int chash_builder_set_threads(chash_builder* builder, uint32_t threads) noexcept {
  if (builder == nullptr) return NullArgument("chash_builder_set_threads", "builder");
  return Guard([&] {
    builder->error.clear();
    if (builder->builder.size() != 0) {
      builder->error = "threads are set before the first chash_builder_add";
      return Fail(CHASH_E_BAD_ARGUMENT, builder->error);
    }
    chash::RingOptions options = builder->options;
    options.build_threads = threads;
    builder->builder = chash::RingBuilder(options);
    builder->options = options;
    return CHASH_OK;
  });
}

int chash_builder_set_max_points(chash_builder* builder, uint64_t max_points) noexcept {
  if (builder == nullptr) return NullArgument("chash_builder_set_max_points", "builder");
  return Guard([&] {
    builder->error.clear();
    const auto refuse = [&](std::string message) {
      builder->error = std::move(message);
      return Fail(CHASH_E_BAD_ARGUMENT, builder->error);
    };
    if (builder->builder.size() != 0) {
      return refuse("max_points is set before the first chash_builder_add");
    }
    chash::RingOptions options = builder->options;
    options.max_points = max_points;
    if (Status status = chash::ValidateRingOptions(options); !status.ok()) {
      return refuse(status.message());
    }
    builder->builder = chash::RingBuilder(options);
    builder->options = options;
    return CHASH_OK;
  });
}

namespace {

int AddNode(const char* function, chash_builder* builder, const char* address,
            size_t address_len, uint32_t weight, const chash::NodeOptions& node) noexcept {
  if (builder == nullptr) return NullArgument(function, "builder");
  const int code = Guard([&] {
    builder->error.clear();
    if (address == nullptr) {
      builder->error = "node " + std::to_string(builder->builder.size()) + ": address is NULL";
      return CHASH_E_NULL_ARGUMENT;
    }
    const std::string_view text(address, address_len);
    // A resty id is opaque bytes (APISIX's ids hold NULs); an address is text.
    if (const size_t nul = text.find('\0');
        nul != std::string_view::npos && builder->options.flavor != chash::Flavor::kResty) {
      builder->error = "node " + std::to_string(builder->builder.size()) +
                       ": address contains a NUL byte at offset " + std::to_string(nul);
      return CHASH_E_BAD_ADDRESS;
    }
    const Status status = builder->builder.Add(text, weight, node);
    if (!status.ok()) builder->error = status.message();
    return CodeOf(status.code());
  });
  if (code != CHASH_OK) {
    // Guard's own failures (out of memory while formatting) left the
    // message in last_error; mirror whichever is known.
    if (builder->error.empty()) {
      try {
        builder->error = last_error;
      } catch (...) {
      }
    } else {
      SetLastError(builder->error);
    }
  }
  return code;
}

}  // namespace

int chash_builder_add(chash_builder* builder, const char* address, size_t address_len,
                      uint32_t weight) noexcept {
  return AddNode("chash_builder_add", builder, address, address_len, weight, {});
}

int chash_builder_add_node(chash_builder* builder, const char* address, size_t address_len,
                           uint32_t weight, uint32_t server_id, const char* name,
                           size_t name_len) noexcept {
  if (name == nullptr && name_len != 0) {
    return NullArgument("chash_builder_add_node", "name (with name_len > 0)");
  }
  chash::NodeOptions node;
  node.server_id = server_id;
  if (name != nullptr) node.name = std::string_view(name, name_len);
  return AddNode("chash_builder_add_node", builder, address, address_len, weight, node);
}

uint32_t chash_builder_num_nodes(const chash_builder* builder) noexcept {
  return builder == nullptr ? 0 : static_cast<uint32_t>(builder->builder.size());
}

const char* chash_builder_error(const chash_builder* builder) noexcept {
  return builder == nullptr ? "" : builder->error.c_str();
}

int chash_builder_build(chash_builder* builder, chash_ring** out) noexcept {
  if (out != nullptr) *out = nullptr;
  if (builder == nullptr) return NullArgument("chash_builder_build", "builder");
  const std::unique_ptr<chash_builder> owned(builder);  // consumed on every path
  if (out == nullptr) return NullArgument("chash_builder_build", "out");
  return Guard([&] { return NewRing(std::move(owned->builder).Build(), out); });
}

void chash_builder_free(chash_builder* builder) noexcept { delete builder; }

int chash_ring_from_points(uint32_t num_nodes, const chash_raw_point* points, size_t num_points,
                           const uint32_t* tie_rank, uint64_t max_points,
                           chash_ring** out) noexcept {
  if (out == nullptr) return NullArgument("chash_ring_from_points", "out");
  *out = nullptr;
  if (points == nullptr && num_points != 0) return NullArgument("chash_ring_from_points", "points");
  static_assert(sizeof(chash_raw_point) == sizeof(chash::RawPoint));
  static_assert(offsetof(chash_raw_point, hash) == offsetof(chash::RawPoint, hash));
  static_assert(offsetof(chash_raw_point, node) == offsetof(chash::RawPoint, node));
  return Guard([&] {
    // Same layout (checked above); the C++ side only reads the fields.
    const auto* raw = reinterpret_cast<const chash::RawPoint*>(points);
    std::span<const uint32_t> ranks;
    if (tie_rank != nullptr) ranks = {tie_rank, num_nodes};
    return NewRing(
        chash::BuildRingFromPoints(num_nodes, {raw, num_points}, ranks,
                                   max_points == 0 ? chash::kDefaultMaxPoints : max_points),
        out);
  });
}

void chash_ring_free(chash_ring* ring) noexcept { Release(ring); }

// ---- Lookups ------------------------------------------------------------------------

uint32_t chash_ring_find(const chash_ring* ring, const void* key, size_t key_len) noexcept {
  if (ring == nullptr || (key == nullptr && key_len != 0)) return CHASH_NO_NODE;
  return ring->ring.FindNode(View(key, key_len));
}

uint32_t chash_ring_find_hash(const chash_ring* ring, uint32_t hash) noexcept {
  if (ring == nullptr) return CHASH_NO_NODE;
  return ring->ring.FindNodeByHash(hash);
}

uint64_t chash_ring_key_hash(const chash_ring* ring, const void* key, size_t key_len) noexcept {
  if (ring == nullptr || (key == nullptr && key_len != 0)) return 0;
  return ring->ring.KeyHash(View(key, key_len));
}

uint32_t chash_ring_key_hash_bits(const chash_ring* ring) noexcept {
  return ring == nullptr ? 0 : ring->ring.key_hash_bits();
}

uint32_t chash_ring_find_hash64(const chash_ring* ring, uint64_t hash) noexcept {
  if (ring == nullptr) return CHASH_NO_NODE;
  return ring->ring.FindNodeByHash64(hash);
}

uint32_t chash_ring_find_attempt(const chash_ring* ring, uint64_t hash, uint32_t attempt) noexcept {
  if (ring == nullptr) return CHASH_NO_NODE;
  return ring->ring.FindNodeForAttempt(hash, attempt);
}

int chash_ring_find_hashes(const chash_ring* ring, const uint32_t* hashes, size_t n,
                           uint32_t* out) noexcept {
  if (ring == nullptr) return NullArgument("chash_ring_find_hashes", "ring");
  if (n == 0) return CHASH_OK;
  if (hashes == nullptr) return NullArgument("chash_ring_find_hashes", "hashes");
  if (out == nullptr) return NullArgument("chash_ring_find_hashes", "out");
  ring->ring.FindNodesByHash({hashes, n}, {out, n});
  return CHASH_OK;
}

int chash_ring_find_keys(const chash_ring* ring, const char* const* keys, const size_t* key_lens,
                         size_t n, uint32_t* out) noexcept {
  if (ring == nullptr) return NullArgument("chash_ring_find_keys", "ring");
  return FindKeysChunked("chash_ring_find_keys", keys, key_lens, n, out,
                         [&](std::span<const std::string_view> views, std::span<uint32_t> nodes) {
                           ring->ring.FindNodes(views, nodes);
                         });
}

// ---- Walks ----------------------------------------------------------------------------

uint32_t chash_ring_find_position(const chash_ring* ring, uint32_t hash) noexcept {
  if (ring == nullptr || ring->ring.empty()) return CHASH_NO_POSITION;
  return ring->ring.WalkFromHash(hash).position();
}

uint32_t chash_ring_point_at(const chash_ring* ring, uint32_t position, uint32_t* hash) noexcept {
  if (hash != nullptr) *hash = 0;
  if (ring == nullptr) return CHASH_NO_NODE;
  const chash::PointCursor point = ring->ring.At(position);
  if (point.empty()) return CHASH_NO_NODE;
  if (hash != nullptr) *hash = point.hash();
  return point.node();
}

int chash_ring_collision_losers(const chash_ring* ring, const uint32_t** hashes,
                                const uint16_t** nodes, uint64_t* count) noexcept {
  if (hashes != nullptr) *hashes = nullptr;
  if (nodes != nullptr) *nodes = nullptr;
  if (count != nullptr) *count = 0;
  if (ring == nullptr) return NullArgument("chash_ring_collision_losers", "ring");
  if (hashes == nullptr) return NullArgument("chash_ring_collision_losers", "hashes");
  if (nodes == nullptr) return NullArgument("chash_ring_collision_losers", "nodes");
  if (count == nullptr) return NullArgument("chash_ring_collision_losers", "count");
  const chash::CollisionLosers losers = ring->ring.collision_losers();
  *hashes = losers.hashes.data();
  *nodes = losers.nodes.data();
  *count = losers.hashes.size();
  return CHASH_OK;
}

// The walks start from a 32-bit hash: Envoy's rings (64-bit points, Maglev's
// table) have none to start from, and retry by attempt instead.
extern "C++" {
namespace {
int RefuseWideRing(const chash_ring* ring, const char* function) noexcept {
  const std::string_view flavor = chash::FlavorName(ring->ring.flavor());
  char message[200];
  std::snprintf(message, sizeof(message),
                "%s: a %.*s ring hashes keys to 64 bits and retries by attempt, not by a walk "
                "(chash_ring_find_attempt)",
                function, static_cast<int>(flavor.size()), flavor.data());
  return Fail(CHASH_E_BAD_ARGUMENT, message);
}
}  // namespace
}  // extern "C++"

int chash_ring_walk(const chash_ring* ring, uint32_t hash, chash_cursor* cursor) noexcept {
  if (cursor == nullptr) return NullArgument("chash_ring_walk", "cursor");
  const bool walks = ring != nullptr && ring->ring.key_hash_bits() == 32;
  const chash::PointCursor walk = walks ? ring->ring.WalkFromHash(hash) : chash::PointCursor();
  *cursor = chash_cursor{};
  std::memcpy(cursor->opaque, &walk, sizeof(walk));
  if (ring == nullptr) return NullArgument("chash_ring_walk", "ring");
  if (!walks) return RefuseWideRing(ring, "chash_ring_walk");
  return CHASH_OK;
}

// C++ linkage: it returns a C++ type from inside the extern "C" block.
extern "C++" {
namespace {
chash::PointCursor LoadCursor(const chash_cursor* cursor) noexcept {
  chash::PointCursor walk;
  std::memcpy(&walk, cursor->opaque, sizeof(walk));
  return walk;
}
}  // namespace
}  // extern "C++"

uint32_t chash_cursor_next(chash_cursor* cursor) noexcept {
  if (cursor == nullptr) return CHASH_NO_NODE;
  chash::PointCursor walk = LoadCursor(cursor);
  const uint32_t node = walk.Next();
  std::memcpy(cursor->opaque, &walk, sizeof(walk));
  return node;
}

uint32_t chash_cursor_node(const chash_cursor* cursor) noexcept {
  if (cursor == nullptr) return CHASH_NO_NODE;
  const chash::PointCursor walk = LoadCursor(cursor);
  return walk.empty() ? CHASH_NO_NODE : walk.node();
}

uint32_t chash_cursor_hash(const chash_cursor* cursor) noexcept {
  if (cursor == nullptr) return 0;
  const chash::PointCursor walk = LoadCursor(cursor);
  return walk.empty() ? 0 : walk.hash();
}

size_t chash_walk_size(const chash_ring* ring) noexcept {
  const size_t words = ring == nullptr ? 0 : chash::NodeWalk::SeenWords(ring->ring);
  return kWalkHeaderBytes + sizeof(uint64_t) * words;
}

int chash_walk_start(void* memory, size_t bytes, const chash_ring* ring,
                     const chash_node_mask* mask, uint32_t hash, chash_walk** out) noexcept {
  if (out == nullptr) return NullArgument("chash_walk_start", "out");
  *out = nullptr;
  if (memory == nullptr) return NullArgument("chash_walk_start", "memory");
  if (ring == nullptr) return NullArgument("chash_walk_start", "ring");
  if (reinterpret_cast<uintptr_t>(memory) % alignof(uint64_t) != 0) {
    return Fail(CHASH_E_BAD_ARGUMENT, "chash_walk_start: memory is not 8-byte aligned");
  }
  if (ring->ring.key_hash_bits() != 32) return RefuseWideRing(ring, "chash_walk_start");
  const size_t needed = chash_walk_size(ring);
  if (bytes < needed) {
    char message[160];
    std::snprintf(message, sizeof(message),
                  "chash_walk_start: %zu bytes; a walk of this ring needs %zu (chash_walk_size)",
                  bytes, needed);
    return Fail(CHASH_E_BAD_ARGUMENT, message);
  }
  auto* seen = reinterpret_cast<uint64_t*>(static_cast<unsigned char*>(memory) + kWalkHeaderBytes);
  const std::span<uint64_t> words(seen, chash::NodeWalk::SeenWords(ring->ring));
  auto* walk = ::new (memory)
      chash::NodeWalk(ring->ring, mask == nullptr ? nullptr : &mask->mask, hash, words);
  *out = reinterpret_cast<chash_walk*>(walk);
  return CHASH_OK;
}

uint32_t chash_walk_next(chash_walk* walk) noexcept {
  if (walk == nullptr) return CHASH_NO_NODE;
  return std::launder(reinterpret_cast<chash::NodeWalk*>(walk))->Next();
}

// ---- Shape ------------------------------------------------------------------------------

uint32_t chash_ring_num_nodes(const chash_ring* ring) noexcept {
  return ring == nullptr ? 0 : ring->ring.num_nodes();
}

uint64_t chash_ring_num_points(const chash_ring* ring) noexcept {
  return ring == nullptr ? 0 : ring->ring.num_points();
}

uint64_t chash_ring_points_generated(const chash_ring* ring) noexcept {
  return ring == nullptr ? 0 : ring->ring.points_generated();
}

uint32_t chash_ring_nodes_with_points(const chash_ring* ring) noexcept {
  return ring == nullptr ? 0 : ring->ring.nodes_with_points();
}

int chash_ring_owns_points(const chash_ring* ring, uint32_t node) noexcept {
  return ring != nullptr && ring->ring.owns_points(node) ? 1 : 0;
}

uint32_t chash_ring_flavor(const chash_ring* ring) noexcept {
  if (ring == nullptr || ring->ring.is_raw()) return CHASH_NO_FLAVOR;
  return static_cast<uint32_t>(ring->ring.flavor());
}

uint32_t chash_ring_point_multiple(const chash_ring* ring) noexcept {
  return ring == nullptr ? 0 : ring->ring.point_multiple();
}

const char* chash_ring_node_address(const chash_ring* ring, uint32_t node, size_t* len) noexcept {
  if (len != nullptr) *len = 0;
  if (ring == nullptr || node >= ring->ring.num_nodes()) return nullptr;
  const std::string& written = ring->ring.node(node).address.written;
  if (len != nullptr) *len = written.size();
  return written.c_str();
}

uint32_t chash_ring_node_weight(const chash_ring* ring, uint32_t node) noexcept {
  if (ring == nullptr || node >= ring->ring.num_nodes()) return 0;
  return ring->ring.node(node).weight;
}

// ---- Node masks ---------------------------------------------------------------------------

int chash_node_mask_new(uint32_t num_nodes, int available, chash_node_mask** out) noexcept {
  if (out == nullptr) return NullArgument("chash_node_mask_new", "out");
  *out = nullptr;
  if (num_nodes > chash::kMaxNodes) {
    char message[96];
    std::snprintf(message, sizeof(message), "a node mask covers at most 65,536 nodes, not %u",
                  num_nodes);
    return Fail(CHASH_E_TOO_MANY_NODES, message);
  }
  return Guard([&] {
    *out = new chash_node_mask{chash::NodeMask(num_nodes, available != 0)};
    return CHASH_OK;
  });
}

int chash_node_mask_set(chash_node_mask* mask, uint32_t node, int available) noexcept {
  if (mask == nullptr) return NullArgument("chash_node_mask_set", "mask");
  if (!mask->mask.Set(node, available != 0)) {
    char message[96];
    std::snprintf(message, sizeof(message), "node %u is past the mask's %u nodes", node,
                  mask->mask.size());
    return Fail(CHASH_E_BAD_NODE_ID, message);
  }
  return CHASH_OK;
}

int chash_node_mask_get(const chash_node_mask* mask, uint32_t node) noexcept {
  return mask != nullptr && mask->mask.available(node) ? 1 : 0;
}

uint32_t chash_node_mask_size(const chash_node_mask* mask) noexcept {
  return mask == nullptr ? 0 : mask->mask.size();
}

uint32_t chash_node_mask_count_available(const chash_node_mask* mask) noexcept {
  return mask == nullptr ? 0 : mask->mask.count_available();
}

void chash_node_mask_free(chash_node_mask* mask) noexcept { delete mask; }

int chash_ring_masks_exactly(const chash_ring* ring) noexcept {
  return ring != nullptr && chash::MasksExactly(ring->ring) ? 1 : 0;
}

static_assert(CHASH_MASK_REFUSED == chash::kMaskRefused);

uint32_t chash_ring_find_available(const chash_ring* ring, const chash_node_mask* mask,
                                   const void* key, size_t key_len) noexcept {
  if (ring == nullptr || mask == nullptr || (key == nullptr && key_len != 0)) return CHASH_NO_NODE;
  return chash::FindAvailableNode(ring->ring, mask->mask, View(key, key_len));
}

uint32_t chash_ring_find_available_hash(const chash_ring* ring, const chash_node_mask* mask,
                                        uint32_t hash) noexcept {
  if (ring == nullptr || mask == nullptr) return CHASH_NO_NODE;
  return chash::FindAvailableNodeByHash(ring->ring, mask->mask, hash);
}

int chash_ring_find_available_hashes(const chash_ring* ring, const chash_node_mask* mask,
                                     const uint32_t* hashes, size_t n, uint32_t* out) noexcept {
  constexpr const char* kName = "chash_ring_find_available_hashes";
  if (ring == nullptr) return NullArgument(kName, "ring");
  if (mask == nullptr) return NullArgument(kName, "mask");
  if (n == 0) return CHASH_OK;
  if (hashes == nullptr) return NullArgument(kName, "hashes");
  if (out == nullptr) return NullArgument(kName, "out");
  chash::FindAvailableNodesByHash(ring->ring, mask->mask, {hashes, n}, {out, n});
  return CHASH_OK;
}

int chash_ring_find_available_keys(const chash_ring* ring, const chash_node_mask* mask,
                                   const char* const* keys, const size_t* key_lens, size_t n,
                                   uint32_t* out) noexcept {
  constexpr const char* kName = "chash_ring_find_available_keys";
  if (ring == nullptr) return NullArgument(kName, "ring");
  if (mask == nullptr) return NullArgument(kName, "mask");
  return FindKeysChunked(kName, keys, key_lens, n, out,
                         [&](std::span<const std::string_view> views, std::span<uint32_t> nodes) {
                           chash::FindAvailableNodes(ring->ring, mask->mask, views, nodes);
                         });
}

// ---- Availability ----------------------------------------------------------------------------

int chash_availability_new(uint32_t num_nodes, chash_availability** out) noexcept {
  if (out == nullptr) return NullArgument("chash_availability_new", "out");
  *out = nullptr;
  if (num_nodes > chash::kMaxNodes) {
    char message[96];
    std::snprintf(message, sizeof(message),
                  "an availability mask covers at most 65,536 nodes, not %u", num_nodes);
    return Fail(CHASH_E_TOO_MANY_NODES, message);
  }
  return Guard([&] {
    *out = new chash_availability(num_nodes);
    return CHASH_OK;
  });
}

int chash_availability_publish(chash_availability* availability,
                               const chash_node_mask* mask) noexcept {
  if (availability == nullptr) return NullArgument("chash_availability_publish", "availability");
  if (mask == nullptr) return NullArgument("chash_availability_publish", "mask");
  return Guard([&] { return Fail(availability->mask.Publish(mask->mask)); });
}

uint64_t chash_availability_version(const chash_availability* availability) noexcept {
  return availability == nullptr ? 0 : availability->mask.version();
}

int chash_availability_snapshot(const chash_availability* availability, chash_node_mask** out,
                                uint64_t* version) noexcept {
  if (out != nullptr) *out = nullptr;
  if (availability == nullptr) return NullArgument("chash_availability_snapshot", "availability");
  if (out == nullptr) return NullArgument("chash_availability_snapshot", "out");
  return Guard([&] {
    uint64_t snapshot_version = 0;
    auto mask = std::make_unique<chash_node_mask>(
        chash_node_mask{availability->mask.Snapshot(&snapshot_version)});
    if (version != nullptr) *version = snapshot_version;
    *out = mask.release();
    return CHASH_OK;
  });
}

uint32_t chash_availability_find(const chash_availability* availability, const chash_ring* ring,
                                 const void* key, size_t key_len) noexcept {
  if (availability == nullptr || ring == nullptr || (key == nullptr && key_len != 0)) {
    return CHASH_NO_NODE;
  }
  return availability->mask.FindNode(ring->ring, View(key, key_len));
}

uint32_t chash_availability_find_hash(const chash_availability* availability,
                                      const chash_ring* ring, uint32_t hash) noexcept {
  if (availability == nullptr || ring == nullptr) return CHASH_NO_NODE;
  return availability->mask.FindNodeByHash(ring->ring, hash);
}

int chash_availability_find_keys(const chash_availability* availability, const chash_ring* ring,
                                 const char* const* keys, const size_t* key_lens, size_t n,
                                 uint32_t* out) noexcept {
  constexpr const char* kName = "chash_availability_find_keys";
  if (availability == nullptr) return NullArgument(kName, "availability");
  if (ring == nullptr) return NullArgument(kName, "ring");
  return FindKeysChunked(kName, keys, key_lens, n, out,
                         [&](std::span<const std::string_view> views, std::span<uint32_t> nodes) {
                           availability->mask.FindNodes(ring->ring, views, nodes);
                         });
}

void chash_availability_free(chash_availability* availability) noexcept { delete availability; }

// ---- Bounded loads -----------------------------------------------------------------------------

uint64_t chash_bounded_load_capacity(uint64_t total_load, uint32_t nodes,
                                     double balance_factor) noexcept {
  return chash::BoundedLoadCapacity(total_load, nodes, balance_factor);
}

uint32_t chash_ring_find_under_capacity(const chash_ring* ring, uint32_t hash,
                                        const uint64_t* loads, size_t num_loads, uint64_t capacity,
                                        const chash_node_mask* mask) noexcept {
  if (ring == nullptr || (loads == nullptr && num_loads != 0)) return CHASH_NO_NODE;
  return chash::FindNodeUnderCapacity(ring->ring, hash, std::span<const uint64_t>(loads, num_loads),
                                      capacity, MaskOf(mask));
}

int chash_ring_find_bounded_load(const chash_ring* ring, uint32_t hash, const uint64_t* loads,
                                 size_t num_loads, double balance_factor,
                                 const chash_node_mask* mask, uint32_t* node) noexcept {
  constexpr const char* kName = "chash_ring_find_bounded_load";
  if (node != nullptr) *node = CHASH_NO_NODE;
  if (ring == nullptr) return NullArgument(kName, "ring");
  if (node == nullptr) return NullArgument(kName, "node");
  if (loads == nullptr && num_loads != 0) return NullArgument(kName, "loads");
  return Guard([&] {
    chash::Result<uint32_t> found =
        chash::FindNodeBoundedLoad(ring->ring, hash, std::span<const uint64_t>(loads, num_loads),
                                   balance_factor, MaskOf(mask));
    if (!found.ok()) return Fail(found.status());
    *node = found.value();
    return CHASH_OK;
  });
}

// ---- Migration ---------------------------------------------------------------------------------

int chash_migration_new(const chash_ring* old_ring, const chash_ring* new_ring, uint64_t seed,
                        int allow_backend_mismatch, chash_migration** out) noexcept {
  constexpr const char* kName = "chash_migration_new";
  if (out == nullptr) return NullArgument(kName, "out");
  *out = nullptr;
  if (old_ring == nullptr) return NullArgument(kName, "old_ring");
  if (new_ring == nullptr) return NullArgument(kName, "new_ring");
  return Guard([&] {
    auto migration = std::make_unique<chash_migration>();
    auto created = chash::RingMigration::Create(
        Share(old_ring), Share(new_ring),
        {.seed = seed, .allow_backend_mismatch = allow_backend_mismatch != 0});
    if (!created.ok()) return Fail(created.status());
    migration->migration = std::move(created).value();
    // The handles chash_migration_ring returns: one more reference each.
    for (const chash_ring* ring : {old_ring, new_ring}) {
      const_cast<chash_ring*>(ring)->references.fetch_add(1, std::memory_order_relaxed);
    }
    migration->rings[0] = const_cast<chash_ring*>(old_ring);
    migration->rings[1] = const_cast<chash_ring*>(new_ring);
    *out = migration.release();
    return CHASH_OK;
  });
}

int chash_migration_set_rollout(chash_migration* migration, double fraction) noexcept {
  if (migration == nullptr) return NullArgument("chash_migration_set_rollout", "migration");
  return Guard([&] { return Fail(migration->migration->SetRollout(fraction)); });
}

int chash_migration_set_rollout_ppm(chash_migration* migration, uint32_t ppm) noexcept {
  if (migration == nullptr) return NullArgument("chash_migration_set_rollout_ppm", "migration");
  if (ppm > chash::kRolloutScale) {
    char message[96];
    std::snprintf(message, sizeof(message), "rollout %u ppm is over 1,000,000 (100%%)", ppm);
    return Fail(CHASH_E_BAD_ARGUMENT, message);
  }
  migration->migration->SetRolloutPpm(ppm);
  return CHASH_OK;
}

int chash_migration_set_in_scope(chash_migration* migration, int in_scope) noexcept {
  if (migration == nullptr) return NullArgument("chash_migration_set_in_scope", "migration");
  migration->migration->SetInScope(in_scope != 0);
  return CHASH_OK;
}

uint32_t chash_migration_rollout_ppm(const chash_migration* migration) noexcept {
  return migration == nullptr ? 0 : migration->migration->rollout_ppm();
}

int chash_migration_in_scope(const chash_migration* migration) noexcept {
  return migration != nullptr && migration->migration->in_scope() ? 1 : 0;
}

uint32_t chash_migration_find(const chash_migration* migration, const void* key, size_t key_len,
                              uint32_t* side) noexcept {
  if (side != nullptr) *side = CHASH_SIDE_OLD;
  if (migration == nullptr || (key == nullptr && key_len != 0)) return CHASH_NO_NODE;
  const chash::MigrationAnswer answer = migration->migration->Find(View(key, key_len));
  if (side != nullptr) *side = static_cast<uint32_t>(answer.side);
  return answer.node;
}

int chash_migration_find_keys(const chash_migration* migration, const char* const* keys,
                              const size_t* key_lens, size_t n, uint32_t* nodes,
                              uint8_t* sides) noexcept {
  constexpr const char* kName = "chash_migration_find_keys";
  if (migration == nullptr) return NullArgument(kName, "migration");
  chash::RingSide side_chunk[kChunk];
  size_t done = 0;
  return FindKeysChunked(kName, keys, key_lens, n, nodes,
                         [&](std::span<const std::string_view> views, std::span<uint32_t> out) {
                           migration->migration->FindNodes(views, out,
                                                           std::span(side_chunk, views.size()));
                           if (sides != nullptr) {
                             for (size_t i = 0; i < views.size(); ++i) {
                               sides[done + i] = static_cast<uint8_t>(side_chunk[i]);
                             }
                           }
                           done += views.size();
                         });
}

int chash_migration_counters(const chash_migration* migration, uint64_t* old_ring,
                             uint64_t* new_ring) noexcept {
  if (migration == nullptr) return NullArgument("chash_migration_counters", "migration");
  const chash::RingMigration::Counters counters = migration->migration->counters();
  if (old_ring != nullptr) *old_ring = counters.old_ring;
  if (new_ring != nullptr) *new_ring = counters.new_ring;
  return CHASH_OK;
}

const chash_ring* chash_migration_ring(const chash_migration* migration, uint32_t side) noexcept {
  if (migration == nullptr) return nullptr;
  if (side == CHASH_SIDE_OLD) return migration->rings[0];
  if (side == CHASH_SIDE_NEW) return migration->rings[1];
  return nullptr;
}

int chash_migration_backends_match(const chash_migration* migration) noexcept {
  return migration != nullptr && migration->migration->backends_match() ? 1 : 0;
}

void chash_migration_free(chash_migration* migration) noexcept {
  if (migration == nullptr) return;
  chash_ring* rings[2] = {migration->rings[0], migration->rings[1]};
  delete migration;  // drops the migration's shared_ptr references
  Release(rings[0]);
  Release(rings[1]);
}

uint64_t chash_migration_key_hash(const void* key, size_t key_len, uint64_t seed) noexcept {
  if (key == nullptr) key_len = 0;
  return chash::MigrationKeyHash(View(key, key_len), seed);
}

uint32_t chash_migration_bucket(uint64_t key_hash) noexcept {
  return chash::MigrationBucket(key_hash);
}

// ---- Statistics and identity
// ---------------------------------------------------------------------

int chash_ring_memory_usage(const chash_ring* ring, chash_memory_usage* out) noexcept {
  if (ring == nullptr) return NullArgument("chash_ring_memory_usage", "ring");
  if (out == nullptr) return NullArgument("chash_ring_memory_usage", "out");
  const chash::MemoryUsage usage = ring->ring.memory_usage();
  chash_memory_usage value{};
  value.size = sizeof value;
  value.column_bytes = usage.column_bytes;
  value.other_bytes = usage.other_bytes;
  value.index_bytes = usage.index_bytes;
  value.collision_table_bytes = usage.collision_table_bytes;
  return WriteGrowingStruct("chash_ring_memory_usage", out, value);
}

int chash_ring_stats_compute(const chash_ring* ring, chash_ring_stats* out) noexcept {
  if (ring == nullptr) return NullArgument("chash_ring_stats_compute", "ring");
  if (out == nullptr) return NullArgument("chash_ring_stats_compute", "out");
  if (out->size < kMinStructSize) return WriteGrowingStruct("chash_ring_stats_compute", out, {});
  return Guard([&] {
    const chash::RingStats stats = chash::ComputeRingStats(ring->ring);
    chash_ring_stats value{};
    value.size = sizeof value;
    value.nodes = stats.nodes;
    value.nodes_with_points = ring->ring.nodes_with_points();
    value.points_generated = stats.points_generated;
    value.points = stats.points;
    value.collisions = stats.collisions;
    value.column_bytes = stats.column_bytes;
    value.other_bytes = stats.other_bytes;
    value.index_bytes = stats.index_bytes;
    value.collision_table_bytes = stats.collision_table_bytes;
    value.bytes_per_point = stats.bytes_per_point;
    value.cv_predicted = stats.cv_predicted;
    value.cv_measured = stats.cv_measured;
    value.max_share_ratio = stats.max_share_ratio;
    value.min_share_ratio = stats.min_share_ratio;
    return WriteGrowingStruct("chash_ring_stats_compute", out, value);
  });
}

int chash_ring_fingerprint(const chash_ring* ring, uint8_t* out) noexcept {
  return WriteFingerprint("chash_ring_fingerprint", ring, out,
                          [](const Ring& r) { return chash::RingFingerprint(r); });
}

int chash_ring_points_digest(const chash_ring* ring, uint8_t* out) noexcept {
  return WriteFingerprint("chash_ring_points_digest", ring, out,
                          [](const Ring& r) { return chash::PointsDigest(r); });
}

int chash_ring_backend_fingerprint(const chash_ring* ring, uint8_t* out) noexcept {
  return WriteFingerprint("chash_ring_backend_fingerprint", ring, out,
                          [](const Ring& r) { return chash::BackendFingerprint(r); });
}

int chash_fingerprint_hex(const uint8_t* fingerprint, char* out) noexcept {
  if (fingerprint == nullptr) return NullArgument("chash_fingerprint_hex", "fingerprint");
  if (out == nullptr) return NullArgument("chash_fingerprint_hex", "out");
  sodium_bin2hex(out, 2 * CHASH_FINGERPRINT_SIZE + 1, fingerprint, CHASH_FINGERPRINT_SIZE);
  return CHASH_OK;
}

}  // extern "C"

// ---- Snapshots ------------------------------------------------------------------

namespace {

constexpr uint32_t kKnownLoadFlags = CHASH_LOAD_SKIP_CHECKSUM | CHASH_LOAD_VERIFY_POINTS_DIGEST;

int SnapshotOptionsFrom(const char* function, const chash_snapshot_options* given,
                        chash::SnapshotLoadOptions* load) {
  chash_snapshot_options options;
  if (const int code = ReadGrowingStruct(function, "options", given, options)) return code;
  if (options.mode > CHASH_LOAD_COPY) {
    return Fail(CHASH_E_BAD_ARGUMENT, std::string(function) + ": options->mode " +
                                          std::to_string(options.mode) +
                                          " is none of CHASH_LOAD_SEALED, _MAP, _COPY");
  }
  if ((options.flags & ~kKnownLoadFlags) != 0) {
    return Fail(CHASH_E_BAD_ARGUMENT,
                std::string(function) + ": options->flags " + std::to_string(options.flags) +
                    " holds flags this library does not know");
  }
  load->mode = static_cast<chash::SnapshotLoadMode>(options.mode);
  load->verify_checksum = (options.flags & CHASH_LOAD_SKIP_CHECKSUM) == 0;
  load->verify_points_digest = (options.flags & CHASH_LOAD_VERIFY_POINTS_DIGEST) != 0;
  load->threads = options.threads;
  load->min_config_version = options.min_config_version;
  load->max_file_bytes = options.max_file_bytes;
  if (options.n_trusted_keys > 0 && options.trusted_keys == nullptr) {
    return NullArgument(function, "options->trusted_keys");
  }
  load->trusted_keys.resize(options.n_trusted_keys);
  for (size_t i = 0; i < options.n_trusted_keys; ++i) {
    std::memcpy(load->trusted_keys[i].bytes.data(),
                options.trusted_keys + i * CHASH_PUBLIC_KEY_SIZE, CHASH_PUBLIC_KEY_SIZE);
  }
  return CHASH_OK;
}

int NewSnapshot(chash::Result<std::shared_ptr<const chash::RingSnapshot>> loaded,
                chash_snapshot** out) {
  if (!loaded.ok()) return Fail(loaded.status());
  *out = new chash_snapshot{std::move(loaded).value()};
  return CHASH_OK;
}

}  // namespace

extern "C" {

int chash_snapshot_load(const char* path, const chash_snapshot_options* options,
                        chash_snapshot** out) noexcept {
  if (out == nullptr) return NullArgument("chash_snapshot_load", "out");
  *out = nullptr;
  if (path == nullptr) return NullArgument("chash_snapshot_load", "path");
  return Guard([&] {
    chash::SnapshotLoadOptions load;
    if (const int code = SnapshotOptionsFrom("chash_snapshot_load", options, &load)) return code;
    return NewSnapshot(chash::LoadSnapshot(path, load), out);
  });
}

int chash_snapshot_load_bytes(const void* bytes, size_t n, const chash_snapshot_options* options,
                              chash_snapshot** out) noexcept {
  if (out == nullptr) return NullArgument("chash_snapshot_load_bytes", "out");
  *out = nullptr;
  if (bytes == nullptr && n > 0) return NullArgument("chash_snapshot_load_bytes", "bytes");
  return Guard([&] {
    chash::SnapshotLoadOptions load;
    if (const int code = SnapshotOptionsFrom("chash_snapshot_load_bytes", options, &load)) {
      return code;
    }
    return NewSnapshot(chash::LoadSnapshotFromBytes(View(bytes, n), load), out);
  });
}

int chash_snapshot_verify(const char* path, const chash_snapshot_options* options) noexcept {
  chash_snapshot* snapshot = nullptr;
  const int code = chash_snapshot_load(path, options, &snapshot);
  chash_snapshot_free(snapshot);
  return code;
}

void chash_snapshot_free(chash_snapshot* snapshot) noexcept { delete snapshot; }

int chash_snapshot_ring(const chash_snapshot* snapshot, chash_ring** out) noexcept {
  if (out == nullptr) return NullArgument("chash_snapshot_ring", "out");
  *out = nullptr;
  if (snapshot == nullptr) return NullArgument("chash_snapshot_ring", "snapshot");
  return Guard([&] {
    *out = new chash_ring(chash::RingOf(snapshot->snapshot));
    return CHASH_OK;
  });
}

int chash_snapshot_get_info(const chash_snapshot* snapshot, chash_snapshot_info* out) noexcept {
  if (snapshot == nullptr) return NullArgument("chash_snapshot_get_info", "snapshot");
  if (out == nullptr) return NullArgument("chash_snapshot_get_info", "out");
  const chash::SnapshotInfo& info = snapshot->snapshot->info();
  chash_snapshot_info value{};
  value.size = sizeof value;
  value.major_version = info.major_version;
  value.minor_version = info.minor_version;
  value.file_bytes = info.file_bytes;
  value.config_version = info.config_version;
  value.created_unix_seconds = info.created_unix_seconds;
  value.expires_unix_seconds = info.expires_unix_seconds;
  value.flavor = static_cast<uint32_t>(info.flavor);
  value.point_multiple = info.point_multiple;
  value.nodes = info.nodes;
  value.subsets = static_cast<uint32_t>(snapshot->snapshot->subsets().size());
  value.points = info.points;
  value.points_generated = info.points_generated;
  value.is_signed = info.is_signed ? 1 : 0;
  value.mode = static_cast<uint32_t>(snapshot->snapshot->mode());
  std::memcpy(value.key_id, info.key_id.data(), CHASH_KEY_ID_SIZE);
  std::memcpy(value.fingerprint, info.fingerprint.bytes.data(), CHASH_FINGERPRINT_SIZE);
  return WriteGrowingStruct("chash_snapshot_get_info", out, value);
}

const char* chash_snapshot_label(const chash_snapshot* snapshot) noexcept {
  return snapshot == nullptr ? nullptr : snapshot->snapshot->info().label.c_str();
}

const char* chash_snapshot_subset_name(const chash_snapshot* snapshot, uint32_t i) noexcept {
  if (snapshot == nullptr || i >= snapshot->snapshot->subsets().size()) return nullptr;
  return snapshot->snapshot->subsets()[i].name.c_str();
}

int chash_snapshot_subset(const chash_snapshot* snapshot, const char* name,
                          chash_node_mask** out) noexcept {
  if (out == nullptr) return NullArgument("chash_snapshot_subset", "out");
  *out = nullptr;
  if (snapshot == nullptr) return NullArgument("chash_snapshot_subset", "snapshot");
  if (name == nullptr) return NullArgument("chash_snapshot_subset", "name");
  return Guard([&] {
    const chash::NodeMask* found = snapshot->snapshot->FindSubset(name);
    if (found == nullptr) {
      std::string names;
      for (const chash::NamedSubset& subset : snapshot->snapshot->subsets()) {
        names += (names.empty() ? "" : ", ") + subset.name;
      }
      return Fail(CHASH_E_BAD_ARGUMENT,
                  std::string("no subset '") + name + "' in the snapshot" +
                      (names.empty() ? " (it has none)" : " (it has: " + names + ")"));
    }
    auto mask = std::make_unique<chash_node_mask>(chash_node_mask{*found});
    // NodeMask's copy reports running out of memory as an empty mask.
    if (mask->mask.size() != found->size()) throw std::bad_alloc();
    *out = mask.release();
    return CHASH_OK;
  });
}

int chash_public_key_read(const char* path, uint8_t* out) noexcept {
  if (path == nullptr) return NullArgument("chash_public_key_read", "path");
  if (out == nullptr) return NullArgument("chash_public_key_read", "out");
  return Guard([&] {
    chash::Result<chash::PublicKey> key = chash::ReadPublicKeyFile(path);
    if (!key.ok()) return Fail(key.status());
    std::memcpy(out, key.value().bytes.data(), CHASH_PUBLIC_KEY_SIZE);
    return CHASH_OK;
  });
}

// ---- Reloading ----------------------------------------------------------------------

}  // extern "C"

namespace {

constexpr uint32_t kKnownReloadFlags =
    CHASH_RELOAD_NO_SHARE | CHASH_RELOAD_NO_LAST_GOOD | CHASH_RELOAD_NO_WRITE | CHASH_RELOAD_DEFER;

// A candidate as the C struct says it; the snapshot as a new handle.
int WriteResult(const char* function, const chash::ReloadCandidate& candidate,
                chash_reload_result* out) {
  chash_reload_result value{};
  value.size = sizeof value;
  value.outcome = static_cast<uint32_t>(candidate.outcome);
  value.check = static_cast<uint32_t>(candidate.check);
  value.adopted = candidate.adopted ? 1 : 0;
  value.error = candidate.status.ok() ? CHASH_OK : CodeOf(candidate.status.code());
  value.token = candidate.token;
  if (candidate.snapshot) {
    value.config_version = candidate.snapshot->info().config_version;
    value.snapshot = new chash_snapshot{candidate.snapshot};
  }
  CopyMessage(value.message, candidate.status.message());
  const int code = WriteGrowingStruct(function, out, value);
  if (code != CHASH_OK) delete value.snapshot;
  return code;
}

int ResultSizeOk(const char* function, const chash_reload_result* out) {
  if (out->size < offsetof(chash_reload_result, snapshot) + sizeof(chash_snapshot*)) {
    return Fail(CHASH_E_BAD_ARGUMENT,
                std::string(function) + ": out->size must cover the snapshot field (set it to "
                                        "sizeof(chash_reload_result))");
  }
  return CHASH_OK;
}

}  // namespace

extern "C" {

int chash_reloader_new(const char* path, const chash_reloader_options* options,
                       chash_reloader** out) noexcept {
  constexpr const char* kName = "chash_reloader_new";
  if (out == nullptr) return NullArgument(kName, "out");
  *out = nullptr;
  if (path == nullptr) return NullArgument(kName, "path");
  return Guard([&] {
    chash_reloader_options given;
    if (const int code = ReadGrowingStruct(kName, "options", options, given)) return code;
    if ((given.flags & ~kKnownReloadFlags) != 0) {
      return Fail(CHASH_E_BAD_ARGUMENT, std::string(kName) + ": options->flags " +
                                            std::to_string(given.flags) +
                                            " holds flags this library does not know");
    }
    chash::ReloadOptions reload;
    if (const int code = SnapshotOptionsFrom(kName, given.load, &reload.load)) return code;
    if (given.state_dir != nullptr) reload.state_dir = given.state_dir;
    if (given.name != nullptr) reload.name = given.name;
    reload.share = (given.flags & CHASH_RELOAD_NO_SHARE) == 0;
    reload.keep_last_good = (given.flags & CHASH_RELOAD_NO_LAST_GOOD) == 0;
    reload.write_state = (given.flags & CHASH_RELOAD_NO_WRITE) == 0;
    reload.defer_first_load = (given.flags & CHASH_RELOAD_DEFER) != 0;
    chash::Result<std::unique_ptr<chash::SnapshotReloader>> created =
        chash::SnapshotReloader::Create(path, std::move(reload));
    if (!created.ok()) return Fail(created.status());
    auto handle = std::make_unique<chash_reloader>();
    handle->reloader = std::move(created).value();
    *out = handle.release();
    return CHASH_OK;
  });
}

void chash_reloader_free(chash_reloader* reloader) noexcept { delete reloader; }

int chash_reloader_current(const chash_reloader* reloader, chash_snapshot** out) noexcept {
  if (out == nullptr) return NullArgument("chash_reloader_current", "out");
  *out = nullptr;
  if (reloader == nullptr) return NullArgument("chash_reloader_current", "reloader");
  return Guard([&] {
    std::shared_ptr<const chash::RingSnapshot> current = reloader->reloader->current();
    if (current) *out = new chash_snapshot{std::move(current)};
    return CHASH_OK;
  });
}

int chash_reloader_check(chash_reloader* reloader, chash_reload_result* out) noexcept {
  constexpr const char* kName = "chash_reloader_check";
  if (reloader == nullptr) return NullArgument(kName, "reloader");
  if (out == nullptr) return NullArgument(kName, "out");
  if (const int code = ResultSizeOk(kName, out)) return code;
  return Guard([&] {
    std::lock_guard<std::mutex> lock(reloader->mutex);
    reloader->candidate = reloader->reloader->Check();
    return WriteResult(kName, reloader->candidate, out);
  });
}

int chash_reloader_adopt_shared(chash_reloader* reloader, chash_reload_result* out) noexcept {
  constexpr const char* kName = "chash_reloader_adopt_shared";
  if (reloader == nullptr) return NullArgument(kName, "reloader");
  if (out == nullptr) return NullArgument(kName, "out");
  if (const int code = ResultSizeOk(kName, out)) return code;
  return Guard([&] {
    std::lock_guard<std::mutex> lock(reloader->mutex);
    reloader->candidate = reloader->reloader->AdoptShared();
    return WriteResult(kName, reloader->candidate, out);
  });
}

int chash_reloader_accept(chash_reloader* reloader, const chash_reload_result* candidate) noexcept {
  constexpr const char* kName = "chash_reloader_accept";
  if (reloader == nullptr) return NullArgument(kName, "reloader");
  if (candidate == nullptr) return NullArgument(kName, "candidate");
  return Guard([&] {
    std::lock_guard<std::mutex> lock(reloader->mutex);
    if (candidate->token != reloader->candidate.token) {
      return Fail(CHASH_E_BAD_ARGUMENT,
                  std::string(kName) + ": not the reloader's last candidate");
    }
    return Fail(reloader->reloader->Accept(reloader->candidate));
  });
}

int chash_reloader_refuse(chash_reloader* reloader, const chash_reload_result* candidate,
                          uint32_t check, const char* message) noexcept {
  constexpr const char* kName = "chash_reloader_refuse";
  if (reloader == nullptr) return NullArgument(kName, "reloader");
  if (candidate == nullptr) return NullArgument(kName, "candidate");
  if (check >= chash::kSnapshotCheckCount) {
    return Fail(CHASH_E_BAD_ARGUMENT, std::string(kName) + ": check " + std::to_string(check) +
                                          " is no CHASH_CHECK_* value");
  }
  return Guard([&] {
    std::lock_guard<std::mutex> lock(reloader->mutex);
    if (candidate->token != reloader->candidate.token) {
      return Fail(CHASH_E_BAD_ARGUMENT,
                  std::string(kName) + ": not the reloader's last candidate");
    }
    reloader->reloader->Refuse(reloader->candidate, static_cast<chash::SnapshotCheck>(check),
                               message != nullptr ? message : "");
    return CHASH_OK;
  });
}

int chash_reloader_poll(chash_reloader* reloader) noexcept {
  if (reloader == nullptr) return NullArgument("chash_reloader_poll", "reloader");
  return Guard([&] {
    std::lock_guard<std::mutex> lock(reloader->mutex);
    reloader->candidate = chash::ReloadCandidate();
    return Fail(reloader->reloader->Poll());
  });
}

int chash_reloader_report(const chash_reloader* reloader, chash_reload_report* out) noexcept {
  if (reloader == nullptr) return NullArgument("chash_reloader_report", "reloader");
  if (out == nullptr) return NullArgument("chash_reloader_report", "out");
  return Guard([&] {
    const chash::ReloadReport report = reloader->reloader->report();
    chash_reload_report value{};
    value.size = sizeof value;
    value.last_check = static_cast<uint32_t>(report.last_check);
    value.serving_last_good = report.serving_last_good ? 1 : 0;
    value.state_error = report.state_error.ok() ? 0 : 1;
    value.last_error = report.last_check == chash::SnapshotCheck::kNone
                           ? CHASH_OK
                           : CodeOf(chash::CodeOfSnapshotCheck(report.last_check));
    value.served_version = report.served_version;
    value.highest_version = report.highest_version;
    value.accepted = report.accepted;
    value.adopted = report.adopted;
    value.refused = report.refused;
    value.last_refused_unix_seconds = report.last_refused_unix_seconds;
    value.checking_since_unix_seconds = report.checking_since_unix_seconds;
    CopyMessage(value.last_message, report.last_message);
    CopyMessage(value.state_message, report.state_error.message());
    value.served_expires_unix_seconds = report.served_expires_unix_seconds;
    value.serving_expired = report.serving_expired ? 1 : 0;
    CopyMessage(value.state_file, report.state_file);
    return WriteGrowingStruct("chash_reloader_report", out, value);
  });
}

}  // extern "C"

