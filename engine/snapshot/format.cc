#include "snapshot/format.h"

#include <openssl/evp.h>
#include <sodium/crypto_generichash_blake2b.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#include "identity/sha256.h"

namespace chash::internal::snapshot {

std::array<uint8_t, 16> Checksum(const uint8_t* bytes, size_t size) noexcept {
  const XXH128_hash_t hash = XXH3_128bits(bytes, size);
  std::array<uint8_t, 16> out;
  StoreU64(out.data(), hash.low64);
  StoreU64(out.data() + 8, hash.high64);
  return out;
}

struct ChunkTreeJob::State {
  const uint8_t* bytes = nullptr;
  uint64_t size = 0;
  uint64_t chunks = 0;
  std::unique_ptr<std::array<uint8_t, 32>[]> digests;
  std::atomic<uint64_t> next{0};
  std::atomic<bool> stop{false};
  std::atomic<bool> failed{false};
  std::vector<std::thread> helpers;

  // Claims chunks until none is left (or the job stops), each hashed once.
  void Drain() noexcept {
    EVP_MD_CTX* context = EVP_MD_CTX_new();
    if (context == nullptr) {
      failed.store(true, std::memory_order_relaxed);
      return;
    }
    for (uint64_t i; !stop.load(std::memory_order_relaxed) &&
                     (i = next.fetch_add(1, std::memory_order_relaxed)) < chunks;) {
      const uint64_t begin = i * kDigestChunkBytes;
      const auto length = static_cast<size_t>(std::min(kDigestChunkBytes, size - begin));
      if (EVP_DigestInit_ex(context, EVP_sha256(), nullptr) != 1 ||
          EVP_DigestUpdate(context, bytes + begin, length) != 1 ||
          EVP_DigestFinal_ex(context, digests[i].data(), nullptr) != 1) {
        failed.store(true, std::memory_order_relaxed);
      }
    }
    EVP_MD_CTX_free(context);
  }
  void Join() noexcept {
    for (std::thread& thread : helpers) {
      if (thread.joinable()) thread.join();
    }
    helpers.clear();
  }
};

ChunkTreeJob::ChunkTreeJob(const uint8_t* bytes, uint64_t size, unsigned threads) noexcept
    : state_(new (std::nothrow) State) {
  if (state_ == nullptr) return;
  state_->bytes = bytes;
  state_->size = size;
  state_->chunks = (size + kDigestChunkBytes - 1) / kDigestChunkBytes;
  state_->digests.reset(new (std::nothrow) std::array<uint8_t, 32>[std::max<uint64_t>(
      state_->chunks, 1)]);
  if (!state_->digests) {
    state_->failed = true;
    return;
  }
  const uint64_t helpers = std::min<uint64_t>(threads > 0 ? threads - 1 : 0,
                                              state_->chunks > 0 ? state_->chunks - 1 : 0);
  try {
    state_->helpers.reserve(helpers);
    for (uint64_t t = 0; t < helpers; ++t) {
      state_->helpers.emplace_back([state = state_] { state->Drain(); });
    }
  } catch (...) {
    // std::system_error or std::bad_alloc: fewer helpers, the same digest.
  }
}

ChunkTreeJob::~ChunkTreeJob() {
  if (state_ == nullptr) return;
  state_->stop = true;
  state_->Join();
  delete state_;
}

bool ChunkTreeJob::Finish(std::array<uint8_t, 32>& root) noexcept {
  if (state_ == nullptr) return false;
  if (!state_->failed) state_->Drain();
  state_->Join();
  if (state_->failed) return false;
  EVP_MD_CTX* context = EVP_MD_CTX_new();
  if (context == nullptr) return false;
  uint8_t lengths[12];
  StoreU64(lengths, state_->size);
  StoreU32(lengths + 8, static_cast<uint32_t>(kDigestChunkBytes));
  bool ok = EVP_DigestInit_ex(context, EVP_sha256(), nullptr) == 1 &&
            EVP_DigestUpdate(context, kChunkTreeContext.data(), kChunkTreeContext.size()) == 1 &&
            EVP_DigestUpdate(context, lengths, sizeof lengths) == 1;
  for (uint64_t i = 0; ok && i < state_->chunks; ++i) {
    ok = EVP_DigestUpdate(context, state_->digests[i].data(), 32) == 1;
  }
  ok = ok && EVP_DigestFinal_ex(context, root.data(), nullptr) == 1;
  EVP_MD_CTX_free(context);
  return ok;
}

bool MakeSignedMessage(uint16_t minor, const uint8_t* bytes, uint64_t size, unsigned threads,
                       SignedMessage& message) noexcept {
  if (minor == 0) {
    EnsureSodium();
    std::memcpy(message.bytes.data(), kSignatureContext10.data(), kSignatureContext10.size());
    crypto_generichash_blake2b(message.bytes.data() + kSignatureContext10.size(), 32, bytes,
                               size, nullptr, 0);
    message.size = kSignatureContext10.size() + 32;
    return true;
  }
  ChunkTreeJob job(bytes, size, threads);
  std::array<uint8_t, 32> root;
  if (!job.Finish(root)) return false;
  std::memcpy(message.bytes.data(), kSignatureContext11.data(), kSignatureContext11.size());
  std::memcpy(message.bytes.data() + kSignatureContext11.size(), root.data(), root.size());
  message.size = kSignatureContext11.size() + root.size();
  return true;
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
