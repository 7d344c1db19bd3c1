// The ring of one twemproxy (nutcracker) pool, read from its YAML config
// (--nutcracker-yml FILE --pool NAME) with Debian's libyaml, the way
// nutcracker 0.5.0 reads it (nc_conf.c): one document of pools, each a
// mapping of `key: value` directives and one `servers:` list, no anchors,
// aliases, tags, flow collections or document markers; every directive
// known, given once, and checked; every pool checked (nutcracker refuses
// the file for an error in any). The pool's `servers` (`HOST:PORT:WEIGHT
// [NAME]`, the ring hashing NAME, else HOST, else HOST:PORT when PORT is not
// 11211, as nutcracker names them), `hash` (fnv1a_64 by default), `hash_tag`
// and `distribution` (ketama by default; modula and random keep no ring).
// route prints each server's HOST:PORT.
#ifndef CHASH_TOOLS_CLI_NUTCRACKER_CONF_H_
#define CHASH_TOOLS_CLI_NUTCRACKER_CONF_H_

#include <string>
#include <vector>

#include "chash/chash.h"
#include "program_flavors.h"

namespace chash::cli {

struct NutcrackerPool {
  RingOptions options;  // ketama-md5, variant twemproxy
  std::vector<ServerEntry> servers;
  std::vector<ProgramServer> program;
};

// kIoError if the file cannot be read; kBadArgument naming the file and
// line for what nutcracker refuses (in its words: `directive "hash" is a
// duplicate`) and what chash cannot take (refused by name).
Result<NutcrackerPool> ReadNutcrackerPool(const std::string& path, const std::string& pool);

// The same on the file's text (`path` names it in errors): for the fuzzer.
Result<NutcrackerPool> ReadNutcrackerPoolText(const std::string& path, const std::string& text,
                                              const std::string& pool);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_NUTCRACKER_CONF_H_
