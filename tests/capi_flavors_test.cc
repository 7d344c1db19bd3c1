// The flavor table through the C API (chash_flavor_*, chash_ring_options_set):
// what the bindings read instead of keeping their own copies. The expected
// names and values are the programs' own words (HAProxy's hash-type
// functions, twemproxy's hash: names, Envoy's proto fields), written here
// from those programs, not from the table.
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "chash/chash_c.h"
#include "chash/ring.h"
#include "test_util.h"

namespace chash {
namespace {

std::vector<std::string> FlavorNamesFromC() {
  std::vector<std::string> names;
  for (uint32_t f = 0; const char* name = chash_flavor_name(f); ++f) names.push_back(name);
  return names;
}

std::vector<std::string> OptionNames(uint32_t flavor) {
  std::vector<std::string> names;
  for (uint32_t i = 0; const char* name = chash_flavor_option_name(flavor, i); ++i) {
    names.push_back(name);
  }
  return names;
}

chash_ring_options Fresh() {
  chash_ring_options o;
  std::memset(&o, 0, sizeof o);
  o.size = sizeof o;
  return o;
}

TEST(CApiFlavors, NamesRoundTripAndMatchTheEnum) {
  const std::vector<std::string> names = FlavorNamesFromC();
  const std::vector<std::string> expected = {"nginx",      "pingora-v1",    "pingora-v2",
                                             "resty",      "haproxy",       "ketama-md5",
                                             "varnish-shard", "envoy-ring", "envoy-maglev"};
  EXPECT_EQ(names, expected);
  for (uint32_t f = 0; f < names.size(); ++f) {
    uint32_t back = 99;
    ASSERT_EQ(chash_flavor_from_name(names[f].data(), names[f].size(), &back), CHASH_OK);
    EXPECT_EQ(back, f);
    EXPECT_EQ(FlavorName(static_cast<Flavor>(f)), names[f]);
  }
  EXPECT_EQ(chash_flavor_name(CHASH_NO_FLAVOR), nullptr);
  uint32_t out = 7;
  EXPECT_EQ(chash_flavor_from_name("ketama", 6, &out), CHASH_E_BAD_ARGUMENT);
  EXPECT_NE(std::string(chash_last_error()).find("envoy-maglev"), std::string::npos)
      << chash_last_error();
  EXPECT_EQ(out, 7u);
  EXPECT_EQ(chash_flavor_from_name(nullptr, 0, &out), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_flavor_from_name("nginx", 5, nullptr), CHASH_E_NULL_ARGUMENT);
}

TEST(CApiFlavors, PropertiesAreThePrograms) {
  const auto property = [](uint32_t flavor, uint32_t which) {
    uint64_t value = 12345;
    EXPECT_EQ(chash_flavor_property(flavor, which, &value), CHASH_OK) << flavor << " " << which;
    return value;
  };
  for (uint32_t f = 0; chash_flavor_name(f) != nullptr; ++f) {
    const bool envoy = f == CHASH_FLAVOR_ENVOY_RING || f == CHASH_FLAVOR_ENVOY_MAGLEV;
    EXPECT_EQ(property(f, CHASH_PROPERTY_KEY_HASH_BITS), envoy ? 64u : 32u) << f;
    EXPECT_EQ(property(f, CHASH_PROPERTY_RETRY),
              f == CHASH_FLAVOR_NGINX ? CHASH_RETRY_POINT_WALK
              : envoy                 ? CHASH_RETRY_ATTEMPT
                                      : CHASH_RETRY_DISTINCT)
        << f;
    EXPECT_EQ(property(f, CHASH_PROPERTY_REMOVES_DOWN),
              f == CHASH_FLAVOR_HAPROXY || f == CHASH_FLAVOR_KETAMA_MD5 ? 1u : 0u)
        << f;
    EXPECT_EQ(property(f, CHASH_PROPERTY_OTHER_PROGRAM), f >= CHASH_FLAVOR_HAPROXY ? 1u : 0u)
        << f;
    EXPECT_EQ(property(f, CHASH_PROPERTY_TAKES_MULTIPLE),
              f == CHASH_FLAVOR_PINGORA_V2 || f == CHASH_FLAVOR_RESTY ? 1u : 0u)
        << f;
    EXPECT_EQ(property(f, CHASH_PROPERTY_NODE_FIELD),
              f == CHASH_FLAVOR_HAPROXY ? CHASH_NODE_FIELD_SERVER_ID
              : f == CHASH_FLAVOR_KETAMA_MD5 ? CHASH_NODE_FIELD_NAME
              : f == CHASH_FLAVOR_VARNISH_SHARD
                  ? CHASH_NODE_FIELD_NAME | CHASH_NODE_FIELD_REAL_WEIGHT
              : envoy ? CHASH_NODE_FIELD_HOSTNAME | CHASH_NODE_FIELD_HASH_KEY
                      : CHASH_NODE_FIELD_NONE)
        << f;
  }
  EXPECT_EQ(property(CHASH_FLAVOR_HAPROXY, CHASH_PROPERTY_LOOKUP_RULE), CHASH_LOOKUP_NEAREST);
  EXPECT_EQ(property(CHASH_FLAVOR_VARNISH_SHARD, CHASH_PROPERTY_LOOKUP_RULE),
            CHASH_LOOKUP_SUCCESSOR_CLAMPED);
  EXPECT_EQ(property(CHASH_FLAVOR_ENVOY_MAGLEV, CHASH_PROPERTY_LOOKUP_RULE), CHASH_LOOKUP_TABLE);
  EXPECT_EQ(property(CHASH_FLAVOR_NGINX, CHASH_PROPERTY_LOOKUP_RULE), CHASH_LOOKUP_SUCCESSOR);
  uint64_t value = 0;
  EXPECT_EQ(chash_flavor_property(chash::testing::FirstUnknownFlavor(), CHASH_PROPERTY_RETRY, &value),
            CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_flavor_property(0, 999, &value), CHASH_E_BAD_ARGUMENT);
  EXPECT_EQ(chash_flavor_property(0, 0, nullptr), CHASH_E_NULL_ARGUMENT);
}

TEST(CApiFlavors, EachProgramFlavorListsItsOptions) {
  EXPECT_TRUE(OptionNames(CHASH_FLAVOR_NGINX).empty());
  EXPECT_TRUE(OptionNames(CHASH_FLAVOR_PINGORA_V2).empty());
  EXPECT_EQ(OptionNames(CHASH_FLAVOR_HAPROXY),
            (std::vector<std::string>{"hash_function", "avalanche", "server_key"}));
  EXPECT_EQ(OptionNames(CHASH_FLAVOR_KETAMA_MD5),
            (std::vector<std::string>{"variant", "key_hash", "default_port", "hash_tag"}));
  EXPECT_EQ(OptionNames(CHASH_FLAVOR_VARNISH_SHARD), (std::vector<std::string>{"replicas"}));
  EXPECT_EQ(OptionNames(CHASH_FLAVOR_ENVOY_RING),
            (std::vector<std::string>{"min_ring_size", "max_ring_size", "hash_function"}));
  EXPECT_EQ(OptionNames(CHASH_FLAVOR_ENVOY_MAGLEV), (std::vector<std::string>{"table_size"}));
  EXPECT_EQ(chash_flavor_option_name(CHASH_NO_FLAVOR, 0), nullptr);
  EXPECT_STREQ(chash_flavor_option_alias(CHASH_FLAVOR_ENVOY_RING, 0), "minimum_ring_size");
  EXPECT_STREQ(chash_flavor_option_alias(CHASH_FLAVOR_ENVOY_RING, 1), "maximum_ring_size");
  EXPECT_STREQ(chash_flavor_option_alias(CHASH_FLAVOR_KETAMA_MD5, 0), "");
  EXPECT_EQ(chash_flavor_option_alias(CHASH_FLAVOR_ENVOY_MAGLEV, 1), nullptr);
  // Every option says what it takes, its default and what it chooses.
  for (uint32_t f = 0; chash_flavor_name(f) != nullptr; ++f) {
    for (uint32_t i = 0; chash_flavor_option_name(f, i) != nullptr; ++i) {
      ASSERT_NE(chash_flavor_option_values(f, i), nullptr);
      ASSERT_NE(chash_flavor_option_default(f, i), nullptr);
      ASSERT_NE(chash_flavor_option_what(f, i), nullptr);
      EXPECT_GT(std::strlen(chash_flavor_option_what(f, i)), 5u);
    }
  }
  EXPECT_STREQ(chash_flavor_option_values(CHASH_FLAVOR_HAPROXY, 0),
               "one of sdbm, djb2, wt6, crc32");
  EXPECT_STREQ(chash_flavor_option_values(CHASH_FLAVOR_KETAMA_MD5, 2), "an integer 1..65535");
  EXPECT_STREQ(chash_flavor_option_default(CHASH_FLAVOR_ENVOY_MAGLEV, 0), "65537");
  EXPECT_STREQ(chash_flavor_option_default(CHASH_FLAVOR_VARNISH_SHARD, 0), "67");
}

// Each option's text lands in the C struct field the 1.0 API documents, with
// the values of chash_c.h's constants.
TEST(CApiFlavors, SettingByNameFillsTheStruct) {
  chash_ring_options o = Fresh();
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_KETAMA_MD5, "variant", "twemproxy"), CHASH_OK);
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_KETAMA_MD5, "key_hash", "murmur3"), CHASH_OK);
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_KETAMA_MD5, "default_port", "11212"),
            CHASH_OK);
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_KETAMA_MD5, "hash_tag", "{}"), CHASH_OK);
  EXPECT_EQ(o.ketama_variant, CHASH_KETAMA_TWEMPROXY);
  EXPECT_EQ(o.ketama_key_hash, CHASH_KETAMA_HASH_MURMUR3);
  EXPECT_EQ(o.ketama_default_port, 11212u);
  EXPECT_EQ(o.ketama_hash_tag[0], '{');
  EXPECT_EQ(o.ketama_hash_tag[1], '}');

  o = Fresh();
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_ENVOY_RING, "minimum_ring_size", "64"),
            CHASH_OK);  // Envoy's field name, the alias
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_ENVOY_RING, "max_ring_size", "8388608"),
            CHASH_OK);
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_ENVOY_RING, "hash_function", "murmur_hash_2"),
            CHASH_OK);
  EXPECT_EQ(o.envoy_minimum_ring_size, 64u);
  EXPECT_EQ(o.envoy_maximum_ring_size, 8388608u);
  EXPECT_EQ(o.envoy_hash, 1u);
  EXPECT_EQ(o.haproxy_hash, 0u);  // hash_function of envoy-ring is Envoy's field

  o = Fresh();
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_ENVOY_MAGLEV, "table_size", "5000011"),
            CHASH_OK);
  EXPECT_EQ(o.maglev_table_size, 5000011u);
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_VARNISH_SHARD, "replicas", "4294967295"),
            CHASH_OK);
  EXPECT_EQ(o.varnish_replicas, 4294967295u);
}

// HAProxy's `hash-type consistent FUNCTION [avalanche]`: naming a function
// turns the avalanche off unless `avalanche` is given, in either order.
TEST(CApiFlavors, HaproxyAvalancheFollowsTheFunctionInEitherOrder) {
  chash_ring_options o = Fresh();
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_HAPROXY, "hash_function", "djb2"), CHASH_OK);
  EXPECT_EQ(o.haproxy_hash, CHASH_HAPROXY_HASH_DJB2);
  EXPECT_EQ(o.haproxy_avalanche, 2u);  // off
  o = Fresh();
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_HAPROXY, "avalanche", "on"), CHASH_OK);
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_HAPROXY, "hash_function", "wt6"), CHASH_OK);
  EXPECT_EQ(o.haproxy_avalanche, 1u);
  o = Fresh();
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_HAPROXY, "hash_function", "crc32"), CHASH_OK);
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_HAPROXY, "avalanche", "on"), CHASH_OK);
  EXPECT_EQ(o.haproxy_avalanche, 1u);
  ASSERT_EQ(chash_ring_options_set(&o, CHASH_FLAVOR_HAPROXY, "server_key", "id-unfixed-30"),
            CHASH_OK);
  EXPECT_EQ(o.haproxy_server_key, 1u);
  // A set made by name builds.
  chash_builder* builder = nullptr;
  ASSERT_EQ(chash_builder_new_with_options(CHASH_FLAVOR_HAPROXY, &o, &builder), CHASH_OK)
      << chash_last_error();
  chash_builder_free(builder);
}

TEST(CApiFlavors, RefusalsNameTheOptionAndWhatItTakes) {
  chash_ring_options o = Fresh();
  const auto refused = [&](uint32_t flavor, const char* name, const char* value,
                           std::vector<std::string> words) {
    const chash_ring_options before = o;
    EXPECT_EQ(chash_ring_options_set(&o, flavor, name, value), CHASH_E_BAD_ARGUMENT)
        << name << "=" << value;
    const std::string message = chash_last_error();
    for (const std::string& word : words) {
      EXPECT_NE(message.find(word), std::string::npos) << word << " not in: " << message;
    }
    EXPECT_EQ(std::memcmp(&before, &o, sizeof o), 0) << "a refused value changed the struct";
  };
  refused(CHASH_FLAVOR_KETAMA_MD5, "variant", "twemproxy2",
          {"variant", "libmemcached-spy-weighted", "twemproxy2"});
  refused(CHASH_FLAVOR_KETAMA_MD5, "default_port", "0", {"default_port", "1..65535"});
  refused(CHASH_FLAVOR_KETAMA_MD5, "default_port", "65536", {"1..65535"});
  refused(CHASH_FLAVOR_KETAMA_MD5, "default_port", "80x", {"80x"});
  refused(CHASH_FLAVOR_KETAMA_MD5, "default_port", "", {"default_port"});
  refused(CHASH_FLAVOR_KETAMA_MD5, "default_port", "-1", {"default_port"});
  refused(CHASH_FLAVOR_KETAMA_MD5, "hash_tag", "{", {"two bytes"});
  refused(CHASH_FLAVOR_ENVOY_RING, "min_ring_size", "8388609", {"1..8388608"});
  // The message names the option as the caller spelled it.
  refused(CHASH_FLAVOR_ENVOY_RING, "minimum_ring_size", "0",
          {"envoy-ring option minimum_ring_size must be an integer 1..8388608, got '0'"});
  refused(CHASH_FLAVOR_ENVOY_RING, "min_ring_size", "18446744073709551616", {"min_ring_size"});
  refused(CHASH_FLAVOR_ENVOY_MAGLEV, "table_size", "1", {"2..5000011"});
  refused(CHASH_FLAVOR_HAPROXY, "avalanche", "yes", {"on or off"});
  refused(CHASH_FLAVOR_HAPROXY, "variant", "twemproxy",
          {"an option of ketama-md5, not of flavor haproxy", "hash_function, avalanche"});
  refused(CHASH_FLAVOR_VARNISH_SHARD, "hash_function", "xx_hash",
          {"haproxy and envoy-ring", "replicas"});
  refused(CHASH_FLAVOR_HAPROXY, "Weight", "10", {"not an option of flavor haproxy"});
  refused(CHASH_FLAVOR_NGINX, "variant", "twemproxy", {"nginx, which takes none"});
  refused(42, "variant", "twemproxy", {"unknown flavor 42"});
  EXPECT_EQ(chash_ring_options_set(nullptr, 5, "variant", "x"), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_options_set(&o, 5, nullptr, "x"), CHASH_E_NULL_ARGUMENT);
  EXPECT_EQ(chash_ring_options_set(&o, 5, "variant", nullptr), CHASH_E_NULL_ARGUMENT);
  chash_ring_options small = Fresh();
  small.size = 8;
  EXPECT_EQ(chash_ring_options_set(&small, 5, "variant", "twemproxy"), CHASH_E_BAD_ARGUMENT);
}

}  // namespace
}  // namespace chash
