// The bounded-load capacity derived from its definition (failover.h), by a
// route that shares nothing with engine/routing/failover.cc: the balance factor's
// exact binary value read from its IEEE-754 bits, and arbitrary-precision
// integers (no 128-bit shortcuts, no saturation thresholds), so the only
// rounding is the one the definition asks for:
//
//   p        = c x 10^6 rounded to the nearest integer, halves away from 0
//              (c the double's exact value: 1.0000015 is stored as
//              1.00000149999999998..., so p = 1000001)
//   capacity = ceil(p x (total_load + 1) / (nodes x 10^6)), saturated to
//              2^64 - 1; 0 if nodes is 0 or c is not a finite number > 1.
#ifndef CHASH_FUZZ_CAPACITY_MODEL_H_
#define CHASH_FUZZ_CAPACITY_MODEL_H_

#include <cstdint>

namespace chash::fuzz {

uint64_t ModelBoundedLoadCapacity(uint64_t total_load, uint32_t nodes, double balance_factor);

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_CAPACITY_MODEL_H_
