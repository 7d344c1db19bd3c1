// How the engine reports allocation failure: every public call that
// allocates catches std::bad_alloc at its boundary and returns this, leaving
// its objects as they were (see the "Allocation" notes in include/chash/).
#ifndef CHASH_ENGINE_OUT_OF_MEMORY_H_
#define CHASH_ENGINE_OUT_OF_MEMORY_H_

#include <string_view>

#include "chash/status.h"

namespace chash::internal {

// kOutOfMemory, "out of memory: WHAT"; if that message cannot be allocated
// either, "out of memory" (15 bytes, held inline: no allocation).
Status OutOfMemory(std::string_view what) noexcept;

}  // namespace chash::internal

#endif  // CHASH_ENGINE_OUT_OF_MEMORY_H_
