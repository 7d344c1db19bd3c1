#include "capacity_model.h"

#include <cstring>
#include <vector>

namespace chash::fuzz {
namespace {

// A non-negative integer of any size: little-endian base-2^32 digits, no
// trailing zero digits (zero is the empty vector). Schoolbook arithmetic,
// bit-serial division: slow and obviously right, which is the point.
class Natural {
 public:
  explicit Natural(uint64_t value) {
    while (value != 0) {
      digits_.push_back(static_cast<uint32_t>(value));
      value >>= 32;
    }
  }

  size_t BitLength() const {
    if (digits_.empty()) return 0;
    size_t bits = 32 * (digits_.size() - 1);
    for (uint32_t top = digits_.back(); top != 0; top >>= 1) ++bits;
    return bits;
  }
  bool Bit(size_t i) const {
    return i / 32 < digits_.size() && (digits_[i / 32] >> (i % 32) & 1) != 0;
  }

  friend Natural operator+(const Natural& a, const Natural& b) {
    Natural sum(0);
    uint64_t carry = 0;
    for (size_t i = 0; i < a.digits_.size() || i < b.digits_.size() || carry != 0; ++i) {
      carry += uint64_t{a.Digit(i)} + b.Digit(i);
      sum.digits_.push_back(static_cast<uint32_t>(carry));
      carry >>= 32;
    }
    sum.Trim();
    return sum;
  }

  friend Natural operator*(const Natural& a, const Natural& b) {
    Natural product(0);
    product.digits_.assign(a.digits_.size() + b.digits_.size() + 1, 0);
    for (size_t i = 0; i < a.digits_.size(); ++i) {
      uint64_t carry = 0;
      for (size_t j = 0; j < b.digits_.size() || carry != 0; ++j) {
        carry += uint64_t{product.digits_[i + j]} + uint64_t{a.digits_[i]} * b.Digit(j);
        product.digits_[i + j] = static_cast<uint32_t>(carry);
        carry >>= 32;
      }
    }
    product.Trim();
    return product;
  }

  Natural ShiftedLeft(size_t bits) const {
    Natural out(0);
    for (size_t i = BitLength(); i-- > 0;) {
      if (Bit(i)) out.SetBit(i + bits);
    }
    return out;
  }
  Natural ShiftedRight(size_t bits) const {
    Natural out(0);
    for (size_t i = bits; i < BitLength(); ++i) {
      if (Bit(i)) out.SetBit(i - bits);
    }
    return out;
  }

  // floor(this / divisor), divisor > 0, by long division one bit at a time.
  Natural DividedBy(uint64_t divisor) const {
    Natural quotient(0);
    uint64_t remainder = 0;  // < divisor, and divisor < 2^63 here
    for (size_t i = BitLength(); i-- > 0;) {
      remainder = remainder << 1 | (Bit(i) ? 1 : 0);
      if (remainder >= divisor) {
        remainder -= divisor;
        quotient.SetBit(i);
      }
    }
    return quotient;
  }

  // The value if it is below 2^64, else nothing (false).
  bool ToU64(uint64_t& value) const {
    if (BitLength() > 64) return false;
    value = 0;
    for (size_t i = digits_.size(); i-- > 0;) value = value << 32 | digits_[i];
    return true;
  }

 private:
  uint32_t Digit(size_t i) const { return i < digits_.size() ? digits_[i] : 0; }
  void SetBit(size_t i) {
    if (digits_.size() <= i / 32) digits_.resize(i / 32 + 1, 0);
    digits_[i / 32] |= uint32_t{1} << (i % 32);
  }
  void Trim() {
    while (!digits_.empty() && digits_.back() == 0) digits_.pop_back();
  }

  std::vector<uint32_t> digits_;
};

}  // namespace

uint64_t ModelBoundedLoadCapacity(uint64_t total_load, uint32_t nodes, double balance_factor) {
  // IEEE-754 binary64: sign, 11 exponent bits (bias 1023), 52 fraction bits.
  uint64_t bits;
  std::memcpy(&bits, &balance_factor, sizeof bits);
  const bool negative = bits >> 63 != 0;
  const int exponent_field = static_cast<int>(bits >> 52 & 0x7FF);
  const uint64_t fraction = bits & ((uint64_t{1} << 52) - 1);
  if (nodes == 0 || exponent_field == 0x7FF || negative) return 0;  // NaN, inf, c < 0
  // c = significand x 2^exponent exactly (subnormals have no implicit 1).
  const uint64_t significand = exponent_field == 0 ? fraction : fraction | uint64_t{1} << 52;
  const int exponent = (exponent_field == 0 ? 1 : exponent_field) - 1075;
  if (exponent_field < 1023 || (exponent_field == 1023 && fraction == 0)) return 0;  // c <= 1

  // p = round(significand x 10^6 x 2^exponent), halves away from zero: when
  // shifting right by s, the rounding bit is bit s - 1.
  const Natural scaled = Natural(significand) * Natural(1000000);
  Natural ppm(0);
  if (exponent >= 0) {
    ppm = scaled.ShiftedLeft(static_cast<size_t>(exponent));
  } else {
    const auto shift = static_cast<size_t>(-exponent);
    ppm = scaled.ShiftedRight(shift);
    if (scaled.Bit(shift - 1)) ppm = ppm + Natural(1);
  }

  const Natural balls = Natural(total_load) + Natural(1);
  const uint64_t bins = uint64_t{nodes} * 1000000u;
  const Natural capacity = (ppm * balls + Natural(bins - 1)).DividedBy(bins);
  uint64_t value;
  return capacity.ToU64(value) ? value : UINT64_MAX;
}

}  // namespace chash::fuzz
