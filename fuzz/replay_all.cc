// chash_fuzz_replay TARGET PATH...: replays inputs through one fuzzer's check,
// like fuzz_TARGET's replay main, but these targets live in this one
// binary. tools/dev/fuzz --coverage uses it: profiles of one binary merge
// cleanly, while the four fuzz_* binaries define same-named functions
// (LLVMFuzzerTestOneInput...) that llvm-cov would report as mismatched.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "byte_checks.h"
#include "points_case.h"
#include "ring_case.h"
#include "snapshot_check.h"
#include "state_record_check.h"

namespace {

using chash::fuzz::DecodePointsCase;
using chash::fuzz::DecodeRingCase;

void RunRing(const uint8_t* d, size_t n) { chash::fuzz::RunRingDiff(DecodeRingCase(d, n)); }
void RunPoints(const uint8_t* d, size_t n) { chash::fuzz::RunPointsDiff(DecodePointsCase(d, n)); }
void RunCrc(const uint8_t* d, size_t n) { chash::fuzz::RunCrc32Check(d, n); }
void RunParser(const uint8_t* d, size_t n) { chash::fuzz::RunParserCheck(d, n); }
void RunSnapshot(const uint8_t* d, size_t n) { chash::fuzz::RunSnapshotCheck(d, n); }
void RunStateRecord(const uint8_t* d, size_t n) { chash::fuzz::RunStateRecordCheck(d, n); }

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  const std::string target = argc > 1 ? argv[1] : "";
  void (*run)(const uint8_t*, size_t) = target == "ring_diff"     ? RunRing
                                        : target == "points_diff" ? RunPoints
                                        : target == "crc32"       ? RunCrc
                                        : target == "parser"      ? RunParser
                                        : target == "snapshot"    ? RunSnapshot
                                        : target == "state_record" ? RunStateRecord
                                                                  : nullptr;
  if (run == nullptr || argc < 3) {
    std::fprintf(stderr, "usage: %s ring_diff|points_diff|crc32|parser|snapshot|state_record FILE_OR_DIR...\n", argv[0]);
    return 2;
  }
  size_t replayed = 0;
  for (int i = 2; i < argc; ++i) {
    std::vector<fs::path> files;
    std::error_code error;
    if (fs::is_directory(argv[i], error)) {
      for (const auto& entry : fs::directory_iterator(argv[i], error)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && name[0] != '.' && name.rfind("README", 0) != 0) {
          files.push_back(entry.path());
        }
      }
      std::sort(files.begin(), files.end());
    } else if (fs::is_regular_file(argv[i], error)) {
      files.emplace_back(argv[i]);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 1;
    }
    for (const fs::path& file : files) {
      std::ifstream in(file, std::ios::binary);
      const std::string bytes((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
      run(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
      ++replayed;
    }
  }
  std::printf("replayed %zu %s inputs\n", replayed, target.c_str());
  return replayed == 0 ? 1 : 0;
}
