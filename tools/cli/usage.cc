#include "usage.h"

#include "chash/address.h"
#include "flavor_options.h"  // engine/: the program options, as rows
#include "flavors.h"  // engine/: the flavor rows

#include <algorithm>
#include <array>
#include <new>
#include <string>
#include <vector>
#include <utility>

namespace chash::cli {
namespace {

// Option blocks that several commands share, each written once.
constexpr std::string_view kServersInput = R"(
  --servers FILE        the servers file: one "ADDR [WEIGHT]" a line (see
                        chash --help)
  --nginx-conf FILE     instead of --servers: an nginx config read as nginx
                        1.22 reads it (includes followed; what nginx
                        refuses is refused, naming the line), with --upstream
  --upstream NAME       the upstream (http or stream) whose server lines
                        make the ring; it must use `hash KEY consistent;`.
                        weight= sets the points, `down` servers keep their
                        points, `backup` after `hash` is refused
)";

// --flavor's list of names is the flavor table's (PrintUsage writes it).
constexpr std::string_view kRingShape = R"(
  --flavor F            the ring's program (default nginx); resty is
                        OpenResty's resty.chash (the first field of a
                        servers line is an opaque id, hashed as is); the
                        flavors after resty are the other programs' rings
                        (snapshot format 1.4; plan tries their own
                        setting); --mode F is the old spelling, still
                        accepted
  --multiple K          points per weight unit, pingora-v2 and resty only
                        (default 160)
)";

// The other programs' rings: the flavor table's options come first,
// written from the table (ProgramOptionsUsage); then these. An option of
// another flavor is an error.
constexpr std::string_view kProgramRing = R"(
  --use-hostname-for-hashing  envoy-ring, envoy-maglev: hash a server's
                        hostname= instead of ADDR (a hash_key= wins over both)
  --haproxy-cfg FILE    instead of --servers (route, stats, diff, build): a
                        haproxy.cfg read as HAProxy 2.6 reads it (quotes,
                        .if blocks, named defaults; what HAProxy refuses is
                        refused, naming the line), with --backend
  --backend NAME        the backend (or listen) section whose server lines
                        (weight, id, backup, disabled, with the
                        default-server settings in effect at each),
                        hash-type consistent and balance make the ring, its
                        defaults (or `from NAME`) inherited; a key is the
                        bytes HAProxy hashes (--balance uri takes a whole
                        target)
  --nutcracker-yml FILE instead of --servers (route, stats, diff, build):
                        twemproxy's YAML config read as nutcracker 0.5.0
                        reads it (what it refuses is refused, naming the
                        line), with --pool
  --pool NAME           the pool whose servers (HOST:PORT:WEIGHT [NAME]),
                        hash and hash_tag make the ring (distribution:
                        ketama, the default); route prints HOST:PORT
  --envoy-cluster FILE  instead of --servers (route, stats, diff, build): Envoy
                        clusters in YAML (a cluster, `clusters:` or a
                        bootstrap)
  --cluster NAME        the RING_HASH or MAGLEV cluster to read (default:
                        the only one): its lb config and lb_endpoints
                        (weights, hash_key metadata, hostname); route prints
                        ADDRESS:PORT
)";

constexpr std::string_view kSnapshotInput = R"(
  --ring RINGFILE       map a snapshot file instead of building the ring
  --trusted-key PUB     (repeatable) refuse the snapshot unless signed by
                        one of these public keys (from chash keygen)
  --min-version N       refuse a snapshot whose config version is below N
  --threads N           load on at most N threads (default: the CPUs this
                        process may use)
  --max-size BYTES      refuse a larger snapshot before reading it (default
                        2 GiB)
)";

constexpr std::string_view kNewRing = R"(
  --new-servers NEW     the new ring's servers file (default: --servers)
  --new-nginx-conf FILE the new ring's nginx config (default: --nginx-conf)
  --new-upstream NAME   the new ring's upstream (default: --upstream)
  --new-flavor F2       the new ring's flavor (default: --flavor; the old
                        spelling --new-mode is still accepted)
  --new-multiple K2     the new ring's multiple, pingora-v2 and resty only
                        (default: --multiple when both rings take one)
  --new-ring RINGFILE   the new ring from a snapshot file (with --ring)
)";

constexpr std::string_view kFleetShape = R"(
  --nodes N             synthetic servers 10.0.x.y:443 (default 2048)
  --weight W            weight of each (default 625)
  --multiple K          pingora-v2 points per weight unit (default 16)
)";

// The option blocks several commands share, printed in this order around
// the command's own options (kNewRing after them).
enum Block : unsigned {
  kTakesServers = 1u << 0,   // kServersInput
  kTakesSnapshot = 1u << 1,  // kSnapshotInput
  kTakesShape = 1u << 2,     // kRingShape
  kTakesProgram = 1u << 3,   // kProgramRing
  kTakesFleet = 1u << 4,     // kFleetShape
  kTakesNewRing = 1u << 5,   // kNewRing
};

struct Command {
  std::string_view name;
  std::string_view synopsis;     // after "chash NAME"
  std::string_view summary;      // one line, for the overview
  std::string_view description;  // what it does and prints
  std::string_view options;      // its own options
  unsigned blocks = 0;           // the shared option blocks it takes (Block)
};

constexpr std::array kCommands = {
    Command{
        .name = "route",
        .synopsis = "(--servers FILE | --nginx-conf FILE --upstream NAME | --ring RINGFILE)\n"
                    "       [--flavor F] [--multiple K] [flavor options] [--keys FILE] [--down FILE]\n"
                    "       [--subset FILE|NAME] [--balance B] [--alt K] [--by-hash]\n"
                    "       [--rollout F [--new-servers NEW | --new-ring RINGFILE] [--new-flavor F2]\n"
                    "        [--new-multiple K2] [--scope in|out] [--seed N] [--allow-mismatch]]",
        .summary = "route keys to servers",
        .description =
            R"(Reads keys, one a line (the key is the line's bytes without its "\n"), and
prints "KEY,ADDR" a line, ADDR exactly as written in the servers file. With
--rollout, a dual-ring migration: prints "KEY,ADDR,old" or "KEY,ADDR,new".
With --ring OLD --new-ring NEW --rollout F, the migration between two
snapshots (with --subset NAME, the subset NAME stored in the ring the key
takes; ADDR "-" if it holds no server with points): the first pick of the
nginx module's chash_migrate. Keys whose every candidate is down are
counted on stderr.)",
        .options = R"(
  --keys FILE           the keys (default: stdin)
  --down FILE           servers that are down, one ADDR a line as written in
                        the servers file: each key goes where the ring of
                        the other servers would send it, without building it
  --subset FILE|NAME    route as the ring of only the servers in FILE (with
                        --ring: of the subset NAME stored in the snapshot)
  --rollout F           F (0..1 or 0%..100%) of the keys, picked by a stable
                        hash of the key, take the new ring (options below)
  --scope in|out        out: every key takes the old ring (default in)
  --seed N              seed of the rollout's key hash (default 0)
  --allow-mismatch      allow old and new rings from different server sets
                        (rolling back would then not restore the old routes)
  --balance B           haproxy: what HAProxy hashes of the key: uri (the
                        path before '?'), uri-whole, hdr (the first
                        comma-separated value, blanks trimmed)
  --alt K               varnish-shard: Varnish's alt=K, the K-th other
                        backend up the ring
  --by-hash             each key is its hash in decimal (Varnish's by=KEY
                        with an integer, Envoy's request hash)
)",
        .blocks = kTakesServers | kTakesSnapshot | kTakesShape | kTakesProgram | kTakesNewRing,
    },
    Command{
        .name = "stats",
        .synopsis = "(--servers FILE | --nginx-conf FILE --upstream NAME | --ring RINGFILE)\n"
                    "       [--flavor F] [--multiple K] [flavor options] [--json] [--plot FILE.svg]",
        .summary = "points, collisions, memory, evenness and identity of a ring",
        .description =
            R"(Builds (or maps) the ring and prints its points, collisions, memory, build
time, the CV of load share predicted and measured from exact shares, and its
identity: fingerprint (equal fingerprints route every key alike), points
digest (the points as built) and backends (the servers and weights).)",
        .options = R"(
  --json                one JSON object (fields in tools/cli/README.md),
                        with every server's exact share
  --plot FILE.svg       each server's share over its weight share, sorted,
                        with the CV bands
)",
        .blocks = kTakesServers | kTakesSnapshot | kTakesShape | kTakesProgram,
    },
    Command{
        .name = "diff",
        .synopsis = "(--servers OLD | --nginx-conf FILE --upstream NAME | --ring RINGFILE)\n"
                    "       [--new-servers NEW | --new-nginx-conf FILE | --new-upstream NAME | --new-ring RINGFILE]\n"
                    "       [--flavor F] [--multiple K] [flavor options] [--new-flavor F2] [--new-multiple K2]\n"
                    "       [--rollout F] [--json] [--plot FILE.svg]",
        .summary = "the exact share of keys that moves between two rings",
        .description =
            R"(Merges the points of the old and the new ring (no sampling) and prints the
share of the 2^32 key hashes whose server changes, per server (moved out,
moved in), and the share expected to move at a rollout. Servers are matched
by address, so the rings may differ in flavor, multiple, order and members.)",
        .options = R"(
  --new-ring RINGFILE   the new ring from a snapshot file
  --rollout F           also print the share that moves with F (0..1 or
                        0%..100%) of the keys on the new ring
  --json                one JSON object (fields in tools/cli/README.md)
  --plot FILE.svg       per server, old and new share, moved out and in
)",
        .blocks = kTakesServers | kTakesSnapshot | kTakesShape | kTakesProgram | kTakesNewRing,
    },
    Command{
        .name = "plan",
        .synopsis = "(--servers FILE | --nginx-conf FILE --upstream NAME) [--flavor F] [--multiple K]\n"
                    "       [--cv-target X] [--rings R] [--multiples K1,K2,...] [--max-points N]\n"
                    "       [--json] [--plot FILE.svg]\n"
                    "  chash plan (--servers FILE --flavor PROGRAM [flavor options] | --haproxy-cfg ...)\n"
                    "       [--cv-target X] [--json] [--plot FILE.svg]",
        .summary = "choose a point multiple for this fleet",
        .description =
            R"(Builds a pingora-v2 ring for each candidate multiple K and prints its CV
predicted and measured, collisions, bytes for one ring, for R rings and for
one ring with R masks, and the share of keys that moves from the current ring
(--flavor, --multiple); then recommends the smallest K whose measured CV is
within the target. On another program's ring (haproxy, ketama-md5,
varnish-shard, envoy-ring, envoy-maglev, or one read from its config) it
tries that program's own setting instead: HAProxy's weights scaled, Varnish's
replicas, Envoy's minimum_ring_size, Maglev's table_size, and for
libmemcached (whose 160 points a server are fixed) pingora-v2 multiples; each
row prints the CV, the max and min share over weight share, the program's
bytes, chash's bytes and the keys that move.)",
        .options = R"(
  --cv-target X         the CV to meet, as 0.02 or 2% (default 2%)
  --rings R             how many rings of this fleet to size (default 1)
  --multiples K1,K2,... the candidates (default 1, 2, 4, ... 1024, 100, 160)
  --max-points N        skip candidates over N generated points (default
                        2^25)
  --json                one JSON object (fields in tools/cli/README.md)
  --plot FILE.svg       CV measured and predicted against K, ring bytes,
                        the current ring, the recommended K and the target
)",
        .blocks = kTakesServers | kTakesShape,
    },
    Command{
        .name = "demo",
        .synopsis = "[--nodes N] [--weight W] [--multiple K]",
        .summary = "the v1 ring beside the v2 ring of a built-in fleet",
        .description =
            R"(Builds the pingora-v1 ring (160 points per weight unit) and the pingora-v2
ring of a built-in fleet (2,048 servers x weight 625 by default) and
compares their points, collisions, memory and evenness.)",
        .options = {},
        .blocks = kTakesFleet,
    },
    Command{
        .name = "bench",
        .synopsis = "[--nodes N] [--weight W] [--multiple K] [--target NAME] [--threads T] [--json]",
        .summary = "measure lookups and builds on this machine",
        .description =
            R"(Builds a pingora-v2 ring of a synthetic fleet (20,480,000 points by
default), checks every lookup path against std::lower_bound, and prints the
build time and the median of 5 rounds of each lookup (single, dependent,
batched, by key), CRC32, and the baselines in the same huge-page memory.)",
        .options = R"(
  --target NAME         force a SIMD target (AVX2, NEON, ...)
  --threads T           also time T threads on the one ring (default 1)
  --json                one JSON object (fields in tools/cli/README.md)
)",
        .blocks = kTakesFleet,
    },
    Command{
        .name = "keygen",
        .synopsis = "--out BASE",
        .summary = "make an Ed25519 key pair for signing snapshots",
        .description =
            R"(Writes the secret key BASE (mode 0600) and the public key BASE.pub, and
prints the key id.)",
        .options = R"(
  --out BASE            where to write the key files
)",
    },
    Command{
        .name = "build",
        .synopsis = "--servers FILE [--flavor F] [--multiple K] [--subset NAME=FILE]...\n"
                    "       [--config-version N | --above SERVED] [--expires WHEN] [--label TEXT]\n"
                    "       [--sign BASE] [--no-index] [--allow-empty] [--allow-expired]\n"
                    "       --out RINGFILE\n"
                    "   or: chash build --from OLD_RINGFILE (--above SERVED | --config-version N)\n"
                    "       [--expires WHEN] [--label TEXT] [--sign BASE] --out RINGFILE",
        .summary = "write a ring as a (signed) snapshot file",
        .description =
            R"(Builds the ring and writes it as a snapshot file, atomically (a temporary
file beside RINGFILE, fsync, rename): readers see the old file or the new
one. --from republishes an existing snapshot's servers under a new, higher
config version: the way to roll back, in one command with --above (readers
never go back to a lower version, so an old file as it was is refused). A
ring with no points (every weight 0) is refused unless --allow-empty: pushed,
it would route no key.)",
        .options = R"(
  --servers FILE        the servers file
  --out RINGFILE        the snapshot file to write
  --subset NAME=FILE    (repeatable) store the servers of FILE as subset NAME
  --config-version N    the operator's version of this ring (default 0)
  --above SERVED        the config version one above the snapshot SERVED's
                        (instead of --config-version)
  --expires WHEN        readers refuse the file from then on (format 1.3): a
                        duration (30d, 12h, 90m, 3600s) or a UTC time
                        (2026-12-31T00:00:00Z, @UNIXSECONDS or UNIXSECONDS);
                        signed with it
  --allow-expired       write a file whose expiry has passed (to test readers)
  --allow-empty         write a ring with no points all the same
  --label TEXT          a label stored in the file
  --sign BASE           sign with the secret key BASE (from chash keygen)
  --no-index            leave the search index out of the file (each reader
                        then builds its own; by default it is stored, about
                        4.7% of the columns, and shared by every process
                        that maps the file)
  --from OLD_RINGFILE   take the servers, flavor and subsets of a snapshot
                        (the other programs' rings: their options and the
                        servers' ids and names too)
)",
        .blocks = kTakesShape | kTakesProgram,
    },
    Command{
        .name = "inspect",
        .synopsis = "RINGFILE [--trusted-key PUB]... [--min-version N] [--threads N]\n"
                    "       [--max-size BYTES] [--json]",
        .summary = "show a snapshot file and check it",
        .description =
            R"(Prints a snapshot's identity, sizes, config version, label, creation time,
subsets, signing key id and every check's result; exit status 2 if a check
fails, naming it.)",
        .options = R"(
  --trusted-key PUB     (repeatable) check the signature against these keys
  --min-version N       check that the config version is at least N
  --threads N           hash on at most N threads (default: the CPUs this
                        process may use)
  --max-size BYTES      refuse a larger file before reading it (default 2 GiB)
  --json                one JSON object
)",
    },
    Command{
        .name = "verify",
        .synopsis = "RINGFILE [--trusted-key PUB]... [--min-version N] [--threads N]\n"
                    "       [--max-size BYTES]",
        .summary = "check a snapshot file before trusting it",
        .description =
            R"(Exit status 0 if every check passes (with --trusted-key, the signature
too); else 2, and the failed check's name and reason on stderr.)",
        .options = R"(
  --trusted-key PUB     (repeatable) require a signature by one of these keys
  --min-version N       require a config version of at least N
  --threads N           hash on at most N threads (default: the CPUs this
                        process may use)
  --max-size BYTES      refuse a larger file before reading it (default 2 GiB)
)",
    },
};

constexpr std::string_view kOverviewHead = R"(chash: nginx- and pingora-compatible consistent-hash rings

Usage: chash COMMAND [OPTIONS]
  or:  chash help [COMMAND | --all]
  or:  chash --version

commands:
)";

constexpr std::string_view kOverviewTail = R"(
`chash COMMAND --help` or `chash help COMMAND` prints that command's options;
`man chash` shows every command's.

servers file:
  One "ADDR [WEIGHT]" a line; weight 1 by default, 0 = drained (keeps its
  id, owns no points); '#' starts a comment; blank lines are skipped. ADDR as
  in an nginx server line: 10.0.0.1:443, [::1]:7777, 127.0.0.2, unix:/path,
  name:port (the pingora flavors need IP:PORT).
  The other programs' flavors read "ADDR [WEIGHT] [key=value ...]": ADDR is
  what route prints; haproxy takes id=N (the server's id; name= is
  accepted), ketama-md5 --variant twemproxy name=NAME (hashed instead of
  the address), varnish-shard name= and ident= (the ring hashes ident, else
  name, else ADDR; a weight may be a REAL such as 2.5), envoy-ring and
  envoy-maglev hash_key=K (hashed instead of ADDR) and hostname=H (hashed
  with --use-hostname-for-hashing).

exit status:
  0 on success; 2 on any error (a bad option, file, server or snapshot), with
  one line on stderr naming the file and line or the failed check.

On a terminal, long phases (ring builds, exact shares, diffs) show their
progress on stderr; never when stderr is not a terminal. Every --plot SVG
carries its command line and the values drawn (<metadata>, as --json).
)";

void Put(std::string_view text, std::FILE* out) { std::fwrite(text.data(), 1, text.size(), out); }

const Command* Find(std::string_view name) {
  for (const Command& command : kCommands) {
    if (command.name == name) return &command;
  }
  return nullptr;
}

// `text` wrapped into the description column (24 spaces in, 78 wide) after
// a first line that already holds `used` columns.
void PutWrapped(std::string& out, size_t used, std::string_view text) {
  constexpr size_t kColumn = 24, kWidth = 78;
  if (used >= kColumn) {
    out += '\n';
    used = 0;
  }
  out.append(kColumn - used, ' ');
  size_t line = kColumn;
  while (!text.empty()) {
    const size_t space = text.find(' ');
    const std::string_view word = text.substr(0, space);
    if (line > kColumn && line + 1 + word.size() > kWidth) {
      out += '\n';
      out.append(kColumn, ' ');
      line = kColumn;
    }
    if (line > kColumn) {
      out += ' ';
      ++line;
    }
    out += word;
    line += word.size();
    text = space == std::string_view::npos ? std::string_view() : text.substr(space + 1);
  }
  out += '\n';
}

// The program options' lines, from the flavor table (engine/
// flavor_options.h): one an option name, each flavor's meaning, values and
// default after it. Throws std::bad_alloc.
std::string ProgramOptionsUsage() {
  std::string out;
  std::vector<std::string> done;
  const auto& rows = internal::FlavorOptions();
  for (const internal::FlavorOption& first : rows) {
    std::string dashed(first.name);
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    if (std::find(done.begin(), done.end(), dashed) != done.end()) continue;
    done.push_back(dashed);
    std::string head = "  --" + dashed;
    switch (first.kind) {
      case internal::OptionKind::kWord: head += " W"; break;
      case internal::OptionKind::kCount: head += " N"; break;
      case internal::OptionKind::kTwoBytes: head += " XY"; break;
      case internal::OptionKind::kSwitch: break;
    }
    std::string text;
    for (const internal::FlavorOption& row : rows) {
      if (row.name != first.name) continue;
      if (!text.empty()) text += "; ";
      text += FlavorName(row.flavor);
      text += ": ";
      text += row.what;
      if (row.kind != internal::OptionKind::kSwitch) {
        text += ", " + internal::FlavorOptionValues(row);
      }
      text += " (default " + std::string(row.default_text) + ")";
      if (!row.alias.empty()) {
        std::string alias(row.alias);
        std::replace(alias.begin(), alias.end(), '_', '-');
        text += "; also spelled --" + alias;
      }
    }
    out += head;
    PutWrapped(out, head.size(), text);
  }
  return out;
}

// For the man page (help2man), the synopsis goes under a heading: a line
// that ends in ':' followed by an indented line.
enum class Form { kHelp, kManual };

void PrintUsage(const Command& command, Form form, std::FILE* out) {
  const int name_size = static_cast<int>(command.name.size());
  const int synopsis_size = static_cast<int>(command.synopsis.size());
  if (form == Form::kManual) {
    std::fprintf(out, "chash %.*s:\n  chash %.*s %.*s\n\n", name_size, command.name.data(),
                 name_size, command.name.data(), synopsis_size, command.synopsis.data());
  } else {
    std::fprintf(out, "usage: chash %.*s %.*s\n\n", name_size, command.name.data(),
                 synopsis_size, command.synopsis.data());
  }
  Put(command.description, out);
  Put(form == Form::kManual ? "\n\n" : "\n\noptions:\n", out);
  // Each block is a raw string that starts with a newline.
  const auto takes = [&command](Block block) { return (command.blocks & block) != 0; };
  for (const auto& [taken, block] : {std::pair{takes(kTakesServers), kServersInput},
                                     std::pair{takes(kTakesSnapshot), kSnapshotInput},
                                     std::pair{takes(kTakesShape), kRingShape},
                                     std::pair{takes(kTakesProgram), kProgramRing},
                                     std::pair{takes(kTakesFleet), kFleetShape},
                                     std::pair{!command.options.empty(), command.options},
                                     std::pair{takes(kTakesNewRing), kNewRing}}) {
    if (!taken) continue;
    if (block == kRingShape) {
      // --flavor's text, the table's names under it, then the rest.
      const size_t multiple = block.find("\n  --multiple");
      Put(block.substr(1, multiple), out);
      try {
        std::string flavors;
        PutWrapped(flavors, 0, "one of " + internal::FlavorNameList());
        Put(flavors, out);
      } catch (const std::bad_alloc&) {
        Put("  (the flavor names: out of memory)\n", out);
      }
      Put(block.substr(multiple + 1), out);
      continue;
    }
    if (block == kProgramRing) {
      try {
        Put(ProgramOptionsUsage(), out);
      } catch (const std::bad_alloc&) {
        Put("  (the flavor options: out of memory)\n", out);
      }
    }
    Put(block.substr(1), out);
  }
}

}  // namespace

void PrintOverview(std::FILE* out) {
  Put(kOverviewHead, out);
  for (const Command& command : kCommands) {
    std::fprintf(out, "  %-8.*s %.*s\n", static_cast<int>(command.name.size()),
                 command.name.data(), static_cast<int>(command.summary.size()),
                 command.summary.data());
  }
  Put(kOverviewTail, out);
}

bool PrintCommandUsage(std::string_view name, std::FILE* out) {
  const Command* command = Find(name);
  if (command == nullptr) return false;
  PrintUsage(*command, Form::kHelp, out);
  return true;
}

void PrintAllUsage(std::FILE* out) {
  PrintOverview(out);
  for (const Command& command : kCommands) {
    Put("\n", out);
    PrintUsage(command, Form::kManual, out);
  }
}

}  // namespace chash::cli
