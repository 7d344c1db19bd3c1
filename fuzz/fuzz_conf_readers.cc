// libFuzzer target: the chash tool's config readers (nginx, HAProxy,
// nutcracker and their YAML layer) on any bytes (conf_readers_check.h).
#include "conf_readers_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chash::fuzz::RunConfReadersCheck(data, size);
  return 0;
}
