// SHA-256 (FIPS 180-4), streaming: the hash of the ring fingerprints
// (include/chash/identity.h). A thin wrapper over libsodium's
// crypto_hash_sha256 (Debian libsodium-dev); the tests check it against the
// standard's examples and tests/data/identity against an independent
// implementation.
#ifndef CHASH_ENGINE_IDENTITY_SHA256_H_
#define CHASH_ENGINE_IDENTITY_SHA256_H_

#include <array>
#include <cstddef>
#include <cstdint>

namespace chash::internal {

class Sha256Hasher {
 public:
  Sha256Hasher() noexcept;
  void Update(const void* data, size_t len) noexcept;
  // Little-endian integers, the byte order of every chash serialization.
  void UpdateU16(uint16_t value) noexcept;
  void UpdateU32(uint32_t value) noexcept;
  // Returns the digest; the hasher is spent afterwards.
  std::array<uint8_t, 32> Finish() noexcept;

 private:
  // libsodium's crypto_hash_sha256_state (104 bytes; checked in the .cc),
  // kept opaque so that including this header needs no libsodium headers.
  alignas(8) unsigned char state_[128];
};

// sodium_init() once per process (thread-safe; idempotent). It picks the
// fastest implementations (BLAKE2b, Ed25519) for this CPU. False if libsodium
// cannot initialize (no entropy source): signing and key generation fail.
bool EnsureSodium() noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_IDENTITY_SHA256_H_
