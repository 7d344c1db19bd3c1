// The `chash` tool's help: one text per command, the single source of
// `chash --help`, `chash COMMAND --help`, `chash help COMMAND` and the man
// page chash(1), which help2man makes from `chash help --all` at build time.
#ifndef CHASH_TOOLS_USAGE_H_
#define CHASH_TOOLS_USAGE_H_

#include <cstdio>
#include <string_view>

namespace chash::cli {

// The overview: every command's synopsis, and where each one's help is.
void PrintOverview(std::FILE* out);

// COMMAND's usage, description and every option it takes; false (nothing
// printed) if there is no such command.
bool PrintCommandUsage(std::string_view command, std::FILE* out);

// The overview, then every command's usage: the text of chash(1).
void PrintAllUsage(std::FILE* out);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_USAGE_H_
