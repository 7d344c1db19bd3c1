// FuzzReader: how every chash fuzzer turns its input bytes into a case, and
// FuzzWriter: its exact inverse, used to write the named seeds.
//
// simdjson-style small reader rather than clang's FuzzedDataProvider, so that
// the g++ build compiles the fuzzers (replay main) and a seed decodes the same
// way in every build. Reads go front to back and never fail: past the end
// they yield zeros and empty strings, so any byte string is some case and a
// truncated input is a shorter case. Integers are little-endian.
#ifndef CHASH_FUZZ_FUZZ_DATA_H_
#define CHASH_FUZZ_FUZZ_DATA_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace chash::fuzz {

class FuzzReader {
 public:
  FuzzReader(const uint8_t* data, size_t size) noexcept : data_(data), size_(size) {}

  bool empty() const noexcept { return pos_ >= size_; }
  size_t remaining() const noexcept { return size_ - pos_; }

  uint8_t U8() noexcept { return pos_ < size_ ? data_[pos_++] : 0; }
  uint16_t U16() noexcept {
    const uint16_t lo = U8();
    return static_cast<uint16_t>(lo | (uint16_t{U8()} << 8));
  }
  uint32_t U32() noexcept {
    const uint32_t lo = U16();
    return lo | (uint32_t{U16()} << 16);
  }
  // A value in [0, n): one byte when n <= 256, two when n <= 65,536, else
  // four (n == 0 reads nothing and gives 0).
  uint32_t Below(uint32_t n) noexcept {
    if (n == 0) return 0;
    if (n <= 256) return U8() % n;
    if (n <= 65536) return U16() % n;
    return U32() % n;
  }
  // Up to `n` bytes (fewer at the end of the input).
  std::string_view Bytes(size_t n) noexcept {
    if (n > remaining()) n = remaining();
    const std::string_view out(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return out;
  }
  // A length byte (taken modulo max_len + 1; max_len <= 255), then the bytes.
  std::string_view String(size_t max_len) noexcept { return Bytes(U8() % (max_len + 1)); }
  std::string_view Rest() noexcept { return Bytes(remaining()); }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Writes what FuzzReader reads back: W.U16(x) then R.U16() gives x.
class FuzzWriter {
 public:
  FuzzWriter& U8(uint8_t v) {
    bytes_.push_back(static_cast<char>(v));
    return *this;
  }
  FuzzWriter& U16(uint16_t v) {
    return U8(static_cast<uint8_t>(v)).U8(static_cast<uint8_t>(v >> 8));
  }
  FuzzWriter& U32(uint32_t v) {
    return U16(static_cast<uint16_t>(v)).U16(static_cast<uint16_t>(v >> 16));
  }
  // Inverse of Below(n) for v < n.
  FuzzWriter& Below(uint32_t v, uint32_t n) {
    if (n == 0) return *this;
    if (n <= 256) return U8(static_cast<uint8_t>(v));
    if (n <= 65536) return U16(static_cast<uint16_t>(v));
    return U32(v);
  }
  FuzzWriter& Bytes(std::string_view b) {
    bytes_.append(b);
    return *this;
  }
  // Inverse of String(max_len) for s.size() <= max_len.
  FuzzWriter& String(std::string_view s) { return U8(static_cast<uint8_t>(s.size())).Bytes(s); }

  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
};

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_FUZZ_DATA_H_
