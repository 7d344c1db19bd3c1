#include "nginx_conf.h"

#include <glob.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <optional>

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
    if (const int error = ReadFile(path, text); error != 0) {
      return Status(StatusCode::kIoError, path + ": " + std::strerror(error));
    }
    Lexer lexer(path, std::move(text));
    return ParseBlock(lexer, 0, out, false);
  }

 private:
  static int ReadFile(const std::string& path, std::string& text) {
    std::FILE* file = std::fopen(path.c_str(), "rb");
    if (file == nullptr) return errno;
    char buffer[1 << 16];
    size_t got;
    while ((got = std::fread(buffer, 1, sizeof buffer, file)) > 0) text.append(buffer, got);
    const int error = std::ferror(file) ? (errno != 0 ? errno : EIO) : 0;
    std::fclose(file);
    return error;
  }

  Status ParseBlock(Lexer& lexer, int depth, std::vector<Directive>& out, bool in_block) {
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
            if (Status status = Include(lexer, args, depth, out); !status.ok()) return status;
          } else {
            out.push_back({args, lexer.file(), lexer.line(), 0, false, {}});
          }
          break;
        case Lexer::End::kBlockStart: {
          Directive block{args, lexer.file(), lexer.line(), 0, true, {}};
          if (Status status = ParseBlock(lexer, depth, block.children, true); !status.ok()) {
            return status;
          }
          block.end_line = lexer.line();
          out.push_back(std::move(block));
          break;
        }
      }
    }
  }

  Status Include(const Lexer& lexer, const std::vector<std::string>& args, int depth,
                 std::vector<Directive>& out) {
    if (args.size() != 2) return lexer.Error("invalid number of arguments in \"include\" directive");
    if (depth + 1 > kMaxIncludeDepth) {
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
      if (const int error = ReadFile(file, text); error != 0) {
        return lexer.Error("open() " + Quote(file) + " failed (" + std::to_string(error) + ": " +
                           std::strerror(error) + ")");
      }
      Lexer included(file, std::move(text));
      if (Status status = ParseBlock(included, depth + 1, out, false); !status.ok()) return status;
    }
    return Status();
  }

  std::string conf_dir_;  // with its trailing '/', or "" for the working directory
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

// ngx_atoi: decimal digits only, at least one.
std::optional<uint64_t> NgxAtoi(std::string_view text) {
  if (text.empty() || text.size() > 18) return std::nullopt;
  uint64_t value = 0;
  for (const char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  return value;
}

// ngx_parse_time in seconds: numbers each followed by a unit, units in
// decreasing order, each at most once (y M w d h m s); a last number without
// a unit is seconds ("1h30m", "10", "10s"). Milliseconds are not allowed.
bool IsNgxSeconds(std::string_view text) {
  static constexpr std::string_view kUnits = "yMwdhms";
  size_t next_unit = 0;  // index in kUnits of the smallest unit still allowed
  bool digits = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c >= '0' && c <= '9') {
      digits = true;
      continue;
    }
    const size_t unit = kUnits.find(c, next_unit);
    if (!digits || unit == std::string_view::npos) return false;
    if (c == 'm' && i + 1 < text.size() && text[i + 1] == 's') return false;  // ms
    next_unit = unit + 1;
    digits = false;
  }
  return !text.empty() && (digits || next_unit > 0);
}

std::string Where(const Directive& d) { return d.file + ":" + std::to_string(d.line); }

// The servers and the balancing method of one upstream block.
Result<NginxUpstream> ReadUpstream(const Directive& block) {
  NginxUpstream upstream;
  upstream.name = block.args[1];
  upstream.file = block.file;
  upstream.line = block.line;
  std::string method;  // the last balancing method, "" for round robin
  bool consistent = false;
  const Directive* method_line = nullptr;
  size_t backups = 0;
  for (const Directive& d : block.children) {
    const std::string& name = d.args[0];
    if (name == "server") {
      if (d.block) return ConfError(d.file, d.line, "directive \"server\" is not terminated by \";\"");
      if (d.args.size() < 2) {
        return ConfError(d.file, d.line, "invalid number of arguments in \"server\" directive");
      }
      NginxServer server{d.args[1], 1, false, d.file, d.line};
      bool backup = false;
      for (size_t i = 2; i < d.args.size(); ++i) {
        const std::string_view param = d.args[i];
        const size_t eq = param.find('=');
        const std::string_view key = param.substr(0, eq == std::string_view::npos ? eq : eq + 1);
        const std::string_view value = eq == std::string_view::npos ? "" : param.substr(eq + 1);
        bool valid = true;
        if (key == "weight=") {
          const std::optional<uint64_t> weight = NgxAtoi(value);
          valid = weight && *weight > 0;
          if (valid && *weight > UINT32_MAX) {
            return ConfError(d.file, d.line,
                             Quote(param) + ": chash takes weights up to 4294967295");
          }
          if (valid) server.weight = static_cast<uint32_t>(*weight);
        } else if (key == "max_fails=" || key == "max_conns=") {
          valid = NgxAtoi(value).has_value();
        } else if (key == "fail_timeout=") {
          valid = IsNgxSeconds(value);
        } else if (param == "down") {
          server.down = true;
        } else if (param == "backup") {
          // Only round robin and least_conn take backups; the hash method
          // refuses them once it is set (nginx's own message).
          if (!method.empty() && method != "least_conn") {
            return ConfError(d.file, d.line,
                             "balancing method does not support parameter \"backup\"");
          }
          backup = true;
        } else {
          valid = false;
        }
        if (!valid) return ConfError(d.file, d.line, "invalid parameter " + Quote(param));
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
      if (d.args.size() != 2 && d.args.size() != 3) {
        return ConfError(d.file, d.line, "invalid number of arguments in \"hash\" directive");
      }
      if (d.args.size() == 3 && d.args[2] != "consistent") {
        return ConfError(d.file, d.line, "invalid parameter " + Quote(d.args[2]));
      }
      method = name;
      consistent = d.args.size() == 3;
      upstream.hash_key = d.args[1];
      method_line = &d;
    } else if (name == "ip_hash" || name == "least_conn" || name == "random") {
      method = name;
      method_line = &d;
    }
  }
  const std::string upstream_name = "upstream " + Quote(upstream.name);
  if (upstream.servers.empty() && backups == 0) {
    return ConfError(block.file, block.end_line, "no servers are inside upstream");
  }
  if (method.empty()) {
    return ConfError(block.file, block.line,
                     upstream_name + " has no \"hash KEY consistent;\": nginx balances it by "
                                     "weighted round robin and builds no ring");
  }
  if (method != "hash") {
    return ConfError(method_line->file, method_line->line,
                     upstream_name + " balances by " + method +
                         " (the last balancing method wins): nginx builds no ring");
  }
  if (!consistent) {
    return ConfError(method_line->file, method_line->line,
                     "\"hash KEY;\" without \"consistent\" picks a server by hash % total "
                     "weight: nginx builds no ring for " + upstream_name);
  }
  if (upstream.servers.empty()) {
    return ConfError(block.file, block.end_line,
                     "every server of " + upstream_name + " is a backup: nginx's ring is empty");
  }
  return upstream;
}

}  // namespace

Result<NginxUpstream> ReadNginxUpstream(const std::string& conf_path, std::string_view name) {
  ConfReader reader(conf_path);
  std::vector<Directive> top;
  if (Status status = reader.ReadMain(conf_path, top); !status.ok()) return status;
  std::vector<std::pair<const Directive*, std::string>> found;  // upstream, context
  std::string known;
  for (const Directive& context : top) {
    if (!context.block || (context.args[0] != "http" && context.args[0] != "stream")) continue;
    for (const Directive& d : context.children) {
      if (d.args[0] != "upstream" || !d.block || d.args.size() != 2) continue;
      if (EqualsIgnoringCase(d.args[1], name)) {
        found.emplace_back(&d, context.args[0]);
      } else {
        known += (known.empty() ? "" : ", ") + d.args[1];
      }
    }
  }
  if (found.empty()) {
    return Status(StatusCode::kBadArgument,
                  conf_path + ": no upstream " + Quote(name) + " in http or stream (" +
                      (known.empty() ? "no upstreams" : "upstreams: " + known) + ")");
  }
  if (found.size() > 1) {
    const Directive& second = *found[1].first;
    if (found[0].second == found[1].second) {
      return ConfError(second.file, second.line, "duplicate upstream " + Quote(second.args[1]));
    }
    return Status(StatusCode::kBadArgument,
                  "upstream " + Quote(name) + " is in http (" + Where(*found[0].first) +
                      ") and in stream (" + Where(second) + "): chash cannot tell which you mean");
  }
  return ReadUpstream(*found[0].first);
}

}  // namespace chash::cli
