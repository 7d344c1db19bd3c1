// The ring of one HAProxy backend, read from haproxy.cfg (--haproxy-cfg FILE
// --backend NAME): its `server` lines (weight, id; `disabled` and `backup`
// servers own no points, as they are out of HAProxy's active tree), its
// `hash-type consistent [FUNCTION] [avalanche]` and its `balance`, each
// inherited from the last `defaults` section before it when the backend
// does not set it. A key is then the bytes HAProxy hashes (the path for
// `balance uri`: `chash route --balance` takes a whole request target).
#ifndef CHASH_TOOLS_CLI_HAPROXY_CONF_H_
#define CHASH_TOOLS_CLI_HAPROXY_CONF_H_

#include <string>
#include <vector>

#include "chash/chash.h"
#include "program_flavors.h"

namespace chash::cli {

struct HaproxyBackend {
  RingOptions options;                 // flavor haproxy, the hash-type's function
  std::string balance;                 // the `balance` line's words, as written
  std::vector<ServerEntry> servers;    // the address as on the `server` line
  std::vector<ProgramServer> program;  // what the ring takes of each
  std::vector<std::string> notes;      // servers left out of the ring, and why
};

// kIoError if the file cannot be read; kBadArgument naming "FILE:LINE" for
// what chash cannot take (no such backend, `hash-type map-based`, a
// function HAProxy 2.6 does not have, `server-template`, `hash-key` other
// than id, a bad weight or id).
Result<HaproxyBackend> ReadHaproxyBackend(const std::string& path, const std::string& backend);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_HAPROXY_CONF_H_
