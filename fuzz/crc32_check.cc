#include <zlib.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "byte_checks.h"
#include "chash/crc32.h"
#include "chash/dispatch.h"
#include "fuzz_data.h"
#include "fuzz_support.h"
#include "hash/crc32_internal.h"
#include "reference/reference_ring.h"

namespace chash::fuzz {
namespace {

uint32_t Zlib(uint32_t crc, const uint8_t* data, size_t len) {
  return static_cast<uint32_t>(crc32(crc, data, static_cast<uInt>(len)));
}

// `len` bytes at `offset` past a 64-byte boundary, the block ending right
// after them (ASan's redzone starts at the last byte + 1).
class ExactBuffer {
 public:
  ExactBuffer(std::string_view bytes, size_t offset) {
    void* block = nullptr;
    if (posix_memalign(&block, 64, offset + bytes.size() + (bytes.empty() && offset == 0)) != 0) {
      std::abort();
    }
    block_ = static_cast<uint8_t*>(block);
    data_ = block_ + offset;
    if (!bytes.empty()) std::memcpy(data_, bytes.data(), bytes.size());
  }
  ~ExactBuffer() { std::free(block_); }
  ExactBuffer(const ExactBuffer&) = delete;
  ExactBuffer& operator=(const ExactBuffer&) = delete;
  const uint8_t* data() const { return data_; }

 private:
  uint8_t* block_ = nullptr;
  uint8_t* data_ = nullptr;
};

}  // namespace

size_t RunCrc32Check(const uint8_t* input, size_t size) {
  FuzzReader r(input, size);
  const uint8_t h = r.U8();
  const size_t offset = h & 63;
  uint32_t seed = 0;
  switch (h >> 6) {
    case 0:
      break;
    case 2:
      seed = 0xFFFFFFFFu;
      break;
    default:
      seed = r.U32();
  }
  const uint16_t split_raw = r.U16();
  const std::string_view payload = r.Rest();
  const size_t len = payload.size();
  const size_t split = split_raw % (len + 1);
  const ExactBuffer buffer(payload, offset);
  const uint8_t* data = buffer.data();

  const std::string description = "crc32 case: " + std::to_string(len) + " bytes at offset " +
                                  std::to_string(offset) + ", initial crc " + Hex32(seed) +
                                  ", split at " + std::to_string(split) + ", data " +
                                  Printable(payload.substr(0, 64)) + (len > 64 ? "..." : "");
  const uint32_t want = Zlib(seed, data, len);
  auto expect = [&](const std::string& what, uint32_t got) {
    if (got != want) {
      Fail(what + ": expected " + Hex32(want) + " (zlib), got " + Hex32(got), description);
    }
  };

  size_t compared = 0;
  for (const internal::Crc32Implementation& impl : internal::Crc32Implementations()) {
    if (!impl.supported) continue;
    const std::string name = impl.name;
    expect(name, impl.extend(seed, data, len));
    expect(name + " split", impl.extend(impl.extend(seed, data, split), data + split, len - split));
    ++compared;
  }
  if (compared == 0) Fail("no CRC32 implementation is supported", description);

  expect("Crc32Extend", Crc32Extend(seed, data, len));
  expect("Crc32Extend split",
         Crc32Extend(Crc32Extend(seed, data, split), data + split, len - split));
  expect("Crc32UpdateRaw", ~internal::Crc32UpdateRaw(~seed, data, len));
  if (seed == 0) {
    expect("Crc32(string_view)", Crc32(std::string_view(reinterpret_cast<const char*>(data), len)));
    expect("Crc32(pointer, length)", Crc32(data, len));
  }
  expect("reference BitwiseCrc32", reference::BitwiseCrc32(seed, data, len));

  // The batch key CRCs (Ring::FindNodes): the data cut into keys of every
  // length 0..66 (rotated by the split value), each checked against zlib, for
  // Crc32Keys (the dispatcher's pick) and each per-ISA kernel this CPU runs.
  std::vector<std::string_view> keys;
  for (size_t start = 0, i = 0; start < len; ++i) {
    const size_t key_len = std::min(len - start, (i + split_raw) % 67);
    keys.emplace_back(reinterpret_cast<const char*>(data + start), key_len);
    start += key_len;
  }
  std::vector<uint32_t> want_keys;
  for (const std::string_view key : keys) {
    want_keys.push_back(Zlib(0, reinterpret_cast<const uint8_t*>(key.data()), key.size()));
  }
  using KeysFn = void (*)(const std::string_view*, size_t, uint32_t*) noexcept;
  std::vector<std::pair<std::string, KeysFn>> key_impls = {{"Crc32Keys", internal::Crc32Keys}};
#if defined(__x86_64__)
  if (internal::CpuHasPclmul())
    key_impls.emplace_back("Crc32KeysPclmul", internal::Crc32KeysPclmul);
#endif
#if defined(__aarch64__)
  if (internal::CpuHasArmCrc32()) key_impls.emplace_back("Crc32KeysArm", internal::Crc32KeysArm);
#endif
  for (const auto& [name, keys_fn] : key_impls) {
    std::vector<uint32_t> got(keys.size() + 1, 0xDEADBEEFu);
    keys_fn(keys.data(), keys.size(), got.data());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (got[i] != want_keys[i]) {
        Fail(name + ": key " + std::to_string(i) + " of " + std::to_string(keys.size()) +
                 " (length " + std::to_string(keys[i].size()) + ") expected " +
                 Hex32(want_keys[i]) + ", got " + Hex32(got[i]),
             description);
      }
    }
    if (got[keys.size()] != 0xDEADBEEFu) Fail(name + " wrote past the batch", description);
  }
  // The implementation the dispatcher uses is the first one supported.
  if (ActiveCrc32Name() != internal::Crc32ImplementationName()) {
    Fail("ActiveCrc32Name differs from Crc32ImplementationName", description);
  }
  for (const internal::Crc32Implementation& impl : internal::Crc32Implementations()) {
    if (!impl.supported) continue;
    if (ActiveCrc32Name() != impl.name) {
      Fail(std::string("the dispatcher runs ") + std::string(ActiveCrc32Name()) +
               ", not the first supported implementation " + impl.name,
           description);
    }
    break;
  }

  // The ketama step: crc32(prev as 4 little-endian bytes) continued from the
  // raw state after the node's bytes; here the node's bytes are the data
  // after its first 4 bytes, and prev is those 4 bytes.
  if (len >= 4) {
    uint32_t prev;
    std::memcpy(&prev, data, 4);  // little-endian hosts only, as the engine
    const uint32_t base_state = internal::Crc32UpdateRaw(0xFFFFFFFFu, data + 4, len - 4);
    const uint32_t step_want = Zlib(Zlib(0, data + 4, len - 4), data, 4);
    const uint32_t step_got = internal::Crc32PointStep(base_state, prev);
    if (step_got != step_want) {
      Fail("Crc32PointStep: expected " + Hex32(step_want) + ", got " + Hex32(step_got),
           description);
    }
  }
  return compared;
}

}  // namespace chash::fuzz
