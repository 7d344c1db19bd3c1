// `chash plan` on the other programs' rings: each candidate is the ring the
// program would build with that setting, checked against `chash stats` of
// the same fleet written with the setting applied by hand.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_run.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::CliRun;
using testing::DataPath;
using testing::JsonField;
using testing::RunChash;
using testing::WriteTemp;

// The candidates of `plan --json`, one object's text each.
std::vector<std::string> Candidates(const std::string& json) {
  std::vector<std::string> out;
  const size_t list = json.find("\"candidates\":[");
  if (list == std::string::npos) return out;
  for (size_t at = json.find("{\"value\":", list); at != std::string::npos;
       at = json.find("{\"value\":", at + 1)) {
    out.push_back(json.substr(at, json.find('}', at) - at + 1));
  }
  return out;
}

// The servers file with every weight multiplied by `scale`, ids and names
// kept (HAProxy's weight scale done by hand).
std::string ScaledServers(const std::string& path, uint32_t scale) {
  std::ifstream in(path);
  std::string text, line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string addr, weight, rest, attribute;
    fields >> addr >> weight;
    while (fields >> attribute) rest += " " + attribute;
    text += addr + " " + std::to_string(std::stoul(weight) * scale) + rest + "\n";
  }
  return text;
}

TEST(PlanPrograms, HaproxyCandidatesAreTheScaledFleetsRings) {
  const std::string servers = DataPath("haproxy/mixed_25.servers");
  const CliRun plan = RunChash("plan --json --flavor haproxy --cv-target 3% --servers " + servers);
  ASSERT_EQ(plan.status, 0) << plan.err;
  EXPECT_EQ(JsonField(plan.out, "setting"), "weight scale");
  const std::vector<std::string> rows = Candidates(plan.out);
  // The heaviest server weighs 16: scales 1..16 keep every weight <= 256.
  ASSERT_EQ(rows.size(), 5u) << plan.out;
  std::string smallest_within_target = "null";
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint32_t scale = 1u << i;
    EXPECT_EQ(JsonField(rows[i], "value"), std::to_string(scale));
    const std::string scaled = WriteTemp("scaled.servers", ScaledServers(servers, scale));
    const CliRun stats = RunChash("stats --json --flavor haproxy --servers " + scaled);
    ASSERT_EQ(stats.status, 0) << stats.err;
    // stats prints 6 decimals, plan 10 significant digits
    for (const char* field : {"cv_measured", "max_share_ratio", "min_share_ratio"}) {
      EXPECT_NEAR(std::stod(JsonField(rows[i], field)), std::stod(JsonField(stats.out, field)),
                  1e-6)
          << field << " x" << scale;
    }
    EXPECT_EQ(JsonField(rows[i], "program_bytes"), JsonField(stats.out, "program_bytes"));
    if (smallest_within_target == "null" && std::stod(JsonField(rows[i], "cv_measured")) <= 0.03) {
      smallest_within_target = std::to_string(scale);
    }
  }
  EXPECT_EQ(JsonField(rows[0], "moved_fraction"), "0");  // scale 1 is the current ring
  EXPECT_EQ(JsonField(plan.out, "recommended"), smallest_within_target);
  EXPECT_NE(smallest_within_target, "null");

  // The config reader gives the same fleet.
  const CliRun from_cfg = RunChash("plan --json --cv-target 3% --haproxy-cfg " +
                                   DataPath("haproxy-cfg/mixed_25.cfg") + " --backend sdbm");
  ASSERT_EQ(from_cfg.status, 0) << from_cfg.err;
  EXPECT_EQ(Candidates(from_cfg.out), rows);
}

TEST(PlanPrograms, MaglevTablesArePrimesAndEnvoyRingSizesStayWithinTheMaximum) {
  const CliRun maglev = RunChash("plan --json --flavor envoy-maglev --servers " +
                                 DataPath("envoy/maglev_basic.servers"));
  ASSERT_EQ(maglev.status, 0) << maglev.err;
  const std::vector<std::string> tables = Candidates(maglev.out);
  ASSERT_FALSE(tables.empty());
  uint64_t previous = 0;
  for (const std::string& row : tables) {
    const uint64_t size = std::stoull(JsonField(row, "value"));
    EXPECT_GT(size, previous);
    previous = size;
    for (uint64_t d = 2; d * d <= size; ++d) ASSERT_NE(size % d, 0u) << size << " is not prime";
    EXPECT_EQ(JsonField(row, "points"), std::to_string(size));  // one entry a slot
  }
  const CliRun ring = RunChash("plan --json --flavor envoy-ring --max-ring-size 65536 --servers " +
                               DataPath("envoy/ring_basic.servers"));
  ASSERT_EQ(ring.status, 0) << ring.err;
  const std::vector<std::string> sizes = Candidates(ring.out);
  ASSERT_EQ(sizes.size(), 7u) << ring.out;  // 1024 .. 65536
  EXPECT_EQ(JsonField(sizes.back(), "value"), "65536");
}

TEST(PlanPrograms, KetamaCandidatesAreV2RingsAndMultiplesOptionsAreRefused) {
  const std::string servers = DataPath("libmemcached/ips_20.servers");
  const CliRun plan = RunChash("plan --json --flavor ketama-md5 --servers " + servers);
  ASSERT_EQ(plan.status, 0) << plan.err;
  const std::vector<std::string> rows = Candidates(plan.out);
  ASSERT_FALSE(rows.empty());
  const CliRun v2 =
      RunChash("stats --json --flavor pingora-v2 --multiple 160 --servers " + servers);
  ASSERT_EQ(v2.status, 0) << v2.err;
  bool found = false;
  for (const std::string& row : rows) {
    if (JsonField(row, "value") != "160") continue;
    found = true;
    EXPECT_NEAR(std::stod(JsonField(row, "cv_measured")),
                std::stod(JsonField(v2.out, "cv_measured")), 1e-6);
    EXPECT_EQ(JsonField(row, "moved_exact"), "false");  // MD5 keys against CRC-32 keys
  }
  EXPECT_TRUE(found) << plan.out;
  const CliRun refused = RunChash("plan --flavor ketama-md5 --multiples 4,8 --servers " + servers);
  EXPECT_EQ(refused.status, 2);
  EXPECT_NE(refused.err.find("--multiples plans pingora-v2 multiples"), std::string::npos)
      << refused.err;
}

TEST(PlanPrograms, PlotHasAMarkForEachCandidate) {
  const std::string svg = testing::TempPath("plan_program.svg");
  const CliRun plan = RunChash("plan --flavor varnish-shard --plot " + svg + " --servers " +
                               DataPath("varnish/idents_12.servers"));
  ASSERT_EQ(plan.status, 0) << plan.err;
  const std::string text = testing::ReadAll(svg);
  size_t marks = 0;
  for (size_t at = text.find("data-series=\"cv_measured\""); at != std::string::npos;
       at = text.find("data-series=\"cv_measured\"", at + 1)) {
    ++marks;
  }
  EXPECT_EQ(marks, 8u);  // replicas 8, 16, 32, 67, 128, 256, 512, 1024
  EXPECT_NE(text.find("replicas"), std::string::npos);
}

}  // namespace
}  // namespace chash
