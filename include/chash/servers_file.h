// The servers file, one server a line (the `chash` tool reads these):
//
//   # comment            ('#' starts a comment anywhere on a line)
//   10.0.0.1:443 100     ADDR [WEIGHT]; weight defaults to 1, 0 = drained
//   [::1]:7777
//   unix:/run/app.sock 2
//
// Blank lines are ignored; a trailing '\r' is dropped (CRLF files).
#ifndef CHASH_SERVERS_FILE_H_
#define CHASH_SERVERS_FILE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chash/ring.h"
#include "chash/status.h"

// Public API: exported from libchash.so (built with hidden visibility).
#pragma GCC visibility push(default)
namespace chash {

struct ServerEntry {
  std::string address;  // as written
  uint32_t weight = 1;
  size_t line = 0;      // 1-based line in the file
};

// Allocation: each call allocates its result, and reports kOutOfMemory if
// it cannot.

// Splits the text into entries. Errors (kBadWeight, kBadArgument) name
// "SOURCE:LINE". Addresses are checked later, by the ring flavor.
Result<std::vector<ServerEntry>> ParseServersText(std::string_view text,
                                                  std::string_view source_name);
// Reads and parses a file (kIoError if it cannot be read).
Result<std::vector<ServerEntry>> ReadServersFile(const std::string& path);

// Adds every entry to a RingBuilder and builds; any error is prefixed with
// "SOURCE:LINE: " of the entry that caused it.
Result<Ring> BuildRingFromServers(const std::vector<ServerEntry>& servers,
                                  const RingOptions& options, std::string_view source_name);

}  // namespace chash
#pragma GCC visibility pop

#endif  // CHASH_SERVERS_FILE_H_
