#pragma once
// The whole of a small file as bytes: servers files and key files. Not part
// of the public API (the library's users read their own files).

#include <string>

#include "chash/status.h"

namespace chash {

// kIoError naming the path and errno text. Throws std::bad_alloc (callers
// turn it into kOutOfMemory at the public boundary).
Result<std::string> ReadFileBytes(const std::string& path);

}  // namespace chash
