// The named seeds of every fuzzer: one per case the issue requires (empty
// ring, single point, each overflow, 2-way/3-way/all-equal collisions, each
// tie-break, the wrap-around), each with a check that it really is that case.
// chash_fuzz_seeds writes them to fuzz/corpus/<target>/<name>; the
// fuzz_seeds_test checks the committed files against them.
#ifndef CHASH_FUZZ_SEEDS_H_
#define CHASH_FUZZ_SEEDS_H_

#include <functional>
#include <string>
#include <vector>

namespace chash::fuzz {

struct Seed {
  std::string target;  // ring_diff, points_diff, crc32, parser
  std::string name;
  std::string bytes;
  // Runs the target's check on the bytes (which aborts on a mismatch) and
  // returns "" if the seed is the case its name says, else what it is not.
  std::function<std::string(const std::string& bytes)> check;
};

std::vector<Seed> AllSeeds();

}  // namespace chash::fuzz

#endif  // CHASH_FUZZ_SEEDS_H_
