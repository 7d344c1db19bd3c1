// chash: the command-line face of the library.
#include <cstdio>
#include <new>
#include <string_view>

#include "chash/chash_c.h"
#include "cli_common.h"
#include "commands.h"

namespace {

constexpr const char* kUsage = R"(chash: nginx- and pingora-compatible consistent-hash rings

usage: chash COMMAND [OPTIONS]
       chash --version

commands:
  route  --servers FILE [--mode M] [--multiple K] [--keys FILE]
         [--down FILE] [--subset FILE]
         [--rollout F [--new-servers NEW] [--new-mode M2] [--new-multiple K2]
          [--scope in|out] [--seed N] [--allow-mismatch]]
         Route keys (one a line, from FILE or stdin) and print "KEY,ADDR",
         ADDR exactly as written in the servers file.
         --down FILE: servers that are down (one ADDR a line, as written in
         the servers file); each key goes where the ring of the other
         servers would send it, without building that ring.
         --subset FILE: route as the ring of only these servers would.
         --rollout F: a dual-ring migration: F (0..1 or 0%..100%) of the keys,
         picked by a stable hash of the key, go through the NEW ring (as in
         diff); prints "KEY,ADDR,old|new". --scope out sends every key to
         the old ring. Both rings must come from one backend snapshot
         (same servers and weights) unless --allow-mismatch.
  stats  --servers FILE [--mode M] [--multiple K] [--json] [--plot FILE.svg]
         Points, collisions, memory, build time, CV predicted and measured,
         and the ring's identity: fingerprint (flavour, multiple, tie-break,
         canonical nodes and weights; equal on every machine), points
         digest (the points as built) and backends (the server snapshot).
         JSON adds shares [{node, address, weight, hashes, ratio}] (ratio =
         share of the 2^32 hashes / weight share). --plot: each server's
         ratio, sorted, with the CV bands, as SVG.
  diff   --servers OLD [--new-servers NEW] [--mode M] [--multiple K]
         [--new-mode M2] [--new-multiple K2] [--rollout F] [--json]
         [--plot FILE.svg]
         The exact share of the 2^32 key hashes whose server changes from
         the OLD ring to the NEW one (merging their points, no sampling),
         per server (moved out, moved in), and expected at a rollout F
         (0..1 or 0%..100% of keys on the new ring). NEW defaults to OLD,
         M2 to M, K2 to K when both are pingora-v2. JSON: moved_fraction,
         moved_hashes, key_space, rollout, moved_fraction_at_rollout,
         old/new {servers, mode, multiple, points, fingerprint}, nodes
         [{backend, address, in_old, in_new, old_share, new_share,
         moved_out, moved_in}] (shares are fractions of the key space).
         --plot: per server, old and new share, moved out and in, as SVG.
  plan   --servers FILE [--mode M] [--multiple K] [--cv-target X] [--rings R]
         [--multiples K1,K2,...] [--max-points N] [--json] [--plot FILE.svg]
         For each point multiple K (pingora-v2 rings; default 1,2,4,...,1024,
         100 and 160 included), built for real: CV predicted and measured,
         collisions, bytes a ring, for R rings and for 1 ring + R masks, and
         the share of keys that move from the current ring (--mode/
         --multiple). Recommends the smallest K whose measured CV <= X
         (default 2%). Candidates over N generated points (default 2^25)
         are skipped. JSON: servers, nodes, cv_target, rings, mask_bytes,
         current {...}, candidates [{mode, multiple, points_generated,
         skipped, points, collisions, cv_predicted, cv_measured,
         max_share_ratio, bytes_per_ring, bytes_for_rings,
         bytes_one_ring_with_masks, moved_fraction}], recommended_multiple.
         --plot: CV measured and predicted against K (log), ring bytes on
         a second axis, the current ring, the recommended K and the
         target, as SVG.
  demo   [--nodes N] [--weight W] [--multiple K]
         The Cloudflare scenario on a built-in fleet (2048 x 625): the v1
         ring (160 per weight) beside the v2 ring (multiple 16).
  bench  [--nodes N] [--weight W] [--multiple K] [--target NAME] [--threads T]
         [--json]
         Measure this machine: build a pingora-v2 ring of N synthetic nodes
         (default 2048 x 625 x 16 = 20,480,000 points) and time lookups
         (single, dependent, batched, by key), CRC32, the baselines in the
         same memory (std::lower_bound, a branchless batch), one dependent
         cache line and the memory floor. --target forces a SIMD target
         (AVX2, NEON, ...); --threads T also times T threads on the ring.

  keygen --out BASE
         An Ed25519 key pair for signing snapshots: BASE (secret, mode 0600)
         and BASE.pub (public). Prints the key id.
  build  --servers FILE [--mode M] [--multiple K] [--subset NAME=FILE]...
         [--config-version N] [--label TEXT] [--sign BASE] [--no-index]
         --out RINGFILE
         build  --from OLD_RINGFILE --config-version N [...] --out RINGFILE
         Build the ring and write it as a snapshot file (atomically: a
         temporary file, fsync, rename). --subset NAME=FILE stores the
         servers listed in FILE as a named subset; --sign signs with the
         secret key BASE. The file stores the search index (4.7% of the
         columns), which every process mapping it then shares; --no-index
         leaves it out (each reader builds its own). --from republishes
         an existing snapshot's servers under a new, higher config
         version: the way to roll back.
  inspect RINGFILE [--trusted-key PUB]... [--json]
         Identity, sizes, versions, label, subsets, signature key id, and
         whether every check passes (exit 2 if one fails, naming it).
  verify RINGFILE [--trusted-key PUB]... [--min-version N]
         Exit 0 if every check passes (with a trusted key: the signature
         too), else 2 with the failed check.
  route/stats/diff --ring RINGFILE [--trusted-key PUB]... [--min-version N]
         Map a snapshot instead of building from --servers (route --subset
         NAME then names a subset stored in it; diff takes --new-ring).
         route --ring OLD --new-ring NEW --rollout F [--scope in|out]
         [--seed N] [--subset NAME]: the migration between two snapshots,
         "KEY,ADDR,old|new" (with --subset, the subset NAME stored in the
         ring the key takes; ADDR "-" if it holds no server with points):
         what the nginx module's chash_migrate picks first.

options:
  --mode M       nginx (default), pingora-v1, pingora-v2 or resty (OpenResty's
                 resty.chash: the first field is an opaque id, hashed as is)
  --multiple K   points per weight unit, pingora-v2 and resty only (default 160)
  --nginx-conf FILE --upstream NAME
                 route, stats, diff, plan: instead of --servers, the server
                 lines of upstream NAME (http or stream) in an nginx config
                 (includes followed), which must use `hash KEY consistent;`:
                 weight= counts, `down` servers stay on the ring and route
                 skips them as nginx does, backup is refused after `hash`.
                 diff and route --rollout: --new-nginx-conf FILE and/or
                 --new-upstream NAME for the new ring.

servers file: one "ADDR [WEIGHT]" a line; '#' comments; weight 1 by default,
0 = drained (keeps its id, owns no points). ADDR as in an nginx server line:
10.0.0.1:443, [::1]:7777, 127.0.0.2, unix:/path, name:port (pingora modes
need IP:PORT). Errors go to stderr with FILE:LINE; exit status 2.
On a terminal, long phases (ring builds, exact shares, diffs) show their
progress on stderr; never when stderr is not a terminal. Every --plot SVG
carries its command line and the values drawn (<metadata>, as --json).
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
  if (command == "--version" || command == "version") {
    // The library's version (chash_version), which is this program's.
    std::printf("chash %s\n", chash_version());
    return 0;
  }
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
    return chash::cli::kExitUsage;
  }
  std::fprintf(stderr, "chash: unknown command '%.*s' (see chash --help)\n",
               static_cast<int>(command.size()), command.data());
  return chash::cli::kExitUsage;
}
