// The ring of one HAProxy backend, read from haproxy.cfg (--haproxy-cfg FILE
// --backend NAME) as HAProxy 2.6 reads it:
//   lines         parse_line's rules: words split at blanks, "..." with
//                 escapes and ${VAR} from the environment, '...' verbatim,
//                 \-escapes outside '...', '#' unquoted anywhere starting a
//                 comment, an empty word ending a line's keywords; the last
//                 line must end with a newline; .if/.elif/.else/.endif
//                 evaluated (numbers, !, &&, ||, parentheses, defined(),
//                 streq(), strneq(); feature() and the version predicates
//                 are refused by name), .alert refuses the file
//   sections      every proxy's name, `from` and duplicate names checked;
//                 a proxy takes the last defaults section before it, or the
//                 one `from NAME` names; a defaults section starts afresh
//                 unless it has `from` too
//   proxies       every keyword of every defaults, frontend, backend and
//                 listen section must be one HAProxy 2.6 knows; `server`
//                 and `default-server` lines are read keyword by keyword
//                 (an unknown one refuses the file); two servers of one
//                 name without ids are refused, as are two of one id
//   the backend   its servers in order, each with the default-server
//                 settings in effect at its line (weight, backup,
//                 disabled), then its own; its mode, balance and hash-type
//                 (each inherited from its defaults when not set): a ring
//                 needs `hash-type consistent` and a hash balance, and an
//                 L7 hash (uri, url_param, hdr) needs `mode http` (HAProxy
//                 falls back to round robin otherwise)
// What chash does not read is refused by name (server-template, `[scope]`
// lines, HAPROXY_* variables, `track` across backends, a keyword whose
// argument is missing). The keywords' own arguments are checked only for
// the keywords above; addresses are not checked (HAProxy parses and
// resolves them); sections other than proxies are not checked. disabled
// and backup servers keep their id and own no points, with a note. A key
// is then the bytes HAProxy hashes (the path for `balance uri`: `chash
// route --balance` takes a whole request target).
#ifndef CHASH_TOOLS_CLI_HAPROXY_CONF_H_
#define CHASH_TOOLS_CLI_HAPROXY_CONF_H_

#include <cstddef>
#include <string>
#include <vector>

#include "chash/chash.h"
#include "program_flavors.h"

namespace chash::cli {

inline constexpr size_t kMaxHaproxyCfgBytes = size_t{16} << 20;  // the file

struct HaproxyBackend {
  RingOptions options;                 // flavor haproxy, the hash-type's function
  std::string balance;                 // the `balance` line's words, as written
  std::vector<ServerEntry> servers;    // the address as on the `server` line
  std::vector<ProgramServer> program;  // what the ring takes of each
  std::vector<std::string> notes;      // servers left out of the ring, and why
};

// kIoError if the file cannot be read; kBadArgument naming "FILE:LINE" for
// what HAProxy 2.6 refuses (in its words where it has them), for a backend
// HAProxy keeps no ring for, and for what chash does not read.
Result<HaproxyBackend> ReadHaproxyBackend(const std::string& path, const std::string& backend);

// The same on the file's text (`path` names it in errors): for the fuzzer.
Result<HaproxyBackend> ReadHaproxyBackendText(const std::string& path, std::string_view text,
                                              const std::string& backend);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_HAPROXY_CONF_H_
