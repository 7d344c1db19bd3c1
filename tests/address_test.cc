// Address parsing per flavour: the exact bytes hashed, and clear refusals.
#include "test_util.h"

namespace chash {
namespace {

struct Split {
  std::string text, host, port;
};

TEST(NginxAddress, SplitsAsNginxDoes) {
  // compat-spec.md §2: unix: prefix, else scan back over digits to a ':'.
  for (const Split& c : std::vector<Split>{
           {"10.0.0.1:443", "10.0.0.1", "443"},
           {"[::1]:7777", "[::1]", "7777"},
           {"[::1]", "[::1]", ""},
           {"127.0.0.2", "127.0.0.2", ""},
           {"localhost:8080", "localhost", "8080"},
           {"backend1", "backend1", ""},
           {"unix:/run/app.sock", "/run/app.sock", ""},
           {"UNIX:/tmp/x:80", "/tmp/x:80", ""},
           {"10.0.0.1:0443", "10.0.0.1", "0443"},
           {"[2001:db8::1]:80", "[2001:db8::1]", "80"},
       }) {
    Result<NodeAddress> address = ParseNginxAddress(c.text);
    ASSERT_TRUE(address.ok()) << c.text << ": " << address.status().ToString();
    EXPECT_EQ(address.value().written, c.text);
    EXPECT_EQ(address.value().host, c.host) << c.text;
    EXPECT_EQ(address.value().port, c.port) << c.text;
    EXPECT_EQ(address.value().HashedBytes(), c.host + std::string(1, '\0') + c.port);
  }
}

TEST(NginxAddress, RefusesMalformedText) {
  for (const std::string& text : std::vector<std::string>{"", " 10.0.0.1:80", "10.0.0.1:80 ", "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536",
        "10.0.0.1:99999999999", "10.0.0.1:8a", "::1:80", "[::1", "[::1]80", "[::g]:80",
        "[fe80::1%eth0]:80", "1.2.3.256:80", "1.2.3:80", "a,b:80", "a#b", "unix:",
        "host name:80", std::string("a\0b", 3), "héllo:80", ":80"}) {
    Result<NodeAddress> address = ParseNginxAddress(text);
    EXPECT_FALSE(address.ok()) << "accepted '" << text << "'";
    if (!address.ok()) {
      EXPECT_EQ(address.status().code(), StatusCode::kBadAddress) << text;
      EXPECT_NE(address.status().message().find("address '"), std::string::npos);
    }
  }
}

TEST(PingoraAddress, HashesTheIpAsRustPrintsIt) {
  for (const Split& c : std::vector<Split>{
           {"10.0.0.1:443", "10.0.0.1", "443"},
           {"0.0.0.0:0", "0.0.0.0", "0"},
           {"255.255.255.255:65535", "255.255.255.255", "65535"},
           {"[::1]:7777", "::1", "7777"},
           {"[::]:80", "::", "80"},
           {"[2001:DB8::ABCD]:14", "2001:db8::abcd", "14"},
           {"[2001:0db8:0000:0000:0000:0000:0000:0001]:17", "2001:db8::1", "17"},
           {"[1:0:0:1:0:0:1:1]:11", "1::1:0:0:1:1", "11"},  // first longest run
           {"[1:0:1:0:1:0:1:0]:10", "1:0:1:0:1:0:1:0", "10"},  // no run of 2
           {"[::ffff:1.2.3.4]:4", "::ffff:1.2.3.4", "4"},
           {"[0:0:0:0:0:ffff:102:304]:15", "::ffff:1.2.3.4", "15"},
           {"[::1.2.3.4]:18", "::102:304", "18"},  // IPv4-compatible: plain hex
           {"[::ffff:0:102:304]:7", "::ffff:0:102:304", "7"},
           {"[1:2:3:4:5:6:7::]:1", "1:2:3:4:5:6:7:0", "1"},
           {"10.0.0.1:0080", "10.0.0.1", "80"},  // Rust accepts port zeros
       }) {
    Result<NodeAddress> address = ParsePingoraAddress(c.text);
    ASSERT_TRUE(address.ok()) << c.text << ": " << address.status().ToString();
    EXPECT_EQ(address.value().host, c.host) << c.text;
    EXPECT_EQ(address.value().port, c.port) << c.text;
  }
}

TEST(PingoraAddress, RefusesWhatRustRefuses) {
  for (const std::string& text : std::vector<std::string>{"", "10.0.0.1", "127.0.0.2", "localhost:80", "unix:/x", "010.0.0.1:80",
        "1.2.3.256:80", "10.0.0.1:65536", "10.0.0.1:+80", "10.0.0.1:", "[::1]", "::1:80",
        "[::1]:", "[1:2:3:4:5:6:7:8:9]:1", "[1::2::3]:1", "[12345::]:1",
        "[1:2:3:4:5:6:7::8]:1", "[1.2.3.4::]:1", "[fe80::1%2]:80", "[::1]:80x",
        "10.0.0.1:80 "}) {
    Result<NodeAddress> address = ParsePingoraAddress(text);
    EXPECT_FALSE(address.ok()) << "accepted '" << text << "'";
    if (!address.ok()) {
      EXPECT_EQ(address.status().code(), StatusCode::kBadAddress) << text;
    }
  }
}

TEST(PingoraAddress, SocketOrderPutsIpv4FirstThenBytesThenPort) {
  auto key = [](const char* text) { return ParsePingoraAddress(text).value().order; };
  EXPECT_LT(key("255.255.255.255:65535"), key("[::]:0"));
  EXPECT_LT(key("10.0.0.1:443"), key("10.0.0.2:1"));
  EXPECT_LT(key("10.0.0.1:1"), key("10.0.0.1:2"));
  EXPECT_LT(key("[::1]:9"), key("[::2]:1"));
  EXPECT_LT(key("[::ffff:1.2.3.4]:1"), key("[2001::1]:1"));
}

TEST(Flavor, NamesRoundTrip) {
  for (const Flavor flavor : {Flavor::kNginx, Flavor::kPingoraV1, Flavor::kPingoraV2}) {
    Result<Flavor> parsed = ParseFlavor(FlavorName(flavor));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(parsed.value(), flavor);
  }
  EXPECT_EQ(ParseFlavor("pingora").status().code(), StatusCode::kBadArgument);
}

}  // namespace
}  // namespace chash
