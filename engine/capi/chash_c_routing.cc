// The C API's routing sections (chash_c.h): node masks, availability,
// bounded loads and the dual-ring migration.
#include "capi/capi_internal.h"

using namespace chash::capi;  // the helpers of every entry point

extern "C" {

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
  return FindKeysChunked("chash_ring_find_available_keys",
                         {{"ring", ring == nullptr}, {"mask", mask == nullptr}}, keys, key_lens, n,
                         out,
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
  return FindKeysChunked("chash_availability_find_keys",
                         {{"availability", availability == nullptr}, {"ring", ring == nullptr}},
                         keys, key_lens, n, out,
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
  if (node != nullptr) *node = CHASH_NO_NODE;
  if (const int code = FirstNull("chash_ring_find_bounded_load",
                                 {{"ring", ring == nullptr},
                                  {"node", node == nullptr},
                                  {"loads", loads == nullptr && num_loads != 0}})) {
    return code;
  }
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
  // Runs under HandleOut, once `out` and both rings are checked.
  const auto create = [&] {
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
  };
  return HandleOut("chash_migration_new", out,
                   {{"old_ring", old_ring == nullptr}, {"new_ring", new_ring == nullptr}}, create);
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
  chash::RingSide side_chunk[kChunk];
  size_t done = 0;
  return FindKeysChunked(
      "chash_migration_find_keys", {{"migration", migration == nullptr}}, keys, key_lens, n, nodes,
      [&](std::span<const std::string_view> views, std::span<uint32_t> out) {
        migration->migration->FindNodes(views, out, std::span(side_chunk, views.size()));
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

}  // extern "C"
