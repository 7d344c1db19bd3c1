// chash: the command-line face of the library.
#include <cstdio>
#include <string_view>

#include "cli_common.h"
#include "commands.h"

namespace {

constexpr const char* kUsage = R"(chash: nginx- and pingora-compatible consistent-hash rings

usage: chash COMMAND [OPTIONS]

commands:
  route  --servers FILE [--mode M] [--multiple K] [--keys FILE]
         Route keys (one a line, from FILE or stdin) and print "KEY,ADDR",
         ADDR exactly as written in the servers file.
  stats  --servers FILE [--mode M] [--multiple K] [--json]
         Points, collisions, memory, build time, CV predicted and measured.
  demo   [--nodes N] [--weight W] [--multiple K]
         The Cloudflare scenario on a built-in fleet (2048 x 625): the v1
         ring (160 per weight) beside the v2 ring (multiple 16).
  bench  [--nodes N] [--weight W] [--multiple K] [--target NAME] [--json]
         Measure this machine: build a pingora-v2 ring of N synthetic nodes
         (default 2048 x 625 x 16 = 20,480,000 points) and time lookups
         (single, dependent, batched, by key), CRC32, std::lower_bound and
         the memory floor. --target forces a SIMD target (AVX2, NEON, ...).

options:
  --mode M       nginx (default), pingora-v1 or pingora-v2
  --multiple K   points per weight unit, pingora-v2 only (default 160)

servers file: one "ADDR [WEIGHT]" a line; '#' comments; weight 1 by default,
0 = drained (keeps its id, owns no points). ADDR as in an nginx server line:
10.0.0.1:443, [::1]:7777, 127.0.0.2, unix:/path, name:port (pingora modes
need IP:PORT). Errors go to stderr with FILE:LINE; exit status 2.
)";

}  // namespace

int main(int argc, char** argv) {
  using chash::cli::Args;
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return chash::cli::kExitUsage;
  }
  const std::string_view command = argv[1];
  const Args args(argv + 2, argv + argc);
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  for (const std::string_view arg : args) {
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  if (command == "route") return chash::cli::RunRoute(args);
  if (command == "stats") return chash::cli::RunStats(args);
  if (command == "demo") return chash::cli::RunDemo(args);
  if (command == "bench") return chash::cli::RunBench(args);
  std::fprintf(stderr, "chash: unknown command '%.*s' (see chash --help)\n",
               static_cast<int>(command.size()), command.data());
  return chash::cli::kExitUsage;
}
