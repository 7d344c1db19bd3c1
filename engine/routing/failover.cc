// NodeMask, masked lookups, AvailabilityMask (seqlocked double buffer) and
// bounded-load lookups. See include/chash/failover.h.
#include "chash/failover.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <string>

#include "builder/build_nodes.h"
#include "chash/crc32.h"
#include "routing/masked_walk.h"
#include "util/out_of_memory.h"

namespace chash {
namespace {

uint32_t WordsFor(uint32_t num_nodes) { return (num_nodes + 63) / 64; }

constexpr auto kAlways = [](uint32_t) { return true; };

// A batch under a mask: every answer kMaskRefused on a ring that masks
// inexactly; else the ring's own answers (one batched search, `find_all`),
// each then passed through `settle(i, answer)`, which walks on from an
// unavailable one. Allocates nothing.
template <typename Input, typename FindAll, typename Settle>
size_t MaskedBatch(const Ring& ring, std::span<const Input> inputs, std::span<uint32_t> out,
                   const FindAll& find_all, const Settle& settle) noexcept {
  if (!MasksExactly(ring)) {
    const size_t count = std::min(inputs.size(), out.size());
    std::fill_n(out.begin(), count, kMaskRefused);
    return count;
  }
  const size_t count = find_all(inputs, out);
  for (size_t i = 0; i < count; ++i) out[i] = settle(i, out[i]);
  return count;
}

}  // namespace

// ---- NodeMask ---------------------------------------------------------------------

NodeMask::NodeMask(uint32_t num_nodes, bool available) noexcept {
  const uint32_t size = std::min(num_nodes, kMaxNodes);
  try {
    words_.assign(WordsFor(size), available ? ~uint64_t{0} : 0);
  } catch (const std::bad_alloc&) {
    return;  // covers no node: fails closed
  }
  size_ = size;
  available_ = available ? size_ : 0;
  if (available && size_ % 64 != 0) words_.back() = (uint64_t{1} << (size_ % 64)) - 1;
}

Result<NodeMask> NodeMask::Create(uint32_t num_nodes, bool available) noexcept {
  NodeMask mask(num_nodes, available);
  if (mask.size() != std::min(num_nodes, kMaxNodes)) {
    return internal::OutOfMemory("node mask");
  }
  return mask;
}

NodeMask::NodeMask(const NodeMask& other) noexcept { *this = other; }

NodeMask& NodeMask::operator=(const NodeMask& other) noexcept {
  if (this == &other) return *this;
  try {
    words_ = other.words_;
    size_ = other.size_;
    available_ = other.available_;
  } catch (const std::bad_alloc&) {
    words_.clear();
    size_ = 0;
    available_ = 0;
  }
  return *this;
}

bool NodeMask::Set(uint32_t node, bool available) noexcept {
  if (node >= size_) return false;
  const uint64_t bit = uint64_t{1} << (node % 64);
  uint64_t& word = words_[node / 64];
  if (((word & bit) != 0) == available) return true;
  word ^= bit;
  available ? ++available_ : --available_;
  return true;
}

// ---- Masked lookups -------------------------------------------------------------

bool MasksExactly(const Ring& ring) noexcept {
  return ring.is_raw() || FlavorMasksExactly(ring.options());
}

Result<Ring> BuildAvailableRing(const Ring& ring, const NodeMask& mask) {
  if (ring.is_raw()) {
    return Status(StatusCode::kBadArgument,
                  "a raw-point ring cannot be rebuilt (its points were given, not generated)");
  }
  return internal::CatchOutOfMemory("building the ring of the available nodes", [&] {
    std::vector<NodeInfo> nodes;
    nodes.reserve(ring.num_nodes());
    uint64_t points = 0;
    for (uint32_t id = 0; id < ring.num_nodes(); ++id) {
      nodes.push_back(ring.node(id));
      if (!mask.available(id)) nodes.back().weight = 0;
      points += uint64_t{nodes.back().weight} * ring.options().point_multiple;
    }
    return internal::BuildRingFromNodes(ring.options(), nodes, points);
  });
}

uint32_t FindAvailableNodeByHash(const Ring& ring, const NodeMask& mask, uint32_t hash) noexcept {
  if (!MasksExactly(ring)) return kMaskRefused;
  if (mask.count_available() == 0) return Ring::kNoNode;
  return internal::WalkAvailable(
      ring, hash, [&](uint32_t node) { return mask.available(node); }, kAlways);
}

uint32_t FindAvailableNodeByHash64(const Ring& ring, const NodeMask& mask, uint64_t hash) noexcept {
  if (!MasksExactly(ring)) return kMaskRefused;
  if (hash > UINT32_MAX) return Ring::kNoNode;  // no 32-bit ring has such keys
  return FindAvailableNodeByHash(ring, mask, static_cast<uint32_t>(hash));
}

uint32_t FindAvailableNode(const Ring& ring, const NodeMask& mask, std::string_view key) noexcept {
  return FindAvailableNodeByHash64(ring, mask, ring.KeyHash(key));
}

size_t FindAvailableNodesByHash(const Ring& ring, const NodeMask& mask,
                                std::span<const uint32_t> hashes,
                                std::span<uint32_t> out) noexcept {
  return MaskedBatch(
      ring, hashes, out, [&](auto in, auto answers) { return ring.FindNodesByHash(in, answers); },
      [&](size_t i, uint32_t node) {
        return mask.available(node) ? node : FindAvailableNodeByHash(ring, mask, hashes[i]);
      });
}

size_t FindAvailableNodes(const Ring& ring, const NodeMask& mask,
                          std::span<const std::string_view> keys,
                          std::span<uint32_t> out) noexcept {
  return MaskedBatch(
      ring, keys, out, [&](auto in, auto answers) { return ring.FindNodes(in, answers); },
      [&](size_t i, uint32_t node) {
        return mask.available(node) ? node : FindAvailableNode(ring, mask, keys[i]);
      });
}

// ---- AvailabilityMask ---------------------------------------------------------------
//
// Seqlock protocol (H. Boehm, "Can seqlocks get along with programming
// language memory models?", MSPC 2012), over two buffers:
//   Publish: b = the inactive buffer; sequence[b] = odd; release fence;
//            words[b] = new bits (relaxed stores); sequence[b] = even
//            (release); active = b (release).
//   Reader:  b = active (acquire); s = sequence[b] (acquire), retry if odd;
//            read words[b] (relaxed loads) and compute; acquire fence;
//            accept iff sequence[b] still == s.
// Every shared word is an atomic, so there is no data race; a reader whose
// buffer was rewritten during its lookup sees the sequence change and redoes
// the lookup against the buffer now active.

AvailabilityMask::AvailabilityMask(uint32_t num_nodes) noexcept {
  const uint32_t size = std::min(num_nodes, kMaxNodes);
  const NodeMask all(size, true);
  if (all.size() != size) return;  // out of memory: covers no node
  const uint32_t num_words = WordsFor(size);
  std::unique_ptr<std::atomic<uint64_t>[]> words[2];
  for (auto& buffer_words : words) {
    buffer_words.reset(new (std::nothrow) std::atomic<uint64_t>[num_words]);
    if (buffer_words == nullptr && num_words != 0) return;
  }
  size_ = size;
  num_words_ = num_words;
  for (int b = 0; b < 2; ++b) {
    Buffer& buffer = buffers_[b];
    buffer.available.store(all.count_available(), std::memory_order_relaxed);
    buffer.words = std::move(words[b]);
    for (uint32_t i = 0; i < num_words_; ++i) {
      buffer.words[i].store(all.words()[i], std::memory_order_relaxed);
    }
  }
}

Result<std::unique_ptr<AvailabilityMask>> AvailabilityMask::Create(uint32_t num_nodes) noexcept {
  std::unique_ptr<AvailabilityMask> mask(new (std::nothrow) AvailabilityMask(num_nodes));
  if (mask == nullptr || mask->size() != std::min(num_nodes, kMaxNodes)) {
    return internal::OutOfMemory("availability mask");
  }
  return mask;
}

Status AvailabilityMask::Publish(const NodeMask& mask) {
  if (mask.size() != size_) {
    return internal::CatchOutOfMemory("reporting a mask of the wrong size", [&] {
      return Status(StatusCode::kBadArgument, "mask covers " + std::to_string(mask.size()) +
                                                  " nodes; this AvailabilityMask covers " +
                                                  std::to_string(size_));
    });
  }
  const std::lock_guard<std::mutex> lock(publish_mutex_);
  const uint32_t target = 1 - active_.load(std::memory_order_relaxed);
  Buffer& buffer = buffers_[target];
  const uint64_t sequence = buffer.sequence.load(std::memory_order_relaxed);
  buffer.sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  for (uint32_t i = 0; i < num_words_; ++i) {
    buffer.words[i].store(mask.words()[i], std::memory_order_relaxed);
  }
  buffer.available.store(mask.count_available(), std::memory_order_relaxed);
  buffer.version.store(next_version_++, std::memory_order_relaxed);
  buffer.sequence.store(sequence + 2, std::memory_order_release);
  active_.store(target, std::memory_order_release);
  return Status();
}

template <typename Lookup>
uint32_t AvailabilityMask::ReadConsistent(const Lookup& lookup) const noexcept {
  while (true) {
    const Buffer& buffer = buffers_[active_.load(std::memory_order_acquire)];
    const uint64_t sequence = buffer.sequence.load(std::memory_order_acquire);
    if (sequence & 1) continue;  // being rewritten: `active_` has moved on
    const std::atomic<uint64_t>* words = buffer.words.get();
    const uint32_t size = size_;
    const uint32_t answer = lookup(
        [words, size](uint32_t node) {
          return node < size &&
                 ((words[node / 64].load(std::memory_order_relaxed) >> (node % 64)) & 1) != 0;
        },
        buffer);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (buffer.sequence.load(std::memory_order_relaxed) == sequence) return answer;
  }
}

NodeMask AvailabilityMask::Snapshot(uint64_t* version) const noexcept {
  NodeMask copy(size_, false);
  uint64_t seen_version = 0;
  ReadConsistent([&](const auto& is_up, const Buffer& buffer) {
    for (uint32_t node = 0; node < size_; ++node) copy.Set(node, is_up(node));
    seen_version = buffer.version.load(std::memory_order_relaxed);
    return uint32_t{0};
  });
  if (version != nullptr) *version = seen_version;
  return copy;
}

uint64_t AvailabilityMask::version() const noexcept {
  uint64_t seen_version = 0;
  ReadConsistent([&](const auto&, const Buffer& buffer) {
    seen_version = buffer.version.load(std::memory_order_relaxed);
    return uint32_t{0};
  });
  return seen_version;
}

uint32_t AvailabilityMask::FindNodeByHash(const Ring& ring, uint32_t hash) const noexcept {
  if (!MasksExactly(ring)) return kMaskRefused;
  return ReadConsistent([&](const auto& is_up, const Buffer& buffer) {
    if (buffer.available.load(std::memory_order_relaxed) == 0) return Ring::kNoNode;
    return internal::WalkAvailable(ring, hash, is_up, kAlways);
  });
}

uint32_t AvailabilityMask::FindNode(const Ring& ring, std::string_view key) const noexcept {
  if (!MasksExactly(ring)) return kMaskRefused;
  const uint64_t hash = ring.KeyHash(key);  // a 32-bit ring's: below 2^32
  return FindNodeByHash(ring, static_cast<uint32_t>(hash));
}

size_t AvailabilityMask::FindNodes(const Ring& ring, std::span<const std::string_view> keys,
                                   std::span<uint32_t> out) const noexcept {
  // The unmasked answers, then each key under one mask.
  return MaskedBatch(
      ring, keys, out, [&](auto in, auto answers) { return ring.FindNodes(in, answers); },
      [&](size_t i, uint32_t plain) {
        return ReadConsistent([&](const auto& is_up, const Buffer& buffer) {
          if (is_up(plain)) return plain;
          if (buffer.available.load(std::memory_order_relaxed) == 0) return Ring::kNoNode;
          return internal::WalkAvailable(ring, static_cast<uint32_t>(ring.KeyHash(keys[i])),
                                         is_up, kAlways);
        });
      });
}

// ---- Bounded loads --------------------------------------------------------------------

uint64_t BoundedLoadCapacity(uint64_t total_load, uint32_t nodes, double balance_factor) noexcept {
  // c in parts per million, so that decimal factors (1.1, 1.25) are exact:
  // 1.1 as a double is 1.10000000000000008882, and ceil(c * m / n) of it
  // would add one whenever 1.1 * m / n is an integer.
  if (nodes == 0 || !std::isfinite(balance_factor) || !(balance_factor > 1.0)) return 0;
  using u128 = unsigned __int128;
  // p = c * 10^6 rounded half away from zero, from c's exact value
  // significand * 2^exponent (significand < 2^53). Rounding the double
  // product c * 1e6 instead would round twice: 1.0000015 (exactly
  // 1.00000149999999998...) gave 1000002, not 1000001.
  int exponent = 0;
  const double fraction = std::frexp(balance_factor, &exponent);  // in [0.5, 1)
  const auto significand = static_cast<uint64_t>(std::ldexp(fraction, 53));
  exponent -= 53;
  const u128 scaled = u128{significand} * 1000000u;  // < 2^73
  // scaled >= 2^52 * 10^6 > 2^71.9 and bins < 2^32 * 10^6 < 2^52, so from
  // exponent 44 on the capacity is over 2^(71.9 + 44 - 52) > 2^64:
  // saturated. Below that, scaled << exponent < 2^116 fits.
  if (exponent >= 44) return UINT64_MAX;
  u128 c_ppm;
  if (exponent >= 0) {
    c_ppm = scaled << exponent;
  } else {
    const int shift = -exponent;  // <= 52, since c > 1
    c_ppm = (scaled >> shift) + ((scaled >> (shift - 1)) & 1);
  }
  const u128 balls = u128{total_load} + 1;
  const u128 bins = u128{nodes} * 1000000u;
  // c_ppm * balls would pass 2^128: the capacity is then over 2^64 too.
  if (c_ppm > ~u128{0} / balls) return UINT64_MAX;
  const u128 capacity = (c_ppm * balls + bins - 1) / bins;
  return capacity > UINT64_MAX ? UINT64_MAX : static_cast<uint64_t>(capacity);
}

namespace {

// Why bounded loads are refused on this ring, or nullptr: the rings whose
// program bounds loads otherwise (Envoy), and masks on the rings whose
// program rebuilds instead (failover.h).
const char* BoundedLoadRefusal(const Ring& ring, const NodeMask* mask) noexcept {
  if (ring.key_hash_bits() == 64) {
    return "Envoy's hash_balance_factor probes hosts in an order seeded by the hash, which chash "
           "does not reproduce: no bounded-load lookup on envoy-ring and envoy-maglev rings";
  }
  if (mask != nullptr && !MasksExactly(ring)) {
    return "this ring's program rebuilds it when a node goes (its point counts depend on every "
           "node): build the ring of the available nodes instead of masking";
  }
  return nullptr;
}

template <typename Load>
uint32_t UnderCapacity(const Ring& ring, uint32_t hash, std::span<const Load> loads,
                       uint64_t capacity, const NodeMask* mask) noexcept {
  if (BoundedLoadRefusal(ring, mask) != nullptr) return kMaskRefused;
  const auto accept = [&](uint32_t node) {
    return node < loads.size() && uint64_t{loads[node]} < capacity;
  };
  if (mask == nullptr) {
    return internal::WalkAvailable(ring, hash, kAlways, accept);
  }
  return internal::WalkAvailable(
      ring, hash, [mask](uint32_t node) { return mask->available(node); }, accept);
}

template <typename Load>
Result<uint32_t> BoundedLoad(const Ring& ring, uint32_t hash, std::span<const Load> loads,
                             double balance_factor, const NodeMask* mask) {
  if (!std::isfinite(balance_factor) || !(balance_factor > 1.0)) {
    return Status(StatusCode::kBadArgument, "balance factor must be a finite number > 1, got " +
                                                std::to_string(balance_factor));
  }
  if (loads.size() < ring.num_nodes()) {
    return Status(StatusCode::kBadArgument, std::to_string(loads.size()) + " loads for a ring of " +
                                                std::to_string(ring.num_nodes()) + " nodes");
  }
  if (const char* refusal = BoundedLoadRefusal(ring, mask)) {
    return Status(StatusCode::kBadArgument, refusal);
  }
  uint64_t total = 0;
  uint32_t nodes = 0;
  for (uint32_t node = 0; node < ring.num_nodes(); ++node) {
    if (!ring.owns_points(node) || (mask != nullptr && !mask->available(node))) continue;
    ++nodes;
    total = uint64_t{loads[node]} > UINT64_MAX - total ? UINT64_MAX : total + loads[node];
  }
  if (nodes == 0) return Ring::kNoNode;
  return UnderCapacity(ring, hash, loads, BoundedLoadCapacity(total, nodes, balance_factor), mask);
}

}  // namespace

uint32_t FindNodeUnderCapacity(const Ring& ring, uint32_t hash, std::span<const uint64_t> loads,
                               uint64_t capacity, const NodeMask* mask) noexcept {
  return UnderCapacity(ring, hash, loads, capacity, mask);
}
uint32_t FindNodeUnderCapacity(const Ring& ring, uint32_t hash, std::span<const uint32_t> loads,
                               uint64_t capacity, const NodeMask* mask) noexcept {
  return UnderCapacity(ring, hash, loads, capacity, mask);
}

Result<uint32_t> FindNodeBoundedLoad(const Ring& ring, uint32_t hash,
                                     std::span<const uint64_t> loads, double balance_factor,
                                     const NodeMask* mask) {
  return internal::CatchOutOfMemory("reporting a bad argument", "FindNodeBoundedLoad", [&] {
    return BoundedLoad(ring, hash, loads, balance_factor, mask);
  });
}
Result<uint32_t> FindNodeBoundedLoad(const Ring& ring, uint32_t hash,
                                     std::span<const uint32_t> loads, double balance_factor,
                                     const NodeMask* mask) {
  return internal::CatchOutOfMemory("reporting a bad argument", "FindNodeBoundedLoad", [&] {
    return BoundedLoad(ring, hash, loads, balance_factor, mask);
  });
}

}  // namespace chash
