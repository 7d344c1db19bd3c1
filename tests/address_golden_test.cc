// Address acceptance grounded in the real programs, not in our model of them:
// tests/data/address/ holds what Debian's nginx 1.22.1 (`nginx -t`, one
// `server` line a config) and Rust's `SocketAddr::from_str` answered for the
// same spellings (see its README for the commands). chash's nginx-flavor
// and pingora-flavor parsers, and the reference ring's own parser, must give
// the same verdicts, except where chash refuses on purpose (each exception
// below says why).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "reference/reference_address.h"
#include "test_util.h"

namespace chash {
namespace {

using testing::DataPath;
using testing::ReadLines;

struct Answer {
  std::string spelling;
  bool ok = false;
  std::vector<std::string> fields;  // after the verdict
};

std::vector<Answer> LoadAnswers(const std::string& relative) {
  std::vector<Answer> answers;
  for (const std::string& line : ReadLines(DataPath(relative))) {
    std::vector<std::string> columns;
    size_t start = 0;
    while (true) {
      const size_t tab = line.find('\t', start);
      columns.push_back(line.substr(start, tab - start));
      if (tab == std::string::npos) break;
      start = tab + 1;
    }
    EXPECT_GE(columns.size(), 2u) << relative << ": " << line;
    if (columns.size() < 2) continue;
    EXPECT_TRUE(columns[1] == "ok" || columns[1] == "err") << relative << ": " << line;
    answers.push_back({columns[0], columns[1] == "ok", {columns.begin() + 2, columns.end()}});
  }
  return answers;
}

const std::vector<Answer>& NginxAnswers() {
  static const auto* answers = new std::vector<Answer>(LoadAnswers("address/nginx-1.22.1.tsv"));
  return *answers;
}
const std::vector<Answer>& RustAnswers() {
  static const auto* answers = new std::vector<Answer>(LoadAnswers("address/rust-socketaddr.tsv"));
  return *answers;
}

// One parser's verdict: the engine's or the reference's.
struct Verdict {
  bool ok = false;
  std::string host, port, why;
};
using Parser = Verdict (*)(Flavor, std::string_view);

Verdict Engine(Flavor flavor, std::string_view text) {
  const Result<NodeAddress> parsed = ParseNodeAddress(flavor, text);
  if (!parsed.ok()) return {false, "", "", parsed.status().ToString()};
  return {true, parsed.value().host, parsed.value().port, ""};
}
Verdict Reference(Flavor flavor, std::string_view text) {
  const reference::ParsedAddress parsed = reference::ParseAddress(flavor, text);
  return {parsed.accepted, parsed.host, parsed.port, parsed.why};
}
const std::pair<const char*, Parser> kParsers[] = {{"engine", &Engine}, {"reference", &Reference}};

bool HasByte(std::string_view text, bool (*pred)(unsigned char)) {
  for (const char c : text) {
    if (pred(static_cast<unsigned char>(c))) return true;
  }
  return false;
}

// chash refuses these although the peer takes them: a servers file splits
// fields at whitespace and '#' starts a comment, and `route` prints
// `KEY,ADDR` lines.
std::optional<std::string> RefusedForTheFileSyntax(std::string_view text) {
  if (HasByte(text, [](unsigned char c) { return c <= 0x20 || c == 0x7F || c == ',' || c == '#'; }))
    return "whitespace, ',' or '#'";
  return std::nullopt;
}

bool IsNameByte(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

// What chash should answer for a spelling nginx answered. nginx resolves
// host names when it reads the config, and this machine resolves only the
// names in /etc/hosts: every other name fails with "host not found in
// upstream" after nginx's syntax checks passed. chash hashes names without
// resolving them, so it takes those names when they are host names
// ([A-Za-z0-9._-], not only digits and dots: a numeric host that neither
// ngx_inet_addr nor the resolver's inet_aton reads is a typo, not a name).
bool ChashShouldAcceptNginx(const Answer& answer) {
  if (RefusedForTheFileSyntax(answer.spelling)) return false;
  if (answer.ok) return true;
  const std::string& message = answer.fields.at(0);
  if (message.rfind("host not found in upstream ", 0) != 0) return false;
  const std::string host = answer.spelling.substr(0, answer.spelling.find(':'));
  bool name = false;
  for (const char c : host) {
    if (!IsNameByte(static_cast<unsigned char>(c))) return false;
    if (c != '.' && (c < '0' || c > '9')) name = true;
  }
  return name;
}

std::string Describe(const Answer& answer) {
  std::string text = "'" + answer.spelling + "' (" + (answer.ok ? "ok" : "err");
  for (const std::string& field : answer.fields) text += " | " + field;
  return text + ")";
}

TEST(AddressGolden, FilesHoldTheSameSpellings) {
  const std::vector<Answer>& nginx = NginxAnswers();
  const std::vector<Answer>& rust = RustAnswers();
  ASSERT_GE(nginx.size(), 5000u);
  ASSERT_EQ(nginx.size(), rust.size());
  std::vector<std::string> spellings;
  for (const std::string& line : ReadLines(DataPath("address/spellings.txt"))) {
    spellings.push_back(line);
  }
  ASSERT_EQ(spellings.size(), nginx.size());
  for (size_t i = 0; i < nginx.size(); ++i) {
    ASSERT_EQ(nginx[i].spelling, spellings[i]) << "line " << i + 1;
    ASSERT_EQ(rust[i].spelling, spellings[i]) << "line " << i + 1;
  }
  // Both verdicts occur in both files, and every kind of spelling was asked.
  std::map<std::string, int> kinds;
  for (const Answer& a : nginx) {
    kinds[a.ok ? "ok" : a.fields.at(0).substr(0, a.fields.at(0).find(" in upstream"))]++;
  }
  for (const char* kind :
       {"ok", "host not found", "invalid port", "invalid host", "invalid IPv6 address", "no host",
        "no path in the unix domain socket", "too long path in the unix domain socket"}) {
    EXPECT_GT(kinds[kind], 0) << kind;
  }
}

TEST(AddressGolden, NginxFlavorTakesWhatNginxTakes) {
  for (const auto& [name, parse] : kParsers) {
    std::string mismatches;
    int count = 0;
    for (const Answer& answer : NginxAnswers()) {
      const bool want = ChashShouldAcceptNginx(answer);
      const Verdict got = parse(Flavor::kNginx, answer.spelling);
      if (got.ok == want) continue;
      if (++count <= 400) {
        mismatches += "\n  " + Describe(answer) + ": " + name + " " +
                      (got.ok ? "accepts" : "refuses (" + got.why + ")");
      }
    }
    EXPECT_EQ(count, 0) << name << " differs from nginx on " << count
                        << " spellings:" << mismatches;
  }
}

TEST(AddressGolden, PingoraFlavorsTakeWhatRustTakesAndHashItsDisplay) {
  for (const auto& [name, parse] : kParsers) {
    std::string mismatches;
    int count = 0;
    for (const Answer& answer : RustAnswers()) {
      // Scope ids ("%2"): Rust takes them, pingora hashes the IP without
      // them, so two such servers would own the same points; chash refuses.
      const bool scoped = answer.spelling.find('%') != std::string::npos;
      const bool want = answer.ok && !scoped;
      for (const Flavor flavor : {Flavor::kPingoraV1, Flavor::kPingoraV2}) {
        const Verdict got = parse(flavor, answer.spelling);
        std::string problem;
        if (got.ok != want) {
          problem = got.ok ? "accepts" : "refuses (" + got.why + ")";
        } else if (got.ok && (got.host != answer.fields.at(1) || got.port != answer.fields.at(2))) {
          problem = "hashes host '" + got.host + "' port '" + got.port + "'";
        }
        if (problem.empty()) continue;
        if (++count <= 400) {
          mismatches += "\n  " + Describe(answer) + ": " + name + " " +
                        std::string(FlavorName(flavor)) + " " + problem;
        }
      }
    }
    EXPECT_EQ(count, 0) << name << " differs from Rust on " << count << " verdicts:" << mismatches;
  }
}

// The two parsers agree on the bytes hashed for every spelling, in every
// flavor (the golden files cannot show nginx's split: `nginx -t` does not
// print it).
TEST(AddressGolden, EngineAndReferenceHashTheSameBytes) {
  for (const Flavor flavor : {Flavor::kNginx, Flavor::kPingoraV1}) {
    for (const Answer& answer : NginxAnswers()) {
      const Verdict engine = Engine(flavor, answer.spelling);
      const Verdict reference = Reference(flavor, answer.spelling);
      ASSERT_EQ(engine.ok, reference.ok) << FlavorName(flavor) << " " << Describe(answer);
      ASSERT_EQ(engine.host, reference.host) << FlavorName(flavor) << " " << Describe(answer);
      ASSERT_EQ(engine.port, reference.port) << FlavorName(flavor) << " " << Describe(answer);
    }
  }
}

}  // namespace
}  // namespace chash
