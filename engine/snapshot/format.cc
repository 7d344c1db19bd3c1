#include "snapshot/format.h"

#include <sodium/crypto_generichash_blake2b.h>
#include <xxhash.h>

#include "ops/sha256.h"

namespace chash::internal::snapshot {

std::array<uint8_t, 16> Checksum(const uint8_t* bytes, size_t size) noexcept {
  const XXH128_hash_t hash = XXH3_128bits(bytes, size);
  std::array<uint8_t, 16> out;
  StoreU64(out.data(), hash.low64);
  StoreU64(out.data() + 8, hash.high64);
  return out;
}

std::array<uint8_t, 49> SignedMessage(const uint8_t* bytes, size_t size) noexcept {
  EnsureSodium();
  std::array<uint8_t, 49> message;
  std::memcpy(message.data(), kSignatureContext.data(), kSignatureContext.size());
  crypto_generichash_blake2b(message.data() + kSignatureContext.size(), 32, bytes, size,
                             nullptr, 0);
  return message;
}

bool ValidSubsetName(std::string_view name) noexcept {
  if (name.empty() || name.size() > kMaxSubsetNameBytes) return false;
  for (const char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

bool ValidLabel(std::string_view label) noexcept {
  if (label.size() > kMaxLabelBytes) return false;
  size_t i = 0;
  while (i < label.size()) {
    const auto c = static_cast<unsigned char>(label[i]);
    if (c == 0) return false;
    size_t extra = 0;
    uint32_t code = 0;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1;
      code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2;
      code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3;
      code = c & 0x07;
    } else {
      return false;
    }
    if (i + extra >= label.size()) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const auto cont = static_cast<unsigned char>(label[i + k]);
      if ((cont & 0xC0) != 0x80) return false;
      code = (code << 6) | (cont & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF.
    static constexpr uint32_t kMinCode[4] = {0, 0x80, 0x800, 0x10000};
    if (code < kMinCode[extra] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

}  // namespace chash::internal::snapshot
