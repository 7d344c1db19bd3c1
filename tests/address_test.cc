// Address parsing per flavor: the exact bytes hashed, and clear refusals.
#include <string>
#include <string_view>

#include "test_util.h"

namespace chash {
namespace {

struct Split {
  std::string text, host, port;
};

using Parser = Result<NodeAddress> (*)(std::string_view);

// parse takes c.text and hashes c.host and c.port. The address, for the
// caller's checks of its own; an empty one when parse refused the text.
NodeAddress ExpectSplit(Parser parse, const Split& c) {
  const Result<NodeAddress> address = parse(c.text);
  EXPECT_TRUE(address.ok()) << c.text << ": " << address.status().ToString();
  if (!address.ok()) return NodeAddress();
  EXPECT_EQ(address.value().host, c.host) << c.text;
  EXPECT_EQ(address.value().port, c.port) << c.text;
  return address.value();
}

// parse refuses text as a bad address, with a message that holds `says`.
void ExpectRefused(Parser parse, const std::string& text, std::string_view says = "") {
  const Result<NodeAddress> address = parse(text);
  EXPECT_FALSE(address.ok()) << "accepted '" << text << "'";
  if (address.ok()) return;
  EXPECT_EQ(address.status().code(), StatusCode::kBadAddress) << text;
  EXPECT_NE(address.status().message().find(says), std::string::npos)
      << address.status().ToString();
}

TEST(NginxAddress, SplitsAsNginxDoes) {
  // tests/reference/COMPATIBILITY.md §2: unix: prefix, else scan back over digits to a ':'.
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
    const NodeAddress address = ExpectSplit(ParseNginxAddress, c);
    EXPECT_EQ(address.written, c.text);
    EXPECT_EQ(address.HashedBytes(), c.host + std::string(1, '\0') + c.port);
  }
}

TEST(NginxAddress, RefusesMalformedText) {
  for (const std::string& text : std::vector<std::string>{"", " 10.0.0.1:80", "10.0.0.1:80 ", "10.0.0.1:", "10.0.0.1:0", "10.0.0.1:65536",
        "10.0.0.1:99999999999", "10.0.0.1:8a", "::1:80", "[::1", "[::1]80", "[::g]:80",
        "[fe80::1%eth0]:80", "1.2.3.256:80", "1.2.3.4.5:80", "a,b:80", "a#b", "unix:",
        "host name:80", std::string("a\0b", 3), "héllo:80", ":80"}) {
    ExpectRefused(ParseNginxAddress, text, "address '");
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
    ExpectSplit(ParsePingoraAddress, c);
  }
}

TEST(PingoraAddress, RefusesWhatRustRefuses) {
  for (const std::string& text : std::vector<std::string>{"", "10.0.0.1", "127.0.0.2", "localhost:80", "unix:/x", "010.0.0.1:80",
        "1.2.3.256:80", "10.0.0.1:65536", "10.0.0.1:+80", "10.0.0.1:", "[::1]", "::1:80",
        "[::1]:", "[1:2:3:4:5:6:7:8:9]:1", "[1::2::3]:1", "[12345::]:1",
        "[1:2:3:4:5:6:7::8]:1", "[1.2.3.4::]:1", "[fe80::1%2]:80", "[::1]:80x",
        "10.0.0.1:80 "}) {
    ExpectRefused(ParsePingoraAddress, text);
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
  const Flavor every_flavor[] = {Flavor::kNginx,        Flavor::kPingoraV1, Flavor::kPingoraV2,
                                 Flavor::kResty,        Flavor::kHaproxy,   Flavor::kKetamaMd5,
                                 Flavor::kVarnishShard, Flavor::kEnvoyRing, Flavor::kEnvoyMaglev};
  const std::string_view names[] = {"nginx",      "pingora-v1",    "pingora-v2",
                                    "resty",      "haproxy",       "ketama-md5",
                                    "varnish-shard", "envoy-ring", "envoy-maglev"};
  for (size_t i = 0; i < std::size(every_flavor); ++i) {
    EXPECT_EQ(FlavorName(every_flavor[i]), names[i]);
    Result<Flavor> parsed = ParseFlavor(names[i]);
    ASSERT_TRUE(parsed.ok()) << names[i];
    EXPECT_EQ(parsed.value(), every_flavor[i]);
  }
  const Result<Flavor> unknown = ParseFlavor("pingora");
  EXPECT_EQ(unknown.status().code(), StatusCode::kBadArgument);
  EXPECT_NE(unknown.status().message().find("envoy-maglev"), std::string::npos)
      << unknown.status().ToString();
}

// ---- nginx's own parsers -------------------------------------------------------
// Acceptance as nginx 1.22 decides it (ngx_parse_url, ngx_inet_addr,
// ngx_inet6_addr), including the disagreements with the engine that the
// parser fuzzer found (fuzz/fuzz_parser.cc).

struct NginxCase {
  std::string text;
  bool accepted;
  std::string host, port;  // the hashed HOST and PORT when accepted
};

void ExpectNginx(const NginxCase& c) {
  if (c.accepted) {
    ExpectSplit(ParseNginxAddress, {c.text, c.host, c.port});
  } else {
    ExpectRefused(ParseNginxAddress, c.text);
  }
}

// Found by fuzz_parser: nginx's ngx_inet_addr takes an octet with any number
// of leading zeros and an empty octet as 0; chash demanded 1-3 digits.
TEST(NginxAddress, DottedQuadAsNgxInetAddr) {
  for (const NginxCase& c : std::vector<NginxCase>{
           {"...", true, "...", ""},
           {"10..0.1:80", true, "10..0.1", "80"},
           {"1.2.3.:8080", true, "1.2.3.", "8080"},
           {"0000010.0.0.1:80", true, "0000010.0.0.1", "80"},
           {"10.0.0.1", true, "10.0.0.1", ""},
           {"10.0.0.256:80", false, "", ""},
           {"10.0.0.0255", true, "10.0.0.0255", ""},
           {"10.0.0.1.2", false, "", ""},  // four dots: only a resolver could say
       }) {
    ExpectNginx(c);
  }
}

// Found by the address golden data (tests/data/address/, real nginx 1.22.1):
// a numeric host ngx_inet_addr refuses goes to getaddrinfo, and glibc's
// inet_aton reads 1 to 4 numbers, octal after a leading 0, the last one
// filling the bytes left. nginx takes those; chash refused 29 such hosts.
TEST(NginxAddress, NumericHostsAsGetaddrinfoReadsThem) {
  for (const NginxCase& c : std::vector<NginxCase>{
           {"127.1", true, "127.1", ""},
           {"127.0.1:80", true, "127.0.1", "80"},
           {"2130706433:80", true, "2130706433", "80"},
           {"0", true, "0", ""},
           {"017:80", true, "017", "80"},
           {"127.000000000000000001", true, "127.000000000000000001", ""},
           {"0377.0.0.1", true, "0377.0.0.1", ""},  // octal 255: not ngx_inet_addr's
           {"255.65535", true, "255.65535", ""},
           {"4294967295", true, "4294967295", ""},
           {"4294967296", false, "", ""},
           {"255.65536:80", true, "255.65536", "80"},
           {"255.16777216", false, "", ""},
           {"1.2.65536", false, "", ""},
           {"256.1", false, "", ""},
           {"08.1", false, "", ""},  // not octal
           {"1.", false, "", ""},
           {".1", false, "", ""},
           {"1.2.3.4.5", false, "", ""},
       }) {
    ExpectNginx(c);
  }
}

// Found by the address golden data: ngx_inet6_addr reads an embedded IPv4
// with ngx_inet_addr, whose error value INADDR_NONE is 255.255.255.255, so
// nginx refuses that address inside [...] (and takes it on its own).
TEST(NginxAddress, EmbeddedBroadcastIpv4IsRefusedInIpv6) {
  ExpectNginx({"[::ffff:255.255.255.255]:80", false, "", ""});
  ExpectNginx({"[ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255]", false, "", ""});
  ExpectNginx({"[::ffff:0255.255.255.255]:80", false, "", ""});
  ExpectNginx({"[::ffff:255.255.255.254]:80", true, "[::ffff:255.255.255.254]", "80"});
  ExpectNginx({"255.255.255.255:80", true, "255.255.255.255", "80"});
}

// Found by fuzz_parser: nginx refuses a unix socket path that does not fit
// sun_path ("too long path in the unix domain socket"); chash took any.
TEST(NginxAddress, UnixPathAtMostSunPath) {
  const std::string path107 = "/" + std::string(106, 'p');
  ExpectNginx({"unix:" + path107, true, path107, ""});
  ExpectNginx({"unix:" + path107 + "q", false, "", ""});
  ExpectNginx({"UNIX:/run/a:b", true, "/run/a:b", ""});
  ExpectNginx({"unix:", false, "", ""});
}

// Found by fuzz_parser: nginx checks the text inside [...] with
// ngx_inet6_addr, not the RFC 4291 grammar chash used. It skips one leading
// ':', needs a trailing "::" to stand for at least two groups, and reads an
// embedded IPv4 with ngx_inet_addr. The brackets are hashed either way.
TEST(NginxAddress, Ipv6AsNgxInet6Addr) {
  for (const NginxCase& c : std::vector<NginxCase>{
           {"[:1::2]:80", true, "[:1::2]", "80"},
           {"[:1:2:3:4:5:6:7:8]", true, "[:1:2:3:4:5:6:7:8]", ""},
           {"[::01.2.3.4]:80", true, "[::01.2.3.4]", "80"},
           {"[::ffff:1..2.3]:80", true, "[::ffff:1..2.3]", "80"},
           {"[1:2:3:4:5:6:7::]:80", false, "", ""},
           {"[1:2:3:4:5:6::]:80", true, "[1:2:3:4:5:6::]", "80"},
           {"[::2:3:4:5:6:7:8]", true, "[::2:3:4:5:6:7:8]", ""},
           {"[1:2:3:4:5:6:7:8]:443", true, "[1:2:3:4:5:6:7:8]", "443"},
           {"[1:2:3:4:5:6:7:8:9]", false, "", ""},
           {"[::]", true, "[::]", ""},
           {"[:::]", false, "", ""},
           {"[1::2::3]", false, "", ""},
           {"[12345::1]", false, "", ""},
           {"[::1.2.3.4]", true, "[::1.2.3.4]", ""},
           {"[1.2.3.4::]", false, "", ""},
           {"[:1.2.3.4]", false, "", ""},
           {"[1:2:3:4:5:6:7:1.2.3.4]", false, "", ""},
           {"[1:2:3:4:5:6:1.2.3.4]", true, "[1:2:3:4:5:6:1.2.3.4]", ""},
           {"[::1234.1.1.1]", false, "", ""},
           {"[::0255.1.1.1]", true, "[::0255.1.1.1]", ""},
           {"[fe80::1%1]:80", false, "", ""},
           {"[]:80", false, "", ""},
           {"[::1]:0", false, "", ""},
           {"[::1]x", false, "", ""},
       }) {
    ExpectNginx(c);
  }
}

// The pingora side of the same texts: Rust's SocketAddr grammar, as before.
TEST(PingoraAddress, RustGrammarNotNginx) {
  ExpectRefused(ParsePingoraAddress, "[:1::2]:80");
  ExpectRefused(ParsePingoraAddress, "[::01.2.3.4]:80");
  ExpectRefused(ParsePingoraAddress, "10..0.1:80");
  ExpectSplit(ParsePingoraAddress, {"[1:2:3:4:5:6:7::]:80", "1:2:3:4:5:6:7:0", "80"});
  ExpectSplit(ParsePingoraAddress, {"[::FFFF:102:304]:0080", "::ffff:1.2.3.4", "80"});
}

}  // namespace
}  // namespace chash
