// Shared plumbing of the `chash` subcommands: option parsing, ring loading,
// error reporting (stderr, exit status 2).
#ifndef CHASH_TOOLS_CLI_COMMON_H_
#define CHASH_TOOLS_CLI_COMMON_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "chash/chash.h"
#include "chash/operators.h"
#include "util/json_text.h"  // engine/
#include "program_flavors.h"

namespace chash::cli {

inline constexpr int kExitUsage = 2;

// Prints "chash COMMAND: MESSAGE" to stderr and returns kExitUsage.
int Fail(std::string_view command, std::string_view message);

// "--name value" options and "--flag" switches, each at most once.
class Options {
 public:
  // Parses args; `valued` and `flags` list the accepted names (without "--").
  // `repeated` names valued options that may be given several times
  // (--trusted-key A --trusted-key B); Get returns the last, GetAll each.
  // The old spellings --mode and --new-mode are taken as --flavor and
  // --new-flavor wherever those are accepted.
  static Result<Options> Parse(const std::vector<std::string_view>& args,
                               const std::set<std::string_view>& valued,
                               const std::set<std::string_view>& flags,
                               const std::set<std::string_view>& repeated = {});
  std::vector<std::string> GetAll(std::string_view name) const;

  bool Has(std::string_view name) const { return values_.count(std::string(name)) > 0; }
  std::optional<std::string> Get(std::string_view name) const;
  // An unsigned integer option in [min, max]; `fallback` if absent.
  Result<uint64_t> GetUint(std::string_view name, uint64_t fallback, uint64_t min,
                           uint64_t max) const;

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> repeated_;
};

// An out-of-memory error of building a ring from `source`, prefixed with
// what was being built ("servers.txt: building the pingora-v1 ring (160
// points per weight unit): out of memory: ..."); other results unchanged.
Result<Ring> NameWhatWasBuilt(Result<Ring> ring, std::string_view source,
                              const RingOptions& options);

// The servers of a ring: --servers FILE, or --nginx-conf FILE --upstream NAME
// (the `server` lines of that upstream, nginx_conf.h). With prefix "new-",
// the second ring of diff and of a migrating route: --new-servers FILE,
// --new-nginx-conf FILE [--new-upstream NAME, default --upstream], or
// --new-upstream NAME alone (another upstream of --nginx-conf); with none of
// them, the first ring's servers.
struct ServersInput {
  std::string name;                  // the servers file, or "FILE upstream NAME"
  std::vector<ServerEntry> servers;  // config order
  std::vector<std::string> where;    // nginx configs: each server's "FILE:LINE"
  std::vector<std::string> down;     // nginx configs: the servers marked `down`
  // The other programs' flavors: each server as the ring takes it (servers[i]
  // keeps ADDR as written, what the tool prints); empty for the others.
  std::vector<ProgramServer> program;
};
// `ring` (if given) is the ring's options: a program flavor's servers file
// is read with its attributes (program_flavors.h), and an nginx config is
// refused for it.
Result<ServersInput> ReadServersInput(const Options& options, std::string_view prefix = "",
                                      const RingOptions* ring = nullptr);
// What ReadServersInput would call its servers, without reading them.
std::string ServersInputName(const Options& options, std::string_view prefix = "");
// Builds the ring of `input`; errors name the server's file and line.
// The text the tool prints for node `id`: ADDR as written in the servers
// file (a program flavor's ring hashes other text for some servers).
const std::string& ServerText(const Ring& ring, const ServersInput& input, uint32_t id);
Result<Ring> BuildServersInput(const ServersInput& input, const RingOptions& options);

// The options a snapshot-reading command accepts beside --ring (route,
// stats, diff): --trusted-key PUB (repeated), --min-version N.
inline const std::set<std::string_view> kSnapshotValued = {"ring", "trusted-key", "min-version",
                                                           "threads", "max-size"};
inline const std::set<std::string_view> kSnapshotRepeated = {"trusted-key"};

// The options of a command that reads a ring every way (route, stats,
// diff): --servers, --nginx-conf/--upstream, --flavor, --multiple, the
// snapshot's (kSnapshotValued), the other programs' rings' and configs'
// (program_flavors.h), and the command's own `valued` and `flags`.
Result<Options> ParseRingCommandOptions(const std::vector<std::string_view>& args,
                                        std::set<std::string_view> valued,
                                        std::set<std::string_view> flags);

// --trusted-key PUB..., --min-version N, --threads N and --max-size BYTES as
// load options.
Result<SnapshotLoadOptions> SnapshotLoadOptionsFrom(const Options& options);
// The ring of the snapshot named by `option` (--ring, --new-ring), checked
// with SnapshotLoadOptionsFrom; its subsets into `subsets` if given.
Result<Ring> LoadRingFromSnapshotOption(const Options& options, std::string_view option,
                                        std::vector<NamedSubset>* subsets = nullptr);

// --servers FILE or --nginx-conf FILE --upstream NAME, [--flavor F]
// [--multiple K]: loads and builds the ring; `input` (if given) receives
// the servers read. Errors name the file and line. Or --ring RINGFILE: maps
// a snapshot (LoadRingFromSnapshotOption); the servers' and mode's options
// are then refused, `input` gets only its name and `subsets` (if given) the
// snapshot's named subsets.
Result<Ring> LoadRingFromOptions(const Options& options, ServersInput* input = nullptr,
                                 std::vector<NamedSubset>* subsets = nullptr);
Result<RingOptions> RingOptionsFrom(const Options& options, std::string_view mode_option,
                                    std::string_view multiple_option);

// The second ring of `chash diff` and of a migrating `chash route`:
// --new-servers FILE or --new-nginx-conf (ReadServersInput, prefix "new-";
// default: the first ring's servers), --new-flavor F (default: --flavor),
// --new-multiple K (default: --multiple when both rings are pingora-v2,
// else 160). `old_options` is the first ring's.
Result<Ring> LoadNewRingFromOptions(const Options& options, const RingOptions& old_options);
// The first ring's options, as LoadNewRingFromOptions takes them: a
// snapshot's (--ring) flavor and multiple, or the options `ring` was built
// with (a servers file's, or a program config's hash settings).
RingOptions FirstRingOptions(const Options& options, const Ring& ring);

// The built-in synthetic fleet of `chash demo` and `chash bench` (the
// addresses tools/dev/fleet prints): servers 10.0.(i / 256).(i % 256):443, all of
// one weight. --nodes N (default 2048, 1..65536), --weight W (default 625),
// --multiple K (default 16, the v2 ring's).
struct FleetShape {
  uint32_t nodes = 0;
  uint32_t weight = 0;
  uint32_t multiple = 0;
};
Result<FleetShape> FleetShapeFrom(const Options& options);
Result<Ring> BuildFleet(const FleetShape& fleet, Flavor flavor, uint32_t multiple);

// "0.25", "25%" or "25.5%" -> 0.25, 0.255; kBadArgument outside 0..1.
Result<double> ParseFraction(std::string_view option, std::string_view text);

// The engine's JSON writer (engine/util/json_text.h): one rule for numbers (NaN
// and infinities as null) and strings in the engine's and the tool's output.
using internal::JsonNumber;
using internal::JsonString;

// Peak resident set size of this process, in bytes (VmHWM, tools/measure/).
uint64_t PeakRssBytes();

// `chash plan` on another program's ring (cmd_plan_program.cc): its own
// setting (HAProxy's weights, Varnish's replicas, Envoy's ring and table
// sizes; libmemcached's through a v2 ring), with RunPlan's parsed options.
int RunProgramPlan(const std::vector<std::string_view>& args, const Options& options);

// "204,800,000".
std::string WithCommas(uint64_t value);
// A fraction as a percentage with `decimals` decimals: "12.5000%".
std::string Percent(double fraction, int decimals);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_COMMON_H_
