// chash: the command-line face of the library.
#include <cstdio>
#include <new>
#include <string_view>

#include "chash/chash_c.h"
#include "cli_common.h"
#include "commands.h"
#include "usage.h"

int main(int argc, char** argv) {
  using chash::cli::Args;
  using chash::cli::kExitUsage;
  if (argc < 2) {
    chash::cli::PrintOverview(stderr);
    return kExitUsage;
  }
  const std::string_view command = argv[1];
  const Args args(argv + 2, argv + argc);
  if (command == "--version" || command == "version") {
    // The library's version (chash_version), which is this program's.
    std::printf("chash %s\n", chash_version());
    return 0;
  }
  if (command == "--help" || command == "-h" || command == "help") {
    if (args.empty()) {
      chash::cli::PrintOverview(stdout);
      return 0;
    }
    if (args.size() == 1 && args[0] == "--all") {
      chash::cli::PrintAllUsage(stdout);
      return 0;
    }
    if (args.size() > 1) {
      std::fputs("usage: chash help [COMMAND | --all]\n", stderr);
      return kExitUsage;
    }
    if (chash::cli::PrintCommandUsage(args[0], stdout)) return 0;
    std::fprintf(stderr, "chash help: no command '%.*s' (see chash --help)\n",
                 static_cast<int>(args[0].size()), args[0].data());
    return kExitUsage;
  }
  for (const std::string_view arg : args) {
    if (arg == "--help" || arg == "-h") {
      if (chash::cli::PrintCommandUsage(command, stdout)) return 0;
      break;  // an unknown command: said below
    }
  }
  // The library reports allocation failure as kOutOfMemory errors, which the
  // commands print with what they were building; this catches the CLI's own
  // allocations (keys, output lines), so that running out of memory ends
  // with one line and exit status 2, never std::terminate.
  try {
    if (command == "route") return chash::cli::RunRoute(args);
    if (command == "stats") return chash::cli::RunStats(args);
    if (command == "demo") return chash::cli::RunDemo(args);
    if (command == "diff") return chash::cli::RunDiff(args);
    if (command == "plan") return chash::cli::RunPlan(args);
    if (command == "bench") return chash::cli::RunBench(args);
    if (command == "keygen") return chash::cli::RunKeygen(args);
    if (command == "build") return chash::cli::RunBuild(args);
    if (command == "inspect") return chash::cli::RunInspect(args);
    if (command == "verify") return chash::cli::RunVerify(args);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "chash %.*s: out of memory\n", static_cast<int>(command.size()),
                 command.data());
    return kExitUsage;
  }
  std::fprintf(stderr, "chash: unknown command '%.*s' (see chash --help)\n",
               static_cast<int>(command.size()), command.data());
  return kExitUsage;
}
