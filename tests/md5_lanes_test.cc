// The MD5 of several messages at once (hash/md5_lanes-inl.h, a SIMD lane a
// message) and chash's one-message MD5 (hash/program_hashes.h) against
// OpenSSL's, on every SIMD target: every length from 0 to 300 bytes (one,
// two and more blocks; 55, 56, 63, 64 and 119, 120 bytes around where the
// padding needs another block), groups of every size up to 70 (a partial
// group of lanes, several groups) mixing lengths, and bytes of every value.
#include <gtest/gtest.h>
#include <openssl/evp.h>

#include <random>
#include <string>
#include <vector>

#include "hash/program_hashes.h"
#include "simd/search.h"
#include "test_util.h"

namespace chash {
namespace {

std::array<uint32_t, 4> OpensslWords(const std::string& message) {
  unsigned char digest[16];
  unsigned int size = 0;
  EVP_Digest(message.data(), message.size(), digest, &size, EVP_md5(), nullptr);
  std::array<uint32_t, 4> words{};
  for (int j = 0; j < 4; ++j) words[j] = internal::DigestWordLe(digest, j);
  return words;
}

std::string RandomMessage(std::mt19937_64& rng, size_t size) {
  std::string message(size, '\0');
  for (char& c : message) c = static_cast<char>(rng());
  return message;
}

TEST(Md5Lanes, EveryLengthOnEveryTarget) {
  std::mt19937_64 rng(5);
  std::vector<std::string> messages;
  for (size_t size = 0; size <= 300; ++size) messages.push_back(RandomMessage(rng, size));
  testing::ForEachTarget([&](const std::string& target) {
    std::vector<std::string_view> views(messages.begin(), messages.end());
    std::vector<uint32_t> words(4 * views.size());
    internal::DispatchMd5Messages(views.data(), views.size(), words.data());
    for (size_t i = 0; i < messages.size(); ++i) {
      const std::array<uint32_t, 4> want = OpensslWords(messages[i]);
      for (int j = 0; j < 4; ++j) {
        ASSERT_EQ(words[4 * i + j], want[j]) << target << ": " << messages[i].size() << " bytes";
      }
    }
  });
}

TEST(Md5Lanes, GroupsOfEverySizeMixingLengths) {
  std::mt19937_64 rng(6);
  testing::ForEachTarget([&](const std::string& target) {
    for (size_t count = 1; count <= 70; ++count) {
      std::vector<std::string> messages;
      for (size_t i = 0; i < count; ++i) messages.push_back(RandomMessage(rng, rng() % 140));
      std::vector<std::string_view> views(messages.begin(), messages.end());
      std::vector<uint32_t> words(4 * count + 4, 0xDEADBEEFu);
      internal::DispatchMd5Messages(views.data(), count, words.data());
      for (size_t i = 0; i < count; ++i) {
        const std::array<uint32_t, 4> want = OpensslWords(messages[i]);
        for (int j = 0; j < 4; ++j) {
          ASSERT_EQ(words[4 * i + j], want[j]) << target << ": group of " << count;
        }
      }
      for (size_t j = 4 * count; j < words.size(); ++j) {
        ASSERT_EQ(words[j], 0xDEADBEEFu) << target << ": wrote past the group";
      }
    }
  });
}

TEST(Md5Lanes, OneMessageMd5MatchesOpenssl) {
  std::mt19937_64 rng(7);
  for (size_t size = 0; size <= 300; ++size) {
    const std::string message = RandomMessage(rng, size);
    uint8_t digest[16];
    internal::Md5(message.data(), message.size(), digest);
    const std::array<uint32_t, 4> want = OpensslWords(message);
    for (int j = 0; j < 4; ++j) ASSERT_EQ(internal::DigestWordLe(digest, j), want[j]) << size;
    ASSERT_EQ(internal::Md5Le32(message.data(), message.size()), want[0]);
  }
}

// The ketama key hash of a batch goes through the lanes: the same as one
// key at a time, tags and empty keys included (twemproxy).
TEST(Md5Lanes, BatchKeyHashesMatchSingle) {
  std::mt19937_64 rng(8);
  std::vector<std::string> keys = {"", "{tag}", "a{b}c", "{}", "x"};
  for (int i = 0; i < 150; ++i) keys.push_back(RandomMessage(rng, rng() % 90));
  std::vector<std::string_view> views(keys.begin(), keys.end());
  for (const bool tagged : {false, true}) {
    internal::KeyHasher hasher;
    hasher.kind = internal::KeyHashKind::kMd5Le32;
    hasher.zero_for_empty = tagged;
    hasher.tagged = tagged;
    hasher.tag = {'{', '}'};
    testing::ForEachTarget([&](const std::string& target) {
      std::vector<uint64_t> batch(views.size());
      internal::HashKeys(hasher, views.data(), views.size(), batch.data());
      for (size_t i = 0; i < views.size(); ++i) {
        ASSERT_EQ(batch[i], internal::HashKey(hasher, views[i].data(), views[i].size()))
            << target << " key " << i;
      }
    });
  }
}

}  // namespace
}  // namespace chash
