// libFuzzer target: the state directory's records (state_record_check.h).
#include "state_record_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  chash::fuzz::RunStateRecordCheck(data, size);
  return 0;
}
