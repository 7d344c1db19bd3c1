#include "nginx_conf.h"

#include <glob.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <set>

#include "chash/address.h"
#include "config_file.h"

namespace chash::cli {
namespace {

// include depth past which the config is refused (a file including itself
// would otherwise recurse until the process runs out of descriptors).
constexpr int kMaxIncludeDepth = 32;

Status ConfError(const std::string& file, size_t line, const std::string& message) {
  return Status(StatusCode::kBadArgument, file + ":" + std::to_string(line) + ": " + message);
}

std::string Quote(std::string_view text) { return "\"" + std::string(text) + "\""; }

// One directive of the parsed tree; includes are already expanded in place.
struct Directive {
  std::vector<std::string> args;  // the name, then its arguments
  std::string file;
  size_t line = 0;      // where its ';' or '{' is: the line nginx reports
  size_t end_line = 0;  // a block: where its '}' is
  bool block = false;
  std::vector<Directive> children;
};

// nginx's tokenizer (ngx_conf_read_token) over one file.
class Lexer {
 public:
  enum class End { kDirective, kBlockStart, kBlockEnd, kEndOfFile };

  Lexer(std::string file, std::string text) : file_(std::move(file)), text_(std::move(text)) {}

  const std::string& file() const { return file_; }
  size_t line() const { return line_; }
  Status Error(const std::string& message) const { return ConfError(file_, line_, message); }

  // Reads the tokens of the next directive into `args` and what ended it.
  Result<End> Next(std::vector<std::string>& args) {
    args.clear();
    while (true) {
      if (pos_ == text_.size()) {
        if (!args.empty()) return Error("unexpected end of file, expecting \";\" or \"}\"");
        return End::kEndOfFile;
      }
      const char c = text_[pos_];
      if (c == '\n') {
        ++line_;
        ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n') ++pos_;
      } else if (c == ';' || c == '{') {
        ++pos_;
        if (args.empty()) return Error("unexpected " + Quote(std::string(1, c)));
        return c == ';' ? End::kDirective : End::kBlockStart;
      } else if (c == '}') {
        ++pos_;
        if (!args.empty()) return Error("unexpected \"}\"");
        return End::kBlockEnd;
      } else if (c == '"' || c == '\'') {
        Result<std::string> token = QuotedToken(c);
        if (!token.ok()) return token.status();
        args.push_back(std::move(token).value());
      } else {
        args.push_back(Word());
      }
    }
  }

 private:
  bool IsSpace(char c) const { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

  // The character after a '\' (nginx keeps the '\' of unknown escapes).
  void Escaped(std::string& token) {
    const char c = text_[pos_++];
    switch (c) {
      case '"':
      case '\'':
      case '\\':
        token += c;
        return;
      case 't':
        token += '\t';
        return;
      case 'r':
        token += '\r';
        return;
      case 'n':
        token += '\n';
        return;
      default:
        if (c == '\n') ++line_;
        token += '\\';
        token += c;
    }
  }

  Result<std::string> QuotedToken(char quote) {
    std::string token;
    ++pos_;
    while (true) {
      if (pos_ == text_.size()) return Error("unexpected end of file, expecting \";\" or \"}\"");
      const char c = text_[pos_++];
      if (c == quote) break;
      if (c == '\\' && pos_ < text_.size()) {
        Escaped(token);
        continue;
      }
      if (c == '\n') ++line_;
      token += c;
    }
    // nginx wants a separator after a closing quote (')' closes `if (...)`).
    if (pos_ < text_.size()) {
      const char next = text_[pos_];
      if (!IsSpace(next) && next != ';' && next != '{' && next != ')') {
        return Error("unexpected " + Quote(std::string(1, next)));
      }
    }
    return token;
  }

  // An unquoted token: up to whitespace, ';' or '{' ("${" is a variable's
  // brace and "}" belongs to the word, as in nginx).
  std::string Word() {
    std::string token;
    bool after_dollar = false;
    while (pos_ < text_.size()) {
      const char c = text_[pos_];
      if (c == '{' && after_dollar) {
        token += c;
        ++pos_;
        continue;
      }
      if (IsSpace(c) || c == ';' || c == '{') break;
      ++pos_;
      after_dollar = c == '$';
      if (c == '\\' && pos_ < text_.size()) {
        Escaped(token);
        continue;
      }
      token += c;
    }
    return token;
  }

  std::string file_;
  std::string text_;
  size_t pos_ = 0;
  size_t line_ = 1;
};

// Which directives of a block the reader keeps: nginx's contexts on the way
// to an upstream's servers. Everything else is parsed for its syntax and
// dropped, so memory stays proportional to the upstreams, not to the file.
enum class Keep {
  kMain,      // the main context: keep http and stream blocks
  kModule,    // inside http or stream: keep upstream directives
  kUpstream,  // inside an upstream: keep every directive, not its children
  kNothing,   // anywhere else
};

Keep ChildKeep(Keep parent, const std::vector<std::string>& args) {
  switch (parent) {
    case Keep::kMain:
      return args[0] == "http" || args[0] == "stream" ? Keep::kModule : Keep::kNothing;
    case Keep::kModule:
      return args[0] == "upstream" ? Keep::kUpstream : Keep::kNothing;
    default:
      return Keep::kNothing;
  }
}

bool Kept(Keep parent, const std::vector<std::string>& args) {
  return parent == Keep::kUpstream || ChildKeep(parent, args) != Keep::kNothing;
}

class ConfReader {
 public:
  explicit ConfReader(const std::string& main_path) {
    // nginx resolves relative includes against its conf_prefix: the
    // directory of the main configuration file.
    const size_t slash = main_path.rfind('/');
    conf_dir_ = slash == std::string::npos ? "" : main_path.substr(0, slash + 1);
  }

  Status ReadMain(const std::string& path, std::vector<Directive>& out) {
    std::string text;
    int os_error = 0;
    if (Status status = ReadFile(path, text, os_error); !status.ok()) {
      return Status(status.code(), path + ": " + status.message());
    }
    return ParseMain(path, std::move(text), out);
  }

  Status ParseMain(const std::string& path, std::string text, std::vector<Directive>& out) {
    if (text.size() > kMaxConfFileBytes) return Status(StatusCode::kBadArgument, TooLarge(path));
    total_bytes_ = text.size();
    Lexer lexer(path, std::move(text));
    return ParseBlock(lexer, 0, 0, Keep::kMain, &out, false);
  }

 private:
  static std::string TooLarge(const std::string& path) {
    return path + ": larger than " + std::to_string(kMaxConfFileBytes >> 20) +
           " MiB: chash reads config files up to that size";
  }

  // A regular file, whole (up to kMaxConfFileBytes): a FIFO, a device or a
  // directory is refused, never read (nginx reads them up to their
  // reported size, 0 for most). `os_error` is a failed open()'s errno.
  static Status ReadFile(const std::string& path, std::string& text, int& os_error) {
    Result<std::string> read = ReadConfigFile(path, kMaxConfFileBytes, os_error);
    if (!read.ok()) return read.status();
    text = std::move(read).value();
    return Status();
  }

  // Parses directives into `out` (nullptr: parsed and dropped) until the
  // end of the file or, in a block, its '}'.
  Status ParseBlock(Lexer& lexer, int include_depth, int block_depth, Keep keep,
                    std::vector<Directive>* out, bool in_block) {
    std::vector<std::string> args;
    while (true) {
      Result<Lexer::End> end = lexer.Next(args);
      if (!end.ok()) return end.status();
      switch (end.value()) {
        case Lexer::End::kEndOfFile:
          if (in_block) return lexer.Error("unexpected end of file, expecting \"}\"");
          return Status();
        case Lexer::End::kBlockEnd:
          if (!in_block) return lexer.Error("unexpected \"}\"");
          return Status();
        case Lexer::End::kDirective:
          if (args[0] == "include") {
            if (Status status = Include(lexer, args, include_depth, block_depth, keep, out);
                !status.ok()) {
              return status;
            }
          } else if (out != nullptr && Kept(keep, args)) {
            out->push_back({args, lexer.file(), lexer.line(), 0, false, {}});
          }
          break;
        case Lexer::End::kBlockStart: {
          // nginx recurses once a block too; chash stops at a depth no real
          // config reaches, before the stack can run out.
          if (block_depth + 1 > kMaxBlockDepth) {
            return lexer.Error("blocks nested deeper than " + std::to_string(kMaxBlockDepth) +
                               " levels: chash does not read them");
          }
          const bool kept = out != nullptr && Kept(keep, args);
          Directive block{args, lexer.file(), lexer.line(), 0, true, {}};
          const Keep child = ChildKeep(keep, args);
          if (Status status = ParseBlock(lexer, include_depth, block_depth + 1, child,
                                         kept && child != Keep::kNothing ? &block.children
                                                                         : nullptr,
                                         true);
              !status.ok()) {
            return status;
          }
          block.end_line = lexer.line();
          if (kept) out->push_back(std::move(block));
          break;
        }
      }
    }
  }

  Status Include(const Lexer& lexer, const std::vector<std::string>& args, int include_depth,
                 int block_depth, Keep keep, std::vector<Directive>* out) {
    if (args.size() != 2) return lexer.Error("invalid number of arguments in \"include\" directive");
    if (include_depth + 1 > kMaxIncludeDepth) {
      return lexer.Error("includes nested deeper than " + std::to_string(kMaxIncludeDepth) +
                         " files (does a file include itself?)");
    }
    const std::string path = args[1].rfind('/', 0) == 0 ? args[1] : conf_dir_ + args[1];
    std::vector<std::string> files;
    if (path.find_first_of("*?[") == std::string::npos) {
      files.push_back(path);
    } else {
      glob_t matches{};
      const int status = glob(path.c_str(), 0, nullptr, &matches);
      if (status == 0) {
        for (size_t i = 0; i < matches.gl_pathc; ++i) files.emplace_back(matches.gl_pathv[i]);
      }
      globfree(&matches);
      if (status != 0 && status != GLOB_NOMATCH) {
        return lexer.Error("glob() " + Quote(path) + " failed");
      }
    }
    for (const std::string& file : files) {
      std::string text;
      int os_error = 0;
      if (Status status = ReadFile(file, text, os_error); !status.ok()) {
        if (os_error != 0) {  // nginx's own message
          return lexer.Error("open() " + Quote(file) + " failed (" + std::to_string(os_error) +
                             ": " + status.message() + ")");
        }
        return lexer.Error("include " + Quote(file) + ": " + status.message());
      }
      // Every byte read counts, so includes that fan out (a file included
      // twice by each of its includers) end at the budget, not at 2^depth.
      total_bytes_ += text.size();
      if (total_bytes_ > kMaxConfTotalBytes) {
        return lexer.Error("include " + Quote(file) + ": the config and its includes are over " +
                           std::to_string(kMaxConfTotalBytes >> 20) +
                           " MiB: chash reads no more");
      }
      Lexer included(file, std::move(text));
      if (Status status =
              ParseBlock(included, include_depth + 1, block_depth, keep, out, false);
          !status.ok()) {
        return status;
      }
    }
    return Status();
  }

  std::string conf_dir_;  // with its trailing '/', or "" for the working directory
  size_t total_bytes_ = 0;
};

bool EqualsIgnoringCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

constexpr int64_t kNgxMaxInt = INT64_MAX;  // NGX_MAX_INT_T_VALUE on 64-bit Linux

// ngx_atoi: decimal digits only, at least one, up to NGX_MAX_INT_T_VALUE.
std::optional<int64_t> NgxAtoi(std::string_view text) {
  if (text.empty()) return std::nullopt;
  const int64_t cutoff = kNgxMaxInt / 10, cutlim = kNgxMaxInt % 10;
  int64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    if (value >= cutoff && (value > cutoff || c - '0' > cutlim)) return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

// ngx_parse_time, step for step (src/core/ngx_parse.c): numbers each with a
// unit, units in decreasing order (y M w d h m s, and ms unless is_sec), a
// space ending a number like a unit of seconds, spaces after a unit
// skipped ("1h 30s"), a last number without a unit. Seconds if is_sec,
// else milliseconds; nullopt where nginx answers NGX_ERROR.
std::optional<int64_t> NgxParseTime(std::string_view line, bool is_sec) {
  enum Step { kStart, kYear, kMonth, kWeek, kDay, kHour, kMin, kSec, kMsec, kLast };
  int64_t value = 0, total = 0;
  const int64_t cutoff = kNgxMaxInt / 10, cutlim = kNgxMaxInt % 10;
  bool valid = false;
  Step step = is_sec ? kStart : kMonth;
  size_t p = 0;
  while (p < line.size()) {
    const char c = line[p];
    if (c >= '0' && c <= '9') {
      if (value >= cutoff && (value > cutoff || c - '0' > cutlim)) return std::nullopt;
      value = value * 10 + (c - '0');
      ++p;
      valid = true;
      continue;
    }
    ++p;
    int64_t max = 0, scale = 0;
    switch (c) {
      case 'y':
        if (step > kStart) return std::nullopt;
        step = kYear, scale = int64_t{60} * 60 * 24 * 365;
        break;
      case 'M':
        if (step >= kMonth) return std::nullopt;
        step = kMonth, scale = int64_t{60} * 60 * 24 * 30;
        break;
      case 'w':
        if (step >= kWeek) return std::nullopt;
        step = kWeek, scale = int64_t{60} * 60 * 24 * 7;
        break;
      case 'd':
        if (step >= kDay) return std::nullopt;
        step = kDay, scale = int64_t{60} * 60 * 24;
        break;
      case 'h':
        if (step >= kHour) return std::nullopt;
        step = kHour, scale = int64_t{60} * 60;
        break;
      case 'm':
        if (p < line.size() && line[p] == 's') {
          if (is_sec || step >= kMsec) return std::nullopt;
          ++p;
          step = kMsec, scale = 1;
          break;
        }
        if (step >= kMin) return std::nullopt;
        step = kMin, scale = 60;
        break;
      case 's':
        if (step >= kSec) return std::nullopt;
        step = kSec, scale = 1;
        break;
      case ' ':
        if (step >= kSec) return std::nullopt;
        step = kLast, scale = 1;
        break;
      default:
        return std::nullopt;
    }
    max = kNgxMaxInt / scale;
    if (step != kMsec && !is_sec) {
      scale *= 1000;
      max /= 1000;
    }
    if (value > max) return std::nullopt;
    value *= scale;
    if (total > kNgxMaxInt - value) return std::nullopt;
    total += value;
    value = 0;
    while (p < line.size() && line[p] == ' ') ++p;
  }
  if (!valid) return std::nullopt;
  if (!is_sec) {
    if (value > kNgxMaxInt / 1000) return std::nullopt;
    value *= 1000;
  }
  if (total > kNgxMaxInt - value) return std::nullopt;
  return total + value;
}

// ngx_parse_size: a number with an optional k/K, m/M or g/G suffix.
std::optional<int64_t> NgxParseSize(std::string_view line) {
  if (line.empty()) return std::nullopt;
  int64_t scale = 1;
  switch (line.back()) {
    case 'K':
    case 'k':
      scale = int64_t{1} << 10;
      break;
    case 'M':
    case 'm':
      scale = int64_t{1} << 20;
      break;
    case 'G':
    case 'g':
      scale = int64_t{1} << 30;
      break;
    default:
      break;
  }
  if (scale != 1) line.remove_suffix(1);
  const std::optional<int64_t> size = NgxAtoi(line);
  if (!size || *size > kNgxMaxInt / scale) return std::nullopt;
  return *size * scale;
}

std::string Where(const Directive& d) { return d.file + ":" + std::to_string(d.line); }

Status DirectiveError(const Directive& d, const std::string& message) {
  return ConfError(d.file, d.line, message);
}

// The directives an upstream block takes in nginx 1.22 (Debian's build):
// its own, the balancing modules' and keepalive's (http only) and zone's.
// `stream` has no ip_hash and no keepalive.
struct UpstreamDirective {
  std::string_view name;
  size_t min_args, max_args;  // arguments after the name
  bool http, stream;
};
constexpr UpstreamDirective kUpstreamDirectives[] = {
    {"server", 1, SIZE_MAX, true, true},    {"hash", 1, 2, true, true},
    {"ip_hash", 0, 0, true, false},         {"least_conn", 0, 0, true, true},
    {"random", 0, 2, true, true},           {"zone", 1, 2, true, true},
    {"keepalive", 1, 1, true, false},       {"keepalive_requests", 1, 1, true, false},
    {"keepalive_time", 1, 1, true, false},  {"keepalive_timeout", 1, 1, true, false},
};

// A zone as an upstream declares it (nginx's shared memory zones are one
// namespace; chash sees only the upstreams' own).
struct ZoneUse {
  std::string module;  // "http" or "stream": nginx tags the zone with it
  int64_t size = 0;    // 0: not sized here
  const Directive* where = nullptr;
};

// An upstream block as read: its servers, and its balancing method.
struct UpstreamBlock {
  NginxUpstream upstream;
  std::string method;  // the last balancing method, "" for round robin
  bool consistent = false;
  const Directive* method_line = nullptr;
};

// Checks one upstream block as nginx does and reads its servers and method.
// `context` is "http" or "stream".
Result<UpstreamBlock> ReadUpstream(const Directive& block, const std::string& context,
                                   std::map<std::string, ZoneUse>& zones) {
  NginxUpstream upstream;
  upstream.name = block.args[1];
  upstream.file = block.file;
  upstream.line = block.line;
  std::string method;  // the last balancing method, "" for round robin
  bool consistent = false;
  const Directive* method_line = nullptr;
  size_t backups = 0;
  std::set<std::string> seen;  // the single-valued directives given so far
  for (const Directive& d : block.children) {
    const std::string& name = d.args[0];
    const UpstreamDirective* known = nullptr;
    for (const UpstreamDirective& row : kUpstreamDirectives) {
      if (row.name == name) known = &row;
    }
    if (known == nullptr) return DirectiveError(d, "unknown directive " + Quote(name));
    if (!(context == "http" ? known->http : known->stream)) {
      return DirectiveError(d, Quote(name) + " directive is not allowed here");
    }
    if (d.block) return DirectiveError(d, "directive " + Quote(name) + " is not terminated by \";\"");
    const size_t count = d.args.size() - 1;
    if (count < known->min_args || count > known->max_args) {
      return DirectiveError(d, "invalid number of arguments in " + Quote(name) + " directive");
    }
    if (name.rfind("keepalive", 0) == 0) {
      if (!seen.insert(name).second) return DirectiveError(d, Quote(name) + " directive is duplicate");
      const std::string& value = d.args[1];
      if (name == "keepalive") {
        const std::optional<int64_t> n = NgxAtoi(value);
        if (!n || *n == 0) {
          return DirectiveError(d, "invalid value " + Quote(value) + " in \"keepalive\" directive");
        }
      } else if (name == "keepalive_requests") {
        if (!NgxAtoi(value)) return DirectiveError(d, Quote(name) + " directive invalid number");
      } else if (!NgxParseTime(value, false)) {
        return DirectiveError(d, Quote(name) + " directive invalid value");
      }
      continue;
    }
    if (name == "zone") {
      if (d.args[1].empty()) return DirectiveError(d, "invalid zone name " + Quote(d.args[1]));
      int64_t size = 0;
      if (d.args.size() == 3) {
        const std::optional<int64_t> parsed = NgxParseSize(d.args[2]);
        if (!parsed) return DirectiveError(d, "invalid zone size " + Quote(d.args[2]));
        if (*parsed < 8 * 4096) return DirectiveError(d, "zone " + Quote(d.args[1]) + " is too small");
        size = *parsed;
      }
      // ngx_shared_memory_add: one name, one module, one size.
      auto [it, added] = zones.try_emplace(d.args[1], ZoneUse{context, size, &d});
      if (!added) {
        if (it->second.module != context) {
          return DirectiveError(d, "the shared memory zone " + Quote(d.args[1]) +
                                       " is already declared for a different use");
        }
        if (size != 0 && it->second.size != 0 && size != it->second.size) {
          return DirectiveError(d, "the size " + std::to_string(size) +
                                       " of shared memory zone " + Quote(d.args[1]) +
                                       " conflicts with already declared size " +
                                       std::to_string(it->second.size));
        }
        if (it->second.size == 0) it->second = ZoneUse{context, size, &d};
      }
      continue;
    }
    if (name == "server") {
      NginxServer server{d.args[1], 1, false, d.file, d.line};
      bool backup = false;
      for (size_t i = 2; i < d.args.size(); ++i) {
        const std::string_view param = d.args[i];
        const size_t eq = param.find('=');
        const std::string_view key = param.substr(0, eq == std::string_view::npos ? eq : eq + 1);
        const std::string_view value = eq == std::string_view::npos ? "" : param.substr(eq + 1);
        bool valid = true;
        if (key == "weight=") {
          const std::optional<int64_t> weight = NgxAtoi(value);
          valid = weight && *weight > 0;
          if (valid && *weight > int64_t{UINT32_MAX}) {
            return DirectiveError(d, Quote(param) + ": chash takes weights up to 4294967295");
          }
          if (valid) server.weight = static_cast<uint32_t>(*weight);
        } else if (key == "max_fails=" || key == "max_conns=") {
          valid = NgxAtoi(value).has_value();
        } else if (key == "fail_timeout=") {
          valid = NgxParseTime(value, true).has_value();
        } else if (param == "down") {
          server.down = true;
        } else if (param == "backup") {
          // Only round robin and least_conn take backups; the hash method
          // refuses them once it is set (nginx's own message).
          if (!method.empty() && method != "least_conn") {
            return DirectiveError(d, "balancing method does not support parameter \"backup\"");
          }
          backup = true;
        } else {
          valid = false;
        }
        if (!valid) return DirectiveError(d, "invalid parameter " + Quote(param));
      }
      if (backup) {
        ++backups;
        upstream.notes.push_back(Where(d) + ": backup server " + Quote(server.address) +
                                 " is not on nginx's ring (nginx uses it only when it falls back "
                                 "to round robin): left out");
        continue;
      }
      upstream.servers.push_back(std::move(server));
    } else if (name == "hash") {
      if (d.args.size() == 3 && d.args[2] != "consistent") {
        return DirectiveError(d, "invalid parameter " + Quote(d.args[2]));
      }
      method = name;
      consistent = d.args.size() == 3;
      upstream.hash_key = d.args[1];
      method_line = &d;
    } else {  // ip_hash, least_conn, random
      if (name == "random" && d.args.size() >= 2) {
        if (d.args[1] != "two") return DirectiveError(d, "invalid parameter " + Quote(d.args[1]));
        if (d.args.size() == 3 && d.args[2] != "least_conn") {
          return DirectiveError(d, "invalid parameter " + Quote(d.args[2]));
        }
      }
      method = name;
      method_line = &d;
    }
  }
  if (upstream.servers.empty() && backups == 0) {
    return ConfError(block.file, block.end_line, "no servers are inside upstream");
  }
  return UpstreamBlock{std::move(upstream), method, consistent, method_line};
}

// What nginx builds no ring for, once the upstream passed nginx's checks.
Status CheckRing(const UpstreamBlock& read, const Directive& block) {
  const NginxUpstream& upstream = read.upstream;
  const std::string upstream_name = "upstream " + Quote(upstream.name);
  if (read.method.empty()) {
    return ConfError(block.file, block.line,
                     upstream_name + " has no \"hash KEY consistent;\": nginx balances it by "
                                     "weighted round robin and builds no ring");
  }
  if (read.method != "hash") {
    return DirectiveError(*read.method_line,
                          upstream_name + " balances by " + read.method +
                              " (the last balancing method wins): nginx builds no ring");
  }
  if (!read.consistent) {
    return ConfError(read.method_line->file, read.method_line->line,
                     "\"hash KEY;\" without \"consistent\" picks a server by hash % total "
                     "weight: nginx builds no ring for " + upstream_name);
  }
  if (upstream.servers.empty()) {
    return ConfError(block.file, block.end_line,
                     "every server of " + upstream_name + " is a backup: nginx's ring is empty");
  }
  return Status();
}

// The address checks nginx makes of every server of an upstream other than
// the one asked for (whose servers the ring builder checks, naming the node).
Status CheckAddresses(const NginxUpstream& upstream, const std::string& context) {
  for (const NginxServer& server : upstream.servers) {
    Result<NodeAddress> address = ParseNginxAddress(server.address);
    if (!address.ok()) {
      return ConfError(server.file, server.line, "upstream " + Quote(upstream.name) + ": " +
                                                     address.status().message());
    }
    const bool unix_socket =
        server.address.size() >= 5 && EqualsIgnoringCase(server.address.substr(0, 5), "unix:");
    if (context == "stream" && address.value().port.empty() && !unix_socket) {
      return ConfError(server.file, server.line, "no port in upstream " + Quote(server.address));
    }
  }
  return Status();
}

Result<NginxUpstream> ReadTree(const std::string& conf_path, const std::vector<Directive>& top,
                               std::string_view name) {
  struct Found {
    const Directive* block;
    std::string context;
    UpstreamBlock read;
  };
  std::vector<Found> found;
  std::string known;
  std::map<std::string, ZoneUse> zones;
  std::set<std::string> modules;
  // In file order, as nginx meets them: the first error is the one reported.
  for (const Directive& context : top) {
    if (!modules.insert(context.args[0]).second) {
      return DirectiveError(context, Quote(context.args[0]) + " directive is duplicate");
    }
    if (!context.block) {
      return DirectiveError(context, "directive " + Quote(context.args[0]) + " has no opening \"{\"");
    }
    std::vector<const Directive*> seen;  // this context's upstreams, for duplicates
    for (const Directive& d : context.children) {
      if (!d.block) return DirectiveError(d, "directive \"upstream\" has no opening \"{\"");
      if (d.args.size() != 2) {
        return DirectiveError(d, "invalid number of arguments in \"upstream\" directive");
      }
      for (const Directive* other : seen) {
        if (EqualsIgnoringCase(other->args[1], d.args[1])) {
          return DirectiveError(d, "duplicate upstream " + Quote(d.args[1]));
        }
      }
      seen.push_back(&d);
      Result<UpstreamBlock> read = ReadUpstream(d, context.args[0], zones);
      if (!read.ok()) return read.status();
      if (EqualsIgnoringCase(d.args[1], name)) {
        found.push_back({&d, context.args[0], std::move(read).value()});
      } else {
        if (Status status = CheckAddresses(read.value().upstream, context.args[0]); !status.ok()) {
          return status;
        }
        known += (known.empty() ? "" : ", ") + d.args[1];
      }
    }
  }
  // A zone no upstream sizes: nginx refuses it when it creates the zones.
  for (const auto& [zone, use] : zones) {
    if (use.size == 0) {
      return DirectiveError(*use.where, "zero size shared memory zone " + Quote(zone));
    }
  }
  if (found.empty()) {
    return Status(StatusCode::kBadArgument,
                  conf_path + ": no upstream " + Quote(name) + " in http or stream (" +
                      (known.empty() ? "no upstreams" : "upstreams: " + known) + ")");
  }
  if (found.size() > 1) {
    return Status(StatusCode::kBadArgument,
                  "upstream " + Quote(name) + " is in http (" + Where(*found[0].block) +
                      ") and in stream (" + Where(*found[1].block) +
                      "): chash cannot tell which you mean");
  }
  if (found[0].context == "stream") {
    if (Status status = CheckAddresses(found[0].read.upstream, "stream"); !status.ok()) {
      return status;
    }
  }
  if (Status status = CheckRing(found[0].read, *found[0].block); !status.ok()) return status;
  return std::move(found[0].read.upstream);
}

}  // namespace

Result<NginxUpstream> ReadNginxUpstream(const std::string& conf_path, std::string_view name) {
  ConfReader reader(conf_path);
  std::vector<Directive> top;
  if (Status status = reader.ReadMain(conf_path, top); !status.ok()) return status;
  return ReadTree(conf_path, top, name);
}

Result<NginxUpstream> ReadNginxUpstreamText(const std::string& conf_path, std::string text,
                                            std::string_view name) {
  ConfReader reader(conf_path);
  std::vector<Directive> top;
  if (Status status = reader.ParseMain(conf_path, std::move(text), top); !status.ok()) {
    return status;
  }
  return ReadTree(conf_path, top, name);
}

}  // namespace chash::cli
