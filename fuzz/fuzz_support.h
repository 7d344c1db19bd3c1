// What every chash fuzzer shares: how a mismatch is reported, and the loop
// over the SIMD targets.
#ifndef CHASH_FUZZ_FUZZ_SUPPORT_H_
#define CHASH_FUZZ_FUZZ_SUPPORT_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "chash/status.h"
#include "layout/search_index.h"

namespace chash::fuzz {

// Fuzzed rings stay under 100,000 points, below kInterpolationMinPoints:
// make every ring built after this take the single-lookup window, so the
// window is what the differentials check (batches, the window's fallbacks
// and batch tails still descend).
inline void ReachTheSingleLookupWindow() { internal::SetInterpolationMinPoints(0); }

// Prints "chash fuzz mismatch: WHAT" and the case description to stderr, then
// aborts: libFuzzer keeps the input as a crash-* artifact, the replay main
// (ctest) fails. A finding is never swallowed.
[[noreturn]] void Fail(const std::string& what, const std::string& case_description);

// A non-OK Status must be well formed: a known code, a message, and
// ToString() == "<code name>: <message>". Fail()s otherwise.
void CheckErrorFormat(const Status& status, const std::string& case_description);

// Text with control and non-ASCII bytes as \xNN, in single quotes.
std::string Printable(std::string_view bytes);
std::string Hex32(uint32_t value);  // "0x0000abcd"

// line(0) .. line(count - 1) for a case description; past head + 8 lines,
// the first `head`, "  ...", and the last 4.
std::string ElidedLines(size_t count, size_t head, const std::function<std::string(size_t)>& line);

// Every SIMD target this CPU supports (chash::SupportedTargetNames, cached).
const std::vector<std::string>& Targets();

// Runs `body` with each target of Targets() forced in turn (ForceTarget;
// not thread-safe, fine in a fuzzer), checking that the forced target is
// the one that runs, then restores the default dispatch.
void ForEachTarget(const std::function<void(const std::string& target)>& body,
                   const std::string& case_description);

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_FUZZ_SUPPORT_H_
