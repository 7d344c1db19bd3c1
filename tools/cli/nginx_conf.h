// Reading one upstream's `server` lines from an nginx configuration, for
// `chash route|stats|diff|plan --nginx-conf FILE --upstream NAME`, so an
// operator can measure the ring nginx builds from their own config. CLI only,
// not library API.
//
// The syntax is nginx's (ngx_conf_file.c): directives end with ';' or open a
// block with '{'; '#' starts a comment where a token would start; tokens may
// be quoted with " or ' (escapes \" \' \\ \t \r \n); `include PATH;`, in any
// block, reads PATH (relative to the directory of the main config file, as
// nginx resolves it; wildcards expand in sorted order, and may match
// nothing). The upstream is an `upstream NAME { ... }` block of `http` or
// `stream`, NAME compared case-insensitively as nginx does.
//
// What each line means for the ring (nginx 1.22, `hash KEY consistent;`):
//   hash KEY consistent   required: it is what makes nginx build the ketama
//                         ring. `hash KEY;` (hash % total weight), ip_hash,
//                         least_conn, random or no method: an error (no ring);
//                         the last method wins, as in nginx
//   server ADDR           a node; ADDR is the text nginx hashes
//     weight=N            the node's weight (N >= 1): N x 160 points
//     down                still on the ring (nginx generates its points);
//                         requests skip it, see `down` below
//     max_fails=N fail_timeout=T max_conns=N
//                         runtime state only: checked as nginx checks them
//                         (ngx_atoi, ngx_parse_time), then ignored
//     backup              after `hash`: refused with nginx's message; before
//                         it nginx takes it but leaves the server off the
//                         ring: chash does the same and notes it
//   keepalive, keepalive_requests, keepalive_time, keepalive_timeout, zone
//                         connection caching and shared memory: checked as
//                         nginx checks them, then ignored
//   any other directive   refused: `unknown directive "NAME"` (the other
//                         block's upstream directives, e.g. ip_hash in
//                         stream: `"NAME" directive is not allowed here`)
// Every upstream of http and stream is checked so (nginx refuses the whole
// file for an error in any of them); outside them chash checks the syntax,
// that http and stream appear once, and nothing else. Files are read whole
// only if regular (an include of /dev/zero or a FIFO is refused by name),
// up to kMaxConfFileBytes each and kMaxConfTotalBytes in all, blocks nested
// at most kMaxBlockDepth deep.
// Errors read "FILE:LINE: message", with nginx's wording where it has one.
#ifndef CHASH_TOOLS_CLI_NGINX_CONF_H_
#define CHASH_TOOLS_CLI_NGINX_CONF_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "chash/status.h"

namespace chash::cli {

struct NginxServer {
  std::string address;  // the server text, exactly as nginx hashes it
  uint32_t weight = 1;
  bool down = false;
  std::string file;  // where the `server` line is
  size_t line = 0;   // its line (where its ';' is, as nginx counts)
};

struct NginxUpstream {
  std::string name;
  std::string file;  // where `upstream NAME {` is
  size_t line = 0;
  std::string hash_key;              // KEY of `hash KEY consistent;`
  std::vector<NginxServer> servers;  // the ring's nodes, in config order
  std::vector<std::string> notes;    // "FILE:LINE: ..." for what chash left out
};

// The limits of the reader: a config past them is refused by name.
inline constexpr size_t kMaxConfFileBytes = size_t{16} << 20;   // one file
inline constexpr size_t kMaxConfTotalBytes = size_t{64} << 20;  // every file read
inline constexpr int kMaxBlockDepth = 64;                       // nested blocks

Result<NginxUpstream> ReadNginxUpstream(const std::string& conf_path, std::string_view name);

// The same on a main config given as text (includes are still read from
// disk, relative to conf_path's directory): for the fuzzer.
Result<NginxUpstream> ReadNginxUpstreamText(const std::string& conf_path, std::string text,
                                            std::string_view name);

}  // namespace chash::cli

#endif  // CHASH_TOOLS_CLI_NGINX_CONF_H_
