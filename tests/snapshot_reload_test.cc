// SnapshotReloader under load (label `concurrency`: tools/dev/test-tsan runs it
// under ThreadSanitizer, tools/dev/test-asan under ASan's leak checker): reader
// threads route while the file is replaced hundreds of times, some
// replacements damaged or older; every answer must come from a ring that was
// published (the old or the new one), never a mixture, and nothing crashes.
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cli_run.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::Scaled;
using testing::TempPath;

Ring Fleet(uint32_t nodes, uint32_t first) {
  return testing::BuildNumbered({.flavor = Flavor::kPingoraV2, .point_multiple = 16},
                                {"10.2.", ":443", [](uint32_t n) { return 1 + n % 4; }}, nodes,
                                first);
}

TEST(SnapshotReloadSoak, ReadersSeeOnlyPublishedRings) {
  // Three server lists; the answers of each for a fixed set of probes.
  std::vector<Ring> rings;
  rings.push_back(Fleet(40, 0));
  rings.push_back(Fleet(45, 5));
  rings.push_back(Fleet(30, 20));
  std::vector<uint32_t> probes;
  std::mt19937 rng(5);
  for (int i = 0; i < 256; ++i) probes.push_back(static_cast<uint32_t>(rng()));
  std::map<std::string, std::vector<std::string>> expected;  // fingerprint -> addresses
  for (const Ring& ring : rings) {
    std::vector<std::string>& answers = expected[RingFingerprint(ring).Hex()];
    for (const uint32_t probe : probes) {
      answers.push_back(ring.node(ring.FindNodeByHash(probe)).address.written);
    }
  }
  ASSERT_EQ(expected.size(), 3u);

  const std::string path = TempPath("soak.chash");
  SnapshotWriteOptions first;
  first.config_version = 1;
  ASSERT_TRUE(WriteSnapshotFile(rings[0], first, path).ok());
  ReloadOptions options;
  Result<std::unique_ptr<SnapshotReloader>> created = SnapshotReloader::Create(path, options);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  SnapshotReloader& reloader = *created.value();
  // Polls race the writer's renames.
  ASSERT_TRUE(reloader.StartWatching(std::chrono::milliseconds(1)).ok());

  std::atomic<bool> done{false};
  std::atomic<uint64_t> answers{0}, mismatches{0}, snapshots_seen{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&, t] {
      size_t next = static_cast<size_t>(t);
      std::vector<uint32_t> batch(probes.size());
      while (!done.load(std::memory_order_acquire)) {
        // Hold one ring for a whole batch, as a request handler would.
        const std::shared_ptr<const RingSnapshot> snapshot = reloader.current();
        const std::shared_ptr<const Ring> ring = RingOf(snapshot);
        const auto it = expected.find(snapshot->info().fingerprint.Hex());
        if (it == expected.end()) {
          mismatches.fetch_add(1);
          continue;
        }
        ring->FindNodesByHash(probes, batch);
        for (size_t i = 0; i < probes.size(); ++i) {
          if (ring->node(batch[i]).address.written != it->second[i]) mismatches.fetch_add(1);
        }
        const size_t single = next++ % probes.size();
        if (ring->node(ring->FindNodeByHash(probes[single])).address.written !=
            it->second[single]) {
          mismatches.fetch_add(1);
        }
        answers.fetch_add(probes.size() + 1);
        snapshots_seen.fetch_add(1);
      }
    });
  }

  // The writer: hundreds of replacements by rename; every fourth damaged,
  // every seventh an older version (a rollback attempt).
  const size_t replacements = Scaled(300, 60);
  uint64_t version = 1;
  size_t damaged = 0, older = 0, good = 0;
  for (size_t i = 1; i <= replacements; ++i) {
    const Ring& ring = rings[i % rings.size()];
    SnapshotWriteOptions write;
    if (i % 7 == 0) {
      write.config_version = version - 1;
      ++older;
    } else {
      write.config_version = ++version;
    }
    if (i % 4 == 0) {
      std::string bytes = SerializeSnapshot(ring, write).value();
      bytes[(i * 7919) % bytes.size()] ^= static_cast<char>(1 + i % 255);
      const std::string temp = path + ".damaged";
      std::ofstream(temp, std::ios::binary | std::ios::trunc) << bytes;
      ASSERT_EQ(std::rename(temp.c_str(), path.c_str()), 0);
      ++damaged;
    } else {
      ASSERT_TRUE(WriteSnapshotFile(ring, write, path).ok());
      if (i % 7 != 0) ++good;
    }
    if (i % 2 == 0) (void)reloader.Poll();  // the watcher polls the rest
  }
  // Let the watcher see the last file, then stop the readers.
  const Status last = reloader.Poll();
  done.store(true, std::memory_order_release);
  for (std::thread& reader : readers) reader.join();

  EXPECT_EQ(mismatches.load(), 0u);
  EXPECT_GT(answers.load(), 0u);
  EXPECT_GT(snapshots_seen.load(), 0u);
  EXPECT_GT(reloader.reloads(), 0u);
  EXPECT_GT(reloader.refusals(), 0u) << damaged << " damaged and " << older << " older files";
  EXPECT_LE(reloader.reloads(), good);
  // The final state is the newest good file, or the one before it if the
  // last replacement was refused.
  EXPECT_LE(reloader.current()->info().config_version, version);
  (void)last;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace chash
