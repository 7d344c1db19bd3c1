// libFuzzer target: the raw-points differential (points_case.h).
#include "points_case.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chash::fuzz::RunPointsDiff(chash::fuzz::DecodePointsCase(data, size));
  return 0;
}
