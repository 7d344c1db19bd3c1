// Running the real `chash` binary from a test: CHASH_CLI_PATH is the command
// (through the emulator in a cross build), defined for every test binary by
// tests/CMakeLists.txt. Header-only for that reason.
#ifndef CHASH_TESTS_CLI_RUN_H_
#define CHASH_TESTS_CLI_RUN_H_

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

namespace chash::testing {

struct CliRun {
  int status = -1;  // exit status; -1 if it did not exit normally
  std::string out;  // stdout
  std::string err;  // stderr
};

// The value of "key": in a one-line JSON object (numbers and strings only).
inline std::string JsonField(const std::string& json, const std::string& key) {
  const size_t at = json.find("\"" + key + "\":");
  if (at == std::string::npos) return "";
  const size_t start = at + key.size() + 3;
  if (json[start] == '"') return json.substr(start + 1, json.find('"', start + 1) - start - 1);
  return json.substr(start, json.find_first_of(",}", start) - start);
}

// This process's prefix in the test temp folder. ctest runs each test case
// as its own process, in parallel: names carry the pid.
inline std::string TempPrefix() {
  return "chash_cli_" + std::to_string(getpid()) + "_";
}

// Removes this process's temp files when it exits, those the commands under
// test wrote beside them (key.pub, a snapshot's temporary) included: a suite
// run is hundreds of processes, and the temp folder would keep their files.
struct TempFilesRemovedAtExit {
  std::string folder = ::testing::TempDir();
  std::string prefix = TempPrefix();
  pid_t owner = getpid();  // a forked child that exits normally keeps its hands off
  ~TempFilesRemovedAtExit() {
    if (getpid() != owner) return;
    std::error_code error;
    std::filesystem::directory_iterator entry(folder, error);
    for (; !error && entry != std::filesystem::directory_iterator(); entry.increment(error)) {
      if (entry->path().filename().string().starts_with(prefix)) {
        std::error_code ignored;
        std::filesystem::remove(entry->path(), ignored);
      }
    }
  }
};

// A file in the test temp folder, removed when this process exits.
inline std::string TempPath(const std::string& name) {
  static const TempFilesRemovedAtExit remover;
  return remover.folder + remover.prefix + name;
}

inline std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = TempPath(name);
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Runs `chash ARGS < stdin_text`, capturing stdout and stderr. `shell_prefix`
// goes before the command in the shell that runs it (RunChashBounded).
inline CliRun RunChash(const std::string& args, const std::string& stdin_text = "",
                       const std::string& shell_prefix = "") {
  const std::string in = WriteTemp("stdin", stdin_text);
  const std::string out = TempPath("stdout"), err = TempPath("stderr");
  const std::string command = shell_prefix + std::string(CHASH_CLI_PATH) + " " + args + " <" +
                              in + " >" + out + " 2>" + err;
  CliRun run;
  const int raw = std::system(command.c_str());
  run.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  run.out = ReadAll(out);
  run.err = ReadAll(err);
  return run;
}

// RunChash stopped after `seconds` (coreutils' timeout: status 124) and,
// outside AddressSanitizer (whose shadow memory needs the address space),
// limited to 4 GiB of address space: a test of a reader that once read or
// recursed without end fails instead of taking the machine with it.
inline CliRun RunChashBounded(const std::string& args, int seconds = 60) {
#if defined(__SANITIZE_ADDRESS__)
  const std::string limit;
#else
  const std::string limit = "ulimit -v 4194304; ";
#endif
  return RunChash(args, "", limit + "timeout " + std::to_string(seconds) + " ");
}

}  // namespace chash::testing

#endif  // CHASH_TESTS_CLI_RUN_H_
