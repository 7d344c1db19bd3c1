// How the engine reports allocation failure: every public call that
// allocates catches std::bad_alloc at its boundary and returns this, leaving
// its objects as they were (see the "Allocation" notes in include/chash/).
#ifndef CHASH_ENGINE_OUT_OF_MEMORY_H_
#define CHASH_ENGINE_OUT_OF_MEMORY_H_

#include <new>
#include <string_view>

#include "chash/status.h"

namespace chash::internal {

// kOutOfMemory, "out of memory: WHAT"; if that message cannot be allocated
// either, "out of memory" (15 bytes, held inline: no allocation).
Status OutOfMemory(std::string_view what) noexcept;
// "out of memory: WHAT (PATH)", falling back the same way.
Status OutOfMemory(std::string_view what, std::string_view path) noexcept;

// The one idiom at the boundary of a public call that allocates: the body
// (returning a Status or a Result, usually a ...OrThrow core that uses
// std::vector and std::string freely) runs here, and a std::bad_alloc
// escaping it becomes OutOfMemory(what[, path]). The body must leave its
// objects as they were when it throws (RAII for descriptors, mappings,
// files). A lambda whose core returns a plain value names the Result type:
//   return internal::CatchOutOfMemory("diffing two rings",
//       [&]() -> Result<RingDiff> { return DiffRingsOrThrow(a, b); });
template <typename Body>
auto CatchOutOfMemory(std::string_view what, Body&& body) -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return OutOfMemory(what);
  }
}

template <typename Body>
auto CatchOutOfMemory(std::string_view what, std::string_view path, Body&& body)
    -> decltype(body()) {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    return OutOfMemory(what, path);
  }
}

}  // namespace chash::internal

#endif  // CHASH_ENGINE_OUT_OF_MEMORY_H_
