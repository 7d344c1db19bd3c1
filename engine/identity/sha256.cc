#include "identity/sha256.h"

#include <sodium/core.h>
#include <sodium/crypto_hash_sha256.h>

namespace chash::internal {
namespace {

crypto_hash_sha256_state* State(unsigned char* storage) noexcept {
  return reinterpret_cast<crypto_hash_sha256_state*>(storage);
}

}  // namespace

bool EnsureSodium() noexcept {
  static const bool ok = sodium_init() >= 0;  // 1 = already initialized
  return ok;
}

Sha256Hasher::Sha256Hasher() noexcept { static_assert(sizeof(crypto_hash_sha256_state) <= sizeof(state_));
  static_assert(alignof(crypto_hash_sha256_state) <= 8);
  crypto_hash_sha256_init(State(state_)); }

void Sha256Hasher::Update(const void* data, size_t len) noexcept {
  crypto_hash_sha256_update(State(state_), static_cast<const unsigned char*>(data), len);
}

void Sha256Hasher::UpdateU16(uint16_t value) noexcept {
  const uint8_t le[2] = {static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8)};
  Update(le, 2);
}

void Sha256Hasher::UpdateU32(uint32_t value) noexcept {
  const uint8_t le[4] = {static_cast<uint8_t>(value), static_cast<uint8_t>(value >> 8),
                         static_cast<uint8_t>(value >> 16), static_cast<uint8_t>(value >> 24)};
  Update(le, 4);
}

std::array<uint8_t, 32> Sha256Hasher::Finish() noexcept {
  std::array<uint8_t, 32> digest;
  crypto_hash_sha256_final(State(state_), digest.data());
  return digest;
}

}  // namespace chash::internal
