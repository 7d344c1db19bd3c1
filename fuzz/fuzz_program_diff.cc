// libFuzzer target: the other programs' rings (program_case.h). Engine and
// reference build the same haproxy, ketama-md5, varnish-shard, envoy-ring
// or envoy-maglev ring, then every lookup is compared on every SIMD target.
#include "program_case.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chash::fuzz::RunProgramDiff(chash::fuzz::DecodeProgramCase(data, size));
  return 0;
}
