// The two fuzzers whose input is (mostly) raw bytes: CRC32 and the parsers.
#ifndef CHASH_FUZZ_BYTE_CHECKS_H_
#define CHASH_FUZZ_BYTE_CHECKS_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "chash/status.h"

namespace chash::fuzz {

// CRC32 against zlib's crc32(). Input: U8 h (bits 0-5: the data's offset
// from a 64-byte boundary; bits 6-7: initial crc 0, U32, 0xFFFFFFFF, U32),
// [U32 crc], U16 split point, then the data. Every implementation in
// Crc32Implementations() that this CPU supports, the public Crc32Extend and
// Crc32, the ketama point step and the reference's bitwise CRC must all give
// zlib's answer, whole and split in two; so must the batch key CRCs
// (Crc32Keys and the per-ISA key kernels), on the data cut into keys. The data sits in a heap block that
// ends exactly where it ends, so ASan reports any read past it. Returns the
// number of implementations compared.
size_t RunCrc32Check(const uint8_t* data, size_t size);

// Input: U8 mode, then text.
//   mode bit 0 clear: the text is one address. For each flavor the
//     engine's parser must accept exactly what address_model.h accepts and
//     produce its HOST and PORT bytes (and, for pingora, its socket order).
//     The first 16 bytes also go through FormatIpv6 against Rfc5952.
//   mode bit 0 set: the text is a servers file. ParseServersText must match
//     an independent model of servers_file.h (entries, or the error code and
//     its line), every address in it is checked as above, and
//     BuildRingFromServers must agree with the reference ring on the status
//     code, naming the line of a failing entry; flavor ((mode/2) & 3) % 3,
//     pingora v2 multiple 1 + mode/8, at most 20,000 points.
// Returns the number of addresses compared.
size_t RunParserCheck(const uint8_t* data, size_t size);

// The servers-file model on its own (for the seed tests).
struct ModelServerEntry {
  std::string address;
  uint32_t weight = 1;
  size_t line = 0;
};
struct ModelServersFile {
  StatusCode code = StatusCode::kOk;
  size_t error_line = 0;
  std::vector<ModelServerEntry> entries;
};
ModelServersFile ModelParseServersText(std::string_view text);

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_BYTE_CHECKS_H_
