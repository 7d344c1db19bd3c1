// The config readers of the chash tool (tools/cli: --nginx-conf,
// --haproxy-cfg, --nutcracker-yml and their YAML layer) on any bytes.
#ifndef CHASH_FUZZ_CONF_READERS_CHECK_H_
#define CHASH_FUZZ_CONF_READERS_CHECK_H_

#include <cstddef>
#include <cstdint>

namespace chash::fuzz {

// Input: U8 selector, then a config's text. selector % 4:
//   0  nginx: ReadNginxUpstreamText for upstream "u", the config in a
//      private temporary folder holding a few files to include (an include
//      names only that folder's files: a text with "include" and a '/' has
//      its '/' replaced)
//   1  HAProxy: ReadHaproxyBackendText for backend "b"
//   2  nutcracker: ReadNutcrackerPoolText for pool "a"
//   3  the YAML layer: CheckYamlDepth, then YamlDocument::Parse
// Each must return (no crash, no sanitizer report, in bounded time): an
// error well formed and naming the config (its path, or a file it
// includes); a ring's servers each with a weight the program takes and a
// line inside its file. An accepted nginx, HAProxy or nutcracker config is
// written back in canonical form and read again: the same servers, weights
// (and ids, names) must come back. An accepted YAML document is walked:
// its nesting stays within what the depth scan let through. A mismatch
// aborts (chash::fuzz::Fail). Returns 1 if the reader accepted the input.
size_t RunConfReadersCheck(const uint8_t* data, size_t size);

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_CONF_READERS_CHECK_H_
