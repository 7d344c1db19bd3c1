// CRC-32/IEEE, the checksum of zlib's crc32(), nginx's ngx_crc32_long and
// Rust's crc32fast: reflected polynomial 0xEDB88320, initial value and final
// xor 0xFFFFFFFF. It is NOT CRC-32C: x86's SSE4.2 `crc32` does not compute it.
#ifndef CHASH_CRC32_H_
#define CHASH_CRC32_H_

#include <cstddef>
#include <cstdint>
#include <string_view>

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

// Runs the fastest implementation this CPU has, chosen once per process
// (ActiveCrc32Name() in dispatch.h: carry-less multiply on x86, the ARMv8
// CRC32 instructions, or portable slice-by-8).
// zlib semantics: Crc32Extend(Crc32(a), b) == Crc32(a + b); Crc32Extend(0, x)
// == Crc32(x). Thread-safe, no allocation, any alignment, len may be 0.
uint32_t Crc32Extend(uint32_t crc, const void* data, size_t len) noexcept;

inline uint32_t Crc32(const void* data, size_t len) noexcept {
  return Crc32Extend(0, data, len);
}
inline uint32_t Crc32(std::string_view bytes) noexcept {
  return Crc32Extend(0, bytes.data(), bytes.size());
}

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_CRC32_H_
