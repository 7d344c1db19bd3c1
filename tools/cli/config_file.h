// Reading another program's config file for the readers (nginx_conf.cc,
// haproxy_conf.cc, yaml_document.cc): a regular file, whole, up to a size.
#ifndef CHASH_TOOLS_CLI_CONFIG_FILE_H_
#define CHASH_TOOLS_CLI_CONFIG_FILE_H_

#include <cstddef>
#include <string>

#include "chash/status.h"

namespace chash::cli {

// The bytes of the regular file at `path`, at most `max_bytes` of them. It
// is opened without blocking and checked before any read, so a FIFO, a
// device (/dev/zero) or a directory is refused, never read; the read stops
// at the size fstat gave (a file growing meanwhile is read as it was).
// Errors carry no path (the caller names the file as its program does):
//   kIoError      open() failed: strerror text, errno in `os_error`;
//                 or a read failed (`os_error` 0)
//   kBadArgument  "not a regular file: ..." or "larger than N MiB: ..."
Result<std::string> ReadConfigFile(const std::string& path, size_t max_bytes, int& os_error);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_CONFIG_FILE_H_
