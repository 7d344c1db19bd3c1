// libFuzzer target: the ring differential (ring_case.h). Engine and
// reference build the same flavor ring, then every lookup is compared on
// every SIMD target.
#include "ring_case.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chash::fuzz::RunRingDiff(chash::fuzz::DecodeRingCase(data, size));
  return 0;
}
