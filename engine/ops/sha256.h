// SHA-256 (FIPS 180-4), streaming, portable: the hash of the ring
// fingerprints (include/chash/identity.h). Written from the standard; the
// tests check it against the standard's examples.
#ifndef CHASH_ENGINE_OPS_SHA256_H_
#define CHASH_ENGINE_OPS_SHA256_H_

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
  // Pads and returns the digest; the hasher is spent afterwards.
  std::array<uint8_t, 32> Finish() noexcept;

 private:
  void Compress(const uint8_t* block) noexcept;

  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_{};
  size_t block_len_ = 0;
  uint64_t total_len_ = 0;  // bytes
};

}  // namespace chash::internal

#endif  // CHASH_ENGINE_OPS_SHA256_H_
