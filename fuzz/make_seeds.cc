// chash_fuzz_seeds: writes the named seeds of seeds.cc into a corpus folder,
// or searches for the colliding nodes those seeds use.
//
//   chash_fuzz_seeds OUT_DIR           writes OUT_DIR/<target>/<name>
//   chash_fuzz_seeds --find-collisions prints node pairs and triples whose
//                                      160-point chains share a hash
//
// The committed corpus is fuzz/corpus/; fuzz_seeds_test checks that it
// holds exactly these bytes (so the seeds cannot drift from the decoders).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "chash/address.h"
#include "reference/reference_ring.h"
#include "seeds.h"

namespace {

// Candidates: 10.0.x.y:80 (the same hashed bytes under nginx, pingora v1
// and v2) and [2001:db8::N]:80 (pingora). Prints every pair sharing a point
// hash among the first few found, and every triple.
int FindCollisions() {
  std::vector<std::string> names;
  for (uint32_t i = 0; i < 40000; ++i) {
    names.push_back("10.0." + std::to_string(i >> 8) + "." + std::to_string(i & 255) + ":80");
  }
  for (uint32_t i = 1; i <= 40000; ++i) {
    char text[40];
    std::snprintf(text, sizeof text, "[2001:db8::%x]:80", i);
    names.push_back(text);
  }
  std::vector<uint64_t> keys;  // hash << 32 | candidate
  for (uint32_t n = 0; n < names.size(); ++n) {
    const auto ring =
        chash::reference::ReferenceRing::Build(chash::Flavor::kPingoraV1, 160, {{names[n], 1}});
    if (!ring.ok()) return 1;
    for (const auto& point : ring.value().points()) keys.push_back(uint64_t{point.hash} << 32 | n);
  }
  std::sort(keys.begin(), keys.end());
  int pairs_v4 = 0, pairs_mixed = 0;
  for (size_t i = 0; i + 1 < keys.size(); ++i) {
    size_t j = i + 1;
    while (j < keys.size() && keys[j] >> 32 == keys[i] >> 32) ++j;
    if (j - i >= 2) {
      const uint32_t a = static_cast<uint32_t>(keys[i]), b = static_cast<uint32_t>(keys[i + 1]);
      const bool v4 = a < 40000 && b < 40000;
      const bool mixed = (a < 40000) != (b < 40000);
      if (j - i >= 3 || (v4 && pairs_v4++ < 4) || (mixed && pairs_mixed++ < 4)) {
        std::printf("hash 0x%08x:", static_cast<uint32_t>(keys[i] >> 32));
        for (size_t k = i; k < j; ++k)
          std::printf(" %s", names[static_cast<uint32_t>(keys[k])].c_str());
        std::printf("\n");
      }
    }
    i = j - 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::string(argv[1]) == "--find-collisions") return FindCollisions();
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR | --find-collisions\n", argv[0]);
    return 2;
  }
  namespace fs = std::filesystem;
  size_t written = 0;
  for (const chash::fuzz::Seed& seed : chash::fuzz::AllSeeds()) {
    const fs::path dir = fs::path(argv[1]) / seed.target;
    fs::create_directories(dir);
    std::ofstream out(dir / seed.name, std::ios::binary | std::ios::trunc);
    out.write(seed.bytes.data(), static_cast<std::streamsize>(seed.bytes.size()));
    if (!out) {
      std::fprintf(stderr, "cannot write %s\n", (dir / seed.name).c_str());
      return 1;
    }
    ++written;
  }
  std::printf("wrote %zu seeds under %s\n", written, argv[1]);
  return 0;
}
