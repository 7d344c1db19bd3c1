// The ring of one twemproxy (nutcracker) pool, read from its YAML config
// (--nutcracker-yml FILE --pool NAME) with Debian's libyaml: the pool's
// `servers` (`HOST:PORT:WEIGHT [NAME]`), `hash` (fnv1a_64 by default),
// `hash_tag`, and `distribution: ketama` (modula and random keep no ring).
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

// Whether this build reads YAML (libyaml found by pkg-config at configure).
bool NutcrackerYamlSupported();

// kIoError if the file cannot be read; kBadArgument naming the file (and
// line) for YAML errors and what chash cannot take.
Result<NutcrackerPool> ReadNutcrackerPool(const std::string& path, const std::string& pool);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_NUTCRACKER_CONF_H_
