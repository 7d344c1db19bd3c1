// The C API (include/chash/chash_c.h) over the C++ one: the library,
// building, lookups, walks, the shape of a ring, statistics and identity.
// Every entry point is noexcept and catches everything the C++ side may
// throw (std::bad_alloc above all) at this boundary: a C host has no way to
// handle an exception. The other sections: chash_c_flavors.cc,
// chash_c_routing.cc, chash_c_snapshot.cc; what they share:
// capi_internal.h.
#include "capi/capi_internal.h"

using namespace chash::capi;  // the helpers of every entry point

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

int chash_builder_add_fields(chash_builder* builder, const char* address, size_t address_len,
                             uint32_t weight, const chash_node_fields* fields) noexcept {
  constexpr const char* kName = "chash_builder_add_fields";
  chash_node_fields given;
  if (const int code = ReadGrowingStruct(kName, "fields", fields, given)) return code;
  const struct {
    const char* text;
    size_t len;
    const char* argument;
  } texts[] = {{given.name, given.name_len, "fields->name (with name_len > 0)"},
               {given.hostname, given.hostname_len, "fields->hostname (with hostname_len > 0)"},
               {given.hash_key, given.hash_key_len, "fields->hash_key (with hash_key_len > 0)"}};
  for (const auto& field : texts) {
    if (field.text == nullptr && field.len != 0) return NullArgument(kName, field.argument);
  }
  if (given.hash_hostname > 1) {
    return Fail(CHASH_E_BAD_ARGUMENT, "chash_builder_add_fields: fields->hash_hostname is 0 or 1");
  }
  if (given.has_real_weight > 1) {
    return Fail(CHASH_E_BAD_ARGUMENT,
                "chash_builder_add_fields: fields->has_real_weight is 0 or 1");
  }
  const auto view = [](const char* text, size_t len) {
    return text == nullptr ? std::string_view() : std::string_view(text, len);
  };
  chash::NodeOptions node;
  node.server_id = given.server_id;
  node.name = view(given.name, given.name_len);
  node.hostname = view(given.hostname, given.hostname_len);
  node.hash_key = view(given.hash_key, given.hash_key_len);
  node.hash_hostname = given.hash_hostname == 1;
  if (given.has_real_weight == 1) node.real_weight = given.real_weight;
  return AddNode(kName, builder, address, address_len, weight, node);
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
  return FindKeysChunked("chash_ring_find_keys", {{"ring", ring == nullptr}}, keys, key_lens, n,
                         out,
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
  if (const int code = FirstNull("chash_ring_collision_losers", {{"ring", ring == nullptr},
                                                                 {"hashes", hashes == nullptr},
                                                                 {"nodes", nodes == nullptr},
                                                                 {"count", count == nullptr}})) {
    return code;
  }
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


// ---- Statistics and identity
// ---------------------------------------------------------------------

extern "C++" {  // a template cannot have C linkage
namespace {
// The four memory counts chash::MemoryUsage and chash::RingStats share with
// chash_memory_usage and chash_ring_stats.
template <typename From, typename To>
void CopyByteCounts(const From& from, To& to) noexcept {
  to.column_bytes = from.column_bytes;
  to.other_bytes = from.other_bytes;
  to.index_bytes = from.index_bytes;
  to.collision_table_bytes = from.collision_table_bytes;
}
}  // namespace
}  // extern "C++"

int chash_ring_memory_usage(const chash_ring* ring, chash_memory_usage* out) noexcept {
  if (ring == nullptr) return NullArgument("chash_ring_memory_usage", "ring");
  if (out == nullptr) return NullArgument("chash_ring_memory_usage", "out");
  const chash::MemoryUsage usage = ring->ring.memory_usage();
  chash_memory_usage value{};
  value.size = sizeof value;
  CopyByteCounts(usage, value);
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
    CopyByteCounts(stats, value);
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
