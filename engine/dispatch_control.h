// Forcing a SIMD target: for tests, fuzzers, benchmarks and `chash bench
// --target`, not for embedders (not in include/, not exported by the shared
// library). Link the CMake target chash_internal to include it.
#ifndef CHASH_ENGINE_DISPATCH_CONTROL_H_
#define CHASH_ENGINE_DISPATCH_CONTROL_H_

#include <string>
#include <string_view>
#include <vector>

#include "chash/dispatch.h"
#include "chash/status.h"

namespace chash {

// Targets that are both compiled in and supported by this CPU, best first.
// Found once per process; ForceTarget does not change the list. Allocates
// the names and may throw std::bad_alloc (nothing else): an internal helper
// for tests, fuzzers and benchmarks, not part of the public API.
std::vector<std::string> SupportedTargetNames();

// Makes every later lookup run on `name` (one of SupportedTargetNames());
// "" or "best" restores the best target, and so does an unknown name
// (kBadArgument). Safe while other threads look keys up: a lookup, or a
// whole batch, runs on either the previous target or the new one, and every
// target gives the same answers. Changes nothing of Highway's own state.
Status ForceTarget(std::string_view name);

}  // namespace chash

#endif  // CHASH_ENGINE_DISPATCH_CONTROL_H_
