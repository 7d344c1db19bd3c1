// libFuzzer target: the snapshot loader (snapshot_check.h).
#include "snapshot_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chash::fuzz::RunSnapshotCheck(data, size);
  return 0;
}
