// Replay main: runs a fuzzer's LLVMFuzzerTestOneInput on saved inputs, so
// that the fuzzers build with any compiler (no libFuzzer) and ctest replays
// their corpora and regressions (simdjson's approach).
//
//   fuzz_NAME PATH...   each PATH is an input file or a directory of them
//                       (one level; dotfiles and README* skipped)
//
// Exits 0 after replaying every input, 1 if a PATH does not exist or no
// input was found at all (an empty corpus must not pass silently). A
// mismatch aborts inside the fuzzer, so ctest reports it with its dump.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool IsInput(const std::filesystem::path& path) {
  const std::string name = path.filename().string();
  return !name.empty() && name[0] != '.' && name.rfind("README", 0) != 0;
}

}  // namespace

int main(int argc, char** argv) {
  namespace fs = std::filesystem;
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    const fs::path path(argv[i]);
    std::error_code error;
    if (fs::is_directory(path, error)) {
      std::vector<fs::path> files;
      for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
        if (entry.is_regular_file() && IsInput(entry.path())) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      inputs.insert(inputs.end(), files.begin(), files.end());
    } else if (fs::is_regular_file(path, error)) {
      inputs.push_back(path);
    } else {
      std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
      return 1;
    }
  }
  if (inputs.empty()) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIR... (found no input)\n", argv[0]);
    return 1;
  }
  for (const fs::path& input : inputs) {
    std::ifstream in(input, std::ios::binary);
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    if (!in.good() && !in.eof()) {
      std::fprintf(stderr, "%s: read error\n", input.c_str());
      return 1;
    }
    std::fprintf(stderr, "replaying %s (%zu bytes)\n", input.c_str(), bytes.size());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
