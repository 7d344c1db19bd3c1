#include "haproxy_conf.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

#include "config_file.h"

namespace chash::cli {
namespace {

// The section keywords of HAProxy 2.6 (cfg_register_section in Debian's
// build): a line starting with one opens that section.
const std::set<std::string, std::less<>> kSections = {
    "global", "defaults", "frontend", "backend",     "listen",   "peers",
    "resolvers", "userlist", "cache", "http-errors", "ring", "mailers",
    "program",  "log-forward", "fcgi-app", "namespace_list"};

// Every keyword HAProxy 2.6 takes at the start of a line in a defaults,
// frontend, backend or listen section (the strcmp chain of
// cfg_parse_listen and the CFG_LISTEN keywords registered by its modules).
const std::set<std::string, std::less<>> kProxyKeywords = {
    "acl", "backlog", "balance", "bind", "bind-process", "capture", "compression", "cookie",
    "declare", "default-server", "default_backend", "description", "disabled", "dispatch",
    "dynamic-cookie-key", "email-alert", "enabled", "error-log-format", "errorfile", "errorfiles",
    "errorloc", "errorloc302", "errorloc303", "external-check", "filter", "force-persist",
    "fullconn", "hash-balance-factor", "hash-type", "http-after-response", "http-check",
    "http-error", "http-request", "http-response", "http-reuse", "http-send-name-header", "id",
    "ignore-persist", "load-server-state-from-file", "log", "log-format", "log-format-sd",
    "log-tag", "max-keep-alive-queue", "max-session-srv-conns", "maxconn", "mode", "monitor",
    "monitor-uri", "option", "persist", "rate-limit", "redirect", "retries", "retry-on",
    "server", "server-state-file-name", "server-template", "source", "stats", "stick",
    "stick-table", "tcp-check", "tcp-request", "tcp-response", "timeout", "transparent",
    "unique-id-format", "unique-id-header", "use-fcgi-app", "use-server", "use_backend",
    "usesrc", "clitcpka-cnt", "clitcpka-idle", "clitcpka-intvl", "srvtcpka-cnt",
    "srvtcpka-idle", "srvtcpka-intvl"};

// Keywords HAProxy 2.6 still recognizes only to refuse them.
const std::set<std::string, std::less<>> kRemovedKeywords = {
    "appsession", "block",   "cliexp",  "clitimeout", "contimeout", "grace",   "monitor-net",
    "redisp",     "redispatch", "reqadd", "reqallow", "reqdel",    "reqdeny", "reqiallow",
    "reqidel",    "reqideny", "reqipass", "reqirep", "reqitarpit", "reqpass", "reqrep",
    "reqtarpit",  "rspadd",  "rspdel",  "rspdeny",   "rspidel",    "rspideny", "rspirep",
    "rsprep",     "srvexp",  "srvtimeout"};

// The server keywords of HAProxy 2.6 (srv_kws of server.c, check.c,
// ssl_sock.c, proto_tcp.c): how many arguments each takes (-1: `source`,
// which reads its own) and whether default-server takes it.
struct ServerKeyword {
  std::string_view name;
  int skip;
  bool default_ok;
};
constexpr ServerKeyword kServerKeywords[] = {
    {"addr", 1, true}, {"agent-addr", 1, true}, {"agent-check", 0, true},
    {"agent-inter", 1, true}, {"agent-port", 1, true}, {"agent-send", 1, true},
    {"allow-0rtt", 0, true}, {"alpn", 1, true}, {"backup", 0, true}, {"ca-file", 1, true},
    {"check", 0, true}, {"check-alpn", 1, true}, {"check-proto", 1, true},
    {"check-send-proxy", 0, true}, {"check-sni", 1, true}, {"check-ssl", 0, true},
    {"check-via-socks4", 0, true}, {"ciphers", 1, true}, {"ciphersuites", 1, true},
    {"cookie", 1, true}, {"crl-file", 1, true}, {"crt", 1, true}, {"disabled", 0, true},
    {"downinter", 1, true}, {"enabled", 0, true}, {"error-limit", 1, true},
    {"fall", 1, true}, {"fastinter", 1, true}, {"force-sslv3", 0, true},
    {"force-tlsv10", 0, true}, {"force-tlsv11", 0, true}, {"force-tlsv12", 0, true},
    {"force-tlsv13", 0, true}, {"id", 1, false}, {"init-addr", 1, true},
    {"inter", 1, true}, {"log-proto", 1, true}, {"max-reuse", 1, true},
    {"maxconn", 1, true}, {"maxqueue", 1, true}, {"minconn", 1, true},
    {"namespace", 1, true}, {"no-agent-check", 0, true}, {"no-backup", 0, true},
    {"no-check", 0, true}, {"no-check-send-proxy", 0, true}, {"no-check-ssl", 0, true},
    {"no-send-proxy", 0, true}, {"no-send-proxy-v2", 0, true},
    {"no-send-proxy-v2-ssl", 0, true}, {"no-send-proxy-v2-ssl-cn", 0, true},
    {"no-ssl", 0, true}, {"no-ssl-reuse", 0, true}, {"no-sslv3", 0, false},
    {"no-tfo", 0, true}, {"no-tls-tickets", 0, true}, {"no-tlsv10", 0, false},
    {"no-tlsv11", 0, false}, {"no-tlsv12", 0, false}, {"no-tlsv13", 0, false},
    {"non-stick", 0, true}, {"npn", 1, true}, {"observe", 1, true}, {"on-error", 1, true},
    {"on-marked-down", 1, true}, {"on-marked-up", 1, true}, {"pool-low-conn", 1, true},
    {"pool-max-conn", 1, true}, {"pool-purge-delay", 1, true}, {"port", 1, true},
    {"proto", 1, true}, {"proxy-v2-options", 1, true}, {"redir", 1, true},
    {"resolve-net", 1, true}, {"resolve-opts", 1, true}, {"resolve-prefer", 1, true},
    {"resolvers", 1, true}, {"rise", 1, true}, {"send-proxy", 0, true},
    {"send-proxy-v2", 0, true}, {"send-proxy-v2-ssl", 0, true},
    {"send-proxy-v2-ssl-cn", 0, true}, {"slowstart", 1, true}, {"sni", 1, true},
    {"socks4", 1, true}, {"source", -1, true}, {"ssl", 0, true}, {"ssl-max-ver", 1, true},
    {"ssl-min-ver", 1, true}, {"ssl-reuse", 0, true}, {"stick", 0, true},
    {"tcp-ut", 1, true}, {"tfo", 0, true}, {"tls-tickets", 0, true}, {"track", 1, true},
    {"usesrc", 0, true}, {"verify", 1, true}, {"verifyhost", 1, true}, {"weight", 1, true},
    {"ws", 1, true}};

constexpr int kMaxLineArgs = 64;        // MAX_LINE_ARGS
constexpr int kMaxNestedConds = 100;    // MAXNESTEDCONDS
constexpr int kMaxCfgRecursion = 1024;  // MAX_CFG_RECURSION
constexpr int kMaxServerWeight = 256;   // SRV_UWGHT_MAX

Status Bad(std::string message) { return Status(StatusCode::kBadArgument, std::move(message)); }

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}
bool IsAlnum(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
bool IsHex(char c) { return (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f'); }

// glibc's atol on HAProxy's words, then cast to int as HAProxy stores it:
// leading blanks, a sign, digits, clamped to LONG_MIN..LONG_MAX, low 32 bits.
int AtolToInt(const std::string& text) {
  const long value = std::strtol(text.c_str(), nullptr, 10);
  return static_cast<int>(static_cast<uint32_t>(static_cast<unsigned long>(value)));
}

// invalid_char(): the first byte that is not [A-Za-z0-9.:_-]; an empty name
// is invalid at its end.
std::optional<char> InvalidChar(const std::string& name) {
  if (name.empty()) return '\0';
  for (const char c : name) {
    if (!IsAlnum(c) && c != '.' && c != ':' && c != '_' && c != '-') return c;
  }
  return std::nullopt;
}

// What `$NAME` and `${NAME}` read: the environment, except the variables
// HAProxy sets for itself before it parses (HAPROXY_LOCALPEER, ...), whose
// values chash cannot know.
struct Environment {
  std::string file, section;
  size_t line = 0;
  Result<std::optional<std::string>> Get(const std::string& name) const {
    if (name == ".LINE") return std::optional<std::string>(std::to_string(line));
    if (name == ".FILE") return std::optional<std::string>(file);
    if (name == ".SECTION") return std::optional<std::string>(section);
    if (name.rfind("HAPROXY_", 0) == 0) {
      return Bad("environment variable " + name +
                 ": HAProxy sets its HAPROXY_* variables itself; chash does not read them");
    }
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) return std::optional<std::string>();
    return std::optional<std::string>(value);
  }
};

// parse_line() with the options readcfgfile() gives it (ENV, DQUOTE,
// SQUOTE, BKSLASH, SHARP, WORD_EXPAND), step for step: the words of a line
// (after its leading blanks), the last one empty when the line ends in
// blanks. Errors are readcfgfile()'s messages.
Result<std::vector<std::string>> ParseLine(std::string_view in, const Environment& env) {
  std::vector<std::string> words(1);
  size_t separators = 0;
  bool squote = false, dquote = false;
  size_t i = 0;
  const auto at = [&](size_t k) { return k < in.size() ? in[k] : '\0'; };
  const auto position = [&](size_t k) { return " at position " + std::to_string(k + 1); };
  std::optional<size_t> quote;
  while (true) {
    const char c = at(i);
    if (c == '\0' || c == '\n' || c == '\r') break;
    if (c == '#' && !squote && !dquote) break;  // a comment, even inside a word
    if (c == '"' && !squote) {
      dquote = !dquote;
      quote = dquote ? std::optional<size_t>(i) : std::nullopt;
      ++i;
      continue;
    }
    if (c == '\'' && !dquote) {
      squote = !squote;
      quote = squote ? std::optional<size_t>(i) : std::nullopt;
      ++i;
      continue;
    }
    if (c == '\\' && !squote) {
      char send = c;
      switch (at(i + 1)) {
        case ' ':
        case '\\':
        case '#':
        case '\'':
        case '"':
          send = at(++i);
          break;
        case 't':
          send = '\t', ++i;
          break;
        case 'n':
          send = '\n', ++i;
          break;
        case 'r':
          send = '\r', ++i;
          break;
        case '$':
          if (dquote) send = at(++i);  // outside "...", '$' is no variable
          break;
        case 'x':
          if (!IsHex(at(i + 2)) || !IsHex(at(i + 3))) {
            return Bad("truncated or invalid hexadecimal sequence" + position(i));
          }
          send = static_cast<char>(std::stoi(std::string(in.substr(i + 2, 2)), nullptr, 16));
          i += 3;
          break;
        default:
          break;  // not an escape: the '\' is kept
      }
      ++i;
      words.back() += send;
      continue;
    }
    if (IsSpace(c) && !squote && !dquote) {
      while (IsSpace(at(i))) ++i;
      if (++separators >= kMaxLineArgs) {
        return Bad("too many words, truncating after word " + std::to_string(kMaxLineArgs));
      }
      words.emplace_back();
      continue;
    }
    if (c == '$' && dquote) {
      // ${NAME}, ${NAME-default}, ${NAME[*]} (one word a value word), $NAME.
      ++i;
      std::optional<size_t> brace;
      if (at(i) == '{') brace = i++;
      const char first = at(i);
      if (!(first >= 'a' && first <= 'z') && !(first >= 'A' && first <= 'Z') && first != '_' &&
          first != '.') {
        return Bad("forbidden first char in environment variable name" + position(i));
      }
      const size_t name_start = i;
      if (at(i) == '.') ++i;
      while (IsAlnum(at(i)) || at(i) == '_') ++i;
      const std::string name(in.substr(name_start, i - name_start));
      if (name[0] == '.' && name != ".LINE" && name != ".FILE" && name != ".SECTION") {
        return Bad("forbidden first char in environment variable name" + position(name_start));
      }
      Result<std::optional<std::string>> value = env.Get(name);
      if (!value.ok()) return value.status();
      std::optional<std::string> text = value.value();
      bool expand = false;
      if (at(i) == '[' && brace) {
        const size_t start = i++;
        if (at(i++) != '*' || at(i++) != ']') {
          return Bad("truncated or invalid word expansion sequence" + position(start));
        }
        expand = true;
      }
      if (brace) {
        if (at(i) == '-') {
          const size_t end = in.find('}', i);
          if (end == std::string_view::npos) {
            return Bad("unmatched brace in environment variable name" + position(*brace));
          }
          if (!text) text = std::string(in.substr(i + 1, end - i - 1));
          i = end;
        } else if (at(i) != '}') {
          return Bad("unmatched brace in environment variable name" + position(*brace));
        }
        ++i;
      }
      if (text) {
        for (size_t k = 0; k < text->size();) {
          if (expand && IsSpace((*text)[k])) {
            if (++separators >= kMaxLineArgs) {
              return Bad("too many words, truncating after word " + std::to_string(kMaxLineArgs));
            }
            words.emplace_back();
            while (k < text->size() && IsSpace((*text)[k])) ++k;
          } else {
            words.back() += (*text)[k++];
          }
        }
      }
      continue;
    }
    words.back() += c;
    ++i;
  }
  if (quote) return Bad("unmatched quote" + position(*quote));
  return words;
}

// The word at `index`, or "" past the end: HAProxy's args[] beyond the
// words all point to an empty string.
const std::string& Arg(const std::vector<std::string>& words, size_t index) {
  static const std::string kEmpty;
  return index < words.size() ? words[index] : kEmpty;
}

// cfg_eval_condition() of HAProxy 2.6 (cfgcond.c): terms (a number, !term,
// (expr), a predicate), && and ||. Parsing is HAProxy's; evaluation
// short-circuits as HAProxy's does, so a predicate chash cannot evaluate is
// refused only when HAProxy would evaluate it.
class Condition {
 public:
  Condition(std::string text, const Environment& env) : text_(std::move(text)), env_(env) {}

  // 1 true, 0 false; an error in HAProxy's words (or chash's refusal).
  Result<int> Evaluate() {
    if (text_.empty()) return 0;  // an empty condition is false
    size_t pos = 0;
    Result<std::unique_ptr<Node>> expr = ParseExpr(pos, kMaxCfgRecursion);
    if (!expr.ok()) return expr.status();
    while (pos < text_.size() && (text_[pos] == ' ' || text_[pos] == '\t')) ++pos;
    if (pos < text_.size()) {
      return Bad(std::string("unexpected character '") + text_[pos] +
                 "' at the end of conditional expression '" + text_ + "'");
    }
    return Eval(*expr.value());
  }

 private:
  struct Node {
    enum Kind { kFalse, kTrue, kPredicate, kAnd, kOr } kind = kFalse;
    bool negate = false;
    std::string predicate;
    std::vector<std::string> args;
    std::unique_ptr<Node> left, right;  // kAnd, kOr; a parenthesis is its expression
  };

  Status Unparsable(size_t pos) const {
    return Bad("unparsable conditional expression '" + text_.substr(std::min(pos, text_.size())) + "'");
  }

  void SkipBlanks(size_t& pos) const {
    while (pos < text_.size() && (text_[pos] == ' ' || text_[pos] == '\t')) ++pos;
  }

  using Parser = Result<std::unique_ptr<Node>> (Condition::*)(size_t&, int);

  // expr = and ['||' expr]; and = term ['&&' and]: the operand, then the
  // operator and the rest, each a level of HAProxy's recursion budget.
  Result<std::unique_ptr<Node>> ParseBinary(size_t& pos, int depth, std::string_view op,
                                            Node::Kind kind, Parser operand, Parser rest) {
    if (pos >= text_.size() || depth <= 0) return Unparsable(pos);
    Result<std::unique_ptr<Node>> left = (this->*operand)(pos, depth - 1);
    if (!left.ok()) return left;
    SkipBlanks(pos);
    if (text_.compare(pos, 2, op) != 0) return left;
    pos += 2;
    SkipBlanks(pos);
    Result<std::unique_ptr<Node>> right = (this->*rest)(pos, depth - 1);
    if (!right.ok()) return right;
    auto node = std::make_unique<Node>();
    node->kind = kind;
    node->left = std::move(left).value();
    node->right = std::move(right).value();
    return node;
  }

  Result<std::unique_ptr<Node>> ParseExpr(size_t& pos, int depth) {
    return ParseBinary(pos, depth, "||", Node::kOr, &Condition::ParseAnd, &Condition::ParseExpr);
  }

  Result<std::unique_ptr<Node>> ParseAnd(size_t& pos, int depth) {
    return ParseBinary(pos, depth, "&&", Node::kAnd, &Condition::ParseTerm, &Condition::ParseAnd);
  }

  Result<std::unique_ptr<Node>> ParseTerm(size_t& pos, int depth) {
    SkipBlanks(pos);
    if (pos >= text_.size() || depth <= 0) return Unparsable(pos);
    const size_t start = pos;
    bool negate = false;
    while (pos < text_.size() && text_[pos] == '!') {
      negate = !negate;
      do ++pos;
      while (pos < text_.size() && (text_[pos] == ' ' || text_[pos] == '\t'));
    }
    // strtol(in, &end, 0): a number is a term, true when not 0.
    const char* begin = text_.c_str() + pos;
    char* end = nullptr;
    const long value = std::strtol(begin, &end, 0);
    if (end != begin) {
      pos += static_cast<size_t>(end - begin);
      auto node = std::make_unique<Node>();
      node->kind = value != 0 ? Node::kTrue : Node::kFalse;
      node->negate = negate;
      return node;
    }
    if (pos < text_.size() && text_[pos] == '(') {
      ++pos;
      SkipBlanks(pos);
      Result<std::unique_ptr<Node>> inner = ParseExpr(pos, depth - 1);
      if (!inner.ok()) return inner;
      SkipBlanks(pos);
      if (pos >= text_.size() || text_[pos] != ')') {
        return Bad("expected ')' after conditional expression '" + text_.substr(start) + "'");
      }
      ++pos;
      SkipBlanks(pos);
      inner.value()->negate ^= negate;
      return inner;
    }
    static const std::pair<std::string_view, size_t> kPredicates[] = {
        {"defined", 1}, {"feature", 1}, {"streq", 2}, {"strneq", 2},
        {"version_atleast", 1}, {"version_before", 1}, {"openssl_version_atleast", 1},
        {"openssl_version_before", 1}, {"ssllib_name_startswith", 1}};
    const size_t word_end = text_.find_first_of(" (", pos);
    const std::string word = text_.substr(pos, word_end - pos);
    for (const auto& [name, count] : kPredicates) {
      if (word != name) continue;
      pos += word.size();
      auto node = std::make_unique<Node>();
      node->kind = Node::kPredicate;
      node->negate = negate;
      node->predicate = word;
      if (Status status = ParseArgs(pos, count, node->args); !status.ok()) {
        return Bad(status.message() + " in argument of predicate '" + word +
                   "' used in conditional expression");
      }
      return node;
    }
    return Unparsable(start);
  }

  // make_arg_list() for string arguments: "(a,b)", quotes and \-escapes.
  Status ParseArgs(size_t& pos, size_t count, std::vector<std::string>& args) {
    if (pos >= text_.size() || text_[pos] != '(') {
      return Bad("missing arguments (got " + std::to_string(0) + "/" + std::to_string(count) + ")");
    }
    ++pos;
    while (args.size() < count) {
      std::string arg;
      bool squote = false, dquote = false;
      while (pos < text_.size()) {
        const char c = text_[pos];
        if (c == '"' && !squote) {
          dquote = !dquote, ++pos;
        } else if (c == '\'' && !dquote) {
          squote = !squote, ++pos;
        } else if (c == '\\' && !squote && pos + 1 < text_.size()) {
          const char n = text_[pos + 1];
          if (n == '\\' || n == ' ' || n == '"' || n == '\'') {
            arg += n, pos += 2;
          } else if (n == 'r' || n == 'n' || n == 't') {
            arg += n == 'r' ? '\r' : n == 'n' ? '\n' : '\t', pos += 2;
          } else {
            arg += c, ++pos;
          }
        } else if (!squote && !dquote && (c == ',' || c == ')')) {
          break;
        } else {
          arg += c, ++pos;
        }
      }
      args.push_back(std::move(arg));
      if (pos >= text_.size()) return Bad("missing closing ')'");
      if (text_[pos] == ')') break;
      ++pos;  // ','
    }
    if (args.size() < count) {
      return Bad("missing arguments (got " + std::to_string(args.size()) + "/" +
                 std::to_string(count) + ")");
    }
    if (pos >= text_.size() || text_[pos] != ')') return Bad("end of arguments expected");
    ++pos;
    return Status();
  }

  Result<int> Eval(const Node& node) {
    Result<int> result = 0;
    switch (node.kind) {
      case Node::kFalse:
        result = 0;
        break;
      case Node::kTrue:
        result = 1;
        break;
      case Node::kAnd: {  // HAProxy stops at the first false (or error)
        result = Eval(*node.left);
        if (result.ok() && result.value() > 0) result = Eval(*node.right);
        break;
      }
      case Node::kOr: {  // and at the first true
        result = Eval(*node.left);
        if (result.ok() && result.value() == 0) result = Eval(*node.right);
        break;
      }
      case Node::kPredicate:
        if (node.predicate == "defined") {
          Result<std::optional<std::string>> value = env_.Get(node.args[0]);
          if (!value.ok()) return value.status();
          result = value.value().has_value() ? 1 : 0;
        } else if (node.predicate == "streq" || node.predicate == "strneq") {
          result = (node.args[0] == node.args[1]) == (node.predicate == "streq") ? 1 : 0;
        } else {
          return Bad("'.if' predicate " + node.predicate +
                     "() depends on the haproxy binary that reads the file: chash does not "
                     "evaluate it");
        }
        break;
    }
    if (result.ok() && node.negate) result = result.value() == 0 ? 1 : 0;
    return result;
  }

  std::string text_;
  const Environment& env_;
};

// readcfgfile()'s .if/.elif/.else/.endif states.
enum class Cond { kIfTake, kIfDrop, kIfSkip, kElifTake, kElifDrop, kElifSkip, kElseTake, kElseDrop };

bool Masks(Cond c) {
  return c == Cond::kIfDrop || c == Cond::kIfSkip || c == Cond::kElifDrop ||
         c == Cond::kElifSkip || c == Cond::kElseDrop;
}

// What default-server sets and a server line starts from (srv_settings_cpy).
struct ServerSettings {
  int weight = 1;
  bool backup = false;
  bool disabled = false;
  bool check = false;  // check or agent-check: what `track` needs of the tracked
};

struct Server {
  std::string name, address;
  ServerSettings settings;
  int id = 0;  // 0: automatic
  std::string track;
  size_t line = 0;
};

// What a proxy (or a defaults section) says about the ring.
struct ProxyState {
  bool http = false;                     // mode http (tcp by default)
  std::vector<std::string> balance;      // the words after `balance` ("" : none)
  size_t balance_line = 0;
  std::vector<std::string> hash_type;    // after `hash-type` (empty: map-based sdbm)
  size_t hash_type_line = 0;
  ServerSettings defsrv;
  bool hash_balance_factor = false;
  bool transparent = false;
  bool rules = false, l4_rules = false;  // defaults: tcp/http rules (proxies keep a reference)
};

struct Proxy {
  std::string kind, name;  // kind: defaults, frontend, backend, listen
  size_t line = 0;
  bool fe = false, be = false;
  ProxyState state;
  std::vector<Server> servers;
  std::map<int, size_t> ids;  // fixed id -> index in servers
  std::optional<size_t> server_template_line;
  // Defaults sections: who inherited them (HAProxy's refcount checks).
  bool used_by_fe = false, used_by_be = false;
};

class CfgReader {
 public:
  CfgReader(const std::string& path, std::string_view text) : path_(path), text_(text) {
    env_.file = path;
  }

  Status Read();
  Result<HaproxyBackend> Backend(const std::string& name) const;

 private:
  std::string At(size_t line) const { return path_ + ":" + std::to_string(line); }
  Status Error(size_t line, const std::string& message) const { return Bad(At(line) + ": " + message); }

  Status Line(size_t number, std::vector<std::string> words);
  Status OpenProxy(size_t number, const std::vector<std::string>& args);
  Status ProxyKeyword(size_t number, const std::vector<std::string>& args);
  Status ServerLine(size_t number, const std::vector<std::string>& args, bool default_server);
  Status Balance(size_t number, const std::vector<std::string>& args, ProxyState& state);
  Status HashType(size_t number, const std::vector<std::string>& args, ProxyState& state);
  Status Finish();

  const std::string& path_;
  std::string_view text_;
  Environment env_;
  std::vector<std::unique_ptr<Proxy>> proxies_;  // defaults sections included
  Proxy* current_ = nullptr;                     // the proxy being read, if any
  bool in_section_ = false;
  Proxy* last_defaults_ = nullptr;
  std::vector<Cond> conds_;
};

Status CfgReader::Read() {
  size_t number = 0;
  size_t start = 0;
  while (start < text_.size()) {
    const size_t newline = text_.find('\n', start);
    ++number;
    std::string_view line = text_.substr(start, newline == std::string_view::npos
                                                    ? std::string_view::npos
                                                    : newline - start);
    if (line.find('\0') != std::string_view::npos) {
      return Error(number, "Stray NUL character at position " +
                               std::to_string(line.find('\0') + 1));
    }
    if (newline == std::string_view::npos) {
      return Error(number, "Missing LF on last line, file might have been truncated at position " +
                               std::to_string(line.size() + 1));
    }
    start = newline + 1;
    size_t lead = 0;
    while (lead < line.size() && IsSpace(line[lead])) ++lead;
    line.remove_prefix(lead);
    if (!line.empty() && line[0] == '[') {
      return Error(number, "scope lines ('[name]') are not read by chash");
    }
    env_.line = number;
    Result<std::vector<std::string>> words = ParseLine(line, env_);
    if (!words.ok()) return Error(number, words.status().message());
    if (Status status = Line(number, std::move(words).value()); !status.ok()) return status;
  }
  if (!conds_.empty()) return Error(number, "non-terminated '.if' block");
  return Finish();
}

Status CfgReader::Line(size_t number, std::vector<std::string> args) {
  // .if joins the words again: every NUL of HAProxy's output buffer, those
  // of \x00 escapes too, becomes a space.
  std::string expression;
  for (size_t i = 1; i < args.size(); ++i) expression += (i > 1 ? " " : "") + args[i];
  std::replace(expression.begin(), expression.end(), '\0', ' ');
  // Everything else reads the words as C strings: a \x00 ends its word.
  for (std::string& word : args) word.resize(std::min(word.size(), word.find('\0')));
  if (args[0].empty()) return Status();  // an empty line (or an empty first word)
  const std::string& word = args[0];
  if (word == ".if" || word == ".elif") {
    if (word == ".if") {
      if (static_cast<int>(conds_.size()) + 1 >= kMaxNestedConds) {
        return Error(number, "too many nested '.if', max is " + std::to_string(kMaxNestedConds));
      }
      if (!conds_.empty() && Masks(conds_.back())) {
        conds_.push_back(Cond::kIfSkip);
        return Status();
      }
      Result<int> cond = Condition(expression, env_).Evaluate();
      if (!cond.ok()) return Error(number, cond.status().message() + " in '.if'");
      conds_.push_back(cond.value() ? Cond::kIfTake : Cond::kIfDrop);
      return Status();
    }
    if (conds_.empty()) return Error(number, "lone '.elif' with no matching '.if'");
    Cond& top = conds_.back();
    if (top == Cond::kElseTake || top == Cond::kElseDrop) {
      return Error(number, "'.elif' after '.else' is not permitted");
    }
    if (top == Cond::kIfTake || top == Cond::kIfSkip || top == Cond::kElifTake ||
        top == Cond::kElifSkip) {
      top = Cond::kElifSkip;
      return Status();
    }
    Result<int> cond = Condition(expression, env_).Evaluate();
    if (!cond.ok()) return Error(number, cond.status().message() + " in '.elif'");
    top = cond.value() ? Cond::kElifTake : Cond::kElifDrop;
    return Status();
  }
  if (word == ".else" || word == ".endif") {
    if (!Arg(args, 1).empty()) {
      return Error(number, "Unexpected argument '" + args[1] + "' for '" + word + "'");
    }
    if (conds_.empty()) return Error(number, "lone '" + word + "' with no matching '.if'");
    if (word == ".endif") {
      conds_.pop_back();
      return Status();
    }
    Cond& top = conds_.back();
    if (top == Cond::kElseTake || top == Cond::kElseDrop) {
      return Error(number, "'.else' after '.else' is not permitted");
    }
    top = top == Cond::kIfTake || top == Cond::kIfSkip || top == Cond::kElifTake ||
                  top == Cond::kElifSkip
              ? Cond::kElseDrop
              : Cond::kElseTake;
    return Status();
  }
  if (!conds_.empty() && Masks(conds_.back())) return Status();  // masked out
  if (word[0] == '.') {
    if (word == ".alert" || word == ".warning" || word == ".notice" || word == ".diag") {
      if (!Arg(args, 2).empty()) {
        return Error(number, "Unexpected argument '" + args[2] + "' for '" + word +
                                 "'. Use quotes if the message should contain spaces");
      }
      if (word == ".alert") return Error(number, "'" + Arg(args, 1) + "' (.alert)");
      return Status();
    }
    return Error(number, "unknown directive '" + word + "'");
  }
  // The "no" and "default" modifiers, for the few keywords that take them.
  if (word == "no" || word == "default") {
    args.erase(args.begin());
    if (args.empty()) args.emplace_back();
    static const std::set<std::string, std::less<>> kTaking = {
        "option", "log", "busy-polling", "set-dumpable", "strict-limits",
        "insecure-fork-wanted", "numa-cpu-mapping"};
    if (!kTaking.count(args[0])) {
      return Error(number, "negation/default currently supported only for options, log, "
                           "busy-polling, set-dumpable, strict-limits, insecure-fork-wanted and "
                           "numa-cpu-mapping");
    }
  }
  if (kSections.count(args[0])) {
    in_section_ = true;
    env_.section = Arg(args, 1).empty() ? args[0] : args[1];
    current_ = nullptr;
    if (args[0] == "defaults" || args[0] == "frontend" || args[0] == "backend" ||
        args[0] == "listen") {
      return OpenProxy(number, args);
    }
    return Status();
  }
  if (!in_section_) return Error(number, "unknown keyword '" + args[0] + "' out of section");
  if (current_ == nullptr) return Status();  // global, peers, ...: not read by chash
  return ProxyKeyword(number, args);
}

Status CfgReader::OpenProxy(size_t number, const std::vector<std::string>& args) {
  auto proxy = std::make_unique<Proxy>();
  proxy->kind = args[0];
  proxy->line = number;
  const bool defaults = args[0] == "defaults";
  proxy->fe = args[0] == "frontend" || args[0] == "listen";
  proxy->be = args[0] == "backend" || args[0] == "listen";
  Proxy* inherit = nullptr;
  size_t from = 2;
  if (!defaults) {
    if (Arg(args, 1).empty()) return Error(number, "'" + args[0] + "' expects an <id> argument");
    if (const std::optional<char> c = InvalidChar(args[1])) {
      return Error(number, std::string("character '") + *c + "' is not permitted in '" + args[0] +
                               "' name '" + args[1] + "'");
    }
    for (const auto& other : proxies_) {
      if (other->kind == "defaults" || other->name != args[1]) continue;
      if (proxy->fe ? other->fe : other->be) {
        return Error(number, args[0] + " '" + args[1] + "' has the same name as " + other->kind +
                                 " '" + other->name + "' declared at " + At(other->line));
      }
    }
    if ((!Arg(args, 2).empty() && (Arg(args, 3).empty() || args[2] != "from")) ||
        !Arg(args, 4).empty()) {
      return Error(number, "'" + args[0] + "' takes a name and an optional 'from NAME' only" +
                               (proxy->fe ? std::string(" (please use the 'bind' keyword for "
                                                        "listening addresses)")
                                          : std::string()));
    }
    proxy->name = args[1];
    inherit = last_defaults_;
  } else {
    proxy->name = Arg(args, 1);
    if (Arg(args, 1) == "from" && !Arg(args, 2).empty() && Arg(args, 3).empty()) {
      from = 1;  // "defaults from NAME": no name of its own
      proxy->name.clear();
    }
  }
  if (Arg(args, from) == "from") {
    const std::string& wanted = Arg(args, from + 1);
    std::vector<Proxy*> named;
    for (const auto& other : proxies_) {
      if (other->kind == "defaults" && other->name == wanted) named.push_back(other.get());
    }
    if (named.empty()) {
      return Error(number, "defaults section '" + wanted + "' not found for " + args[0] + " '" +
                               proxy->name + "'");
    }
    if (named.size() > 1) {
      return Error(number, "ambiguous defaults section name '" + wanted + "' referenced by " +
                               args[0] + " '" + proxy->name + "' exists at least at " +
                               At(named[0]->line) + " and " + At(named[1]->line));
    }
    if (const std::optional<char> c = InvalidChar(wanted)) {
      return Error(number, std::string("character '") + *c +
                               "' is not permitted in defaults section name '" + wanted +
                               "' when designated by its name");
    }
    inherit = named[0];
  }
  if (inherit != nullptr) {
    // A defaults section with TCP/HTTP rules is referenced, not copied, and
    // HAProxy limits who may inherit it.
    if (inherit->state.rules) {
      if (defaults) {
        return Error(number, "a defaults section cannot inherit from a defaults section defining "
                             "TCP/HTTP rules (defaults section at " + At(inherit->line) + ")");
      }
      if (proxy->fe && proxy->be) {
        return Error(number, "a listen section cannot inherit from a defaults section defining "
                             "TCP/HTTP rules");
      }
      if ((proxy->fe && inherit->used_by_be) || (proxy->be && inherit->used_by_fe)) {
        return Error(number, "frontends and backends cannot inherit from the same defaults "
                             "section if it defines TCP/HTTP rules (defaults section at " +
                                 At(inherit->line) + ")");
      }
      if (proxy->be && inherit->state.l4_rules) {
        return Error(number, "a backend section cannot inherit from a defaults section defining "
                             "'tcp-request connection' or 'tcp-request session' rules (defaults "
                             "section at " + At(inherit->line) + ")");
      }
      (proxy->fe ? inherit->used_by_fe : inherit->used_by_be) = true;
    }
    proxy->state = inherit->state;
    proxy->state.rules = proxy->state.l4_rules = false;
  }
  current_ = proxy.get();
  if (defaults) last_defaults_ = proxy.get();
  proxies_.push_back(std::move(proxy));
  return Status();
}

Status CfgReader::ProxyKeyword(size_t number, const std::vector<std::string>& args) {
  Proxy& proxy = *current_;
  const std::string& word = args[0];
  const bool defaults = proxy.kind == "defaults";
  if (kRemovedKeywords.count(word)) {
    return Error(number, "'" + word + "' is not supported anymore by HAProxy 2.6");
  }
  if (!kProxyKeywords.count(word)) {
    return Error(number, "unknown keyword '" + word + "' in '" + proxy.kind + "' section");
  }
  if (word == "server" || word == "default-server" || word == "server-template") {
    if (word != "default-server" && defaults) {
      return Error(number, "'" + word + "' not allowed in 'defaults' section");
    }
    if (!proxy.be && !defaults) {
      return Error(number, "'" + word + "' not allowed: " + proxy.kind + " '" + proxy.name +
                               "' has no backend capability");
    }
    if (word == "server-template") {
      if (!proxy.server_template_line) proxy.server_template_line = number;
      return Status();
    }
    return ServerLine(number, args, word == "default-server");
  }
  if (word == "mode") {
    if (!Arg(args, 2).empty()) return Error(number, "'mode' cannot handle unexpected argument '" + args[2] + "'");
    if (Arg(args, 1) == "http") {
      proxy.state.http = true;
    } else if (Arg(args, 1) == "tcp") {
      proxy.state.http = false;
    } else if (Arg(args, 1) == "health") {
      return Error(number, "'mode health' doesn't exist anymore");
    } else {
      return Error(number, "unknown proxy mode '" + Arg(args, 1) + "'");
    }
    return Status();
  }
  if (word == "balance") return Balance(number, args, proxy.state);
  if (word == "hash-type") return HashType(number, args, proxy.state);
  if (word == "hash-balance-factor") {
    if (Arg(args, 1).empty()) return Error(number, "'hash-balance-factor' expects an integer argument");
    const long factor = std::strtol(args[1].c_str(), nullptr, 10);
    if (factor != 0 && factor <= 100) return Error(number, "'hash-balance-factor' must be 0 or greater than 100");
    proxy.state.hash_balance_factor = factor != 0;
    return Status();
  }
  if (word == "transparent") {
    proxy.state.transparent = true;
    return Status();
  }
  if (defaults && (word == "http-request" || word == "http-response" ||
                   word == "http-after-response" || word == "tcp-request" ||
                   word == "tcp-response")) {
    proxy.state.rules = true;
    if (word == "tcp-request" && (Arg(args, 1) == "connection" || Arg(args, 1) == "session")) {
      proxy.state.l4_rules = true;
    }
  }
  return Status();  // a keyword chash does not read: its arguments are HAProxy's business
}

// backend_parse_balance(): the algorithm and its arguments, or HAProxy's error.
Status CfgReader::Balance(size_t number, const std::vector<std::string>& args, ProxyState& state) {
  const std::string& algo = Arg(args, 1);
  const auto bad = [&](const std::string& why) { return Error(number, "balance " + why); };
  if (algo == "uri") {
    for (size_t i = 2; !Arg(args, i).empty();) {
      const std::string& option = args[i];
      if (option == "len" || option == "depth") {
        if (Arg(args, i + 1).empty() || std::atoi(Arg(args, i + 1).c_str()) <= 0) {
          return bad("uri : '" + option + "' expects a positive integer (got '" + Arg(args, i + 1) + "').");
        }
        i += 2;
      } else if (option == "whole" || option == "path-only") {
        ++i;
      } else {
        return bad("uri only accepts parameters 'len', 'depth', 'path-only', and 'whole' (got '" + option + "').");
      }
    }
  } else if (algo == "url_param") {
    if (Arg(args, 2).empty()) return bad("url_param requires an URL parameter name.");
    if (!Arg(args, 3).empty() && args[3] != "check_post") {
      return bad("url_param only accepts 'check_post' modifier (got '" + args[3] + "').");
    }
  } else if (algo == "hash") {
    if (Arg(args, 2).empty()) return bad("hash requires a sample expression.");
    if (!Arg(args, 3).empty()) return bad("hash takes no other argument (got '" + args[3] + "').");
  } else if (algo.rfind("hdr(", 0) == 0) {
    const size_t close = algo.find(')', 4);
    if (close == std::string::npos || close == 4) return bad("hdr requires an http header field name.");
    if (!Arg(args, 2).empty() && args[2] != "use_domain_only") {
      return bad(algo + " only accepts 'use_domain_only' modifier (got '" + args[2] + "').");
    }
  } else if (algo.rfind("rdp-cookie", 0) == 0) {
    if (algo.size() > 10 && (algo[10] != '(' || algo.find(')', 11) == std::string::npos ||
                             algo.find(')', 11) == 11)) {
      return bad("rdp-cookie : missing cookie name.");
    }
  } else if (algo.rfind("random", 0) == 0) {  // strncmp(..., 6): "randomly" is random too
    if (algo.size() > 7 && algo[6] == '(' && algo[7] != ')') {
      char* end = nullptr;
      const long draws = std::strtol(algo.c_str() + 7, &end, 0);
      if (*end != ')') {
        return bad(*end == '\0' ? "random : missing closing parenthesis."
                                : std::string("random : unexpected character '") + *end +
                                      "' after argument.");
      }
      if (draws < 1) return bad("random : number of draws must be at least 1.");
    }
  } else if (!algo.empty() && algo != "roundrobin" && algo != "static-rr" && algo != "first" &&
             algo != "leastconn" && algo != "source") {
    return bad("only supports 'roundrobin', 'static-rr', 'leastconn', 'source', 'uri', "
               "'url_param', 'hdr(name)' and 'rdp-cookie(name)' options.");
  }
  state.balance.assign(args.begin() + 1, args.end());
  while (!state.balance.empty() && state.balance.back().empty()) state.balance.pop_back();
  state.balance_line = number;
  return Status();
}

Status CfgReader::HashType(size_t number, const std::vector<std::string>& args, ProxyState& state) {
  const std::string& type = Arg(args, 1);
  if (type == "avalanche") {
    return Error(number, "experimental feature 'hash-type avalanche' is not supported anymore, "
                         "please use 'hash-type map-based sdbm avalanche' instead");
  }
  if (type != "consistent" && type != "map-based") {
    return Error(number, "'hash-type' only supports 'consistent' and 'map-based'");
  }
  const std::string& function = Arg(args, 2);
  if (!function.empty() && function != "sdbm" && function != "djb2" && function != "wt6" &&
      function != "crc32") {
    return Error(number, "'hash-type' only supports 'sdbm', 'djb2', 'crc32', or 'wt6' hash functions");
  }
  if (!function.empty() && !Arg(args, 3).empty() && args[3] != "avalanche") {
    return Error(number, "'hash-type' only supports 'avalanche' as a modifier for hash functions");
  }
  // Words past the modifier are not read by HAProxy.
  state.hash_type = {type};
  if (!function.empty()) {
    state.hash_type.push_back(function);
    if (!Arg(args, 3).empty()) state.hash_type.push_back("avalanche");
  }
  state.hash_type_line = number;
  return Status();
}

// parse_server(): a `server` starts from the default-server settings in
// effect at its line; `default-server` changes them for the lines after it.
Status CfgReader::ServerLine(size_t number, const std::vector<std::string>& args,
                             bool default_server) {
  Proxy& proxy = *current_;
  Server server;
  ServerSettings& settings = default_server ? proxy.state.defsrv : server.settings;
  size_t cur = 1;
  const std::string label = default_server ? "'default-server'" : "'server " + proxy.name + "/" + Arg(args, 1) + "'";
  if (!default_server) {
    if (Arg(args, 2).empty()) return Error(number, "'server' expects <name> and <addr>[:<port>] as arguments");
    if (const std::optional<char> c = InvalidChar(args[1])) {
      return Error(number, std::string("character '") + *c + "' is not permitted in server name '" + args[1] + "'");
    }
    server.name = args[1];
    server.address = args[2];
    server.settings = proxy.state.defsrv;
    server.line = number;
    cur = 3;
  }
  while (!Arg(args, cur).empty()) {
    const std::string& word = args[cur];
    const auto* kw = std::find_if(std::begin(kServerKeywords), std::end(kServerKeywords),
                                  [&](const ServerKeyword& k) { return k.name == word; });
    if (kw == std::end(kServerKeywords)) {
      return Error(number, label + " : unknown keyword '" + word + "'");
    }
    if (default_server && !kw->default_ok) {
      // HAProxy says so and goes on: an alert that does not fail the file.
      cur += 1 + static_cast<size_t>(kw->skip);
      continue;
    }
    const std::string& value = Arg(args, cur + 1);
    if (word == "weight") {
      const int weight = AtolToInt(value);  // atol("") is 0: HAProxy takes it
      if (weight < 0 || weight > kMaxServerWeight) {
        return Error(number, label + " : weight of server " +
                                 (default_server ? std::string("(null)") : server.name) +
                                 " is not within 0 and 256 (" + std::to_string(weight) + ").");
      }
      settings.weight = weight;
    } else if (word == "id") {
      if (value.empty()) return Error(number, label + " : 'id' : expects an integer argument");
      server.id = AtolToInt(value);
      if (server.id <= 0) return Error(number, label + " : 'id' : custom id has to be > 0");
      if (const auto it = proxy.ids.find(server.id); it != proxy.ids.end()) {
        const Server& other = proxy.servers[it->second];
        return Error(number, label + " : 'id' : custom id " + std::to_string(server.id) +
                                 " already used at " + At(other.line) + " ('server " +
                                 other.name + "')");
      }
    } else if (word == "backup" || word == "no-backup") {
      settings.backup = word == "backup";
    } else if (word == "disabled" || word == "enabled") {
      settings.disabled = word == "disabled";
    } else if (word == "check" || word == "agent-check") {
      settings.check = true;
    } else if (word == "no-check" || word == "no-agent-check") {
      settings.check = false;
    } else if (word == "track") {
      server.track = value;
    } else if (word == "usesrc") {
      return Error(number, label + " : 'usesrc' only allowed after a 'source' statement.");
    } else if (word == "source") {
      // srv_parse_source(): an address, then `usesrc X` and `interface X`.
      if (value.empty()) {
        return Error(number, label + " : 'source' expects <addr>[:<port>[-<port>]], and "
                                     "optionally 'usesrc' <addr>, and 'interface' <name> as argument.");
      }
      cur += 2;
      while (Arg(args, cur) == "usesrc" || Arg(args, cur) == "interface") {
        if (Arg(args, cur + 1).empty()) {
          return Error(number, label + " : '" + args[cur] + "' without its argument: chash "
                                       "does not read it");
        }
        cur += 2;
      }
      continue;
    } else if (kw->skip == 1 && value.empty()) {
      return Error(number, label + " : '" + word + "' without its argument: chash does not "
                                   "check what HAProxy makes of it");
    }
    cur += 1 + static_cast<size_t>(kw->skip);
  }
  if (default_server) return Status();
  if (server.settings.check && !server.track.empty()) {
    return Error(number, label + " : unable to enable checks and tracking at the same time!");
  }
  if (server.id != 0) proxy.ids[server.id] = proxy.servers.size();
  proxy.servers.push_back(std::move(server));
  return Status();
}

// check_config_validity()'s part: servers of one name without ids.
Status CfgReader::Finish() {
  for (const auto& proxy : proxies_) {
    for (size_t i = 0; i < proxy->servers.size(); ++i) {
      const Server& s = proxy->servers[i];
      if (s.id != 0) continue;
      for (size_t j = 0; j < i; ++j) {
        const Server& other = proxy->servers[j];
        if (other.id == 0 && other.name == s.name) {
          return Error(s.line, proxy->kind + " '" + proxy->name + "', another server named '" +
                                   s.name + "' was already defined at line " +
                                   std::to_string(other.line) + ", please use distinct names.");
        }
      }
      if (!s.track.empty() && s.track.find('/') == std::string::npos) {
        const auto tracked = std::find_if(proxy->servers.begin(), proxy->servers.end(),
                                          [&](const Server& t) { return t.name == s.track; });
        if (tracked == proxy->servers.end()) {
          return Error(s.line, "'server " + proxy->name + "/" + s.name +
                                   "' : unable to find required server '" + s.track +
                                   "' for tracking.");
        }
        if (!tracked->settings.check) {
          return Error(s.line, "'server " + proxy->name + "/" + s.name + "' : unable to use " +
                                   proxy->name + "/" + s.track + " for tracking as it does not "
                                   "have any check nor agent enabled.");
        }
      }
    }
  }
  return Status();
}

Result<HaproxyBackend> CfgReader::Backend(const std::string& backend) const {
  const Proxy* found = nullptr;
  for (const auto& proxy : proxies_) {
    if (proxy->be && proxy->name == backend) found = proxy.get();
  }
  if (found == nullptr) return Bad(path_ + ": no backend or listen section named '" + backend + "'");
  const Proxy& proxy = *found;
  const ProxyState& state = proxy.state;
  if (proxy.server_template_line) {
    return Error(*proxy.server_template_line, "server-template: chash reads `server` lines only");
  }
  if (state.hash_type.empty() || state.hash_type[0] != "consistent") {
    return Bad(At(state.hash_type.empty() ? proxy.line : state.hash_type_line) + ": backend '" +
               backend + "' uses hash-type " +
               (state.hash_type.empty() ? std::string("map-based (the default)") : state.hash_type[0]) +
               ": HAProxy keeps no ring for it (chash reads `hash-type consistent`)");
  }
  HaproxyBackend result;
  result.options.flavor = Flavor::kHaproxy;
  HaproxyOptions& haproxy = result.options.haproxy;
  if (state.hash_type.size() >= 2) {
    static const std::pair<std::string_view, HaproxyHash> kFunctions[] = {
        {"sdbm", HaproxyHash::kSdbm}, {"djb2", HaproxyHash::kDjb2},
        {"wt6", HaproxyHash::kWt6},   {"crc32", HaproxyHash::kCrc32}};
    for (const auto& [name, function] : kFunctions) {
      if (name == state.hash_type[1]) haproxy.hash_function = function;
    }
    // Naming the function drops the avalanche unless `avalanche` follows.
    haproxy.avalanche = state.hash_type.size() == 3;
  }
  if (state.balance.empty()) {
    return Error(proxy.line, "backend '" + backend +
                                 "' has no `balance` line: roundrobin, which is not a hash");
  }
  const std::string& algorithm = state.balance[0];
  const bool l7 = algorithm == "uri" || algorithm == "url_param" || algorithm.rfind("hdr(", 0) == 0;
  if (!l7 && algorithm != "source" && algorithm.rfind("rdp-cookie", 0) != 0 && algorithm != "hash") {
    return Error(state.balance_line, "balance " + algorithm + " does not hash a key: the ring is not used");
  }
  if (l7 && !state.http) {
    return Error(state.balance_line, "Layer 7 hash not possible for " + proxy.kind + " '" +
                                         backend + "' (needs 'mode http'): HAProxy falls back "
                                         "to round robin and keeps no ring");
  }
  if (state.transparent) {
    return Error(proxy.line, proxy.kind + " '" + backend + "' cannot use both transparent and balance mode.");
  }
  for (const std::string& word : state.balance) {
    result.balance += (result.balance.empty() ? "" : " ") + word;
  }
  if (state.hash_balance_factor) {
    result.notes.push_back(At(proxy.line) + ": hash-balance-factor moves keys off busy servers "
                                            "at run time: chash gives the ring's answer");
  }
  for (const Server& s : proxy.servers) {
    const std::string where = At(s.line);
    if (!s.track.empty()) {
      // A tracking server takes the tracked one's state, which chash would
      // have to follow across backends and through maintenance.
      const auto tracked = std::find_if(proxy.servers.begin(), proxy.servers.end(),
                                        [&](const Server& t) { return t.name == s.track; });
      if (tracked == proxy.servers.end() || tracked->settings.disabled) {
        return Error(s.line, "server " + s.name + " tracks " + s.track +
                                 (tracked == proxy.servers.end()
                                      ? std::string(" in another backend")
                                      : std::string(", which is disabled")) +
                                 ": chash does not follow the state HAProxy gives it");
      }
    }
    ServerEntry entry{s.address, static_cast<uint32_t>(s.settings.weight), s.line};
    ProgramServer server;
    server.address = s.address;
    server.server_id = static_cast<uint32_t>(s.id);
    if (s.settings.disabled || s.settings.backup) {
      result.notes.push_back(where + ": server " + s.name + " is " +
                             (s.settings.disabled ? "disabled" : "backup") +
                             ": out of HAProxy's active tree, it owns no points");
      entry.weight = 0;  // keeps its id, as HAProxy numbers it
    }
    server.weight = entry.weight;
    result.servers.push_back(std::move(entry));
    result.program.push_back(std::move(server));
  }
  if (result.servers.empty()) return Error(proxy.line, "backend '" + backend + "' has no server line");
  return result;
}

}  // namespace

Result<HaproxyBackend> ReadHaproxyBackendText(const std::string& path, std::string_view text,
                                              const std::string& backend) {
  CfgReader reader(path, text);
  if (Status status = reader.Read(); !status.ok()) return status;
  return reader.Backend(backend);
}

Result<HaproxyBackend> ReadHaproxyBackend(const std::string& path, const std::string& backend) {
  int os_error = 0;
  Result<std::string> text = ReadConfigFile(path, kMaxHaproxyCfgBytes, os_error);
  if (!text.ok()) {
    return Status(text.status().code(), path + (os_error != 0 ? ": cannot be opened: " : ": ") +
                                            text.status().message());
  }
  return ReadHaproxyBackendText(path, text.value(), backend);
}

}  // namespace chash::cli
