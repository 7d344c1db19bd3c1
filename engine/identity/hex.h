// Bytes as hex text and back, for fingerprints, key ids and the files that
// name them (keys, host state). libsodium's codec: constant time, either
// case accepted on the way in, lower case on the way out.
#ifndef CHASH_ENGINE_IDENTITY_HEX_H_
#define CHASH_ENGINE_IDENTITY_HEX_H_

#include <sodium/utils.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace chash::internal {

// 2 * size lower-case hex digits. Throws std::bad_alloc.
inline std::string HexOrThrow(const uint8_t* bytes, size_t size) {
  std::string hex(2 * size + 1, '\0');  // sodium_bin2hex writes a NUL
  sodium_bin2hex(hex.data(), hex.size(), bytes, size);
  hex.pop_back();
  return hex;
}

// Exactly 2 * size hex digits into out[0, size): false for any other
// length or a non-hex character (out is then unspecified). Allocates
// nothing.
inline bool ParseHex(std::string_view text, uint8_t* out, size_t size) noexcept {
  size_t written = 0;
  return text.size() == 2 * size &&
         sodium_hex2bin(out, size, text.data(), text.size(), nullptr, &written, nullptr) == 0 &&
         written == size;
}

}  // namespace chash::internal

#endif  // CHASH_ENGINE_IDENTITY_HEX_H_
