// The state directory fuzzer: whatever another user left in a reloader's
// state directory (SECURITY.md), a share record is read wholly or not at
// all, and a reloader whose watched file is valid starts, checks and
// catches up without crashing, serving either that file's ring or a last
// good file that passes every check itself.
#ifndef CHASH_FUZZ_STATE_RECORD_CHECK_H_
#define CHASH_FUZZ_STATE_RECORD_CHECK_H_

#include <cstddef>
#include <cstdint>
#include <string>

namespace chash::fuzz {

// Input: U8 mode, then:
//   mode 0: a share record's text. If ParseShareRecord takes it, the
//     record formatted again parses to the same record.
//   mode 1: U16 (little-endian) n, n bytes of BASE.share, the rest BASE.good;
//     a reloader of a valid watched file (version 5) starts in a fresh
//     state directory holding them, then checks and catches up. It must
//     start; a ring other than the watched file's must be the last good
//     file's, which must then load with every check on its own.
// Returns "parsed", "refused", "served path" or "served good" (for the
// named seeds).
std::string RunStateRecordCheck(const uint8_t* data, size_t size);

// The share record and watched file the seeds start from.
std::string StateSeedShareRecord();
std::string StateSeedSnapshot(uint64_t config_version);

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_STATE_RECORD_CHECK_H_
