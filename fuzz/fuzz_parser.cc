// libFuzzer target: address and servers-file parsing against an independent
// model of what nginx and pingora accept and hash (byte_checks.h).
#include "byte_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chash::fuzz::RunParserCheck(data, size);
  return 0;
}
