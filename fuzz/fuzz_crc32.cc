// libFuzzer target: every CRC32 implementation against zlib (byte_checks.h).
#include "byte_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chash::fuzz::RunCrc32Check(data, size);
  return 0;
}
