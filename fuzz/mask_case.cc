#include "mask_case.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "chash/ring.h"

namespace chash::fuzz {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

bool MaskCase::AllAvailable(uint32_t num_nodes) const {
  for (uint32_t id = 0; id < num_nodes; ++id) {
    if (!IsAvailable(id)) return false;
  }
  return true;
}

std::string MaskCase::Describe() const {
  uint32_t up = 0;
  std::string ids;
  for (uint32_t id = 0; id < available.size(); ++id) {
    if (!available[id]) continue;
    // Appended in two steps: `" " + std::to_string(id)` trips g++ 12's
    // -Wrestrict false positive (GCC bug 105329) under -O2.
    if (++up <= 16) ids.append(" ").append(std::to_string(id));
  }
  char factor[32];
  std::snprintf(factor, sizeof factor, "%.9g", balance_factor);
  return "mask of " + std::to_string(available.size()) + " ids, " + std::to_string(up) +
         " available:" + ids + (up > 16 ? " ..." : "") + "; " + std::to_string(loads.size()) +
         " loads, capacity " + std::to_string(capacity) + ", balance factor " + factor + "\n";
}

MaskCase DecodeMaskCase(FuzzReader& r, uint32_t num_nodes) {
  MaskCase c;
  const uint8_t m = r.U8();
  uint32_t size = num_nodes;
  switch ((m >> 4) & 3) {
    case 1:
      size = num_nodes - std::min<uint32_t>(num_nodes, 1u + r.U8());
      break;
    case 2:
      size = num_nodes + 1 + r.U8();
      break;
    case 3:
      size = 0;
  }
  size = std::min(size, kMaxNodes);  // NodeMask clamps there too
  c.available.assign(size, false);
  const uint32_t any = std::max<uint32_t>(size, 1);
  switch (m & 15) {
    case 0:
      c.available.assign(size, true);
      break;
    case 1:
      break;
    case 2: {
      c.available.assign(size, true);
      const uint32_t down = r.U16() % any;
      if (down < size) c.available[down] = false;
      break;
    }
    case 3: {
      const uint32_t up = r.U16() % any;
      if (up < size) c.available[up] = true;
      break;
    }
    case 4:
      for (uint32_t byte = 0; byte < (size + 7) / 8; ++byte) {
        const uint8_t bits = r.U8();
        for (uint32_t bit = 0; bit < 8 && byte * 8 + bit < size; ++bit) {
          c.available[byte * 8 + bit] = (bits >> bit) & 1;
        }
      }
      break;
    case 5:
    case 6:
      for (uint32_t id = (m & 15) - 5; id < size; id += 2) c.available[id] = true;
      break;
    case 7:
      for (uint32_t id = 0; id < size / 2; ++id) c.available[id] = true;
      break;
    default: {
      const uint32_t seed = r.U32();
      const uint8_t density = r.U8();
      for (uint32_t id = 0; id < size; ++id) {
        c.available[id] = (SplitMix(uint64_t{seed} << 32 | id) & 255) < density;
      }
    }
  }
  // Through the API: all-available masks from the constructor, others bit
  // by bit from an all-unavailable one.
  if ((m & 15) == 0) {
    c.mask = NodeMask(size, true);
  } else {
    c.mask = NodeMask(size, false);
    for (uint32_t id = 0; id < size; ++id) {
      if (c.available[id]) c.mask.Set(id, true);
    }
  }

  const uint8_t l = r.U8();
  const uint32_t load_seed = r.U32();
  const size_t loads_size = (l & 3) == 0   ? num_nodes
                            : (l & 3) == 1 ? num_nodes / 2
                            : (l & 3) == 2 ? 0
                                           : size_t{num_nodes} + 3;
  const uint64_t all_same = (l >> 2 & 3) == 3 ? r.U16() : 0;
  c.loads.resize(loads_size);
  for (size_t id = 0; id < loads_size; ++id) {
    const uint64_t x = SplitMix(uint64_t{load_seed} << 32 | id);
    switch (l >> 2 & 3) {
      case 0:
        c.loads[id] = x % 4;
        break;
      case 1:
        c.loads[id] = x % 1000;
        break;
      case 2:
        c.loads[id] = UINT64_MAX - x % 3;
        break;
      default:
        c.loads[id] = all_same;
    }
  }
  const uint8_t k = r.U8();
  c.capacity = k == 0 ? 0 : k == 1 ? 1 : k == 2 ? UINT64_MAX : r.U16();
  const uint8_t b = r.U8();
  static constexpr double kFactors[8] = {
      1.0, std::numeric_limits<double>::quiet_NaN(), HUGE_VAL, 0.5, -3.0, 1e12, 2e9, 1.000000001};
  if (b < 8) {
    c.balance_factor = kFactors[b];
  } else if (b < 192) {
    c.balance_factor = 1.0 + r.U16() / 1000.0;
  } else if (b < 224) {
    c.balance_factor = 1.0 + r.U16() / 1e7;  // 1.0000015: a half part per million
  } else {
    const uint64_t bits = uint64_t{r.U32()} << 32 | r.U32();
    std::memcpy(&c.balance_factor, &bits, sizeof bits);  // any double, NaNs included
  }
  return c;
}

std::string MaskCaseWriter::Bytes() const {
  FuzzWriter w;
  w.U8(static_cast<uint8_t>((which & 15) | (size_mode & 3) << 4));
  if (size_mode == 1 || size_mode == 2) w.U8(size_delta);
  if ((which & 15) == 2 || (which & 15) == 3) w.U16(id);
  w.U8(loads_mode).U32(load_seed);
  if ((loads_mode >> 2 & 3) == 3) w.U16(0);
  w.U8(capacity_mode);
  if (capacity_mode > 2) w.U16(capacity);
  w.U8(factor_mode);
  if (factor_mode >= 8 && factor_mode < 192) w.U16(factor_thousandths);
  return w.bytes();
}

}  // namespace chash::fuzz
