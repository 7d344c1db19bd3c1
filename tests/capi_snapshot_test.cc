// The C API's snapshot calls (chash_c.h: chash_snapshot_*): a snapshot loaded
// through C answers as the ring it was written from, on the golden servers
// and with its named subsets; bad files, untrusted keys, old versions and
// NULLs give the documented codes, never a crash.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "capi_handles.h"
#include "chash/chash_c.h"
#include "chash/snapshot.h"
#include "cli_run.h"
#include "snapshot_util.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::MaskHandle;
using testing::RingHandle;
using testing::SnapshotHandle;
using testing::TempPath;

std::string Address(uint32_t i) { return "10.9." + std::to_string(i / 200) + "." +
                                         std::to_string(i % 200 + 1) + ":443"; }

// Server i of the fleet has weight 1 + i % 3, in any ring it is part of.
Ring BuildServers(const std::vector<uint32_t>& fleet_ids, Flavor flavor, uint32_t multiple) {
  RingBuilder builder({.flavor = flavor, .point_multiple = multiple});
  for (const uint32_t i : fleet_ids) EXPECT_TRUE(builder.Add(Address(i), 1 + i % 3).ok());
  Result<Ring> ring = std::move(builder).Build();
  EXPECT_TRUE(ring.ok()) << ring.status().ToString();
  return std::move(ring).value();
}

class CApiSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    for (uint32_t i = 0; i < 60; ++i) servers_.push_back(i);
    ring_ = BuildServers(servers_, Flavor::kPingoraV2, 40);
    NodeMask even(ring_.num_nodes(), false);
    for (uint32_t id = 0; id < ring_.num_nodes(); id += 2) {
      even.Set(id, true);
      even_servers_.push_back(id);
    }
    Result<SecretKey> key = GenerateSecretKey();
    ASSERT_TRUE(key.ok());
    key_ = key.value();
    SnapshotWriteOptions write;
    write.config_version = 7;
    write.label = "eu-west canary";
    write.subsets.push_back({"even", even});
    write.signing_key = key_;
    path_ = TempPath("capi_snapshot.ring");
    ASSERT_TRUE(WriteSnapshotFile(ring_, write, path_).ok());
  }

  chash_snapshot_options Trusting(const PublicKey& key) {
    trusted_.assign(key.bytes.begin(), key.bytes.end());
    chash_snapshot_options options = testing::Sized<chash_snapshot_options>();
    options.trusted_keys = trusted_.data();
    options.n_trusted_keys = 1;
    return options;
  }

  std::vector<uint32_t> servers_, even_servers_;  // fleet ids
  Ring ring_;
  SecretKey key_;
  std::string path_;
  std::vector<uint8_t> trusted_;
};

TEST_F(CApiSnapshot, LoadedRingAndSubsetAnswerAsBuilt) {
  for (const uint32_t mode : {CHASH_LOAD_SEALED, CHASH_LOAD_MAP, CHASH_LOAD_COPY}) {
    chash_snapshot_options options = Trusting(key_.public_key());
    options.mode = mode;
    chash_snapshot* raw = nullptr;
    ASSERT_EQ(chash_snapshot_load(path_.c_str(), &options, &raw), CHASH_OK) << chash_last_error();
    SnapshotHandle snapshot(raw);

    chash_snapshot_info info = testing::Sized<chash_snapshot_info>();
    ASSERT_EQ(chash_snapshot_get_info(snapshot.get(), &info), CHASH_OK);
    EXPECT_EQ(info.config_version, 7u);
    EXPECT_EQ(info.minor_version, 3);
    EXPECT_EQ(info.expires_unix_seconds, 0);
    EXPECT_EQ(std::memcmp(info.fingerprint, RingFingerprint(ring_).bytes.data(), 32), 0);
    EXPECT_EQ(info.flavor, CHASH_FLAVOR_PINGORA_V2);
    EXPECT_EQ(info.point_multiple, 40u);
    EXPECT_EQ(info.nodes, 60u);
    EXPECT_EQ(info.points, ring_.num_points());
    EXPECT_EQ(info.subsets, 1u);
    EXPECT_EQ(info.is_signed, 1u);
    EXPECT_EQ(info.mode, mode);
    EXPECT_EQ(std::memcmp(info.key_id, key_.public_key().KeyId().data(), CHASH_KEY_ID_SIZE), 0);
    EXPECT_STREQ(chash_snapshot_label(snapshot.get()), "eu-west canary");
    EXPECT_STREQ(chash_snapshot_subset_name(snapshot.get(), 0), "even");
    EXPECT_EQ(chash_snapshot_subset_name(snapshot.get(), 1), nullptr);

    chash_ring* ring_raw = nullptr;
    ASSERT_EQ(chash_snapshot_ring(snapshot.get(), &ring_raw), CHASH_OK);
    RingHandle ring(ring_raw);
    chash_node_mask* mask_raw = nullptr;
    ASSERT_EQ(chash_snapshot_subset(snapshot.get(), "even", &mask_raw), CHASH_OK);
    MaskHandle mask(mask_raw);
    // The snapshot handle may go first: the ring keeps the mapping alive.
    snapshot.reset();

    // The subset answers as a ring built from only its servers (built
    // independently here, not from the mask).
    const Ring even_ring = BuildServers(even_servers_, Flavor::kPingoraV2, 40);
    ASSERT_EQ(even_ring.num_nodes(), 30u);
    std::mt19937 rng(11 + mode);
    for (int i = 0; i < 20000; ++i) {
      const std::string key = "/objects/" + std::to_string(rng());
      const uint32_t c_node = chash_ring_find(ring.get(), key.data(), key.size());
      ASSERT_EQ(c_node, ring_.FindNode(key)) << key;
      const uint32_t c_subset =
          chash_ring_find_available(ring.get(), mask.get(), key.data(), key.size());
      ASSERT_NE(c_subset, CHASH_NO_NODE);
      size_t address_len = 0;
      const char* address = chash_ring_node_address(ring.get(), c_subset, &address_len);
      ASSERT_NE(address, nullptr);
      ASSERT_EQ(std::string(address, address_len),
                even_ring.node(even_ring.FindNode(key)).address.written)
          << key;
    }
  }
}

TEST_F(CApiSnapshot, VerifyAndLoadBytes) {
  chash_snapshot_options options = Trusting(key_.public_key());
  EXPECT_EQ(chash_snapshot_verify(path_.c_str(), &options), CHASH_OK) << chash_last_error();
  EXPECT_EQ(chash_snapshot_verify(path_.c_str(), nullptr), CHASH_OK) << chash_last_error();
  Result<std::string> bytes = SerializeSnapshot(ring_, {});
  ASSERT_TRUE(bytes.ok());
  chash_snapshot* raw = nullptr;
  ASSERT_EQ(chash_snapshot_load_bytes(bytes.value().data(), bytes.value().size(), nullptr, &raw),
            CHASH_OK)
      << chash_last_error();
  SnapshotHandle snapshot(raw);
  chash_snapshot_info info = testing::Sized<chash_snapshot_info>();
  ASSERT_EQ(chash_snapshot_get_info(snapshot.get(), &info), CHASH_OK);
  EXPECT_EQ(info.is_signed, 0u);
  EXPECT_EQ(info.mode, CHASH_LOAD_COPY);
  EXPECT_STREQ(chash_snapshot_label(snapshot.get()), "");
  chash_node_mask* mask = nullptr;
  EXPECT_EQ(chash_snapshot_subset(snapshot.get(), "even", &mask), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(mask, nullptr);
  EXPECT_NE(std::string(chash_last_error()).find("it has none"), std::string::npos)
      << chash_last_error();
}

TEST_F(CApiSnapshot, RefusalsNameTheCheck) {
  // Damaged: one byte of the hash column flipped.
  Result<std::string> bytes = SerializeSnapshot(ring_, {});
  ASSERT_TRUE(bytes.ok());
  std::string damaged = bytes.value();
  damaged[damaged.size() / 2] ^= 0x10;
  chash_snapshot* raw = nullptr;
  EXPECT_EQ(chash_snapshot_load_bytes(damaged.data(), damaged.size(), nullptr, &raw),
            CHASH_E_BAD_SNAPSHOT);
  EXPECT_EQ(raw, nullptr);
  EXPECT_EQ(std::string(chash_last_error()).rfind("checksum", 0), 0u) << chash_last_error();
  // Truncated.
  EXPECT_EQ(chash_snapshot_load_bytes(bytes.value().data(), bytes.value().size() - 1, nullptr,
                                      &raw),
            CHASH_E_BAD_SNAPSHOT);
  EXPECT_EQ(std::string(chash_last_error()).rfind("size", 0), 0u) << chash_last_error();

  // Signed by a key the loader does not trust.
  Result<SecretKey> other = GenerateSecretKey();
  ASSERT_TRUE(other.ok());
  chash_snapshot_options untrusting = Trusting(other.value().public_key());
  EXPECT_EQ(chash_snapshot_load(path_.c_str(), &untrusting, &raw), CHASH_E_UNTRUSTED);
  EXPECT_EQ(std::string(chash_last_error()).rfind("signature", 0), 0u) << chash_last_error();
  EXPECT_EQ(chash_snapshot_verify(path_.c_str(), &untrusting), CHASH_E_UNTRUSTED);

  // Older than the minimum config version.
  chash_snapshot_options newer = testing::Sized<chash_snapshot_options>();
  newer.min_config_version = 8;
  EXPECT_EQ(chash_snapshot_load(path_.c_str(), &newer, &raw), CHASH_E_UNTRUSTED);
  EXPECT_EQ(std::string(chash_last_error()).rfind("min_version", 0), 0u) << chash_last_error();
  newer.min_config_version = 7;
  EXPECT_EQ(chash_snapshot_verify(path_.c_str(), &newer), CHASH_OK) << chash_last_error();

  // Missing file.
  const std::string missing = TempPath("capi_snapshot_missing.ring");
  EXPECT_EQ(chash_snapshot_load(missing.c_str(), nullptr, &raw), CHASH_E_IO);
  EXPECT_EQ(raw, nullptr);
}

TEST_F(CApiSnapshot, NullArguments) {
  chash_snapshot* raw = nullptr;
  EXPECT_EQ(chash_snapshot_load(nullptr, nullptr, &raw), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_snapshot_load(path_.c_str(), nullptr, nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_snapshot_load_bytes(nullptr, 10, nullptr, &raw), CHASH_E_NULL_ARGUMENT);
  chash_snapshot_options bad_keys = testing::Sized<chash_snapshot_options>();
  bad_keys.n_trusted_keys = 1;  // trusted_keys NULL
  EXPECT_EQ(chash_snapshot_load(path_.c_str(), &bad_keys, &raw), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(raw, nullptr);
  EXPECT_EQ(chash_snapshot_verify(nullptr, nullptr), CHASH_E_NULL_ARGUMENT);
  chash_ring* ring = nullptr;
  EXPECT_EQ(chash_snapshot_ring(nullptr, &ring), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(ring, nullptr);
  chash_snapshot_info info = testing::Sized<chash_snapshot_info>();
  EXPECT_EQ(chash_snapshot_get_info(nullptr, &info), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_snapshot_label(nullptr), nullptr);
  EXPECT_EQ(chash_snapshot_subset_name(nullptr, 0), nullptr);
  chash_node_mask* mask = nullptr;
  EXPECT_EQ(chash_snapshot_subset(nullptr, "even", &mask), CHASH_E_NULL_ARGUMENT);
  uint8_t key[CHASH_PUBLIC_KEY_SIZE];
  EXPECT_EQ(chash_public_key_read(nullptr, key), CHASH_E_NULL_ARGUMENT);
  chash_snapshot_free(nullptr);  // a no-op, as free(NULL)

  ASSERT_EQ(chash_snapshot_load(path_.c_str(), nullptr, &raw), CHASH_OK);
  SnapshotHandle snapshot(raw);
  EXPECT_EQ(chash_snapshot_get_info(snapshot.get(), nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_snapshot_subset(snapshot.get(), nullptr, &mask), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_snapshot_subset(snapshot.get(), "even", nullptr), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_snapshot_ring(snapshot.get(), nullptr), CHASH_E_NULL_ARGUMENT);
}

TEST_F(CApiSnapshot, PublicKeyFiles) {
  const std::string base = TempPath("capi_snapshot_key");
  std::remove(base.c_str());
  std::remove((base + ".pub").c_str());
  ASSERT_TRUE(WriteKeyFiles(key_, base).ok());
  uint8_t key[CHASH_PUBLIC_KEY_SIZE] = {};
  ASSERT_EQ(chash_public_key_read((base + ".pub").c_str(), key), CHASH_OK) << chash_last_error();
  EXPECT_EQ(std::memcmp(key, key_.public_key().bytes.data(), CHASH_PUBLIC_KEY_SIZE), 0);
  chash_snapshot_options options = testing::Sized<chash_snapshot_options>();
  options.trusted_keys = key;
  options.n_trusted_keys = 1;
  EXPECT_EQ(chash_snapshot_verify(path_.c_str(), &options), CHASH_OK) << chash_last_error();
  // The secret key file is not a public key; a servers file is neither.
  EXPECT_EQ(chash_public_key_read(base.c_str(), key), CHASH_E_BAD_ARGUMENT) << chash_last_error();
  EXPECT_EQ(chash_public_key_read(TempPath("capi_snapshot_nokey").c_str(), key), CHASH_E_IO);
}

// The reload policy through C: a new file, an embedder's refusal of one,
// the report, and the last good file across a "restart".
TEST_F(CApiSnapshot, ReloaderAcceptsRefusesAndReports) {
  const std::string dir = TempPath("capi_reload_state");
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = TempPath("capi_reload.chash");
  ASSERT_TRUE(WriteSnapshotFile(ring_, testing::Versioned(1), path).ok());
  chash_reloader_options options = testing::Sized<chash_reloader_options>();
  options.state_dir = dir.c_str();
  options.name = "capi";
  chash_reloader* reloader = nullptr;
  ASSERT_EQ(chash_reloader_new(path.c_str(), &options, &reloader), CHASH_OK) << chash_last_error();

  chash_reload_result result = testing::Sized<chash_reload_result>();
  // The reloader's check of its path, into `result`.
  const auto check = [&] {
    result = testing::Sized<chash_reload_result>();
    return chash_reloader_check(reloader, &result);
  };
  ASSERT_EQ(check(), CHASH_OK);
  EXPECT_EQ(result.outcome, CHASH_RELOAD_UNCHANGED);
  EXPECT_EQ(result.snapshot, nullptr);

  ASSERT_TRUE(WriteSnapshotFile(ring_, testing::Versioned(2), path).ok());
  ASSERT_EQ(check(), CHASH_OK);
  ASSERT_EQ(result.outcome, CHASH_RELOAD_NEW);
  EXPECT_EQ(result.config_version, 2u);
  ASSERT_NE(result.snapshot, nullptr);
  // The embedder refuses it (say its addresses are names): remembered.
  ASSERT_EQ(chash_reloader_refuse(reloader, &result, CHASH_CHECK_ADDRESS, "node 3 is a name"),
            CHASH_OK);
  chash_snapshot_free(result.snapshot);
  ASSERT_EQ(check(), CHASH_OK);
  EXPECT_EQ(result.outcome, CHASH_RELOAD_UNCHANGED) << "a refused file is not looked at again";
  chash_reload_report report = testing::Sized<chash_reload_report>();
  ASSERT_EQ(chash_reloader_report(reloader, &report), CHASH_OK);
  EXPECT_EQ(report.last_check, CHASH_CHECK_ADDRESS);
  EXPECT_STREQ(report.last_message, "address: node 3 is a name");
  EXPECT_EQ(report.served_version, 1u);

  ASSERT_TRUE(WriteSnapshotFile(ring_, testing::Versioned(3), path).ok());
  ASSERT_EQ(check(), CHASH_OK);
  ASSERT_EQ(result.outcome, CHASH_RELOAD_NEW);
  EXPECT_EQ(chash_reloader_accept(reloader, &result), CHASH_OK) << chash_last_error();
  chash_snapshot_free(result.snapshot);
  EXPECT_EQ(chash_reloader_accept(reloader, &result), CHASH_E_BAD_ARGUMENT) << "accepted twice";
  chash_snapshot* current = nullptr;
  ASSERT_EQ(chash_reloader_current(reloader, &current), CHASH_OK);
  chash_snapshot_info info = testing::Sized<chash_snapshot_info>();
  ASSERT_EQ(chash_snapshot_get_info(current, &info), CHASH_OK);
  EXPECT_EQ(info.config_version, 3u);
  EXPECT_EQ(info.mode, CHASH_LOAD_SEALED);
  chash_snapshot_free(current);
  chash_reloader_free(reloader);

  // A "restart" on version 1: refused (rollback), version 3 served from BASE.good.
  ASSERT_TRUE(WriteSnapshotFile(ring_, testing::Versioned(1), path).ok());
  ASSERT_EQ(chash_reloader_new(path.c_str(), &options, &reloader), CHASH_OK) << chash_last_error();
  report = testing::Sized<chash_reload_report>();
  ASSERT_EQ(chash_reloader_report(reloader, &report), CHASH_OK);
  EXPECT_EQ(report.served_version, 3u);
  EXPECT_EQ(report.serving_last_good, 1u);
  EXPECT_EQ(report.last_check, CHASH_CHECK_ROLLBACK);
  EXPECT_EQ(chash_reloader_poll(reloader), CHASH_OK) << "the refused file is not looked at again";
  chash_reloader_free(reloader);

  // A refusal carries its error code beside its check.
  chash_reloader_options deferred = options;
  deferred.flags = CHASH_RELOAD_DEFER;
  deferred.name = "capi-deferred";
  ASSERT_EQ(chash_reloader_new(path.c_str(), &deferred, &reloader), CHASH_OK);
  chash_snapshot* none = nullptr;
  ASSERT_EQ(chash_reloader_current(reloader, &none), CHASH_OK);
  EXPECT_EQ(none, nullptr) << "a deferred reloader serves nothing before its first check";
  ASSERT_EQ(check(), CHASH_OK);
  ASSERT_EQ(result.outcome, CHASH_RELOAD_NEW);
  ASSERT_EQ(chash_reloader_accept(reloader, &result), CHASH_OK);
  chash_snapshot_free(result.snapshot);
  std::string damaged = SerializeSnapshot(ring_, testing::Versioned(3)).value();
  damaged[damaged.size() / 2] ^= 1;
  std::ofstream(path + ".bad", std::ios::binary) << damaged;
  ASSERT_EQ(std::rename((path + ".bad").c_str(), path.c_str()), 0);
  ASSERT_EQ(check(), CHASH_OK);
  EXPECT_EQ(result.outcome, CHASH_RELOAD_REFUSED);
  EXPECT_EQ(result.check, CHASH_CHECK_CHECKSUM);
  EXPECT_EQ(result.error, CHASH_E_BAD_SNAPSHOT);
  chash_reloader_free(reloader);

  // Errors: bad names, sizes, flags.
  chash_reloader_options bad = options;
  bad.name = "../etc";
  EXPECT_EQ(chash_reloader_new(path.c_str(), &bad, &reloader), CHASH_E_BAD_ARGUMENT);
  bad = options;
  bad.flags = 1u << 20;
  EXPECT_EQ(chash_reloader_new(path.c_str(), &bad, &reloader), CHASH_E_BAD_ARGUMENT);
  bad = options;
  bad.state_dir = "/nonexistent-state-dir";
  EXPECT_EQ(chash_reloader_new(path.c_str(), &bad, &reloader), CHASH_E_IO);
  EXPECT_EQ(reloader, nullptr);
  EXPECT_EQ(chash_reloader_check(nullptr, &result), CHASH_E_NULL_ARGUMENT);
  std::filesystem::remove_all(dir);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace chash
